"""Tuples, lists, dicts, slices and iterators over them.

Containers created inside the frame are modelled item by item; containers
read from outside carry a Source so that returning them unchanged returns the
very same object.  Mutating a container that existed before the frame is a
side effect, which this milestone does not replay: it raises Unsupported.
"""
from __future__ import annotations

import operator

from typing import Any

import torch

from ...diagnostics.errors import Unsupported, UserException, user_error
from . import set_order
from ..base import Value, realize, type_name
from ..constant import ConstantValue
from .keys import ValueKey, emit_key, has_value_keys, key_value, make_key
from ..builder import wrap, wrap_constant_result
from .. import kinds


def unwrap_constants(args, kwargs, what: str):
    try:
        return ([a.as_python_constant() for a in args],
                {k: v.as_python_constant() for k, v in kwargs.items()})
    except Unsupported:
        raise Unsupported(f"{what} with arguments that are not known while tracing")


def is_constant_tree(v: Value) -> bool:
    if isinstance(v, ConstantValue):
        return True
    if isinstance(v, (TupleValue, ListValue)):
        return all(is_constant_tree(i) for i in v.items)
    return False


def container_attribute(v: Value, name: str) -> Value:
    """``v.name`` for a builtin container (list, tuple, dict, set, a dict
    view, and the collections types modelled on them): a method of its
    type, or CPython's AttributeError (``hasattr(d, "foo")`` is False, not
    a method that fails later).  Instances of these types have no
    attributes of their own, except those of a type with an instance dict
    (OrderedDict, namedtuple subclasses without ``__slots__``): one of those
    from outside the frame may hold any attribute, which is not modelled."""
    cls = v.python_type()
    if any(name in vars(klass) for klass in cls.__mro__):
        return BoundContainerMethod(v, name)
    if cls.__dictoffset__ and v.source is not None:
        raise Unsupported(f"attribute {name!r} of a {cls.__name__} from outside the frame "
                          "(its instance dict is not modelled)")
    raise user_error(AttributeError, f"'{type_name(cls)}' object has no attribute '{name}'")


