"""Scenarios of test_distributed_models.py, run by every rank of the
tests/distributed harness (launch.py imports this module in the ranks):
the zoo's HF GPT-2 trained for a few steps under DDP and under FSDP2,
compiled by armature next to eager, and compiled by torch.compile for the
graph and graph-break counts."""
from __future__ import annotations

import copy

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.nn.parallel import DistributedDataParallel as DDP

import armature
from armature.driver.explain import recording
from scenarios import Counter, max_diff, rank, reset, scenario, world

import libsets  # noqa: E402

# (the ranks do not run conftest.py: torchvision, which transformers imports,
# is imported the way the model suite does, for the old library set's
# torchvision whose compiled ops do not load next to the CPU torch)
libsets.import_torchvision()
import zoo  # noqa: E402

STEPS = 3


def _gpt2():
    """The zoo's tiny GPT-2 (dropout 0), in training mode."""
    model = zoo.hf_gpt2().model
    model.train()
    return model


def _loss(model, step):
    """transformers' own language-model loss (labels=ids: it shifts them);
    different tokens on every rank, so the gradient reduction matters."""
    g = torch.Generator().manual_seed(7 + 10 * step + rank())
    ids = torch.randint(0, zoo.VOCAB, (zoo.BATCH, zoo.SEQ), generator=g)
    return model(ids, labels=ids, use_cache=False).loss


def _train(model, params, opt_cls, lr):
    opt = opt_cls(params, lr=lr)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        loss = _loss(model, step)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _armature(build, opt_cls, lr):
    """Train armature.compile(build()) recording its cache entries: the
    losses, the model, graphs and (user-visible) graph breaks."""
    reset()
    c = Counter("aot_eager")
    wrapped = build()
    model = armature.compile(wrapped, backend=c)
    with recording() as entries:
        losses = _train(model, wrapped.parameters(), opt_cls, lr)
    breaks = [e.graph_break for e in entries if e.graph_break is not None and not e.graph_break.internal]
    reasons = sorted({f"{b.reason.splitlines()[0]} @ {b.location.filename.rsplit('/', 1)[-1]}:{b.location.lineno}"
                      if b.location else b.reason.splitlines()[0] for b in breaks})
    fallbacks = [str(e.fallback_reason) for e in entries if e.fallback_reason]
    sites = {(b.location.filename, b.location.lineno) if b.location else b.reason for b in breaks}
    return losses, wrapped, {"graphs": c.graphs, "breaks": len(breaks), "break_sites": len(sites),
                             "break_reasons": reasons, "fallbacks": fallbacks}


def _torch(build, opt_cls, lr):
    """The same training under torch.compile (the oracle of the counts)."""
    from torch._dynamo.utils import counters
    reset()
    counters.clear()
    c = Counter("eager", torch_side=True)
    wrapped = build()
    model = torch.compile(wrapped, backend=c)
    _train(model, wrapped.parameters(), opt_cls, lr)
    out = {"torch_graphs": c.graphs, "torch_breaks": sum(counters["graph_break"].values()),
           "torch_break_reasons": sorted(k.splitlines()[0] for k in counters["graph_break"])}
    reset()
    return out


@scenario
def gpt2_ddp():
    torch.manual_seed(0)
    base = _gpt2()

    def build():
        return DDP(copy.deepcopy(base), bucket_cap_mb=1)

    reset()
    ref = build()
    eager = _train(ref, ref.parameters(), torch.optim.SGD, 0.1)
    losses, ddp, counts = _armature(build, torch.optim.SGD, 0.1)
    return {"eager_losses": eager, "losses": losses, "param_diff": max_diff(ref.parameters(), ddp.parameters()),
            **counts, **_torch(build, torch.optim.SGD, 0.1)}


def _fsdp2():
    from torch.distributed.fsdp import fully_shard
    mesh = init_device_mesh("cpu", (world(),))
    torch.manual_seed(0)
    model = _gpt2()
    for block in model.transformer.h:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def _full(model):
    return [p.full_tensor() for p in model.parameters()]


@scenario
def gpt2_fsdp2():
    reset()
    ref = _fsdp2()
    eager = _train(ref, ref.parameters(), torch.optim.AdamW, 1e-2)
    losses, model, counts = _armature(_fsdp2, torch.optim.AdamW, 1e-2)
    return {"eager_losses": eager, "losses": losses, "param_diff": max_diff(_full(ref), _full(model)),
            **counts, **_torch(_fsdp2, torch.optim.AdamW, 1e-2)}
