"""Splitting a frame at a graph break.

The transformed function of a split frame: call the graph of everything
before the break; read the live stack, locals and cells into temporaries and
write back side effects (codegen/exit.py); restore the grad mode the trace
had reached; push the stack and run the breaking instruction natively; then
hand the rest of the frame to a resume function.  The hand-off is a tail
call (a TailCall returned to the dispatcher), so a loop that breaks on every
iteration does not nest Python frames.
"""
from __future__ import annotations

import dis
import types

from bytecode import BinaryOp, Label, TryBegin, TryEnd

from ..pyversion import handler_for
from ..trace.frame import Frame
from ..values.base import NULL, Value
from ..values.functions.exceptions import ExcInfoSlot
from .emitter import Emitter
from .exit import emit_grad_mode, emit_side_effects, push_stack
from .resume import EXC_INFO_SLOT, NULL_SLOT, VALUE_SLOT
from .spelling import SPELLING
from . import namespace_calls, zero_arg_super


class BreakNotPossible(Exception):
    pass


# (pops, pushes) of the instructions a break may run natively, per opcode.
# Callables take the instruction's arg.  Jumps are handled separately.
_STACK_EFFECT = {
    "CALL": lambda a: (a + 2, 1),
    # (3.14: no oparg, always a kwargs slot)
    "CALL_FUNCTION_EX": lambda a: (4, 1) if a is None else (3 + (a & 1), 1),
    "BINARY_OP": (2, 1), "COMPARE_OP": (2, 1), "BINARY_SUBSCR": (2, 1), "IS_OP": (2, 1),
    "CONTAINS_OP": (2, 1), "STORE_SUBSCR": (3, 0), "DELETE_SUBSCR": (2, 0),
    "LOAD_ATTR": (1, 1), "STORE_ATTR": (2, 0), "DELETE_ATTR": (1, 0),
    "UNARY_NEGATIVE": (1, 1), "UNARY_POSITIVE": (1, 1), "UNARY_INVERT": (1, 1), "UNARY_NOT": (1, 1),
    "GET_ITER": (1, 1), "FORMAT_VALUE": lambda a: (1 + bool(a & 0x04), 1),
    "UNPACK_SEQUENCE": lambda a: (1, a), "UNPACK_EX": lambda a: (1, (a & 0xFF) + (a >> 8) + 1),
    "BEFORE_WITH": (1, 2), "LIST_EXTEND": (1, 0), "LIST_APPEND": (1, 0), "SET_UPDATE": (1, 0),
    "SET_ADD": (1, 0), "DICT_UPDATE": (1, 0), "DICT_MERGE": (1, 0), "MAP_ADD": (2, 0),
    "IMPORT_NAME": (2, 1), "IMPORT_FROM": (0, 1), "STORE_GLOBAL": (1, 0), "DELETE_GLOBAL": (0, 0),
    "BUILD_STRING": lambda a: (a, 1), "RAISE_VARARGS": lambda a: (a, 0), "RERAISE": (1, 0),
    "LOAD_GLOBAL": lambda a: (0, 1 + (a & 1)),
    # 3.12+
    "BINARY_SLICE": (3, 1), "STORE_SLICE": (4, 0), "CALL_INTRINSIC_1": (1, 1),
    "LOAD_SUPER_ATTR": (3, 1),   # (its method form: as LOAD_ATTR's, below)
    # 3.13
    "CALL_KW": lambda a: (a + 3, 1), "FORMAT_SIMPLE": (1, 1), "FORMAT_WITH_SPEC": (2, 1),
    "CONVERT_VALUE": (1, 1), "TO_BOOL": (1, 1),
    # 3.14
    "LOAD_SPECIAL": (1, 2),
}
# conditional jumps: (pops when falling through, pops when jumping, pushes when falling through)
_JUMPS = {
    "POP_JUMP_FORWARD_IF_TRUE": (1, 1, 0), "POP_JUMP_BACKWARD_IF_TRUE": (1, 1, 0),
    "POP_JUMP_FORWARD_IF_FALSE": (1, 1, 0), "POP_JUMP_BACKWARD_IF_FALSE": (1, 1, 0),
    "POP_JUMP_FORWARD_IF_NONE": (1, 1, 0), "POP_JUMP_BACKWARD_IF_NONE": (1, 1, 0),
    "POP_JUMP_FORWARD_IF_NOT_NONE": (1, 1, 0), "POP_JUMP_BACKWARD_IF_NOT_NONE": (1, 1, 0),
    "JUMP_IF_TRUE_OR_POP": (1, 0, 0), "JUMP_IF_FALSE_OR_POP": (1, 0, 0),
    "FOR_ITER": (0, 1, 1),
    # 3.12+
    "POP_JUMP_IF_TRUE": (1, 1, 0), "POP_JUMP_IF_FALSE": (1, 1, 0),
    "POP_JUMP_IF_NONE": (1, 1, 0), "POP_JUMP_IF_NOT_NONE": (1, 1, 0),
}