class _Sequence(Value):
    mutable = False

    def __init__(self, items: list[Value], source=None):
        super().__init__(source)
        self.items = list(items)

    def unpack(self, tx):
        return list(self.items)

    def length(self, tx):
        return len(self.items)

    def truth(self, tx):
        return bool(self.items)

    def is_python_constant(self):
        return all(i.is_python_constant() for i in self.items)

    def as_python_constant(self):
        return self.python_type()(i.as_python_constant() for i in self.items) \
            if self.python_type() in (list, tuple) else self._const_other()

    def _const_other(self):
        return self.python_type()(*[i.as_python_constant() for i in self.items])

    def getitem(self, tx, index: Value) -> Value:
        if isinstance(index, SliceValue) or (isinstance(index, ConstantValue) and isinstance(index.value, slice)):
            sl = index.as_python_constant() if isinstance(index, ConstantValue) else index.as_slice()
            return self._new(self.items[sl])
        if isinstance(index, ConstantValue) and isinstance(index.value, int):
            try:
                return self.items[index.value]
            except IndexError:
                raise user_error(IndexError, f"{self.python_type().__name__} index out of range")
        raise Unsupported(f"indexing a {self.python_type().__name__} with {index}")

    def _new(self, items):
        return type(self)(items)

    def method(self, tx, name, args, kwargs):
        if name in _SEQ_DUNDERS and not kwargs:
            return self._dunder(tx, name, args)
        if name in ("index", "count") and not kwargs:
            target = args[0]
            from ..operations.operators import values_equal
            if name == "count":
                return ConstantValue(sum(values_equal(tx, i, target) for i in self.items))
            bounds = [a.as_python_constant() for a in args[1:3]] + [None, None]
            idx = range(len(self.items))[slice(bounds[0], bounds[1])]   # (start[, stop]), slice-like
            for i in idx:
                if values_equal(tx, self.items[i], target):
                    return ConstantValue(i)
            kind = "list" if isinstance(self, ListValue) else "tuple"
            raise user_error(ValueError, f"{kind}.index(x): x not in {kind}")
        raise Unsupported(f"{self.python_type().__name__}.{name}()")

    def getattr(self, tx, name):
        return container_attribute(self, name)

    def _dunder(self, tx, name, args):
        """The special methods an instance of a list/tuple subclass reaches
        through its class (len(obj), obj[i], iteration, ``in``, ``+``)."""
        from ..operations import operators as ops
        if name == "__len__" and not args:
            return ConstantValue(len(self.items))
        if name == "__getitem__" and len(args) == 1:
            return self.getitem(tx, realize(tx.ctx, args[0]))
        if name == "__contains__" and len(args) == 1:
            return ConstantValue(any(ops.values_equal(tx, i, args[0]) for i in list(self.items)))
        if name == "__iter__" and not args:
            if isinstance(self, ListValue):
                return IteratorValue(self.items, self)
            from . import iterator_types
            return iterator_types.of(IteratorValue(list(self.items)), self)
        if name == "__add__" and len(args) == 1:
            return ops.binary_op(tx, operator.add, self._new(list(self.items)), args[0])
        if name in ("__eq__", "__ne__") and len(args) == 1:
            other = realize(tx.ctx, args[0])
            base = list if isinstance(self, ListValue) else tuple
            if isinstance(other, kinds.ObjectValue):
                from ..objects.builtin_subclasses import _seq_backed, seq_contents
                if not (isinstance(other.cls, type) and issubclass(other.cls, base) and _seq_backed(other)):
                    return ConstantValue(NotImplemented)
                other = seq_contents(tx, other)
            if not (isinstance(other, _Sequence) and issubclass(other.python_type(), base)):
                return ConstantValue(NotImplemented)
            same = len(self.items) == len(other.items) and \
                all(ops.values_equal(tx, a, b) for a, b in zip(self.items, other.items))
            return ConstantValue(same if name == "__eq__" else not same)
        if name in ("__mul__", "__rmul__") and len(args) == 1:
            return ops.binary_op(tx, operator.mul, self._new(list(self.items)), args[0])
        if name == "__setitem__" and len(args) == 2 and isinstance(self, ListValue):
            self.setitem(tx, realize(tx.ctx, args[0]), args[1])
            return ConstantValue(None)
        if name == "__delitem__" and len(args) == 1 and isinstance(self, ListValue):
            self.delitem(tx, realize(tx.ctx, args[0]))
            return ConstantValue(None)
        if name == "__init__" and len(args) <= 1 and isinstance(self, ListValue):
            self._check_mutable(tx)
            new = tx.iterate(args[0]) if args else []
            self.items.clear()
            self.items.extend(new)
            return ConstantValue(None)
        if name == "__iadd__" and len(args) == 1 and isinstance(self, ListValue):
            self.method(tx, "extend", args, {})
            return getattr(self, "owned_by", None) or self   # (list.__iadd__ returns the list itself)
        raise Unsupported(f"{self.python_type().__name__}.{name}() with these arguments")


_SEQ_DUNDERS = frozenset({"__len__", "__getitem__", "__contains__", "__iter__", "__add__", "__setitem__",
                          "__delitem__", "__init__", "__iadd__", "__mul__", "__rmul__", "__eq__", "__ne__"})


class TupleValue(_Sequence):
    def __init__(self, items, cls: type = tuple, source=None):
        super().__init__(items, source)
        self.cls = cls

    def python_type(self):
        return self.cls

    def _new(self, items):
        # (a slice of a torch.Size is a torch.Size; of a namedtuple or another
        # tuple subclass, a tuple)
        return TupleValue(items, cls=torch.Size if self.cls is torch.Size else tuple)

    def as_python_constant(self):
        vals = [i.as_python_constant() for i in self.items]
        if self.cls is tuple:
            return tuple(vals)
        if self.cls is torch.Size:
            return torch.Size(vals)
        return self.cls(*vals)

    def getattr(self, tx, name):
        # namedtuples have _fields; structseqs (torch.return_types.*) __match_args__
        fields = getattr(self.cls, "_fields", None) or getattr(self.cls, "__match_args__", None)
        if fields and name in fields:
            return self.items[fields.index(name)]
        return super().getattr(tx, name)

    def reconstruct(self, out):
        if self.source is not None:
            return super().reconstruct(out)
        if self.cls is tuple:
            for i in self.items:
                out.reconstruct(i)
            out.instr("BUILD_TUPLE", len(self.items))
            return
        if hasattr(self.cls, "_fields"):  # namedtuple: cls(*items)
            out.instr("PUSH_NULL")
            out.load_const(self.cls)
            for i in self.items:
                out.reconstruct(i)
            out.call(len(self.items))
            return
        # torch.Size, structseqs: cls(tuple)
        out.instr("PUSH_NULL")
        out.load_const(self.cls)
        for i in self.items:
            out.reconstruct(i)
        out.instr("BUILD_TUPLE", len(self.items))
        out.call(1)

    def __repr__(self):
        return f"Tuple({self.items!r})"


