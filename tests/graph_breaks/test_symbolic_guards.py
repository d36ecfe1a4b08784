"""Guards that do not pin a changing number: "compile, change the thing,
call again" for the symbolic kinds.

* a comparison of a symbolic number guards its *outcome* (``(n > 3) is
  False``), so new values on the same side of the comparison reuse the entry
  and crossing it recompiles once;
* ``len()`` of an outside list whose length guard failed once is read at run
  time (``len(lst)``);
* a float handed across a graph break (``.item()``) is symbolic from the first
  compile of the resume function.
"""
import torch

import armature
from helpers import CountingBackend, t


def branch_on_number(x, n):
    if n > 3:
        return x + n
    return x - 1


def test_comparison_guards_its_outcome_not_the_number():
    cf = armature.compile(branch_on_number, backend="eager")
    x = t(3)
    seen = []
    for n in [0, 1, 2, 3, 5, 6, 9, 1]:
        torch.testing.assert_close(cf(x, n), branch_on_number(x, n))
        seen.append(len(armature.cache_entries(cf)))
    # n=0: specialised; n=1: n becomes symbolic, guard (n > 3) is False;
    # 2, 3 reuse it; 5 crosses: (n > 3) is True; 6, 9 and 1 reuse the two
    assert seen == [1, 2, 2, 2, 3, 3, 3, 3], seen
    guards = [g.describe() for e in armature.cache_entries(cf) for g in e.guards]
    # n is a ShapeEnv symbol after it changed: the outcome is a relation (n <= 3 / 4 <= n)
    assert any(g in ("n <= 3", "4 <= n") for g in guards), guards


def equality_branch(x, n):
    if n == 5:
        return x * 0
    return x + 1


def test_equality_guard_outcome():
    cf = armature.compile(equality_branch, backend="eager")
    x = t(3)
    for n in [1, 2, 3, 4, 6, 7, 5, 5, 8]:
        torch.testing.assert_close(cf(x, n), equality_branch(x, n))
    assert len(armature.cache_entries(cf)) == 3


def scale_by_length(x, lst):
    lst.append(len(lst))
    return x * len(lst)


def test_length_of_growing_list_is_read_at_run_time():
    counter = CountingBackend()
    cf = armature.compile(scale_by_length, backend=counter)
    mine, ref = [], []
    x = t(3)
    for _ in range(10):
        torch.testing.assert_close(cf(x, mine), scale_by_length(x, ref))
    assert mine == ref
    assert len(armature.cache_entries(cf)) == 2
    assert counter.frame_count == 2


def test_length_guard_comes_back_when_contents_are_read():
    def first_or_zero(x, lst):
        lst.append(1)
        return x + sum(lst)   # reads every item: length and items guarded

    cf = armature.compile(first_or_zero, backend="eager")
    mine, ref = [], []
    x = t(3)
    for _ in range(4):
        torch.testing.assert_close(cf(x, mine), first_or_zero(x, ref))
    assert mine == ref


def item_then_scale(x):
    s = x.sum().item()
    return x * s


def test_float_across_a_break_is_not_specialised():
    counter = CountingBackend()
    cf = armature.compile(item_then_scale, backend=counter)
    for k in range(6):
        x = t(3) + k
        torch.testing.assert_close(cf(x), item_then_scale(x))
    # the graph before the break and the one after it, each compiled once
    assert counter.frame_count == 2, counter.frame_count


def while_counter(x, n):
    i = 0
    while i < n:
        x = x * 1.01
        armature.graph_break()
        i += 1
    return x, i


def test_loop_counter_resume_compiles_at_most_three_times():
    counter = CountingBackend()
    cf = armature.compile(while_counter, backend=counter)
    x = t(3)
    for n in (20, 20):
        got, want = cf(x, n), while_counter(x, n)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1]
    # the root, and the resume function specialised (i == 0), then symbolic
    # with the loop condition True, then False
    assert counter.frame_count <= 4, counter.frame_count


def number_helpers(x, n):
    a = min(n, 3)
    if n:
        x = x + 1
    return x * a, abs(n) > 3, -n > 3, -n, max(n, 0), abs(n)


def test_min_max_abs_neg_and_truthiness_stay_symbolic():
    cf = armature.compile(number_helpers, backend="eager")
    for n in [0, 1, 2, 5, -4, 3, 0, 7, -1, 8, 9]:
        x = t(2)
        want, got = number_helpers(x, n), cf(x, n)
        torch.testing.assert_close(got[0], want[0])
        assert got[1:] == want[1:], (n, got, want)
    # n = 0 specialised, then symbolic: ``if n`` true, and false again at 0
    assert len(armature.cache_entries(cf)) <= 3


def negate_float(x, s):
    return x * -s, -s, abs(s)


def test_negated_float_keeps_its_sign():
    cf = armature.compile(negate_float, backend="eager")
    for s in [0.0, 1.0, 0.0, -0.0, 2.5, -0.0]:
        x = t(2)
        want, got = negate_float(x, s), cf(x, s)
        torch.testing.assert_close(got[0], want[0])
        assert repr(got[1:]) == repr(want[1:]), (s, got, want)


def guarded_division(x, n):
    y = 10 // n          # unused, but eager raises here for n == 0
    return x + 1


def test_unused_division_still_raises_for_zero():
    import pytest
    cf = armature.compile(guarded_division, backend="eager")
    x = t(2)
    for n in (1, 2, 3):
        torch.testing.assert_close(cf(x, n), x + 1)
    with pytest.raises(ZeroDivisionError):
        cf(x, 0)


def scale(x, n):
    return x * 2, n


def test_nan_and_inf_constants_are_guarded_by_value_not_identity():
    import math
    cf = armature.compile(scale, backend="eager")
    for _ in range(4):
        assert math.isnan(cf(t(2), float("nan"))[1])   # a new nan object each call
    assert len(armature.cache_entries(cf)) == 1
    assert cf(t(2), float("inf"))[1] == float("inf")
    assert cf(t(2), float("-inf"))[1] == float("-inf")
    assert cf(t(2), 1.5)[1] == 1.5
