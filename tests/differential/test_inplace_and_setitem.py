"""In-place ops and __setitem__: mutations of inputs must match eager.

assert_same compares the inputs after the call, and checks that a returned
input is the very same object when compiled.
"""

import pytest
import torch

from helpers import CASE_ARGS, assert_same, case, t, tb, ti


def add_(x):
    x.add_(1)
    return x


def add_no_return(x):
    x.add_(1)


def mul_by_other(x, y):
    x.mul_(y)
    return x.sum()


def iadd_tensor(x, y):
    x += y
    return x


def imul_scalar(x):
    x *= 2
    return x


def isub_idiv(x, y):
    x -= y
    x /= 2
    return x * 1


def zero_fill(x, y):
    x.zero_()
    y.fill_(3.0)
    return x + y


def clamp_relu_sigmoid_(x):
    x.clamp_(-0.5, 0.5)
    x.relu_()
    x.sigmoid_()
    return x


def copy_(x, y):
    x.copy_(y)
    return x


def setitem_int(x):
    x[0] = 1.0
    return x


def setitem_row_from_tensor(x, y):
    x[:, 1] = y[:, 1]
    return x


def setitem_slice_scalar(x):
    x[1:3] = 0.0
    return x.sum()


def setitem_ellipsis(x):
    x[..., 0] = -1.0


def setitem_bool_mask(x, m):
    x[m] = 0.0
    return x


def setitem_index_tensor(x, i):
    x[i] = 5.0
    return x


def setitem_broadcast(x, r):
    x[1:] = r
    return x


def setitem_none_and_int(x):
    x[None, 0] = 2.0
    return x


def augmented_setitem(x):
    x[1:3] += 1
    return x


def augmented_setitem_tensor(x, y):
    x[:, 0] *= y
    return x


def mutate_through_view(x):
    v = x.view(-1)
    v[0] = 5.0
    return x.sum()


def mutate_through_transpose(x):
    x.t().mul_(2)
    return x


def mutate_slice_view(x):
    x[0].add_(10)
    x[:, -1].zero_()
    return x


def clone_then_mutate(x):
    y = x.clone()
    y.add_(1)
    y[0] = 0.0
    return y


def intermediate_mutation(x):
    y = x * 2
    y.sub_(1)
    y += x
    return y


def mutate_two_inputs(x, y):
    x.add_(y)
    y.mul_(2)
    return x - y


def mutate_tensor_in_list(xs):
    xs[0].add_(1)
    xs[1][0] = 7.0
    return xs[0] + xs[1]


def mutate_tensor_in_dict(d):
    d["a"].mul_(3)
    return d["b"] * 2


def masked_fill_(x, m):
    x.masked_fill_(m, -1.0)
    return x


def index_add_(x, i, s):
    x.index_add_(0, i, s)
    return x


def scatter_(x, i):
    x.scatter_(1, i, 1.0)
    return x


def inplace_int_tensor(i):
    i.add_(3)
    i.mul_(2)
    i[0] = -1
    return i


def inplace_then_use_old_alias(x):
    y = x
    x.add_(1)
    return y * 2, x


def read_after_write(x):
    a = x.sum()
    x.mul_(0.5)
    b = x.sum()
    return a, b


def mutation_under_loop(x):
    for i in range(3):
        x[i] = i
    return x


def mutate_unused_input(x, y):
    y.add_(1)
    return x * 2


def iadd_view_input(x):
    v = x[1]
    v += 1
    return v


def augmented_ops_float(x, y):
    x **= 2
    x //= 0.5
    x %= 3
    y -= x
    return x, y


def augmented_ops_int(i, j):
    i &= j
    i |= 1
    i ^= j
    i <<= 2
    i >>= 1
    return i


CASES = [
    case(augmented_ops_float, t(3, 4), t(3, 4)),
    case(augmented_ops_int, ti(6, high=64), ti(6, high=64)),
    case(add_, t(3, 4)),
    case(add_no_return, t(3, 4)),
    case(mul_by_other, t(3, 4), t(3, 4)),
    case(iadd_tensor, t(3, 4), t(3, 4)),
    case(imul_scalar, t(3, 4)),
    case(isub_idiv, t(3, 4), t(4)),
    case(zero_fill, t(3, 4), t(3, 4)),
    case(clamp_relu_sigmoid_, t(3, 4)),
    case(copy_, t(3, 4), t(4)),
    case(setitem_int, t(3, 4)),
    case(setitem_row_from_tensor, t(3, 4), t(3, 4)),
    case(setitem_slice_scalar, t(4, 2)),
    case(setitem_ellipsis, t(2, 3, 4)),
    case(setitem_bool_mask, t(3, 4), tb(3, 4)),
    case(setitem_index_tensor, t(5, 2), torch.tensor([0, 3])),
    case(setitem_broadcast, t(3, 4), t(4)),
    case(setitem_none_and_int, t(3, 4)),
    case(augmented_setitem, t(4, 2)),
    case(augmented_setitem_tensor, t(3, 2), t(3)),
    case(mutate_through_view, t(3, 4)),
    case(mutate_through_transpose, t(3, 4)),
    case(mutate_slice_view, t(3, 4)),
    case(clone_then_mutate, t(3, 4)),
    case(intermediate_mutation, t(3, 4)),
    case(mutate_two_inputs, t(3, 4), t(3, 4)),
    case(mutate_tensor_in_list, [t(3), t(3)]),
    case(mutate_tensor_in_dict, {"a": t(3), "b": t(3)}),
    case(masked_fill_, t(3, 4), tb(3, 4)),
    case(index_add_, t(5, 2), torch.tensor([0, 2, 2]), t(3, 2)),
    case(scatter_, t(3, 4), ti(3, 1, high=4)),
    case(inplace_int_tensor, ti(4)),
    case(inplace_then_use_old_alias, t(3)),
    case(read_after_write, t(3, 4)),
    case(mutation_under_loop, t(4, 2)),
    case(mutate_unused_input, t(3), t(3)),
    case(iadd_view_input, t(3, 4)),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_inplace_and_setitem(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(add_, t(3, 4)),
    case(iadd_tensor, t(3, 4), t(3, 4)),
    case(setitem_row_from_tensor, t(3, 4), t(3, 4)),
    case(mutate_through_view, t(3, 4)),
    case(mutate_two_inputs, t(3, 4), t(3, 4)),
    case(augmented_setitem, t(4, 2)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_inplace_and_setitem_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


def test_same_tensor_passed_twice():
    # aliasing between inputs is preserved by the harness copies
    x = t(3)
    assert_same(mutate_two_inputs, x, x, graphs=None)


def test_non_contiguous_input_mutation():
    assert_same(add_, t(4, 3).t(), graphs=1)
    assert_same(setitem_row_from_tensor, t(4, 3).t(), t(3, 4), graphs=1)
    assert_same(mutate_through_transpose, t(4, 3).t(), graphs=1)


def test_empty_and_zero_dim_inputs():
    assert_same(add_, t(0, 3), graphs=None)
    assert_same(iadd_tensor, t(), t(), graphs=None)
    assert_same(setitem_ellipsis, t(0, 2, 3), graphs=None)
