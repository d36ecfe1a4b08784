"""Functions users put in their code to steer the tracer."""
from __future__ import annotations

import functools

from .. import upcalls


def graph_break(msg: str = "") -> None:
    """Split the compiled frame here.  Calling it outside compiled code does
    nothing.  (``msg`` is accepted, as torch's own graph_break takes one.)"""


def disable(fn=None, *, recursive: bool = True):
    """Make ``fn`` always run as plain Python: compiled code breaks the graph
    around calls to it.  Usable as ``@armature.disable`` or ``disable(fn)``,
    also inside compiled code (``armature.disable(self.helper)(h)``).  Inside
    a :func:`dont_skip_tracing` region calls to it are traced after all."""
    if fn is None:
        return functools.partial(disable, recursive=recursive)
    if not callable(fn):
        raise TypeError(f"armature.disable expects a callable, got {type(fn).__name__}")
    CompiledFunction, CompiledModule = upcalls.CompiledFunction, upcalls.CompiledModule
    if isinstance(fn, CompiledFunction):
        fn = fn._fn if not fn._has_self else fn._fn.__get__(fn._self)
    if isinstance(fn, CompiledModule):
        fn = fn._orig_mod

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        return fn(*args, **kwargs)

    disabled.__armature_disabled__ = True
    return disabled


# --- allow_in_graph / disallow_in_graph ---------------------------------------

#: id(fn) -> (fn, True: one opaque graph node | False: a graph break)
IN_GRAPH: dict[int, tuple] = {}


def _mark(fn, mark: bool, enable: bool, what: str):
    if isinstance(fn, (list, tuple)):
        return [_mark(f, mark, enable, what) for f in fn]
    if not callable(fn):
        raise TypeError(f"armature.{what} expects a callable (or a list of them), got {type(fn).__name__}")
    if not isinstance(enable, bool):
        raise TypeError(f"armature.{what}: enable must be a bool, got {enable!r}")
    CompiledFunction, CompiledModule = upcalls.CompiledFunction, upcalls.CompiledModule
    if isinstance(fn, (CompiledFunction, CompiledModule)):
        raise TypeError(f"armature.{what} expects the original callable, not an armature-compiled one")
    key = id(fn)
    before = IN_GRAPH.get(key)
    if before is not None and before[0] is not fn:
        before = None
    if enable:
        IN_GRAPH[key] = (fn, mark)
    elif before is not None and before[1] is mark:
        del IN_GRAPH[key]
    after = IN_GRAPH.get(key)
    if before != after:
        # Entries compiled before may have traced into fn, put it in the
        # graph or broken at it: they are dropped (as armature.reset()).
        upcalls.reset()
    return fn


def allow_in_graph(fn, enable: bool = True):
    """Calls to ``fn`` inside compiled code become one opaque ``call_function``
    node of the graph: ``fn`` is not traced, its outputs' metadata come from
    running it on fake tensors.  Its arguments and results must be tensors,
    numbers and other constants (or tuples/lists of them).  Returns ``fn``.
    ``allow_in_graph(fn, False)`` undoes it; a list marks each callable.
    Changing a mark drops every compiled entry (as :func:`armature.reset`).
    """
    return _mark(fn, True, enable, "allow_in_graph")


def disallow_in_graph(fn, enable: bool = True):
    """Calls to ``fn`` inside compiled code break the graph and run as plain
    Python, even for torch functions armature puts in the graph normally
    (``torch.sin``).  Returns ``fn``; ``disallow_in_graph(fn, False)`` undoes
    it.  Changing a mark drops every compiled entry."""
    return _mark(fn, False, enable, "disallow_in_graph")


# --- dont_skip_tracing ----------------------------------------------------------

#: how many dont_skip_tracing regions are active at run time
dont_skip_depth = 0


def dont_skip_active() -> bool:
    return dont_skip_depth > 0


class _DontSkipTracing:
    """The context manager (and decorator) :func:`dont_skip_tracing` returns."""

    def __enter__(self):
        global dont_skip_depth
        dont_skip_depth += 1
        return self

    def __exit__(self, *exc):
        global dont_skip_depth
        dont_skip_depth -= 1
        return False

    def __call__(self, fn):
        return dont_skip_tracing(fn)


def dont_skip_tracing(fn=None):
    """Trace into functions armature would otherwise run as plain Python.
    Those are the functions marked :func:`disable` (armature traces every
    other Python function already; torch's own functions go into the graph
    whole).  ``with armature.dont_skip_tracing():`` around calls of compiled
    functions, or inside compiled code, or ``@armature.dont_skip_tracing`` on
    a function (compiled, or called from compiled code): a disabled function
    called in that region is inlined like any other.
    """
    if fn is None:
        return _DontSkipTracing()
    if not callable(fn):
        raise TypeError(f"armature.dont_skip_tracing expects a callable, got {type(fn).__name__}")

    @functools.wraps(fn)
    def dont_skip_wrapper(*args, **kwargs):
        global dont_skip_depth
        dont_skip_depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            dont_skip_depth -= 1

    dont_skip_wrapper.__armature_dont_skip__ = fn
    return dont_skip_wrapper
