"""copy: ``copy.deepcopy`` of plain user objects and the builtin containers.

copy.py itself cannot be traced through for a plain object: it keys its
memo by ``id()`` (of the object, of the memo itself), and it reaches the
object through ``object.__reduce_ex__(4)`` -> ``copyreg.__newobj__`` ->
``object.__new__`` and ``y.__dict__.update(deepcopy(state))``.  This models
the outcome of that path: a new instance of the same class (``__init__`` is
not run) whose instance dict holds deep copies of the original's values,
with the memo keeping shared references shared (one Value per object) and
cycles closed.  Only where that path is certain: a class that overrides
none of ``__deepcopy__``, ``__reduce_ex__``, ``__reduce__``,
``__getstate__``, ``__setstate__``, ``__getnewargs(_ex)__``, ``__slots__``,
``__getattr__``/``__getattribute__`` (copy.py's getattr would run it) and is
not in ``copyreg.dispatch_table``; lists, tuples and dicts with constant
keys; immutable constants (returned as they are).  Anything else (tensors
included) raises Unsupported.
"""
from __future__ import annotations

import copy
import copyreg
import types

from ...diagnostics.errors import Unsupported
from ..base import realize
from ..constant import ConstantValue
from .common import _std_function
from .. import kinds

_OVERRIDES = ("__deepcopy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__getnewargs__",
              "__getnewargs_ex__", "__slots__", "__getattr__", "__getattribute__", "__class_getitem__")
_ATOMIC = (int, float, complex, bool, str, bytes, type(None), type(Ellipsis), type(NotImplemented), range,
           types.FunctionType, types.BuiltinFunctionType, type)


def _plain_class(cls: type) -> bool:
    if type(cls) is not type or cls in copyreg.dispatch_table:
        return False
    for klass in cls.__mro__[:-1]:
        if klass.__module__ == "builtins" or any(n in klass.__dict__ for n in _OVERRIDES):
            return False
    return True


class _DeepCopier:
    def __init__(self, tx):
        self.tx = tx
        self.memo: dict[int, object] = {}
        self.keep: list = []

    def copy(self, v):
        tx = self.tx
        v = realize(tx.ctx, v)
        done = self.memo.get(id(v))
        if done is not None:
            return done
        self.keep.append(v)
        if isinstance(v, ConstantValue) and isinstance(v.value, _ATOMIC) and not isinstance(v.value, tuple):
            return v
        if type(v) is kinds.ObjectValue and _plain_class(v.cls) and not getattr(v, "contents", None):
            from ..objects.builtin_subclasses import _new_instance
            new = _new_instance(v.cls, None)
            self.memo[id(v)] = new
            for k in v.dict_keys(tx):
                new.attrs[k] = self.copy(v.dict_get(tx, k))
            return new
        if isinstance(v, kinds.ListValue) and v.python_type() is list:
            new = kinds.ListValue([])
            self.memo[id(v)] = new
            new.items.extend(self.copy(i) for i in v.unpack(tx))
            return new
        if isinstance(v, kinds.TupleValue) and v.python_type() is tuple:
            items = [self.copy(i) for i in v.unpack(tx)]
            done = self.memo.get(id(v))   # (a cycle through the tuple)
            if done is not None:
                return done
            if all(a is b for a, b in zip(items, v.items)):
                return v
            return kinds.TupleValue(items)
        if isinstance(v, kinds.DictValue) and v.python_type() is dict and type(v).__name__ == "DictValue":
            from ..containers.keys import has_value_keys
            if has_value_keys(v.items):
                raise Unsupported("copy.deepcopy of a dict keyed by objects")
            new = kinds.DictValue({})
            self.memo[id(v)] = new
            for k, item in list(v.items.items()):
                if not isinstance(k, _ATOMIC):
                    raise Unsupported(f"copy.deepcopy of a dict with the key {k!r}")
                new.items[k] = self.copy(item)
            return new
        if v.is_python_constant():
            c = v.as_python_constant()
            if type(c) in (tuple, frozenset) and _atomic_tree(c):
                return v
        raise Unsupported(f"copy.deepcopy of {v}", hint="only plain objects, lists, tuples, dicts and constants "
                                                       "are copied while tracing")


def _atomic_tree(c) -> bool:
    if type(c) in (tuple, frozenset):
        return all(_atomic_tree(i) for i in c)
    return isinstance(c, _ATOMIC)


def _deepcopy(tx, x, memo=None, _nil=None):
    if memo is not None and not (memo.is_python_constant() and memo.as_python_constant() is None) or _nil is not None:
        raise Unsupported("copy.deepcopy with a memo")
    return _DeepCopier(tx).copy(x)


_std_function(copy.deepcopy, _deepcopy)
