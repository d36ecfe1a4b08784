"""``collections.namedtuple(...)`` called inside the compiled frame
(values/stdlib/namedtuple.py ``MadeNamedTupleClassValue``): the factory
builds its class with ``eval``/``exec`` in explicit namespaces, which was a
graph break (and a recompile on every call after it: each call's new class
failed the resume function's identity guard).  With constant arguments the
class is now made while tracing and used in the graph; where the class or
an instance leaves the frame or crosses a break, residual code makes it
anew as eager does, and a later trace guards it by how it was made.
Compared with eager (results, the per-call identity of the class) and with
torch.compile's graph count."""
from __future__ import annotations

import collections

import pytest
import torch

import armature
from helpers import USING_TORCH, CountingBackend, assert_equal, dynamo_graph_count, reset, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def run_both(fn, *args, calls=4, fullgraph=False):
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter, fullgraph=fullgraph)
    for i in range(calls):
        assert_equal(fn(*args), compiled(*args), f"call {i}")
    return counter.frame_count


def check(fn, *args, graphs=1):
    reset()
    oracle = dynamo_graph_count(fn, *args)
    assert graphs <= oracle, f"{graphs} graphs, torch.compile {oracle}"
    reset()
    assert run_both(fn, *args, fullgraph=graphs == 1) == graphs


def between_ops(x):
    y = x.sin()
    P = collections.namedtuple("P", "a b")
    p = P(y, 2)
    return p.a.cos() * p.b


def helpers_and_defaults(x):
    P = collections.namedtuple("P", ["a", "b", "c"], defaults=(3,))
    p = P(x, 2)
    q = p._replace(a=x + 1)
    r = P._make([x, 1, 1])
    return (q.a * q.b * q.c + r.a, p._asdict()["c"], P._fields, len(p), isinstance(p, tuple),
            isinstance(p, P), type(p) is P, hasattr(p, "a"), hasattr(p, "zz"), hasattr(P, "_make"))


def renamed_fields(x):
    P = collections.namedtuple("P", ["a", "def", "a"], rename=True)
    p = P(x, 1, 2)
    return p.a * p._1 + p._2, P._fields


def unpacked(x):
    Pair = collections.namedtuple("Pair", "first second")
    a, b = Pair(x.sin(), x.cos())
    return a + b


def bad_field_name(x):
    try:
        collections.namedtuple("P", ["a", "1b"])
    except ValueError as e:
        return x + 1, str(e)
    return x


@pytest.mark.parametrize("fn", [between_ops, helpers_and_defaults, renamed_fields, unpacked],
                         ids=lambda f: f.__name__)
def test_namedtuple_made_in_the_frame_one_graph(fn):
    check(fn, t(3))


def test_bad_field_name_raises_eagers_error():
    # (torch 2.13's Dynamo fails on it with an internal error)
    reset()
    assert run_both(bad_field_name, t(3), fullgraph=True) == 1


def returns_class_and_instance(x):
    P = collections.namedtuple("P", "a b")
    return P(x * 2, 2), P


def test_escaping_class_is_new_per_call_as_in_eager():
    reset()
    compiled = armature.compile(returns_class_and_instance, backend="eager", fullgraph=True)
    x = t(3)
    (p1, P1), (p2, P2) = compiled(x), compiled(x)
    e1, E1 = returns_class_and_instance(x)
    assert type(p1) is P1 and type(p2) is P2 and P1 is not P2      # eager: a class per call
    assert (P1.__name__, P1.__module__, P1._fields) == (E1.__name__, E1.__module__, E1._fields)
    assert repr(p1).startswith("P(a=tensor(") and p1.b == 2
    assert_equal(p1.a, e1.a)


def crosses_a_break(x):
    P = collections.namedtuple("P", "a b")
    p = P(x.sin(), 3)
    n = int(p.a.sum() > 0)          # data-dependent: a graph break, P and p live across it
    q = P(p.a.cos(), p.b + n)
    return q.a * q.b, type(q) is type(p), q._fields


def test_class_across_a_graph_break_does_not_recompile_per_call():
    # before: a recompile on every call (each call's class failed an identity guard)
    x = t(3)
    reset()
    oracle = dynamo_graph_count(crosses_a_break, x)
    reset()
    assert 1 <= run_both(crosses_a_break, x, calls=5) <= oracle


def test_stored_on_an_outside_object():
    class Box:
        pass

    box = Box()

    def f(x):
        P = collections.namedtuple("P", "a")
        box.cls = P
        box.value = P(x + 1)
        return x * 2

    reset()
    compiled = armature.compile(f, backend="eager", fullgraph=True)
    x = t(3)
    compiled(x)
    first = box.cls
    assert type(box.value) is box.cls and box.cls.__name__ == "P"
    compiled(x)
    assert box.cls is not first and type(box.value) is box.cls
    assert_equal(box.value.a, x + 1)