class ListValue(_Sequence):
    mutable = True

    def python_type(self):
        return list

    def _new(self, items):
        return ListValue(items)

    def as_python_constant(self):
        return [i.as_python_constant() for i in self.items]

    def _check_mutable(self, tx, what=None):
        if self.source is not None:
            tx.ctx.effects.container_mutated(self)

    def method(self, tx, name, args, kwargs):
        items = self.items
        if name in ("append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort"):
            self._check_mutable(tx)
        if name == "append":
            items.append(args[0])
            return ConstantValue(None)
        if name == "extend":
            items.extend(tx.iterate(args[0]))
            return ConstantValue(None)
        if name == "insert":
            items.insert(args[0].as_python_constant(), args[1])
            return ConstantValue(None)
        if name == "pop":
            idx = args[0].as_python_constant() if args else -1
            if not items:
                raise user_error(IndexError, "pop from empty list")
            return items.pop(idx)
        if name == "clear":
            items.clear()
            return ConstantValue(None)
        if name == "reverse":
            items.reverse()
            return ConstantValue(None)
        if name == "copy":
            return ListValue(list(items))
        if name == "sort":
            from ..operations.builtins import sorted_values
            key = kwargs.get("key")
            rev = kwargs.get("reverse", ConstantValue(False)).as_python_constant()
            items[:] = sorted_values(tx, items, key, rev, in_place=True)
            return ConstantValue(None)
        if name == "remove":
            from ..operations.operators import values_equal
            for i, v in enumerate(items):
                if values_equal(tx, v, args[0]):
                    del items[i]
                    return ConstantValue(None)
            raise user_error(ValueError, "list.remove(x): x not in list")
        return super().method(tx, name, args, kwargs)

    def setitem(self, tx, index: Value, value: Value):
        self._check_mutable(tx)
        key = index.as_python_constant()
        new = tx.iterate(value) if isinstance(key, slice) else value
        try:
            self.items[key] = new
        except (IndexError, ValueError, TypeError) as e:  # the program's own error (eager raises it here)
            from ..operations.operators import folded_exception
            raise folded_exception(operator.setitem, e) from None

    def delitem(self, tx, index: Value):
        self._check_mutable(tx)
        try:
            del self.items[index.as_python_constant()]
        except (IndexError, TypeError) as e:
            from ..operations.operators import folded_exception
            raise folded_exception(operator.delitem, e) from None

    def reconstruct(self, out):
        if self.source is not None:
            return super().reconstruct(out)
        if getattr(self, "owned_by", None) is not None:
            raise Unsupported("rebuilding the items of a list-subclass instance apart from it")
        for i in self.items:
            out.reconstruct(i)
        out.instr("BUILD_LIST", len(self.items))

    def __repr__(self):
        return f"List({self.items!r})"


