"""One symbolic frame: its stack, locals, cells and instruction pointer, and
the dispatch loop that runs its bytecode on Values.

The dispatch is a table lookup (``pyversion.HANDLERS``); handlers live in
``trace/ops/`` grouped by opcode family.
"""
from __future__ import annotations

import dis
import functools
import types

from ..diagnostics.errors import (InternalError, Unsupported, UserException, UserLocation, data_dependent,
                                  internal_error, user_error)
from ..values.base import LazyValue, Value
from .. import pyversion
from ..pyversion import handler_for
from .context import TraceContext
from . import speculation as _speculation


@functools.lru_cache(maxsize=4096)
def instructions_of(code: types.CodeType) -> tuple[tuple[dis.Instruction, ...], dict[int, int]]:
    all_insts = list(dis.get_instructions(code))
    insts = tuple(i for i in all_insts if i.opname != "EXTENDED_ARG")
    index_of = {inst.offset: i for i, inst in enumerate(insts)}
    # a jump may target the EXTENDED_ARG prefix of an instruction
    pending = []
    for inst in all_insts:
        if inst.opname == "EXTENDED_ARG":
            pending.append(inst.offset)
        else:
            for off in pending:
                index_of[off] = index_of[inst.offset]
            pending = []
    return insts, index_of


