"""torch.nn.functional."""

import pytest
import torch
import torch.nn.functional as F

from helpers import CASE_ARGS, assert_same, case, t, ti, tpos


def relu(x):
    return F.relu(x)


def gelu_both(x):
    return F.gelu(x), F.gelu(x, approximate="tanh")


def silu_elu_leaky(x):
    return F.silu(x), F.elu(x), F.leaky_relu(x, 0.1)


def softplus_hardtanh(x):
    return F.softplus(x), F.hardtanh(x, -0.5, 0.5)


def tanh_sigmoid(x):
    return F.tanh(x), F.sigmoid(x)


def softmax_dims(x):
    return F.softmax(x, dim=-1), F.softmax(x, dim=0), F.log_softmax(x, dim=1)


def softmax_dtype(x):
    return F.softmax(x, dim=-1, dtype=torch.float64)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def layer_norm_no_affine(x):
    return F.layer_norm(x, x.shape[-2:])


def linear(x, w, b):
    return F.linear(x, w, b)


def linear_no_bias(x, w):
    return F.linear(x, w)


def conv2d(x, w, b):
    return F.conv2d(x, w, b)


def conv2d_stride_padding(x, w):
    return F.conv2d(x, w, stride=2, padding=1)


def dropout_eval(x):
    return F.dropout(x, p=0.5, training=False)


def dropout_p_zero_kwarg(x):
    return F.dropout(x, 0.3, False) * 2


def sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


def sdpa_causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def sdpa_mask(q, k, v, m):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)


def cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


def cross_entropy_reductions(logits, target):
    return (
        F.cross_entropy(logits, target, reduction="none"),
        F.cross_entropy(logits, target, reduction="sum"),
        F.cross_entropy(logits, target, label_smoothing=0.1),
    )


def nll_loss(logits, target):
    return F.nll_loss(F.log_softmax(logits, dim=-1), target)


def mse_l1_smooth(x, y):
    return F.mse_loss(x, y), F.l1_loss(x, y), F.smooth_l1_loss(x, y)


def bce_with_logits(x, y):
    return F.binary_cross_entropy_with_logits(x, y)


def normalize(x):
    return F.normalize(x, dim=-1)


def pad(x):
    return F.pad(x, (1, 2)), F.pad(x, (1, 1, 0, 1), value=3.0)


def embedding(idx, w):
    return F.embedding(idx, w)


def pools(x):
    return F.max_pool2d(x, 2), F.avg_pool2d(x, kernel_size=2, stride=1)


def batch_norm_eval(x, rm, rv, w, b):
    return F.batch_norm(x, rm, rv, w, b, training=False)


def group_norm(x):
    return F.group_norm(x, 2)


def cosine_similarity(a, b):
    return F.cosine_similarity(a, b, dim=-1)


def one_hot_with_classes(i):
    return F.one_hot(i, num_classes=5)


def glu(x):
    return F.glu(x, dim=-1)


def adaptive_avg_pool(x):
    return F.adaptive_avg_pool2d(x, 1).flatten(1)


def mlp_functional(x, w1, b1, w2, b2):
    return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)


CASES = [
    case(relu, t(3, 4)),
    case(gelu_both, t(3, 4)),
    case(silu_elu_leaky, t(3, 4)),
    case(softplus_hardtanh, t(3, 4)),
    case(tanh_sigmoid, t(3, 4)),
    case(softmax_dims, t(3, 4)),
    case(softmax_dtype, t(3, 4)),
    case(layer_norm, t(2, 3, 4), t(4), t(4)),
    case(layer_norm_no_affine, t(2, 3, 4)),
    case(linear, t(2, 4), t(3, 4), t(3)),
    case(linear_no_bias, t(2, 5, 4), t(3, 4)),
    case(conv2d, t(1, 2, 5, 5), t(3, 2, 3, 3), t(3)),
    case(conv2d_stride_padding, t(2, 2, 6, 6), t(4, 2, 3, 3)),
    case(dropout_eval, t(3, 4)),
    case(dropout_p_zero_kwarg, t(3, 4)),
    case(sdpa, t(1, 2, 4, 8), t(1, 2, 4, 8), t(1, 2, 4, 8)),
    case(sdpa_causal, t(1, 2, 4, 8), t(1, 2, 4, 8), t(1, 2, 4, 8)),
    case(sdpa_mask, t(1, 2, 4, 8), t(1, 2, 4, 8), t(1, 2, 4, 8), torch.ones(4, 4, dtype=torch.bool).tril()),
    case(cross_entropy, t(4, 5), ti(4, high=5)),
    case(cross_entropy_reductions, t(4, 5), ti(4, high=5)),
    case(nll_loss, t(4, 5), ti(4, high=5)),
    case(mse_l1_smooth, t(3, 4), t(3, 4)),
    case(bce_with_logits, t(3, 4), tpos(3, 4) - 0.5),
    case(normalize, t(3, 4)),
    case(pad, t(2, 3)),
    case(embedding, ti(2, 3, high=6), t(6, 4)),
    case(pools, t(1, 2, 4, 4)),
    case(batch_norm_eval, t(2, 3, 4), t(3), tpos(3), t(3), t(3)),
    case(group_norm, t(2, 4, 3)),
    case(cosine_similarity, t(3, 4), t(3, 4)),
    case(one_hot_with_classes, ti(4, high=5)),
    case(glu, t(3, 4)),
    case(adaptive_avg_pool, t(2, 3, 4, 4)),
    case(mlp_functional, t(2, 4), t(8, 4), t(8), t(3, 8), t(3)),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_functional(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(layer_norm, t(2, 3, 4), t(4), t(4)),
    case(softmax_dims, t(3, 4)),
    case(sdpa_causal, t(1, 2, 4, 8), t(1, 2, 4, 8), t(1, 2, 4, 8)),
    case(cross_entropy, t(4, 5), ti(4, high=5)),
    case(conv2d, t(1, 2, 5, 5), t(3, 2, 3, 3), t(3)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_functional_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


GRAD_CASES = [
    case(mlp_functional, t(2, 4), t(8, 4, requires_grad=True), t(8, requires_grad=True), t(3, 8, requires_grad=True),
         t(3, requires_grad=True)),
    case(layer_norm, t(2, 3, 4, requires_grad=True), t(4, requires_grad=True), t(4, requires_grad=True)),
    case(cross_entropy, t(4, 5, requires_grad=True), ti(4, high=5)),
    case(sdpa, t(1, 2, 4, 8, requires_grad=True), t(1, 2, 4, 8, requires_grad=True), t(1, 2, 4, 8)),
]


@pytest.mark.parametrize("backend", ["eager", pytest.param("aot_eager", marks=pytest.mark.aot_eager)])
@pytest.mark.parametrize(CASE_ARGS, GRAD_CASES)
def test_functional_grads(fn, args, opts, backend):
    assert_same(fn, *args, backend=backend, graphs=1, check_grad=True, **opts)
