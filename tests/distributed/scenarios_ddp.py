"""DDP scenarios: a compiled DDP model trained next to an eager one built
from the same weights; the parameters (and losses) after a few SGD steps
must match on every rank, and the graphs are counted."""
from __future__ import annotations

import copy

import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import armature
from scenarios import GPT, MLP, Counter, batch, lm_loss, max_diff, reset, scenario, train

CAP = dict(bucket_cap_mb=1)


def _pair(make, **ddp_kw):
    torch.manual_seed(0)
    m = make()
    ref = copy.deepcopy(m)
    return DDP(ref, **ddp_kw), m


def _compare(spelling: str, make=MLP, backend="eager", steps=3, loss_fn=None, shape=(4, 512), **ddp_kw):
    """Train eager DDP and compiled DDP (one of the three spellings)."""
    reset()
    ref, m = _pair(make, **{**CAP, **ddp_kw})
    c = Counter(backend)
    if spelling == "outer":
        ddp = DDP(m, **{**CAP, **ddp_kw})
        model = armature.compile(ddp, backend=c)
    elif spelling == "inner":
        ddp = model = DDP(armature.compile(m, backend=c), **{**CAP, **ddp_kw})
    else:
        ddp = DDP(m, **{**CAP, **ddp_kw})
        model = armature.compile(lambda x: ddp(x), backend=c)
    eager_losses = train(ref, ref.parameters, steps, loss_fn, shape)
    losses = train(model, ddp.parameters, steps, loss_fn, shape)
    return {"param_diff": max_diff(ref.parameters(), ddp.parameters()),
            "loss_diff": max(abs(a - b) for a, b in zip(eager_losses, losses)),
            "graphs": c.graphs, "ops": c.ops}


def _torch_graphs(spelling: str, make=MLP, loss_fn=None, shape=(4, 512), **ddp_kw):
    """torch.compile on the same model (the oracle of graph counts)."""
    reset()
    torch.manual_seed(0)
    c = Counter("eager", torch_side=True)
    if spelling == "outer":
        model = torch.compile(DDP(make(), **{**CAP, **ddp_kw}), backend=c)
    else:
        model = DDP(torch.compile(make(), backend=c), **{**CAP, **ddp_kw})
    train(model, model.parameters, 1, loss_fn, shape)
    return c.graphs


@scenario
def ddp_outer():
    return {**_compare("outer"), "torch_graphs": _torch_graphs("outer")}


@scenario
def ddp_inner():
    return {**_compare("inner"), "torch_graphs": _torch_graphs("inner")}


@scenario
def ddp_lambda():
    return _compare("lambda")


@scenario
def ddp_aot_eager():
    return _compare("outer", backend="aot_eager")


@scenario
def ddp_no_split():
    with armature.config.patch(optimize_ddp=False):
        return _compare("outer")


def _sequential():
    return nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 8))


@scenario
def ddp_sequential():
    return {**_compare("outer", make=_sequential), "torch_graphs": _torch_graphs("outer", make=_sequential)}


@scenario
def ddp_no_sync():
    """Gradient accumulation: two micro-batches under no_sync, one synced."""
    reset()
    ref, m = _pair(MLP, **CAP)
    c = Counter()
    ddp = DDP(m, **CAP)
    model = armature.compile(ddp, backend=c)
    for mod, d in ((ref, ref), (model, ddp)):
        opt = torch.optim.SGD(d.parameters(), lr=0.05)
        for step in range(2):
            opt.zero_grad()
            with d.no_sync():
                mod(batch(step, (4, 512), seed=1)).square().mean().backward()
            grads_local = [p.grad.clone() for p in d.parameters()]
            mod(batch(step, (4, 512), seed=2)).square().mean().backward()
            opt.step()
        d.grads_local = grads_local
    return {"param_diff": max_diff(ref.parameters(), ddp.parameters()),
            "local_grad_diff": max_diff(ref.grads_local, ddp.grads_local), "graphs": c.graphs}


class _Unused(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b, self.unused = nn.Linear(512, 512), nn.Linear(512, 8), nn.Linear(512, 8)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


@scenario
def ddp_find_unused():
    return _compare("outer", make=_Unused, find_unused_parameters=True)


@scenario
def ddp_static_graph():
    return _compare("outer", static_graph=True, steps=4)


class _WithBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.bn, self.b = nn.Linear(512, 512), nn.BatchNorm1d(512), nn.Linear(512, 8)

    def forward(self, x):
        return self.b(self.bn(self.a(x)))


@scenario
def ddp_buffers():
    """BatchNorm's running stats differ per rank; DDP broadcasts rank 0's
    before every forward (broadcast_buffers=True)."""
    reset()
    ref, m = _pair(_WithBN, **CAP)
    c = Counter()
    ddp = DDP(m, **CAP)
    model = armature.compile(ddp, backend=c)
    for mod, d in ((ref, ref), (model, ddp)):
        opt = torch.optim.SGD(d.parameters(), lr=0.05)
        for step in range(3):
            opt.zero_grad()
            mod(batch(step, (4, 512)) * (1 + d.module.a.weight.new_tensor(float(step)))).square().mean().backward()
            opt.step()
    return {"param_diff": max_diff(ref.parameters(), ddp.parameters()),
            "buffer_diff": max_diff(ref.buffers(), ddp.buffers()), "graphs": c.graphs}


@scenario
def gpt_ddp():
    reset()
    ref, m = _pair(GPT, bucket_cap_mb=1)
    c = Counter("aot_eager")
    ddp = DDP(m, bucket_cap_mb=1)
    model = armature.compile(ddp, backend=c)
    eager = train(ref, ref.parameters, 3, lm_loss, lr=0.1)
    comp = train(model, ddp.parameters, 3, lm_loss, lr=0.1)
    reset()
    torch.manual_seed(0)
    tc = Counter("eager", torch_side=True)
    tmodel = torch.compile(DDP(GPT(), bucket_cap_mb=1), backend=tc)
    train(tmodel, tmodel.parameters, 1, lm_loss)
    return {"eager_losses": eager, "losses": comp, "param_diff": max_diff(ref.parameters(), ddp.parameters()),
            "graphs": c.graphs, "torch_graphs": tc.graphs}
