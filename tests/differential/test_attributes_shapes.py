"""Tensor attributes (shape, dtype, device, ndim, requires_grad, T) and
size()/dim()/numel(), which are constants at trace time."""

import pytest
import torch

from helpers import CASE_ARGS, assert_raises_same, assert_same, assert_same_calls, case, t, ti


def return_shape(x):
    return x.shape


def return_size(x):
    return x.size()


def return_size_dim(x):
    return x.size(1), x.size(-1), x.shape[0], x.shape[-2]


def return_dim_ndim_numel(x):
    return x.dim(), x.ndim, x.numel()


def return_dtype_device(x):
    return x.dtype, x.device


def return_requires_grad(x):
    return x.requires_grad


def shape_unpack(x):
    b, n = x.shape
    return x.view(b * n), b, n


def shape_arith_fold(x):
    return x * (x.shape[0] * x.shape[1]) + x.numel() // 2


def zeros_of_shape(x):
    return torch.zeros(x.shape) + x, torch.ones(x.size(0), 2)


def new_ones_of_shape(x):
    return x.new_ones(x.shape)


def reshape_by_size(x):
    return x.reshape(x.size(0), -1)


def shape_slicing(x):
    return x.shape[1:], x.shape[:-1]


def shape_compare(x):
    return x.shape == (3, 4), x.shape[0] == 3, x.dim() == 2


def shape_plus_tuple(x):
    return x.view(x.shape + (1,))


def len_of_tensor(x):
    return x * len(x)


def branch_on_dtype(x):
    if x.dtype == torch.float32:
        return x * 2
    return x + 1


def branch_on_ndim(x):
    if x.ndim == 2:
        return x.sum(0)
    return x


def branch_on_requires_grad(x):
    if x.requires_grad:
        return x * 2
    return x * 3


def dtype_to_creation(x):
    return torch.ones(3, dtype=x.dtype) + x, torch.arange(3, device=x.device)


def is_floating_point(x, i):
    return x.is_floating_point(), i.is_floating_point()


def attr_T(x):
    return x.T @ x


def last_dim_scale(x):
    return x / x.shape[-1] ** 0.5


def size_in_loop(x):
    acc = x.new_zeros(x.shape[1:])
    for i in range(x.shape[0]):
        acc = acc + x[i]
    return acc


def dtype_itemsize_free(x):
    return x.to(torch.float64).dtype, x.dtype is torch.float32


def shape_into_expand(x, y):
    return x.expand(y.shape[0], -1) + y


def numel_to_view(x):
    return x.view(x.numel())


def device_type(x):
    return x.device.type, x + 1


CASES = [
    case(return_shape, t(3, 4), graphs=None),
    case(return_size, t(3, 4), graphs=None),
    case(return_size_dim, t(3, 4), graphs=None),
    case(return_dim_ndim_numel, t(2, 3, 4), graphs=None),
    case(return_dtype_device, t(3, dtype=torch.float64), graphs=None),
    case(return_requires_grad, t(3, requires_grad=True), graphs=None),
    case(return_requires_grad, t(3), id="return_requires_grad_false", graphs=None),
    case(shape_unpack, t(3, 4)),
    case(shape_arith_fold, t(3, 4), ops=2),
    case(zeros_of_shape, t(3, 4)),
    case(new_ones_of_shape, t(3, 4)),
    case(reshape_by_size, t(2, 3, 4)),
    case(shape_slicing, t(2, 3, 4), graphs=None),
    case(shape_compare, t(3, 4), graphs=None),
    case(shape_plus_tuple, t(3, 4)),
    case(len_of_tensor, t(3, 4), ops=1),
    case(branch_on_dtype, t(3), ops=1),
    case(branch_on_dtype, ti(3), id="branch_on_dtype_int", ops=1),
    case(branch_on_ndim, t(3, 4)),
    case(branch_on_ndim, t(3), id="branch_on_ndim_1d", graphs=None),
    case(branch_on_requires_grad, t(3, requires_grad=True)),
    case(branch_on_requires_grad, t(3), id="branch_on_requires_grad_false"),
    case(dtype_to_creation, t(3)),
    case(is_floating_point, t(3), ti(3), graphs=None),
    case(attr_T, t(3, 4)),
    case(last_dim_scale, t(3, 16), ops=1),
    case(size_in_loop, t(3, 2)),
    case(dtype_itemsize_free, t(3), graphs=None),
    case(shape_into_expand, t(1, 4), t(3, 4)),
    case(numel_to_view, t(3, 4)),
    case(device_type, t(3)),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_attributes_shapes(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(shape_unpack, t(3, 4)),
    case(branch_on_requires_grad, t(3, requires_grad=True)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_attributes_shapes_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


def test_shape_only_function_has_no_ops():
    # everything is folded: no tensor op is recorded
    assert_same(return_size_dim, t(3, 4), graphs=None, ops=0)


def test_dtype_shape_changes_between_calls():
    assert_same_calls(branch_on_dtype, [(t(3),), (ti(3),), (t(3, dtype=torch.float64),), (t(3),)])
    assert_same_calls(size_in_loop, [(t(3, 2),), (t(5, 2),), (t(1, 4),)])
    assert_same_calls(branch_on_ndim, [(t(3, 4),), (t(3),), (t(2, 2),)])
    assert_same_calls(branch_on_requires_grad, [(t(3),), (t(3, requires_grad=True),), (t(3),)])


def test_non_contiguous_inputs():
    assert_same(reshape_by_size, t(4, 3, 2).transpose(0, 2), graphs=1)
    assert_same(attr_T, t(4, 3).t(), graphs=1)
    assert_same_calls(reshape_by_size, [(t(2, 3, 4),), (t(4, 3, 2).transpose(0, 2),), (t(2, 3, 4),)])


def test_view_of_non_contiguous_raises():
    assert_raises_same(shape_unpack, t(4, 3).t(), exc_match="type")
