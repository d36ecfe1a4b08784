"""collections: ``OrderedDict``, ``defaultdict`` and ``deque``, made in the
frame or passed in.  Follows Modules/_collectionsmodule.c (deque's
mutation counter, maxlen, error messages).  namedtuple lives in
namedtuple.py: its classes are user classes made by a factory.
"""
from __future__ import annotations

import collections
import sys

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Kind
from ...guards.sources import AttrSource, ItemSource
from ..base import Value
from ..constant import ConstantValue
from ..containers.containers import BoundContainerMethod, DictValue, TupleValue, _key, _key_error
from ..containers.keys import emit_key, key_value
from .common import (_TYPE_HANDLERS, _callable, _guard, _index, _is_none, _iter, _next, _std_class,
                     _wrap)
from .itertools import LazyIterator
from .. import kinds


def _refuse_outside_mutation(value: Value, what: str):
    if value.source is not None:
        raise Unsupported(f"{what} on a {value.python_type().__name__} that exists outside the compiled frame",
                          hint="side effects on this container type are not replayed yet")


class OrderedDictValue(DictValue):
    """``collections.OrderedDict``: a dict whose order is part of its value."""

    def __init__(self, items, source=None):
        super().__init__(items, cls=collections.OrderedDict, source=source)

    # (mutating one from outside the frame is recorded by DictValue and
    # written back as clear() + update() in the final order)

    def method(self, tx, name, args, kwargs):
        items = self.items
        if name == "copy":
            return OrderedDictValue(items)
        if name == "move_to_end":
            if not 1 <= len(args) + len(kwargs) <= 2 or set(kwargs) - {"last"} or not args:
                raise user_error(TypeError, "move_to_end() takes 1 or 2 arguments")
            self._check_mutable(tx)
            last = kwargs.get("last", args[1] if len(args) > 1 else ConstantValue(True))
            k = _key(args[0], tx)
            if k not in items:
                raise _key_error(k)
            v = items.pop(k)
            if last.truth(tx):
                items[k] = v
            else:
                self.items = {k: v, **items}
            return ConstantValue(None)
        if name == "popitem":
            if len(args) + len(kwargs) > 1 or set(kwargs) - {"last"}:
                raise user_error(TypeError, "popitem() takes at most 1 argument")
            self._check_mutable(tx)
            last = kwargs.get("last", args[0] if args else ConstantValue(True))
            if not items:
                raise user_error(KeyError, "dictionary is empty")
            k = next(reversed(items)) if last.truth(tx) else next(iter(items))
            return TupleValue([key_value(k), items.pop(k)])
        return super().method(tx, name, args, kwargs)

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.instr("PUSH_NULL")
        out.load_const(collections.OrderedDict)
        for k, v in self.items.items():
            emit_key(out, k)
            out.reconstruct(v)
            out.instr("BUILD_TUPLE", 2)
        out.instr("BUILD_LIST", len(self.items))
        out.call(1)

    def __repr__(self):
        return f"OrderedDict({self.items!r})"


class DefaultDictValue(DictValue):
    """``collections.defaultdict``: a missing key read through ``d[k]``
    calls ``default_factory()`` and stores the result."""

    def __init__(self, items, factory: Value, source=None):
        super().__init__(items, cls=collections.defaultdict, source=source)
        self.factory = factory

    # (mutating one from outside the frame is recorded by DictValue and
    # written back as clear() + update() in the final order)

    def getitem(self, tx, key):
        k = _key(key, tx)
        if k in self.items:
            return self.items[k]
        if _is_none(self.factory):
            raise _key_error(k)
        self._check_mutable(tx)
        v = self.factory.call(tx, [], {})
        self.items[k] = v
        return v

    def getattr(self, tx, name):
        if name == "default_factory":
            return self.factory
        return super().getattr(tx, name)

    def setattr(self, tx, name, value):
        if name != "default_factory":
            raise user_error(AttributeError, f"'collections.defaultdict' object has no attribute {name!r}")
        _refuse_outside_mutation(self, "setting default_factory")
        self.factory = value

    def method(self, tx, name, args, kwargs):
        if name == "copy":
            return DefaultDictValue(self.items, self.factory)
        if name == "__missing__":
            return self.getitem(tx, args[0])
        return super().method(tx, name, args, kwargs)

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.instr("PUSH_NULL")
        out.load_const(collections.defaultdict)
        if self.factory.is_python_constant():
            out.load_const(self.factory.as_python_constant())
        else:
            out.reconstruct(self.factory)
        out.build_map(self.items)
        out.call(2)

    def __repr__(self):
        return f"defaultdict({self.factory!r}, {self.items!r})"


