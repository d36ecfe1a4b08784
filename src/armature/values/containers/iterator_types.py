"""The Python type of the iterators the trace models.

An IteratorValue (values/containers/containers.py) is a list of Values walked by the
trace, whatever made it; but ``type(it)`` is observable
(``type(iter(t)).__name__ == "tuple_iterator"``, a custom ``__iter__``
returning ``iter(self.items)``), so each iterator remembers the type the
real one has: CPython's iterator of the iterated builtin type (tuple, str,
range, set, dict...), or ``enumerate``/``zip``/``map``/``filter``/
``reversed``'s own.  Residual code that rebuilds an unfinished iterator
(``BUILD_TUPLE`` + ``GET_ITER``) makes a ``tuple_iterator``; the type
matters to the trace, where a program asks.
"""
from __future__ import annotations

_EMPTY = {tuple: (), list: [], str: "", bytes: b"", bytearray: bytearray(), range: range(0), set: set(),
          frozenset: frozenset(), dict: {}}


def iterator_type(iterated: type) -> type | None:
    """``type(iter(x))`` for an ``x`` of the builtin type ``iterated``
    (None for other types: the caller keeps its default)."""
    proto = _EMPTY.get(iterated)
    if proto is None:
        for base, value in _EMPTY.items():
            if issubclass(iterated, base) and iterated.__iter__ is base.__iter__:
                proto = value
                break
    return None if proto is None else type(iter(proto))


def reversed_type(iterated: type) -> type:
    """``type(reversed(x))``: ``list_reverseiterator``, ``range_iterator``,
    and the ``reversed`` object of any other sequence."""
    if issubclass(iterated, list):
        return type(reversed([]))
    if issubclass(iterated, range):
        return type(reversed(range(0)))
    if issubclass(iterated, dict):
        return type(reversed({}))
    return reversed


def of(it, iterated_value=None, kind: type | None = None):
    """``it`` (an IteratorValue) with its type set, from ``kind`` or from
    the Value it iterates; returns ``it``."""
    if kind is None and iterated_value is not None:
        try:
            kind = iterator_type(iterated_value.python_type())
        except Exception:   # noqa: BLE001  (a Value without a known type keeps the default)
            kind = None
    if kind is not None:
        it.kind = kind
    return it
