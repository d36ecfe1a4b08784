"""Calls that used to give frames (or their parts) up to Python, now traced
(issue "Python semantics, round two", point 6): lru_cache-wrapped
functions, partials with keyword arguments, bound methods of modules,
torch.distributions, sys.intern, threading.local attributes, relative
imports, str()/f-strings of user objects, the state queries torch code asks
while tracing.  Each is compared with eager (results, side effects) and its
graph count with torch.compile's (the oracle)."""
from __future__ import annotations

import functools
import sys
import threading

import pytest
import torch
import torch.nn as nn

import armature
from helpers import CountingBackend, USING_TORCH, assert_equal, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def torch_graphs(fn, *args):
    counter = CountingBackend("eager")
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend=counter)(*args)
    finally:
        torch._dynamo.reset()
    return counter.frame_count


def check(fn, *args, fullgraph=True, graphs="oracle", calls=2):
    """``fn(*args)`` eager vs armature (``calls`` times; the same RNG seed
    before each run), graphs compared with torch.compile's."""
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter, fullgraph=fullgraph)
    for i in range(calls):
        torch.manual_seed(i)
        expected = fn(*args)
        after_eager = torch.rand(2)
        torch.manual_seed(i)
        got = compiled(*args)
        after_compiled = torch.rand(2)
        assert_equal(expected, got, f"call {i}")
        assert_equal(after_eager, after_compiled, f"call {i}: the RNG state after the call")
    expected_graphs = torch_graphs(fn, *args) if graphs == "oracle" else graphs
    assert counter.frame_count == expected_graphs, \
        f"armature: {counter.frame_count} graphs, expected {expected_graphs}"
    return counter


# --------------------------------------------------------------------------
# functools.lru_cache
# --------------------------------------------------------------------------

SCALE = 4


@functools.lru_cache(maxsize=None)
def cached_factor(n, k=1):
    return n * SCALE * k


def calls_cached(x):
    return x * cached_factor(3) + cached_factor(2, k=2)


def test_lru_cache_call_is_a_graph_constant():
    cached_factor.cache_clear()
    check(calls_cached, t(3))


def test_lru_cache_stale_entry_is_eagers_answer():
    # eager returns what the cache holds, even after SCALE changed
    global SCALE
    cached_factor.cache_clear()
    compiled = armature.compile(calls_cached, backend="eager")
    x = t(3)
    assert_equal(calls_cached(x), compiled(x))
    SCALE = 5
    try:
        assert_equal(calls_cached(x), compiled(x))   # both: the cached (stale) value
        cached_factor.cache_clear()                   # both recompute with SCALE = 5
        assert_equal(calls_cached(x), compiled(x))
        assert cached_factor(3) == 15
    finally:
        SCALE = 4
        cached_factor.cache_clear()


log = []


@functools.lru_cache(maxsize=None)
def cached_with_effect(n):
    log.append(n)
    return n + 1


def calls_cached_with_effect(x):
    return x * cached_with_effect(2)


def test_lru_cache_with_side_effects_runs_natively():
    cached_with_effect.cache_clear()
    log.clear()
    compiled = armature.compile(calls_cached_with_effect, backend="eager")
    x = t(3)
    for _ in range(3):
        assert_equal(x * 3, compiled(x))
    assert log == [2]     # the function ran once, as in eager
    assert cached_with_effect.cache_info().hits == 2


# --------------------------------------------------------------------------
# partials with keyword arguments, bound methods of modules
# --------------------------------------------------------------------------


def scaled(x, *, scale, shift=0.0):
    return x * scale + shift


PARTIAL_KW = functools.partial(scaled, scale=2.0, shift=1.0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)

    def step(self, x, k=1.0):
        return self.lin(x).relu() * k


BLOCK = Block()
BOUND_STEP = BLOCK.step
BOUND_FORWARD = BLOCK.lin.forward
PARTIAL_BOUND = functools.partial(BLOCK.step, k=3.0)