class DictValue(Value):
    """A dict.  ``items`` is a real dict from keys (constants, or ValueKeys
    for tensors, modules, functions... see keys.py) to Values."""

    def __init__(self, items: dict[Any, Value], cls: type = dict, source=None):
        super().__init__(source)
        self.items = dict(items)
        self.cls = cls

    def python_type(self):
        return self.cls

    def truth(self, tx):
        return bool(self.items)

    def length(self, tx):
        return len(self.items)

    def unpack(self, tx):
        return [key_value(k) for k in self.items]

    def get_iter(self, tx):
        return DictViewIterator(DictViewValue(self, "keys"), tx)

    def is_python_constant(self):
        return not has_value_keys(self.items) and all(v.is_python_constant() for v in self.items.values())

    def as_python_constant(self):
        if has_value_keys(self.items):
            return super().as_python_constant()
        return self.cls((k, v.as_python_constant()) for k, v in self.items.items())

    def getitem(self, tx, key: Value) -> Value:
        k = _key(key, tx)
        if k not in self.items:
            raise _key_error(k)
        return self.items[k]

    def _check_mutable(self, tx, what=None):
        if self.source is not None:
            tx.ctx.effects.container_mutated(self)

    def setitem(self, tx, key: Value, value: Value):
        k = _key(key, tx)
        self._check_mutable(tx)
        self.items[k] = value

    def delitem(self, tx, key: Value):
        k = _key(key, tx)
        if k not in self.items:
            raise _key_error(k)
        self._check_mutable(tx)
        del self.items[k]

    def getattr(self, tx, name):
        return container_attribute(self, name)

    def method(self, tx, name, args, kwargs):
        items = self.items
        if name == "get":
            k = _key(args[0], tx)
            return items.get(k, args[1] if len(args) > 1 else ConstantValue(None))
        if name in ("keys", "values", "items") and not args and not kwargs:
            return DictViewValue(self, name)
        if name == "copy":
            return DictValue(items, self.cls)
        if name in ("update", "setdefault", "pop", "popitem", "clear"):
            self._check_mutable(tx)
        if name == "update":
            if args:   # (a mapping read as dict_merge reads it, or pairs: mapping_merge.py)
                from .mapping_merge import update_entries
                items.update(update_entries(tx, args[0]))
            for k, v in kwargs.items():
                items[k] = v
            return ConstantValue(None)
        if name == "setdefault":
            k = _key(args[0], tx)
            if k not in items:
                items[k] = args[1] if len(args) > 1 else ConstantValue(None)
            return items[k]
        if name == "pop":
            k = _key(args[0], tx)
            if k in items:
                return items.pop(k)
            if len(args) > 1:
                return args[1]
            raise _key_error(k)
        if name == "popitem":
            if not items:
                raise user_error(KeyError, "popitem(): dictionary is empty")
            k, v = items.popitem()
            return TupleValue([key_value(k), v])
        if name == "clear":
            items.clear()
            return ConstantValue(None)
        if name == "__contains__":
            return ConstantValue(_key(args[0], tx) in items)
        if name == "__setitem__":
            self.setitem(tx, args[0], args[1])
            return ConstantValue(None)
        if name == "__getitem__":
            return self.getitem(tx, args[0])
        if name == "__delitem__":
            self.delitem(tx, args[0])
            return ConstantValue(None)
        if name == "__len__":
            return ConstantValue(len(items))
        if name == "__init__":     # dict.__init__ of a dict-subclass instance: update()
            return self.method(tx, "update", args, kwargs)
        if name == "__iter__":
            return DictViewIterator(DictViewValue(self, "keys"), tx)
        if name == "move_to_end":
            k = _key(args[0], tx)
            last = kwargs.get("last", args[1] if len(args) > 1 else ConstantValue(True)).as_python_constant()
            v = items.pop(k)
            if last:
                items[k] = v
            else:
                self.items = {k: v, **items}
            return ConstantValue(None)
        raise Unsupported(f"dict.{name}()")

    def reconstruct(self, out):
        if self.source is not None:
            return super().reconstruct(out)
        if self.cls is not dict:
            out.instr("PUSH_NULL")
            out.load_const(self.cls)
        out.build_map(self.items)
        if self.cls is not dict:
            out.call(1)

    def __repr__(self):
        return f"Dict({self.items!r})"


def dict_fromkeys(tx, cls: type, iterable=None, value=None, *rest, **kwargs):
    """``cls.fromkeys(iterable, value=None)`` (dict_fromkeys in
    Objects/dictobject.c): ``cls()``, then ``d[key] = value`` for each key."""
    if kwargs:
        raise user_error(TypeError, "fromkeys() takes no keyword arguments")
    if iterable is None or rest:
        n = 0 if iterable is None else 2 + len(rest)
        raise user_error(TypeError, f"fromkeys expected at least 1 argument, got {n}" if n == 0
                         else f"fromkeys expected at most 2 arguments, got {n}")
    value = ConstantValue(None) if value is None else value
    import collections
    if cls is dict:
        d = DictValue({})
    elif cls is collections.defaultdict:
        d = kinds.DefaultDictValue({}, ConstantValue(None))
    elif cls is collections.OrderedDict:
        d = kinds.OrderedDictValue({})
    else:
        raise Unsupported(f"{cls.__name__}.fromkeys() of a dict subclass")
    for k in tx.iterate(iterable):
        d.items[_key(k, tx)] = value
    return d


def _key(v: Value, tx=None):
    """The stored form of the key ``v`` (keys.py)."""
    return make_key(v, tx)


def _key_error(k) -> Exception:
    if type(k) is ValueKey:
        raise Unsupported(f"a KeyError whose key is {k.value}",
                          hint="the exception would carry an object the trace cannot hand over")
    return UserException(KeyError, k)


