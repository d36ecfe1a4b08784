"""Helpers for the dynamic-shapes tests: run a function compiled over a
sequence of inputs, compare every call with eager, count compiles."""
import torch

import armature


def same(a, b):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), (a, b)
        torch.testing.assert_close(b, a)
        assert a.shape == b.shape and a.dtype == b.dtype
        return
    if isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            same(x, y)
        return
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            same(a[k], b[k])
        return
    assert type(a) is type(b) and a == b, (a, b)


def run_over(fn, calls, backend="eager", **compile_kwargs):
    """Compile ``fn``, call it with each argument tuple in ``calls``, check
    each result against eager; returns the compiled function."""
    cf = armature.compile(fn, backend=backend, **compile_kwargs)
    for args in calls:
        same(fn(*args), cf(*args))
    return cf


def compiles(cf) -> int:
    """Cache entries that compiled a graph or ran a trace (not fallbacks)."""
    entries = armature.cache_entries(cf)
    assert not any(e.is_fallback for e in entries), [e.fallback_reason for e in entries]
    return len(entries)


def graph_code(cf, i=0) -> str:
    return armature.cache_entries(cf)[i].graph_module.code


def placeholders(cf, i=0):
    gm = armature.cache_entries(cf)[i].graph_module
    return [n for n in gm.graph.nodes if n.op == "placeholder"]


def guards(cf, i=0) -> list[str]:
    return [g.describe() for g in armature.cache_entries(cf)[i].guards]
