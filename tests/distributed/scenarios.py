"""Scenarios of the multi-process tests: each runs on every rank and returns
a JSON-able result (differences from eager, graph counts of armature and,
where meaningful, of torch.compile on the same model).

Shared pieces: counting backends, the models, a training loop."""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import armature

SCENARIOS: dict = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


class Counter:
    """A backend that counts the graphs it compiles and runs them with
    ``inner`` (armature's eager or aot_eager; or torch's for the oracle)."""

    def __init__(self, inner="eager", torch_side=False):
        self.graphs = 0
        #: the collective ops in the graphs (``_c10d_functional.all_reduce.default``...)
        self.collectives: list[str] = []
        self.ops: list[int] = []
        if torch_side:
            self.inner = None if inner == "eager" else torch._dynamo.backends.registry.lookup_backend(inner)
        else:
            self.inner = None if inner == "eager" else armature.backends.lookup_backend(inner)

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        self.collectives.extend(str(n.target) for n in gm.graph.nodes
                                if n.op == "call_function" and "c10d_functional" in str(n.target))
        self.ops.append(sum(n.op == "call_function" or n.op == "call_method" or n.op == "call_module"
                            for n in gm.graph.nodes))
        return gm.forward if self.inner is None else self.inner(gm, example_inputs)


def reset():
    armature.reset()
    torch._dynamo.reset()


def max_diff(xs, ys) -> float:
    xs, ys = list(xs), list(ys)
    assert len(xs) == len(ys), (len(xs), len(ys))
    worst = 0.0
    for x, y in zip(xs, ys):
        if x is None or y is None:
            assert x is None and y is None, "a gradient is None on one side only"
            continue
        if x.numel() == 0:   # (a shard may be empty on a rank)
            assert y.numel() == 0
            continue
        worst = max(worst, (x.detach().float() - y.detach().float()).abs().max().item())
    return worst


def rank() -> int:
    return dist.get_rank()


def world() -> int:
    return dist.get_world_size()


def batch(step: int, shape, seed: int = 0):
    """Different data on every rank (so DDP's all-reduce matters)."""
    g = torch.Generator().manual_seed(1000 * seed + 10 * step + rank())
    return torch.randn(*shape, generator=g)


class MLP(nn.Module):
    """Three 512x512 layers: 1 MiB of weights each, so DDP's buckets (cap 1
    MiB) split the graph."""

    def __init__(self, width=512, depth=3, out=8):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.head = nn.Linear(width, out)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.head(x)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """A small GPT-2-like language model (token + position embeddings,
    pre-LayerNorm causal attention blocks, tied-free head)."""

    def __init__(self, vocab=96, d=128, heads=4, depth=2, ctx=16):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(depth))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def tokens(step: int, b=4, t=16, vocab=96):
    g = torch.Generator().manual_seed(7 + 10 * step + rank())
    return torch.randint(0, vocab, (b, t + 1), generator=g)


def lm_loss(model, step):
    seq = tokens(step)
    logits = model(seq[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), seq[:, 1:].reshape(-1))


def train(model, params_of, steps=3, loss_fn=None, shape=(4, 512), lr=0.05):
    """SGD steps; the losses and the parameters after them."""
    opt = torch.optim.SGD(params_of(), lr=lr)
    losses = []
    for step in range(steps):
        opt.zero_grad()
        loss = loss_fn(model, step) if loss_fn else model(batch(step, shape)).square().mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


import scenarios_ddp  # noqa: E402,F401  (they register themselves)
import scenarios_collectives  # noqa: E402,F401
import scenarios_fsdp  # noqa: E402,F401
import scenarios_per_block  # noqa: E402,F401
