"""torch.* functions and Tensor methods."""

import pytest
import torch

from helpers import CASE_ARGS, assert_same, case, t, tb, ti, tpos

# ---------------------------------------------------------------- torch.*


def torch_add_mul(x, y):
    return torch.mul(torch.add(x, y), 2)


def torch_add_alpha(x, y):
    return torch.add(x, y, alpha=3)


def torch_unary_chain(x):
    return torch.tanh(torch.exp(torch.sin(x)) + torch.cos(x))


def torch_log_sqrt(x):
    return torch.log(x) + torch.sqrt(x) + torch.rsqrt(x)


def torch_sigmoid_relu(x):
    return torch.sigmoid(x) * torch.relu(x)


def torch_sum_dim_keepdim(x):
    return torch.sum(x, dim=1, keepdim=True)


def torch_mean_dims(x):
    return torch.mean(x, dim=(0, 2))


def torch_amax_amin(x):
    return torch.amax(x, dim=-1), torch.amin(x, dim=0)


def torch_max_dim(x):
    return torch.max(x, dim=1)


def torch_cat_stack(x, y):
    return torch.cat([x, y], dim=0), torch.stack((x, y), dim=1)


def torch_where(c, x, y):
    return torch.where(c, x, y)


def torch_clamp(x):
    return torch.clamp(x, min=-0.5, max=0.5)


def torch_matmul_bmm(a, b):
    return torch.matmul(a, b), torch.bmm(a, b)


def torch_einsum(a, b):
    return torch.einsum("bij,bjk->bik", a, b)


def torch_creation(x):
    z = torch.zeros(2, 3)
    o = torch.ones(2, 3, dtype=torch.float64)
    f = torch.full((2, 3), 7.0)
    return z, o, f, x + 1


def torch_creation_like(x):
    return torch.zeros_like(x), torch.ones_like(x), torch.full_like(x, 3.0), torch.empty_like(x).shape


def torch_arange_linspace(x):
    return x + torch.arange(4), torch.linspace(0, 1, steps=5), torch.arange(1, 10, 2)


def torch_eye(x):
    return x @ torch.eye(3)


def torch_tensor_literal(x):
    return x * torch.tensor([1.0, 2.0, 3.0])


def torch_creation_dtype_device(x):
    return torch.zeros(3, dtype=x.dtype, device=x.device) + x


def torch_tril_triu(x):
    return torch.tril(x), torch.triu(x, diagonal=1)


def torch_cumsum_prod(x):
    return torch.cumsum(x, dim=0), torch.prod(x, dim=1)


def torch_topk(x):
    return torch.topk(x, 2, dim=-1)


def torch_sort(x):
    return torch.sort(x, dim=-1, descending=True)


def torch_flatten_squeeze(x):
    return torch.flatten(x), torch.squeeze(x), torch.unsqueeze(x, 0).shape


def torch_chunk_split(x):
    return torch.chunk(x, 2, dim=0), torch.split(x, [1, 3], dim=0)


def torch_outer_dot(a, b):
    return torch.outer(a, b), torch.dot(a, b)


def torch_maximum_minimum(x, y):
    return torch.maximum(x, y), torch.minimum(x, y)


def torch_softmax_logsumexp(x):
    return torch.softmax(x, dim=-1), torch.logsumexp(x, dim=-1)


def torch_var_std(x):
    return torch.var(x, dim=0), torch.std(x, dim=1, unbiased=False)


def torch_abs_sign_floor(x):
    return torch.abs(x), torch.sign(x), torch.floor(x), torch.ceil(x), torch.round(x)


def torch_addmm_baddbmm(c, a, b):
    return torch.addmm(c, a, b, beta=0.5, alpha=2.0)


def torch_is_tensor(x):
    return torch.is_tensor(x), x + 1


def torch_argmax(x):
    return torch.argmax(x, dim=1), torch.argmin(x)


def torch_isclose_allclose_free(x, y):
    return torch.isclose(x, y), torch.eq(x, x)


# ---------------------------------------------------------------- methods


def method_chain(x):
    return x.exp().sin().sum()


def method_reductions(x):
    return x.sum(0), x.mean(-1), x.amax(1), x.norm(), x.var(0)


def method_dtype_conversions(x):
    return x.to(torch.float64), x.double(), x.half(), x.int(), x.long(), x.bool()


def method_to_kw_dtype(x):
    return x.to(dtype=torch.float16)


def method_type_as(x, y):
    return x.type_as(y)


def method_int_tensor_float(i):
    return i.float() / 3


def method_clone_contiguous_detach(x):
    return x.clone(), x.t().contiguous(), x.detach()


def method_masked_fill(x, m):
    return x.masked_fill(m, 0.0)


def method_clamp(x):
    return x.clamp(min=0), x.clamp(max=0.1), x.clamp_min(0.2)


def method_argmax_softmax(x):
    return x.argmax(-1), x.softmax(-1), x.log_softmax(dim=0)


def method_cumsum_flatten(x):
    return x.cumsum(1).flatten()


def method_chunk_unbind(x):
    return x.chunk(2, dim=1), x.unbind(0)


def method_split(x):
    return x.split(2)


def method_topk_sort(x):
    return x.topk(1), x.sort(dim=0)


def method_new_factories(x):
    return x.new_zeros(2, 3), x.new_ones((2,)), x.new_full((2,), 5.0), x.new_tensor([1.0, 2.0])


def method_pow_sqrt(x):
    return x.pow(2), x.sqrt(), x.rsqrt(), x.reciprocal()


