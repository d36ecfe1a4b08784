"""Python operators on tensors: binary, reflected, unary, comparisons."""

import pytest
import torch

from helpers import CASE_ARGS, assert_raises_same, assert_same, case, t, tb, ti, tpos


def add(x, y):
    return x + y


def sub(x, y):
    return x - y


def mul(x, y):
    return x * y


def truediv(x, y):
    return x / y


def floordiv(x, y):
    return x // y


def mod(x, y):
    return x % y


def pow_(x, y):
    return x ** y


def matmul(x, y):
    return x @ y


def matmul_chain(x, w, v):
    return x @ w @ v


def vec_matmul(a, b):
    return a @ b


def bit_and(x, y):
    return x & y


def bit_or(x, y):
    return x | y


def bit_xor(x, y):
    return x ^ y


def lshift(x, y):
    return x << y


def rshift(x, y):
    return x >> y


def neg(x):
    return -x


def invert(x):
    return ~x


def compare_all(x, y):
    return x < y, x <= y, x > y, x >= y, x == y, x != y


def compare_scalar(x):
    return x > 0, x == 0.5, 1.0 < x


def scalar_rhs(x):
    return x + 1, x - 2, x * 3, x / 4, x // 2, x % 3, x ** 2


def reflected(x):
    return 1 + x, 2 - x, 3 * x, 4 / x, 5 // x, 7 % x, 2 ** x


def reflected_int_tensor(i):
    return 10 - i, 3 * i, 1 << i, 256 >> i, 6 & i, 1 | i, 5 ^ i


def broadcast_add(x, b):
    return x + b


def broadcast_outer(a, b):
    return a[:, None] * b[None, :]


def mixed_dtype_promotion(i, f):
    return i + f, i * 2.5, i / 2, i // 2


def int_tensor_true_div(a, b):
    return a / b


def bool_ops(a, b):
    return a & b, a | b, a ^ b, ~a


def expression_tree(x, y, z):
    return (x + y) * (y - z) / (z * z + 1) - x ** 2


def operators_with_shape(x):
    return x * x.shape[0] + x.shape[1]


def comparison_to_float(x, y):
    return (x > y).float() * x


def negative_of_sum(x, y):
    return -(x + y) * -1


def matmul_broadcast(a, b):
    return a @ b


def float_pow_tensor_exp(x, e):
    return x ** e


def scalar_tensor_0d(x, s):
    return x * s + s


CASES = [
    case(add, t(3, 4), t(3, 4)),
    case(sub, t(3, 4), t(3, 4)),
    case(mul, t(3, 4), t(3, 4)),
    case(truediv, t(3, 4), tpos(3, 4)),
    case(floordiv, t(3, 4) * 5, tpos(3, 4)),
    case(mod, t(3, 4) * 5, tpos(3, 4)),
    case(pow_, tpos(3, 4), t(3, 4)),
    case(matmul, t(3, 4), t(4, 5)),
    case(matmul_chain, t(2, 3), t(3, 4), t(4, 2)),
    case(vec_matmul, t(4), t(4)),
    case(bit_and, ti(6, high=64), ti(6, high=64)),
    case(bit_or, ti(6, high=64), ti(6, high=64)),
    case(bit_xor, ti(6, high=64), ti(6, high=64)),
    case(lshift, ti(6, high=64), ti(6, high=4)),
    case(rshift, ti(6, high=64), ti(6, high=4)),
    case(neg, t(3, 4)),
    case(invert, ti(6, low=-5, high=5), id="invert_int"),
    case(invert, tb(6), id="invert_bool"),
    case(compare_all, t(3, 4), t(3, 4)),
    case(compare_scalar, t(3, 4)),
    case(scalar_rhs, t(3, 4)),
    case(reflected, tpos(3, 4)),
    case(reflected_int_tensor, ti(6, low=1, high=5)),
    case(broadcast_add, t(3, 4), t(4)),
    case(broadcast_outer, t(3), t(4)),
    case(mixed_dtype_promotion, ti(3, 4), t(3, 4)),
    case(int_tensor_true_div, ti(5, low=-9), ti(5, low=1)),
    case(bool_ops, tb(3, 4), tb(3, 4)),
    case(expression_tree, t(3, 4), t(3, 4), t(3, 4)),
    case(operators_with_shape, t(3, 4)),
    case(comparison_to_float, t(3, 4), t(3, 4)),
    case(negative_of_sum, t(3), t(3)),
    case(matmul_broadcast, t(2, 3, 4), t(4, 5)),
    case(float_pow_tensor_exp, tpos(3), ti(3, high=3)),
    case(scalar_tensor_0d, t(3), t()),
    case(add, ti(3, 4), ti(3, 4), id="add_int"),
    case(floordiv, ti(5, low=-9), ti(5, low=1), id="floordiv_int"),
    case(mod, ti(5, low=-9), ti(5, low=1), id="mod_int"),
    case(mul, t(3, dtype=torch.float64), t(3), id="mul_promote_f64"),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_operators(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(expression_tree, t(3, 4), t(3, 4), t(3, 4)),
    case(reflected, tpos(3, 4)),
    case(matmul_chain, t(2, 3), t(3, 4), t(4, 2)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_operators_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


def test_operator_op_count():
    # (x + y) * (y - z) / (z * z + 1) - x ** 2  -> 8 tensor ops
    assert_same(expression_tree, t(3), t(3), t(3), graphs=1, ops=8)


def test_shape_mismatch_raises():
    # the eager message comes from the CPU kernel; tracers usually report the
    # meta kernel's wording, so only the exception type is compared
    assert_raises_same(add, t(3), t(4), exc_match="type")


def test_matmul_mismatch_raises():
    assert_raises_same(matmul, t(2, 3), t(4, 5), exc_match="type")
