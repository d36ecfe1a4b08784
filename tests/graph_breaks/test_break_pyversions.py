"""Graph breaks at the places where CPython 3.11, 3.12 and 3.13 compile the
same source differently: inlined comprehensions (3.12+) that save, reuse and
restore a local or a closure variable's slot, zero-argument ``super()``
(3.12+ LOAD_SUPER_ATTR), closures built from cells (3.13 LOAD_FAST of a
cell), FOR_ITER leaving a loop over END_FOR (3.12+), keyword calls (3.13
CALL_KW), ``not`` and conditions on values that need TO_BOOL (3.13), slices
(3.12+ BINARY_SLICE/STORE_SLICE), f-string conversions (3.13) and the
method-call NULL (below the callable on 3.11-3.12, above it on 3.13).  The
same programs run on every supported version; each compares compiled with
eager after several calls and checks nothing ran as plain Python."""
from __future__ import annotations

import sys

import pytest
import torch

import armature

from .util import check_calls

X = torch.tensor([1.0, -2.0, 3.0])


def _x():
    return (X.clone(),)


def comprehension_restores_outer_local(x):
    i = 5
    ys = [x + (armature.graph_break() or i) for i in range(3)]
    return ys, i, x * i     # (3.11: the comprehension is a function that runs as Python)


@pytest.mark.usefixtures("split_loop_breaks")   # (3.12+: a resume function inside the inlined comprehension)
def test_comprehension_restores_outer_local_across_break():
    check_calls(comprehension_restores_outer_local, _x)


def comprehension_leaves_variable_unbound(x):
    ys = [x * j for j in range(2)]
    armature.graph_break()
    try:
        j  # noqa: F821 (unbound after the comprehension: NameError)
    except NameError:
        return ys, "unbound"
    return ys, "bound"


def test_comprehension_variable_is_not_leaked():
    check_calls(comprehension_leaves_variable_unbound, _x)


def closures_over_comprehension_variable(x):
    plain = [x * k for k in range(3)]            # k is a plain local in this one
    armature.graph_break()
    fns = [lambda v: v + k for k in range(3)]    # ...and a fresh cell per closure here
    k = 10
    late = lambda: k                             # noqa: E731 (the function's own cell)
    return plain, [f(x) for f in fns], late()


def test_closures_over_a_comprehension_variable():
    check_calls(closures_over_comprehension_variable, _x)


def break_inside_capturing_comprehension(x):
    fns = [(armature.graph_break(), lambda v: v * k)[1] for k in range(3)]
    k = -1
    return [f(x) for f in fns], k


@pytest.mark.usefixtures("split_loop_breaks")   # (3.12+: a resume function inside the inlined comprehension)
def test_break_inside_a_comprehension_that_captures_its_variable():
    check_calls(break_inside_capturing_comprehension, _x)


def break_inside_plain_comprehension_of_a_cell(x):
    ys = [x * k + (armature.graph_break() or 0) for k in range(3)]
    k = 2
    return ys, (lambda: k)(), x - k


@pytest.mark.usefixtures("split_loop_breaks")   # (3.12+: a resume function inside the inlined comprehension)
def test_break_inside_a_comprehension_reusing_a_cell_slot():
    check_calls(break_inside_plain_comprehension_of_a_cell, _x)


class Base(torch.nn.Module):
    def scale(self, x):
        return x * 2


class Child(Base):
    def scale(self, x):
        armature.graph_break()
        y = super().scale(x)          # zero-argument super after the break
        s = super()                   # and the bare super() object
        return y + s.scale(x)

    def forward(self, x):
        return self.scale(x) + 1


def test_zero_argument_super_after_a_break():
    m = Child()
    check_calls(lambda x: m(x), _x, min_graphs=2)


def closure_made_after_break(x):
    scale = 3
    armature.graph_break()

    def inner(v):
        return v * scale
    scale += 1
    return inner(x)


def test_closure_made_after_a_break():
    check_calls(closure_made_after_break, _x)


class Noisy:
    """An iterator whose __next__ breaks the graph (it prints)."""

    def __init__(self, n):
        self.i, self.n = 0, n

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        print("next", self.i)
        return self.i


def loop_over_breaking_iterator(x):
    for v in Noisy(3):
        x = x * v
    return x - 1


def test_for_loop_whose_iterator_breaks():
    check_calls(loop_over_breaking_iterator, _x)


def not_of_a_tensor(x):
    flag = not x.sum()
    if not (x.max() > 2):
        return x, flag
    return x * 2, flag


def test_not_and_conditions_on_tensors():
    check_calls(not_of_a_tensor, _x)
    check_calls(not_of_a_tensor, lambda: (torch.zeros(3),))


def _noisy_scale(x, *, by, shift=0):
    print("scaling")
    return x * by + shift


