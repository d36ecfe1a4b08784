"""Dict and set keys.

A traced dict (or set) keeps its items in a real Python dict (or set), so
that insertion order, equal-key merging (``1``, ``1.0`` and ``True`` are one
key) and the set algebra are CPython's own.  A key that is a plain constant
(a number, a string, a tuple of them...) is stored as itself.  Any other key
is stored as a ``ValueKey``: it remembers the Value (so iterating the dict
gives back the very Value that was put in, a tensor stays a tensor) and
hashes and compares the way CPython would hash and compare the real object:

* objects hashed by identity (tensors, parameters, modules, functions, plain
  user objects, dtypes and other objects whose type keeps ``object.__hash__``)
  by the identity of their Value (the builder wraps each real object once per
  trace, and every object made in the trace is one Value);
* objects known while tracing (classes, functions, dtypes, enum members) by
  the real object, so they meet the same key stored as a plain constant;
* tuples (``torch.Size`` and namedtuples included) item by item.

Anything else (a user ``__hash__``, a symbolic number) is Unsupported; an
unhashable key (a list, a dict, a class with ``__eq__`` and no ``__hash__``)
raises CPython's TypeError.

The order of a *set* of identity-hashed objects depends on their addresses,
so a set holding one is not iterated while tracing (see ``SetValue``).
"""
from __future__ import annotations

import inspect
import types
from typing import Any

import torch

from ...diagnostics.errors import Unsupported, user_error
from ..base import LazyValue, Value
from ..constant import ConstantValue
from ..builder import wrap
from .. import kinds

#: types whose constants are stored as themselves (the pre-existing keys)
_PLAIN = (int, float, bool, str, bytes, complex, type(None), type(Ellipsis))
_NOT_CONSTANT = object()


class _Identity:
    """The stand-in of an object hashed by identity: one per Value."""

    __slots__ = ("value",)

    def __init__(self, value: Value):
        self.value = value

    def __hash__(self):
        return id(self.value) >> 4

    def __eq__(self, other):
        return type(other) is _Identity and other.value is self.value

    def __repr__(self):
        return f"id({self.value!r})"


class _UserHashed:
    """The stand-in of a user object whose class defines ``__hash__`` in
    Python: the hash is what the inlined ``__hash__`` returned when the key
    was made (as CPython computes it once per operation), and equality runs
    the inlined ``__eq__`` -- stored key first, as dict lookups compare --
    after the identity shortcut."""

    __slots__ = ("value", "h", "tx")

    def __init__(self, value: Value, h: int, tx):
        self.value, self.h, self.tx = value, h, tx

    def __hash__(self):
        return hash(self.h)

    def __eq__(self, other):
        if type(other) in (_UserHashed, _Identity):
            other_v = other.value
        elif type(other) is tuple:
            raise Unsupported("comparing a user-hashed dict key with a tuple key")
        else:
            other_v = ConstantValue(other)
        if other_v is self.value:
            return True
        from ..operations.operators import compare_op
        import operator
        return compare_op(self.tx, operator.eq, self.value, other_v).truth(self.tx)

    def __repr__(self):
        return f"hash({self.value!r})"


class ValueKey:
    """A dict/set key that must be rebuilt from its Value.  ``ident`` stands
    in for the real key in hashing and comparisons (see the module text)."""

    __slots__ = ("value", "ident")

    def __init__(self, value: Value, ident: Any):
        self.value, self.ident = value, ident

    def __hash__(self):
        return hash(self.ident)

    def __eq__(self, other):
        if type(other) is ValueKey:
            return self.ident == other.ident
        return self.ident == other

    def __repr__(self):
        return f"Key({self.value!r})"


def _plain(obj: Any) -> bool:
    t = type(obj)
    if t in _PLAIN:
        return True
    if t is tuple or t is frozenset:
        return all(_plain(i) for i in obj)
    return False


def _identity_hashed(t: type) -> bool:
    h = getattr(t, "__hash__", None)
    return h is object.__hash__ or h is torch.Tensor.__hash__


