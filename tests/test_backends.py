"""Tests for armature.backends: the registry and the eager / aot_eager / inductor backends.

Each backend is called the way armature's runtime calls it: inside
``torch._guards.tracing(TracingContext(fake_mode))`` with a FakeTensorMode that
has a ShapeEnv, given a GraphModule whose forward returns a tuple, and real
example tensors.  The compiled result is then called with real tensors.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import torch._guards
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

import armature
import armature.backends
from armature.backends import (
    VALID_MODES,
    BackendError,
    list_backends,
    lookup_backend,
    register_backend,
)


def fn(x, y):
    return (torch.relu(x) @ y + 1, x.sin())


def compile_with(backend, f, example_inputs, **lookup_kwargs):
    """Trace ``f`` to FX and compile it as the runtime does."""
    gm = torch.fx.symbolic_trace(f)
    compiler = lookup_backend(backend, **lookup_kwargs)
    fake_mode = FakeTensorMode(shape_env=ShapeEnv())
    with torch._guards.tracing(torch._guards.TracingContext(fake_mode)):
        return compiler(gm, list(example_inputs))


def inputs(requires_grad=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randn(4, 5, generator=g, requires_grad=requires_grad),
        torch.randn(5, 3, generator=g, requires_grad=requires_grad),
    ]


def assert_outputs_match(got, expected):
    assert isinstance(got, (tuple, list))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)


# --- registry ---------------------------------------------------------------


def test_builtin_backends_listed_sorted():
    names = list_backends()
    assert names == sorted(names)
    assert {"eager", "aot_eager", "inductor"} <= set(names)


def test_unknown_backend_lists_valid_names():
    with pytest.raises(BackendError) as info:
        lookup_backend("no_such_backend")
    assert isinstance(info.value, ValueError)
    for name in ("eager", "aot_eager", "inductor"):
        assert name in str(info.value)


@pytest.mark.parametrize("bad", [42, None, 3.5, ["eager"]])
def test_non_callable_backend_is_type_error(bad):
    with pytest.raises(TypeError, match="registered name .* or a callable"):
        lookup_backend(bad)


@pytest.mark.parametrize("mode", ["fast", "", "Default"])
def test_bad_mode_lists_valid_modes(mode):
    with pytest.raises(ValueError) as info:
        lookup_backend("inductor", mode=mode)
    for valid in VALID_MODES:
        if valid is not None:
            assert valid in str(info.value)


@pytest.mark.parametrize("mode", VALID_MODES)
def test_valid_modes_accepted(mode):
    assert callable(lookup_backend("inductor", mode=mode))
    assert callable(lookup_backend("eager", mode=mode))  # ignored by eager


def test_mode_and_options_together_rejected():
    with pytest.raises(ValueError, match="Either mode or options"):
        lookup_backend("inductor", mode="default", options={})


def test_options_must_be_dict():
    with pytest.raises(TypeError, match="options must be a dict"):
        lookup_backend("inductor", options=[("max_autotune", True)])


def test_options_refused_by_backends_without_options():
    with pytest.raises(ValueError, match="takes no options"):
        lookup_backend("eager", options={"x": 1})
    assert callable(lookup_backend("eager", options={}))


def test_inductor_options_checked_at_lookup():
    with pytest.raises(ValueError, match="unknown inductor option"):
        lookup_backend("inductor", options={"no_such_option": True})
    with pytest.raises(ValueError, match="expects bool"):
        lookup_backend("inductor", options={"max_autotune": "yes"})
    assert callable(lookup_backend("inductor", options={"max-autotune": False}))


def test_lookup_is_idempotent_and_comparable():
    a = lookup_backend("eager")
    assert lookup_backend(a) is a
    assert lookup_backend("eager") == a
    assert lookup_backend("aot_eager") != a
    assert hash(lookup_backend("eager")) == hash(a)
    rebound = lookup_backend(lookup_backend("inductor"), mode="max-autotune")
    assert rebound == lookup_backend("inductor", mode="max-autotune")
    assert rebound != lookup_backend("inductor")
    with pytest.raises(ValueError, match="unknown inductor option"):
        lookup_backend(lookup_backend("inductor"), options={"no_such_option": 1})


@pytest.fixture
def scratch_registry():
    """Let a test register backends without leaking them into later tests."""
    saved = dict(armature.backends._REGISTRY)
    yield
    armature.backends._REGISTRY.clear()
    armature.backends._REGISTRY.update(saved)


def test_importing_armature_does_not_import_compilers():
    # inductor and AOTAutograd take seconds to import; only compiling may pull them in.
    code = (
        "import sys, armature, armature.backends\n"
        "heavy = [m for m in ('torch._inductor.compile_fx', 'torch._functorch.aot_autograd')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_callable_backend_and_register_backend(scratch_registry):
    seen = []

    def my_backend(gm, example_inputs):
        seen.append(len(example_inputs))
        return gm.forward

    compiled = compile_with(my_backend, fn, inputs())
    assert seen == [2]
    assert_outputs_match(compiled(*inputs(seed=1)), fn(*inputs(seed=1)))

    register_backend("test_custom_backend")(my_backend)
    assert "test_custom_backend" in list_backends()
    compiled = compile_with("test_custom_backend", fn, inputs())
    assert_outputs_match(compiled(*inputs()), fn(*inputs()))
    with pytest.raises(ValueError, match="already registered"):
        register_backend("test_custom_backend")(lambda gm, ex: gm.forward)


def test_callable_backend_taking_options_receives_them():
    got = {}

    def configurable(gm, example_inputs, *, mode=None, options=None):
        got.update(mode=mode, options=options)
        return gm.forward

    compile_with(configurable, fn, inputs(), options={"k": 1})
    assert got == {"mode": None, "options": {"k": 1}}
    compile_with(configurable, fn, inputs(), mode="max-autotune")
    assert got == {"mode": "max-autotune", "options": None}


def test_backend_returning_non_callable_is_type_error():
    with pytest.raises(TypeError, match="expected a callable"):
        compile_with(lambda gm, ex: 3, fn, inputs())


# --- backends ---------------------------------------------------------------


@pytest.mark.parametrize(
    "backend", ["eager", pytest.param("aot_eager", marks=pytest.mark.aot_eager)]
)
def test_backend_matches_eager(backend):
    compiled = compile_with(backend, fn, inputs())
    for seed in (0, 1, 2):  # the example inputs, then fresh ones
        args = inputs(seed=seed)
        assert_outputs_match(compiled(*args), fn(*args))


@pytest.mark.aot_eager
def test_aot_eager_backward_matches_eager():
    compiled = compile_with("aot_eager", fn, inputs(requires_grad=True))

    args = inputs(requires_grad=True, seed=3)
    outs = compiled(*args)
    sum(o.sum() for o in outs).backward()

    ref_args = inputs(requires_grad=True, seed=3)
    ref_outs = fn(*ref_args)
    sum(o.sum() for o in ref_outs).backward()

    assert_outputs_match([o.detach() for o in outs], [o.detach() for o in ref_outs])
    for a, r in zip(args, ref_args):
        torch.testing.assert_close(a.grad, r.grad)


@pytest.mark.inductor
def test_inductor_matches_eager():
    # The one inductor compile in this file: a CPU compile takes 5-30 s.
    compiled = compile_with("inductor", fn, inputs())
    for seed in (0, 1):
        args = inputs(seed=seed)
        assert_outputs_match(compiled(*args), fn(*args))


def test_prepare_runs_when_a_compile_starts_before_tracing(scratch_registry):
    """A backend's ``prepare`` runs at a cache miss, before the frame is traced
    (inductor starts its compile workers there); a failing prepare costs
    nothing but the optimisation."""
    events = []

    def prepare():
        events.append("prepare")

    def traced_backend(gm, example_inputs):
        events.append("backend")
        return gm.forward

    register_backend("test_prepared_backend", prepare=prepare)(traced_backend)

    def f(x):
        events.append("traced")   # (a side effect the trace records while it runs)
        return x.sin() + 1

    x = torch.randn(4)
    compiled = armature.compile(f, backend="test_prepared_backend")
    out = compiled(x)
    assert events == ["prepare", "backend", "traced"]   # (the append is replayed when the graph has run)
    torch.testing.assert_close(out, x.sin() + 1)
    n = events.count("prepare")
    compiled(x)   # a cache hit prepares nothing
    assert events.count("prepare") == n

    def failing_prepare():
        raise RuntimeError("no workers today")

    register_backend("test_failing_prepare", prepare=failing_prepare)(traced_backend)
    compiled = armature.compile(lambda x: x.cos() * 2, backend="test_failing_prepare")
    torch.testing.assert_close(compiled(x), x.cos() * 2)


def test_prepare_follows_the_backend_through_lookup(scratch_registry):
    calls = []
    register_backend("test_prepare_lookup", prepare=lambda: calls.append(1))(lambda gm, ex: gm.forward)
    b = lookup_backend("test_prepare_lookup")
    b.prepare()
    lookup_backend(b, mode="default").prepare()   # rebound to new settings
    lookup_backend(armature.backends._REGISTRY["test_prepare_lookup"].fn).prepare()   # the function itself
    assert calls == [1, 1, 1]
    lookup_backend(lambda gm, ex: gm.forward).prepare()   # a user's callable: nothing to prepare


def test_inductor_starts_its_compile_workers_once(monkeypatch):
    """With Triton installed and a GPU, inductor's worker pool is started when
    a compile begins (torch.compile starts it when its backend is called);
    without Triton there is no pool to start."""
    import importlib.util

    import torch._inductor.async_compile as async_compile

    from armature.backends import inductor as inductor_backend

    started = []
    monkeypatch.setattr(async_compile, "maybe_warm_pool", lambda: started.append(1))
    monkeypatch.setattr(inductor_backend, "_workers_started", False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "triton" else real_find_spec(name, *a))
    lookup_backend("inductor").prepare()
    assert started == []   # no Triton: no pool
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "triton" else real_find_spec(name, *a))
    monkeypatch.setenv("TORCH_WARM_POOL", "0")
    lookup_backend("inductor").prepare()
    assert started == []   # torch's switch is honoured
    monkeypatch.setenv("TORCH_WARM_POOL", "1")
    lookup_backend("inductor").prepare()
    lookup_backend("inductor", mode="max-autotune").prepare()
    assert started == [1]


def test_inductor_leaves_the_triton_pool_alone_where_no_triton_kernel_can_come(monkeypatch):
    """The pool compiles Triton kernels only: with Triton installed but no GPU
    and inductor's C++ CPU backend, its workers would only take cores from
    the C++ builds, so it is not started; with ``cpu_backend="triton"`` (in
    the global config or the compile's options) it is."""
    import importlib.util

    import torch._inductor.async_compile as async_compile
    from torch._inductor import config as inductor_config

    from armature.backends import inductor as inductor_backend

    started = []
    monkeypatch.setattr(async_compile, "maybe_warm_pool", lambda: started.append(1))
    monkeypatch.setattr(inductor_backend, "_workers_started", False)
    for name in ("cuda", "xpu", "mtia"):
        if getattr(torch, name, None) is not None:
            monkeypatch.setattr(getattr(torch, name), "is_available", lambda: False)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "triton" else real_find_spec(name, *a))
    lookup_backend("inductor").prepare()
    inductor_backend.warm_compile_workers({"cpp.simdlen": 256})
    assert started == []
    inductor_backend.warm_compile_workers({"cpu_backend": "triton"})   # the compile's options
    assert started == [1]
    monkeypatch.setattr(inductor_backend, "_workers_started", False)
    with inductor_config.patch(cpu_backend="triton"):                   # the global config
        lookup_backend("inductor").prepare()
    assert started == [1, 1]