def method_lerp_addcmul(x, y, z):
    return x.lerp(y, 0.3), x.addcmul(y, z, value=0.5)


def method_matmul_mm(a, b):
    return a.matmul(b), a.mm(b)


def method_abs_neg(x):
    return x.abs().neg()


def method_where_logical(x, m):
    return x.where(m, -x), m.logical_not(), m.logical_and(~m)


def method_repeat_tile(x):
    return x.repeat(2, 1), x.tile((1, 2)), x.repeat_interleave(2, dim=0)


def method_flip_roll(x):
    return x.flip(0), x.roll(1, dims=1)


def method_gather_index_select(x, i):
    return x.gather(1, i), x.index_select(0, i[:, 0])


def method_all_any(m):
    return m.all(), m.any(dim=0)


def method_eq_ne(x, y):
    return x.eq(y), x.ne(y), x.lt(0), x.ge(y)


def creation_from_int_arg(n):
    return torch.ones(n) * 2, torch.arange(n)


def no_arguments():
    return torch.arange(6).view(2, 3) * 2


def unbound_tensor_method(x, y):
    return torch.Tensor.add(x, y), torch.Tensor.sum(x, dim=0)


CASES = [
    case(creation_from_int_arg, 4),
    case(no_arguments),
    case(unbound_tensor_method, t(3, 4), t(3, 4)),
    case(torch_add_mul, t(3, 4), t(3, 4)),
    case(torch_add_alpha, t(3, 4), t(3, 4)),
    case(torch_unary_chain, t(3, 4)),
    case(torch_log_sqrt, tpos(3, 4)),
    case(torch_sigmoid_relu, t(3, 4)),
    case(torch_sum_dim_keepdim, t(3, 4)),
    case(torch_mean_dims, t(2, 3, 4)),
    case(torch_amax_amin, t(3, 4)),
    case(torch_max_dim, t(3, 4)),
    case(torch_cat_stack, t(3, 4), t(3, 4)),
    case(torch_where, tb(3, 4), t(3, 4), t(3, 4)),
    case(torch_clamp, t(3, 4)),
    case(torch_matmul_bmm, t(2, 3, 4), t(2, 4, 5)),
    case(torch_einsum, t(2, 3, 4), t(2, 4, 5)),
    case(torch_creation, t(2, 3)),
    case(torch_creation_like, t(2, 3)),
    case(torch_arange_linspace, t(4)),
    case(torch_eye, t(2, 3)),
    case(torch_tensor_literal, t(2, 3)),
    case(torch_creation_dtype_device, t(3)),
    case(torch_tril_triu, t(4, 4)),
    case(torch_cumsum_prod, t(3, 4)),
    case(torch_topk, t(3, 5)),
    case(torch_sort, t(3, 5)),
    case(torch_flatten_squeeze, t(1, 3, 1, 2)),
    case(torch_chunk_split, t(4, 2)),
    case(torch_outer_dot, t(3), t(3)),
    case(torch_maximum_minimum, t(3, 4), t(3, 4)),
    case(torch_softmax_logsumexp, t(3, 4)),
    case(torch_var_std, t(3, 4)),
    case(torch_abs_sign_floor, t(3, 4) * 3),
    case(torch_addmm_baddbmm, t(3, 5), t(3, 4), t(4, 5)),
    case(torch_is_tensor, t(3)),
    case(torch_argmax, t(3, 4)),
    case(torch_isclose_allclose_free, t(3), t(3)),
    case(method_chain, t(3, 4)),
    case(method_reductions, t(3, 4)),
    case(method_dtype_conversions, t(3, 4) * 4),
    case(method_to_kw_dtype, t(3)),
    case(method_type_as, t(3), ti(3)),
    case(method_int_tensor_float, ti(3, 4)),
    case(method_clone_contiguous_detach, t(3, 4)),
    case(method_masked_fill, t(3, 4), tb(3, 4)),
    case(method_clamp, t(3, 4)),
    case(method_argmax_softmax, t(3, 4)),
    case(method_cumsum_flatten, t(3, 4)),
    case(method_chunk_unbind, t(3, 4)),
    case(method_split, t(5, 2)),
    case(method_topk_sort, t(3, 4)),
    case(method_new_factories, t(3, dtype=torch.float64)),
    case(method_pow_sqrt, tpos(3, 4)),
    case(method_lerp_addcmul, t(3), t(3), t(3)),
    case(method_matmul_mm, t(3, 4), t(4, 2)),
    case(method_abs_neg, t(3, 4)),
    case(method_where_logical, t(3, 4), tb(3, 4)),
    case(method_repeat_tile, t(2, 3)),
    case(method_flip_roll, t(2, 3)),
    case(method_gather_index_select, t(3, 4), ti(3, 2, high=3)),
    case(method_all_any, tb(3, 4)),
    case(method_eq_ne, t(3, 4), t(3, 4)),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_tensor_ops(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(torch_unary_chain, t(3, 4)),
    case(torch_cat_stack, t(3, 4), t(3, 4)),
    case(torch_max_dim, t(3, 4)),
    case(method_reductions, t(3, 4)),
    case(method_chunk_unbind, t(3, 4)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_tensor_ops_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


def folded_constant_scale(x):
    return torch.relu(x) * (2 * 3)


def test_tensor_op_count():
    # one relu, one mul; the scalar product is folded
    assert_same(folded_constant_scale, t(3, 4), graphs=1, ops=2)