def keyword_call_of_breaking_callee(x):
    y = _noisy_scale(x, by=2, shift=1)
    return _noisy_scale(y, by=3)


def test_keyword_call_of_a_callee_that_breaks():
    check_calls(keyword_call_of_breaking_callee, _x)


def slices_across_a_break(x):
    lst = [x, x + 1, x + 2, x + 3]
    head = lst[1:3]
    armature.graph_break()
    lst[1:3] = [x * 10]
    y = x.clone()
    y[1:] = y[:2] * 2
    return head, lst, y, lst[::2]


def test_slices_across_a_break():
    check_calls(slices_across_a_break, _x)


def formatted_after_break(x):
    n = x.shape[0]
    armature.graph_break()
    return f"{n!r:>4}|{n!s}|{'é'!a}|{n:03d}|{n}", x + n


def test_fstring_conversions_after_a_break():
    check_calls(formatted_after_break, _x)


def method_call_with_break_in_arguments(x):
    parts = []
    parts.append(x.sum().item() if armature.graph_break() is None else 0)
    return x.add(len(parts)), parts


def test_method_call_whose_arguments_break():
    check_calls(method_call_with_break_in_arguments, _x)


class LoudBase(torch.nn.Module):
    @property
    def factor(self):
        print("reading factor")      # breaks the graph inside the getter
        return 3

    def shift(self, x):
        print("shifting")
        return x + 1


class LoudChild(LoudBase):
    def forward(self, x):
        y = x * 2
        f = super().factor            # 3.12+: the break is at LOAD_SUPER_ATTR itself
        return super().shift(y) * f   # ...and at its method form's CALL


@pytest.mark.skipif(sys.version_info < (3, 12), reason="3.11 has no LOAD_SUPER_ATTR: there the super object "
                    "is the operand of a LOAD_ATTR, and a super object is not handed over a break")
def test_break_exactly_at_a_super_attribute():
    m = LoudChild()
    check_calls(lambda x: m(x), _x, min_graphs=2)


# A module whose ``super`` is not the builtin: the zero-argument form calls it
# with no arguments (3.11-3.12 CALL 0; 3.12+ LOAD_SUPER_ATTR without its
# two-argument bit), so generated code must not pass it the class and object.
_SHADOWED_SOURCE = '''
import builtins
import torch
import armature

calls = []

class Base(torch.nn.Module):
    def scale(self, x):
        return x * 2

class Child(Base):
    def forward(self, x):
        armature.graph_break()
        y = super().scale(x)
        s = super()
        w = s.scale(x)
        del s                      # (a super object does not survive a break)
        armature.graph_break()
        return y + w + super().scale(x)

child = Child()

def super():
    calls.append("shadow")
    return builtins.super(Child, child)
'''


def _shadowed_super_module():
    ns = {"__name__": "shadowed_super_module"}
    exec(compile(_SHADOWED_SOURCE, "<shadowed super>", "exec"), ns)
    return ns


def test_zero_argument_super_when_super_is_shadowed():
    ns = _shadowed_super_module()
    m = ns["child"]
    eager, compiled, _ = check_calls(lambda x: m(x), _x, min_graphs=2)
    assert ns["calls"] and len(ns["calls"]) % 3 == 0   # eager and compiled: 3 per call, with no arguments


def returns_constants_after_break(x):
    x.add_(1)
    armature.graph_break()
    if x.sum() > 100:
        return None                   # 3.12+: RETURN_CONST
    x.mul_(2)
    return 7


def test_return_const_after_a_break():
    check_calls(returns_constants_after_break, _x)


class Positive:
    """``+p`` is CALL_INTRINSIC_1 (UNARY_POSITIVE) on 3.12+; it breaks."""

    def __init__(self, t):
        self.t = t

    def __pos__(self):
        print("pos")
        return self.t + 1


def intrinsics_across_breaks(x):
    a = [x, x + 1]
    armature.graph_break()
    both = (*a, *[x * 2])            # 3.12+: CALL_INTRINSIC_1 (LIST_TO_TUPLE)
    p = +Positive(x)                 # 3.12+: a break at CALL_INTRINSIC_1
    return both, p, +x


def test_call_intrinsic_1_across_breaks():
    check_calls(intrinsics_across_breaks, _x, min_graphs=2)


def comprehension_of_unbound_variable(x):
    # (3.12+: LOAD_FAST_AND_CLEAR saves the unbound k as a NULL on the stack
    # across the break inside the comprehension, and restores it unbound)
    z = x * 2
    ys = [z * k + (armature.graph_break() or 0) for k in range(3)]
    try:
        return ys, k  # noqa: F821
    except NameError:
        return ys, "unbound"


@pytest.mark.usefixtures("split_loop_breaks")   # (3.12+: a resume function inside the inlined comprehension)
def test_comprehension_over_an_unbound_variable_breaks_inside():
    check_calls(comprehension_of_unbound_variable, _x)
