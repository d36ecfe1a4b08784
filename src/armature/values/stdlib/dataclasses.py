"""dataclasses: ``fields``, ``is_dataclass``, ``replace``, ``asdict`` and
``astuple`` over dataclass instances (made in the frame or passed in), with
the deep copy ``asdict``/``astuple`` make done only where it is exact.
"""
from __future__ import annotations

import dataclasses

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Kind
from ..base import Value
from ..constant import ConstantValue
from ..containers.containers import DictValue, ListValue, TupleValue
from ..objects.objects import ClassValue
from .collections import OrderedDictValue
from .common import _SCALAR_TYPES, _guard, _r, _register_object, _std_function, _wrap
from .enum import EnumMemberValue
from .namedtuple import NamedTupleValue
from .. import kinds


class FieldValue(ConstantValue):
    """A ``dataclasses.Field``: its attributes are read as constants (fields
    belong to the class, which is guarded by identity or type)."""

    def getattr(self, tx, name):
        f = self.value
        if name in ("name", "init", "repr", "hash", "compare", "kw_only"):
            return ConstantValue(getattr(f, name))
        if name in ("type", "default", "default_factory", "metadata"):
            v = getattr(f, name)
            if v is dataclasses.MISSING:
                return ConstantValue(v)
            if isinstance(v, type):
                return _wrap(tx.ctx, v, None)
            if type(v) in _SCALAR_TYPES:
                return ConstantValue(v)
            return _wrap(tx.ctx, v, None)
        raise Unsupported(f"attribute {name!r} of a dataclasses.Field")


def _dataclass_type(v: Value):
    """The dataclass type of an instance Value (None if it is not one)."""
    if isinstance(v, ClassValue):
        return None
    try:
        t = v.python_type()
    except Unsupported:
        return None
    return t if dataclasses.is_dataclass(t) else None


def _dc_fields(cls) -> list:
    return list(dataclasses.fields(cls))


def _fields(tx, class_or_instance):
    v = class_or_instance
    if isinstance(v, ClassValue):
        cls = v.as_python_constant()
    else:
        try:
            cls = v.python_type()
        except Unsupported:
            raise Unsupported("dataclasses.fields() of a value whose type is not known")
    if not dataclasses.is_dataclass(cls):
        raise user_error(TypeError, "must be called with a dataclass type or instance")
    return TupleValue([FieldValue(f) for f in _dc_fields(cls)])


def _is_dataclass(tx, obj):
    if isinstance(obj, ClassValue) or obj.is_python_constant() and isinstance(obj, ConstantValue):
        return ConstantValue(dataclasses.is_dataclass(obj.as_python_constant()))
    return ConstantValue(dataclasses.is_dataclass(obj.python_type()))


def _replace(tx, obj, *args, **changes):
    if args:
        raise user_error(TypeError, f"replace() takes 1 positional argument but {len(args) + 1} were given")
    cls = _dataclass_type(obj)
    if cls is None:
        raise user_error(TypeError, "replace() should be called on dataclass instances")
    changes = dict(changes)
    for f in getattr(cls, "__dataclass_fields__").values():
        if f._field_type is dataclasses._FIELD_CLASSVAR:
            continue
        if not f.init:
            if f.name in changes:
                raise user_error(ValueError, f"field {f.name} is declared with init=False, "
                                 "it cannot be specified with replace()")
            continue
        if f.name not in changes:
            if f._field_type is dataclasses._FIELD_INITVAR and f.default is dataclasses.MISSING:
                raise user_error(ValueError, f"InitVar {f.name!r} must be specified with replace()")
            changes[f.name] = obj.getattr(tx, f.name)
    return obj.getattr(tx, "__class__").call(tx, [], changes)


def _deepcopy_leaf(tx, v: Value) -> Value:
    """``copy.deepcopy`` of a non-container leaf, where it is exact."""
    if isinstance(v, EnumMemberValue):
        return v
    if isinstance(v, ConstantValue) and (type(v.value) in _SCALAR_TYPES or type(v.value) in (range, slice)):
        return v
    if isinstance(v, ConstantValue) and type(v.value) is tuple and all(type(i) in _SCALAR_TYPES for i in v.value):
        return v
    if isinstance(v, kinds.TensorValue):
        fake = v.fake
        # deepcopy copies the whole storage and keeps strides/offset; it makes a
        # leaf (requires_grad kept) and copies .grad and attributes.  A clone is
        # the same tensor only for a fresh, contiguous, grad-free intermediate.
        if v.source is None and type(fake).__name__ in ("FakeTensor", "Tensor") and not fake.requires_grad \
                and fake.is_contiguous() and fake.storage_offset() == 0 \
                and fake.untyped_storage().nbytes() == fake.numel() * fake.element_size():
            return kinds.graph_call(tx, "call_method", "clone", [v], {})
        raise Unsupported("copy.deepcopy of a tensor inside dataclasses.asdict/astuple",
                          hint="deepcopy keeps storage, strides, requires_grad and .grad; "
                               "this frame runs eagerly")
    raise Unsupported(f"copy.deepcopy of {v} inside dataclasses.asdict/astuple")


