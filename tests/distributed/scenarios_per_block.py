"""The per-block recipe under distributed training (driver/shared_code.py):
every block of a 4-block GPT compiled on its own, then FSDP2 (fully_shard
on each compiled block and on the root: torchtitan's recipe), FSDP1
(use_orig_params=True, each wrapped block compiled), or DDP over the model.
Trained next to the same model uncompiled: the same losses and parameters
on every rank; graphs counted against torch.compile doing the same (the
blocks share one compiled code in both)."""
from __future__ import annotations

import torch
from torch.nn.parallel import DistributedDataParallel as DDP

import armature
from scenarios import GPT, Block, Counter, lm_loss, max_diff, reset, scenario, train
from scenarios_fsdp import _full_params, mesh

DEPTH = 4
STEPS = 3


def _gpt(compile_block=None):
    torch.manual_seed(0)
    m = GPT(depth=DEPTH)
    if compile_block is not None:
        for i, b in enumerate(m.blocks):
            m.blocks[i] = compile_block(b)
    return m


def _fsdp2(compile_block=None):
    from torch.distributed.fsdp import fully_shard
    m = _gpt(compile_block)
    for b in m.blocks:
        fully_shard(b, mesh=mesh())
    fully_shard(m, mesh=mesh())
    return m


def _fsdp1(compile_block=None):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    m = FSDP(_gpt(), auto_wrap_policy=ModuleWrapPolicy({Block}), use_orig_params=True,
             device_id=torch.device("cpu"))
    if compile_block is not None:   # each FSDP-wrapped block compiled
        blocks = m._fsdp_wrapped_module.blocks
        for i, b in enumerate(blocks):
            blocks[i] = compile_block(b)
    return m


def _ddp(compile_block=None):
    return DDP(_gpt(compile_block), bucket_cap_mb=1)


def _compare(make, backend="eager", full_params=_full_params):
    """Train eager and per-block-compiled (armature, then torch.compile)
    copies of ``make``'s model; losses, parameters, graph counts."""
    reset()
    ref = make()
    eager = train(ref, ref.parameters, STEPS, lm_loss, lr=0.1)
    c = Counter(backend)
    model = make(lambda b: armature.compile(b, backend=c))
    losses = train(model, model.parameters, STEPS, lm_loss, lr=0.1)
    out = {"eager_losses": eager, "losses": losses, "graphs": c.graphs,
           "param_diff": max_diff(full_params(ref), full_params(model))}
    reset()
    tc = Counter(backend, torch_side=True)
    tmodel = make(lambda b: torch.compile(b, backend=tc))
    out["torch_losses"] = train(tmodel, tmodel.parameters, STEPS, lm_loss, lr=0.1)
    out["torch_graphs"] = tc.graphs
    return out


@scenario
def per_block_fsdp2():
    """torchtitan: compile each block, fully_shard each and the root."""
    return _compare(_fsdp2)


@scenario
def per_block_fsdp2_aot_eager():
    return _compare(_fsdp2, backend="aot_eager")


@scenario
def per_block_fsdp1():
    return _compare(_fsdp1, full_params=lambda m: list(m.parameters()))


@scenario
def per_block_ddp():
    return _compare(_ddp, full_params=lambda m: list(m.parameters()))


@scenario
def per_block_ddp_aot_eager():
    return _compare(_ddp, backend="aot_eager", full_params=lambda m: list(m.parameters()))
