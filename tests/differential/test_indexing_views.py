"""Indexing (ints, slices, None, Ellipsis, tensors, tuples) and view ops.

Outputs that are views of inputs in eager must share storage with the input
when compiled too (checked by assert_same's aliasing comparison).
"""

import pytest
import torch

from helpers import CASE_ARGS, assert_raises_same, assert_same, case, t


def index_int(x):
    return x[0], x[-1]


def index_slice(x):
    return x[1:3], x[:2], x[2:], x[:]


def index_step(x):
    return x[::2], x[1::3]


def index_2d(x):
    return x[:, 0], x[1, :], x[1, 2]


def index_none(x):
    return x[None], x[:, None], x[None, :, None]


def index_ellipsis(x):
    return x[..., 1], x[0, ...], x[..., None]


def index_mixed_tuple(x):
    return x[0, ..., None, 1:]


def index_negative_slice_bounds(x):
    return x[-3:-1], x[:, -2:]


def index_tensor(x, i):
    return x[i]


def index_tensor_2d(x, i, j):
    return x[i, j]


def index_list_of_ints(x):
    return x[[0, 2]]


def index_slice_and_tensor(x, i):
    return x[1:, i]


def index_explicit_tuple(x):
    idx = (1, slice(None), 0)
    return x[idx]


def index_slice_object_arg(x, s):
    return x[s]


def index_with_shape_bound(x):
    return x[: x.shape[0] // 2]


def index_chain(x):
    return x[1][2][0]


def view_reshape(x):
    return x.view(-1), x.view(2, -1), x.reshape(4, 3), x.reshape(-1, 2)


def view_with_shape_args(x):
    return x.view(x.shape[0], -1), x.reshape((x.size(0) * 2, -1))


def view_as(x, y):
    return x.view_as(y)


def transpose_permute(x):
    return x.transpose(0, 1), x.permute(2, 0, 1), x.transpose(-1, -2)


def unsqueeze_squeeze(x):
    return x.unsqueeze(0), x.unsqueeze(-1), x.squeeze(1), x.squeeze()


def expand(x):
    return x.expand(3, 4), x.expand(2, -1, -1)


def expand_as(x, y):
    return x.expand_as(y) + y


def narrow(x):
    return x.narrow(0, 1, 2), x.narrow(1, 0, 1)


def attr_T_mT(x, y):
    return x.T, y.mT


def flatten_unflatten(x):
    return x.flatten(1), x.flatten(), x.unflatten(1, (3, 1))


def movedim(x):
    return x.movedim(0, -1)


def t_method(x):
    return x.t()


def view_chain(x):
    return x.transpose(0, 1).reshape(-1).view(2, 6)


def split_views(x):
    a, b = x.split(2, dim=1)
    return a * b


def unbind_loop_free(x):
    r0, r1, r2 = x.unbind(0)
    return r0 + r1 * r2


def view_of_input_returned(x):
    return x.view(2, 6)


def view_then_compute(x):
    return (x.unsqueeze(1) * x.unsqueeze(0)).sum(-1)


def diagonal_select(x):
    return x.diagonal(), x.select(1, 0)


def contiguous_after_transpose(x):
    return x.transpose(0, 1).contiguous().view(-1)


CASES = [
    case(index_int, t(3, 4)),
    case(index_slice, t(5, 2)),
    case(index_step, t(7)),
    case(index_2d, t(3, 4)),
    case(index_none, t(3, 4)),
    case(index_ellipsis, t(2, 3, 4)),
    case(index_mixed_tuple, t(2, 3, 4)),
    case(index_negative_slice_bounds, t(5, 4)),
    case(index_tensor, t(5, 2), torch.tensor([4, 0, 0, 2])),
    case(index_tensor_2d, t(5, 3), torch.tensor([0, 4]), torch.tensor([2, 1])),
    case(index_list_of_ints, t(4, 2)),
    case(index_slice_and_tensor, t(3, 4), torch.tensor([3, 1])),
    case(index_explicit_tuple, t(3, 4, 2)),
    case(index_slice_object_arg, t(6, 2), slice(1, 5, 2)),
    case(index_with_shape_bound, t(6, 2)),
    case(index_chain, t(2, 3, 4)),
    case(view_reshape, t(3, 4)),
    case(view_with_shape_args, t(4, 3, 2)),
    case(view_as, t(12), t(3, 4)),
    case(transpose_permute, t(2, 3, 4)),
    case(unsqueeze_squeeze, t(3, 1, 4)),
    case(expand, t(1, 4)),
    case(expand_as, t(4), t(3, 4)),
    case(narrow, t(4, 3)),
    case(attr_T_mT, t(3, 4), t(2, 3, 4)),
    case(flatten_unflatten, t(2, 3, 1)),
    case(movedim, t(2, 3, 4)),
    case(t_method, t(3, 4)),
    case(view_chain, t(3, 4)),
    case(split_views, t(3, 4)),
    case(unbind_loop_free, t(3, 4)),
    case(view_of_input_returned, t(3, 4)),
    case(view_then_compute, t(3, 4)),
    case(diagonal_select, t(3, 3)),
    case(contiguous_after_transpose, t(3, 4)),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_indexing_views(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(index_mixed_tuple, t(2, 3, 4)),
    case(index_tensor, t(5, 2), torch.tensor([4, 0, 0, 2])),
    case(transpose_permute, t(2, 3, 4)),
    case(view_of_input_returned, t(3, 4)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_indexing_views_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


def bad_view(x):
    return x.view(7)


def index_out_of_range(x):
    return x[5]


def test_bad_view_raises():
    assert_raises_same(bad_view, t(3, 4), exc_match="contains")


def test_index_out_of_range_raises():
    assert_raises_same(index_out_of_range, t(3, 4), exc_match="type")
