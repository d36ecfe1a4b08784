"""``types.MappingProxyType(d)`` made in the frame: a read-only view of a dict.

The proxy holds no items of its own: every read goes to the dict it views,
so writes to that dict (made later in the frame, through the dict) are seen
through the proxy, as in CPython.  Reads -- ``p[k]``, ``p.get``, ``in``,
``len``, iteration, ``keys``/``values``/``items``, ``copy`` (a plain dict)
-- are the dict's own; writes raise CPython's TypeError (item
assignment, deletion) or AttributeError (``update``, ``pop``...).  A proxy
leaving the frame (returned, stored, handed to a graph break) is rebuilt by
residual code as ``MappingProxyType(<the dict>)``.

A proxy passed in or read from a class's ``__dict__`` is an existing object:
``wrap_existing`` guards its keys (``list(proxy)``) like a dict's and reads
its items lazily through it (``proxy[k]``, guarded where read).  A proxy over anything but a
dict the trace models (a proxy of a proxy, of a user mapping) is Unsupported
(a graph break: the call runs natively).
"""
from __future__ import annotations

import types

from ...diagnostics.errors import Unsupported, user_error
from ..base import Value, realize, LazyValue
from .containers import BoundContainerMethod, DictValue
from ..constant import ConstantValue

_READS = frozenset({"get", "keys", "values", "items", "copy", "__contains__", "__getitem__", "__len__",
                    "__iter__"})


class MappingProxyValue(Value):
    def __init__(self, mapping: DictValue, source=None):
        super().__init__(source)
        self.mapping = mapping

    def python_type(self):
        return types.MappingProxyType

    def getitem(self, tx, key):
        return self.mapping.getitem(tx, key)

    def setitem(self, tx, key, value):
        raise user_error(TypeError, "'mappingproxy' object does not support item assignment")

    def delitem(self, tx, key):
        raise user_error(TypeError, "'mappingproxy' object does not support item deletion")

    def contains(self, tx, item) -> bool:
        return self.mapping.method(tx, "__contains__", [item], {}).value

    def length(self, tx):
        return self.mapping.length(tx)

    def truth(self, tx):
        return self.mapping.length(tx) > 0

    def unpack(self, tx):
        return self.mapping.unpack(tx)

    def get_iter(self, tx):
        return self.mapping.get_iter(tx)

    def getattr(self, tx, name):
        if name in _READS:
            return BoundContainerMethod(self, name)
        raise user_error(AttributeError, f"'mappingproxy' object has no attribute {name!r}")

    def method(self, tx, name, args, kwargs):
        if name not in _READS:
            raise user_error(AttributeError, f"'mappingproxy' object has no attribute {name!r}")
        if name == "__len__":
            return ConstantValue(self.mapping.length(tx))
        if name == "__iter__":
            return self.mapping.get_iter(tx)
        return self.mapping.method(tx, name, args, kwargs)

    def reconstruct(self, out):
        if self.source is not None:
            self.source.emit(out)
            return
        out.instr("PUSH_NULL")
        out.load_const(types.MappingProxyType)
        out.reconstruct(self.mapping)
        out.call(1)

    def __repr__(self):
        return f"MappingProxy({self.mapping!r})"


def mapping_proxy_rule(tx, *args, **kwargs):
    if kwargs or len(args) != 1:
        raise user_error(TypeError, f"mappingproxy() takes exactly one argument ({len(args) + len(kwargs)} given)")
    mapping = realize(tx.ctx, args[0])
    if isinstance(mapping, MappingProxyValue):
        return MappingProxyValue(mapping.mapping)
    if not isinstance(mapping, DictValue):
        raise Unsupported(f"MappingProxyType of {mapping}")
    return MappingProxyValue(mapping)


def wrap_existing(ctx, obj: types.MappingProxyType, source) -> MappingProxyValue | None:
    """A proxy read from ``source``; None for keys that are not constants."""
    from ...guards.guard import Guard, Kind
    from ...guards.sources import ItemSource
    keys = list(obj)
    if not all(type(k) in (str, int, bool, float, bytes, type(None)) for k in keys):
        return None
    ctx.guards.add(Guard(Kind.TYPE_MATCH, source, types.MappingProxyType))
    ctx.guards.add(Guard(Kind.DICT_KEYS, source, keys))
    items = {k: LazyValue(obj[k], ItemSource(source, k), ctx) for k in keys}
    return MappingProxyValue(DictValue(items), source)


def register(rules) -> None:
    rules[types.MappingProxyType] = mapping_proxy_rule
