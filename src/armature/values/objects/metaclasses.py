"""What a class's metaclass does to code that uses the class.

A class statement with a custom metaclass is values/objects/class_def.py's business;
this module is about classes that already exist (transformers' model outputs
all have the metaclass ``_BCCacheNameMeta``, which only defines
``__setattr__``):

* making an instance, ``cls(...)``, is ``type(cls).__call__``: when the
  metaclass has no ``__call__`` of its own that is ``type.__call__``
  (``__new__`` then ``__init__``, values/objects/objects.instantiate), whatever else
  the metaclass defines; a Python ``__call__`` is traced with the class as
  its first argument, and the ``super().__call__(...)`` or
  ``type.__call__(cls, ...)`` inside it comes back to ``type.__call__``;
* ``super()`` inside a metaclass method, whose second argument is a class
  that is an *instance* of the metaclass (CPython's ``supercheck``: the
  MRO searched is the metaclass's);
* ``isinstance(obj, cls)`` asks ``type(cls).__instancecheck__`` unless
  ``type(obj) is cls``: a Python one is traced (reading the class's MRO
  instead gave wrong answers for such classes).

Reading class attributes through the metaclass (methods, properties,
slots) is ClassValue.getattr's (values/objects/objects.py).
"""
from __future__ import annotations

import abc
import types

from ...diagnostics.errors import Unsupported, user_error
from ..base import Value
from ..constant import ConstantValue
from ..builder import wrap
from .. import kinds


def metaclass_call(tx, cls_value, call_raw, owner, args, kwargs) -> Value:
    """``cls(...)`` where the metaclass defines its own ``__call__``."""
    if not isinstance(call_raw, types.FunctionType):
        raise Unsupported(f"creating an instance of {cls_value.cls.__qualname__}: its metaclass "
                          f"{owner.__qualname__} has a __call__ that is not Python")
    fn = kinds.wrap_class_attr(tx, type(cls_value.cls), "__call__", call_raw, owner)
    return fn.call(tx, [cls_value, *args], dict(kwargs))


def type_call(tx, cls_value, args, kwargs) -> Value:
    """``type.__call__(cls, ...)``: ``__new__`` then ``__init__``, whatever
    the metaclass (what a metaclass's ``__call__`` reaches by ``super()``)."""
    from .objects import instantiate
    if not isinstance(cls_value, kinds.ClassValue):
        raise Unsupported(f"type.__call__ of {cls_value}")
    if cls_value.cls is type or issubclass(cls_value.cls, type):
        raise Unsupported("type.__call__ making a class")
    return cls_value.call(tx, list(args), dict(kwargs)) if type(cls_value.cls) in (type, abc.ABCMeta) \
        else instantiate(tx, cls_value, list(args), dict(kwargs), through_metaclass=False)


class TypeCall(Value):
    """``type.__call__`` bound to a class (``super().__call__`` in a metaclass)."""

    def __init__(self, cls_value):
        super().__init__()
        self.cls_value = cls_value

    def call(self, tx, args, kwargs):
        return type_call(tx, self.cls_value, args, kwargs)


def metaclass_super_attr(tx, start: type, cls_value, name: str) -> Value:
    """``super(start, cls).name`` where ``cls`` is an instance of ``start``
    (a metaclass): looked up along ``type(cls).__mro__`` after ``start``."""
    from .objects import bind_attr
    meta = type(cls_value.cls)
    if not isinstance(cls_value.cls, start):
        raise user_error(TypeError, "super(type, obj): obj must be an instance or subtype of type")
    mro = meta.__mro__
    for klass in mro[mro.index(start) + 1:]:
        if name in klass.__dict__:
            raw = klass.__dict__[name]
            if raw is type.__call__:
                return TypeCall(cls_value)
            if isinstance(raw, types.FunctionType) or isinstance(raw, (property, classmethod, staticmethod)):
                return bind_attr(tx, raw, klass, name, cls_value, wrap(tx.ctx, meta, None))
            raise Unsupported(f"super().{name} in the metaclass {meta.__qualname__} (reaching {klass.__qualname__})")
    raise user_error(AttributeError, f"'super' object has no attribute {name!r}")


#: custom_instancecheck's answer for torch's legacy tensor types (a C
#: ``__instancecheck__``, modelled by values/tensors/legacy_types.py)
_LEGACY_TENSOR_TYPE = object()


def custom_instancecheck(cls):
    """The Python ``__instancecheck__`` of ``cls``'s metaclass, or None when
    ``isinstance`` is the MRO test (``type``'s, ``ABCMeta``'s)."""
    meta = type(cls)
    if meta is type or meta is abc.ABCMeta or not isinstance(cls, type):
        return None
    from ..tensors.legacy_types import is_legacy_tensor_type
    if is_legacy_tensor_type(cls):
        return _LEGACY_TENSOR_TYPE, meta
    for klass in meta.__mro__:
        if "__instancecheck__" in klass.__dict__:
            raw = klass.__dict__["__instancecheck__"]
            if klass in (type, abc.ABCMeta):
                return None
            if not isinstance(raw, types.FunctionType):
                raise Unsupported(f"isinstance() through the metaclass {meta.__qualname__}, whose "
                                  f"__instancecheck__ is not Python")
            return raw, klass
    return None


def isinstance_through_metaclass(tx, obj: Value, classes) -> Value | None:
    """``isinstance(obj, classes)`` when one of the classes has a metaclass
    with a Python ``__instancecheck__``: each class in turn, the exact-type
    shortcut first (as CPython), the check traced; None when no class needs
    it (the caller's MRO test is right)."""
    flat = _flatten(classes)
    if not any(custom_instancecheck(c) for c in flat):
        return None
    objtype = obj.python_type()
    for c in flat:
        found = custom_instancecheck(c)
        if found is None or objtype is c:
            if issubclass(objtype, c):   # (ABCMeta's, type's: the MRO test; no registry writes here)
                return ConstantValue(True)
            continue
        raw, owner = found
        if raw is _LEGACY_TENSOR_TYPE:    # torch.FloatTensor...: C, answered from metadata
            from ..tensors.legacy_types import instancecheck
            if instancecheck(tx, obj, c):
                return ConstantValue(True)
            continue
        check = kinds.wrap_class_attr(tx, type(c), "__instancecheck__", raw, owner)
        result = check.call(tx, [wrap(tx.ctx, c, None), obj], {})
        if not result.is_python_constant():
            raise Unsupported(f"isinstance() through {type(c).__qualname__}.__instancecheck__, whose answer "
                              f"depends on run-time values")
        if result.as_python_constant():
            return ConstantValue(True)
    return ConstantValue(False)


def _flatten(classes) -> list:
    if isinstance(classes, tuple):
        out = []
        for c in classes:
            out.extend(_flatten(c))
        return out
    if isinstance(classes, types.UnionType):
        return list(classes.__args__)
    return [classes]
