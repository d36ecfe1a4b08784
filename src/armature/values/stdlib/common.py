"""What every standard-library model shares: argument helpers, the two
callable Values (`_StdCallable` for a modelled function, `StdClassValue`
for a modelled class), and the registry ``wrap_special`` reads.

Split from the other stdlib modules so each of them registers its objects
here without importing the others; ``wrap_special`` is the builder's first
stop for every real object.
"""
from __future__ import annotations

import enum
import math
import operator
import types
from typing import Any, Callable

from ...diagnostics.errors import Unsupported, UserException, user_error
from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource
from ..base import LazyValue, Value
from ..operations.builtins import BuiltinValue
from ..constant import ConstantValue
from ..containers.containers import IteratorValue
from ..objects.objects import ClassValue
from ..builder import wrap
from .. import kinds

_MISSING = object()
#: the most items an iterator is materialized into (list(), tuple(), ...)
MAX_MATERIALIZE = 100_000
_SCALAR_TYPES = (int, float, bool, str, bytes, complex, type(None))


# =============================================================================
# helpers
# =============================================================================

def _r(tx, v):
    """The realized Value of ``v`` (arguments may arrive lazy)."""
    return v.realize(tx.ctx) if type(v) is LazyValue else v


def _wrap(ctx, obj, source) -> Value:
    return wrap(ctx, obj, source)


def _guard(ctx, kind: Kind, source, expected=None) -> None:
    if source is not None:
        ctx.guards.add(Guard(kind, source, expected))


def _attr_src(source, name):
    return AttrSource(source, name) if source is not None else None


def _const(v: Value, what: str):
    if not v.is_python_constant():
        raise Unsupported(f"{what} with an argument that is not known while tracing")
    return v.as_python_constant()


def _is_none(v: Value) -> bool:
    return isinstance(v, ConstantValue) and v.value is None


def _next(tx, it: Value) -> Value | None:
    """``next(it)`` for a Value from ``tx.get_iter``; None when exhausted."""
    if not isinstance(it, IteratorValue):
        nv = getattr(it, "next_value", None)
        if nv is None:
            raise Unsupported(f"next() on {it}")
        try:
            return nv(tx)
        except UserException as e:
            if issubclass(e.exc_type, StopIteration):
                return None
            raise
    return it.next(tx)


def _iter(tx, v: Value) -> Value:
    return tx.get_iter(v)


def _index(v: Value, what: str) -> int:
    """``operator.index`` of a constant."""
    c = _const(v, what)
    try:
        return operator.index(c)
    except TypeError:
        raise user_error(TypeError, f"{type(c).__name__!r} object cannot be interpreted as an integer")


def _callable(tx, v: Value) -> bool:
    """``callable(v)``: ``type(v)`` defines ``__call__``."""
    from ..functions.functions import _Function
    v = _r(tx, v)
    if isinstance(v, (_Function, kinds.BoundMethodValue, kinds.PartialValue, _StdCallable, ClassValue, BuiltinValue)):
        return True
    if isinstance(v, ConstantValue):
        return callable(v.value)
    t = v.python_type()
    return any("__call__" in k.__dict__ for k in t.__mro__)


def _wrap_scalar_or(ctx, obj, source) -> Value:
    """An attribute value: immutable scalars fold, anything else is wrapped
    (and guarded) through its source."""
    if type(obj) in _SCALAR_TYPES or isinstance(obj, enum.Enum):
        return ConstantValue(obj) if not isinstance(obj, enum.Enum) else kinds.EnumMemberValue(obj, None)
    if type(obj) is tuple and all(type(i) in _SCALAR_TYPES for i in obj):
        return ConstantValue(obj)
    if source is None:
        raise Unsupported(f"a {type(obj).__name__} value reached without a source")
    return _wrap(ctx, obj, source)


class _StdCallable(Value):
    """A callable modelled by a Python handler ``handler(tx, *args, **kwargs)``."""

    def __init__(self, handler: Callable, name: str, obj: Any = _MISSING, source=None):
        super().__init__(source)
        self.handler, self.name, self.obj = handler, name, obj

    def python_type(self):
        if self.obj is _MISSING:
            return types.BuiltinFunctionType
        return type(self.obj)

    def is_python_constant(self):
        return self.obj is not _MISSING

    def as_python_constant(self):
        if self.obj is _MISSING:
            return super().as_python_constant()
        return self.obj

    def call(self, tx, args, kwargs):
        args = [_r(tx, a) for a in args]
        kwargs = {k: _r(tx, v) for k, v in kwargs.items()}
        return self.handler(tx, *args, **kwargs)

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        if self.obj is not _MISSING:
            return out.load_const(self.obj)
        raise Unsupported(f"returning {self.name} from a compiled frame")

    def __repr__(self):
        return f"<{self.name}>"


class StdClassValue(ClassValue):
    """A standard-library class whose construction armature models."""

    def __init__(self, cls: type, source, construct: Callable, class_attrs: dict | None = None):
        super().__init__(cls, source)
        self._construct = construct
        self._class_attrs = class_attrs or {}

    def call(self, tx, args, kwargs):
        args = [_r(tx, a) for a in args]
        kwargs = {k: _r(tx, v) for k, v in kwargs.items()}
        return self._construct(tx, *args, **kwargs)

    def getattr(self, tx, name):
        h = self._class_attrs.get(name)
        if h is not None:
            return _StdCallable(h, f"{self.cls.__name__}.{name}")
        return super().getattr(tx, name)


def _no_kwargs(name, kwargs):
    if kwargs:
        raise user_error(TypeError, f"{name}() takes no keyword arguments")


# =============================================================================
# wrap_special: the builder's first stop
# =============================================================================

#: exact type of the object -> handler(ctx, obj, source) -> Value | None
_TYPE_HANDLERS: dict[type, Callable] = {}
#: the object itself (classes, functions) -> handler(ctx, obj, source) -> Value
_OBJECT_HANDLERS: dict[int, tuple[Any, Callable]] = {}


#: tried in order for objects neither table claims (user classes made by a
#: factory: enum classes and members, namedtuple classes and instances);
#: handler(ctx, obj, source) -> Value | None
_FALLBACK_HANDLERS: list[Callable] = []


def _register_object(obj, handler):
    _OBJECT_HANDLERS[id(obj)] = (obj, handler)


def wrap_special(ctx, obj: Any, source) -> Value | None:
    t = type(obj)
    h = _TYPE_HANDLERS.get(t)
    if h is not None:
        return h(ctx, obj, source)
    entry = _OBJECT_HANDLERS.get(id(obj))
    if entry is not None and entry[0] is obj:
        return entry[1](ctx, obj, source)
    for h in _FALLBACK_HANDLERS:
        v = h(ctx, obj, source)
        if v is not None:
            return v
    return None


def _std_class(cls, construct, class_attrs=None):
    def handler(ctx, obj, source):
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return StdClassValue(obj, source, construct, class_attrs)
    _register_object(cls, handler)


def _std_function(fn, handler_fn):
    def handler(ctx, obj, source):
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return _StdCallable(handler_fn, getattr(obj, "__qualname__", str(obj)), obj, source)
    _register_object(fn, handler)


def _nonfinite_float(ctx, obj, source):
    # nan and +-inf: CONSTANT_MATCH renders them as ``x != x`` and a pooled
    # constant (an identity guard would recompile for every new nan object)
    if math.isfinite(obj):
        return None
    _guard(ctx, Kind.CONSTANT_MATCH, source, obj)
    return ConstantValue(obj, source)


_TYPE_HANDLERS[float] = _nonfinite_float
