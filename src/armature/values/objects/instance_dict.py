"""``obj.__dict__`` of an object the trace models (values/objects/objects.py): item
writes bypass descriptors, and a replaced dict stays the object's."""
from __future__ import annotations

import collections as _collections
import inspect
import types
from typing import TYPE_CHECKING, Any

from ...diagnostics.errors import Unsupported, user_error
from ...effects import DELETED, AttrDelete, AttrStore, DictReplace
from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource, ItemSource, Source, constant_source
from ..base import Value
from ..constant import ConstantValue

from .objects import _MISSING  # (the one 'no such attribute' marker)
from .. import kinds

if TYPE_CHECKING:
    from .objects import ObjectValue



class InstanceDictValue(Value):
    """``obj.__dict__`` (the dict the object had when the frame began, or
    was made with): item writes bypass descriptors.  Once the frame assigns
    ``obj.__dict__ = d`` this Value is the *old* dict, no longer the
    object's: using it then is not modelled (a graph break)."""

    def __init__(self, owner: ObjectValue):
        super().__init__()
        self.owner = owner

    def python_type(self):
        return dict

    def _live(self) -> ObjectValue:
        if self.owner.dict_replaced:
            raise Unsupported("an instance dict read before `obj.__dict__ = ...` replaced it")
        return self.owner

    def getitem(self, tx, key):
        v = self._live().dict_get(tx, key.as_python_constant())
        if v is _MISSING:
            raise user_error(KeyError, f"{key.as_python_constant()!r}")
        return v

    def setitem(self, tx, key, value):
        owner = self._live()
        name = key.as_python_constant()
        owner.attrs[name] = value
        if not owner.is_new:
            tx.ctx.effects.record(AttrStore(owner, name, value, via_dict=True))

    def delitem(self, tx, key):
        owner = self._live()
        name = key.as_python_constant()
        if owner.dict_get(tx, name) is _MISSING:
            raise user_error(KeyError, f"{name!r}")
        owner.forget(name)
        if not owner.is_new:
            tx.ctx.effects.record(AttrDelete(owner, name, via_dict=True))

    def contains(self, tx, item) -> bool:
        key = item.as_python_constant()
        if type(key) is not str:
            return key in self._keys(tx)
        return self._live().dict_get(tx, key) is not _MISSING

    def equals(self, tx, other) -> bool:
        """``obj.__dict__ == other``: dict equality (same keys, equal values)."""
        from ..operations.operators import values_equal
        if other is self:
            return True
        keys = self._keys(tx)
        if isinstance(other, InstanceDictValue):
            okeys = other._keys(tx)
            oget = lambda k: other._live().dict_get(tx, k)  # noqa: E731
        elif isinstance(other, kinds.DictValue):
            okeys = list(other.items)
            oget = other.items.__getitem__
        elif issubclass(other.python_type(), dict):
            raise Unsupported("== between an instance __dict__ and another dict")
        else:
            return False
        if set(keys) != set(okeys):
            return False
        owner = self._live()
        return all(values_equal(tx, owner.dict_get(tx, k), oget(k)) for k in keys)

    def _keys(self, tx) -> list:
        return self._live().dict_keys(tx)

    def pairs(self, tx) -> list:
        """(key, Value) for every entry, in order: what dict(d) and d.copy() see."""
        owner = self._live()
        return [(k, owner.dict_get(tx, k)) for k in self._keys(tx)]

    def length(self, tx):
        return len(self._keys(tx))

    def unpack(self, tx):
        return [ConstantValue(k) for k in self._keys(tx)]

    def get_iter(self, tx):
        return kinds.DictViewIterator(kinds.DictViewValue(self, "keys"), tx)

    def truth(self, tx):
        return bool(self._keys(tx))

    def getattr(self, tx, name):
        return kinds.BoundContainerMethod(self, name)

    def method(self, tx, name, args, kwargs):
        owner = self._live()
        if name == "get":
            v = owner.dict_get(tx, args[0].as_python_constant())
            return (args[1] if len(args) > 1 else ConstantValue(None)) if v is _MISSING else v
        if name == "__contains__" and len(args) == 1:
            return ConstantValue(self.contains(tx, args[0]))
        if name == "__len__" and not args:
            return ConstantValue(self.length(tx))
        if name in ("keys", "values", "items") and not args and not kwargs:
            return kinds.DictViewValue(self, name)
        if name == "copy" and not args and not kwargs:
            return kinds.DictValue(dict(self.pairs(tx)))
        if name == "update" and len(args) == 1 and not kwargs:
            if isinstance(args[0], kinds.DictValue):
                for k, v in args[0].items.items():
                    self.setitem(tx, ConstantValue(k), v)
                return ConstantValue(None)
        raise Unsupported(f"obj.__dict__.{name}()")

    def reconstruct(self, out):
        # read in the first phase of an exit, before any write is replayed:
        # the dict the object had when the frame began
        owner = self.owner
        if owner.source is not None and not owner.is_new:
            AttrSource(owner.source, "__dict__").emit(out)
            return
        if owner.dict_replaced:
            raise Unsupported("the old instance dict of an object made in the frame")
        out.reconstruct(owner)
        out.instr("LOAD_ATTR", "__dict__")
