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
from ..objects.per_call_classes import statement_of
from ..operations.builtins import RULES
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
    return NamedTupleValue(items, cls, cls_value=_made_value(cls_value))


def _made_value(cls_value):
    """The class Value an instance keeps: one whose class is made per call."""
    return cls_value if isinstance(cls_value, MadeNamedTupleClassValue) or \
        statement_of(cls_value.cls) is not None else None


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
        return NamedTupleValue(items, self.cls, cls_value=_made_value(self))


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
    and whose generated helpers (_replace, _asdict, _make) are modelled.
    ``cls_value``: the Value of its class where the class is made per call
    (by ``collections.namedtuple`` in a frame): rebuilding the instance
    rebuilds that class, as eager makes a new one on every call."""

    def __init__(self, items, cls, source=None, cls_value=None):
        super().__init__(items, cls=cls, source=source)
        self.cls_value = cls_value

    def _class_value(self, tx):
        if self.cls_value is not None:
            return self.cls_value
        return _wrap(tx.ctx, self.cls, None)

    def reconstruct(self, out):
        if self.source is None and self.cls_value is not None and self.cls_value.source is None:
            out.instr("PUSH_NULL")
            out.reconstruct(self.cls_value)
            for i in self.items:
                out.reconstruct(i)
            out.call(len(self.items))
            return
        super().reconstruct(out)

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
            return NamedTupleValue(items, cls, cls_value=self.cls_value)
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
    cls_value = None
    if statement_of(t) is not None:
        # an instance of a class made per call (handed over a graph break):
        # its class guarded by how it was made, not by identity
        cls_value = _wrap(ctx, t, AttrSource(source, "__class__"))
    else:
        _guard(ctx, Kind.TYPE_MATCH, source, t)
    _guard(ctx, Kind.LEN_MATCH, source, len(obj))
    items = [_wrap(ctx, v, ItemSource(source, i)) for i, v in enumerate(obj)]
    return NamedTupleValue(items, t, source, cls_value=cls_value)


# --- classes made by collections.namedtuple in the frame ----------------------------

class MadeNamedTupleClassValue(NamedTupleClassValue):
    """A class ``collections.namedtuple(...)`` makes in the traced frame.

    The factory builds its class with ``eval`` of generated source in
    explicit namespaces; with constant arguments the class is made here, at
    trace time, and the trace uses it (instances, fields, ``_replace``,
    ``_make``...).  Eager makes a new class on every call: where the class
    (or an instance of it) leaves the graph, residual code makes it anew
    with the same arguments (:func:`make_namedtuple`), remembered as made
    per call (values/objects/per_call_classes.py), so that a later trace it
    reaches guards it by how it was made, not by its identity."""

    def __init__(self, cls, factory_args: tuple, site):
        super().__init__(cls, None)
        self.factory_args, self.site = factory_args, site

    def reconstruct(self, out):
        out.call_helper(make_namedtuple, self.site, *self.factory_args, pop=False)


def make_namedtuple(site, typename, field_names, rename, defaults, module):
    """Residual code: eager's ``collections.namedtuple`` call, the class
    remembered as made per call by ``site`` (one object per call site)."""
    from ..objects.per_call_classes import note_made
    cls = collections.namedtuple(typename, field_names, rename=rename, defaults=defaults, module=module)
    return note_made(cls, site)


class NamedTupleSite:
    """The call site of a ``collections.namedtuple`` call the trace ran: what
    a class made there is guarded to have been made by."""

    def __init__(self, typename):
        self.typename = typename

    def __repr__(self):
        return f"<collections.namedtuple({self.typename!r}, ...) call>"


def _namedtuple_rule(tx, typename=_MISSING, field_names=_MISSING, *rest, **kwargs):
    if rest or typename is _MISSING or field_names is _MISSING or \
            set(kwargs) - {"rename", "defaults", "module"}:
        raise Unsupported("collections.namedtuple() with these arguments")
    values = {"typename": typename, "field_names": field_names, **kwargs}
    const = {}
    for name, v in values.items():
        if not v.is_python_constant():
            raise Unsupported(f"collections.namedtuple() with a {name} not known while tracing")
        const[name] = v.as_python_constant()
    module = const.get("module")
    if module is None:
        # (the factory reads its caller's module: the frame that calls it here)
        module = tx.f_globals.get("__name__", "__main__")
    defaults = const.get("defaults")
    args = (const["typename"], const["field_names"], bool(const.get("rename", False)),
            tuple(defaults) if defaults is not None else None, module)
    try:
        cls = collections.namedtuple(args[0], args[1], rename=args[2], defaults=args[3], module=args[4])
    except (TypeError, ValueError) as e:   # eager's own error (a bad field name...)
        raise user_error(type(e), str(e)) from None
    value = MadeNamedTupleClassValue(cls, args, NamedTupleSite(args[0]))
    tx.ctx.value_cache[id(cls)] = (cls, value)   # (type(instance), P itself: this Value)
    return value


RULES[collections.namedtuple] = _namedtuple_rule


def _wrap_namedtuple_class_or_instance(ctx, obj, source):
    if isinstance(obj, type):
        if _is_namedtuple_class(obj):
            if statement_of(obj) is not None:   # made per call by collections.namedtuple
                from ..objects.per_call_classes import wrap_per_call_class
                return wrap_per_call_class(ctx, obj, source)
            _guard(ctx, Kind.ID_MATCH, source, obj)
            return NamedTupleClassValue(obj, source)
        return None
    t = type(obj)
    if isinstance(obj, tuple) and t is not tuple and _is_namedtuple_class(t):
        return _wrap_namedtuple(ctx, obj, source)
    return None


_FALLBACK_HANDLERS.append(_wrap_namedtuple_class_or_instance)
