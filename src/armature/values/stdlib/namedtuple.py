"""collections.namedtuple: classes made by the factory and their instances
(tuples whose fields read by name; the generated ``_make``, ``_replace`` and
``_asdict`` are modelled, recognized by their code objects).  Registered as
a fallback of ``wrap_special``: namedtuple classes are user classes.
"""
from __future__ import annotations

import collections
import inspect
import types

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Kind
from ...guards.sources import AttrSource, ItemSource
from ..constant import ConstantValue
from ..containers.containers import BoundContainerMethod, DictValue, TupleValue
from ..objects.objects import ClassValue
from .common import (_FALLBACK_HANDLERS, _MISSING, _StdCallable, _guard, _wrap, _wrap_scalar_or)


def _is_namedtuple_class(cls) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple) \
        and hasattr(cls, "_make") and hasattr(cls, "_replace")


def _standard_namedtuple_new(cls) -> bool:
    new = cls.__new__
    g = getattr(new, "__globals__", None)
    return isinstance(new, types.FunctionType) and g is not None \
        and str(g.get("__name__", "")).startswith("namedtuple_") and cls.__init__ is object.__init__


_NT_SIGS: dict[type, inspect.Signature] = {}


def _namedtuple_signature(cls) -> inspect.Signature:
    sig = _NT_SIGS.get(cls)
    if sig is None:
        sig = _NT_SIGS[cls] = inspect.signature(cls.__new__)
    return sig


def _construct_namedtuple(tx, cls_value: "NamedTupleClassValue", args, kwargs) -> "NamedTupleValue":
    cls = cls_value.cls
    if not _standard_namedtuple_new(cls):
        raise Unsupported(f"creating {cls.__qualname__}, a namedtuple with its own __new__/__init__")
    sig = _namedtuple_signature(cls)
    try:
        bound = sig.bind(None, *args, **kwargs)
    except TypeError as e:
        raise user_error(TypeError, str(e).replace("__new__()", f"{cls.__name__}.__new__()"))
    params = list(sig.parameters.values())[1:]
    items = []
    ndefaults = len(cls.__new__.__defaults__ or ())
    for pos, p in enumerate(params):
        if p.name in bound.arguments:
            items.append(bound.arguments[p.name])
            continue
        d_index = pos - (len(params) - ndefaults)
        src = None
        if cls_value.source is not None:
            src = ItemSource(AttrSource(AttrSource(cls_value.source, "__new__"), "__defaults__"), d_index)
        items.append(_wrap_scalar_or(tx.ctx, p.default, src))
    return NamedTupleValue(items, cls)


class NamedTupleClassValue(ClassValue):
    def call(self, tx, args, kwargs):
        return _construct_namedtuple(tx, self, args, kwargs)

    def getattr(self, tx, name):
        cls = self.cls
        if name == "_fields":
            return ConstantValue(cls._fields)
        if name == "_make" and _is_nt_helper(inspect.getattr_static(cls, "_make"), "_make") \
                and _standard_namedtuple_new(cls):
            return _StdCallable(lambda tx_, iterable: self._make(tx_, iterable), f"{cls.__name__}._make")
        return super().getattr(tx, name)

    def _make(self, tx, iterable):
        items = tx.iterate(iterable)
        n = len(self.cls._fields)
        if len(items) != n:
            raise user_error(TypeError, f"Expected {n} arguments, got {len(items)}")
        return NamedTupleValue(items, self.cls)


_NT_PROBE = collections.namedtuple("_NT_PROBE", "a")
# namedtuple() makes new functions for every class, from the same code objects
_NT_CODES = {"_make": inspect.getattr_static(_NT_PROBE, "_make").__func__.__code__,
             "_replace": _NT_PROBE._replace.__code__,
             "_asdict": _NT_PROBE._asdict.__code__}
_TUPLEGETTER = type(inspect.getattr_static(_NT_PROBE, "a"))


def _is_nt_helper(raw, name) -> bool:
    fn = raw.__func__ if isinstance(raw, classmethod) else raw
    return getattr(fn, "__code__", None) is _NT_CODES[name]


class NamedTupleValue(TupleValue):
    """An instance of a namedtuple class: a tuple whose fields read by name
    and whose generated helpers (_replace, _asdict, _make) are modelled."""

    def __init__(self, items, cls, source=None):
        super().__init__(items, cls=cls, source=source)

    def _class_value(self, tx):
        return _wrap(tx.ctx, self.cls, None)

    def getattr(self, tx, name):
        cls = self.cls
        raw = inspect.getattr_static(cls, name, _MISSING)
        if type(raw) is _TUPLEGETTER:
            return self.items[cls._fields.index(name)]
        if name == "_fields":
            return ConstantValue(cls._fields)
        if name == "__class__":
            return self._class_value(tx)
        if name in ("_replace", "_asdict") and _is_nt_helper(raw, name) and _standard_namedtuple_new(cls):
            return BoundContainerMethod(self, name)
        if name == "_make":
            return self._class_value(tx).getattr(tx, name)
        if name in ("count", "index") and raw is getattr(tuple, name):
            return BoundContainerMethod(self, name)
        if self.source is not None and cls.__dictoffset__:
            raise Unsupported(f"attribute {name!r} of a {cls.__name__} instance that has a __dict__")
        if raw is _MISSING:
            raise user_error(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")
        from ..objects.objects import bind_attr, find_class_attr
        raw, owner = find_class_attr(cls, name)
        if getattr(raw, "__objclass__", None) is tuple or owner is tuple:
            raise Unsupported(f"tuple.{name} of a namedtuple")
        return bind_attr(tx, raw, owner, name, self, self._class_value(tx))

    def method(self, tx, name, args, kwargs):
        cls = self.cls
        if name == "_replace":
            if args:
                raise user_error(TypeError, f"{cls.__name__}._replace() takes 1 positional argument "
                                 f"but {len(args) + 1} were given")
            kw = dict(kwargs)
            items = [kw.pop(f, v) for f, v in zip(cls._fields, self.items)]
            if kw:
                raise user_error(ValueError, f"Got unexpected field names: {list(kw)!r}")
            return NamedTupleValue(items, cls)
        if name == "_asdict":
            if args or kwargs:
                raise user_error(TypeError, "_asdict() takes 1 positional argument")
            return DictValue(dict(zip(cls._fields, self.items)))
        return super().method(tx, name, args, kwargs)

    def __repr__(self):
        return f"{self.cls.__name__}({self.items!r})"


def _wrap_namedtuple(ctx, obj, source):
    if source is None:
        return None
    t = type(obj)
    _guard(ctx, Kind.TYPE_MATCH, source, t)
    _guard(ctx, Kind.LEN_MATCH, source, len(obj))
    items = [_wrap(ctx, v, ItemSource(source, i)) for i, v in enumerate(obj)]
    return NamedTupleValue(items, t, source)


def _wrap_namedtuple_class_or_instance(ctx, obj, source):
    if isinstance(obj, type):
        if _is_namedtuple_class(obj):
            _guard(ctx, Kind.ID_MATCH, source, obj)
            return NamedTupleClassValue(obj, source)
        return None
    t = type(obj)
    if isinstance(obj, tuple) and t is not tuple and _is_namedtuple_class(t):
        return _wrap_namedtuple(ctx, obj, source)
    return None


_FALLBACK_HANDLERS.append(_wrap_namedtuple_class_or_instance)
