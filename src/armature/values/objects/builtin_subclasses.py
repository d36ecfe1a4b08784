"""Instances of user subclasses of dict, OrderedDict, list and tuple.

Such an instance is an ObjectValue (attributes, methods, the class's own
overrides inlined) plus its builtin items: ``contents``, a DictValue,
ListValue or TupleValue that the base type's own methods (reached through
the class, super() or the special methods) act on.  One made in the frame
holds them from the start; a dict-subclass instance from outside is read
through dict's own ``__getitem__`` (``dict_contents``), and a list- or
tuple-subclass instance from outside (transformers' ``LogitsProcessorList``,
``StoppingCriteriaList``) through list's and tuple's own ``__len__``,
``__getitem__`` and, for its mutations, ``__setitem__`` and ``extend``
(``seq_contents``): the subclass's overrides stay the class's business and
run where the program calls them.  Split from
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
    """An instance of a list/tuple subclass: its items live in
    ``obj.contents`` (a ListValue/TupleValue; for one from outside the frame
    made on first use by ``seq_contents``)."""
    return isinstance(getattr(obj, "contents", None), (kinds.ListValue, kinds.TupleValue)) or _outside_seq(obj)


def _outside_seq(obj) -> bool:
    return getattr(obj, "contents", None) is None and not obj.is_new and obj.source is not None \
        and isinstance(obj.obj, (list, tuple))


def seq_contents(tx, obj: "ObjectValue"):
    """The items of an instance of a list/tuple subclass.  One from outside
    the frame is read through a view that calls list's (tuple's) own
    methods, never the subclass's overrides: a list's length is guarded when
    the trace looks at its items (appends alone need nothing, as for plain
    lists, values/containers/containers.LazyListValue), and its mutations are
    written back through the view."""
    contents = getattr(obj, "contents", None)
    if contents is not None:
        return contents
    if not _outside_seq(obj):
        raise Unsupported(f"the items of {obj}")
    view = _SeqViewSource(obj.source)
    if isinstance(obj.obj, list):
        contents = kinds.LazyListValue(_PlainSeqView(obj.obj), view, tx.ctx)
    else:
        items = tuple.__iter__(obj.obj)
        tx.ctx.guards.add(Guard(Kind.LEN_MATCH, view, tuple.__len__(obj.obj)))
        contents = kinds.TupleValue([wrap(tx.ctx, v, ItemSource(view, i)) for i, v in enumerate(items)],
                                    source=view)
    contents.owned_by = obj
    obj.contents = contents
    return contents


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


@dataclass(frozen=True)
class _SeqViewSource(Source):
    """The items of a list/tuple-subclass instance as list's (tuple's) own
    methods see them, for guards, item reads and write-backs."""

    parent: Source

    @property
    def base(self):
        return self.parent

    def expr(self, pool):
        return f"{pool.const(_PlainSeqView)}({pool.render(self.parent)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(_PlainSeqView)
        self.parent.emit(out)
        out.call(1)

    def __str__(self):
        return f"list({self.parent})"


class _PlainSeqView:
    """A list or tuple read and written through the base type's own slots
    (a subclass's ``__getitem__``/``__len__``/``__setitem__``/``extend``
    overrides are skipped, as the trace skipped them)."""

    __slots__ = ("s", "base")

    def __init__(self, s):
        self.s = s
        self.base = list if isinstance(s, list) else tuple

    def __len__(self):
        return self.base.__len__(self.s)

    def __getitem__(self, i):
        return self.base.__getitem__(self.s, i)

    def __iter__(self):
        return self.base.__iter__(self.s)

    def __setitem__(self, i, v):
        list.__setitem__(self.s, i, v)

    def extend(self, items):
        list.extend(self.s, items)

    def __getattr__(self, name):
        # (a method reached through list's own class, run after a graph break)
        return getattr(self.base, name).__get__(self.s, self.base)


#: methods of the base types called unbound on an instance
#: (``list.__getitem__(self, i)`` inside a subclass's override)
_UNBOUND = {list: ("__getitem__", "__len__", "__iter__", "__contains__", "__setitem__", "__delitem__",
                   "append", "extend", "insert", "pop", "remove", "clear", "index", "count", "copy",
                   "reverse", "sort"),
            tuple: ("__getitem__", "__len__", "__iter__", "__contains__", "index", "count"),
            dict: tuple(_DICT_READ_METHODS)}


def _plain_kind(owner: type):
    return {list: kinds.ListValue, tuple: kinds.TupleValue, dict: kinds.DictValue}[owner]


def _unbound_rule(owner: type, name: str, fn):
    """``list.name(obj, ...)``: the container method on ``obj``'s items --
    a subclass instance's (through the base type, never its overrides) or
    a plain container's; anything else folds on constants as before."""
    def handler(tx, *args, **kwargs):
        from ..base import realize
        from ..operations.builtins import fold_call
        if args:
            self_ = realize(tx.ctx, args[0])
            contents = None
            if isinstance(self_, kinds.ObjectValue) and isinstance(self_.cls, type) \
                    and issubclass(self_.cls, owner):
                if owner is dict:
                    if _dict_backed(self_) and (self_.is_new or name in _DICT_READ_METHODS):
                        contents = dict_contents(tx, self_)
                elif _seq_backed(self_):
                    contents = seq_contents(tx, self_)
            elif isinstance(self_, _plain_kind(owner)) and self_.python_type() is owner:
                contents = self_
            if contents is not None:
                return kinds.BoundContainerMethod(contents, name).call(tx, list(args[1:]), kwargs)
        return fold_call(fn, args, kwargs)
    return handler


_RULES: dict = {}


def unbound_rule(fn):
    """The rule for ``fn``, a method of list/tuple/dict called through its
    class (builtins.BuiltinValue asks), or None."""
    rule = _RULES.get(fn)
    if rule is None:
        owner = getattr(fn, "__objclass__", None)
        name = getattr(fn, "__name__", None)
        if name not in _UNBOUND.get(owner, ()) or getattr(owner, name, None) is not fn:
            return None
        rule = _RULES[fn] = _unbound_rule(owner, name, fn)
    return rule
