"""Strings (and bytes) known while tracing, where an operand is not a
constant Value yet.

Methods of a constant string fold when every argument is a constant
(values/constant.py).  Two string operations take arguments that usually
are not: ``sep.join(iterable)`` (a generator expression, ``map``,
``reversed``, a dict's keys) and ``fmt % mapping`` (a dict).  CPython's
``str.join`` first turns its argument into a list (``PySequence_Fast``) and
only then checks the items; ``%`` looks a mapping's keys up with
``mapping[key]``.  So here the iterable is drained, in order, by the trace
(running a generator's body, calling map's function) and the join folds on
the items, which must be constants; the mapping is used only when it is a
plain dict of constants, whose lookups cannot run user code.
"""
from __future__ import annotations

import operator

from ..base import Value, concrete, realize
from ..constant import ConstantValue
from ..builder import wrap_constant_result
from .. import kinds

#: (type of the constant, method) -> positions of the arguments that are
#: iterables consumed whole before anything else happens
_ITERABLE_ARGS = {
    (str, "join"): (0,),
    (bytes, "join"): (0,),
}


def _drained(tx, v: Value) -> Value:
    """``v`` as a tuple of its items (the iteration is traced), unless it is
    already a constant."""
    v = realize(tx.ctx, v)
    if v.is_python_constant():
        return v
    return kinds.TupleValue([concrete(tx, i) for i in tx.iterate(v)])


def method_arguments(tx, obj, name: str, args: list[Value]) -> list[Value]:
    """The arguments of ``obj.name(*args)`` (``obj`` a constant) with the
    iterables that the method consumes first drained into tuples."""
    positions = _ITERABLE_ARGS.get((type(obj), name))
    if not positions:
        return args
    return [_drained(tx, a) if i in positions else a for i, a in enumerate(args)]


def _join_rule(kind: type):
    """``str.join(sep, iterable)`` called through the type."""
    def handler(tx, *args, **kwargs):
        from .builtins import fold_call
        if len(args) == 2 and not kwargs:
            args = [args[0], _drained(tx, args[1])]
        return fold_call(kind.join, list(args), kwargs)
    return handler


def _plain_constant(tx, v: Value):
    """The real object for a ``%`` right operand that holds only constants
    (symbolic numbers specialised), or ``_NOT_PLAIN``."""
    v = concrete(tx, v)
    if isinstance(v, ConstantValue):
        return v.value
    if isinstance(v, kinds.TupleValue) and v.cls is tuple or type(v) is kinds.ListValue:
        items = [_plain_constant(tx, i) for i in v.items]
        if any(i is _NOT_PLAIN for i in items):
            return _NOT_PLAIN
        return tuple(items) if isinstance(v, kinds.TupleValue) else items
    if type(v) is kinds.DictValue and v.cls is dict and v.is_python_constant():
        out = {}
        for k, item in v.items.items():
            value = _plain_constant(tx, item)
            if value is _NOT_PLAIN:
                return _NOT_PLAIN
            out[k] = value
        return out
    return _NOT_PLAIN


_NOT_PLAIN = object()


def percent_format(tx, fmt: Value, args: Value) -> Value | None:
    """``fmt % args`` for a constant str/bytes ``fmt`` and an ``args`` made of
    constants (a dict for ``%(name)s``), or None when this rule does not
    apply."""
    if not (isinstance(fmt, ConstantValue) and type(fmt.value) in (str, bytes)):
        return None
    real = _plain_constant(tx, args)
    if real is _NOT_PLAIN:
        return None
    from .operators import _fold
    return wrap_constant_result(_fold(operator.mod, fmt.value, real))


def register(rules: dict) -> None:
    rules[str.join] = _join_rule(str)
    rules[bytes.join] = _join_rule(bytes)
