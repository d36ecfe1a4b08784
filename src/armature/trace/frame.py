"""One symbolic frame: its stack, locals, cells and instruction pointer, and
the dispatch loop that runs its bytecode on Values.

The dispatch is a table lookup (``pyversion.HANDLERS``); handlers live in
``trace/ops/`` grouped by opcode family.
"""
from __future__ import annotations

import dis
import functools
import types
from typing import Any

from ..diagnostics.errors import InternalError, Unsupported, UserLocation
from ..values.base import LazyValue, Value
from . import pyversion
from .context import TraceContext


@functools.lru_cache(maxsize=4096)
def instructions_of(code: types.CodeType) -> tuple[tuple[dis.Instruction, ...], dict[int, int]]:
    insts = tuple(dis.get_instructions(code))
    return insts, {inst.offset: i for i, inst in enumerate(insts)}


class Frame:
    def __init__(self, ctx: TraceContext, code: types.CodeType, f_globals: dict,
                 locals_: dict[str, Value], cells: dict[str, Value], parent: "Frame | None" = None):
        self.ctx = ctx
        self.code = code
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

    # --- stack ----------------------------------------------------------------
    def push(self, v: Value) -> None:
        self.stack.append(v)

    def pop(self) -> Value:
        return self.stack.pop()

    def popn(self, n: int) -> list[Value]:
        if n == 0:
            return []
        out = self.stack[-n:]
        del self.stack[-n:]
        return out

    def jump(self, target_offset: int) -> None:
        self.ip = self.index_of[target_offset]

    # --- locals ---------------------------------------------------------------
    def load_local(self, name: str) -> Value:
        try:
            v = self.locals[name]
        except KeyError:
            raise Unsupported(f"UnboundLocalError: local variable {name!r} referenced before assignment")
        if isinstance(v, LazyValue):
            v = v.realize(self.ctx)
            self.locals[name] = v
        return v

    # --- iteration helpers used by handlers and builtins -----------------------------
    def iterate(self, v: Value) -> list[Value]:
        from ..values.containers import IteratorValue
        if isinstance(v, IteratorValue):
            return v.unpack(self)
        return v.unpack(self)

    def get_iter(self, v: Value):
        from ..values.containers import IteratorValue, ListValue
        if isinstance(v, IteratorValue):
            return v
        if isinstance(v, ListValue):
            return IteratorValue(v.items)  # live view: appends during the loop are seen
        return IteratorValue(v.unpack(self))

    # --- running --------------------------------------------------------------
    def location(self) -> UserLocation:
        inst = self.current
        if inst is not None and inst.positions is not None and inst.positions.lineno:
            self._lineno = inst.positions.lineno
        return UserLocation(self.code.co_filename, self._lineno, self.code.co_name)

    def run(self) -> Value:
        handlers = pyversion.HANDLERS
        insts = self.instructions
        try:
            while self.return_value is None:
                inst = insts[self.ip]
                self.ip += 1
                self.current = inst
                handler = handlers.get(inst.opname)
                if handler is None:
                    raise Unsupported(f"the bytecode instruction {inst.opname} "
                                      f"(not modelled by armature yet)")
                handler(self, inst)
        except Unsupported as e:
            e.add_location(self.location())
            raise
        except (InternalError, RecursionError):
            raise
        except Exception as e:
            err = Unsupported(f"internal error while tracing {inst.opname}: {type(e).__name__}: {e}")
            err.add_location(self.location())
            err.__cause__ = e
            raise err
        return self.return_value
