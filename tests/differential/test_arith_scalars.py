"""Constants and Python scalar arithmetic: folded at trace time.

Every scalar expression here is known while tracing, so the captured graph
holds only the tensor ops (checked with ``ops=``).  Integer arguments are
used where ops are counted (torch.compile turns float arguments into graph
inputs; armature folds them).
"""

import pytest

from helpers import CASE_ARGS, assert_raises_same, assert_same, case, t


def add_consts(x):
    return x + (2 + 3)


def mixed_precedence(x):
    return x * (2 ** 3 - 4 // 3 + 10 % 4)


def true_div_ints(x):
    return x * (7 / 2)


def floor_div_negative(x):
    return x + (-7) // 2


def mod_negative(x):
    return x + (-7) % 3


def float_mod(x):
    return x + 7.5 % 2.0


def power_negative_exp(x):
    return x * 2 ** -2


def int_bitwise(x):
    return x + (5 & 3 | 8 ^ 1 << 2 >> 1)


def unary_ops(x):
    a = 4
    return x * (-a) + (~a) + (+a)


def augmented_scalars(x):
    a = 1
    a += 2
    a *= 3
    a -= 1
    a //= 3
    a **= 2
    return x * a


def scalar_args(x, a, b):
    return x * (a + b) - a * b


def scalar_args_floordiv(x, a, b):
    return x + a // b + a % b


def float_arg(x, s):
    return x * s


def comparisons_chain(x):
    k = 1 if 1 < 2 < 3 else 0
    return x + k


def bool_ops_values(x):
    a = 0 or 5
    b = 3 and 7
    c = not 0
    return x * a + b + c


def bool_arith(x):
    return x * (True + True)


def scalar_only(a, b):
    return a * b + 1


def scalar_only_float(a, b):
    return a / b, a // b, a % b, a ** 2


def scalar_only_mixed(a):
    return a * 1.5 + 2


def scalar_tuple_result(a, b):
    return a == b, a != b, a < b, a >= b


def constant_return_with_tensor(x):
    return x + 1, 3 * 4 - 2


def string_constant(x):
    name = "ab" + "cd"
    return x * 2, name


def int_from_len_of_tuple(x):
    dims = (1, 2, 3)
    return x * len(dims)


def scalar_in_tensor_op_kwarg(x):
    a = 2
    return x.add(x, alpha=a + 1)


def large_int_fold(x):
    n = 1
    for _ in range(10):
        n = n * 2
    return x + n


def scalar_then_reflected(x, a):
    return (a * 3 - 1) * x


def float_precision_fold(x):
    return x * (0.1 + 0.2), x + 10 ** 20 / 10 ** 19


CASES = [
    case(float_precision_fold, t(3), ops=2),
    case(add_consts, t(3, 4), ops=1),
    case(mixed_precedence, t(3, 4), ops=1),
    case(true_div_ints, t(3), ops=1),
    case(floor_div_negative, t(3), ops=1),
    case(mod_negative, t(3), ops=1),
    case(float_mod, t(3), ops=1),
    case(power_negative_exp, t(3), ops=1),
    case(int_bitwise, t(3), ops=1),
    case(unary_ops, t(3), ops=3),
    case(augmented_scalars, t(3), ops=1),
    case(scalar_args, t(3), 2, 5, ops=2),
    case(scalar_args_floordiv, t(3), 17, 5, ops=2),
    case(float_arg, t(3), 0.25),
    case(comparisons_chain, t(3), ops=1),
    case(bool_ops_values, t(3), ops=3),
    case(bool_arith, t(3), ops=1),
    case(scalar_only, 3, 4, graphs=None, ops=0),
    case(scalar_only_float, 7.0, 2.0, graphs=None, ops=0),
    case(scalar_only_mixed, 3, graphs=None, ops=0),
    case(scalar_tuple_result, 3, 4, graphs=None, ops=0),
    case(constant_return_with_tensor, t(3), ops=1),
    case(string_constant, t(3), ops=1),
    case(int_from_len_of_tuple, t(3), ops=1),
    case(scalar_in_tensor_op_kwarg, t(3), ops=1),
    case(large_int_fold, t(3), ops=1),
    case(scalar_then_reflected, t(3), 4, ops=1),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_arith_scalars(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(mixed_precedence, t(3, 4)),
    case(scalar_args, t(3), 2, 5),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_arith_scalars_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


def scalar_zero_division(x, n):
    return x * (1 // n)


def scalar_zero_division_float(x, a):
    return x * (a / 0)


@pytest.mark.parametrize(
    CASE_ARGS,
    [case(scalar_zero_division, t(3), 0), case(scalar_zero_division_float, t(3), 1.0)],
)
def test_arith_scalars_raises(fn, args, opts):
    assert_raises_same(fn, *args, **opts)
