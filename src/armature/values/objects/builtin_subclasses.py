"""Instances of user subclasses of dict, OrderedDict, list and tuple.

Such an instance is an ObjectValue (attributes, methods, the class's own
overrides inlined) plus its builtin items: ``contents``, a DictValue,
ListValue or TupleValue that the base type's own methods (reached through
the class, super() or the special methods) act on.  One made in the frame
holds them from the start; a dict-subclass instance from outside is read
through dict's own ``__getitem__`` (``dict_contents``).  Split from
objects.py, which stays about attribute lookup and the object protocols.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Guard, Kind
from ...guards.sources import ItemSource, Source
from ..base import Value
from ..builder import wrap
from .. import kinds


_DICT_TYPES = (dict, collections.OrderedDict)


def _new_instance(cls, storage) -> "ObjectValue":
    obj = kinds.ObjectValue(None, None, cls=cls, is_new=True)
    if storage is list:
        obj.contents = kinds.ListValue([])
        obj.contents.owned_by = obj
    elif storage is not None:
        obj.contents = kinds.DictValue({}, cls=storage)
    return obj


def _new_tuple_instance(tx, cls, args, kwargs) -> "ObjectValue":
    """``MyTuple(iterable)`` with tuple's own __new__ (tuple's __init__ is
    object's, which ignores the arguments then)."""
    from .objects import _wrap_func, bind_attr
    if kwargs or len(args) > 1:
        raise user_error(TypeError, f"{cls.__name__} expected at most 1 argument, got {len(args) + len(kwargs)}")
    obj = kinds.ObjectValue(None, None, cls=cls, is_new=True)
    obj.contents = kinds.TupleValue(tx.iterate(args[0]) if args else [])
    obj.contents.owned_by = obj
    obj.storage_kind = tuple
    init_raw, owner, _ = _wrap_func(tx, cls).lookup(tx, "__init__")
    if init_raw is not object.__init__:
        init = bind_attr(tx, init_raw, owner, "__init__", obj, _wrap_func(tx, cls))
        init.call(tx, list(args), dict(kwargs))
    return obj


def _seq_backed(obj) -> bool:
    """An instance of a list/tuple subclass made in the frame: its items
    live in ``obj.contents`` (a ListValue/TupleValue)."""
    return isinstance(getattr(obj, "contents", None), (kinds.ListValue, kinds.TupleValue))


def _dict_backed(obj) -> bool:
    return getattr(obj, "contents", None) is not None or isinstance(obj.obj, dict)


_DICT_READ_METHODS = {"get", "keys", "values", "items", "__getitem__", "__contains__", "__len__",
                      "__iter__", "copy"}


def dict_contents(tx, obj: "ObjectValue"):
    """The items of an instance of a dict subclass that existed before the
    frame, as a read-only DictValue (keys and values guarded)."""
    if obj.is_new and getattr(obj, "contents", None) is not None:
        return obj.contents
    if obj.is_new or obj.source is None or not isinstance(obj.obj, dict):
        raise Unsupported(f"the dict contents of {obj}")
    cached = getattr(obj, "_contents", None)
    if cached is not None:
        return cached
    keys = list(dict.keys(obj.obj))
    if not all(type(k) in (str, int, bool) for k in keys):
        raise Unsupported(f"a {obj.cls.__name__} with keys that are not str/int")
    src = obj.source
    # (the keys as dict stores them: list(obj) would run an __iter__ override)
    tx.ctx.guards.add(Guard(Kind.DICT_KEYS, _DictKeysSource(src), keys))
    # read through dict's own __getitem__, not an override
    items = {k: wrap(tx.ctx, dict.__getitem__(obj.obj, k),
                     ItemSource(_DictViewSource(src), k)) for k in keys}
    d = kinds.DictValue(items, source=src)
    d.read_only = True
    obj._contents = d
    return d


@dataclass(frozen=True)
class _DictViewSource(Source):
    """``dict(obj)`` view for item reads that must skip a subclass's __getitem__."""

    parent: Source

    @property
    def base(self):
        return self.parent

    def expr(self, pool):
        return f"{pool.const(_as_plain_dict)}({pool.render(self.parent)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(_as_plain_dict)
        self.parent.emit(out)
        out.call(1)

    def __str__(self):
        return f"dict({self.parent})"


@dataclass(frozen=True)
class _DictKeysSource(Source):
    """``dict.keys(obj)``: the keys of a dict-subclass instance as dict
    stores them, whatever its ``keys``/``__iter__`` overrides say."""

    parent: Source

    @property
    def base(self):
        return self.parent

    def expr(self, pool):
        return f"{pool.const(dict.keys)}({pool.render(self.parent)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(dict.keys)
        self.parent.emit(out)
        out.call(1)

    def __str__(self):
        return f"dict.keys({self.parent})"


class _PlainDictView:
    __slots__ = ("d",)

    def __init__(self, d):
        self.d = d

    def __getitem__(self, k):
        return dict.__getitem__(self.d, k)


def _as_plain_dict(d):
    return _PlainDictView(d)


class UnboundDictMethod(Value):
    """A method of dict or OrderedDict read from the class and called with
    the instance first (``dict.__getitem__(self, k)`` in a dict subclass's
    own ``__getitem__``, ``dict.keys(d)``): the dict's own method acts on the
    instance's items, as through ``super()``; any other first argument is
    the C method's to handle (``fallback``, folded on constants)."""

    def __init__(self, owner: type, name: str, fallback: Value):
        super().__init__()
        self.owner, self.name, self.fallback = owner, name, fallback

    def python_type(self):
        return type(getattr(self.owner, self.name))

    def call(self, tx, args, kwargs):
        from ..base import realize
        if args:
            first = realize(tx.ctx, args[0])
            target = None
            if isinstance(first, kinds.DictValue) and issubclass(first.python_type(), self.owner):
                target = first
            elif isinstance(first, kinds.ObjectValue) and issubclass(first.python_type(), self.owner) \
                    and _dict_backed(first):
                if not first.is_new and self.name not in _DICT_READ_METHODS:
                    raise Unsupported(f"mutating the dict contents of {first} ({self.owner.__name__}.{self.name})")
                target = dict_contents(tx, first)
            if target is not None:
                return kinds.BoundContainerMethod(target, self.name).call(tx, list(args[1:]), kwargs)
        return self.fallback.call(tx, args, kwargs)

    def __repr__(self):
        return f"<unbound {self.owner.__name__}.{self.name}>"