def calls_partial_kw(x):
    return PARTIAL_KW(x), PARTIAL_KW(x, shift=5.0), functools.partial(scaled, shift=2.0)(x, scale=3.0)


def calls_bound_methods(x):
    return BOUND_STEP(x), BOUND_FORWARD(x), PARTIAL_BOUND(x), functools.partial(BLOCK.step, k=0.5)(x)


@pytest.mark.parametrize("fn", [calls_partial_kw, calls_bound_methods])
def test_partials_and_bound_methods(fn):
    check(fn, t(2, 4))


# --------------------------------------------------------------------------
# torch.distributions
# --------------------------------------------------------------------------


@pytest.fixture
def validation_on():
    # eager's default; torch.compile (the oracle) switches it off for the whole
    # process on first use, so the tests set it themselves
    was = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    yield
    torch.distributions.Distribution.set_default_validate_args(was)


def normal_log_prob(mu, sigma, x):
    d = torch.distributions.Normal(mu, sigma)
    return d.log_prob(x), d.entropy(), d.mean, d.stddev


def normal_rsample(mu, sigma):
    d = torch.distributions.Normal(mu, sigma)
    s = d.rsample()
    return s, d.log_prob(s)


def categorical_log_prob(logits, idx):
    return torch.distributions.Categorical(logits=logits).log_prob(idx)


def test_distribution_log_prob(validation_on):
    check(normal_log_prob, t(3), t(3).abs() + 0.5, t(3))


def test_distribution_rsample_draws_eagers_numbers(validation_on):
    # random: the same seed gives the same sample, and the RNG ends in the
    # same state (check() compares both)
    check(normal_rsample, t(3), t(3).abs() + 0.5)


def test_categorical_log_prob(validation_on):
    # one graph with the validation in it (assumed checks: tests/graph_breaks/
    # test_speculated_checks.py); torch.compile 2.13 captures none here
    check(categorical_log_prob, t(2, 5), torch.tensor([1, 3]), graphs=1)


# --------------------------------------------------------------------------
# sys.intern, threading.local
# --------------------------------------------------------------------------


def interned(x):
    k = sys.intern("hidden_" + "size")
    return x + len(k), k


def test_sys_intern():
    check(interned, t(3))


LOCAL = threading.local()
LOCAL.scale = 3.0


def reads_thread_local(x):
    if hasattr(LOCAL, "missing"):
        x = x - 100
    return x * LOCAL.scale, getattr(LOCAL, "scale", 0.0)


def test_threading_local_attributes_per_thread():
    check(reads_thread_local, t(3))
    counter = CountingBackend("eager")
    compiled = armature.compile(reads_thread_local, backend=counter, fullgraph=True)
    x = t(3)
    assert_equal(reads_thread_local(x), compiled(x))
    out = {}

    def worker():
        LOCAL.scale = 5.0      # this thread's own value
        out["eager"], out["compiled"] = reads_thread_local(x), compiled(x)

    th = threading.Thread(target=worker)
    th.start()
    th.join()
    assert_equal(out["eager"], out["compiled"])
    assert_equal(reads_thread_local(x), compiled(x))   # this thread still sees 3.0
    assert LOCAL.scale == 3.0


def writes_thread_local(x):
    LOCAL.last = x.shape[0]
    return x + 1


def test_threading_local_write_is_a_break():
    counter = CountingBackend("eager")
    compiled = armature.compile(writes_thread_local, backend=counter)
    x = t(3)
    assert_equal(x + 1, compiled(x))
    assert LOCAL.last == 3
    del LOCAL.last


# --------------------------------------------------------------------------
# relative imports
# --------------------------------------------------------------------------


def test_relative_imports():
    from python_semantics.relimport_pkg.model import relative_imports
    check(relative_imports, t(3))


