"""The export "backend": an armature-captured graph becomes a
``torch.export.ExportedProgram``.

torch.export's strict mode is two stages: Dynamo captures a torch-level
GraphModule (``torch.export._trace._export_to_torch_ir``), then everything
after it -- lowering to ATen through make_fx, lifting parameters and
buffers into the graph signature, restoring their names, range
constraints, the module call graph, verification -- works on that
GraphModule alone.  armature.export keeps the second stage and replaces the
first: while ``torch.export.export(mod, ..., strict=True)`` runs, the
capture function it calls is armature's (exporter/graph_module.py builds a
GraphModule of the same form: one placeholder per input leaf, a pytree
codegen with the input and output specs, parameters as ``get_attr`` of the
very same tensors, ``nn_module_stack`` on every node).  So the program,
its state_dict, signature and metadata are what torch.export itself makes
of such a graph, and every tool downstream of torch.export accepts it.

Like the other backends this module may use torch internals (it names
torch.export's private capture function, which exists under the same name
and signature in torch 2.13 and 2.14); the capture itself never runs Dynamo.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import torch

_LOCK = threading.RLock()


def constraint_violation(message: str) -> Exception:
    """torch.export's error for a violated ``dynamic_shapes`` constraint."""
    from torch._dynamo.exc import UserError, UserErrorType
    return UserError(UserErrorType.CONSTRAINT_VIOLATION, message)


def check_dynamic_shapes(mod, args: tuple, kwargs: dict, dynamic_shapes) -> None:
    """torch.export's own validation of ``dynamic_shapes`` against the inputs
    (structure, Dim names, ranges), with its error messages."""
    import torch.utils._pytree as pytree
    from torch.export.dynamic_shapes import _check_dynamic_shapes, _combine_args, _IntWrapper
    # (ints are checked as torch checks them: an int may take Dim hints)
    args, kwargs = pytree.tree_map_only(int, _IntWrapper, (args, kwargs))
    _check_dynamic_shapes(_combine_args(mod, args, kwargs), dynamic_shapes)


def export_program(mod: torch.nn.Module, args: tuple, kwargs: dict | None, dynamic_shapes,
                   capture: Callable[..., torch.fx.GraphModule]) -> Any:
    """``torch.export.export(mod, args, kwargs, dynamic_shapes=...,
    strict=True)`` with ``capture(mod, args, kwargs, dynamic_shapes)`` as its
    capture stage."""
    import torch.export._trace as export_trace

    def armature_capture(f, args, kwargs=None, dynamic_shapes=None, *, preserve_module_call_signature=(),
                         **_ignored):
        if preserve_module_call_signature:
            raise NotImplementedError("armature.export does not support preserve_module_call_signature yet")
        return capture(f, args, kwargs or {}, dynamic_shapes)

    with _LOCK:
        saved = export_trace._export_to_torch_ir
        export_trace._export_to_torch_ir = armature_capture
        try:
            return torch.export.export(mod, args, kwargs, dynamic_shapes=dynamic_shapes, strict=True)
        finally:
            export_trace._export_to_torch_ir = saved
