"""``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=`` between tuples, lists and
``torch.Size``s whose items are not all constants (``w.size() == (b *
self.n, t, t)`` with a symbolic size or number in it).

CPython's rule (``tuplerichcompare`` / ``list_richcompare``): two sequences
of the same kind (tuple, incl. torch.Size and namedtuples, which do not
override it; or list) are compared item by item with ``==`` (identity
first) up to the first pair that differs; if there is none the lengths
decide; otherwise ``==`` is False, ``!=`` True, and an ordering is that
pair's own comparison.  A tuple and a list are never equal, and ordering
them is a TypeError.

Each item pair is compared as the trace compares two numbers: a symbolic
one (a dynamic size, a lazily guarded number) gives a symbolic bool whose
truth is guarded as an *outcome* (a ShapeEnv guard, ``CompareSource``), not
by specialising the number; so ``x.size() == (n, 3)`` with a dynamic dim
stays dynamic, as under torch.compile.  A constant sequence (a static
``x.size()``) takes part item by item, never as one opaque constant: a
constant and a non-constant sequence used to compare unequal whatever their
items were.
"""
from __future__ import annotations

import operator

import torch

from ...diagnostics.errors import user_error
from ..base import Value, realize
from ..constant import ConstantValue
from .. import kinds

_ORDERINGS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}


def _kind(cls: type) -> type | None:
    """tuple or list when ``cls`` compares as that builtin does (torch.Size
    does, through slots of its own from torch 2.15 on)."""
    if cls is torch.Size:
        return tuple
    for base in (tuple, list):
        if issubclass(cls, base):
            same = all(getattr(cls, d, None) is getattr(base, d)
                       for d in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"))
            return base if same else None
    return None


def sequence_items(tx, v: Value) -> tuple[list[Value], type] | None:
    """(items, tuple or list) of a tuple/list/torch.Size Value, constant or
    not; None for anything else (or a subclass with comparisons of its own)."""
    v = realize(tx.ctx, v)
    if isinstance(v, (kinds.TupleValue, kinds.ListValue)):   # (a lazy list's items realize it)
        kind = _kind(v.python_type())
        return (list(v.items), kind) if kind is not None else None
    if isinstance(v, ConstantValue) and isinstance(v.value, (tuple, list)):
        kind = _kind(type(v.value))
        return ([ConstantValue(i) for i in v.value], kind) if kind is not None else None
    return None


def first_difference(tx, left: list[Value], right: list[Value]) -> int | None:
    """The index of the first item pair that is not equal (guarded outcomes),
    or None when the shorter sequence is a prefix of the other."""
    from .operators import values_equal
    for i, (x, y) in enumerate(zip(left, right)):
        if not values_equal(tx, x, y):
            return i
    return None


def sequences_equal(tx, a: Value, b: Value) -> bool | None:
    """``a == b`` for two sequences (tuple or list kinds), or None when
    either is not one."""
    sa, sb = sequence_items(tx, a), sequence_items(tx, b)
    if sa is None or sb is None:
        return None
    if sa[1] is not sb[1] or len(sa[0]) != len(sb[0]):
        return False
    return first_difference(tx, sa[0], sb[0]) is None


def _number(v: Value) -> bool:
    return isinstance(v, kinds.SymbolicNumberValue) or \
        isinstance(v, ConstantValue) and type(v.value) in (int, float, bool)


def equality(tx, op, a: Value, b: Value) -> Value | None:
    """``a == b`` / ``a != b`` for two sequences as a Value, or None when
    either is not one.  Sequences of numbers where one pair alone is open
    (``x.size() == (n, 3)``) give that pair's comparison, a symbolic bool
    where it is one (as torch.compile's result): nothing is guarded until
    a branch needs the outcome.  A pair of unequal constants decides
    without looking at the others (the comparison of numbers has no side
    effects, so the order does not matter)."""
    sa, sb = sequence_items(tx, a), sequence_items(tx, b)
    if sa is None or sb is None:
        return None
    ne = op is operator.ne
    if sa[1] is not sb[1] or len(sa[0]) != len(sb[0]):
        return ConstantValue(ne)
    left = [realize(tx.ctx, v) for v in sa[0]]
    right = [realize(tx.ctx, v) for v in sb[0]]
    if all(_number(v) for v in left + right):
        open_pairs = []
        for x, y in zip(left, right):
            if x is y:
                continue
            if isinstance(x, ConstantValue) and isinstance(y, ConstantValue):
                if not (x.value is y.value or x.value == y.value):
                    return ConstantValue(ne)
                continue
            open_pairs.append((x, y))
        if not open_pairs:
            return ConstantValue(not ne)
        if len(open_pairs) == 1:
            from .operators import compare_op
            return compare_op(tx, op, *open_pairs[0])
    eq = first_difference(tx, left, right) is None
    return ConstantValue(eq != ne)


def compare_sequences(tx, op, a: Value, b: Value) -> Value | None:
    """``a <op> b`` (an ordering) for two sequences, or None when either is
    not one.  The result is the deciding item pair's own comparison, which
    may be a symbolic bool."""
    if op not in _ORDERINGS:
        return None
    sa, sb = sequence_items(tx, a), sequence_items(tx, b)
    if sa is None or sb is None:
        return None
    if sa[1] is not sb[1]:
        raise user_error(TypeError, f"'{_ORDERINGS[op]}' not supported between instances of "
                                    f"'{_name(a)}' and '{_name(b)}'")
    i = first_difference(tx, sa[0], sb[0])
    if i is None:
        return ConstantValue(op(len(sa[0]), len(sb[0])))
    from .operators import compare_op
    return compare_op(tx, op, sa[0][i], sb[0][i])


def _name(v: Value) -> str:
    cls = v.python_type()
    return "torch.Size" if cls is torch.Size else cls.__name__
