"""``bool()``, ``len()``, iteration, indexing and ``in`` of the wrapper that
``armature.compile`` returns for a container module (issue 36, "Never
wrong": ``bool(armature.compile(nn.ModuleList()))`` was True).

The wrapper answers them as the module it wraps does (api._protocol_class).
torch.compile's wrapper (OptimizedModule) passes ``len()`` on, so its
``bool()`` and ``len()`` are the module's too: those are compared with it
(PyTorch's own test_repros.py: test_compiled_module_truthiness).  It does
not pass on iteration or indexing (TypeError); armature's wrapper does, as
the module itself does, and a wrapper of a module without the protocol
stays without it (not Sized, not Iterable, as the module).
"""
from __future__ import annotations

import collections.abc
import copy
import io

import pytest
import torch
import torch.nn as nn

import armature
from helpers import USING_TORCH, CountingBackend, assert_equal, compile_fn


def containers():
    torch.manual_seed(0)
    return {
        "empty_list": nn.ModuleList(),
        "list": nn.ModuleList([nn.Linear(3, 3), nn.ReLU()]),
        "empty_sequential": nn.Sequential(),
        "sequential": nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 2)),
        "empty_dict": nn.ModuleDict(),
        "dict": nn.ModuleDict({"a": nn.ReLU(), "b": nn.Linear(3, 3)}),
        "empty_params": nn.ParameterList(),
        "params": nn.ParameterList([nn.Parameter(torch.ones(2)), nn.Parameter(torch.zeros(3))]),
        "param_dict": nn.ParameterDict({"w": nn.Parameter(torch.ones(2))}),
        "linear": nn.Linear(3, 3),
    }


NAMES = list(containers())


def _outcome(op, obj):
    try:
        return ("ok", op(obj))
    except Exception as e:  # noqa: BLE001 - compared
        return ("raises", type(e))


def _as_items(x):
    return list(x) if isinstance(x, (collections.abc.Iterator, list)) else x


OPS = {
    "bool": bool,
    "len": len,
    "iter": lambda m: _as_items(iter(m)),
    "list": list,
    "reversed": lambda m: list(reversed(m)),
    "first": lambda m: m[0],
    "last": lambda m: m[-1],
    "slice_len": lambda m: len(m[0:1]),
    "key_a": lambda m: m["a"],
    "contains_a": lambda m: "a" in m,
    "sized": lambda m: isinstance(m, collections.abc.Sized),
    "iterable": lambda m: isinstance(m, collections.abc.Iterable),
    "container": lambda m: isinstance(m, collections.abc.Container),
}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("name", NAMES)
def test_wrapper_answers_as_the_module(name, op):
    mod = containers()[name]
    wrapped = compile_fn(mod, backend="eager")
    if USING_TORCH and op not in ("bool", "len"):
        pytest.skip("torch.compile's wrapper passes on len() only")
    expected, got = _outcome(OPS[op], mod), _outcome(OPS[op], wrapped)
    if USING_TORCH and name == "linear":
        pytest.skip("bool() of torch.compile's wrapper of a non-container raises (its __len__ always exists)")
    assert expected[0] == got[0], f"{op}: module {expected}, wrapper {got}"
    if expected[0] == "raises":
        assert got[1] is expected[1]
    else:
        assert_equal(expected[1], got[1])


@pytest.mark.parametrize("name", [n for n in NAMES if n != "linear"])
def test_bool_and_len_match_torch_compile(name):
    mod = containers()[name]
    ours = compile_fn(mod, backend="eager")
    theirs = torch.compile(mod, backend="eager")
    assert bool(ours) == bool(theirs) == bool(mod)
    assert len(ours) == len(theirs) == len(mod)


def test_truthiness_of_module_list():
    # PyTorch's test_compiled_module_truthiness
    empty = compile_fn(nn.ModuleList(), backend="eager")
    assert not bool(empty)
    filled = compile_fn(nn.ModuleList([nn.Linear(10, 5)]), backend="eager")
    assert bool(filled)


