"""A graph break inside a ``for``/``while`` loop, against torch.compile.

torch.compile (2.13) does not split a frame inside a loop: by its rule (a
jump after the break, before the first return, leads back) it gives up the
frame ("graph break in a for/while loop"), runs it as Python and compiles
the functions the frame calls as frames of their own.  armature does the
same by default (``config.loop_breaks="native"``, driver/native_frames.py):
the same graph count as torch.compile on every shape below -- break at the
start, middle or end of the body, over ranges, lists and tensors, ``while``
with a counter, nested loops, ``break``/``continue``, breaks in callees
called from a loop and loops in callees -- with eager's results, printed
output and side effects, and no new graphs on later calls.

``config.loop_breaks="split"`` keeps the older policy: the frame is split
inside the loop and the loop body's parts compile as resume functions
(reused every iteration): at least torch.compile's graph count, nothing
runs as Python.
"""
from __future__ import annotations

import contextlib
import copy
import io
import sys

import numpy as np
import pytest
import torch

import armature
from helpers import CountingBackend, USING_TORCH, assert_equal, t

from .util import FALLBACK_LOGGER, collect_log

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")

CALLS = 3


class Box:
    """Outside state a loop writes to (compared after every call)."""

    def __init__(self):
        self.count = 0
        self.seen = []


def opaque(v):
    print("opaque", v)   # a graph break in armature and in torch.compile


def for_range_print(x, n):
    x = x * 2
    for i in range(n):
        x = x + i
        print("step", i)
        x = x.cos()
    return x.sin()


def break_at_start(x, n):
    x = x + 1
    for i in range(n):
        print("start", i)
        x = x * 2
    return x - 1


def break_at_end(x, n):
    x = x + 1
    for i in range(n):
        x = x * 2
        print("end", i)
    return x - 1


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
        acc = acc + float(np.sum(x.numpy()))   # numpy of a real tensor: opaque
        acc = acc * 0.5
    return acc


def for_over_tensor_rows(x):
    y = x + 1
    acc = y[0] * 0
    for row in y:
        acc = acc + row.sum()
        print("row")
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


def break_and_continue(x, n):
    x = x + 1
    for i in range(n):
        if i == 1:
            continue
        x = x * 2
        print("bc", i)
        if i == 3:
            break
    return x - 1


def data_dependent_in_loop(x, n):
    x = x + 1
    for _ in range(n):
        x = x * 0.5
        if x.sum() > 0:
            x = x - 1
    return x - 1


def loop_appends_then_stacks(x, n):
    out = []
    for i in range(n):
        out.append(x * i)
        print("append", i)
    return torch.stack(out)


def step_once(x):
    x = x * 2
    opaque("callee")
    return x + 1


def callee_breaks_in_loop(x, n):
    x = x + 1
    for _ in range(n):
        x = step_once(x)
    return x - 1


def loop_in_callee(x, n):
    for i in range(n):
        x = x * 2
        opaque(i)
    return x + 1


def calls_callee_with_loop(x, n):
    x = x + 1
    x = loop_in_callee(x, n)
    return x - 1


def break_before_loop(x, n):
    x = x + 1
    print("before")
    for _ in range(n):
        x = x * 2
    return x - 1


def break_after_loop(x, n):
    for _ in range(n):
        x = x * 2
    print("after")
    return x - 1


def loop_writes_outside_state(x, n, box):
    for i in range(n):
        box.count += 1
        x = x + box.count
        box.seen.append(i)
        print("box", box.count)
    return x


def loop_with_early_return(x, n):
    # torch.compile's rule sees no loop here (the return comes first): it
    # splits the frame, and so does armature
    for i in range(n):
        x = x * 2
        print("r", i)
        if i == 1:
            return x + 1
    return x


def _f3(x, y):
    i = 0
    while i < y:
        i += 1
        print("break in f3")
        x = torch.sin(x)
    return x


def _f2(a, b):
    a = (a + b).relu()
    return _f3(a, b)


def while_loop_in_callee_of_callee(x, n):
    x = (x * 2.0).abs().sqrt()
    return _f2(x, n)


def _while_break(x, y):
    z = x + y
    i = 0
    while i < 10:
        z = z * 2
        if i % 2 != 0:
            print("break")
            break
        z = z - 1
        i += 1
    return z


def while_break_statement_in_callee(x, y):
    c = x * y
    return _while_break(c, y) / x


def _maybe_break(x, i):
    if i == 5:
        print("i == 5")
    return x + 1


def _loop_calling(x):
    for i in range(8):
        x = _maybe_break(x, i)
    return x


def callee_loop_breaks_on_one_iteration(x):
    x = x + 1
    x = _loop_calling(x)
    return x + 1


def comprehension_with_break(x):
    ys = [step_once(x + i) for i in range(3)]   # (3.12+: the comprehension's loop is the frame's own)
    return ys[0] + ys[1]


