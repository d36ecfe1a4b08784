"""``functools.lru_cache``-wrapped methods called from compiled code, and
transformers' ``logger.warning_once`` (an lru_cache'd method of
``logging.Logger``): a pure cached method is a constant of the graph; one
whose only effect is output is replayed natively after the graph, so the
message is logged exactly as often as in eager (values/stdlib/functools.py,
values/stdlib/deferred_output.py).  Compared with eager: results, what was
logged and warned, the cache's own counters; graphs with torch.compile's."""
from __future__ import annotations

import functools
import logging
import warnings

import pytest
import torch

import armature
from helpers import CountingBackend, USING_TORCH, assert_equal, dynamo_graph_count

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


# transformers/utils/logging.py, as it is
@functools.lru_cache(None)
def warning_once(self, *args, **kwargs):
    self.warning(*args, **kwargs)


logging.Logger.warning_once = warning_once

logger = logging.getLogger("armature.tests.cached_methods")
logger.propagate = False


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.seen = []

    def emit(self, record):
        self.seen.append((record.getMessage(), record.funcName, record.levelname))


RECORDS = _Records()
logger.addHandler(RECORDS)


@pytest.fixture(autouse=True)
def _fresh():
    warning_once.cache_clear()
    RECORDS.seen.clear()
    logger.setLevel(logging.NOTSET)
    yield
    warning_once.cache_clear()
    logger.setLevel(logging.NOTSET)


def warns_once(x):
    y = x + 1
    logger.warning_once("careful: %s", "loss_type=None")
    return y * 2


def _eager_records(fn, *args, calls=3):
    warning_once.cache_clear()
    RECORDS.seen.clear()
    out = [fn(*args) for _ in range(calls)]
    seen, info = list(RECORDS.seen), warning_once.cache_info()
    warning_once.cache_clear()
    RECORDS.seen.clear()
    return out, seen, info


def _compiled_records(fn, *args, calls=3, fullgraph=True):
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter, fullgraph=fullgraph)
    out = [compiled(*args) for _ in range(calls)]
    return out, list(RECORDS.seen), warning_once.cache_info(), counter.frame_count


def test_warning_once_is_logged_once_in_one_graph():
    x = torch.randn(3)
    e_out, e_seen, e_info = _eager_records(warns_once, x)
    c_out, c_seen, c_info, graphs = _compiled_records(warns_once, x)
    assert_equal(e_out, c_out)
    assert c_seen == e_seen == [("careful: loss_type=None", "warning_once", "WARNING")]
    assert (c_info.hits, c_info.misses) == (e_info.hits, e_info.misses) == (2, 1)
    assert graphs == 1 <= dynamo_graph_count(warns_once, x)


def test_warning_once_logs_again_after_cache_clear():
    x = torch.randn(3)
    compiled = armature.compile(warns_once, backend="eager", fullgraph=True)
    compiled(x)
    compiled(x)
    assert len(RECORDS.seen) == 1
    warning_once.cache_clear()   # eager would log again on its next call
    compiled(x)
    assert len(RECORDS.seen) == 2


def test_warning_once_disabled_logger():
    # isEnabledFor says no: the cached call is pure (and guarded by the
    # logger's level): nothing is logged, in eager or compiled
    logger.setLevel(logging.ERROR)
    x = torch.randn(3)
    _, c_seen, _, graphs = _compiled_records(warns_once, x)
    assert c_seen == [] and graphs == 1
    logger.setLevel(logging.NOTSET)   # enabled again: the level guard recompiles; the cache
    warning_once.cache_clear()        # was filled while disabled, so clear it as eager would need
    compiled = armature.compile(warns_once, backend="eager")
    compiled(x)
    assert [m for m, _, _ in RECORDS.seen] == ["careful: loss_type=None"]


def test_warning_once_between_side_effects_in_program_order():
    events = []

    class Tap(logging.Handler):
        def emit(self, record):
            events.append("log")
    tap = Tap()
    logger.addHandler(tap)
    try:
        def f(x, box):
            box.first = 1
            events.append("first")
            logger.warning_once("between")
            box.second = 2
            return x * 2

        class Box:
            pass
        x = torch.randn(2)
        b1, b2 = Box(), Box()
        f(x, b1)
        eager_events = list(events)
        events.clear()
        warning_once.cache_clear()
        armature.compile(f, backend="eager", fullgraph=True)(x, b2)
        assert events == eager_events == ["first", "log"]
        assert vars(b1) == vars(b2)
    finally:
        logger.removeHandler(tap)