@pytest.mark.skipif(USING_TORCH, reason="torch.compile's wrapper is neither iterable nor subscriptable")
def test_wrapper_follows_changes_of_the_module():
    mod = nn.ModuleList()
    wrapped = compile_fn(mod, backend="eager")
    assert not wrapped and len(wrapped) == 0
    mod.append(nn.ReLU())
    assert wrapped and len(wrapped) == 1 and wrapped[0] is mod[0]
    wrapped.append(nn.Tanh())   # (forwarded attribute: appends to the module)
    assert len(mod) == 2 and list(wrapped) == list(mod)


def test_sequential_wrapper_still_runs_compiled():
    torch.manual_seed(0)
    mod = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    counter = CountingBackend("eager")
    wrapped = compile_fn(mod, backend=counter)
    x = torch.randn(2, 3)
    assert_equal(mod(x), wrapped(x))
    assert counter.frame_count == 1
    assert len(wrapped) == 2
    if not USING_TORCH:   # (torch.compile's wrapper is not subscriptable)
        assert wrapped[0] is mod[0]


@pytest.mark.skipif(USING_TORCH, reason="armature's wrapper: copies and pickles")
@pytest.mark.parametrize("name", ["empty_list", "sequential", "linear"])
def test_copies_and_pickles_keep_the_protocol(name):
    mod = containers()[name]
    wrapped = armature.compile(mod, backend="eager")
    buf = io.BytesIO()
    torch.save(wrapped, buf)
    buf.seek(0)
    for twin in (copy.deepcopy(wrapped), torch.load(buf, weights_only=False)):
        assert isinstance(twin, armature.CompiledModule)
        assert type(twin) is type(wrapped)
        assert bool(twin) == bool(mod)
        assert _outcome(len, twin)[0] == _outcome(len, mod)[0]
        if name != "empty_list":
            x = torch.randn(2, 3)
            assert_equal(mod(x), twin(x))


# --- a compiled container met inside compiled code --------------------------------

def uses_container(m, x):
    if m:
        for layer in m:
            x = layer(x)
    return x, len(m), bool(m)


def indexes_container(m, x):
    return m[0](x) + m[-1](x), len(m)


def dict_container(m, x):
    out = x
    for k in m:
        out = m[k](out)
    return out, "a" in m, len(m)


@pytest.mark.parametrize("fn,name", [(uses_container, "empty_list"), (uses_container, "list"),
                                     (uses_container, "sequential"), (uses_container, "empty_sequential"),
                                     (indexes_container, "list"), (dict_container, "dict"),
                                     (dict_container, "empty_dict")])
def test_compiled_container_inside_compiled_code(fn, name):
    if USING_TORCH and fn is not uses_container:
        pytest.skip("torch.compile's wrapper is neither iterable nor subscriptable")
    mod = containers()[name]
    wrapped = compile_fn(mod, backend="eager")
    x = torch.randn(2, 3)
    expected = fn(mod, x)
    counter = CountingBackend("eager")
    got = compile_fn(fn, backend=counter)(wrapped, x)
    assert_equal(expected, got)
    assert counter.frame_count <= 1


@pytest.mark.skipif(USING_TORCH, reason="armature's module_parameters setting")
def test_compiled_module_inside_compiled_code_with_parameters_as_inputs():
    # (the wrapper is guarded by its type there; the guard compared the type
    # with the wrapper itself and its description raised AttributeError)
    torch.manual_seed(0)
    mod = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    wrapped = armature.compile(mod, backend="eager")

    def fn(m, x):
        return m(x), len(m)

    with armature.config.patch(module_parameters="inputs"):
        counter = CountingBackend("eager")
        compiled = armature.compile(fn, backend=counter)
        for _ in range(3):
            x = torch.randn(2, 3)
            assert_equal(fn(mod, x), compiled(wrapped, x))
        assert counter.frame_count == 1
