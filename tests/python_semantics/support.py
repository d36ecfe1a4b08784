"""Shared helpers for the Python-semantics differential suite.

* :func:`run_case` -- validates a test program against eager Python first
  (it must run without raising, or must raise for ``raises=True``), then runs
  :func:`helpers.assert_same` on it.
* :func:`assert_same_objects` -- like ``assert_same`` for programs whose
  inputs are user-defined objects.  ``helpers.deep_copy`` treats such objects
  as opaque (the eager and the compiled run would share and mutate one
  object), so here the inputs come from a *factory* called afresh for every
  run, and objects are compared by :func:`obj_equal` (same type, same
  ``vars()`` / ``__slots__`` recursively, tensors with assert_close).
* :func:`xfail` -- the mark for a case that fails because of an armature bug
  or missing feature (strict, so a fix shows up as XPASS).
"""

from __future__ import annotations

import types

import pytest
import torch

from helpers import CountingBackend, assert_equal, assert_same, compile_fn, deep_copy

HARNESS_KEYS = {
    "backend",
    "fullgraph",
    "graphs",
    "ops",
    "check_grad",
    "check_aliasing",
    "check_strides",
    "exc_match",
    "rtol",
    "atol",
}


def xfail(reason: str):
    return pytest.mark.xfail(strict=True, reason=f"armature: {reason}")


def split_opts(opts):
    harness = {k: v for k, v in opts.items() if k in HARNESS_KEYS}
    fn_kwargs = {k: v for k, v in opts.items() if k not in HARNESS_KEYS}
    return harness, fn_kwargs


def check_program(fn, args, fn_kwargs, raises=False):
    """The test program itself must be valid Python: run it eagerly (twice,
    to check it is deterministic) and check it raises only when expected."""
    name = getattr(fn, "__name__", type(fn).__name__)
    outs = []
    for _ in range(2):
        a, k = deep_copy((args, fn_kwargs))
        try:
            outs.append(fn(*a, **k))
        except Exception as e:  # noqa: BLE001
            if not raises:
                raise AssertionError(f"test program {name} raised in eager: {e!r}") from e
            outs.append((type(e), str(e)))
        else:
            if raises:
                raise AssertionError(f"test program {name} did not raise in eager")
    assert_equal(outs[0], outs[1], f"{name}: eager result is not deterministic")


def run_case(fn, args, opts, default_graphs=None, raises=False):
    harness, fn_kwargs = split_opts(opts)
    check_program(fn, args, fn_kwargs, raises=raises)
    if raises:
        harness.setdefault("exc_match", "exact")
        harness.setdefault("fullgraph", False)
    if default_graphs is not None and "graphs" not in harness:
        harness["graphs"] = default_graphs
    return assert_same(fn, *args, **harness, **fn_kwargs)


# --------------------------------------------------------------------------
# object-aware comparison
# --------------------------------------------------------------------------


def _state(obj):
    state = {}
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        state.update(vars(obj))
    for klass in type(obj).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if slot in ("__dict__", "__weakref__"):
                continue
            if hasattr(obj, slot):
                state[slot] = getattr(obj, slot)
    return state


def obj_equal(expected, actual, path="out"):
    """Structural equality that understands user objects: same type and the
    same attribute state, recursively; everything else via assert_equal."""
    if isinstance(expected, (torch.Tensor, torch.nn.Module)) or expected is None:
        assert_equal(expected, actual, path)
        return
    if isinstance(expected, types.FunctionType):
        # functions made afresh by each run: same code is the same function
        assert isinstance(actual, types.FunctionType), f"{path}: expected a function, got {actual!r}"
        assert actual.__code__ is expected.__code__, f"{path}: {actual!r} != {expected!r}"
        return
    if isinstance(expected, (list, tuple)) and not isinstance(expected, torch.Size):
        assert type(actual) is type(expected), f"{path}: type {type(actual)} != {type(expected)}"
        assert len(actual) == len(expected), f"{path}: len {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            obj_equal(e, a, f"{path}[{i}]")
        return
    if isinstance(expected, dict):
        assert type(actual) is type(expected), f"{path}: type {type(actual)} != {type(expected)}"
        assert list(actual) == list(expected), f"{path}: keys {list(actual)} != {list(expected)}"
        for k in expected:
            obj_equal(expected[k], actual[k], f"{path}[{k!r}]")
        return
    if isinstance(expected, (set, frozenset)):
        assert type(actual) is type(expected) and actual == expected, f"{path}: {actual!r} != {expected!r}"
        return
    cls = type(expected)
    if cls.__module__ not in ("builtins", "torch") and (
        hasattr(expected, "__dict__") or getattr(cls, "__slots__", None)
    ) and not isinstance(expected, type) and not callable(expected):
        assert type(actual) is cls, f"{path}: type {type(actual).__qualname__} != {cls.__qualname__}"
        es, as_ = _state(expected), _state(actual)
        assert sorted(as_) == sorted(es), f"{path}: attributes {sorted(as_)} != {sorted(es)}"
        for k in es:
            obj_equal(es[k], as_[k], f"{path}.{k}")
        return
    assert_equal(expected, actual, path)


def assert_same_objects(fn, make_args, graphs=None, fullgraph=True, raises=False, exc_match="exact"):
    """Compile ``fn`` once; call it twice, each time on fresh inputs from
    ``make_args()`` (a tuple of positional args), against eager on its own
    fresh inputs.  Compares results, raised exceptions and the inputs after
    the call (attribute writes/deletes on passed-in objects) with
    :func:`obj_equal`."""
    counter = CountingBackend("eager")
    compiled = compile_fn(fn, backend=counter, fullgraph=fullgraph)
    for call in (1, 2):
        e_args, c_args = make_args(), make_args()
        try:
            expected, e_exc = fn(*e_args), None
        except Exception as e:  # noqa: BLE001
            expected, e_exc = None, e
        if raises:
            assert e_exc is not None, f"test program {fn.__name__} did not raise in eager"
        else:
            assert e_exc is None, f"test program {fn.__name__} raised in eager: {e_exc!r}"
        try:
            got, c_exc = compiled(*c_args), None
        except Exception as e:  # noqa: BLE001
            if e_exc is None:
                raise AssertionError(f"call #{call}: compiled raised {e!r} but eager did not") from e
            got, c_exc = None, e
        if e_exc is not None:
            assert c_exc is not None, f"call #{call}: eager raised {e_exc!r}, compiled did not"
            assert type(c_exc) is type(e_exc), f"call #{call}: raised {type(c_exc)!r}, eager {type(e_exc)!r}"
            if exc_match == "exact":
                assert str(c_exc) == str(e_exc), f"call #{call}: message {str(c_exc)!r} != {str(e_exc)!r}"
        else:
            obj_equal(expected, got, f"out (call #{call})")
        obj_equal(list(e_args), list(c_args), f"inputs after call #{call}")
    if graphs is not None:
        assert counter.frame_count == graphs, f"captured {counter.frame_count} graphs, expected {graphs}"


def stdout_of_calls(fn, make_args, capsys, n=2):
    """Run ``fn`` ``n`` times on fresh inputs; return (results, stdout)."""
    capsys.readouterr()
    results = [fn(*make_args()) for _ in range(n)]
    return results, capsys.readouterr().out
