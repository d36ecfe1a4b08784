"""Graphs that compute nothing are not compiled.

torch.compile does not call its backend for a graph without calls; it does
call it for one whose only nodes switch a global state (a ``no_grad`` block
with nothing in it: ``_set_grad_enabled`` twice).  armature compiles neither:
a graph whose only nodes are grad-mode switches computes nothing, and the
frame's exit sets the grad mode the code leaves behind itself.  No more
graphs than torch.compile, eager's results and eager's grad mode after the
call."""
from __future__ import annotations

import pytest
import torch

from helpers import USING_TORCH, CountingBackend, assert_equal, compile_fn, reset, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def returns_input(x):
    return x


def returns_inputs_in_containers(x, y):
    return [x, (y, x)], {"a": y}


def shape_arithmetic(x):
    return x.shape[0] * 2, x.dtype, x.requires_grad


def empty_no_grad(x):
    with torch.no_grad():
        pass
    return x


def no_grad_around_a_name(x):
    with torch.no_grad():
        y = x
    return y


def nested_grad_modes_empty(x):
    with torch.no_grad():
        with torch.enable_grad():
            pass
    return x, torch.is_grad_enabled()


def set_grad_enabled_and_back(x):
    torch.set_grad_enabled(False)
    torch.set_grad_enabled(True)
    return x


def leaves_grad_off(x):
    torch.set_grad_enabled(False)
    return x


def empty_inference_mode(x):
    with torch.inference_mode():
        pass
    return x


def empty_autocast(x):
    with torch.autocast("cpu"):
        pass
    return x


def empty_between_breaks(x):
    y = x + 1
    print("", end="")
    with torch.no_grad():
        pass
    print("", end="")
    return y * 2


CASES = [
    (returns_input, 1), (returns_inputs_in_containers, 2), (shape_arithmetic, 1), (empty_no_grad, 1),
    (no_grad_around_a_name, 1), (nested_grad_modes_empty, 1), (set_grad_enabled_and_back, 1),
    (leaves_grad_off, 1), (empty_inference_mode, 1), (empty_autocast, 1), (empty_between_breaks, 1),
]


def _calls(fn, nargs, compiled):
    """Two calls (the second with another shape) under grad mode on, each
    compared with eager, grad mode after the call included."""
    for shape in ((3, 2), (4, 2)):
        args = [t(*shape, requires_grad=True) for _ in range(nargs)]
        with torch.enable_grad():
            expected = fn(*args)
            expected_grad = torch.is_grad_enabled()
        with torch.enable_grad():
            got = compiled(*args)
            got_grad = torch.is_grad_enabled()
        assert_equal(expected, got)
        assert got_grad == expected_grad, "grad mode after the call"


def _graphs(compile_with, fn, nargs) -> int:
    counter = CountingBackend("eager")
    _calls(fn, nargs, compile_with(fn, backend=counter))
    return counter.frame_count


@pytest.mark.parametrize("fn,nargs", CASES, ids=[c[0].__name__ for c in CASES])
def test_empty_graphs_compile_nothing(fn, nargs):
    torch._dynamo.reset()
    try:
        theirs = _graphs(torch.compile, fn, nargs)
    finally:
        torch._dynamo.reset()
    reset()
    ours = _graphs(compile_fn, fn, nargs)
    expected = 4 if fn is empty_between_breaks else 0   # (x + 1 and y * 2, static then dynamic)
    assert ours == expected, f"armature compiled {ours} graphs"
    assert ours <= theirs, f"armature {ours} graphs, torch.compile {theirs}"


def test_grad_switches_stay_around_real_ops():
    """A graph with ops under ``no_grad`` keeps its switches (the ops run
    without grad), and is compiled."""
    def fn(x):
        with torch.no_grad():
            y = x * 2
        return y + x

    counter = CountingBackend("eager")
    compiled = compile_fn(fn, backend=counter)
    x = t(3, requires_grad=True)
    got = compiled(x)
    assert_equal(fn(x), got)
    assert counter.frame_count == 1
    assert any(n.target is torch._C._set_grad_enabled for n in counter.graphs[0].graph.nodes)