def _fill_dict(tx, target: DictValue, args, kwargs, name: str):
    if len(args) > 1:
        raise user_error(TypeError, f"{name} expected at most 1 argument, got {len(args)}")
    if args:
        other = args[0]
        from ..containers.mapping_merge import has_keys, keys_then_items, mapping_entries
        if isinstance(other, DictValue):
            target.items.update(other.items)
        elif has_keys(other):   # (OrderedDict: keys() and [k]; defaultdict: dict's own init)
            target.items.update(keys_then_items(tx, other) if name == "OrderedDict" else mapping_entries(tx, other))
        else:
            for pair in tx.iterate(other):
                kv = tx.iterate(pair)
                if len(kv) != 2:
                    raise user_error(ValueError, f"dictionary update sequence element has length "
                                     f"{len(kv)}; 2 is required")
                target.items[_key(kv[0], tx)] = kv[1]
    for k, v in kwargs.items():
        target.items[k] = v


def _make_ordered_dict(tx, *args, **kwargs):
    out = OrderedDictValue({})
    _fill_dict(tx, out, args, kwargs, "OrderedDict")
    return out


def _od_fromkeys(tx, iterable, value=None):
    value = value if value is not None else ConstantValue(None)
    return OrderedDictValue({_key(k, tx): value for k in tx.iterate(iterable)})


def _make_defaultdict(tx, *args, **kwargs):
    factory = args[0] if args else ConstantValue(None)
    if not _is_none(factory) and not _callable(tx, factory):
        raise user_error(TypeError, "first argument must be callable or None")
    out = DefaultDictValue({}, factory)
    _fill_dict(tx, out, list(args[1:]), kwargs, "defaultdict")
    return out


def _wrap_dict_items(ctx, obj, source):
    keys = list(obj)
    if not all(type(k) in (str, int, bool) for k in keys):
        from ..containers.keys import wrap_by_position   # keys that are objects (tensors, modules...)
        return wrap_by_position(ctx, obj, source)
    _guard(ctx, Kind.TYPE_MATCH, source, type(obj))
    _guard(ctx, Kind.DICT_KEYS, source, keys)
    return {k: _wrap(ctx, obj[k], ItemSource(source, k) if source is not None else None) for k in keys}


def _wrap_ordered_dict(ctx, obj, source):
    if source is None:
        return None
    return OrderedDictValue(_wrap_dict_items(ctx, obj, source), source)


def _wrap_defaultdict(ctx, obj, source):
    if source is None:
        return None
    items = _wrap_dict_items(ctx, obj, source)
    factory = _wrap(ctx, obj.default_factory, AttrSource(source, "default_factory"))
    return DefaultDictValue(items, factory, source)


_std_class(collections.OrderedDict, _make_ordered_dict, {"fromkeys": _od_fromkeys})
_std_class(collections.defaultdict, _make_defaultdict)
_TYPE_HANDLERS[collections.OrderedDict] = _wrap_ordered_dict
_TYPE_HANDLERS[collections.defaultdict] = _wrap_defaultdict


class _DequeView(list):
    """What ``DequeValue.unpack`` returns: a snapshot for code that consumes
    it at once (list(d), sorted(d), ...), and, for an iterator that indexes
    it step by step, a live view that raises like CPython's deque iterator
    when the deque changes size during iteration."""

    def __init__(self, deque_value: "DequeValue"):
        super().__init__(deque_value.items)
        self._deque = deque_value
        self._state = deque_value.state

    def _check(self):
        if self._deque.state != self._state:
            raise user_error(RuntimeError, "deque mutated during iteration")

    def __len__(self):
        self._check()
        return super().__len__()

    def __getitem__(self, i):
        self._check()
        if isinstance(i, slice):
            if sys._getframe(1).f_code.co_name == "reconstruct":
                # IteratorValue.reconstruct would rebuild a deque iterator as a
                # tuple iterator, which no longer sees the deque change.
                raise Unsupported("rebuilding an iterator over a deque in residual code")
            return super().__getitem__(i)
        return self._deque.items[i]