def _address_ordered(k) -> bool:
    """Whether a set's order depends on where this key lives in memory
    (an object hashed by identity, alone or inside a tuple)."""
    from .keys import _Identity
    if type(k) is ValueKey:
        k = k.ident
    if type(k) is _Identity:
        return True
    return type(k) is tuple and any(_address_ordered(i) for i in k)


class SliceValue(Value):
    def __init__(self, start: Value, stop: Value, step: Value):
        super().__init__()
        self.start, self.stop, self.step = start, stop, step

    def python_type(self):
        return slice

    def as_slice(self):
        return slice(self.start.as_python_constant(), self.stop.as_python_constant(),
                     self.step.as_python_constant())

    def is_python_constant(self):
        return all(v.is_python_constant() for v in (self.start, self.stop, self.step))

    def as_python_constant(self):
        return self.as_slice()

    def reconstruct(self, out):
        # (a slice with a bound known only at run time, ``xs[idx:]`` with a
        # tensor ``idx``, left on the stack by a graph break at its use)
        for part in (self.start, self.stop, self.step):
            out.reconstruct(part)
        out.instr("BUILD_SLICE", 3)


class BoundContainerMethod(Value):
    def __init__(self, obj: Value, name: str):
        super().__init__()
        self.obj, self.name = obj, name

    def call(self, tx, args, kwargs):
        if self.name not in ("append", "insert", "setdefault"):
            args = [realize(tx.ctx, a) for a in args]
        return self.obj.method(tx, self.name, args, kwargs)

    def reconstruct(self, out):
        out.reconstruct(self.obj)
        out.instr("LOAD_ATTR", self.name)

    def __repr__(self):
        return f"<method {self.obj.python_type().__name__}.{self.name}>"


class IteratorValue(Value):
    """An iterator over a finite, known sequence of Values.  ``seq`` is the
    ListValue it walks, when it walks one (then appends are seen)."""

    def __init__(self, items: list[Value], seq: Value | None = None):
        super().__init__()
        self.items = items
        self.index = 0
        self.seq = seq

    def reconstruct(self, out):
        from ...runtime import replay
        if self.seq is not None:  # the list itself (one object with the frame's), so later appends are seen
            out.instr("PUSH_NULL")
            out.load_const(replay.list_iterator_at)
            out.reconstruct(self.seq)
            out.load_const(self.index)
            out.call(2)
            return
        for v in self.items[self.index:]:
            out.reconstruct(v)
        out.instr("BUILD_TUPLE", len(self.items) - self.index)
        out.instr("GET_ITER")

    #: the real iterator's type, where it is not a list's (values/containers/iterator_types.py)
    kind: type | None = None

    def python_type(self):
        return self.kind or type(iter([]))

    def next(self, tx) -> Value | None:
        if self.index >= len(self.items):
            return None
        v = self.items[self.index]
        self.index += 1
        return v

    def unpack(self, tx):
        rest = self.items[self.index:]
        self.index = len(self.items)
        return rest


class UserIteratorValue(IteratorValue):
    """An instance of a user class with ``__next__``; StopIteration ends it."""

    def __init__(self, obj):
        super().__init__([])
        self.obj = obj

    def next(self, tx):
        from ...diagnostics.errors import UserException
        try:
            return self.obj.next_value(tx)
        except UserException as e:
            if issubclass(e.exc_type, StopIteration):
                return None
            raise

    def unpack(self, tx):
        out = []
        while (v := self.next(tx)) is not None:
            out.append(v)
        return out

    def reconstruct(self, out):
        out.reconstruct(self.obj)


