"""FSDP scenarios: a small GPT sharded over the ranks (FSDP2's fully_shard
on each block and the root, or FSDP1 with use_orig_params=True), compiled,
trained next to an eager copy: the same losses on every rank; the graphs
counted against torch.compile's."""
from __future__ import annotations

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import armature
from scenarios import GPT, Block, Counter, lm_loss, max_diff, reset, scenario, train, world

_MESH = None


def mesh():
    global _MESH
    if _MESH is None:
        _MESH = init_device_mesh("cpu", (world(),))
    return _MESH


def _fsdp2(compile_block=None):
    torch.manual_seed(0)
    m = GPT()
    if compile_block is not None:
        for i, b in enumerate(m.blocks):
            m.blocks[i] = compile_block(b)
    for b in m.blocks:
        fully_shard(b, mesh=mesh())
    fully_shard(m, mesh=mesh())
    return m


def _full_params(m):
    return [p.full_tensor() if hasattr(p, "full_tensor") else p for p in m.parameters()]


def _run(make_ref, make_compiled, steps=3):
    ref = make_ref()
    eager = train(ref, ref.parameters, steps, lm_loss, lr=0.1)
    model, c = make_compiled()
    losses = train(model, model.parameters, steps, lm_loss, lr=0.1)
    return {"eager_losses": eager, "losses": losses, "graphs": c.graphs, "ops": c.ops,
            "param_diff": max_diff(_full_params(ref), _full_params(model))}


@scenario
def fsdp2_whole():
    reset()

    def compiled():
        c = Counter("aot_eager")
        return armature.compile(_fsdp2(), backend=c), c

    out = _run(_fsdp2, compiled)
    reset()
    tc = Counter("eager", torch_side=True)
    tm = torch.compile(_fsdp2(), backend=tc)
    train(tm, tm.parameters, 1, lm_loss)
    return {**out, "torch_graphs": tc.graphs}


@scenario
def fsdp2_per_block():
    """torchtitan's recipe: compile each block, then fully_shard."""
    reset()

    def compiled():
        c = Counter()
        return _fsdp2(lambda b: armature.compile(b, backend=c)), c

    out = _run(_fsdp2, compiled)
    reset()
    tc = Counter("eager", torch_side=True)
    tm = _fsdp2(lambda b: torch.compile(b, backend=tc))
    train(tm, tm.parameters, 1, lm_loss)
    return {**out, "torch_graphs": tc.graphs}


@scenario
def fsdp2_per_block_and_root():
    """Blocks compiled then sharded, and the sharded root compiled too."""
    reset()

    def compiled():
        c = Counter()
        return armature.compile(_fsdp2(lambda b: armature.compile(b, backend=c)), backend=c), c

    return _run(_fsdp2, compiled)


def _fsdp1():
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    torch.manual_seed(0)
    return FSDP(GPT(), auto_wrap_policy=ModuleWrapPolicy({Block}), use_orig_params=True,
                device_id=torch.device("cpu"))


@scenario
def fsdp1():
    reset()

    def compiled():
        c = Counter()
        return armature.compile(_fsdp1(), backend=c), c

    ref = _fsdp1()
    eager = train(ref, ref.parameters, 3, lm_loss, lr=0.1)
    model, c = compiled()
    losses = train(model, model.parameters, 3, lm_loss, lr=0.1)
    reset()
    tc = Counter("eager", torch_side=True)
    tm = torch.compile(_fsdp1(), backend=tc)
    train(tm, tm.parameters, 1, lm_loss)
    return {"eager_losses": eager, "losses": losses, "graphs": c.graphs, "torch_graphs": tc.graphs,
            "param_diff": max_diff(ref.parameters(), model.parameters())}


def _runner_guards() -> int:
    """Guards of the entries compiled for FSDP-managed forwards."""
    from armature.api import CompiledFunction
    from armature.runtime import distributed
    n = 0
    for runner in distributed._RUNNERS.values():
        for cf in list(runner._inner.values()):
            if isinstance(cf, CompiledFunction):
                n += sum(len(e.guards) for e in armature.cache_entries(cf))
    return n


@scenario
def fsdp2_skip_guards():
    """config.skip_fsdp_guards: fewer guards, same losses."""
    out = {}
    for skip in (False, True):
        reset()
        with armature.config.patch(skip_fsdp_guards=skip):
            c = Counter()
            model = armature.compile(_fsdp2(), backend=c)
            out[f"losses_{skip}"] = train(model, model.parameters, 3, lm_loss, lr=0.1)
            out[f"guards_{skip}"] = _runner_guards()
            out[f"graphs_{skip}"] = c.graphs
    return out