def _insts(code):
    from ..trace.frame import instructions_of
    return instructions_of(code)


def is_breakable(frame: Frame, index: int) -> bool:
    """Can the root frame be split before instruction ``index``?  Where the
    instruction's stack effect is known; an exception handler covering it
    (try/except/finally, with) is honoured by emit_break."""
    inst = frame.instructions[index]
    return inst.opname in _STACK_EFFECT or inst.opname in _JUMPS


def _consumed(inst) -> int:
    if inst.opname in _JUMPS:
        return 1
    effect = _STACK_EFFECT[inst.opname]
    return (effect(inst.arg) if callable(effect) else effect)[0]


#: instructions that reach below their operands: ``LIST_APPEND(i)`` pops the
#: item and appends to the list i deeper (CPython's PEEK(oparg) after POP)
_REACH_BELOW = {"LIST_APPEND", "LIST_EXTEND", "SET_ADD", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE", "MAP_ADD"}


def _reach(inst) -> int:
    """How many stack items from the top the instruction touches: they go
    on the real stack of the transformed function."""
    pops = _consumed(inst)
    if inst.opname == "IMPORT_FROM":
        return 1   # it reads the module below without popping it
    if inst.opname == "DICT_MERGE":
        return pops + inst.arg + 2   # its error message names the callable two below the dict
    return pops + inst.arg if inst.opname in _REACH_BELOW else pops


def _native_arg(inst: dis.Instruction, labels: dict):
    name = inst.opname
    if name in _JUMPS:
        return labels
    if name == "LOAD_GLOBAL":
        return (bool(inst.arg & 1), inst.argval)
    if name == "LOAD_ATTR":
        return SPELLING.attr_arg(inst.argval, bool(inst.arg & 1))
    if name == "BINARY_OP":
        return BinaryOp(inst.arg)
    if name == "COMPARE_OP":
        return SPELLING.compare_arg(inst.arg)
    if name == "CALL_INTRINSIC_1":
        from bytecode import Intrinsic1Op
        return Intrinsic1Op(inst.arg)
    if name == "LOAD_SPECIAL":   # 3.14
        from bytecode.instr import SpecialMethod
        return SpecialMethod(inst.arg)
    if name == "CONVERT_VALUE":
        from bytecode.instr import FormatValue
        return FormatValue(inst.arg)
    if inst.opcode in dis.hasname or inst.opcode in dis.hasconst:
        return inst.argval
    return inst.arg


class _WrappedNested(Value):
    """A function made in the frame (or a method of a class made per call),
    called through its compiled form: ``functools.partial(nested.call,
    <the function>[, <the instance it is bound to>])``."""

    def __init__(self, nested, fn_value: Value, bound_self: Value | None = None):
        super().__init__()
        self.nested, self.fn_value, self.bound_self = nested, fn_value, bound_self

    def reconstruct(self, out):
        import functools
        out.instr("PUSH_NULL")
        out.load_const(functools.partial)
        out.load_const(self.nested.call)
        out.reconstruct(self.fn_value)
        if self.bound_self is None:
            out.call(2)
            return
        out.reconstruct(self.bound_self)
        out.call(3)


class _Wrapped(Value):
    """A callable on the stack replaced by its compiled wrapper, so a callee
    whose own trace broke still gets its parts compiled."""

    def __init__(self, wrapper, bound_self: Value | None = None):
        super().__init__()
        self.wrapper, self.bound_self = wrapper, bound_self

    def reconstruct(self, out):
        if self.bound_self is None:
            out.load_const(self.wrapper)
            return
        out.instr("PUSH_NULL")
        out.load_const(types.MethodType)
        out.load_const(self.wrapper)
        out.reconstruct(self.bound_self)
        out.call(2)


def _distributed_callee(tx, value: Value, backend) -> Value:
    """A DDP, FSDP1 or FSDP2 module called natively at the break runs with
    its math compiled (runtime/distributed.py)."""
    from ..runtime.distributed import kind_of, runner_for
    from ..values.base import LazyValue
    from ..values.nn.modules import ModuleValue
    if type(value) is LazyValue and kind_of(value.obj) is not None:
        value = value.realize(tx.ctx)    # (guards it: the routing below assumes such a module)
    if isinstance(value, ModuleValue) and value.source is not None and kind_of(value.mod) is not None:
        return _Wrapped(runner_for(backend, False, tx.ctx.policy.mode), value)
    return value


def _compiled_callee(tx, value: Value, backend) -> Value:
    from ..runtime.wrappers import compiled_wrapper_for
    from ..values.functions.functions import BoundMethodValue, UserFunctionValue
    from ..values.nn.modules import ModuleValue
    from ..values.base import realize
    value = realize(tx.ctx, value)
    if isinstance(value, ModuleValue) and value.source is not None:
        mod = value.mod
        if type(mod).__call__ is not __import__("torch").nn.Module.__call__:
            return value
        value.check_no_hooks(tx)
        value = value.getattr(tx, "forward")
    from ..values.objects.per_call_classes import reached_through_per_call_class
    if isinstance(value, (UserFunctionValue, BoundMethodValue)):
        fv = value.func if isinstance(value, BoundMethodValue) else value
        if isinstance(fv, UserFunctionValue) and (getattr(fv, "guarded_by_code", False)
                                                  or reached_through_per_call_class(tx.ctx, fv.source)):
            # a method of a class made per call, a function guarded by its
            # code (values/functions/closure_aliasing.py): a new function on every
            # call, so the compiled form is kept per code and called with
            # the function residual code reads (its closure is this call's)
            if not _identifier_params(fv.code):
                return value
            from ..runtime.wrappers import nested_compiled_for
            bound = value.obj if isinstance(value, BoundMethodValue) else None
            return _WrappedNested(nested_compiled_for(fv.code, backend), fv, bound)
    if isinstance(value, UserFunctionValue):
        if not _identifier_params(value.fn.__code__):
            return value   # e.g. a comprehension's ".0": cannot be compiled on its own; runs as Python
        return _Wrapped(compiled_wrapper_for(value.fn, backend, tx.ctx.policy.mode,
                                                  tx.ctx.module_parameters_override))
    from ..values.functions.functions import NestedFunctionValue
    if isinstance(value, NestedFunctionValue) and _identifier_params(value.code):
        # (a comprehension's ".0" argument cannot be a guard parameter)
        from ..runtime.wrappers import nested_compiled_for
        return _WrappedNested(nested_compiled_for(value.code, backend), value)
    if isinstance(value, BoundMethodValue) and isinstance(value.func, UserFunctionValue):
        return _Wrapped(compiled_wrapper_for(value.func.fn, backend, tx.ctx.policy.mode,
                                                  tx.ctx.module_parameters_override), value.obj)
    return value


def seed_dynamism(resume, stack: list, locals_: dict) -> None:
    """Dynamism survives a break: the resume function's first trace treats
    as dynamic whatever was dynamic here (tensor dims that were symbols,
    ints that were), instead of compiling static and recompiling on the
    next size."""
    import torch
    from ..guards.sources import ItemSource, LocalSource
    from ..values.containers.containers import TupleValue
    from ..values.tensors.symbolic import SymbolicNumberValue
    from ..values.tensors.tensor import TensorValue
    from ..names import generated_prefix, stack_arg
    prefix = generated_prefix(resume._fn.__code__)
    named = [(stack_arg(prefix, i), v) for i, v in enumerate(stack) if v is not NULL]
    named += list(locals_.items())
    cache = resume._cache
    from ..values.base import LazyValue
    for name, v in named:
        if type(v) is LazyValue:   # an argument: what the trace made of it, if it used it
            v = v._realized
        if isinstance(v, TensorValue):
            dims = {d for d, n in enumerate(v.fake.size()) if isinstance(n, torch.SymInt)}
            if dims:
                cache.auto_dims.setdefault(LocalSource(name), set()).update(dims)
        elif isinstance(v, SymbolicNumberValue) and v.sym is not None and type(v.example) is int:
            cache.dynamic_sources.add(LocalSource(name))
        elif isinstance(v, TupleValue) and v.cls is torch.Size:   # x.shape handed over the break
            for i, item in enumerate(v.items):
                if isinstance(item, SymbolicNumberValue) and item.sym is not None:
                    cache.dynamic_sources.add(ItemSource(LocalSource(name), i))


def note_fresh_modules(resume, stack: list, locals_: dict, new_module_slot: int | None = None) -> None:
    """Module containers the residual code rebuilds on every call (a slice
    of a ModuleList) are guarded by content in the resume function, not by
    identity (values/nn/modules.note_fresh_modules); so is the module the
    native instruction builds (``new_module_slot``: its slot)."""
    from ..values.nn.modules import note_fresh_modules as note
    from ..names import generated_prefix, stack_arg
    prefix = generated_prefix(resume._fn.__code__)
    named = [(stack_arg(prefix, i), v) for i, v in enumerate(stack) if v is not NULL]
    new = [stack_arg(prefix, new_module_slot)] if new_module_slot is not None else []
    note(resume._fn.__code__, named + list(locals_.items()), new_names=new)


def _constructs_module(inst, stack: list) -> bool:
    """Whether the native instruction calls an nn.Module class (a module
    built at a graph break: a new object on every call)."""
    if inst.opname not in ("CALL", "CALL_KW"):
        return False
    from ..values.objects.objects import ClassValue
    pos = SPELLING.callable_position(len(stack), inst.opname, inst.arg)
    callee = stack[SPELLING.callee_is_first(stack, pos, NULL)]
    cls = getattr(callee, "cls", None) if isinstance(callee, ClassValue) else None
    import torch
    return isinstance(cls, type) and issubclass(cls, torch.nn.Module)


def _identifier_params(code) -> bool:
    return all(n.isidentifier() for n in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])


