"""The public compile API: decorator forms, backends, disable, reset,
recompilation, and (armature only) cache_entries / guards / Unsupported.

Tests marked ``armature_only`` are skipped under ARMATURE_TEST_IMPL=torch.
"""

import pytest
import torch
import torch.nn as nn

from helpers import (
    CountingBackend,
    armature_only,
    assert_equal,
    compile_fn,
    reset,
    t,
)


def f(x, y):
    return torch.relu(x) @ y + 1


def flagged(x, flag):
    if flag:
        return x + 1
    return x - 1


def data_dependent(x):
    if x.sum() > 0:
        return x * 2
    return x * 3


# ------------------------------------------------------------- decorators


@pytest.mark.inductor  # the default backend is inductor
def test_decorator_bare():
    @compile_fn
    def g(x):
        return x.sin() + 1

    x = t(3)
    assert_equal(x.sin() + 1, g(x))


def test_decorator_with_args():
    counter = CountingBackend()

    @compile_fn(backend=counter, fullgraph=True)
    def g(x):
        return x.cos() * 2

    x = t(3)
    assert_equal(x.cos() * 2, g(x))
    assert counter.frame_count == 1


def test_compile_call_form():
    counter = CountingBackend()
    cf = compile_fn(f, backend=counter)
    x, y = t(2, 3), t(3, 4)
    assert_equal(f(x, y), cf(x, y))
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", pytest.param("aot_eager", marks=pytest.mark.aot_eager)])
def test_string_backends(backend):
    cf = compile_fn(f, backend=backend, fullgraph=True)
    x, y = t(2, 3), t(3, 4)
    assert_equal(f(x, y), cf(x, y))


def test_callable_backend_receives_graph_module_and_example_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, example_inputs))
        return gm.forward

    cf = compile_fn(f, backend=backend, fullgraph=True)
    x, y = t(2, 3), t(3, 4)
    assert_equal(f(x, y), cf(x, y))
    assert len(seen) == 1
    gm, ex = seen[0]
    assert isinstance(gm, torch.fx.GraphModule)
    assert all(isinstance(e, torch.Tensor) for e in ex)
    assert {tuple(e.shape) for e in ex} >= {(2, 3), (3, 4)}


def test_compile_module():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    counter = CountingBackend()
    cm = compile_fn(m, backend=counter, fullgraph=True)
    x = t(2, 3)
    assert_equal(m(x), cm(x))
    assert counter.frame_count == 1


def test_disable():
    counter = CountingBackend()
    cf = compile_fn(f, backend=counter, disable=True)
    x, y = t(2, 3), t(3, 4)
    assert_equal(f(x, y), cf(x, y))
    assert counter.frame_count == 0


def test_dynamic_false_accepted():
    counter = CountingBackend()
    cf = compile_fn(f, backend=counter, dynamic=False, fullgraph=True)
    x, y = t(2, 3), t(3, 4)
    assert_equal(f(x, y), cf(x, y))
    assert counter.frame_count == 1


# ------------------------------------------------------ caching / guards


def test_cache_hit_same_inputs():
    counter = CountingBackend()
    cf = compile_fn(f, backend=counter, fullgraph=True)
    for _ in range(3):
        x, y = t(2, 3), t(3, 4)
        assert_equal(f(x, y), cf(x, y))
    assert counter.frame_count == 1


def test_reset_clears_cache():
    counter = CountingBackend()
    cf = compile_fn(f, backend=counter, fullgraph=True)
    x, y = t(2, 3), t(3, 4)
    cf(x, y)
    reset()
    assert_equal(f(x, y), cf(x, y))
    assert counter.frame_count == 2


def test_recompile_on_dtype_change():
    counter = CountingBackend()
    cf = compile_fn(f, backend=counter, fullgraph=True)
    x, y = t(2, 3), t(3, 4)
    assert_equal(f(x, y), cf(x, y))
    xd, yd = x.double(), y.double()
    assert_equal(f(xd, yd), cf(xd, yd))
    assert counter.frame_count == 2


def test_recompile_on_shape_change():
    counter = CountingBackend()
    cf = compile_fn(f, backend=counter, fullgraph=True)
    x, y = t(2, 3), t(3, 4)
    assert_equal(f(x, y), cf(x, y))
    x2, y2 = t(5, 3), t(3, 2)
    assert_equal(f(x2, y2), cf(x2, y2))
    assert counter.frame_count == 2


def test_recompile_on_constant_arg_change():
    counter = CountingBackend()
    cf = compile_fn(flagged, backend=counter, fullgraph=True)
    x = t(3)
    assert_equal(flagged(x, True), cf(x, True))
    assert_equal(flagged(x, False), cf(x, False))
    assert_equal(flagged(x, True), cf(x, True))
    assert counter.frame_count == 2


def test_recompile_on_requires_grad_change():
    cf = compile_fn(lambda x: x * 2, backend="eager", fullgraph=True)
    x = t(3)
    assert not cf(x).requires_grad
    xr = t(3, requires_grad=True)
    out = cf(xr)
    assert out.requires_grad
    out.sum().backward()
    assert_equal(torch.full((3,), 2.0), xr.grad)


def test_fallback_without_fullgraph_is_correct():
    # a data-dependent branch cannot be traced; fullgraph=False must still
    # give eager results for both branches
    cf = compile_fn(data_dependent, backend="eager")
    pos, neg = torch.ones(3), -torch.ones(3)
    assert_equal(data_dependent(pos), cf(pos))
    assert_equal(data_dependent(neg), cf(neg))


# ------------------------------------------------------- armature only


@armature_only
def test_unsupported_under_fullgraph():
    import armature

    assert issubclass(armature.Unsupported, Exception)
    cf = armature.compile(data_dependent, backend="eager", fullgraph=True)
    with pytest.raises(armature.Unsupported):
        cf(torch.ones(3))


@armature_only
def test_cache_entries_and_guards():
    import armature

    cf = armature.compile(f, backend="eager", fullgraph=True)
    assert armature.cache_entries(cf) == [] or len(armature.cache_entries(cf)) == 0
    x, y = t(2, 3), t(3, 4)
    cf(x, y)
    entries = armature.cache_entries(cf)
    assert len(entries) == 1
    entry = entries[0]
    assert isinstance(entry.graph_module, torch.fx.GraphModule)
    assert len(entry.guards) > 0
    for g in entry.guards:
        s = str(g)
        assert isinstance(s, str) and s.strip()
    cf(t(2, 3), t(3, 4))
    assert len(armature.cache_entries(cf)) == 1
    cf(x.double(), y.double())
    assert len(armature.cache_entries(cf)) == 2


@armature_only
def test_cache_entries_cleared_by_reset():
    import armature

    cf = armature.compile(f, backend="eager", fullgraph=True)
    cf(t(2, 3), t(3, 4))
    assert len(armature.cache_entries(cf)) == 1
    armature.reset()
    assert len(armature.cache_entries(cf)) == 0


@armature_only
def test_guards_mention_inputs():
    import armature

    cf = armature.compile(f, backend="eager", fullgraph=True)
    cf(t(2, 3), t(3, 4))
    text = "\n".join(str(g) for g in armature.cache_entries(cf)[0].guards)
    assert "x" in text and "y" in text


@armature_only
def test_lookup_backend_exists():
    import armature.backends

    assert callable(armature.backends.lookup_backend("eager"))
    assert callable(armature.backends.lookup_backend("aot_eager"))
