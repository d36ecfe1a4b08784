"""Errors of armature's own machinery never reach the user.

Without the strict switch, an internal error while tracing or compiling makes
the frame run as Python (logged under ARMATURE_LOGS=fallbacks); with
fullgraph=True it is an armature.Unsupported naming it; the test suite runs
with ARMATURE_STRICT_INTERNAL_ERRORS=1 (tests/conftest.py), under which it
propagates as InternalError and fails the test.
"""
import logging

import pytest
import torch

import armature
from armature.diagnostics.errors import InternalError
from armature import pyversion
from armature.values.functions import functions as functions_mod


def f(x, n):
    return x * n + 1


@pytest.fixture
def broken_binary_op(monkeypatch):
    """Make the BINARY_OP handler fail the way a bug would (a KeyError)."""
    def broken(frame, inst):
        raise KeyError("a table armature forgot to fill")
    monkeypatch.setitem(pyversion.HANDLERS, "BINARY_OP", broken)


@pytest.fixture
def lenient(monkeypatch):
    monkeypatch.setenv("ARMATURE_STRICT_INTERNAL_ERRORS", "0")


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("ARMATURE_STRICT_INTERNAL_ERRORS", "1")


def test_internal_tracing_error_runs_the_frame_as_python(broken_binary_op, lenient, caplog):
    cf = armature.compile(f, backend="eager")
    x = torch.ones(3)
    with caplog.at_level(logging.DEBUG, logger="armature.fallbacks"):
        torch.testing.assert_close(cf(x, 2), f(x, 2))
    torch.testing.assert_close(cf(x, 2), f(x, 2))
    (entry,) = armature.cache_entries(cf)
    assert entry.is_fallback and "internal error" in entry.fallback_reason
    assert "KeyError" in entry.fallback_reason
    # never reported as a graph break
    assert entry.graph_break is None
    assert any("internal error" in r.getMessage() for r in caplog.records)


def test_internal_tracing_error_with_fullgraph_is_unsupported(broken_binary_op, lenient):
    cf = armature.compile(f, backend="eager", fullgraph=True)
    with pytest.raises(armature.Unsupported, match="internal error"):
        cf(torch.ones(3), 2)


def test_internal_tracing_error_is_loud_under_the_strict_switch(broken_binary_op):
    cf = armature.compile(f, backend="eager")
    with pytest.raises(InternalError, match="KeyError"):
        cf(torch.ones(3), 2)


def test_internal_error_after_tracing_falls_back(monkeypatch, lenient):
    # an error in code generation (after the frame was traced)
    from armature.driver import compile_frame

    def broken(*a, **k):
        raise AttributeError("codegen bug")
    monkeypatch.setattr(compile_frame, "build_transformed", broken)
    cf = armature.compile(f, backend="eager")
    x = torch.ones(3)
    torch.testing.assert_close(cf(x, 3), f(x, 3))
    (entry,) = armature.cache_entries(cf)
    assert entry.is_fallback and "codegen bug" in entry.fallback_reason


def test_internal_error_after_tracing_is_loud_under_the_strict_switch(monkeypatch):
    from armature.driver import compile_frame

    def broken(*a, **k):
        raise AttributeError("codegen bug")
    monkeypatch.setattr(compile_frame, "build_transformed", broken)
    with pytest.raises(InternalError, match="codegen bug"):
        armature.compile(f, backend="eager")(torch.ones(3), 3)


def _helper(x):
    return x + 1


def uses_hasattr(x):
    # if armature wrongly said the function has no __name__, eager's branch
    # would not be taken: the program must never see armature's gap
    if hasattr(_helper, "__name__"):
        return x * 2
    return x - 100


@pytest.fixture
def function_model_without_name(monkeypatch):
    """A gap in armature's object model: a function without __name__."""
    from armature.diagnostics.errors import user_error
    original = functions_mod.UserFunctionValue.getattr

    def getattr_(self, tx, name):
        if name == "__name__":
            raise user_error(AttributeError, f"'function' object has no attribute {name!r}")
        return original(self, tx, name)
    monkeypatch.setattr(functions_mod.UserFunctionValue, "getattr", getattr_)


def test_modelled_attribute_error_for_a_real_attribute_is_internal(function_model_without_name, lenient):
    cf = armature.compile(uses_hasattr, backend="eager")
    x = torch.ones(2)
    torch.testing.assert_close(cf(x), uses_hasattr(x))
    (entry,) = armature.cache_entries(cf)
    assert entry.is_fallback and "has no attribute '__name__'" in entry.fallback_reason


def test_modelled_attribute_error_for_a_real_attribute_is_loud(function_model_without_name):
    with pytest.raises(InternalError, match="__name__"):
        armature.compile(uses_hasattr, backend="eager")(torch.ones(2))


def test_real_attribute_errors_are_still_the_programs():
    def g(x):
        try:
            _helper.no_such_attribute
        except AttributeError:
            return x + 5
        return x

    cf = armature.compile(g, backend="eager", fullgraph=True)
    torch.testing.assert_close(cf(torch.ones(2)), g(torch.ones(2)))
