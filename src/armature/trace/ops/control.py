"""Jumps, loops and return.  Branch conditions must be known while tracing."""
from __future__ import annotations

from ...diagnostics.errors import Unsupported
from ...values.constant import ConstantValue
from ...values.containers import IteratorValue
from ..pyversion import opcode


@opcode("NOP", "RESUME", "CACHE", "EXTENDED_ARG")
def nop(f, inst):
    pass


@opcode("RETURN_VALUE")
def return_value(f, inst):
    f.return_value = f.pop_raw()


@opcode("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
def jump(f, inst):
    f.jump(inst.argval)


@opcode("POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE")
def pop_jump_if_true(f, inst):
    if f.pop().truth(f):
        f.jump(inst.argval)


@opcode("POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE")
def pop_jump_if_false(f, inst):
    if not f.pop().truth(f):
        f.jump(inst.argval)


def _is_none(v) -> bool:
    if isinstance(v, ConstantValue):
        return v.value is None
    if v.is_python_constant():
        return v.as_python_constant() is None
    return False  # tensors, containers, modules, functions are never None


@opcode("POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE")
def pop_jump_if_none(f, inst):
    if _is_none(f.pop()):
        f.jump(inst.argval)


@opcode("POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE")
def pop_jump_if_not_none(f, inst):
    if not _is_none(f.pop()):
        f.jump(inst.argval)


@opcode("JUMP_IF_TRUE_OR_POP")
def jump_if_true_or_pop(f, inst):
    if f.stack[-1].truth(f):
        f.jump(inst.argval)
    else:
        f.pop()


@opcode("JUMP_IF_FALSE_OR_POP")
def jump_if_false_or_pop(f, inst):
    if not f.stack[-1].truth(f):
        f.jump(inst.argval)
    else:
        f.pop()


@opcode("GET_ITER")
def get_iter(f, inst):
    f.push(f.get_iter(f.pop()))


@opcode("FOR_ITER")
def for_iter(f, inst):
    it = f.stack[-1]
    if not isinstance(it, IteratorValue):
        from ...values.base import realize
        it = f.stack[-1] = realize(f.ctx, it)   # (an iterator handed over a break)
    if not isinstance(it, IteratorValue):
        raise Unsupported(f"iterating {it}")
    v = it.next(f)
    if v is None:
        f.pop()
        f.jump(inst.argval)
    else:
        f.push(v)