class SetValue(Value):
    """A set (or, with ``cls=frozenset``, a frozenset made in the frame).
    ``items`` is a real set of keys (keys.py) kept in step with the traced
    operations (same insertions and removals in the same order), so
    iteration order is CPython's -- except for objects hashed by identity,
    whose order depends on their addresses: such a set is iterated only in
    the order of the real set it stands for (``real_order``: a set from
    outside the frame that the frame has not changed), otherwise not while
    tracing (membership, len, the set algebra and rebuilding it are fine)."""

    def __init__(self, items: set, source=None, cls: type = set):
        super().__init__(source)
        self.items = set(items)
        self.cls = cls
        #: the keys in the real set's iteration order, while the frame has
        #: not mutated it (builder: a set passed in holding objects)
        self.real_order: list | None = None
        #: how the set's table came to be (values/containers/set_order.py); None: not modelled
        self.recipe = set_order.of_real_set(self) if source is not None else \
            (set_order.empty() if not self.items else None)

    def add_key(self, k) -> None:
        """Insert a key (BUILD_SET, SET_ADD, set.add), recorded for replay."""
        self.items.add(k)
        set_order.record(self, ("add", k))

    def python_type(self):
        return self.cls

    def truth(self, tx):
        return bool(self.items)

    def length(self, tx):
        return len(self.items)

    def _ordered_keys(self) -> list:
        if self.real_order is not None:
            return list(self.real_order)
        if any(_address_ordered(k) for k in self.items):
            raise Unsupported(f"iterating a {self.cls.__name__} of objects hashed by identity",
                              hint="its order depends on memory addresses; iterate a list instead")
        return list(self.items)

    def unpack(self, tx):
        return [key_value(k) for k in self._ordered_keys()]

    def is_python_constant(self):
        return not has_value_keys(self.items)

    def as_python_constant(self):
        if has_value_keys(self.items):
            return super().as_python_constant()
        return self.cls(self.items)

    def _check_mutable(self, tx):
        self.real_order = None   # (the real set's order after a change is not modelled)
        if self.source is not None:
            tx.ctx.effects.container_mutated(self)

    def getattr(self, tx, name):
        return container_attribute(self, name)

    def method(self, tx, name, args, kwargs):
        items = self.items
        consts = [_key(a, tx) if name in ("add", "discard", "remove", "__contains__") else None for a in args]
        if name in _SET_MUTATORS:
            self._check_mutable(tx)
        if name == "add":
            self.add_key(consts[0])
            return ConstantValue(None)
        if name == "discard":
            items.discard(consts[0])
            set_order.record(self, ("discard", consts[0]))
            return ConstantValue(None)
        if name == "remove":
            if consts[0] not in items:
                raise user_error(KeyError, repr(consts[0]))
            items.remove(consts[0])
            set_order.record(self, ("discard", consts[0]))
            return ConstantValue(None)
        if name == "__contains__":
            return ConstantValue(consts[0] in items)
        if name == "pop":
            if not items:
                raise user_error(KeyError, "'pop from an empty set'")
            self._ordered_keys()
            set_order.record(self, None)
            return key_value(items.pop())
        if name == "clear":
            items.clear()
            set_order.record(self, ("clear",))
            return ConstantValue(None)
        if name == "copy":
            if self.cls is frozenset:
                return self
            out = SetValue(items)
            out.recipe = set_order.derived(("new_from", set_order.snapshot(tx, self)))
            return out
        snaps = [set_order.snapshot(tx, a) for a in args]
        others = [_const_iterable(tx, a) for a in args]
        if name.endswith("_update") or name == "update":
            getattr(items, name)(*others)
            set_order.record(self, None if None in snaps else ("call", name, snaps))
            return ConstantValue(None)
        if name in ("union", "intersection", "difference", "symmetric_difference"):
            out = SetValue(getattr(items, name)(*others), cls=self.cls)
            out.recipe = set_order.derived(("method", name, set_order.snapshot(tx, self), snaps)) \
                if None not in snaps else None
            return out
        if name in ("issubset", "issuperset", "isdisjoint"):
            return ConstantValue(getattr(items, name)(*others))
        raise Unsupported(f"set.{name}()")

    def binary(self, tx, op, other: "SetValue") -> Value:
        """``|``, ``&``, ``-``, ``^`` (and their in-place forms) of two sets
        holding objects: the same operation on the stored keys."""
        inplace = {operator.ior: operator.or_, operator.iand: operator.and_,
                   operator.isub: operator.sub, operator.ixor: operator.xor}
        base = inplace.get(op, op)
        if base not in (operator.or_, operator.and_, operator.sub, operator.xor):
            raise user_error(TypeError, f"unsupported operand type(s) for set operation {op.__name__}")
        other_snap = set_order.snapshot(tx, other)
        if op in inplace and self.cls is set:
            self._check_mutable(tx)
            self.items = base(self.items, other.items)   # (CPython keeps the object)
            set_order.record(self, ("iop", op.__name__, other_snap) if other_snap is not None else None)
            return self
        out = SetValue(base(self.items, other.items), cls=self.cls)
        out.recipe = set_order.derived(("binop", base.__name__, set_order.snapshot(tx, self), other_snap))
        return out

    def reconstruct(self, out):
        if self.source is not None:
            return super().reconstruct(out)
        if any(_address_ordered(k) for k in self.items):
            # its order follows addresses: replay how eager made it
            set_order.emit_rebuild(out, self)
            return
        if self.cls is frozenset:
            out.instr("PUSH_NULL")
            out.load_const(frozenset)
        for k in self.items:
            emit_key(out, k)
        out.instr("BUILD_SET", len(self.items))
        if self.cls is frozenset:
            out.call(1)

    def __repr__(self):
        return f"Set({self.items!r})"


