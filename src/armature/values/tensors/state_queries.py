"""Queries of process state that torch's own Python code asks while it runs
(``torch.fx._symbolic_trace.is_fx_tracing()``, ``torch.onnx.is_in_onnx_export()``,
the saved-tensors-hooks and mutation-on-saved-tensors switches of
``torch.autograd.graph``, ``torch.autograd._is_checkpoint_valid()``), and
``sys.intern``.

Inlining them fails for reasons that have nothing to do with the answer
(``is_fx_tracing`` goes through an ``lru_cache``-wrapped warning helper,
``is_in_onnx_export`` imports exporter modules lazily), and every such
failure was a graph break in the middle of a library function.  Each query
here is answered while tracing and guarded by reading the same state again
on every call (a ``GLOBAL_STATE`` guard), so the answer is a constant of the
graph and a change (a model exported to ONNX later, a symbolic trace around
the compiled call) recompiles.
"""
from __future__ import annotations

import sys

import torch

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind
from ..constant import ConstantValue
from ..base import concrete


def _query(read, label: str):
    """A handler for a no-argument query answered by ``read()``."""
    def handler(tx, *args, **kwargs):
        if args or kwargs:
            raise Unsupported(f"{label} with arguments")
        try:
            value = read()
        except Exception as e:  # noqa: BLE001  (the native call raises it)
            raise Unsupported(f"{label} raised {type(e).__name__}: {e}")
        tx.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text="___f() == ___v",
                                consts={"___f": read, "___v": value}, label=f"{label} == {value!r}"))
        return ConstantValue(value)
    return handler


def _fx_tracing_flag() -> bool:
    """What ``is_fx_tracing()`` answers, without its warning helper (a
    module flag up to torch 2.14, a getter of thread-local state since)."""
    fx = torch.fx._symbolic_trace
    getter = getattr(fx, "_get_is_fx_tracing", None)
    return bool(getter()) if getter is not None else fx._is_fx_tracing_flag


def _allow_mutation_on_saved_tensors() -> bool:
    return torch.autograd.graph._allow_mutation_on_saved_tensors_enabled


def _intern(tx, *args, **kwargs):
    """``sys.intern(s)`` of a string known while tracing: the string (its
    identity is not observable through the trace's constants)."""
    if len(args) != 1 or kwargs:
        raise Unsupported("sys.intern() with other than one argument")
    s = concrete(tx, args[0])
    if not s.is_python_constant():
        raise Unsupported("sys.intern() of a string not known while tracing")
    v = s.as_python_constant()
    if type(v) is not str:
        from ...diagnostics.errors import user_error
        raise user_error(TypeError, f"intern() argument must be str, not {type(v).__name__}")
    return ConstantValue(sys.intern(v))


def register(rules: dict) -> None:
    fx = torch.fx._symbolic_trace
    rules[fx.is_fx_tracing] = _query(_fx_tracing_flag, "torch.fx._symbolic_trace.is_fx_tracing()")
    symbolic = getattr(fx, "is_fx_symbolic_tracing", None)
    if symbolic is not None:
        rules[symbolic] = _query(symbolic, "torch.fx._symbolic_trace.is_fx_symbolic_tracing()")
    rules[torch.onnx.is_in_onnx_export] = _query(torch.onnx.is_in_onnx_export, "torch.onnx.is_in_onnx_export()")
    hooks_enabled = getattr(torch._C._autograd, "_saved_tensors_hooks_is_enabled", None)
    if hooks_enabled is not None:
        rules[hooks_enabled] = _query(hooks_enabled, "torch._C._autograd._saved_tensors_hooks_is_enabled()")
    checkpoint_valid = getattr(torch.autograd, "_is_checkpoint_valid", None)
    if checkpoint_valid is not None:   # (False only inside a reentrant checkpoint's backward)
        rules[checkpoint_valid] = _query(checkpoint_valid, "torch.autograd._is_checkpoint_valid()")
    rules[sys.intern] = _intern