def _as_inner(tx, v: Value, factory: Value | None, as_dict: bool) -> Value:
    v = _r(tx, v)
    cls = _dataclass_type(v)
    if cls is not None:
        vals = []
        for f in _dc_fields(cls):
            inner = _as_inner(tx, v.getattr(tx, f.name), factory, as_dict)
            vals.append(TupleValue([ConstantValue(f.name), inner]) if as_dict else inner)
        if factory is None:
            if as_dict:
                return DictValue({f.name: pair.items[1] for f, pair in zip(_dc_fields(cls), vals)})
            return TupleValue(vals)
        return factory.call(tx, [ListValue(vals)], {})
    if isinstance(v, NamedTupleValue):
        return NamedTupleValue([_as_inner(tx, i, factory, as_dict) for i in v.items], v.cls)
    if isinstance(v, TupleValue):
        if v.cls is not tuple:
            raise Unsupported(f"dataclasses.asdict/astuple over a {v.cls.__name__}")
        return TupleValue([_as_inner(tx, i, factory, as_dict) for i in v.items])
    if isinstance(v, ListValue):
        return ListValue([_as_inner(tx, i, factory, as_dict) for i in v.items])
    if isinstance(v, DictValue):
        if type(v) is DictValue and v.cls is dict:
            return DictValue({k: _as_inner(tx, i, factory, as_dict) for k, i in v.items.items()})
        if isinstance(v, OrderedDictValue):
            return OrderedDictValue({k: _as_inner(tx, i, factory, as_dict) for k, i in v.items.items()})
        raise Unsupported(f"dataclasses.asdict/astuple over a {v.python_type().__name__}")
    return _deepcopy_leaf(tx, v)


def _asdict(tx, obj, *args, dict_factory=None, **kwargs):
    if args or kwargs:
        raise Unsupported("dataclasses.asdict() with unusual arguments")
    if _dataclass_type(obj) is None:
        raise user_error(TypeError, "asdict() should be called on dataclass instances")
    factory = None if dict_factory is None or _is_builtin_class(dict_factory, dict) else dict_factory
    return _as_inner(tx, obj, factory, True)


def _astuple(tx, obj, *args, tuple_factory=None, **kwargs):
    if args or kwargs:
        raise Unsupported("dataclasses.astuple() with unusual arguments")
    if _dataclass_type(obj) is None:
        raise user_error(TypeError, "astuple() should be called on dataclass instances")
    factory = None if tuple_factory is None or _is_builtin_class(tuple_factory, tuple) else tuple_factory
    return _as_inner(tx, obj, factory, False)


def _is_builtin_class(v: Value, cls: type) -> bool:
    return v.is_python_constant() and v.as_python_constant() is cls


def _dataclass(tx, cls=None, **kwargs):
    """``@dataclasses.dataclass`` (with or without arguments) on a class made
    by a class statement in the frame (values/objects/class_def.py)."""
    from ..objects.class_def import decorate_made_class
    from .common import _StdCallable
    if cls is None or isinstance(cls, ConstantValue) and cls.value is None:
        return _StdCallable(lambda tx_, c: decorate_made_class(tx_, dataclasses.dataclass, c, kwargs),
                            "dataclasses.dataclass(...)")
    return decorate_made_class(tx, dataclasses.dataclass, cls, kwargs)


_std_function(dataclasses.dataclass, _dataclass)
_std_function(dataclasses.fields, _fields)
_std_function(dataclasses.is_dataclass, _is_dataclass)
_std_function(dataclasses.replace, _replace)
_std_function(dataclasses.asdict, _asdict)
_std_function(dataclasses.astuple, _astuple)


def _wrap_missing(ctx, obj, source):
    _guard(ctx, Kind.ID_MATCH, source, obj)
    return ConstantValue(obj)


_register_object(dataclasses.MISSING, _wrap_missing)
