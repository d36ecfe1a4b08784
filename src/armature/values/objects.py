"""Classes and other Python objects.

This milestone models classes (calls to namedtuple classes build tuples;
isinstance works against any class) and reads plain attributes of other
objects through their instance dict; user-object semantics in full come with
the Python-semantics work.
"""
from __future__ import annotations

import inspect

from ..diagnostics.errors import Unsupported
from ..guards.guard import Guard, Kind
from ..guards.sources import AttrSource, Source
from .base import Value


class ClassValue(Value):
    def __init__(self, cls: type, source: Source | None):
        super().__init__(source)
        self.cls = cls

    def python_type(self):
        return type(self.cls)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.cls

    def call(self, tx, args, kwargs):
        cls = self.cls
        if issubclass(cls, tuple) and hasattr(cls, "_fields"):
            from .containers import TupleValue
            try:
                bound = inspect.signature(cls).bind(*args, **kwargs)
            except TypeError as e:
                raise Unsupported(f"TypeError constructing {cls.__name__}: {e}")
            bound.apply_defaults()
            items = []
            for name in cls._fields:
                v = bound.arguments[name]
                if not isinstance(v, Value):
                    from .builder import wrap_constant_result
                    v = wrap_constant_result(v)
                items.append(v)
            return TupleValue(items, cls=cls)
        from .builtins import RULES, fold_call
        if cls in RULES:
            return RULES[cls](tx, *args, **kwargs)
        if cls.__module__ == "builtins":
            return fold_call(cls, args, kwargs)
        raise Unsupported(f"creating an instance of {cls.__qualname__} inside a compiled function",
                          hint="user classes are modelled in a later milestone")

    def getattr(self, tx, name):
        from .builder import wrap
        try:
            attr = inspect.getattr_static(self.cls, name)
        except AttributeError:
            raise Unsupported(f"AttributeError: type object {self.cls.__name__!r} has no attribute {name!r}")
        if isinstance(attr, staticmethod):
            attr = attr.__func__
        elif isinstance(attr, classmethod):
            from .functions import BoundMethodValue, UserFunctionValue
            return BoundMethodValue(UserFunctionValue(attr.__func__, None), self)
        src = AttrSource(self.source, name) if self.source is not None else None
        return wrap(tx.ctx, getattr(self.cls, name) if not callable(attr) else attr, src)

    def __repr__(self):
        return f"<class {self.cls.__qualname__}>"


class ObjectValue(Value):
    """Any other object: only plain instance-dict attributes are readable."""

    def __init__(self, obj, source: Source | None):
        super().__init__(source)
        self.obj = obj

    def python_type(self):
        return type(self.obj)

    def getattr(self, tx, name):
        from .builder import wrap
        d = getattr(self.obj, "__dict__", None)
        cls_attr = inspect.getattr_static(type(self.obj), name, None)
        if d is not None and name in d and not (cls_attr is not None and
                                                 (hasattr(type(cls_attr), "__set__") or hasattr(type(cls_attr), "__delete__"))):
            return wrap(tx.ctx, d[name], AttrSource(self.source, name) if self.source else None)
        raise Unsupported(f"attribute {name!r} of a {type(self.obj).__qualname__} object",
                          hint="user objects are modelled in a later milestone")

    def __repr__(self):
        return f"<object {type(self.obj).__qualname__}{' ' + str(self.source) if self.source else ''}>"


def wrap_object(ctx, obj, source):
    if source is None:
        raise Unsupported(f"a {type(obj).__qualname__} object reached without a source")
    ctx.guards.add(Guard(Kind.TYPE_MATCH, source, type(obj)))
    return ObjectValue(obj, source)
