"""Values of the functions users put in their code to steer the tracer:
``armature.disable`` and the functions it made, ``allow_in_graph`` /
``disallow_in_graph`` marks, ``dont_skip_tracing`` regions, and
``armature.set_stance``, which must not be called in compiled code.

``builder._wrap_new`` asks :func:`wrap_marked` first, so a mark beats
whatever armature would do with the object otherwise.
"""
from __future__ import annotations

import types
from typing import Any

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind
from ..base import CallableConstantValue, Value, concrete, realize
from ..constant import ConstantValue
from .. import kinds
from ...runtime import markers, stance


class ForbiddenInCompiledCode(Unsupported):
    """A call that must never happen inside compiled code (``set_stance``).
    Not a graph break: the compile fails with this error, with or without
    ``fullgraph`` (as torch.compile does)."""

    fatal = True


def wrap_marked(ctx, obj: Any, source) -> Value | None:
    """The Value of a marked object, or None when ``obj`` carries no mark."""
    if obj is markers.disable:
        _guard(ctx, source, obj)
        return DisableFunctionValue(source)
    marks = markers.IN_GRAPH
    if marks:
        mark = marks.get(id(obj))
        if mark is not None and mark[0] is obj:
            _guard(ctx, source, obj)
            return AllowedInGraphValue(obj, source) if mark[1] else DisallowedValue(obj, source)
    if obj is stance.set_stance or (type(obj) is types.FunctionType and "__armature_forbidden__" in obj.__dict__):
        return ForbiddenValue(obj, source, obj.__armature_forbidden__)
    if getattr(obj, "__armature_disabled__", False) and callable(obj):
        _guard(ctx, source, obj)
        return DisabledValue(obj, source)
    return None


def _guard(ctx, source, obj) -> None:
    if source is not None:
        ctx.guards.add(Guard(Kind.ID_MATCH, source, obj))


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def dont_skip_tracing_active(tx) -> bool:
    """Whether a ``dont_skip_tracing`` region is active at this point of the
    trace: the run-time counter as the trace models it (a region entered
    inside the traced code is a pending write of the counter, replayed like
    any global write), else its value at run time, guarded."""
    from ...effects import DELETED
    from ...runtime import markers
    g = markers.__dict__
    pending = tx.ctx.effects.pending_global(g, "dont_skip_depth")
    if pending is not None and pending is not DELETED:
        value = concrete(tx, pending)
        if value.is_python_constant():
            return value.as_python_constant() > 0
    active = markers.dont_skip_active()
    tx.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text=f"___dont_skip_active() is {active}",
                            consts={"___dont_skip_active": markers.dont_skip_active},
                            label=f"armature.dont_skip_tracing is {'' if active else 'not '}active"))
    return active


class _Marked(CallableConstantValue):
    def __repr__(self):
        return f"<{type(self).__name__} {_name(self.fn)}>"


class DisabledValue(_Marked):
    """A function made by ``armature.disable``: a call runs it as plain
    Python between two graphs, unless a dont_skip_tracing region is active,
    where it is inlined like any function."""

    def call(self, tx, args, kwargs):
        if type(self.fn) is types.FunctionType and self.source is not None and dont_skip_tracing_active(tx):
            return kinds.UserFunctionValue(self.fn, self.source).call(tx, args, kwargs)
        raise Unsupported(f"call to {_name(self.fn)}, which is marked armature.disable",
                          hint="it runs as plain Python between two graphs")


class DisableFunctionValue(Value):
    """``armature.disable`` itself, called inside compiled code: the
    disabled function is a Value of the trace (no graph break to make it);
    calling it breaks around that call only."""

    def __init__(self, source=None):
        super().__init__(source)

    def python_type(self):
        return types.FunctionType

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        from ...runtime.markers import disable
        return disable

    def call(self, tx, args, kwargs):
        extra = set(kwargs) - {"recursive"}
        if len(args) != 1 or extra:
            raise Unsupported("armature.disable() called in compiled code without a function to disable")
        if "recursive" in kwargs and not kwargs["recursive"].is_python_constant():
            raise Unsupported("armature.disable(recursive=...) with a value not known while tracing")
        fn = realize(tx.ctx, args[0])
        if isinstance(fn, (DisabledValue, InFrameDisabledValue)):
            return fn
        return InFrameDisabledValue(fn)

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.load_const(self.as_python_constant())


class InFrameDisabledValue(Value):
    """``armature.disable(fn)`` evaluated inside the traced frame."""

    def __init__(self, inner: Value):
        super().__init__()
        self.inner = inner

    def python_type(self):
        return types.FunctionType

    def call(self, tx, args, kwargs):
        if dont_skip_tracing_active(tx):
            return self.inner.call(tx, args, kwargs)
        raise Unsupported(f"call to armature.disable({self.inner}), made in compiled code",
                          hint="it runs as plain Python between two graphs")

    def reconstruct(self, out):
        from ...runtime.markers import disable
        out.instr("PUSH_NULL")
        out.load_const(disable)
        out.reconstruct(self.inner)
        out.call(1)

    def __repr__(self):
        return f"<armature.disable({self.inner})>"


class AllowedInGraphValue(_Marked):
    """A function marked ``armature.allow_in_graph``: one opaque
    ``call_function`` node, its results' metadata from running it on fake
    tensors."""

    def call(self, tx, args, kwargs):
        args = [realize(tx.ctx, a) for a in args]
        kwargs = {k: realize(tx.ctx, v) for k, v in kwargs.items()}
        for a in (*args, *kwargs.values()):
            _check_graph_arg(self.fn, a)
        return kinds.graph_call(tx, "call_function", self.fn, args, kwargs)


def _check_graph_arg(fn, v: Value) -> None:
    if isinstance(v, (kinds.TensorValue, ConstantValue, kinds.SymbolicNumberValue)):
        return
    if isinstance(v, (kinds.TupleValue, kinds.ListValue)) and type(v) in (kinds.TupleValue, kinds.ListValue):
        for item in v.items:
            _check_graph_arg(fn, item)
        return
    raise Unsupported(f"{_name(fn)} is marked armature.allow_in_graph, but is called with {v}: only tensors, "
                      "numbers, constants and tuples/lists of them can be passed to it",
                      hint="pass tensors and constants, or remove the mark so that the call is traced")


class DisallowedValue(_Marked):
    """A callable marked ``armature.disallow_in_graph``: a call breaks the graph."""

    def call(self, tx, args, kwargs):
        raise Unsupported(f"call to {_name(self.fn)}, which is marked armature.disallow_in_graph",
                          hint="it runs as plain Python between two graphs; "
                               "armature.disallow_in_graph(fn, False) removes the mark")


class ForbiddenValue(_Marked):
    """``armature.set_stance`` (or a function it decorates): calling it in
    compiled code is an error, not a graph break."""

    def __init__(self, fn, source, what: str):
        super().__init__(fn, source)
        self.what = what

    def call(self, tx, args, kwargs):
        raise ForbiddenInCompiledCode(
            f"{self.what} was called inside a compiled function; the stance can only be changed outside "
            "compiled code",
            hint="call armature.set_stance before calling the compiled function, or wrap the call with it")
