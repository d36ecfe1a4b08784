"""``hasattr`` / ``getattr`` on builtin containers (dicts above all): an
attribute their type lacks is CPython's AttributeError (values/containers/
containers.py ``container_attribute``), so ``hasattr(d, "foo")`` is False
and ``getattr(d, "foo", default)`` is the default, as in eager, in one graph
as torch.compile makes.  Before, every attribute of a dict, list, tuple or
set read as a method: ``hasattr({}, "foo")`` was True (a wrong answer)."""
from __future__ import annotations

import collections

import pytest
import torch

from helpers import USING_TORCH, assert_same, dynamo_graph_count, reset, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


#: torch 2.13's Dynamo runs these frames as Python (no graph at all)
DYNAMO_FALLS_BACK = {"attribute_error_caught"}


def check(fn, *args, graphs=1):
    reset()
    oracle = dynamo_graph_count(fn, *args)
    if fn.__name__ in DYNAMO_FALLS_BACK:
        assert oracle == 0
    else:
        assert graphs <= oracle, "more graphs than torch.compile"
    reset()
    assert_same(fn, *args, graphs=graphs)


def dict_made_in_frame(x):
    d = {"a": x}
    return x + hasattr(d, "keys") + hasattr(d, "foo") * 10 + hasattr(d, "a") * 100


def dict_passed_in(x, d):
    return x + hasattr(d, "items") + hasattr(d, "foo") * 10 + hasattr(d, "x") * 100


def dict_protocol_checks(x):
    d = {}
    if hasattr(d, "__getitem__") and not hasattr(d, "__missing__") and not hasattr(d, "__name__"):
        return x + 1
    return x - 1


def getattr_default(x, d):
    return x * getattr(d, "scale", 3), getattr(d, "get")("a", 0) + 1


def ordered_and_default_dicts(x):
    od = collections.OrderedDict(a=1)
    dd = collections.defaultdict(list)
    return (x + hasattr(od, "move_to_end") + hasattr(od, "zz") * 10
            + hasattr(dd, "default_factory") * 100 + hasattr(dd, "zz") * 1000)


def sequences_and_sets(x):
    xs = [x, x]
    tup = (x, 1)
    s = {1, 2}
    fs = frozenset({1})
    return (x + hasattr(xs, "append") + hasattr(xs, "foo") * 2 + hasattr(tup, "append") * 4
            + hasattr(tup, "count") * 8 + hasattr(s, "add") * 16 + hasattr(fs, "add") * 32
            + hasattr(s, "nope") * 64)


def dict_views(x):
    d = {"a": x}
    return x + hasattr(d.keys(), "isdisjoint") + hasattr(d.values(), "isdisjoint") * 10 + hasattr(d.items(), "x") * 100


def attribute_error_caught(x):
    d = {"a": 1}
    try:
        d.a
    except AttributeError as e:
        return x + 1, str(e)
    return x


@pytest.mark.parametrize("fn", [dict_made_in_frame, dict_protocol_checks, ordered_and_default_dicts,
                                sequences_and_sets, dict_views, attribute_error_caught],
                         ids=lambda f: f.__name__)
def test_attributes_of_containers_made_in_the_frame(fn):
    check(fn, t(3))


@pytest.mark.parametrize("d", [{"a": 1}, {"x": 1, "foo": 2}, {}], ids=["a", "x-foo", "empty"])
def test_hasattr_on_a_dict_passed_in(d):
    check(dict_passed_in, t(3), d)


def test_getattr_default_on_a_dict():
    check(getattr_default, t(3), {"a": 2})


def to_or_items(x):
    # (PyTorch's test_dict_hasattr: a dict has no ``to``, so the second branch runs)
    if hasattr(x, "to"):
        return x.to("cpu")
    if hasattr(x, "items"):
        return torch.cos(x["a"])
    return x


def test_dict_or_tensor_by_hasattr():
    from helpers import assert_same_calls
    reset()
    assert_same_calls(to_or_items, [({"a": t(3)},), (t(4),), ({"a": t(3)},)], fullgraph=True, graphs=2)
