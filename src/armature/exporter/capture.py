"""Capture a whole call in one armature graph, for export.

The trace is armature's own, with ``fullgraph`` semantics (anything that
would be a graph break or a fallback is an error): the root frame runs the
module's ``forward`` (or the function) on the example inputs, with the dims
``dynamic_shapes`` names marked through runtime/marks.py and the ints it
names made symbols through the dynamic policy.  What comes out is a
:class:`Capture`: the OutputGraph, the returned Value, and the residual
code that rebuilds the result from the graph's outputs.

Nothing here lowers anything: graph_module.py turns a Capture into the
torch-level GraphModule torch.export lowers to ATen.
"""
from __future__ import annotations

import inspect
import types
from dataclasses import dataclass
from typing import Any

import torch

from .. import config as config_mod
from ..codegen.emitter import Emitter
from ..codegen.exit import emit_return
from ..diagnostics.errors import (ArmatureError, InternalError, Unsupported, UserException,
                                 strict_internal_errors)
from ..graph.dynamic import DynamicPolicy
from ..trace.context import TraceContext, compiling_state
from . import dims


class ExportError(Unsupported):
    """A call that armature.export cannot capture as one program."""


@dataclass
class Capture:
    fn: types.FunctionType
    #: the arguments the root frame was called with (``self`` first for a module)
    call_args: tuple
    kwargs: dict
    ctx: TraceContext
    body: Emitter
    result: Any
    specs: dims.InputSpecs
    #: id(submodule) -> qualified name
    module_names: dict


def traced_function(obj) -> tuple[types.FunctionType, tuple]:
    """(function whose bytecode is traced, leading arguments): a module's
    ``forward`` (an instance-patched one wins) with the module as ``self``,
    or a plain function."""
    if isinstance(obj, torch.nn.Module):
        fwd = obj.__dict__.get("forward")
        if fwd is None:
            fwd = inspect.getattr_static(type(obj), "forward")
            if isinstance(fwd, types.FunctionType):
                return fwd, (obj,)
        if isinstance(fwd, types.MethodType) and isinstance(fwd.__func__, types.FunctionType):
            return fwd.__func__, (fwd.__self__,)
        if isinstance(fwd, types.FunctionType):
            return fwd, ()
        raise ExportError(f"armature.export: {type(obj).__name__}.forward is not a Python function ({fwd!r})")
    if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
        return obj.__func__, (obj.__self__,)
    if isinstance(obj, types.FunctionType):
        return obj, ()
    raise TypeError(f"armature.export: expected an nn.Module or a Python function, got {type(obj).__name__}")


def signature_function(obj):
    """What ``dynamic_shapes`` names arguments after (torch.export binds to
    ``forward``)."""
    return obj.forward if isinstance(obj, torch.nn.Module) else obj


def capture(obj, args: tuple, kwargs: dict, dynamic_shapes) -> Capture:
    """Trace ``obj(*args, **kwargs)`` into one graph or raise ExportError."""
    fn, lead = traced_function(obj)
    if fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        raise ExportError(f"armature.export: {fn.__qualname__} is a generator or coroutine function")
    specs = dims.parse(signature_function(obj), args, kwargs, dynamic_shapes)
    root = lead[0] if lead and isinstance(lead[0], torch.nn.Module) else None
    names: dict[int, str] = {}
    if root is not None:
        for name, m in root.named_modules(remove_duplicate=False):
            if name:
                names.setdefault(id(m), name)
    call_args = (*lead, *args)
    policy = DynamicPolicy(mode=None, auto_ints=specs.int_sources())
    from ..driver.compile_frame import _root_frame
    with dims.marked(specs), config_mod.patch(module_parameters="attributes"), compiling_state():
        ctx = TraceContext(fn, config_mod.config, fullgraph=True)
        ctx.policy = policy
        ctx.graph.module_names = names
        ctx.graph.fake_mode.export = True   # (as Dynamo's fake mode is under export)
        body = Emitter()
        body.lineno = fn.__code__.co_firstlineno
        try:
            try:
                frame = _root_frame(ctx, fn, call_args, kwargs)
                result = frame.run()
                if frame.stopped_at_break or result is None:
                    raise Unsupported("the frame stopped before returning")
                emit_return(ctx, body, result)
            finally:
                ctx.restore_global_state()
        except UserException as e:
            raise _export_error(fn, e, f"the code raises {e.what}",
                                "the example inputs make the program raise; export it with inputs it runs on") from None
        except Unsupported as e:
            raise _export_error(fn, e, e.what, e.hint) from None
        except ArmatureError:
            raise
        except Exception as e:   # armature's own error: never a partial program
            what = f"{type(e).__name__} while tracing {fn.__qualname__}: {e}"
            if strict_internal_errors():
                raise InternalError(what) from e
            raise ExportError(f"armature.export: internal error: {what}",
                              hint="this is a bug in armature, not in your code") from e
    _check_effects(fn, ctx)
    return Capture(fn, call_args, kwargs, ctx, body, result, specs, names)


def _check_effects(fn, ctx) -> None:
    """Python side effects are not part of an exported program (as in
    torch.export).  Harmless ones (a contextvar set and reset, the call's
    own argument containers) are dropped with a warning; one that stores a
    tensor or a dynamic number into Python state is refused: the program
    could not reproduce it, and the one run that builds the outputs would
    leave a fake value there."""
    import warnings
    from .. import effects as fx
    from ..guards.sources import LocalSource
    from ..values.tensors.symbolic import SymbolicNumberValue
    from ..values.tensors.tensor import TensorValue
    bad, dropped = [], []
    for rec in list(ctx.effects.log):
        text = _describe(rec)
        if isinstance(rec, (fx.ContainerMutated, fx.ListAppend)):
            src = getattr(rec.container, "source", None)
            if src is not None and isinstance(src.root(), LocalSource):
                continue   # the call's own arguments: the probe run mutates copies
        values = [getattr(rec, "value", None), *getattr(rec, "args", ()), *getattr(rec, "kwargs", {}).values()]
        if any(isinstance(v, (TensorValue, SymbolicNumberValue)) for v in values):
            bad.append(text)
        else:
            dropped.append(text)
    if bad:
        raise ExportError(
            f"armature.export: {fn.__qualname__} stores tensors or dynamic numbers into Python state, which "
            f"an exported program cannot do: {'; '.join(bad)}",
            hint="keep state in tensors (buffers updated in place are recorded), or move the update "
                 "out of the exported function")
    if dropped:
        warnings.warn(f"armature.export: the exported program of {fn.__qualname__} does not repeat these "
                      f"Python side effects: {'; '.join(dropped)}", RuntimeWarning, stacklevel=4)


def _describe(rec) -> str:
    target = getattr(rec, "obj", None) or getattr(rec, "container", None) or getattr(rec, "cell", None)
    name = getattr(rec, "name", None)
    where = f"{target}.{name}" if target is not None and name else (str(target) if target is not None else name)
    return f"{type(rec).__name__} {where}"


def _export_error(fn, e: Unsupported, what: str, hint: str | None) -> ExportError:
    err = ExportError(f"armature.export: {fn.__qualname__} cannot be captured as one graph: {what}",
                      hint=hint or "rewrite this part so it stays in tensors and Python values known "
                                   "while tracing, or export a smaller piece")
    err.user_stack = list(e.user_stack)
    return err