class DequeIterator(LazyIterator):
    py_type = type(iter(collections.deque()))

    def __init__(self, d: "DequeValue"):
        super().__init__()
        self.d, self.state, self.pos, self.counter = d, d.state, 0, len(d.items)

    def next(self, tx):
        if self.d.state != self.state:
            self.counter = 0
            raise user_error(RuntimeError, "deque mutated during iteration")
        if self.counter == 0:
            return None
        v = self.d.items[self.pos]
        self.pos += 1
        self.counter -= 1
        return v


class DequeValue(Value):
    """``collections.deque``: a list of Values plus ``maxlen``.  ``state``
    counts the mutations CPython counts (for iteration checks)."""

    def __init__(self, items: list[Value], maxlen: int | None = None, source=None):
        super().__init__(source)
        self.items = list(items)
        self.maxlen = maxlen
        self.state = 0

    def python_type(self):
        return collections.deque

    def is_python_constant(self):
        return all(i.is_python_constant() for i in self.items)

    def as_python_constant(self):
        return collections.deque([i.as_python_constant() for i in self.items], self.maxlen)

    def length(self, tx):
        return len(self.items)

    def truth(self, tx):
        return bool(self.items)

    def unpack(self, tx):
        return _DequeView(self)

    def get_iter(self, tx):
        return DequeIterator(self)

    def contains(self, tx, item) -> bool:
        from ..operations.operators import values_equal
        return any(values_equal(tx, item, x) for x in list(self.items))

    def _mutate(self, tx, what):
        _refuse_outside_mutation(self, what)

    def _norm_index(self, index: Value) -> int:
        if isinstance(index, ConstantValue) and isinstance(index.value, slice):
            raise user_error(TypeError, "sequence index must be integer, not 'slice'")
        i = _index(index, "deque indexing")
        n = len(self.items)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise user_error(IndexError, "deque index out of range")
        return i

    def getitem(self, tx, index):
        if isinstance(index, kinds.SliceValue):
            raise user_error(TypeError, "sequence index must be integer, not 'slice'")
        return self.items[self._norm_index(index)]

    def setitem(self, tx, index, value):
        i = self._norm_index(index)
        self._mutate(tx, "item assignment")
        self.items[i] = value

    def delitem(self, tx, index):
        i = self._norm_index(index)
        self._mutate(tx, "item deletion")
        del self.items[i]
        self.state += 1

    def getattr(self, tx, name):
        if name == "maxlen":
            return ConstantValue(self.maxlen)
        if name in _DEQUE_METHODS:
            return BoundContainerMethod(self, name)
        if hasattr(collections.deque, name):
            raise Unsupported(f"deque.{name}")
        raise user_error(AttributeError, f"'collections.deque' object has no attribute {name!r}")

    # --- primitive mutations (CPython's deque_append_internal & co) -----------
    def _append(self, v):
        self.items.append(v)
        self.state += 1
        if self.maxlen is not None and len(self.items) > self.maxlen:
            self.items.pop(0)
            self.state += 1

    def _appendleft(self, v):
        self.items.insert(0, v)
        self.state += 1
        if self.maxlen is not None and len(self.items) > self.maxlen:
            self.items.pop()
            self.state += 1

    def _rotate(self, n):
        k = len(self.items)
        if k <= 1:
            return
        self.state += 1
        n %= k
        if n:
            self.items[:] = self.items[-n:] + self.items[:-n]

    def method(self, tx, name, args, kwargs):
        from ..operations.operators import values_equal
        items = self.items
        if kwargs:
            raise user_error(TypeError, f"deque.{name}() takes no keyword arguments")
        lo, hi = _DEQUE_ARITY.get(name, (0, 0))
        if not lo <= len(args) <= hi:
            raise user_error(TypeError, f"deque.{name}() takes {lo if lo == hi else f'{lo} to {hi}'} "
                             f"arguments ({len(args)} given)")
        if name in _DEQUE_MUTATORS:
            self._mutate(tx, f"deque.{name}()")
        if name == "append":
            self._append(args[0])
        elif name == "appendleft":
            self._appendleft(args[0])
        elif name in ("pop", "popleft"):
            if not items:
                raise user_error(IndexError, "pop from an empty deque")
            self.state += 1
            return items.pop() if name == "pop" else items.pop(0)
        elif name in ("extend", "extendleft"):
            src = args[0]
            vals = list(self.items) if src is self else None
            if vals is None:
                if self.maxlen == 0:
                    tx.iterate(src)  # consumed, nothing kept
                    return ConstantValue(None)
                it = _iter(tx, src)
                while (v := _next(tx, it)) is not None:
                    (self._append if name == "extend" else self._appendleft)(v)
            else:
                for v in vals:
                    (self._append if name == "extend" else self._appendleft)(v)
        elif name == "rotate":
            n = _index(args[0], "deque.rotate()") if args else 1
            self._rotate(n)
        elif name == "clear":
            if items:
                self.state += 1
            items.clear()
        elif name == "reverse":
            items.reverse()
        elif name == "copy":
            return DequeValue(items, self.maxlen)
        elif name == "count":
            return ConstantValue(sum(1 for x in list(items) if values_equal(tx, x, args[0])))
        elif name == "index":
            n = len(items)
            start = _index(args[1], "deque.index()") if len(args) > 1 else 0
            stop = _index(args[2], "deque.index()") if len(args) > 2 else n
            start, stop, _ = slice(start, stop).indices(n)
            for i in range(start, stop):
                if values_equal(tx, items[i], args[0]):
                    return ConstantValue(i)
            raise user_error(ValueError, f"{_repr_for_error(args[0])} is not in deque")
        elif name == "insert":
            i = _index(args[0], "deque.insert()")
            if self.maxlen is not None and len(items) == self.maxlen:
                raise user_error(IndexError, "deque already at its maximum size")
            items.insert(i, args[1])
            self.state += 1
        elif name == "remove":
            for i, x in enumerate(list(items)):
                if values_equal(tx, x, args[0]):
                    del items[i]
                    self.state += 1
                    return ConstantValue(None)
            raise user_error(ValueError, f"{_repr_for_error(args[0])} is not in deque")
        elif name == "__len__":
            return ConstantValue(len(items))
        elif name == "__contains__":
            return ConstantValue(self.contains(tx, args[0]))
        else:
            raise Unsupported(f"deque.{name}()")
        return ConstantValue(None)

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.instr("PUSH_NULL")
        out.load_const(collections.deque)
        for i in self.items:
            out.reconstruct(i)
        out.instr("BUILD_LIST", len(self.items))
        out.load_const(self.maxlen)
        out.call(2)

    def __repr__(self):
        return f"deque({self.items!r}, maxlen={self.maxlen})"