class Frame:
    def __init__(self, ctx: TraceContext, code: types.CodeType, f_globals: dict,
                 locals_: dict[str, Value], cells: dict[str, Value], parent: "Frame | None" = None):
        self.ctx = ctx
        self.code = code
        filename = code.co_filename
        ctx.traced_files.add(filename)   # (the warm-start key: driver/persistent_cache.py)
        if filename[:1] == "<":
            ctx.unfiled_code.append(code)
        self.f_globals = f_globals
        self.locals = locals_
        self.cells = cells
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.instructions, self.index_of = instructions_of(code)
        self.stack: list[Value] = []
        self.ip = 0
        self.kw_names: tuple[str, ...] = ()
        self.return_value: Value | None = None
        self.current: dis.Instruction | None = None
        self._lineno = code.co_firstlineno
        #: root frame only: stop before this instruction index (a graph break)
        self.break_at: int | None = None
        self.stopped_at_break = False
        #: generator frames: the value of the last YIELD_VALUE
        self.yielded: Value | None = None
        #: the exceptions being handled (PUSH_EXC_INFO / POP_EXCEPT)
        self.exc_stack: list[Value] = []

    # --- stack ----------------------------------------------------------------
    def push(self, v: Value) -> None:
        self.stack.append(v)

    def pop(self) -> Value:
        """Pop for an operation that needs to know what the value is."""
        v = self.stack.pop()
        return v.realize(self.ctx) if type(v) is LazyValue else v

    def pop_raw(self) -> Value:
        """Pop a value that is only moved (stored, passed, collected)."""
        return self.stack.pop()

    def popn(self, n: int, raw: bool = False) -> list[Value]:
        if n == 0:
            return []
        out = self.stack[-n:]
        del self.stack[-n:]
        if not raw:
            out = [v.realize(self.ctx) if type(v) is LazyValue else v for v in out]
        return out

    def jump(self, target_offset: int) -> None:
        self.ip = self.index_of[target_offset]

    # --- locals ---------------------------------------------------------------
    def load_local(self, name: str) -> Value:
        """The local's Value; lazy ones stay lazy (see LazyValue)."""
        try:
            return self.locals[name]
        except KeyError:
            raise user_error(UnboundLocalError, f"cannot access local variable {name!r} where it is not "
                                                "associated with a value")

    # --- iteration helpers used by handlers and builtins -----------------------------
    def iterate(self, v: Value) -> list[Value]:
        """All items of a finite iterable, in order."""
        return self.get_iter(v).unpack(self)

    def get_iter(self, v: Value):
        from ..values.containers.containers import IteratorValue, ListValue, UserIteratorValue
        from ..values.objects.objects import ObjectValue
        if type(v) is LazyValue:
            v = v.realize(self.ctx)
        if isinstance(v, IteratorValue):
            return v
        if isinstance(v, ListValue):
            return IteratorValue(v.items, seq=v)  # live view: appends during the loop are seen
        if not isinstance(v, ObjectValue) and hasattr(v, "get_iter"):
            return v.get_iter(self)
        if isinstance(v, ObjectValue):
            it = v.get_iter(self)
            if isinstance(it, IteratorValue):
                return it
            if isinstance(it, ObjectValue):
                return UserIteratorValue(it)
            return self.get_iter(it)
        from ..values.containers import iterator_types
        return iterator_types.of(IteratorValue(v.unpack(self)), v)

    # --- running --------------------------------------------------------------
    def child(self, code: types.CodeType, f_globals: dict, locals_: dict[str, Value],
              cells: dict[str, Value]) -> "Frame":
        """A frame running ``code`` called from this one, in this context."""
        return Frame(self.ctx, code, f_globals, locals_, cells, self)

    def inline_function(self, fn, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """Run the user function Value ``fn`` inline in a child frame (or
        as a compile region: trace/inline.py); how a function value's call
        reaches the tracer it is handed."""
        return _inline.inline_function(self, fn, args, kwargs)

    def deferred_truth(self, value: Value):
        """``bool(value)`` left undecided (a DeferredTruth) where a branch
        on it may be assumed, else None (trace/speculation.py): how the
        value layer's ``bool()`` reaches the tracer it is handed."""
        return _speculation.deferred_truth(self, value)

    def location(self) -> UserLocation:
        inst = self.current
        if inst is not None and inst.positions is not None and inst.positions.lineno:
            self._lineno = inst.positions.lineno
        return UserLocation(self.code.co_filename, self._lineno, self.code.co_name)

    def run(self) -> Value | None:
        """Run until RETURN_VALUE (returns the value), a YIELD_VALUE (sets
        ``yielded``, returns None) or, in the root frame, the break point
        (sets ``stopped_at_break``, returns None)."""
        graph = self.ctx.graph
        outer = graph.current_frame
        graph.current_frame = self   # (export: nodes record the user's stack)
        try:
            return self._run_handling()
        finally:
            graph.current_frame = outer

    def _run_handling(self) -> Value | None:
        while True:
            try:
                return self._run()
            except UserException as e:
                if self.parent is None:
                    self._note_origin(e)
                if not self._handle_exception(e):
                    self._annotate(e)
                    raise
            except Unsupported as e:
                self._annotate(e)
                raise

    def _materialize_exception(self, e: UserException) -> None:
        """An exception raised by an operation (not a ``raise`` of a Value)
        becomes an ExceptionValue where it is first seen: where it happened,
        with the exception handled there as its __context__."""
        if e.value is None:
            from ..values.constant import ConstantValue
            from ..values.functions.exceptions import ExceptionValue
            from .ops.with_ import handled_exception
            e.value = ExceptionValue(e.exc_type, [ConstantValue(a) for a in e.exc_args])
            e.value.raised(handled_exception(self))

    def _note_origin(self, e: UserException) -> None:
        """Where the root frame first met this exception: the raise (or the
        call it came out of).  If the exception escapes the frame after
        handlers ran in the trace (a ``with`` block's __exit__, an except
        body that re-raises), the graph break goes there, so that the real
        exception is raised natively and those handlers run for real."""
        self._materialize_exception(e)
        if getattr(e.value, "root_origin", None) is None:
            e.value.root_origin = (self.ip - 1, len(e.user_stack) > 0)

    def _annotate(self, e: Unsupported) -> None:
        e.add_location(self.location())
        if self.parent is None and getattr(e, "root_index", None) is None:
            origin = getattr(getattr(e, "value", None), "root_origin", None)
            if origin is not None:
                e.root_index, e.from_callee = origin
            else:
                e.root_index = self.ip - 1
                e.from_callee = len(e.user_stack) > 1
            # inside a handler of an exception the trace raised: where it was
            # raised is a second place to split (the handler then runs for real)
            if self.exc_stack:
                e.handling_origin = getattr(self.exc_stack[-1], "root_origin", None)
        if self.parent is None:
            if self.ctx.unsplittable:
                # inside a region a break cannot split (a TorchFunctionMode
                # the trace pushed, an inference_mode block that switched the
                # mode): the break goes where the oldest was entered, so the
                # region runs as Python with its real state
                e.root_index, e.from_callee = self.ctx.unsplittable[0][0]
                e.handling_origin = None

    def _run(self) -> Value | None:
        handlers = pyversion.HANDLERS
        insts = self.instructions
        inst = None
        graph = self.ctx.graph
        shape_guards = graph.shape_env.guards   # (grows as sizes are specialised or compared)
        op_nodes = graph.op_nodes               # (grows as ops are recorded: their user lines)
        try:
            while self.return_value is None:
                if self.ip == self.break_at:
                    self.stopped_at_break = True
                    return None
                inst = insts[self.ip]
                self.ip += 1
                self.current = inst
                handler = handlers.get(inst.opname)
                if handler is None:
                    raise Unsupported(f"the bytecode instruction {inst.opname} "
                                      f"(not modelled by armature yet)")
                seen = len(shape_guards)
                made = len(op_nodes)
                handler(self, inst)
                if len(shape_guards) != seen:
                    graph.note_shape_guards(seen, self.location())
                if len(op_nodes) != made:
                    graph.note_op_lines(made, self.code.co_filename, self.location().lineno)
                if self.yielded is not None:
                    return None
        except Unsupported:
            raise
        except (InternalError, RecursionError):
            raise
        except Exception as e:
            from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
            if isinstance(e, GuardOnDataDependentSymNode):
                raise data_dependent(e) from e
            name = inst.opname if inst is not None else "?"
            raise internal_error(f"{type(e).__name__} while tracing {name}: {e}") from e
        return self.return_value

    def _handle_exception(self, e: UserException) -> bool:
        """Route a modelled exception to this frame's handler, as CPython's
        exception table does.  False: not handled here."""
        from ..values.constant import ConstantValue
        inst = self.current
        if inst is None:
            return False
        self._materialize_exception(e)
        entry = handler_for(self.code, inst.offset)
        if entry is None:
            return False
        del self.stack[entry.depth:]
        if entry.lasti:
            self.push(ConstantValue(inst.offset))
        self.push(e.value)
        self.jump(entry.target)
        return True


from . import inline as _inline  # noqa: E402  (it imports Frame: bound once both exist)
