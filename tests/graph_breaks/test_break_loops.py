"""Graph breaks inside for/while loops: the loop continues after the break,
results stay right for many iterations (no recursion-limit trouble: resume
functions are tail-called), and the number of graphs does not grow with the
iteration count."""
import sys

import pytest
import torch

import armature
from helpers import assert_same, t, tpos

from .util import explain_fresh

# the resume machinery inside loops (torch.compile would run these frames as Python)
pytestmark = pytest.mark.usefixtures("split_loop_breaks")


def for_range_break(x, n):
    for i in range(n):
        x = x + 1
        armature.graph_break()
        x = x * 0.99
    return x


def for_range_print(x, n):
    for i in range(n):
        x = x.sin() + i
        if i % 100 == 0:
            print("iteration", i)
    return x


def for_list_break(xs):
    acc = xs[0] * 0
    for x in xs:
        acc = acc + x.cos()
        armature.graph_break()
        acc = acc * 0.5
    return acc


def while_counter_break(x, n):
    i = 0
    while i < n:
        x = x * 1.001 + 0.01
        armature.graph_break()
        i += 1
    return x, i


def while_true_with_break(x, n):
    i = 0
    while True:
        x = x + 0.5
        armature.graph_break()
        i += 1
        if i >= n:
            break
    return x


def for_accumulate_python(x, n):
    total = 0
    log = []
    for i in range(n):
        armature.graph_break()
        total += i
        if i % 50 == 0:
            log.append(i)
    return x * total, log


def for_two_breaks_per_iteration(x, n):
    for i in range(n):
        x = x + 1
        armature.graph_break()
        x = x * 0.5
        armature.graph_break()
        x = x - 0.25
    return x


def for_item_in_loop(x, n):
    s = 0.0
    for i in range(n):
        s += (x * i).sum().item()
    return x + s


@pytest.mark.parametrize("n", [0, 1, 3, 300])
def test_for_range_break(n):
    assert_same(for_range_break, t(4), n, fullgraph=False)


@pytest.mark.parametrize(
    "fn,args",
    [
        (for_range_print, (t(3), 300)),
        (for_list_break, ([t(3) for _ in range(300)],)),
        (while_counter_break, (t(3), 300)),
        (while_true_with_break, (t(3), 300)),
        (for_accumulate_python, (t(3), 300)),
        (for_two_breaks_per_iteration, (t(3), 300)),
        (for_item_in_loop, (t(3), 50)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_many_iterations(fn, args):
    assert_same(fn, *args, fullgraph=False)


def test_more_iterations_than_the_recursion_limit():
    n = sys.getrecursionlimit() + 200
    assert_same(for_range_break, t(2), n, fullgraph=False)
    assert_same(while_counter_break, t(2), n, fullgraph=False)


GROWTH_CASES = [
    pytest.param(for_range_break, lambda n: (t(3), n), id="for_range_break"),
    pytest.param(for_list_break, lambda n: ([t(3) for _ in range(n)],), id="for_list_break"),
    pytest.param(for_two_breaks_per_iteration, lambda n: (t(3), n), id="for_two_breaks_per_iteration"),
    pytest.param(while_counter_break, lambda n: (t(3), n), id="while_counter_break"),
    pytest.param(while_true_with_break, lambda n: (t(3), n), id="while_true_with_break"),
    pytest.param(for_range_print, lambda n: (t(3), n), id="for_range_print_once"),
]


@pytest.mark.parametrize("fn,make_args", GROWTH_CASES)
def test_graph_count_does_not_grow_with_iterations(fn, make_args):
    e3 = explain_fresh(fn, *make_args(3))
    e30 = explain_fresh(fn, *make_args(30))
    assert not e3.fallbacks and not e30.fallbacks, (e3.fallbacks, e30.fallbacks)
    assert e3.graph_count >= 2, str(e3)
    assert e30.graph_count <= e3.graph_count + 1, f"3 iterations:\n{e3}\n\n30 iterations:\n{e30}"


@pytest.mark.parametrize("fn,make_args", GROWTH_CASES + [
    pytest.param(for_accumulate_python, lambda n: (t(3), n), id="for_accumulate_python"),
])
def test_loop_never_hits_the_recompile_limit(fn, make_args):
    import warnings
    cf = armature.compile(fn, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = cf(*make_args(30))
    limit = [str(w.message) for w in caught if "recompile limit" in str(w.message)]
    assert not limit, limit
    assert got is not None


def test_cached_loop_compiles_nothing_new():
    from helpers import CountingBackend
    counter = CountingBackend()
    cf = armature.compile(for_range_break, backend=counter)
    x = t(3)
    torch.testing.assert_close(cf(x, 10), for_range_break(x, 10))
    first = counter.frame_count
    torch.testing.assert_close(cf(x, 10), for_range_break(x, 10))
    assert counter.frame_count == first
    torch.testing.assert_close(cf(x, 40), for_range_break(x, 40))
    assert counter.frame_count <= first + 1  # at most the entry, for n == 40


def test_break_in_loop_over_grad_tensors():
    """Gradients flow through graphs split inside a loop."""
    def fn(w, xs):
        acc = w * 0
        for x in xs:
            acc = acc + (w * x).tanh()
            armature.graph_break()
            acc = acc * 0.9
        return acc.sum()

    assert_same(fn, t(3, requires_grad=True), [tpos(3) for _ in range(20)], fullgraph=False, check_grad=True)