_SET_MUTATORS = frozenset({"add", "discard", "remove", "pop", "clear", "update", "difference_update",
                           "intersection_update", "symmetric_difference_update"})


def _const_iterable(tx, v: Value):
    if isinstance(v, SetValue):
        return set(v.items)
    return [_key(i, tx) for i in tx.iterate(v)]


class LazyListValue(ListValue):
    """A list that existed before the frame, read lazily.

    Appending needs nothing about the list but its type, so ``log.append(x)``
    or ``history += [y]`` on a list that grows every call is recorded as an
    append (replayed as ``lst.append``) without guarding the length -- a
    growing list does not recompile.  Anything that looks at the contents
    (len, iteration, indexing, other mutations) realizes it: the length and
    items are guarded from then on, and pending appends become part of the
    final contents that are written back."""

    def __init__(self, obj: list, source, ctx):
        super().__init__([], source)
        self.obj = obj
        self.ctx = ctx
        self._items: list | None = None
        self.appended: list = []      # pending appends while unrealized
        self.append_record = None

    @property
    def items(self):
        if self._items is None:
            self._realize()
        return self._items

    @items.setter
    def items(self, value):
        self._items = value

    def _realize(self):
        from ...guards.guard import Guard, Kind
        from ...guards.sources import ItemSource
        ctx = self.ctx
        ctx.guards.add(Guard(Kind.LEN_MATCH, self.source, len(self.obj)))
        self._items = [wrap(ctx, v, ItemSource(self.source, i)) for i, v in enumerate(self.obj)]
        if self.appended:
            # the appends are now part of the final contents written back
            self._items.extend(self.appended)
            self.appended = []
            ctx.effects.log.remove(self.append_record)
            ctx.effects.container_mutated(self)

    def symbolic_length(self):
        """``len()`` of a list whose length guard failed before: a symbolic
        number read at run time (appends stay unguarded); None otherwise."""
        if self._items is not None:
            return None
        from ..tensors.symbolic import BinOpSource, LengthSource
        src = LengthSource(self.source)
        if src not in self.ctx.dynamic_sources:
            return None
        import operator
        n = len(self.appended)
        expr = BinOpSource(operator.add, src, n) if n else src
        return kinds.SymbolicNumberValue(len(self.obj) + n, expr, self.ctx)

    def method(self, tx, name, args, kwargs):
        if self._items is None and name in ("append", "extend") and not kwargs:
            if name == "append":
                new = [args[0]]
            else:
                new = tx.iterate(args[0])
            if self.append_record is None:
                from ...effects import ListAppend
                self.append_record = ListAppend(self)
                tx.ctx.effects.record(self.append_record)
            else:
                tx.ctx.effects.writes += 1   # (one record for every append: graph/regions.py counts writes)
            self.appended.extend(new)
            return ConstantValue(None)
        return super().method(tx, name, args, kwargs)


