"""Built-in torch.nn modules compiled whole: each must trace into one graph
(fullgraph=True) and match eager, in eval and (where it differs) train mode."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from helpers import CountingBackend, assert_same, compile_fn, t, ti


def _seeded(make):
    def build():
        torch.manual_seed(0)
        return make()

    return build


# name -> (constructor, args, modes)
BOTH = ("eval", "train")
EVAL = ("eval",)
MODULES = {
    "Linear": (lambda: nn.Linear(4, 3), lambda: (t(2, 4),), BOTH),
    "Linear_nobias_3d": (lambda: nn.Linear(4, 3, bias=False), lambda: (t(2, 5, 4),), BOTH),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 2), lambda: (t(2, 3), t(2, 4)), EVAL),
    "Conv1d": (lambda: nn.Conv1d(2, 3, 3, padding=1), lambda: (t(2, 2, 8),), BOTH),
    "Conv2d": (lambda: nn.Conv2d(2, 3, 3, stride=2, padding=1), lambda: (t(2, 2, 8, 8),), BOTH),
    "Conv2d_groups_dilation": (lambda: nn.Conv2d(4, 4, 3, groups=2, dilation=2, bias=False),
                               lambda: (t(1, 4, 9, 9),), EVAL),
    "Conv2d_padding_same_reflect": (lambda: nn.Conv2d(2, 3, 3, padding="same", padding_mode="reflect"),
                                    lambda: (t(1, 2, 6, 6),), EVAL),
    "Conv3d": (lambda: nn.Conv3d(2, 3, 3), lambda: (t(1, 2, 5, 5, 5),), BOTH),
    "ConvTranspose1d": (lambda: nn.ConvTranspose1d(2, 3, 3, stride=2), lambda: (t(2, 2, 6),), BOTH),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2, output_padding=1),
                        lambda: (t(2, 2, 5, 5),), BOTH),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(4), lambda: (t(6, 4),), BOTH),
    "BatchNorm1d_3d_input": (lambda: nn.BatchNorm1d(3), lambda: (t(2, 3, 5),), BOTH),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), lambda: (t(2, 3, 4, 4),), BOTH),
    "BatchNorm2d_momentum_none": (lambda: nn.BatchNorm2d(3, momentum=None), lambda: (t(2, 3, 4, 4),), EVAL),
    "BatchNorm2d_no_stats": (lambda: nn.BatchNorm2d(3, track_running_stats=False, affine=False),
                             lambda: (t(2, 3, 4, 4),), BOTH),
    "LayerNorm": (lambda: nn.LayerNorm(4), lambda: (t(2, 3, 4),), EVAL),
    "LayerNorm_2d_shape": (lambda: nn.LayerNorm((3, 4), elementwise_affine=False), lambda: (t(2, 3, 4),), EVAL),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda: (t(2, 4, 3, 3),), EVAL),
    "RMSNorm": (lambda: nn.RMSNorm(4), lambda: (t(2, 3, 4),), EVAL),
    "RMSNorm_eps": (lambda: nn.RMSNorm([3, 4], eps=1e-3), lambda: (t(2, 3, 4),), EVAL),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3, affine=True), lambda: (t(2, 3, 4, 4),), EVAL),
    "Dropout_eval": (lambda: nn.Dropout(0.5), lambda: (t(3, 4),), EVAL),
    "Dropout2d_eval": (lambda: nn.Dropout2d(0.3), lambda: (t(2, 3, 4, 4),), EVAL),
    "Dropout_p0_train": (lambda: nn.Dropout(0.0), lambda: (t(3, 4),), ("train",)),
    "Embedding": (lambda: nn.Embedding(10, 4), lambda: (ti(2, 3),), BOTH),
    "Embedding_padding_idx": (lambda: nn.Embedding(10, 4, padding_idx=0), lambda: (ti(2, 3),), EVAL),
    "EmbeddingBag": (lambda: nn.EmbeddingBag(10, 4, mode="mean"), lambda: (ti(2, 3),), EVAL),
    "ReLU": (lambda: nn.ReLU(), lambda: (t(3, 4),), EVAL),
    "ReLU6": (lambda: nn.ReLU6(), lambda: (t(3, 4) * 8,), EVAL),
    "GELU": (lambda: nn.GELU(), lambda: (t(3, 4),), EVAL),
    "GELU_tanh": (lambda: nn.GELU(approximate="tanh"), lambda: (t(3, 4),), EVAL),
    "SiLU": (lambda: nn.SiLU(), lambda: (t(3, 4),), EVAL),
    "Mish": (lambda: nn.Mish(), lambda: (t(3, 4),), EVAL),
    "Tanh": (lambda: nn.Tanh(), lambda: (t(3, 4),), EVAL),
    "Sigmoid": (lambda: nn.Sigmoid(), lambda: (t(3, 4),), EVAL),
    "Softmax": (lambda: nn.Softmax(dim=-1), lambda: (t(3, 4),), EVAL),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=1), lambda: (t(3, 4),), EVAL),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.2), lambda: (t(3, 4),), EVAL),
    "ELU": (lambda: nn.ELU(alpha=0.7), lambda: (t(3, 4),), EVAL),
    "Hardswish": (lambda: nn.Hardswish(), lambda: (t(3, 4),), EVAL),
    "Hardtanh": (lambda: nn.Hardtanh(-0.5, 0.5), lambda: (t(3, 4),), EVAL),
    "Softplus": (lambda: nn.Softplus(beta=2.0), lambda: (t(3, 4),), EVAL),
    "PReLU": (lambda: nn.PReLU(4), lambda: (t(3, 4),), EVAL),
    "ReLU_inplace": (lambda: nn.ReLU(inplace=True), lambda: (t(3, 4),), EVAL),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), lambda: (t(1, 2, 6, 6),), EVAL),
    "MaxPool2d_stride_pad_ceil": (lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
                                  lambda: (t(1, 2, 7, 7),), EVAL),
    "MaxPool1d": (lambda: nn.MaxPool1d(2), lambda: (t(2, 3, 8),), EVAL),
    "AvgPool2d": (lambda: nn.AvgPool2d(3, stride=2, padding=1), lambda: (t(1, 2, 6, 6),), EVAL),
    "AvgPool1d": (lambda: nn.AvgPool1d(2), lambda: (t(2, 3, 8),), EVAL),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((2, 3)), lambda: (t(1, 2, 7, 7),), EVAL),
    "AdaptiveAvgPool2d_1": (lambda: nn.AdaptiveAvgPool2d(1), lambda: (t(2, 3, 5, 5),), EVAL),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(2), lambda: (t(1, 2, 6, 6),), EVAL),
    "Flatten": (lambda: nn.Flatten(), lambda: (t(2, 3, 4),), EVAL),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 2)), lambda: (t(3, 4),), EVAL),
    "Upsample_nearest": (lambda: nn.Upsample(scale_factor=2), lambda: (t(1, 2, 3, 3),), EVAL),
    "Upsample_bilinear": (lambda: nn.Upsample(size=(5, 5), mode="bilinear", align_corners=False),
                          lambda: (t(1, 2, 3, 3),), EVAL),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), lambda: (t(1, 8, 3, 3),), EVAL),
    "ZeroPad2d": (lambda: nn.ZeroPad2d((1, 2, 0, 1)), lambda: (t(1, 2, 3, 3),), EVAL),
    "CosineSimilarity": (lambda: nn.CosineSimilarity(dim=1), lambda: (t(3, 4), t(3, 4)), EVAL),
    "MSELoss": (lambda: nn.MSELoss(), lambda: (t(3, 4), t(3, 4)), EVAL),
    "CrossEntropyLoss": (lambda: nn.CrossEntropyLoss(label_smoothing=0.1), lambda: (t(3, 5), ti(3, high=5)), EVAL),
    "Sequential_conv_bn_relu": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4),
                                                      nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                                      nn.Linear(4, 2)),
                                lambda: (t(2, 3, 6, 6),), BOTH),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
                                lambda: (t(2, 5, 8),), BOTH),
    "TransformerEncoderLayer_seq_first_gelu": (
        lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu"), lambda: (t(5, 2, 8),), EVAL),
    "TransformerEncoderLayer_norm_first": (
        lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True),
        lambda: (t(2, 5, 8),), EVAL),
    "GRUCell": (lambda: nn.GRUCell(4, 3), lambda: (t(2, 4),), EVAL),
    "LSTMCell": (lambda: nn.LSTMCell(4, 3), lambda: (t(2, 4),), EVAL),
}

PARAMS = [
    pytest.param(name, mode, id=f"{name}-{mode}")
    for name, (_, _, modes) in MODULES.items()
    for mode in modes
]


@pytest.mark.parametrize("name,mode", PARAMS)
def test_builtin_module(name, mode):
    make, args, _ = MODULES[name]
    m = _seeded(make)()
    getattr(m, mode)()
    assert_same(m, *args(), graphs=1)


def test_batchnorm_cumulative_average_train():
    # momentum=None in train mode computes 1 / float(num_batches_tracked): a
    # data-dependent scalar (torch.compile cannot capture it in one graph
    # either); without fullgraph the result and running stats match eager
    m = nn.BatchNorm2d(3, momentum=None).train()
    assert_same(m, t(2, 3, 4, 4), fullgraph=False)


def test_identity():
    # no ops (armature captures no graph); the result is the input itself
    assert_same(nn.Identity(), t(2, 3))


# --------------------------------------------------------------------------
# MultiheadAttention
# --------------------------------------------------------------------------


class MHA(nn.Module):
    def __init__(self, batch_first, need_weights, average=True, self_attention=False, mask=False):
        super().__init__()
        torch.manual_seed(0)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=batch_first)
        self.need_weights = need_weights
        self.average = average
        self.self_attention = self_attention
        self.mask = mask

    def forward(self, q, k, v):
        if self.self_attention:
            k = v = q
        mask = None
        if self.mask:
            L = q.shape[1] if self.attn.batch_first else q.shape[0]
            mask = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)
        return self.attn(q, k, v, need_weights=self.need_weights, average_attn_weights=self.average,
                         attn_mask=mask)


def _mha_args(batch_first):
    shape = (2, 5, 8) if batch_first else (5, 2, 8)
    return t(*shape), t(*shape), t(*shape)


def _mha_params():
    out = []
    for bf in (True, False):
        for nw in (True, False):
            for sa in (False, True):
                for mode in ("eval", "train"):
                    for no_grad in (False, True):
                        if not bf and (not sa or no_grad != (mode == "eval")):
                            continue  # sequence-first never takes the fast path: a smaller sample
                        # the fast path: batch_first, self-attention, eval, no grad (need_weights=False
                        # or averaged weights)
                        fast = bf and sa and mode == "eval" and no_grad
                        marks = ()
                        out.append(pytest.param(bf, nw, sa, mode, no_grad, marks=marks,
                                                id=f"bf{int(bf)}-nw{int(nw)}-sa{int(sa)}-{mode}-nograd{int(no_grad)}"))
    return out


@pytest.mark.parametrize("batch_first,need_weights,self_attention,mode,no_grad", _mha_params())
def test_multihead_attention(batch_first, need_weights, self_attention, mode, no_grad):
    m = getattr(MHA(batch_first, need_weights, self_attention=self_attention), mode)()
    if no_grad:
        with torch.no_grad():
            assert_same(m, *_mha_args(batch_first), graphs=1)
    else:
        assert_same(m, *_mha_args(batch_first), graphs=1)


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_unaveraged_weights_and_mask(batch_first):
    assert_same(MHA(batch_first, True, average=False, mask=True).eval(), *_mha_args(batch_first), graphs=1)


def test_multihead_attention_fastpath_module_without_fullgraph():
    m = MHA(True, False, self_attention=True).eval()
    with torch.no_grad():
        assert_same(m, *_mha_args(True), fullgraph=False)


def test_multihead_attention_fastpath_in_function_without_fullgraph():
    torch.manual_seed(0)
    attn = nn.MultiheadAttention(8, 2, batch_first=True).eval()

    def f(q):
        return attn(q, q, q, need_weights=False)[0]

    with torch.no_grad():
        assert_same(f, t(2, 5, 8), fullgraph=False)


def test_dispatch_stack_length_root_cause():
    def f(x):
        return x + torch._C._len_torch_dispatch_stack()

    assert_same(f, t(3))


# --------------------------------------------------------------------------
# TransformerEncoderLayer: eval, with and without no_grad (torch's fast path)
# --------------------------------------------------------------------------


class EncoderLayer(nn.Module):
    def __init__(self, norm_first, inner_no_grad):
        super().__init__()
        torch.manual_seed(0)
        self.layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first)
        self.inner_no_grad = inner_no_grad

    def forward(self, x):
        if self.inner_no_grad:
            with torch.no_grad():
                return self.layer(x)
        return self.layer(x)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("grad", ["grad", "outer_no_grad", "inner_no_grad"])
def test_transformer_encoder_layer_eval_fast_path(norm_first, grad):
    m = EncoderLayer(norm_first, inner_no_grad=grad == "inner_no_grad").eval()
    x = t(2, 5, 8)
    if grad == "outer_no_grad":
        with torch.no_grad():
            assert_same(m, x, graphs=1)
    else:
        assert_same(m, x, graphs=1)


def test_transformer_encoder_layer_fast_path_is_traced():
    """Under no_grad in eval, torch takes the fused fast path; armature must
    trace it (the fused op is in the graph) rather than the slow path."""
    m = EncoderLayer(False, False).eval()
    counter = CountingBackend()
    with torch.no_grad():
        compile_fn(m, backend=counter, fullgraph=True)(t(2, 5, 8))
    targets = counter.op_targets()
    assert any("_transformer_encoder_layer_fwd" in s for s in targets), targets


def test_transformer_encoder_layer_with_padding_mask():
    class WithMask(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)

        def forward(self, x, pad):
            return self.layer(x, src_key_padding_mask=pad)

    pad = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
    assert_same(WithMask().eval(), t(2, 5, 8), pad, graphs=1)


# --------------------------------------------------------------------------
# aot_eager: gradients through a few of them
# --------------------------------------------------------------------------


@pytest.mark.aot_eager
@pytest.mark.parametrize("name", ["Linear", "Conv2d", "BatchNorm2d", "Sequential_conv_bn_relu",
                                  "TransformerEncoderLayer"])
def test_builtin_module_grads_aot_eager(name):
    make, args, _ = MODULES[name]
    m = _seeded(make)().train()
    inputs = [a.requires_grad_(True) if a.is_floating_point() else a for a in args()]
    assert_same(m, *inputs, backend="aot_eager", check_grad=True, graphs=1, rtol=1e-4, atol=1e-5)
