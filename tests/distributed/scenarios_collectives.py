"""Collectives inside compiled functions: functional collectives and the
in-place c10d calls become graph nodes (fullgraph=True holds), async_op=True
is a graph break, rank queries are constants; results equal eager's."""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as fc

import armature
from scenarios import Counter, rank, reset, scenario


def _x():
    return torch.arange(8.0).reshape(2, 4) + 10 * rank()


def functional(x):
    y = fc.all_reduce(x * 2, "sum", dist.group.WORLD)
    g = fc.all_gather_tensor(y, 1, dist.group.WORLD)      # gather along dim 1
    s = fc.reduce_scatter_tensor(g, "sum", 1, dist.group.WORLD)
    b = fc.broadcast(s + 1, 0, dist.group.WORLD)
    return fc.wait_tensor(b) * 3


def inplace(x):
    y = x * 2
    dist.all_reduce(y)
    out = torch.empty(2 * dist.get_world_size(), 4)
    dist.all_gather_into_tensor(out, y)
    part = torch.empty(2, 4)
    dist.reduce_scatter_tensor(part, out, op=dist.ReduceOp.MAX)
    dist.broadcast(part, src=1)
    return part + 1, y


def async_op(x):
    y = x * 2
    work = dist.all_reduce(y, async_op=True)
    work.wait()
    return y + 1


def rank_branch(x):
    if dist.get_rank() == 0:
        x = x + 1
    else:
        x = x - 1
    return x * dist.get_world_size()


def uneven_breaks(x):
    """Rank 0 breaks the graph before the collective, rank 1 does not: the
    collectives still pair up (program order)."""
    y = x.sin()
    if dist.get_rank() == 0:
        armature.graph_break()
    dist.all_reduce(y)
    return y * 2


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b))
    return torch.equal(a, b)


def _compare(fn, fullgraph, torch_oracle=True, torch_fullgraph=None):
    reset()
    c = Counter()
    expected = fn(_x())
    compiled = armature.compile(fn, backend=c, fullgraph=fullgraph)
    got = compiled(_x())
    again = compiled(_x() + 1)   # a cached call
    out = {"same": _same(got, expected) and _same(again, fn(_x() + 1)), "graphs": c.graphs,
           "collectives": c.collectives}
    if torch_oracle:
        reset()
        tc = Counter("eager", torch_side=True)
        torch.compile(fn, backend=tc, fullgraph=fullgraph if torch_fullgraph is None else torch_fullgraph)(_x())
        out.update(torch_graphs=tc.graphs, torch_collectives=tc.collectives)
    return out


@scenario
def coll_functional():
    # (torch.compile before 2.13 cannot hold all_gather_tensor in one graph: it
    # refuses to trace torch._utils._maybe_view_chunk_cat, a function it marks
    # skipped; seen with torch 2.11, so the oracle is not asked there)
    from armature import torch_compat
    return _compare(functional, fullgraph=True, torch_oracle=not torch_compat.OLD_ORACLE)


@scenario
def coll_inplace():
    # (torch.compile breaks at dist.broadcast: BroadcastOptions, a pybind class)
    return _compare(inplace, fullgraph=True, torch_fullgraph=False)


@scenario
def coll_async_op():
    out = _compare(async_op, fullgraph=False)
    reset()
    try:
        armature.compile(async_op, backend="eager", fullgraph=True)(_x())
        out["fullgraph_error"] = None
    except armature.Unsupported as e:
        out["fullgraph_error"] = str(e).splitlines()[0]
    dist.barrier()   # (rank 0 ran no collective there; neither did rank 1)
    return out


@scenario
def coll_rank_branch():
    return _compare(rank_branch, fullgraph=True)


@scenario
def coll_uneven_breaks():
    return _compare(uneven_breaks, fullgraph=False, torch_oracle=False)
