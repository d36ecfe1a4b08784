"""Iterators from outside the frame (values/real_iterator.py): a loop's
iterator handed to a resume function after a break inside the loop, and
iterators passed in.  The trace walks a snapshot of what the iterator has
left (its __reduce__) and the real iterator is advanced after the graph."""
import pytest
import torch

import armature

from helpers import CountingBackend

LAYERS = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(4)])


def layerdrop_loop(x, p):
    for idx, layer in enumerate(LAYERS):
        if p[idx] < 0.5:          # data-dependent: a graph break inside the loop
            continue
        x = layer(x)
    return x


def test_break_inside_an_enumerate_loop_over_modules():
    counting = CountingBackend("eager")
    cf = armature.compile(layerdrop_loop, backend=counting)
    x = torch.randn(2, 2)
    for p in ([0.9, 0.1, 0.9, 0.9], [0.1, 0.1, 0.9, 0.2], [0.9, 0.1, 0.9, 0.9]):
        p = torch.tensor(p)
        torch.testing.assert_close(cf(x, p), layerdrop_loop(x, p))
    report = armature.explain(armature.compile(layerdrop_loop, backend="eager"))(x, torch.tensor([0.9] * 4))
    assert all("data-dependent" in r.reason for r in report.break_reasons), report.break_reasons


@pytest.mark.parametrize("make", [
    lambda: iter([1.0, 2.0, 3.0]),
    lambda: iter((1.0, 2.0, 3.0)),
    lambda: iter(range(3)),
    lambda: iter({"a": 1.0, "b": 2.0, "c": 3.0}.values()),
    lambda: iter({"a": 1.0, "b": 2.0}.items()),
    lambda: enumerate([4.0, 5.0, 6.0], start=2),
])
def test_iterator_passed_in_is_advanced_as_in_eager(make):
    def f(x, it):
        first = next(it)
        for v in it:
            x = x + (v[1] if isinstance(v, tuple) else v)
            break
        return x, first

    for _ in range(2):
        a, b = make(), make()
        cf = armature.compile(f, backend="eager")
        x = torch.zeros(2)
        got, expected = cf(x, a), f(x, b)
        torch.testing.assert_close(got[0], expected[0])
        assert got[1] == expected[1]
        assert list(a) == list(b)          # what is left is the same


def test_partly_consumed_iterator_and_guard_on_what_is_left():
    def f(x, it):
        total = x
        for v in it:
            total = total * v
        return total

    counting = CountingBackend("eager")
    cf = armature.compile(f, backend=counting)
    x = torch.ones(2)
    it = iter([2.0, 3.0, 4.0])
    next(it)
    torch.testing.assert_close(cf(x, it), torch.full((2,), 12.0))
    torch.testing.assert_close(cf(x, iter([5.0, 6.0])), torch.full((2,), 30.0))
    assert list(it) == []
