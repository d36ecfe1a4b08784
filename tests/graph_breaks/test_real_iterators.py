"""Iterators from outside the frame (values/containers/real_iterator.py): a loop's
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
    seen = []
    for p in ([0.9, 0.1, 0.9, 0.9], [0.1, 0.1, 0.9, 0.2], [0.9, 0.1, 0.9, 0.9], [0.9, 0.1, 0.9, 0.9]):
        p = torch.tensor(p)
        torch.testing.assert_close(cf(x, p), layerdrop_loop(x, p))
        seen.append(counting.frame_count)
    assert seen[-1] == seen[-2]                  # no new graphs once every path was seen
    report = armature.explain(armature.compile(layerdrop_loop, backend="eager"))(x, torch.tensor([0.9] * 4))
    # the loop's iterator is iterated by the resume functions (no "iterating <lazy ...>" breaks);
    # once what it holds changed between steps, its steps run as Python
    assert all("data-dependent" in r.reason or "changed between calls" in r.reason
               for r in report.break_reasons), report.break_reasons


def test_other_outside_iterators_are_advanced_as_in_eager():
    """Iterators not over modules are not unrolled (their steps break at
    FOR_ITER); passing one in still leaves it as eager does."""
    def f(x, it):
        first = next(it)
        for v in it:
            x = x + v
            break
        return x, first

    a, b = iter([1.0, 2.0, 3.0]), iter([1.0, 2.0, 3.0])
    got, expected = armature.compile(f, backend="eager")(torch.zeros(2), a), f(torch.zeros(2), b)
    torch.testing.assert_close(got[0], expected[0])
    assert got[1] == expected[1] and list(a) == list(b)


def test_module_iterator_passed_in_is_unrolled_and_advanced():
    layers = [torch.nn.Linear(2, 2) for _ in range(3)]

    def f(x, it):
        for i, layer in it:
            x = layer(x) * i
            if i == 1:
                break
        return x

    for make in (lambda: enumerate(layers), lambda: iter(layers[:]) and enumerate(iter(layers))):
        a, b = make(), make()
        counting = CountingBackend("eager")
        x = torch.randn(2)
        torch.testing.assert_close(armature.compile(f, backend=counting, fullgraph=True)(x, a), f(x, b))
        assert [m for _, m in a] == [m for _, m in b]
        assert counting.frame_count == 1
