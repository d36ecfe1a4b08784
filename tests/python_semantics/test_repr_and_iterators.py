"""``repr()`` of objects made in the frame (the default repr carries the
address: it must be the returned object's own) and the type of the
iterators the trace models (``type(iter(t)).__name__`` is
``tuple_iterator``; values/containers/iterator_types.py); compiled vs eager, graph
counts vs torch.compile."""
import pytest
import torch

import armature
from helpers import CountingBackend, assert_equal, compiled_stats, compiled_with_oracle, reset, t


class WithRepr:
    def __init__(self, v):
        self.v = v

    def __repr__(self):
        return f"WithRepr({self.v})"


class Plain:
    pass


class Items:
    def __init__(self, *items):
        self.items = items

    def __iter__(self):
        return iter(self.items)


def repr_of_a_custom_object(x):
    y = x.sin()
    p = WithRepr(3)
    return y.cos(), repr(p), str(p), f"{p!r}"


def repr_of_a_plain_object(x):
    y = x.sin()
    o = Plain()
    return y.cos(), o, repr(o)


def iterator_types(x):
    y = x.sin()
    it = iter(Items(1, 2, 3))
    first = next(it)
    s = 0
    for v in Items(4, 5):
        s += v
    names = [type(i).__name__ for i in (iter(Items(1)), iter((1,)), iter([1]), iter("ab"), iter(range(2)),
                                         iter({1: 2}), iter({3}), enumerate((1,)), zip((1,), (2,)),
                                         reversed([1]), reversed((1,)), map(abs, (1,)), filter(None, (1,)))]
    return (y + s + first + sum(it)).cos(), names


@pytest.mark.parametrize("fn", [repr_of_a_custom_object, iterator_types])
def test_matches_eager_in_one_graph(fn):
    reset()
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter, fullgraph=True)
    x = t(3)
    assert_equal(fn(x), compiled(x))
    assert counter.frame_count == compiled_with_oracle(fn, x).graphs == 1


def test_default_repr_is_the_returned_objects_own():
    reset()
    x = t(3)
    compiled = armature.compile(repr_of_a_plain_object, backend="eager")
    for _ in range(2):
        out, obj, text = compiled(x)
        assert_equal(repr_of_a_plain_object(x)[0], out)
        assert type(obj) is Plain and text == repr(obj)
    reset()
    assert compiled_stats(repr_of_a_plain_object, x, fullgraph=False).frame_count == \
        compiled_with_oracle(repr_of_a_plain_object, x).graphs