def test_import_of_submodule_not_imported_yet_runs_natively():
    import python_semantics.relimport_pkg as pkg
    from python_semantics.relimport_pkg.model import import_submodule_not_yet_imported as f
    sys.modules.pop(pkg.__name__ + ".lazy_sub", None)
    pkg.__dict__.pop("lazy_sub", None)
    compiled = armature.compile(f, backend="eager")
    x = t(3)
    assert_equal(x + 7, compiled(x))     # (it raised ImportError: the trace skipped the import)
    assert_equal(x + 7, compiled(x))
    with pytest.raises(armature.Unsupported, match="not imported yet"):
        sys.modules.pop(pkg.__name__ + ".lazy_sub", None)
        pkg.__dict__.pop("lazy_sub", None)
        armature.reset()
        armature.compile(f, backend="eager", fullgraph=True)(x)


# --------------------------------------------------------------------------
# str() / repr() / f-strings of user objects
# --------------------------------------------------------------------------


class Money:
    def __init__(self, cents):
        self.cents = cents

    def __str__(self):
        return f"${self.cents / 100:.2f}"

    def __format__(self, spec):
        return format(self.cents, spec) if spec else str(self)


class Tagged:
    def __init__(self, tag):
        self.tag = tag

    def __repr__(self):
        return f"Tagged({self.tag!r})"


class Plain:
    pass


import dataclasses  # noqa: E402


@dataclasses.dataclass
class Config:
    hidden: int
    name: str = "m"


MONEY, TAG, PLAIN, CFG = Money(250), Tagged("a"), Plain(), Config(8)


def formats_objects(x):
    return (x * len(str(MONEY)), f"{MONEY}", f"{MONEY:06d}", f"{TAG}", str(TAG), repr(TAG), f"{TAG!s:>12}",
            repr(CFG), f"{CFG}", f"{PLAIN!r}" == repr(PLAIN))


def formats_new_object(x):
    m = Money(int(x.shape[0]) * 100)
    return x, str(m), f"{m}", f"{Config(x.shape[0], 'n')}"


@pytest.mark.parametrize("fn", [formats_objects, formats_new_object])
def test_str_and_fstrings_of_user_objects(fn):
    check(fn, t(3))


def test_str_follows_a_patched_dunder():
    compiled = armature.compile(formats_objects, backend="eager")
    x = t(3)
    assert_equal(formats_objects(x), compiled(x))
    old = Tagged.__repr__
    Tagged.__repr__ = lambda self: "patched"
    try:
        assert_equal(formats_objects(x), compiled(x))
    finally:
        Tagged.__repr__ = old


def bad_format_spec(x):
    return f"{PLAIN:>5}"


def test_bad_format_spec_is_eagers_error():
    with pytest.raises(TypeError) as eager:
        bad_format_spec(t(1))
    with pytest.raises(TypeError) as got:
        armature.compile(bad_format_spec, backend="eager")(t(1))
    assert str(eager.value) == str(got.value)


# --------------------------------------------------------------------------
# state queries torch code asks while tracing
# --------------------------------------------------------------------------


def asks_state(x):
    if torch.fx._symbolic_trace.is_fx_tracing():
        x = x - 100
    if torch.onnx.is_in_onnx_export():
        x = x - 1000
    hooks = torch._C._autograd._saved_tensors_hooks_is_enabled()
    return x + 1, hooks, torch.autograd.graph._allow_mutation_on_saved_tensors_enabled


def _set_fx_tracing(on: bool) -> None:
    """Symbolic tracing switched on/off as torch.fx does it on this version."""
    fx = torch.fx._symbolic_trace
    if hasattr(fx, "_set_is_fx_tracing"):
        fx._set_is_fx_tracing(on)
    else:
        fx._is_fx_tracing_flag = on


def test_state_queries():
    check(asks_state, t(3))


def test_state_query_change_recompiles():
    counter = CountingBackend("eager")
    compiled = armature.compile(asks_state, backend=counter, fullgraph=True)
    x = t(3)
    assert_equal(asks_state(x), compiled(x))
    _set_fx_tracing(True)
    try:
        assert_equal(asks_state(x), compiled(x))
    finally:
        _set_fx_tracing(False)
    assert counter.frame_count == 2