def test_warning_once_inside_a_module():
    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 2)

        def forward(self, x, labels=None):
            logits = self.lin(x)
            if labels is not None:
                logger.warning_once("`loss_type=None` was set in the config but it is unrecognized.")
                return torch.nn.functional.cross_entropy(logits, labels)
            return logits
    torch.manual_seed(0)
    m = Head()
    x, labels = torch.randn(3, 4), torch.tensor([0, 1, 1])
    expected = [m(x, labels) for _ in range(2)]
    assert len(RECORDS.seen) == 1
    RECORDS.seen.clear()
    warning_once.cache_clear()
    counter = CountingBackend("eager")
    compiled = armature.compile(m, backend=counter, fullgraph=True)
    got = [compiled(x, labels) for _ in range(2)]
    assert_equal(expected, got)
    assert len(RECORDS.seen) == 1
    assert counter.frame_count == 1 <= dynamo_graph_count(m, x, labels)


# --------------------------------------------------------------------------
# other cached methods and functions
# --------------------------------------------------------------------------


class Table:
    def __init__(self, base):
        self.base = base
        self.calls = 0

    @functools.lru_cache(maxsize=None)
    def width(self, n):
        return self.base * n

    @functools.lru_cache(maxsize=None)
    def noisy(self, n):
        warnings.warn(f"noisy {n}")

    @functools.lru_cache(maxsize=None)
    def counted(self, n):
        self.calls += 1

    @functools.lru_cache(maxsize=None)
    def logs_and_returns(self, n):
        logger.warning("computing %d", n)
        return n * 2


TABLE = Table(3)


def test_pure_cached_method_is_a_constant():
    Table.width.cache_clear()

    def f(x):
        return x * TABLE.width(2)
    x = torch.randn(3)
    counter = CountingBackend("eager")
    compiled = armature.compile(f, backend=counter, fullgraph=True)
    for _ in range(2):
        assert_equal(f(x), compiled(x))
    assert counter.frame_count == 1
    info = Table.width.cache_info()
    assert (info.hits, info.misses) == (3, 1)   # eager 2 calls, compiled 2 calls: one miss


def test_cached_method_warns_once():
    Table.noisy.cache_clear()

    def f(x):
        TABLE.noisy(4)
        return x + 1
    x = torch.randn(2)
    with warnings.catch_warnings(record=True) as eager_w:
        warnings.simplefilter("always")
        for _ in range(3):
            f(x)
    Table.noisy.cache_clear()
    counter = CountingBackend("eager")
    compiled = armature.compile(f, backend=counter, fullgraph=True)
    with warnings.catch_warnings(record=True) as comp_w:
        warnings.simplefilter("always")
        for _ in range(3):
            compiled(x)
    assert [str(w.message) for w in comp_w] == [str(w.message) for w in eager_w] == ["noisy 4"]
    assert counter.frame_count == 1


def test_cached_method_that_mutates_runs_natively():
    Table.counted.cache_clear()
    t = Table(1)

    def f(x, t):
        t.counted(1)
        return x * t.calls
    x = torch.randn(2)
    compiled = armature.compile(f, backend="eager")
    for _ in range(3):
        assert_equal(x * 1, compiled(x, t))
    assert t.calls == 1


def test_cached_output_with_a_result_runs_natively():
    # it logs and returns a value: a hit returns the first call's result, the
    # replay could not give the trace its value; it is a break, as before
    Table.logs_and_returns.cache_clear()

    def f(x):
        return x * TABLE.logs_and_returns(3)
    x = torch.randn(2)
    compiled = armature.compile(f, backend="eager")
    for _ in range(3):
        assert_equal(x * 6, compiled(x))
    assert [m for m, _, _ in RECORDS.seen] == ["computing 3"]


def test_plain_logging_call_names_the_users_frame():
    # logging from user code is not deferred (a break, as in torch.compile);
    # the logging callee runs natively, so the record names the user's
    # function and line, not a compiled wrapper of armature's
    lines = []

    class Lines(logging.Handler):
        def emit(self, record):
            lines.append((record.getMessage(), record.funcName, record.filename, record.lineno))
    tap = Lines()
    logger.addHandler(tap)
    try:
        def f(x):
            y = x + 1
            logger.warning("direct")
            return y * 2
        x = torch.randn(2)
        f(x)
        eager = list(lines)
        lines.clear()
        counter = CountingBackend("eager")
        compiled = armature.compile(f, backend=counter)
        for _ in range(2):
            assert_equal(f(x), compiled(x))
        assert lines == eager * 4
        assert counter.frame_count == dynamo_graph_count(f, x)
    finally:
        logger.removeHandler(tap)


def helper_that_logs(x):
    logger.info("from the helper")
    return x - 1


def test_logging_in_a_callee_names_the_callee():
    lines = []

    class Lines(logging.Handler):
        def emit(self, record):
            lines.append((record.funcName, record.lineno))
    tap = Lines()
    logger.addHandler(tap)
    logger.setLevel(logging.INFO)
    try:
        def f(x):
            return helper_that_logs(x + 1) * 3
        x = torch.randn(2)
        f(x)
        compiled = armature.compile(f, backend="eager")
        for _ in range(2):
            assert_equal(f(x), compiled(x))
        assert len(lines) == 5 and len(set(lines)) == 1 and lines[0][0] == "helper_that_logs"
    finally:
        logger.removeHandler(tap)
