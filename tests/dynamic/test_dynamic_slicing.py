"""Slicing and indexing with dynamic sizes: ``x[:n]`` with n a symbolic
size, ``x[:, : x.size(1) // 2]``, ``x[n:]``, steps, tensors indexed by a
size (``x[n]``), lists, tuples, strings and ranges sliced with symbolic
bounds, and torch.Size slices and sums (a torch.Size stays a torch.Size).

Each case runs over three calls whose shapes change (automatic dynamic
shapes, and ``dynamic=True``), compared with eager (values and types) and
with torch.compile's graph count."""
from __future__ import annotations

import pytest
import torch

from helpers import USING_TORCH, CountingBackend, assert_equal, compile_fn, reset


def slice_to_size(x, y):
    n = y.size(0)
    return x[:n] * 2


def half_the_width(x, y):
    return x[:, : x.size(1) // 2] + 1


def slice_from_size(x, y):
    return x[y.shape[0]:] + 1


def window_around_size(x, y):
    n = y.size(0)
    return x[n - 1: n + 1] * 3


def step_from_size(x, y):
    return x[:: max(1, y.size(0) // 2)] + 1


def start_stop_step(x, y):
    n = y.size(0)
    return x[n: n * 2: 2] - 1


def export_db_slicing(x, y):
    return x[: x.shape[0] - 2, x.shape[1] - 1:: 2]


def negative_bound(x, y):
    return x[-y.size(0):] + 1


def ellipsis_and_none(x, y):
    n = y.size(0)
    return x[..., :n] * 2, x[:n, None] + 1


def slice_object(x, y):
    s = slice(0, y.size(0))
    return x[s] + 1


def assign_into_slice(x, y):
    x = x.clone()
    x[: y.size(0)] = 0
    return x


def positions_window(x, y):
    past, seq = y.size(0), x.size(0)
    pos = torch.arange(64)[None, :]
    return pos[:, past: past + seq] + 1


def reshape_after_slice(x, y):
    n = y.size(0)
    return x[:n].reshape(n, -1).sum(1)


def index_by_size(x, y):
    return x[y.size(0)] + 1, x[y.size(0) - 1] * 2


def list_sliced_by_size(x, y):
    xs = [x, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6]
    n = y.size(0)
    return torch.stack(xs[:n]).sum(0), len(xs[n:])


def tuple_sliced_by_size(x, y):
    t = (x, x * 2, x * 3, x * 4, x * 5, x * 6, x * 7)
    return sum(t[1: y.size(0)])


def str_and_range_sliced(x, y):
    s = "abcdefghij"
    return x + len(s[: y.size(0)]) + len(range(10)[: y.size(0)])


def list_assigned_by_size(x, y):
    xs = [x, x, x, x, x, x, x, x]
    xs[: y.size(0)] = [x + 1]
    return len(xs), torch.stack(xs).sum()


def size_slices_stay_sizes(x, y):
    s = x.shape
    return s[:1], s + (3,), (3,) + s, s * 2, s[::-1], s[1:] + s[:1], s[: y.dim()], tuple(s)


def view_from_size_slice(x, y):
    return x.view(*x.shape[:1], -1) * 2, torch.zeros(x.size()[: y.dim() - 1])


def unbind_then_slice(x, y):
    rows = x.unbind(0)
    return torch.stack(rows[: y.size(0)])


def int_argument_bound(x, n):
    return x[:n] * 2


CASES = [slice_to_size, half_the_width, slice_from_size, window_around_size, step_from_size, start_stop_step,
         export_db_slicing, negative_bound, ellipsis_and_none, slice_object, assign_into_slice, positions_window,
         reshape_after_slice, index_by_size, list_sliced_by_size, tuple_sliced_by_size, str_and_range_sliced,
         list_assigned_by_size, size_slices_stay_sizes, view_from_size_slice, unbind_then_slice,
         int_argument_bound]


def _inputs(fn, i):
    x = torch.randn(10 + i, 8 + 2 * i)
    if fn is int_argument_bound:
        return x, 3 + i
    return x, torch.randn(3 + i, 2)


def _run(compiled, fn):
    for i in range(3):
        args = _inputs(fn, i)
        expected = fn(*args)
        got = compiled(*args)
        assert_equal(expected, got, f"call {i + 1}")


def _graphs(compile_with, fn, dynamic) -> int:
    counter = CountingBackend("eager")
    _run(compile_with(fn, backend=counter, dynamic=dynamic), fn)
    return counter.frame_count


@pytest.mark.parametrize("dynamic", [None, True], ids=["automatic", "dynamic"])
@pytest.mark.parametrize("fn", CASES, ids=[f.__name__ for f in CASES])
def test_dynamic_slicing_as_eager(fn, dynamic):
    counter = CountingBackend("eager")
    _run(compile_fn(fn, backend=counter, dynamic=dynamic), fn)
    if USING_TORCH:
        return
    torch._dynamo.reset()
    try:
        theirs = _graphs(torch.compile, fn, dynamic)
    finally:
        torch._dynamo.reset()
    reset()
    assert counter.frame_count <= theirs, f"armature {counter.frame_count} graphs, torch.compile {theirs}"


@pytest.mark.skipif(USING_TORCH, reason="reads armature's graph")
def test_index_by_size_stays_symbolic():
    """``x[n]`` with n a dynamic size is ``torch.select``, not a
    specialization of n (one graph for every n)."""
    counter = CountingBackend("eager")
    compiled = compile_fn(lambda x, y: x[y.size(0)] + 1, backend=counter, dynamic=True)
    for i in range(4):
        x, y = torch.randn(20 + i, 3), torch.randn(4 + i, 2)   # (no two sizes equal: no duck sizing)
        assert_equal(x[y.size(0)] + 1, compiled(x, y))
    assert counter.frame_count == 1
    assert any(n.target is torch.select for n in counter.graphs[0].graph.nodes)
