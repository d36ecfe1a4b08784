"""Functions users put in their code to steer the tracer."""
from __future__ import annotations

import functools


def graph_break() -> None:
    """Split the compiled frame here.  Calling it outside compiled code does
    nothing."""


def disable(fn=None, *, recursive: bool = True):
    """Make ``fn`` always run as plain Python: compiled code breaks the graph
    around calls to it.  Usable as ``@armature.disable`` or ``disable(fn)``."""
    if fn is None:
        return functools.partial(disable, recursive=recursive)
    if not callable(fn):
        raise TypeError(f"armature.disable expects a callable, got {type(fn).__name__}")
    from ..api import CompiledFunction, CompiledModule
    if isinstance(fn, CompiledFunction):
        fn = fn._fn if not fn._has_self else fn._fn.__get__(fn._self)
    if isinstance(fn, CompiledModule):
        fn = fn._orig_mod

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        return fn(*args, **kwargs)

    disabled.__armature_disabled__ = True
    return disabled
