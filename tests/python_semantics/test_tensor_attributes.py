"""Python attributes on tensors (values/tensors/tensor_attrs.py): read and written on
inputs, intermediates and new tensors, ``hasattr``, ``t.grad = ...`` on
leaves, and iteration over the first dimension; compiled against eager,
side effects included, graph counts against torch.compile."""
from __future__ import annotations

import pytest
import torch

import armature

from helpers import CountingBackend


def _both(fn, make_args, graphs=1):
    """Run fn eagerly and compiled on equal fresh inputs (twice: traced and
    cached); return both runs' (result, inputs) for the caller to compare."""
    counting = CountingBackend("eager")
    cf = armature.compile(fn, backend=counting)
    runs = []
    for _ in range(2):
        a, b = make_args(), make_args()
        runs.append(((fn(*a), a), (cf(*b), b)))
    assert counting.frame_count == graphs
    return runs


def test_attribute_on_an_intermediate_travels_with_the_returned_tensor():
    def f(x):
        y = x * 2
        y.tag = "doubled"
        y.meta = {"scale": 2}
        return y, getattr(y, "tag"), hasattr(y, "missing")

    for (e, _), (c, _) in _both(f, lambda: (torch.ones(3),)):
        assert c[0].tag == e[0].tag == "doubled" and c[0].meta == e[0].meta
        assert c[1:] == e[1:]
        torch.testing.assert_close(c[0], e[0])


def test_attribute_written_on_an_input_is_replayed_and_read_back():
    def f(x):
        x.calls = getattr(x, "calls", 0) + 1
        return x + x.calls

    counting = CountingBackend("eager")
    cf = armature.compile(f, backend=counting)
    a, b = torch.zeros(2), torch.zeros(2)
    for _ in range(3):
        torch.testing.assert_close(cf(a), f(b))
        assert a.calls == b.calls
    assert a.calls == 3


def test_hasattr_on_an_input_is_guarded():
    def f(x):
        return x + 1 if hasattr(x, "flag") else x - 1

    cf = armature.compile(f, backend="eager")
    x = torch.zeros(2)
    torch.testing.assert_close(cf(x), f(x))
    x.flag = True
    torch.testing.assert_close(cf(x), f(x))     # the guard notices the new attribute


def test_grad_assigned_to_a_leaf_is_visible_after_the_call():
    def f(w, g):
        w.grad = g * 2
        return w.grad.sum()

    counting = CountingBackend("eager")
    cf = armature.compile(f, backend=counting)
    w1, w2 = torch.zeros(3, requires_grad=True), torch.zeros(3, requires_grad=True)
    g = torch.ones(3)
    torch.testing.assert_close(cf(w1, g), f(w2, g))
    torch.testing.assert_close(w1.grad, w2.grad)
    assert counting.frame_count == 1


def test_grad_of_the_wrong_size_raises_eagers_error():
    def f(w):
        w.grad = torch.ones(5)
        return w

    with pytest.raises(RuntimeError, match="size"):
        f(torch.zeros(3, requires_grad=True))
    with pytest.raises(RuntimeError, match="size"):
        armature.compile(f, backend="eager")(torch.zeros(3, requires_grad=True))


def test_iterating_a_tensor_walks_its_first_dimension():
    def f(x):
        total = 0
        for row in x:
            total = total + row.sum()
        return total, [r * 2 for r in x]

    x = torch.randn(4, 3)
    counting = CountingBackend("eager")
    cf = armature.compile(f, backend=counting, fullgraph=True)
    got, expected = cf(x), f(x)
    torch.testing.assert_close(got[0], expected[0])
    for a, b in zip(got[1], expected[1]):
        torch.testing.assert_close(a, b)
    theirs = CountingBackend("eager")
    torch._dynamo.reset()
    torch.compile(f, backend=theirs)(x)
    assert counting.frame_count == theirs.frame_count == 1
