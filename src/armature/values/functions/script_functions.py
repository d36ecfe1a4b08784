"""Functions compiled with ``torch.jit.script`` called from traced code.

A ``torch.jit.ScriptFunction`` is a C object: calling it runs TorchScript,
which the tracer cannot see into.  ``torch.jit.script(fn)`` keeps the
Python function it compiled as ``script_fn._torchdynamo_inline`` (torch
sets it so that ``torch.compile`` inlines the Python source instead: see
torch/jit/_script.py and torch/_dynamo/variables/builder.py's
``wrap_jit_function``), so a call is traced as a call of that function,
in the caller's graph.  TorchScript compiles the same source with Python's
semantics, so the traced body computes what the script computes.

Only a *scripted* function is inlined.  ``torch.jit.trace`` sets the same
attribute, but a traced function is a recording of one run: its control
flow was frozen when it was traced, and the Python function may take
another branch, so tracing the Python source could give another answer.
The two are told apart by torch's script cache, which maps each scripted
Python function to the qualified name of its ScriptFunction (a traced
function is not in it, and a name that collides is mangled).  A traced
function, or a ScriptFunction whose Python function is unknown, stays a
graph break.

Guards: the ScriptFunction's identity, and (through the function's own
wrapping) the identity of the Python function it holds.
"""
from __future__ import annotations

import types

import torch

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource

_HINT = ("a torch.jit.ScriptFunction is traced through its Python source only when it was made by "
         "torch.jit.script; call the Python function itself to trace it")


def is_script_function(obj) -> bool:
    return isinstance(obj, torch.jit.ScriptFunction)


def scripted_python_function(script_fn):
    """The Python function ``script_fn`` was scripted from, or None (a traced
    function, or one torch's script cache does not know)."""
    fn = getattr(script_fn, "_torchdynamo_inline", None)
    if type(fn) is not types.FunctionType:
        return None
    try:
        from torch.jit import _state
        cached = _state._jit_caching_layer.get(fn)
        name = script_fn.qualified_name
    except (AttributeError, TypeError, RuntimeError):
        return None
    if cached is None or cached != name or getattr(fn, "__disable_jit_function_caching__", False) is True:
        return None
    return fn


def inline_target(tx, value):
    """The Value to call in place of the ScriptFunction ``value`` (an
    ObjectValue that existed before the frame): its Python function, with
    guards on both identities."""
    from ..builder import wrap
    script_fn = value.obj
    fn = scripted_python_function(script_fn)
    if fn is None or value.source is None:
        raise Unsupported(f"calling the torch.jit.ScriptFunction {getattr(script_fn, 'qualified_name', '?')} "
                          "(implemented in C; not made by torch.jit.script)", hint=_HINT)
    tx.ctx.guards.add(Guard(Kind.ID_MATCH, value.source, script_fn))
    return wrap(tx.ctx, fn, AttrSource(value.source, "_torchdynamo_inline"))
