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


def test_break_inside_a_comprehension_that_captures_its_variable():
    check_calls(break_inside_capturing_comprehension, _x)


def break_inside_plain_comprehension_of_a_cell(x):
    ys = [x * k + (armature.graph_break() or 0) for k in range(3)]
    k = 2
    return ys, (lambda: k)(), x - k


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
