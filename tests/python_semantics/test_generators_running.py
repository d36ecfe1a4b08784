"""``throw()``/``close()`` of a generator that is running.

* From its own frame (the generator's code calls ``g.throw(...)`` or
  ``g.close()`` on itself): ValueError "generator already executing" on
  every version.
* From the iterator its paused ``yield from`` hands a throw()/close() to (the
  iterator's ``throw`` calls the outer generator's ``throw``): 3.11 and 3.12
  hand it to the iterator again (``_PyGen_yf`` reads the paused
  instruction); 3.13+ raise "generator already executing"
  (pyversion.py ``REENTRANT_YIELD_FROM_THROW``).

Compiled vs eager, fullgraph, one graph."""
import sys

import pytest

from helpers import assert_same, compiled_with_oracle, reset, t


def gen_throws_into_itself(x, log):
    def body():
        try:
            g.throw(KeyError("k"))
        except ValueError as e:
            log.append(("throw", type(e).__name__, str(e)))
        try:
            g.close()
        except ValueError as e:
            log.append(("close", str(e)))
        yield x * 2
    g = body()
    return next(g) + 1


def gen_throws_into_itself_inside_a_handler(x, log):
    def body():
        try:
            raise IndexError("handled")
        except IndexError:
            try:
                g.throw(KeyError)
            except ValueError as e:
                log.append(str(e))
        yield x - 1
    g = body()
    return next(g)


class ReentrantThrow:
    """An iterator whose ``throw`` throws into the generator delegating to it."""

    def __init__(self, log, x):
        self.log, self.x, self.n = log, x, 0

    def __iter__(self):
        return self

    def __next__(self):
        return self.x

    def throw(self, exc):
        self.n += 1
        self.log.append(("inner throw", self.n, type(exc).__name__))
        if self.n > 2:
            return self.x * 10
        try:
            return self.x + OUTER[0].throw(KeyError("again"))
        except ValueError as e:
            self.log.append(("refused", str(e)))
            return self.x * 3


OUTER = []


def throw_reenters_through_yield_from(x, log):
    def outer(inner):
        yield from inner
    g = outer(ReentrantThrow(log, x))
    OUTER[:] = [g]
    next(g)
    r = g.throw(IndexError("first"))
    OUTER.clear()
    g.close()
    return r + 1


class NextFromThrow(ReentrantThrow):
    def throw(self, exc):
        try:
            next(OUTER[0])
        except ValueError as e:
            self.log.append(("next", str(e)))
        return self.x * 4


def next_from_the_inner_throw(x, log):
    def outer(inner):
        yield from inner
    g = outer(NextFromThrow(log, x))
    OUTER[:] = [g]
    next(g)
    r = g.throw(IndexError("first"))
    OUTER.clear()
    g.close()
    return r


CASES = [gen_throws_into_itself, gen_throws_into_itself_inside_a_handler, throw_reenters_through_yield_from,
         next_from_the_inner_throw]


@pytest.mark.parametrize("fn", CASES)
def test_running_generator(fn):
    reset()
    assert_same(fn, t(3), [], fullgraph=True, graphs=1)


def test_reentrant_throw_follows_the_version():
    """The log itself says which rule ran: handed on again (3.11/3.12) or
    refused (3.13+)."""
    log = []
    throw_reenters_through_yield_from(t(3), log)
    if sys.version_info < (3, 13):
        assert [e[0] for e in log] == ["inner throw"] * 3
    else:
        assert log[1] == ("refused", "generator already executing")


@pytest.mark.parametrize("fn", [gen_throws_into_itself, next_from_the_inner_throw])
def test_graph_count_vs_torch_compile(fn):
    """armature captures the one graph; torch.compile at most that."""
    theirs = compiled_with_oracle(fn, t(3), []).graphs
    reset()
    from helpers import compiled_stats
    ours = compiled_stats(fn, t(3), [], fullgraph=True).frame_count
    assert ours == 1 >= theirs, (ours, theirs)
