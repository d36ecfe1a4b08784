"""``module.__dict__`` inside traced code: the instance dict of an
nn.Module, as code that bypasses ``nn.Module.__getattr__``/``__setattr__``
reads and writes it (``"scale" in self.__dict__``, a custom ``__setattr__``
storing through ``self.__dict__[name] = value``).

It is a view over the module's Value, not a copy: reads see the trace's
pending writes (a plain attribute written in the frame is in the dict; a
parameter, buffer or submodule registered through ``nn.Module.__setattr__``
is not, as nn.Module removes it from ``__dict__``), and a write through it
is a write of the module's attribute that bypasses ``__setattr__``
(replayed as ``mod.__dict__[name] = value``).  Membership is guarded key by
key: an absent key by ``NOT_IN_DICT``, a present one by the guards of its
value (which fail when the key is gone).  Iterating it (``vars(self)``),
``len``, ``keys()``/``values()``/``items()`` (live views) read its keys,
guarded as a whole (``DICT_KEYS``).  Deleting through it is not modelled (a
graph break).
"""
from __future__ import annotations

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource, ItemSource
from ..base import Value, concrete, realize
from ..constant import ConstantValue
from ..builder import wrap
from .. import kinds


class ModuleDictView(Value):
    def __init__(self, owner):
        super().__init__()
        self.owner = owner

    def python_type(self):
        return dict

    def is_python_constant(self):
        return False

    def _key(self, tx, key: Value) -> str:
        k = concrete(tx, key)
        if not (k.is_python_constant() and type(k.as_python_constant()) is str):
            raise Unsupported(f"module.__dict__[{k}] with a key that is not a constant string")
        return k.as_python_constant()

    def _lookup(self, tx, name: str):
        """The value under ``name`` or None when absent (guarded)."""
        from ...effects import DELETED
        owner = self.owner
        if name in owner.attrs:
            v = owner.attrs[name]
            if v is DELETED or owner.write_kinds.get(name):   # registered: not in __dict__
                return None
            return v
        d = owner.mod.__dict__
        src = owner.source
        if name not in d:
            if src is not None:
                tx.ctx.guards.add(Guard(Kind.NOT_IN_DICT, src, name))
            return None
        item_src = ItemSource(AttrSource(src, "__dict__"), name) if src is not None else None
        value = d[name]
        if type(value) in (int, float) and item_src is not None:
            from .module_numbers import module_number   # (static ints, lazily guarded floats)
            return module_number(tx.ctx, value, item_src)
        return realize(tx.ctx, wrap(tx.ctx, value, item_src))

    def getitem(self, tx, index):
        name = self._key(tx, index)
        v = self._lookup(tx, name)
        if v is None:
            raise user_error(KeyError, name)
        return v

    def contains(self, tx, item) -> bool:
        return self._lookup(tx, self._key(tx, item)) is not None

    def setitem(self, tx, index, value):
        self.owner.store_in_dict(tx, self._key(tx, index), value)

    def getattr(self, tx, name):
        if name in ("get", "__contains__", "__getitem__", "__setitem__", "keys", "values", "items"):
            return _ViewMethod(self, name)
        raise Unsupported(f"module.__dict__.{name}")

    def names(self, tx) -> list[str]:
        """The keys in order (``vars(self)`` iterated): the real dict's,
        guarded, with the trace's pending writes (a new plain attribute goes
        last; a deleted or registered one leaves)."""
        from ...effects import DELETED
        owner = self.owner
        if owner.source is None:
            raise Unsupported("iterating the __dict__ of a module made in the frame")
        real = list(owner.mod.__dict__)
        tx.ctx.guards.add(Guard(Kind.DICT_KEYS, AttrSource(owner.source, "__dict__"), real))
        out = list(real)
        for name, v in owner.attrs.items():
            gone = v is DELETED or owner.write_kinds.get(name)
            if gone and name in out:
                out.remove(name)
            elif not gone and name not in out:
                out.append(name)
        return out

    def _keys(self, tx) -> list[str]:   # (for DictViewValue)
        return self.names(tx)

    def unpack(self, tx):
        return [ConstantValue(k) for k in self.names(tx)]

    def reconstruct(self, out):
        if self.owner.source is None:
            raise Unsupported("rebuilding the __dict__ of a module made in the frame")
        out.reconstruct(self.owner)
        out.instr("LOAD_ATTR", "__dict__")

    def length(self, tx):
        return len(self.names(tx))

    def truth(self, tx):
        return bool(self.names(tx))

    def __repr__(self):
        return f"<__dict__ of {self.owner}>"


class _ViewMethod(Value):
    def __init__(self, view: ModuleDictView, name: str):
        super().__init__()
        self.view, self.name = view, name

    def call(self, tx, args, kwargs):
        view = self.view
        if kwargs:
            raise Unsupported(f"module.__dict__.{self.name}() with keyword arguments")
        if self.name == "get" and len(args) in (1, 2):
            v = view._lookup(tx, view._key(tx, args[0]))
            return v if v is not None else (args[1] if len(args) == 2 else ConstantValue(None))
        if self.name == "__contains__" and len(args) == 1:
            return ConstantValue(view.contains(tx, args[0]))
        if self.name == "__getitem__" and len(args) == 1:
            return view.getitem(tx, args[0])
        if self.name == "__setitem__" and len(args) == 2:
            view.setitem(tx, args[0], args[1])
            return ConstantValue(None)
        if self.name in ("keys", "values", "items") and not args:
            return kinds.DictViewValue(view, self.name)   # (live: reads the view's keys on each use)
        raise user_error(TypeError, f"dict.{self.name}() got {len(args)} arguments")
