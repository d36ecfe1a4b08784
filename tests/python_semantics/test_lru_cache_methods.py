"""``functools.lru_cache`` / ``functools.cache`` functions called with
default arguments and keywords, and lru_cache-wrapped *methods* (HF's
``logger.warning_once`` pattern; values/stdlib/functools.py): a pure cached
call is a constant of the graph whose guard asks the cache again on every
call (hits and misses as in eager), in one graph as torch.compile makes.

Before, reading an lru_cache-wrapped method (``self.scale``) was a
whole-frame fallback ("the C descriptor ... (_lru_cache_wrapper)"): the
method now binds as a function does, and its ``self`` (a module or object
from outside the frame, hashed by identity) is guarded by identity and
passed to the real cache."""
from __future__ import annotations

import functools

import pytest
import torch
import torch.nn as nn

import armature
from helpers import USING_TORCH, CountingBackend, assert_equal, dynamo_graph_count, reset, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def run_both(fn, args, calls=3):
    """eager and armature ``calls`` times each; returns armature's graphs."""
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter)
    for i in range(calls):
        expected = fn(*args)
        got = compiled(*args)
        assert_equal(expected, got, f"call {i}")
    return counter.frame_count


def check(fn, *args, graphs=1, oracle=True):
    reset()
    if oracle:
        assert graphs <= dynamo_graph_count(fn, *args), "more graphs than torch.compile"
    reset()
    assert run_both(fn, args) == graphs


@functools.lru_cache(maxsize=None)
def scaled(n, k=2):
    return n * k


@functools.cache
def shifted(n, k=3):
    return n + k


@functools.lru_cache()
def name_length(name="abc"):
    return len(name)


@functools.lru_cache
def keyword_only(a, *, b=1):
    return a + b


def defaults_and_keywords(x):
    return (x * scaled(3) + scaled(3, 4) + scaled(3, k=5) + shifted(1) + shifted(1, k=2)
            + name_length() + keyword_only(1) + keyword_only(2, b=3))


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.base = 2

    @functools.lru_cache(None)
    def factor(self, k=2):
        return self.base * k

    def forward(self, x):
        return self.lin(x) * self.factor() + self.factor(k=3) + self.factor(4)


class Settings:
    def __init__(self):
        self.unit = 3

    @functools.lru_cache(maxsize=8)
    def size_of(self, name, scale=1):
        return len(name) * self.unit * scale

    @functools.cache
    def flag(self):
        return True


SETTINGS = Settings()


def method_of_a_global_object(x):
    if SETTINGS.flag():
        x = x + 1
    return x * SETTINGS.size_of("abcd") + SETTINGS.size_of("ab", scale=2)


def test_defaults_and_keywords_one_graph():
    for f in (scaled, shifted, name_length, keyword_only):
        f.cache_clear()
    check(defaults_and_keywords, t(3))
    assert scaled.cache_info().misses == 3   # (3,), (3, 4), (3, k=5): eager's keys, each missed once


def test_method_of_a_module_one_graph():
    m = Scaled()
    check(m, t(2, 3))
    Scaled.factor.cache_clear()


def test_method_of_a_global_object_one_graph():
    Settings.size_of.cache_clear()
    check(method_of_a_global_object, t(3))
    info = Settings.size_of.cache_info()
    # eager's 2 misses and armature's (the guard's re-asks are hits), nothing more
    assert info.misses == 2, info


def test_method_guarded_by_identity():
    a, b = Settings(), Settings()
    b.unit = 5

    def f(x, s):
        return x * s.size_of("abc")

    counter = CountingBackend("eager")
    compiled = armature.compile(f, backend=counter, fullgraph=True)
    x = t(3)
    for s in (a, b, a, b):
        assert_equal(f(x, s), compiled(x, s))
    assert counter.frame_count == 2


def test_cleared_cache_refills_with_a_stale_answer():
    # eager's answer is what the cache holds: after cache_clear() and a
    # change, the method is re-run (the guard's call) and the new value used
    s = Settings()

    def f(x):
        return x * s.size_of("ab")

    compiled = armature.compile(f, backend="eager", fullgraph=True)
    x = t(3)
    assert_equal(f(x), compiled(x))
    s.unit = 10
    assert_equal(f(x), compiled(x))        # stale in both: the cache answers 6
    Settings.size_of.cache_clear()
    assert_equal(f(x), compiled(x))        # refilled in both: 20
    assert_equal(x * 20, compiled(x))


LOG = []


class Logger:
    @functools.lru_cache(None)
    def warning_once(self, msg):
        LOG.append(msg)


LOGGER = Logger()


def warns_once(x):
    y = x.sin()
    LOGGER.warning_once("careful")
    return y.cos()


def test_method_with_side_effects_breaks_and_runs_once():
    # torch.compile traces the wrapped method and appends on every call (it
    # ignores the cache); eager appends once: the call runs natively here
    Logger.warning_once.cache_clear()
    LOG.clear()
    reset()
    assert run_both(warns_once, (t(3),)) == 2
    assert LOG == ["careful"]


class Hashed:
    def __init__(self):
        self.v = 1

    def __hash__(self):
        return 7

    def __eq__(self, other):
        return isinstance(other, Hashed)

    @functools.lru_cache(None)
    def value(self):
        return self.v


def test_method_of_an_object_with_its_own_hash_breaks():
    h = Hashed()

    def f(x):
        return x.sin() * h.value()

    reset()
    with pytest.raises(armature.Unsupported, match="lru_cache"):
        armature.compile(f, backend="eager", fullgraph=True)(t(3))
    reset()
    run_both(f, (t(3),))


class Log:
    def __init__(self):
        self.calls = 0


def _write_then_ask(x, s, log, write_to_self):
    log.calls += 1            # (a pending write to an object the method does not read)
    if write_to_self:
        s.unit = 7            # (a pending write to what the method reads)
    return x * s.size_of("abc")


@pytest.mark.parametrize("write_to_self", [False, True], ids=["unrelated-write", "write-to-self"])
def test_method_after_a_pending_write(write_to_self):
    """A cached method called after the frame wrote outside state: made
    while tracing when the writes do not touch what it reads (one graph);
    where they do, the call runs natively at a break and sees the write, as
    eager's does (fresh objects for each run: the cache keys on them)."""
    x = t(3)

    def run(compiled_or_plain):
        s, log = Settings(), Log()
        outs = [compiled_or_plain(x, s, log, write_to_self) for _ in range(2)]
        return outs, s.unit, log.calls
    counter = CountingBackend("eager")
    compiled = armature.compile(_write_then_ask, backend=counter)
    expected = run(_write_then_ask)
    got = run(compiled)
    assert_equal(expected, got)
    e = armature.explain(_write_then_ask)(x, Settings(), Log(), write_to_self)
    assert e.graph_break_count == (1 if write_to_self else 0), str(e)
