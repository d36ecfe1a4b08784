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


def seeded_calls(*shapes):
    """One call per shape: a fresh random tensor of that shape (seeded by
    the shape, so eager and compiled runs get equal ones)."""
    return [lambda s=s: (torch.randn(*s, generator=torch.Generator().manual_seed(sum(s))),) for s in shapes]


def _graphs_over(compile_fn, fn, calls, mark, check_results=True):
    """``fn`` compiled with a counting backend and called with each call's
    arguments (``mark`` applied to the first), each result checked against
    eager on arguments made alike; the number of graphs."""
    from tests.helpers import CountingBackend
    counter = CountingBackend("eager")
    cf = compile_fn(fn, counter)
    for i, make in enumerate(calls):
        args = make()
        if i == 0 and mark is not None:
            mark(args)
        got = cf(*args)
        if check_results:
            same(fn(*make()), got)
    return counter.frame_count


def check_with_oracle(fn, calls, mark_dims=(), dynamic=None, graphs=None, breaks=None, oracle=True):
    """Run ``calls`` (functions making each call's arguments) eagerly and
    compiled, every result equal to eager's; armature's graphs no more than
    torch.compile's on the same calls with the same marks (``mark_dims``:
    (argument index, dim) marked dynamic on the first call), and exactly
    ``graphs`` if given; ``breaks``: armature's graph breaks on the first
    call (armature.explain); ``oracle=False``: torch.compile not run (for
    code it does not compile)."""
    import torch._dynamo

    def marker(mark_fn):
        def mark(args):
            for i, d in mark_dims:
                mark_fn(args[i], d)
        return mark if mark_dims else None
    armature.reset()
    ours = _graphs_over(lambda f, b: armature.compile(f, backend=b, dynamic=dynamic), fn, calls,
                        marker(armature.mark_dynamic))
    if oracle:
        torch._dynamo.reset()
        try:
            theirs = _graphs_over(lambda f, b: torch.compile(f, backend=b, dynamic=dynamic), fn, calls,
                                  marker(torch._dynamo.mark_dynamic), check_results=False)
        except Exception as e:   # noqa: BLE001 - torch.compile's own failure: nothing to compare with
            theirs = f"raised {type(e).__name__}"
        finally:
            torch._dynamo.reset()
        # (0: torch.compile ran the whole frame as Python -- torch 2.11 does where its trace fails
        # (comparing a tuple with a list, formatting a size with !a) -- nothing to compare with)
        if type(theirs) is int and theirs > 0:
            assert ours <= theirs, f"armature compiled {ours} graphs, torch.compile {theirs}"
    if graphs is not None:
        assert ours == graphs, f"armature compiled {ours} graphs, expected {graphs}"
    if breaks is not None:
        armature.reset()
        args = calls[0]()
        if mark_dims:
            marker(armature.mark_dynamic)(args)
        e = armature.explain(fn)(*args)
        assert e.graph_break_count == breaks, str(e)
    return ours