_DEQUE_MUTATORS = frozenset({"append", "appendleft", "pop", "popleft", "extend", "extendleft",
                             "rotate", "clear", "reverse", "insert", "remove"})
_DEQUE_METHODS = _DEQUE_MUTATORS | {"copy", "count", "index", "__len__", "__contains__"}
_DEQUE_ARITY = {"append": (1, 1), "appendleft": (1, 1), "extend": (1, 1), "extendleft": (1, 1),
                "rotate": (0, 1), "count": (1, 1), "index": (1, 3), "insert": (2, 2), "remove": (1, 1),
                "__contains__": (1, 1)}


def _repr_for_error(v: Value) -> str:
    if v.is_python_constant():
        return repr(v.as_python_constant())
    raise Unsupported("an error message showing a value not known while tracing")


def _make_deque(tx, iterable=None, maxlen=None, **kwargs):
    iterable = kwargs.pop("iterable", iterable)
    maxlen = kwargs.pop("maxlen", maxlen)
    if kwargs:
        raise user_error(TypeError, f"deque() got an unexpected keyword argument '{next(iter(kwargs))}'")
    m = None
    if maxlen is not None and not _is_none(maxlen):
        m = _index(maxlen, "deque()")
        if m < 0:
            raise user_error(ValueError, "maxlen must be non-negative")
    d = DequeValue([], m)
    if iterable is not None:
        d.method(tx, "extend", [iterable], {})
    d.state = 0
    return d


def _wrap_deque(ctx, obj, source):
    if source is None:
        return None
    _guard(ctx, Kind.TYPE_MATCH, source, collections.deque)
    _guard(ctx, Kind.LEN_MATCH, source, len(obj))
    _guard(ctx, Kind.CONSTANT_MATCH, AttrSource(source, "maxlen"), obj.maxlen)
    items = [_wrap(ctx, v, ItemSource(source, i)) for i, v in enumerate(obj)]
    return DequeValue(items, obj.maxlen, source)


_std_class(collections.deque, _make_deque)
_TYPE_HANDLERS[collections.deque] = _wrap_deque
