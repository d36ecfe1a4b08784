"""``armature.export``: capture a whole model once and ship it as a
``torch.export.ExportedProgram``.

The capture is armature's tracer with ``fullgraph`` semantics
(exporter/capture.py), dims and ints made dynamic from torch.export's
``dynamic_shapes`` through armature's own marks and policy
(exporter/dims.py), checked afterwards against what the trace assumed
(exporter/constraints.py); the graph is rebuilt over the inputs' pytree
leaves (exporter/graph_module.py) and handed to torch.export's lowering
(backends/export_program.py).  See docs/ARCHITECTURE.md, "Export".
"""
from __future__ import annotations

import types
from typing import Any

import torch

from .capture import ExportError

__all__ = ["export", "ExportError"]


class _FunctionModule(torch.nn.Module):
    """A plain function as the module torch.export takes (its ``forward``
    is the function itself, so argument names are the function's)."""

    def __init__(self, fn):
        super().__init__()
        self.forward = fn


def export(mod_or_fn, args: tuple, kwargs: dict | None = None, *, dynamic_shapes=None,
           strict: bool = True) -> Any:
    """Capture ``mod_or_fn(*args, **kwargs)`` as a
    ``torch.export.ExportedProgram``.

    ``dynamic_shapes`` is torch.export's: a dict by argument name or a tuple
    by position, nested like the inputs, of ``torch.export.Dim`` objects,
    derived dims, ``Dim.DYNAMIC``/``Dim.AUTO``/``Dim.STATIC``.  An ``int``
    argument given ``Dim.DYNAMIC`` or ``Dim.AUTO`` is a SymInt input of the
    program; otherwise it is specialised to its example value.

    ``strict=True`` (the default) captures with armature's tracer: the whole
    call must be one graph, anything else raises :class:`ExportError` with
    the user's file:line.  ``strict=False`` is torch.export's non-strict
    tracing (Python runs natively, no armature capture).
    """
    if not isinstance(args, tuple):
        raise TypeError(f"armature.export: args must be a tuple of example inputs, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"armature.export: kwargs must be a dict, got {type(kwargs).__name__}")
    if not isinstance(strict, bool):
        raise TypeError(f"armature.export: strict must be a bool, got {strict!r}")
    mod = _as_module(mod_or_fn)
    if not strict:
        return torch.export.export(mod, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)
    from ..backends.export_program import export_program
    from .program import capture_graph_module
    return export_program(mod, args, kwargs, dynamic_shapes, capture_graph_module)


def _as_module(obj) -> torch.nn.Module:
    from ..api import CompiledFunction, CompiledModule
    if isinstance(obj, CompiledModule):
        return obj._orig_mod
    if isinstance(obj, CompiledFunction):
        obj = obj._fn if not obj._has_self else types.MethodType(obj._fn, obj._self)
    if isinstance(obj, torch.nn.Module):
        return obj
    if isinstance(obj, (types.FunctionType, types.MethodType)):
        return _FunctionModule(obj)
    raise TypeError(f"armature.export: expected an nn.Module or a Python function, got {type(obj).__name__}")