def make_key(v: Value, tx=None, ctx=None) -> Any:
    """The dict/set key for the Value ``v`` (``tx`` realizes lazy Values
    and specializes symbolic numbers, as hashing reads the value; ``ctx``
    stands for it where a real container's keys are read without a frame)."""
    if type(v) is LazyValue:
        v = v.realize(tx.ctx if tx is not None else None)
    if isinstance(v, kinds.SymbolicNumberValue) or isinstance(v, kinds.FormattedStringValue):
        if tx is None:
            raise Unsupported(f"dict key {v}, a number not known while tracing")
        v = v.specialize(tx)
    if v.is_python_constant():
        try:
            obj = v.as_python_constant()
        except Unsupported:
            obj = _NOT_CONSTANT
        if obj is not _NOT_CONSTANT:
            try:
                hash(obj)
            except TypeError as e:   # (names the unhashable part: "unhashable type: 'list'")
                raise user_error(TypeError, str(e))
            if type(v) is ConstantValue or _plain(obj):
                return obj          # rebuilt as ConstantValue(obj), as it was made
            return ValueKey(v, obj)
    if isinstance(v, kinds.IdValue):   # (seen.add(id(obj)))
        if tx is None:
            raise Unsupported(f"dict key {v} outside a frame")
        from ..operations.identity import key_of
        return key_of(tx, v)
    if isinstance(v, kinds.TupleValue):
        parts = tuple(_ident_of(make_key(i, tx, ctx)) for i in v.items)
        if v.cls is not tuple and not _tuple_hash(v.cls):
            raise Unsupported(f"a {v.cls.__name__} (with its own __hash__/__eq__) as a dict key")
        return ValueKey(v, parts)
    try:
        t = v.python_type()
    except Unsupported:
        raise Unsupported(f"dict key {v} of a type not known while tracing")
    if getattr(t, "__hash__", None) is None:
        raise user_error(TypeError, f"unhashable type: '{t.__name__}'")
    if _identity_hashed(t) and _one_value_per_object(v):
        from ..nn.modules import is_generic_module_source
        if isinstance(v, kinds.ModuleValue) and v.source is not None and tx is not None \
                and is_generic_module_source(tx.ctx, v.source):
            # guarded by type only: which dict entry it matches is not known
            raise Unsupported("a module passed in as any instance of its class used as a dict or set key",
                              hint="the lookup runs as Python (a graph break)")
        from ..operations.identity import guard_identity_key
        guard_identity_key(ctx if ctx is not None else getattr(tx, "ctx", None), v)
        return ValueKey(v, _Identity(v))
    if isinstance(v, kinds.ObjectValue) and tx is not None and isinstance(inspect.getattr_static(t, "__hash__"),
                                                                   types.FunctionType):
        return ValueKey(v, _UserHashed(v, _user_hash(tx, v, t), tx))
    from ..operations.runtime_text import RuntimeTextValue
    if isinstance(v, RuntimeTextValue):   # (hashed inside BUILD_MAP...: break where the text was made)
        raise v.unknown_at_origin("hashing")
    raise Unsupported(f"dict key {v}: a {t.__name__} hashed by its own __hash__",
                      hint="keys hashed by identity (tensors, modules, functions, plain objects) or "
                           "by value (constants, tuples of them) are modelled")



def _user_hash(tx, v: Value, t: type) -> int:
    h = v.dunder(tx, "__hash__").call(tx, [], {})
    if not h.is_python_constant():
        raise Unsupported(f"{t.__name__}.__hash__ returned a value not known while tracing")
    h = h.as_python_constant()
    if not isinstance(h, int):
        raise user_error(TypeError, "__hash__ method should return an integer")
    return h


def _tuple_hash(cls: type) -> bool:
    # (torch.Size hashes and compares as a tuple, through slots of its own on Python 3.14)
    return cls is torch.Size or cls.__hash__ is tuple.__hash__ and cls.__eq__ is tuple.__eq__


def _one_value_per_object(v: Value) -> bool:
    """Whether ``v`` stands for one real object, distinct from every other
    Value's (method Values, for example, are made anew on each read)."""
    return not isinstance(v, (kinds.BoundContainerMethod, kinds.BoundMethodValue))


def _ident_of(k: Any) -> Any:
    return k.ident if type(k) is ValueKey else k


def key_value(k: Any) -> Value:
    """The Value of a stored key."""
    return k.value if type(k) is ValueKey else ConstantValue(k)


def has_value_keys(keys) -> bool:
    return any(type(k) is ValueKey for k in keys)


def emit_key(out, k: Any) -> None:
    """Push the real key (residual code rebuilding a dict or a set)."""
    if type(k) is ValueKey:
        out.reconstruct(k.value)
    else:
        out.load_const(k)


def set_keys_in_order(ctx, obj, source) -> list:
    """The keys of a real set from outside the frame, in its iteration order
    (the i-th read from ``list(s)[i]``: position i at run time is what the
    trace saw at position i, so iterating in this order is eager's order)."""
    from ...guards.sources import DictEntrySource
    return [make_key(wrap(ctx, k, DictEntrySource(source, i, "set")), ctx=ctx) for i, k in enumerate(obj)]


def wrap_by_position(ctx, obj, source) -> dict | set:
    """A real dict (or set/frozenset) from outside the frame whose keys are
    not all constants, read entry by entry: the i-th key (and value) is
    wrapped from ``list(d)[i]`` (``list(d.values())[i]``), so tensor keys
    become graph inputs guarded like any other tensor (a new dict with new
    tensors of the same kind does not recompile), constant keys are guarded
    by value, and the same object met elsewhere is tied to it by the
    builder.  Returns the stored items (a dict, or a set for a set)."""
    from ...guards.guard import Guard, Kind
    from ...guards.sources import DictEntrySource
    if source is None:
        raise Unsupported(f"a {type(obj).__name__} with object keys reached without a source")
    ctx.guards.add(Guard(Kind.TYPE_MATCH, source, type(obj)))
    ctx.guards.add(Guard(Kind.LEN_MATCH, source, len(obj)))
    if isinstance(obj, (set, frozenset)):
        return set(set_keys_in_order(ctx, obj, source))
    items = {}
    for i, k in enumerate(list(obj)):
        key = make_key(wrap(ctx, k, DictEntrySource(source, i)), ctx=ctx)
        items[key] = wrap(ctx, dict.__getitem__(obj, k), DictEntrySource(source, i, "values"))
    return items
