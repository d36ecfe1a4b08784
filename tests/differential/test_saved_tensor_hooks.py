"""Saved-tensor hooks (``torch.autograd.graph.saved_tensors_hooks``,
``save_on_cpu``), inside the compiled code and around the compiled call.

The hooks are never called on the fake tensors of a trace, nor by a
backend tracing forward and backward; at run time they see what eager's
see: the code under hooks entered in the frame runs as Python (as
torch.compile gives such a frame up), and hooks around the call see the
compiled graph's saved tensors.  Compared with eager: results, gradients,
and the hooks' calls (order and shapes); graph counts no more than
torch.compile's."""
from __future__ import annotations

import pytest
import torch

from helpers import USING_TORCH, CountingBackend, assert_equal, compile_fn, reset

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")

LOG: list = []


def pack(t):
    LOG.append(("pack", tuple(t.shape), type(t).__name__))
    return t * 1


def unpack(t):
    LOG.append(("unpack", tuple(t.shape), type(t).__name__))
    return t


def hooks_around_the_body(x):
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.sin()
    return y.sum()


def ops_before_and_after(x):
    a = x * 2
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = a.sin() * a
    return (y * 3).sum()


def nested_hooks(x):
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.exp()
        with torch.autograd.graph.saved_tensors_hooks(unpack, pack):
            z = y.cos()
    return (z * y).sum()


def save_on_cpu_region(x):
    with torch.autograd.graph.save_on_cpu():
        y = x.sin() * x
    return y.sum()


def region(x):
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        return x.tanh() * x


def calls_a_function_with_hooks(x):
    a = x + 1
    b = region(a)
    return (b * 2).sum()


def no_hooks_in_the_code(x):
    return (x.sin() * x.cos()).sum()


CASES = [hooks_around_the_body, ops_before_and_after, nested_hooks, save_on_cpu_region,
         calls_a_function_with_hooks, no_hooks_in_the_code]


def _call(fn, x, hooks_outside):
    LOG.clear()
    if hooks_outside:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = fn(x)
    else:
        out = fn(x)
    out.backward()
    return out, x.grad, list(LOG)


def _run(fn, compiled, hooks_outside):
    for call in range(2):   # (the second call: the cached entry)
        x = torch.randn(3, 4, requires_grad=True)
        expected = _call(fn, x.detach().clone().requires_grad_(), hooks_outside)
        got = _call(compiled, x.detach().clone().requires_grad_(), hooks_outside)
        assert_equal(expected[:2], got[:2], f"call {call + 1}")
        if fn is not no_hooks_in_the_code or not hooks_outside:
            # (hooks around a compiled graph see its own saved tensors)
            assert got[2] == expected[2], f"call {call + 1}: hooks called {got[2]}, eager {expected[2]}"


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("hooks_outside", [False, True], ids=["no_outer_hooks", "outer_hooks"])
@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
def test_saved_tensor_hooks_as_eager(fn, hooks_outside, backend):
    counter = CountingBackend(backend)
    _run(fn, compile_fn(fn, backend=counter), hooks_outside)
    theirs = CountingBackend(backend)
    torch._dynamo.reset()
    try:
        _run(fn, torch.compile(fn, backend=theirs), hooks_outside)
    finally:
        torch._dynamo.reset()
    reset()
    assert counter.frame_count <= theirs.frame_count, \
        f"armature {counter.frame_count} graphs, torch.compile {theirs.frame_count}"


def test_outer_hooks_not_called_while_compiling():
    """Hooks around the first (compiling) call are called by the compiled
    graph's saved tensors only: never on fake tensors, never by the backend
    tracing forward and backward (aot_eager)."""
    compiled = compile_fn(no_hooks_in_the_code, backend="aot_eager")
    x = torch.randn(3, 4, requires_grad=True)
    _, _, log = _call(compiled, x, hooks_outside=True)
    assert log, "the compiled graph's saved tensors go through the hooks"
    assert all(kind == "Tensor" for _, _, kind in log), log
    packs = [e for e in log if e[0] == "pack"]
    unpacks = [e for e in log if e[0] == "unpack"]
    assert len(packs) == len(unpacks), log
