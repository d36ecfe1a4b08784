"""The entries of a mapping, read as CPython's ``dict_merge`` reads them.

``dict(m)``, ``d.update(m)``, ``{**m}`` and ``f(**m)`` all copy a mapping
into a dict through one C function, ``dict_merge``, which reads its
argument in one of two ways:

* a dict, or an instance of a dict subclass that keeps dict's own
  ``__iter__``: its storage, directly; a subclass's ``keys`` or
  ``__getitem__`` overrides are *not* called;
* anything else (a ``collections.abc.Mapping`` subclass, a dict subclass
  with its own ``__iter__``, an OrderedDict subclass): ``m.keys()``, then
  ``m[k]`` for each key, both through the object's own methods (inlined).

``dict(x)`` / ``d.update(x)`` use that when ``x`` has a ``keys`` attribute
and otherwise read ``x`` as a sequence of pairs, raising eager's errors for
an element that is not a pair; ``{**x}`` raises "is not a mapping" instead.
``OrderedDict(x)`` reads any ``x`` that is not exactly a dict through
``keys()`` and ``x[k]`` (CPython's ``mutablemapping_update``), a dict
subclass's overrides included.
"""
from __future__ import annotations

from ...diagnostics.errors import Unsupported, user_error
from ..base import Value, realize
from .keys import make_key


def _dict_storage(tx, other: Value):
    """The storage of an instance of a dict subclass that reads it as a
    dict does (its ``__iter__`` is dict's), else None."""
    from ..objects.objects import ObjectValue
    if not isinstance(other, ObjectValue):
        return None
    cls = other.python_type()
    if not (isinstance(cls, type) and issubclass(cls, dict) and cls.__iter__ is dict.__iter__):
        return None
    from ..objects.builtin_subclasses import _dict_backed, dict_contents
    if not _dict_backed(other):
        return None
    return dict_contents(tx, other).items


def has_keys(other: Value) -> bool:
    """Whether ``other`` has a ``keys`` attribute (what ``dict(x)`` asks to
    tell a mapping from a sequence of pairs)."""
    from .containers import DictValue
    if isinstance(other, DictValue) or hasattr(other, "pairs"):
        return True
    t = other.python_type()
    if hasattr(t, "keys"):
        return True
    instance_dict = getattr(getattr(other, "obj", None), "__dict__", None)
    return isinstance(instance_dict, dict) and "keys" in instance_dict


def mapping_entries(tx, other: Value) -> dict:
    """The entries of the mapping ``other`` as ``dict_merge`` reads them:
    a dict of keys (as DictValue keys) to Values."""
    from .containers import DictValue
    other = realize(tx.ctx, other)
    if isinstance(other, DictValue):
        return dict(other.items)
    if hasattr(other, "pairs"):   # an instance __dict__, a mappingproxy: keys() then items
        return dict(other.pairs(tx))
    storage = _dict_storage(tx, other)
    if storage is not None:
        return dict(storage)
    return keys_then_items(tx, other)


def keys_then_items(tx, other: Value) -> dict:
    """``{k: other[k] for k in other.keys()}`` through the object's own
    methods (also how OrderedDict's ``__init__``/``update`` read any
    mapping that is not exactly a dict, a dict subclass included)."""
    from ..operations.operators import getitem
    keys = other.getattr(tx, "keys").call(tx, [], {})
    out = {}
    for k in tx.iterate(keys):
        out[make_key(k, tx)] = getitem(tx, other, k)
    return out


def pair_entries(tx, other: Value) -> dict:
    """The entries of a sequence of pairs (``dict([(k, v), ...])``), with
    eager's errors for an element that is not a pair."""
    out = {}
    from ..constant import ConstantValue
    for i, pair in enumerate(tx.iterate(other)):
        if isinstance(pair, ConstantValue) and not hasattr(type(pair.value), "__iter__"):
            raise user_error(TypeError, f"cannot convert dictionary update sequence element #{i} to a sequence")
        try:
            kv = tx.iterate(pair)
        except Unsupported as e:
            if getattr(e, "exc_type", None) is TypeError:
                raise user_error(TypeError, f"cannot convert dictionary update sequence element #{i} "
                                            "to a sequence") from None
            raise
        if len(kv) != 2:
            raise user_error(ValueError, f"dictionary update sequence element #{i} has length {len(kv)}; "
                                         "2 is required")
        out[make_key(kv[0], tx)] = kv[1]
    return out


def update_entries(tx, other: Value) -> dict:
    """What ``dict(other)`` / ``d.update(other)`` adds (CPython's
    ``dict_update_arg``): a mapping's entries, or a sequence's pairs."""
    other = realize(tx.ctx, other)
    return mapping_entries(tx, other) if has_keys(other) else pair_entries(tx, other)
