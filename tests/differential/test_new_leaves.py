"""Leaf tensors made inside a compiled frame (issue 36, "Never wrong").

``w = torch.ones(3, requires_grad=True); return w, (w * x).sum()``: in
eager ``w`` is a leaf of autograd and ``backward()`` through the result
fills ``w.grad``.  A graph cannot make a leaf mid-way under an
autograd-aware backend (aot_eager ran the graph as one autograd function of
its inputs: the result did not require grad, ``backward()`` raised, a
returned leaf came back without ``requires_grad``), so a call with
``requires_grad=True`` runs as Python, as torch.compile does, and the leaf
enters the next graph as an input.  Each case: outputs, ``.grad`` of the
returned leaves after ``backward()``, leafness, on the eager and aot_eager
backends, graph count equal to torch.compile's.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from helpers import CountingBackend, assert_equal, compile_fn, compiled_with_oracle, reset


def ones_leaf(x):
    w = torch.ones(3, requires_grad=True)
    return w, (w * x).sum()


def tensor_leaf(x):
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    return w, (w * x).sum()


def parameter_leaf(x):
    w = nn.Parameter(torch.ones(3))
    return w, (w * x).sum()


def leaf_with_grad_set(x):
    w = torch.ones(3, requires_grad=True)
    w.grad = torch.zeros(3)
    return w, (w * x).sum()


def requires_grad_method(x):
    w = torch.zeros(3).requires_grad_()
    return w, (w * x + 1).sum()


def like_leaf(x):
    w = torch.zeros_like(x, requires_grad=True)
    return w, (w + x).pow(2).sum()


def leaf_used_twice(x):
    w = torch.full((3,), 2.0, requires_grad=True)
    a = (w * x).sum()
    b = (w.exp() * x).sum()
    return w, a + b


def leaf_not_returned(x):
    w = torch.ones(3, requires_grad=True)
    return (w * x).sum()


def leaf_flags(x):
    w = torch.ones(3, requires_grad=True)
    y = (w * x).sum()
    return y, w.is_leaf, w.requires_grad, y.requires_grad, y.grad_fn is None


def leaf_and_input_grad(x):
    w = torch.randn(3, requires_grad=True)
    return w, (w * x).sum()


def leaf_under_no_grad(x):
    with torch.no_grad():
        w = torch.ones(3, requires_grad=True)
        y = w * x
    return w, y.requires_grad, (w * x).sum()


def false_flag_stays_in_graph(x):
    w = torch.ones(3, requires_grad=False)
    return w, (w * x).sum()


class WithLeaves(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(3, requires_grad=True))
        self.v = torch.full((3,), 2.0, requires_grad=True)

    def forward(self, x):
        return self.w * x * self.v


def module_made_in_frame(x):
    # a module built in the frame is built for real by the transformed
    # function, leaves included: its factories stay in one graph
    m = WithLeaves()
    return m.w, m.v, m(x).sum()


CASES = [ones_leaf, tensor_leaf, parameter_leaf, leaf_with_grad_set, requires_grad_method, like_leaf,
         leaf_used_twice, leaf_not_returned, leaf_flags, leaf_and_input_grad, leaf_under_no_grad,
         false_flag_stays_in_graph, module_made_in_frame]


def _observe(out, x):
    """What a user sees: the outputs, then after backward() through every
    output that requires grad, the .grad of the returned leaves and of x."""
    items = out if isinstance(out, tuple) else (out,)
    loss = [o.sum() for o in items if isinstance(o, torch.Tensor) and o.requires_grad and o.grad_fn is not None]
    if loss:
        sum(loss).backward()
    leaves = [(o.is_leaf, o.requires_grad, o.grad) for o in items if isinstance(o, torch.Tensor)]
    return [o.detach() if isinstance(o, torch.Tensor) else o for o in items], leaves, x.grad


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("x_requires_grad", [False, True])
@pytest.mark.parametrize("fn", CASES)
def test_leaf_made_in_the_frame(fn, backend, x_requires_grad):
    reset()
    counter = CountingBackend(backend)
    compiled = compile_fn(fn, backend=counter)
    for call in range(2):
        torch.manual_seed(call)
        x_e = torch.randn(3).requires_grad_(x_requires_grad)
        x_c = x_e.detach().clone().requires_grad_(x_requires_grad)
        torch.manual_seed(10 + call)
        expected = _observe(fn(x_e), x_e)
        torch.manual_seed(10 + call)
        got = _observe(compiled(x_c), x_c)
        assert_equal(expected, got)
    oracle = compiled_with_oracle(fn, torch.randn(3).requires_grad_(x_requires_grad))
    # (under no_grad armature breaks at the factory, but the graph before the
    # break holds only the grad-mode switch and is not compiled: as many
    # graphs as torch.compile)
    assert counter.frame_count == oracle.graphs
