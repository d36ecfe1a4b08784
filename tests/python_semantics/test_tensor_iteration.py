"""Iterating over a tensor (issue #36, item 3).

``Tensor.__iter__`` returns ``iter(t.unbind(0))``, a tuple_iterator over
the rows.  ``t.__iter__()`` and ``torch.Tensor.__iter__(t)`` ran the
method on fake tensors and gave up on the tuple_iterator it returned;
``type(iter(t))`` said list_iterator; ``reversed(t)`` (``Tensor.__reversed__``
is ``t.flip(0)``) gave an iterator over the rows instead of a tensor, and
``reversed()`` of a user object ignored its ``__reversed__``; iterating a
0-d tensor was not eager's TypeError.  Each form is compared with eager
(results, gradients) and its graph count with torch.compile's.
"""
from __future__ import annotations

import collections.abc

import pytest
import torch

import armature
from helpers import USING_TORCH, CountingBackend, assert_equal, dynamo_graph_count, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def for_loop(x):
    s = 0
    for row in x:
        s = s + row
    return s


def unpack_two(x):
    a, b = x
    return a * b


def star_unpack(x):
    first, *rest = x
    return first, torch.stack(rest)


def list_of(x):
    return list(x)[1] + 1


def next_of_iter(x):
    return next(iter(x)) * 2


def iter_twice(x):
    it = iter(x)
    return next(it), next(it), list(it)


def dunder_iter(x):
    return next(x.__iter__()) + 1


def tensor_dunder_iter(x):
    return next(torch.Tensor.__iter__(x)) + 1


def iterator_type(x):
    return type(iter(x)).__name__, isinstance(iter(x), collections.abc.Iterator), x + 1


def iterator_of_iterator(x):
    it = iter(x)
    return iter(it) is it, next(it)


def zip_enumerate_map(x):
    return [a + b * i for i, (a, b) in enumerate(zip(x, map(lambda r: r * 2, x)))]


def reduce_builtins(x):
    return sum(x), tuple(x), sorted(x, key=lambda r: 0)[0]


def reversed_tensor(x):
    return reversed(x) * 2


def dunder_reversed(x):
    return x.__reversed__() + torch.Tensor.__reversed__(x)


def reversed_zero_d(x):
    return reversed(x.sum())


def returned_iterator(x):
    it = iter(x)
    next(it)
    return it


CASES = [for_loop, unpack_two, star_unpack, list_of, next_of_iter, iter_twice, dunder_iter, tensor_dunder_iter,
         iterator_type, iterator_of_iterator, zip_enumerate_map, reduce_builtins, reversed_tensor, dunder_reversed,
         reversed_zero_d]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("fullgraph", [False, True], ids=["breaks", "fullgraph"])
def test_iterating_over_a_tensor(fn, fullgraph):
    x = t(2, 3)
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter, fullgraph=fullgraph)
    for _ in range(2):
        assert_equal(fn(x), compiled(x))
    assert counter.frame_count == dynamo_graph_count(fn, x) == 1
    (entry,) = armature.cache_entries(compiled)
    assert not entry.is_fallback and entry.graph_break is None


def test_a_returned_iterator_is_a_tuple_iterator_over_the_rest():
    x = t(3, 2)
    it = armature.compile(returned_iterator, backend="eager", fullgraph=True)(x)
    assert type(it) is type(returned_iterator(x))
    assert_equal(list(returned_iterator(x)), list(it))


@pytest.mark.aot_eager
@pytest.mark.parametrize("fn", [for_loop, unpack_two, star_unpack, reversed_tensor, dunder_reversed],
                         ids=lambda f: f.__name__)
def test_gradients_through_the_rows(fn):
    x = t(2, 3, requires_grad=True)
    e = x.detach().clone().requires_grad_()

    def loss(out):
        outs = out if isinstance(out, tuple) else (out,)
        return sum(o.sum() for o in outs)
    loss(fn(e)).backward()
    loss(armature.compile(fn, backend="aot_eager", fullgraph=True)(x)).backward()
    assert_equal(e.grad, x.grad)


def zero_d(x):
    for v in x.sum():
        return v
    return x


@pytest.mark.parametrize("fullgraph", [False, True], ids=["breaks", "fullgraph"])
def test_iterating_a_zero_d_tensor_raises_as_eager(fullgraph):
    x = t(3)
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        zero_d(x)
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        armature.compile(zero_d, backend="eager", fullgraph=fullgraph)(x)


def test_iterating_a_dynamic_dimension_specializes_it():
    x = t(4, 2)
    counter = CountingBackend("eager")
    compiled = armature.compile(for_loop, backend=counter, dynamic=True)
    for n in (4, 5, 4):
        x = t(n, 2)
        assert_equal(for_loop(x), compiled(x))
    assert len(armature.cache_entries(compiled)) == 2


class Countdown:
    def __init__(self, x):
        self.x = x

    def __iter__(self):
        return iter([self.x, self.x + 1])

    def __reversed__(self):
        return iter([self.x * 10])


class NotReversible(Countdown):
    __reversed__ = None


def reversed_object(o):
    return list(reversed(o)), list(o)


def test_reversed_calls_the_objects_own_reversed():
    o = Countdown(t(2))
    counter = CountingBackend("eager")
    assert_equal(reversed_object(o), armature.compile(reversed_object, backend=counter, fullgraph=True)(o))
    assert counter.frame_count == 1


def test_reversed_of_an_object_that_refuses_it_raises_as_eager():
    o = NotReversible(t(2))
    with pytest.raises(TypeError, match="not reversible"):
        reversed_object(o)
    with pytest.raises(TypeError, match="not reversible"):
        armature.compile(reversed_object, backend="eager", fullgraph=True)(o)
