"""``types.MappingProxyType``: made in the frame (values/containers/mapping_proxy.py),
passed in, or read from a class ``__dict__``; reads, iteration, ``in``,
``len``, writes refused as CPython refuses them; compiled vs eager, graph
counts vs torch.compile."""
import types

import pytest
import torch

from armature import torch_compat

from helpers import assert_same, assert_same_calls, compiled_stats, compiled_with_oracle, reset, t


def made_in_the_frame(x):
    y = x.sin()
    d = {"a": 1, "b": 2}
    m = types.MappingProxyType(d)
    s = 0
    for k in m:
        s += m[k]
    d["c"] = 10                      # seen through the proxy
    out = y + s + len(m) + ("a" in m) + ("z" in m) + m.get("z", 5) + sum(m.values())
    return out.cos(), list(m.items()), list(m.keys()), m.copy(), bool(m)


def returned_from_the_frame(x):
    d = {"w": 2}
    return x * 2, types.MappingProxyType(d), d


def writes_are_refused(x):
    m = types.MappingProxyType({"a": 1})
    msgs = []
    try:
        m["a"] = 2
    except TypeError as e:
        msgs.append(str(e))
    try:
        del m["a"]
    except TypeError as e:
        msgs.append(str(e))
    try:
        m.pop("a")
    except AttributeError as e:
        msgs.append(str(e))
    return x + m["a"], msgs


def missing_key(x):
    m = types.MappingProxyType({"a": 1})
    try:
        return m["b"]
    except KeyError as e:
        return x + 1, repr(e)


def read_through(x, m):
    s = 0
    for k, v in m.items():
        s += v
    return x + s + len(m) + ("a" in m) + m["a"]


class WithAttrs:
    scale = 3
    shift = 1


def class_dict(x):
    d = WithAttrs.__dict__
    return x * d["scale"] + d["shift"] + ("scale" in d) + len([k for k in d if not k.startswith("_")])


@pytest.mark.parametrize("fn", [made_in_the_frame, returned_from_the_frame, writes_are_refused, missing_key,
                                class_dict])
def test_mapping_proxy_in_one_graph(fn):
    reset()
    assert_same(fn, t(3), fullgraph=True)


@pytest.mark.parametrize("fn", [made_in_the_frame, class_dict])
def test_graph_count_matches_torch_compile(fn):
    theirs = compiled_with_oracle(fn, t(3)).graphs
    reset()
    assert compiled_stats(fn, t(3), fullgraph=False).frame_count == 1
    if fn is class_dict and torch_compat.OLD_ORACLE:
        assert theirs <= 1   # (torch.compile before 2.13 runs this frame as Python: 0 graphs)
    else:
        assert theirs == 1


def test_passed_in_proxy_follows_its_dict():
    """A proxy passed in: its dict changes between calls (the guards see it)."""
    base = {"a": 1}
    proxy = types.MappingProxyType(base)
    reset()
    calls = [(t(3), proxy)]
    assert_same_calls(read_through, calls)
    base["a"], base["b"] = 5, 7
    assert_same_calls(read_through, [(t(3), proxy)])
