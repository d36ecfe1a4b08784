"""A graph break inside a ``for``/``while`` loop, or a call armature treats
as opaque, splits the frame instead of giving it up: the part before the
loop and the loop body's parts compile (resume functions, reused every
iteration), where torch.compile 2.13 runs such a frame entirely as Python
("graph break in a for/while loop": it skips the frame).  Results and
printed output match eager; no frame runs as Python; armature captures at
least as many graphs as torch.compile, and the count does not grow with
the number of iterations or calls."""
from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import torch

import armature
from helpers import CountingBackend, USING_TORCH, assert_equal, t

from .util import FALLBACK_LOGGER, collect_log

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def for_range_print(x, n):
    x = x * 2
    for i in range(n):
        x = x + i
        print("step", i)
        x = x.cos()
    return x.sin()


def while_print(x, n):
    x = x * 2
    i = 0
    while i < n:
        x = x * 1.5 + i
        print("w", i)
        i += 1
    return x.tanh()


def for_list_opaque_call(xs):
    acc = xs[0] * 0
    for x in xs:
        acc = acc + x.exp()
        acc = acc + float(np.sum(x.numpy()))   # numpy: opaque to armature
        acc = acc * 0.5
    return acc


def nested_loops_break(x, n):
    for i in range(n):
        for j in range(2):
            x = x + i * j
            print(i, j)
        x = x.relu()
    return x


def loop_with_early_exit(x, n):
    for i in range(n):
        x = x + 1
        print("it", i)
        if i == 2:
            break
    else:
        x = x * 100
    return x


CASES = [
    pytest.param(for_range_print, lambda: (t(3), 6), id="for_range_print"),
    pytest.param(while_print, lambda: (t(3), 6), id="while_print"),
    pytest.param(for_list_opaque_call, lambda: ([t(3) for _ in range(4)],), id="for_list_opaque_call"),
    pytest.param(nested_loops_break, lambda: (t(3), 3), id="nested_loops_break"),
    pytest.param(loop_with_early_exit, lambda: (t(3), 6), id="loop_with_early_exit"),
]


def _run(fn, args, calls):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        results = [fn(*args) for _ in range(calls)]
    return results, out.getvalue()


@pytest.mark.parametrize("fn,make_args", CASES)
def test_loop_break_compiles_parts(fn, make_args):
    args = make_args()
    expected = _run(fn, args, 3)
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter)
    with collect_log(FALLBACK_LOGGER) as fallbacks:
        got = _run(compiled, args, 3)
    assert_equal(expected[0], got[0])
    assert expected[1] == got[1], "printed output differs"
    assert not fallbacks, f"a frame ran as Python: {fallbacks}"
    tc = CountingBackend("eager")
    torch._dynamo.reset()
    try:
        _run(torch.compile(fn, backend=tc), args, 3)
    finally:
        torch._dynamo.reset()
    assert counter.frame_count >= max(tc.frame_count, 1), \
        f"armature {counter.frame_count} graphs, torch.compile {tc.frame_count}"
    # a later call reuses the same resume functions and graphs
    n = counter.frame_count
    _run(compiled, args, 2)
    assert counter.frame_count == n
