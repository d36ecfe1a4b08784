"""BINARY_OP, UNARY_*, COMPARE_OP, IS_OP, CONTAINS_OP."""
from __future__ import annotations

from ...values.constant import BINARY_OPS, COMPARE_OPS, UNARY_OPS, ConstantValue
from ...values.operators import binary_op, compare_op, contains, is_same, unary_op
from ..pyversion import opcode


@opcode("BINARY_OP")
def binary(f, inst):
    b = f.pop()
    a = f.pop()
    f.push(binary_op(f, BINARY_OPS[inst.argrepr], a, b))


@opcode("UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_INVERT", "UNARY_NOT")
def unary(f, inst):
    f.push(unary_op(f, UNARY_OPS[inst.opname], f.pop()))


@opcode("COMPARE_OP")
def compare(f, inst):
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