CASES = [
    pytest.param(for_range_print, lambda: (t(3), 6), id="for_range_print"),
    pytest.param(break_at_start, lambda: (t(3), 4), id="break_at_start"),
    pytest.param(break_at_end, lambda: (t(3), 4), id="break_at_end"),
    pytest.param(while_print, lambda: (t(3), 6), id="while_print"),
    pytest.param(for_list_opaque_call, lambda: ([t(3) for _ in range(4)],), id="for_list_opaque_call"),
    pytest.param(for_over_tensor_rows, lambda: (t(4, 3),), id="for_over_tensor_rows"),
    pytest.param(nested_loops_break, lambda: (t(3), 3), id="nested_loops_break"),
    pytest.param(loop_with_early_exit, lambda: (t(3), 6), id="loop_with_early_exit"),
    pytest.param(break_and_continue, lambda: (t(3), 5), id="break_and_continue"),
    pytest.param(data_dependent_in_loop, lambda: (t(3), 4), id="data_dependent_in_loop"),
    pytest.param(loop_appends_then_stacks, lambda: (t(3), 3), id="loop_appends_then_stacks"),
    pytest.param(callee_breaks_in_loop, lambda: (t(3), 3), id="callee_breaks_in_loop"),
    pytest.param(calls_callee_with_loop, lambda: (t(3), 3), id="calls_callee_with_loop"),
    pytest.param(break_before_loop, lambda: (t(3), 3), id="break_before_loop"),
    pytest.param(break_after_loop, lambda: (t(3), 3), id="break_after_loop"),
    pytest.param(loop_writes_outside_state, lambda: (t(3), 3, Box()), id="loop_writes_outside_state"),
    pytest.param(loop_with_early_return, lambda: (t(3), 4), id="loop_with_early_return"),
    # (PyTorch's own: test_misc-style nesting, a break in a loop two calls down)
    pytest.param(while_loop_in_callee_of_callee, lambda: (t(3), 3), id="while_loop_in_callee_of_callee"),
    pytest.param(while_break_statement_in_callee, lambda: (t(3), t(3)), id="while_break_statement_in_callee"),
    pytest.param(callee_loop_breaks_on_one_iteration, lambda: (t(3),), id="callee_loop_breaks_on_one_iteration"),
    pytest.param(comprehension_with_break, lambda: (t(3),), id="comprehension_with_break"),
]


#: torch.compile 2.13 compiles ``_maybe_break`` once for i == 0, again with
#: i dynamic, and again for the call that breaks (7 graphs; 2.15: 5):
#: armature's loop counter is dynamic from its second value on (5)
#: On 3.11 a comprehension is a function of its own that runs as Python
#: (torch.compile compiles its callee, and the frame's parts: 3 graphs; 1 here)
FEWER = {callee_loop_breaks_on_one_iteration, comprehension_with_break}


def _run(fn, args, calls):
    """Call ``fn`` ``calls`` times on one copy of ``args``: the results,
    the printed output and the arguments afterwards (the outside state)."""
    args = copy.deepcopy(args)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        results = [fn(*args) for _ in range(calls)]
    state = [vars(a) if isinstance(a, Box) else a for a in args]
    return results, out.getvalue(), state


def _torch_compile_graphs(fn, args) -> int:
    counter = CountingBackend("eager")
    torch._dynamo.reset()
    try:
        _run(torch.compile(fn, backend=counter), args, CALLS)
    finally:
        torch._dynamo.reset()
    return counter.frame_count


def _same_as_eager(fn, args, compiled):
    expected = _run(fn, args, CALLS)
    got = _run(compiled, args, CALLS)
    assert_equal(expected[0], got[0])
    assert expected[1] == got[1], "printed output differs"
    assert_equal(expected[2], got[2], "outside state")


@pytest.mark.parametrize("fn,make_args", CASES)
def test_loop_break_graphs_as_torch_compile(fn, make_args):
    """Default policy: eager's results and effects, torch.compile's graph
    count (at most: where torch.compile recompiles a callee per value of a
    loop counter, armature makes it dynamic sooner), and later calls
    compile nothing new."""
    args = make_args()
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter)
    _same_as_eager(fn, args, compiled)
    n = counter.frame_count
    theirs = _torch_compile_graphs(fn, args)
    if fn in FEWER:
        assert n <= theirs, f"armature {n} graphs, torch.compile {theirs}"
    else:
        assert n == theirs, f"armature {n} graphs, torch.compile {theirs}"
    _run(compiled, args, 2)
    assert counter.frame_count == n


@pytest.mark.parametrize("fn,make_args", CASES)
def test_split_loop_breaks_compile_parts(fn, make_args):
    """``loop_breaks="split"``: the loop body's parts compile (resume
    functions reused every iteration), no frame runs as Python."""
    if fn is comprehension_with_break and sys.version_info < (3, 12):
        pytest.skip("3.11: the comprehension is a function of its own, run as Python in either policy")
    args = make_args()
    counter = CountingBackend("eager")
    with armature.config.patch(loop_breaks="split"):
        compiled = armature.compile(fn, backend=counter)
        with collect_log(FALLBACK_LOGGER) as fallbacks:
            _same_as_eager(fn, args, compiled)
        assert not fallbacks, f"a frame ran as Python: {fallbacks}"
        assert counter.frame_count >= max(_torch_compile_graphs(fn, args), 1)
        n = counter.frame_count
        _run(compiled, args, 2)
        assert counter.frame_count == n


def test_loop_breaks_option_is_checked():
    with pytest.raises(ValueError, match="loop_breaks"):
        armature.config.loop_breaks = "unroll"


def test_native_loop_frame_compiles_again_when_the_break_goes():
    """The native entry is guarded by what the trace read up to the break:
    a call on which the loop body does not break traces whole again."""
    def fn(x, verbose):
        for i in range(3):
            x = x * 2
            if verbose:
                print("v", i)
        return x + 1

    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter)
    x = t(3)
    with contextlib.redirect_stdout(io.StringIO()):
        assert_equal(fn(x, True), compiled(x, True))
    assert counter.frame_count == 0
    assert_equal(fn(x, False), compiled(x, False))
    assert counter.frame_count == 1
