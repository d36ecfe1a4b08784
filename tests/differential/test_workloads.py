"""The milestone's "done when" workloads, fullgraph=True, on eager,
aot_eager and inductor:

* a small MLP (nn.Module),
* a transformer block in plain torch (attention with softmax, layer norm,
  residuals, MLP) -- as a function taking weight tensors and as an nn.Module,
* a function with closures returning a dict of tensors and constants.
"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers import assert_same, t

torch.manual_seed(0)

D, HEADS, T_LEN, BATCH = 16, 2, 5, 2

# ------------------------------------------------------------------ MLP


class MLP(nn.Module):
    def __init__(self, d_in=D, d_hidden=32, d_out=4):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


# ------------------------------------------------------ transformer block


def transformer_block(x, ln1_w, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_w, ln2_b, w_1, b_1, w_2, b_2, n_heads=HEADS):
    B, T, C = x.shape
    hd = C // n_heads
    h = F.layer_norm(x, (C,), ln1_w, ln1_b)
    qkv = h @ w_qkv.T + b_qkv
    q, k, v = qkv.split(C, dim=-1)
    q = q.view(B, T, n_heads, hd).transpose(1, 2)
    k = k.view(B, T, n_heads, hd).transpose(1, 2)
    v = v.view(B, T, n_heads, hd).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) / hd ** 0.5
    mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
    att = att.masked_fill(~mask, -1e9)
    att = torch.softmax(att, dim=-1)
    y = (att @ v).transpose(1, 2).reshape(B, T, C)
    x = x + (y @ w_o.T + b_o)
    h = F.layer_norm(x, (C,), ln2_w, ln2_b)
    x = x + F.gelu(h @ w_1.T + b_1) @ w_2.T + b_2
    return x


def block_weights(requires_grad=False):
    def w(*shape, scale=0.2):
        return (t(*shape) * scale).requires_grad_(requires_grad)

    ones = torch.ones(D).requires_grad_(requires_grad)
    zeros = torch.zeros(D).requires_grad_(requires_grad)
    return (
        ones, zeros,
        w(3 * D, D), w(3 * D),
        w(D, D), w(D),
        ones.detach().clone().requires_grad_(requires_grad), zeros.detach().clone().requires_grad_(requires_grad),
        w(4 * D, D), w(4 * D),
        w(D, 4 * D), w(D),
    )


class TransformerBlock(nn.Module):
    def __init__(self, d=D, n_heads=HEADS):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.size()
        hd = C // self.n_heads
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=-1)
        q = q.view(B, T, self.n_heads, hd).transpose(1, 2)
        k = k.view(B, T, self.n_heads, hd).transpose(1, 2)
        v = v.view(B, T, self.n_heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / hd ** 0.5)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~causal, -1e9).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        x = x + self.mlp(self.ln2(x))
        return x


# ------------------------------------------------- closures returning dict


def closure_workload(x, w):
    scale = 0.5
    n = x.shape[-1]

    def proj(h):
        return (h @ w) * scale

    def norm(h, eps=1e-5):
        mu = h.mean(-1, keepdim=True)
        return (h - mu) / (h.std(-1, keepdim=True) + eps)

    def block(h, k=2):
        for _ in range(k):
            h = norm(proj(h)) + h
        return h

    out = block(x)
    return {
        "out": out,
        "mean": out.mean(),
        "parts": [out[:, 0], out.sum(-1)],
        "dim": n,
        "scale": scale,
        "name": "closure",
        "shape": out.shape,
    }


# ------------------------------------------------------------------ tests

X_MLP = t(3, D)
X_SEQ = t(BATCH, T_LEN, D)
W_CLOSURE = t(8, 8) * 0.3
X_CLOSURE = t(4, 8)

BACKENDS = [
    "eager",
    pytest.param("aot_eager", marks=pytest.mark.aot_eager),
    pytest.param("inductor", marks=pytest.mark.inductor),
]


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp(backend):
    assert_same(MLP(), X_MLP, backend=backend, fullgraph=True, graphs=1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_transformer_block_function(backend):
    assert_same(transformer_block, X_SEQ, *block_weights(), backend=backend, fullgraph=True, graphs=1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_transformer_block_module(backend):
    assert_same(TransformerBlock(), X_SEQ, backend=backend, fullgraph=True, graphs=1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_closure_dict(backend):
    assert_same(closure_workload, X_CLOSURE, W_CLOSURE, backend=backend, fullgraph=True, graphs=1)


GRAD_BACKENDS = ["eager", pytest.param("aot_eager", marks=pytest.mark.aot_eager)]


@pytest.mark.parametrize("backend", GRAD_BACKENDS)
def test_mlp_grads(backend):
    assert_same(MLP(), X_MLP.clone().requires_grad_(), backend=backend, graphs=1, check_grad=True)


@pytest.mark.parametrize("backend", GRAD_BACKENDS)
def test_transformer_block_function_grads(backend):
    assert_same(
        transformer_block, X_SEQ.clone().requires_grad_(), *block_weights(requires_grad=True),
        backend=backend, graphs=1, check_grad=True,
    )


@pytest.mark.parametrize("backend", GRAD_BACKENDS)
def test_transformer_block_module_grads(backend):
    assert_same(TransformerBlock(), X_SEQ, backend=backend, graphs=1, check_grad=True)


@pytest.mark.parametrize("backend", GRAD_BACKENDS)
def test_closure_dict_grads(backend):
    assert_same(closure_workload, X_CLOSURE, W_CLOSURE.clone().requires_grad_(), backend=backend, graphs=1,
                check_grad=True)