class DictViewValue(Value):
    """``d.keys()`` / ``d.values()`` / ``d.items()``: a *live* view of a dict
    (a DictValue, or an object's instance dict): every use reads the dict's
    current contents, iteration raises if the dict changes size meanwhile,
    and keys views support set operations and set equality as in CPython."""

    def __init__(self, owner: Value, kind: str):
        super().__init__()
        self.owner, self.kind = owner, kind

    def python_type(self):
        return type(getattr({}, self.kind)())

    def _keys(self, tx) -> list:
        o = self.owner
        return list(o.items) if isinstance(o, DictValue) else o._keys(tx)

    def _get(self, tx, k) -> Value:
        o = self.owner
        return o.items[k] if isinstance(o, DictValue) else o.getitem(tx, key_value(k))

    def elements(self, tx) -> list:
        keys = self._keys(tx)
        if self.kind == "keys":
            return [key_value(k) for k in keys]
        if self.kind == "values":
            return [self._get(tx, k) for k in keys]
        return [TupleValue([key_value(k), self._get(tx, k)]) for k in keys]

    def unpack(self, tx):
        return self.elements(tx)

    def get_iter(self, tx):
        return DictViewIterator(self, tx)

    def length(self, tx):
        return len(self._keys(tx))

    def truth(self, tx):
        return bool(self._keys(tx))

    def contains(self, tx, item) -> bool:
        from ..operations.operators import values_equal
        if self.kind == "keys":
            return _key(item, tx) in self._keys(tx)
        if self.kind == "values":
            return any(values_equal(tx, item, v) for v in self.elements(tx))
        if isinstance(item, ConstantValue) and type(item.value) is tuple:
            item = TupleValue([ConstantValue(v) for v in item.value])
        if not isinstance(item, TupleValue) or len(item.items) != 2:
            return False
        k = _key(item.items[0], tx)
        return k in self._keys(tx) and values_equal(tx, item.items[1], self._get(tx, k))

    def _real_keys_view(self, tx):
        return dict.fromkeys(self._keys(tx)).keys()

    def binary(self, tx, op, other: Value, reflected: bool) -> Value:
        """Set operations of a keys view (with constants or another keys view)."""
        if self.kind != "keys":
            raise Unsupported(f"{op.__name__} of a dict {self.kind}() view")
        if isinstance(other, DictViewValue) and other.kind == "keys":
            o = other._real_keys_view(tx)
        elif other.is_python_constant():
            o = other.as_python_constant()
        else:
            raise Unsupported(f"{op.__name__} of a dict keys view and {other}")
        from ..operations.operators import _fold
        mine = self._real_keys_view(tx)
        return wrap_constant_result(_fold(op, o, mine) if reflected else _fold(op, mine, o))

    def equals(self, tx, other: Value) -> bool:
        if other is self:
            return True
        if self.kind != "keys":
            if isinstance(other, DictViewValue) or other.is_python_constant():
                raise Unsupported(f"== of a dict {self.kind}() view")
            return False
        if isinstance(other, DictViewValue):
            if other.kind != "keys":
                return False
            return self._real_keys_view(tx) == other._real_keys_view(tx)
        if other.is_python_constant():
            return self._real_keys_view(tx) == other.as_python_constant()
        if isinstance(other, SetValue):
            return set(self._keys(tx)) == set(other.items)
        return False

    def getattr(self, tx, name):
        return container_attribute(self, name)

    def method(self, tx, name, args, kwargs):
        if name == "__len__" and not args:
            return ConstantValue(self.length(tx))
        if name == "__contains__" and len(args) == 1:
            return ConstantValue(self.contains(tx, args[0]))
        if name == "isdisjoint" and len(args) == 1 and self.kind == "keys":
            return ConstantValue(self._real_keys_view(tx).isdisjoint(_const_iterable(tx, args[0])))
        raise Unsupported(f"dict {self.kind}().{name}()")

    def reconstruct(self, out):
        out.instr("PUSH_NULL")
        out.reconstruct(self.owner)
        out.instr("LOAD_ATTR", self.kind)
        out.call(0)

    def __repr__(self):
        return f"<dict {self.kind} view of {self.owner!r}>"


class DictViewIterator(IteratorValue):
    """Iterating a dict view: the elements when iteration began, and
    CPython's check that the dict does not change size meanwhile."""

    def __init__(self, view: DictViewValue, tx):
        keys = view._keys(tx)
        super().__init__(view.elements(tx))
        self.view, self.keys, self.size = view, keys, len(keys)
        self.kind = type(iter(getattr({}, view.kind)()))   # (dict_keyiterator, dict_valueiterator...)

    def next(self, tx):
        if len(self.view._keys(tx)) != self.size:
            raise user_error(RuntimeError, "dictionary changed size during iteration")
        if self.index >= len(self.items):
            return None
        # values and items are read when reached, as the dict iterator does
        k = self.keys[self.index]
        self.index += 1
        if self.view.kind == "keys":
            return key_value(k)
        v = self.view._get(tx, k)
        return v if self.view.kind == "values" else TupleValue([key_value(k), v])

    def reconstruct(self, out):
        from ...runtime import replay
        if has_value_keys(self.keys):
            raise Unsupported("an iterator over a dict with object keys escaping the compiled frame")
        out.instr("PUSH_NULL")
        out.load_const(replay.DictKeyIter)
        out.reconstruct(self.view.owner)
        out.load_const(tuple(self.keys[self.index:]))
        out.load_const(self.size)
        out.load_const(self.view.kind)
        out.call(4)