def _looks_at_itself(code) -> str | None:
    """A call in ``code`` that would see a resume function's generated frame
    if it ran natively there: ``sys._getframe()``, ``inspect.currentframe()``
    (``locals``, ``vars`` and ``dir``, as globals or attributes, a resume
    function routes to stand-ins that answer for the user's frame:
    codegen/resume.py, runtime/frame_view.py)."""
    found = {"_getframe", "currentframe"} & set(code.co_names)
    return f"{sorted(found)[0]}()" if found else None


def emit_break(ctx, frame: Frame, out: Emitter, *, from_callee: bool, backend) -> None:
    from ..runtime.wrappers import TailCall, resume_function_for
    if ctx.inference_enabled != ctx.initial_inference_enabled:
        raise BreakNotPossible("it is inside a torch.inference_mode block the trace entered (the graph "
                               "runs that block as no_grad, so the native part would miss inference mode)")
    inst = frame.instructions[frame.break_at]
    code = frame.code
    stack = list(frame.stack)
    namespace_calls.rewrite(frame, stack, inst, frame.kw_names)   # eval/exec given the frame's namespaces
    builds_module = _constructs_module(inst, stack)
    if inst.opname in ("CALL", "CALL_KW", "CALL_FUNCTION_EX"):
        pos = SPELLING.callable_position(len(stack), inst.opname, inst.arg)
        if inst.opname != "CALL_FUNCTION_EX":
            pos = SPELLING.callee_is_first(stack, pos, NULL)
        stack[pos] = _distributed_callee(frame, stack[pos], backend)
    if inst.opname in ("CALL", "CALL_KW") and from_callee:
        pos = SPELLING.callable_position(len(stack), inst.opname, inst.arg)
        pos = SPELLING.callee_is_first(stack, pos, NULL)
        stack[pos] = _compiled_callee(frame, stack[pos], backend)
    if inst.opname == "CALL_FUNCTION_EX" and from_callee:
        pos = SPELLING.callable_position(len(stack), inst.opname, inst.arg)
        stack[pos] = _compiled_callee(frame, stack[pos], backend)

    # (a resume function's own ___stack arguments only fed its prologue)
    from ..names import cell_arg, generated_prefix, is_resume_arg
    from ..names import handed_over_name, local_key, origin_of, user_local_name
    base_code, to_orig = origin_of(code)
    looks_at_itself = _looks_at_itself(base_code)
    if looks_at_itself:
        raise BreakNotPossible(f"the frame calls {looks_at_itself}: split, it would see "
                               "armature's generated frames instead of its own")
    if to_orig is None:
        keys = tuple(n for n in code.co_varnames if n in frame.locals)
        cell_names = tuple(code.co_cellvars) + tuple(code.co_freevars)
        # (3.12+: inside an inlined comprehension a closure variable's slot
        # may hold a plain value instead of its cell: the slot is handed over)
        missing = [c for c in cell_names if c not in frame.cells and c not in frame.locals]
        if missing:
            raise BreakNotPossible(f"the slot of {missing[0]!r} is empty here (inside a comprehension)")
        cell_values = [frame.cells[c] if c in frame.cells else frame.locals[c] for c in cell_names]
    else:  # a resume function: its cells are the ___cell_* arguments
        cell_names = tuple(base_code.co_cellvars) + tuple(base_code.co_freevars)
        prefix = generated_prefix(code)
        keys = tuple(n for n in code.co_varnames if n in frame.locals and not is_resume_arg(prefix, n)
                     and n != handed_over_name(code))
        try:
            cell_values = [frame.locals[cell_arg(prefix, c)] for c in cell_names]
        except KeyError as e:
            raise BreakNotPossible(f"cell {e} is not available") from e
    if handed_over_name(code) in frame.locals:   # 3.11: the frame's locals() dict (values/functions/frame_locals.py)
        keys += (handed_over_name(code),)
    # the user's names (a resume function's ___local<i> is the user's "@py_assert1"...)
    local_names = tuple(user_local_name(base_code, k) for k in keys)
    local_values = [frame.locals[k] for k in keys]
    # (the resume function's own names of them: what its guards read)
    resume_locals = dict(zip((local_key(base_code, n) if n in base_code.co_varnames else n for n in local_names),
                             local_values))
    stack_vals = [v for v in stack if v is not NULL]
    preload = stack_vals + local_values + cell_values
    try:
        temps = emit_side_effects(ctx, out, preload)
    except Exception as e:  # a live value cannot be rebuilt
        raise BreakNotPossible(str(e)) from e
    it = iter(temps)
    stack_t = [NULL if v is NULL else next(it) for v in stack]
    kinds = [NULL_SLOT if v is NULL else EXC_INFO_SLOT if isinstance(v, ExcInfoSlot) else VALUE_SLOT
             for v in stack]
    # A slot whose handler already ran POP_EXCEPT (a cleanup block on its way
    # to RERAISE) is no longer being handled: an ordinary value from now on.
    exc_slots = [i for i, k in enumerate(kinds) if k == EXC_INFO_SLOT]
    for i in exc_slots[len(frame.exc_stack):]:
        kinds[i] = VALUE_SLOT
    rest = list(it)
    local_t, cell_t = rest[:len(local_names)], rest[len(local_names):]
    pops = _consumed(inst)
    consumed = _reach(inst)   # the operands and whatever the instruction reaches below them
    operand_kinds = kinds[len(kinds) - consumed:]
    if NULL_SLOT in operand_kinds and inst.opname not in ("CALL", "CALL_KW", "CALL_FUNCTION_EX"):
        raise BreakNotPossible(f"a NULL among the operands of {inst.opname}")
    if EXC_INFO_SLOT in operand_kinds:
        raise BreakNotPossible(f"{inst.opname} consumes the saved exception state")
    emit_grad_mode(ctx, out)
    if inst.positions is not None and inst.positions.lineno:
        out.lineno = inst.positions.lineno  # tracebacks of the native part point at the user's line

    name = inst.opname
    insts, index_of = _insts(code)
    next_offset = insts[frame.break_at + 1].offset if frame.break_at + 1 < len(insts) else None
    # Only the operands go on the real stack: NULLs deeper down cannot be
    # popped again in 3.11, so the rest of the frame's stack stays in temps.
    bottom = stack_t[:len(stack_t) - consumed]
    bottom_kinds = kinds[:len(kinds) - consumed]

    # Inside an except body the native instruction runs with the handled
    # exception current (sys.exc_info(), bare raise, __context__), entered
    # here as the resume function's prologue does and left before the hand-off.
    handling = [i for i, k in enumerate(bottom_kinds) if k == EXC_INFO_SLOT]
    prev_exc = None
    if handling:
        prev_exc = out.new_temp()
        out.instr("LOAD_FAST", bottom[handling[-1]].name)
        out.instr("PUSH_EXC_INFO")
        out.instr("POP_TOP")
        out.instr("STORE_FAST", prev_exc.name)

    def leave_handled() -> None:
        if prev_exc is not None:
            out.instr("LOAD_FAST", prev_exc.name)
            out.instr("POP_EXCEPT")

    def tail_call(target_offset: int, slots: list, slot_kinds: list, lasti_of: int | None = None,
                  result_slot: int | None = None) -> None:
        if to_orig is not None:
            if target_offset not in to_orig:   # (between instructions a resume function added)
                raise BreakNotPossible("the break is inside instructions armature generated")
            target_offset = to_orig[target_offset]
        target_offset = _through_jumps(base_code, target_offset)
        from .resume import ResumeNotPossible, build_resume_code
        try:
            resume = resume_function_for(frame.ctx.fn, base_code, target_offset, tuple(slot_kinds), local_names,
                                         cell_names, backend, build_resume_code, dynamic=ctx.policy.mode,
                                         module_parameters=ctx.module_parameters_override)
        except ResumeNotPossible as e:
            raise BreakNotPossible(str(e)) from e
        seed_dynamism(resume, stack[:len(bottom)], resume_locals)
        note_fresh_modules(resume, stack[:len(bottom)], resume_locals,
                           new_module_slot=result_slot if builds_module else None)
        operands = [resume]
        for t, k in zip(slots, slot_kinds):
            if k == NULL_SLOT:
                continue
            operands.append(_lasti_in(resume, lasti_of) if t is _LASTI else t)
        operands += local_t + cell_t
        out.call_helper(TailCall, *operands, pop=False)
        out.instr("RETURN_VALUE")

    def hand_off(target_offset: int, n_real: int, null_above: bool = False) -> None:
        """The real stack holds ``n_real`` new items: save them, then tail-call
        (``null_above``: a call's NULL follows them, as a marker)."""
        saved = []
        for _ in range(n_real):
            t = out.new_temp()
            out.instr("STORE_FAST", t.name)
            saved.append(t)
        saved.reverse()
        leave_handled()
        extra = [NULL] if null_above else []
        tail_call(target_offset, bottom + saved + extra,
                  bottom_kinds + [VALUE_SLOT] * n_real + [NULL_SLOT] * len(extra),
                  result_slot=len(bottom) if n_real == 1 else None)

    # A handler covering the break (try/except/finally, with) must see what
    # the native instruction raises: the instruction runs under a handler of
    # the transformed function that hands the exception to a resume function
    # starting at the user's handler, with the stack cut to its depth.
    entry = handler_for(code, inst.offset)
    if prev_exc is not None and entry is None:  # (an except body always has its cleanup handler)
        raise BreakNotPossible("inside an except body without a cleanup handler")
    try_begin = None
    if entry is not None:
        if entry.depth > len(bottom):
            raise BreakNotPossible("the exception handler's stack depth is above the break's")
        try_begin = TryBegin(Label(), push_lasti=False)
        out.append(try_begin)

    def end_try() -> None:
        if try_begin is not None:
            out.append(TryEnd(try_begin))

    def emit_handler() -> None:
        if try_begin is None:
            return
        out.append(try_begin.target)
        exc = out.new_temp()
        out.instr("STORE_FAST", exc.name)
        leave_handled()
        slots = bottom[:entry.depth] + ([_LASTI] if entry.lasti else []) + [exc]
        slot_kinds = bottom_kinds[:entry.depth] + [VALUE_SLOT] * (1 + bool(entry.lasti))
        orig_offset = to_orig[inst.offset] if to_orig is not None else inst.offset
        tail_call(entry.target, slots, slot_kinds, lasti_of=orig_offset)

    push_stack(out, stack_t[len(stack_t) - consumed:])
    SPELLING.native_needs_bool(out, name)
    if name in _JUMPS:
        fall_pops, jump_pops, fall_pushes = _JUMPS[name]
        target = Label()
        out.native(name.replace("BACKWARD", "FORWARD"), target)
        end_try()
        hand_off(next_offset, consumed - fall_pops + fall_pushes)
        out.append(target)
        jump_to = inst.argval
        if name == "FOR_ITER" and SPELLING.loop_exit_skip:
            # 3.12+: an exhausted FOR_ITER jumps over END_FOR (and POP_TOP),
            # which must follow its target; the loop's exit is after them
            out.native("END_FOR")
            if SPELLING.loop_exit_skip == 2:
                out.native(SPELLING.loop_exit_pop)
            jump_to = insts[index_of[inst.argval] + SPELLING.loop_exit_skip].offset
        hand_off(jump_to, consumed - jump_pops)
        emit_handler()
        return
    if name in ("CALL", "CALL_KW"):
        SPELLING.native_call_prefix(out, inst, frame.kw_names)
    if name == "LOAD_SUPER_ATTR":
        # This frame is not the user's: super always gets its class and
        # object from the stack (the two-argument bit), a shadowing super
        # (zero-argument form) being wrapped to drop them (zero_arg_super.py).
        # The method form loads the plain attribute; its NULL is a marker.
        if not inst.arg & 2:
            for ins in zero_arg_super.adapt_below_two():
                out.native(ins.name, ins.arg)
        out.native(name, (False, True, inst.argval))
        if not inst.arg & 1:
            end_try()
            hand_off(next_offset, 1)
            emit_handler()
            return
    method_null = name == "LOAD_SUPER_ATTR" or (
        name in ("LOAD_GLOBAL", "LOAD_ATTR") and isinstance(_native_arg(inst, {}), tuple) and inst.arg & 1)
    if method_null and name != "LOAD_SUPER_ATTR":
        out.native(name, (False, inst.argval))
    if method_null:
        # push the NULL of a method call as a marker in the saved stack
        # rather than for real (below or above the value, as the version has it)
        end_try()
        if SPELLING.null_above_callable:
            hand_off(next_offset, 1, null_above=True)
        else:
            bottom.append(NULL)
            bottom_kinds.append(NULL_SLOT)
            hand_off(next_offset, 1)
        emit_handler()
        return
    if name == "RERAISE":
        # a handler's re-raise of an exception the trace did not make (its
        # oparg only locates a lasti of the original frame: not used here)
        out.native("RERAISE", 0)
    else:
        out.native(name, _native_arg(inst, {})) if inst.arg is not None else out.native(name)
    end_try()
    if name not in ("RAISE_VARARGS", "RERAISE"):
        effect = _STACK_EFFECT[name]
        hand_off(next_offset, consumed - pops + (effect(inst.arg) if callable(effect) else effect)[1])
    emit_handler()


_UNCONDITIONAL_JUMPS = ("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")


def _through_jumps(code, offset: int) -> int:
    """Resuming at an unconditional jump is resuming at its target: one
    resume function for both.  (3.12+ compile a ``while`` loop's bottom test
    as POP_JUMP_IF_FALSE over a JUMP_BACKWARD, so without this the loop body
    would be traced twice, once per entry.)"""
    insts, index_of = _insts(code)
    seen = set()
    while offset in index_of and offset not in seen:
        seen.add(offset)
        inst = insts[index_of[offset]]
        if inst.opname not in _UNCONDITIONAL_JUMPS:
            break
        offset = inst.argval
    return offset


#: placeholder in a hand-off's slots for the ``lasti`` a handler entry
#: pushes: the offset (in code units) of the breaking instruction in the
#: resume function, which RERAISE restores for the traceback
_LASTI = object()


def _lasti_in(resume, orig_offset: int) -> int:
    from ..names import ORIGIN
    rcode = resume._fn.__code__
    for new, old in ORIGIN[rcode][1].items():
        if old == orig_offset:
            return new // 2
    raise BreakNotPossible("the breaking instruction is not in the resume function")
