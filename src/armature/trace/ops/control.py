"""Jumps, loops and return.  Branch conditions must be known while tracing.

Version differences: 3.11 has FORWARD/BACKWARD conditional jumps and
JUMP_IF_*_OR_POP; 3.12 has direction-less POP_JUMP_IF_*, RETURN_CONST and a
FOR_ITER that leaves the loop through END_FOR; 3.13 adds TO_BOOL before
conditional jumps and ``not``.
"""
from __future__ import annotations

from ...diagnostics.errors import Unsupported
from ...values.constant import ConstantValue
from ...values.containers.containers import IteratorValue
from ...pyversion import opcode
from ..speculation import branch_truth


@opcode("NOP", "RESUME", "CACHE", "EXTENDED_ARG")
def nop(f, inst):
    pass


@opcode("RETURN_VALUE")
def return_value(f, inst):
    f.return_value = f.pop_raw()


@opcode("RETURN_CONST", since=(3, 12), until=(3, 13))
def return_const(f, inst):
    f.return_value = ConstantValue(inst.argval)


@opcode("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT")
def jump(f, inst):
    f.jump(inst.argval)


@opcode("POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE", until=(3, 11))
@opcode("POP_JUMP_IF_TRUE", since=(3, 12))
def pop_jump_if_true(f, inst):
    if branch_truth(f, inst, f.pop(), True):
        f.jump(inst.argval)


@opcode("POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE", until=(3, 11))
@opcode("POP_JUMP_IF_FALSE", since=(3, 12))
def pop_jump_if_false(f, inst):
    if not branch_truth(f, inst, f.pop(), False):
        f.jump(inst.argval)


def _is_none(v) -> bool:
    if isinstance(v, ConstantValue):
        return v.value is None
    if v.is_python_constant():
        return v.as_python_constant() is None
    return False  # tensors, containers, modules, functions are never None


@opcode("POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE", until=(3, 11))
@opcode("POP_JUMP_IF_NONE", since=(3, 12))
def pop_jump_if_none(f, inst):
    if _is_none(f.pop()):
        f.jump(inst.argval)


@opcode("POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE", until=(3, 11))
@opcode("POP_JUMP_IF_NOT_NONE", since=(3, 12))
def pop_jump_if_not_none(f, inst):
    if not _is_none(f.pop()):
        f.jump(inst.argval)


@opcode("JUMP_IF_TRUE_OR_POP", until=(3, 11))
def jump_if_true_or_pop(f, inst):
    if f.stack[-1].truth(f):
        f.jump(inst.argval)
    else:
        f.pop()


@opcode("JUMP_IF_FALSE_OR_POP", until=(3, 11))
def jump_if_false_or_pop(f, inst):
    if not f.stack[-1].truth(f):
        f.jump(inst.argval)
    else:
        f.pop()


@opcode("GET_ITER")
def get_iter(f, inst):
    f.push(f.get_iter(f.pop()))


@opcode("TO_BOOL", since=(3, 13))
def to_bool(f, inst):
    """3.13 converts to an exact bool before POP_JUMP_IF_TRUE/FALSE and
    UNARY_NOT, its only consumers.  The Value stays as it is: those handlers
    take its truth themselves (as on 3.11), so a condition that cannot be
    decided while tracing breaks at the jump, where codegen/spelling.py
    re-emits TO_BOOL before the native jump."""


def _loop_iterator(f):
    it = f.stack[-1]
    if not isinstance(it, IteratorValue):
        from ...values.base import realize
        it = f.stack[-1] = realize(f.ctx, it)   # (an iterator handed over a break)
    if not isinstance(it, IteratorValue):
        raise Unsupported(f"iterating {it}")
    return it


@opcode("FOR_ITER", until=(3, 11))
def for_iter(f, inst):
    it = _loop_iterator(f)
    v = it.next(f)
    if v is None:
        f.pop()
        f.jump(inst.argval)
    else:
        f.push(v)


@opcode("FOR_ITER", since=(3, 12))
def for_iter_end_for(f, inst):
    """3.12+: an exhausted iterator jumps to END_FOR (CPython skips it and,
    on 3.13, the POP_TOP after it; here the END_FOR handlers below pop what
    it would have)."""
    it = _loop_iterator(f)
    v = it.next(f)
    if v is None:
        f.push(ConstantValue(None))
        f.jump(inst.argval)
    else:
        f.push(v)


@opcode("END_FOR", since=(3, 12), until=(3, 12))
def end_for_312(f, inst):
    """3.12's END_FOR is two POP_TOPs: the exhausted value and the iterator."""
    f.popn(2, raw=True)


@opcode("END_FOR", since=(3, 13))
def end_for(f, inst):
    """3.13's END_FOR pops the value; the POP_TOP after it pops the iterator."""
    f.pop_raw()
