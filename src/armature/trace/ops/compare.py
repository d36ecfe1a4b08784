"""BINARY_OP, UNARY_*, COMPARE_OP, IS_OP, CONTAINS_OP."""
from __future__ import annotations

from ...values.constant import BINARY_OPS, COMPARE_OPS, UNARY_OPS, ConstantValue
from ...values.operations.operators import binary_op, compare_op, contains, is_same, unary_op
from ...pyversion import opcode


@opcode("BINARY_OP", until=(3, 13))   # 3.14: ops/py314.py (subscripts too)
def binary(f, inst):
    b = f.pop()
    a = f.pop()
    f.push(binary_op(f, BINARY_OPS[inst.argrepr], a, b))


@opcode("UNARY_NEGATIVE", "UNARY_INVERT", "UNARY_NOT")
@opcode("UNARY_POSITIVE", until=(3, 11))  # 3.12+: CALL_INTRINSIC_1 (ops/call.py)
def unary(f, inst):
    f.push(unary_op(f, UNARY_OPS[inst.opname], f.pop()))


@opcode("COMPARE_OP")
def compare(f, inst):
    """``argval`` is the operator on every version (3.12 moved it to the high
    bits of the oparg, 3.13 added a "coerce to bool" bit for a following
    jump, whose handler takes the truth of the result itself)."""
    b = f.pop()
    a = f.pop()
    f.push(compare_op(f, COMPARE_OPS[inst.argval], a, b))


@opcode("IS_OP")
def is_op(f, inst):
    b = f.pop()
    a = f.pop()
    f.push(ConstantValue(is_same(f, a, b) ^ bool(inst.arg)))


@opcode("CONTAINS_OP")
def contains_op(f, inst):
    b = f.pop()
    a = f.pop()
    f.push(ConstantValue(contains(f, a, b) ^ bool(inst.arg)))
