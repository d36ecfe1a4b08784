"""The builtins ``zip``, ``enumerate``, ``map``, ``filter`` and the
two-argument ``iter(callable, sentinel)`` as lazy iterators.

builtins.py materializes its arguments for these; that consumes a shared
iterator too far and cannot take an infinite one.  These follow
Python/bltinmodule.c and Objects/enumobject.c, and replace builtins.py's
eager rules when this package is imported.
"""
from __future__ import annotations

import operator

from ...diagnostics.errors import Unsupported, user_error
from ..base import Value
from ..operations.builtins import RULES
from ..constant import ConstantValue
from ..containers.containers import TupleValue
from .common import _index, _is_none, _iter, _next, _no_kwargs, _r
from .itertools import LazyIterator, _infinite


class ZipIterator(LazyIterator):
    py_type = zip

    def __init__(self, its: list[Value], strict: bool):
        super().__init__()
        self.its, self.strict = its, strict

    def is_infinite(self):
        return bool(self.its) and all(_infinite(i) for i in self.its)

    def next(self, tx):
        its = self.its
        if not its:
            return None
        out = []
        for i, it in enumerate(its):
            v = _next(tx, it)
            if v is None:
                if self.strict:
                    self._check_strict(tx, i)
                return None
            out.append(v)
        return TupleValue(out)

    def rebuild(self):
        return (_strict_zip if self.strict else zip), list(self.its)

    def _check_strict(self, tx, i):
        plural = " " if i == 1 else "s 1-"
        if i:
            raise user_error(ValueError, f"zip() argument {i + 1} is shorter than argument{plural}{i}")
        for j in range(1, len(self.its)):
            if _next(tx, self.its[j]) is not None:
                plural = " " if j == 1 else "s 1-"
                raise user_error(ValueError, f"zip() argument {j + 1} is longer than argument{plural}{j}")


class EnumerateIterator(LazyIterator):
    py_type = enumerate

    def __init__(self, it: Value, start: Value):
        super().__init__()
        self.it, self.count = it, start

    def is_infinite(self):
        return _infinite(self.it)

    def next(self, tx):
        from ..operations.operators import binary_op
        v = _next(tx, self.it)
        if v is None:
            return None
        n = _r(tx, self.count)
        self.count = binary_op(tx, operator.add, n, ConstantValue(1))
        return TupleValue([n, v])

    def rebuild(self):
        return enumerate, [self.it, self.count]


class MapIterator(LazyIterator):
    py_type = map

    def __init__(self, func: Value, its: list[Value]):
        super().__init__()
        self.func, self.its = func, its

    def is_infinite(self):
        return all(_infinite(i) for i in self.its)

    def next(self, tx):
        args = []
        for it in self.its:
            v = _next(tx, it)
            if v is None:
                return None
            args.append(v)
        return self.func.call(tx, args, {})

    def rebuild(self):
        return map, [self.func] + list(self.its)


class FilterIterator(LazyIterator):
    py_type = filter

    def __init__(self, func: Value, it: Value):
        super().__init__()
        self.func, self.it = func, it

    def next(self, tx):
        while True:
            v = _next(tx, self.it)
            if v is None:
                return None
            ok = _r(tx, v).truth(tx) if _is_none(self.func) else self.func.call(tx, [v], {}).truth(tx)
            if ok:
                return v

    def rebuild(self):
        return filter, [self.func, self.it]


class CallableIterator(LazyIterator):
    """``iter(callable, sentinel)`` (Objects/iterobject.c calliter_iternext):
    each step calls ``callable()``; a result equal to ``sentinel`` (identity
    first, then ``==``) ends it, as does a StopIteration from the call."""

    py_type = type(iter(int, 1))

    def __init__(self, func: Value, sentinel: Value):
        super().__init__()
        self.func, self.sentinel = func, sentinel
        self.exhausted = False

    def next(self, tx):
        from ...diagnostics.errors import UserException
        from ..operations.operators import values_equal
        if self.exhausted:
            return None
        try:
            v = self.func.call(tx, [], {})
        except UserException as e:
            if issubclass(e.exc_type, StopIteration):
                self.exhausted = True
                return None
            raise
        if values_equal(tx, v, self.sentinel):
            self.exhausted = True
            return None
        return v


def lazy_iter(tx, obj, *sentinel, **kwargs):
    _no_kwargs("iter", kwargs)
    if len(sentinel) > 1:
        raise user_error(TypeError, f"iter expected at most 2 arguments, got {1 + len(sentinel)}")
    if not sentinel:
        return tx.get_iter(obj)
    from .common import _callable
    func = _r(tx, obj)
    if not _callable(tx, func):
        raise user_error(TypeError, "iter(v, w): v must be callable")
    return CallableIterator(func, _r(tx, sentinel[0]))


def _strict_zip(*its):
    return zip(*its, strict=True)


def lazy_zip(tx, *iterables, strict=None, **kwargs):
    if kwargs:
        raise user_error(TypeError, f"zip() got an unexpected keyword argument '{next(iter(kwargs))}'")
    flag = False if strict is None else _r(tx, strict).truth(tx)
    return ZipIterator([_iter(tx, i) for i in iterables], flag)


def lazy_enumerate(tx, iterable=None, start=None, **kwargs):
    iterable = kwargs.pop("iterable", iterable)
    start = kwargs.pop("start", start)
    if kwargs or iterable is None:
        raise Unsupported("enumerate() with unusual arguments")
    start = ConstantValue(0) if start is None else _r(tx, start)
    if isinstance(start, ConstantValue):
        start = ConstantValue(_index(start, "enumerate()"))
    else:
        raise Unsupported(f"enumerate() starting at {start}")
    return EnumerateIterator(_iter(tx, iterable), start)


def lazy_map(tx, func, *iterables, **kwargs):
    _no_kwargs("map", kwargs)
    if not iterables:
        raise user_error(TypeError, "map() must have at least two arguments.")
    return MapIterator(func, [_iter(tx, i) for i in iterables])


def lazy_filter(tx, func, iterable, **kwargs):
    _no_kwargs("filter", kwargs)
    return FilterIterator(_r(tx, func), _iter(tx, iterable))


# The lazy iterators replace the eager builtins: CPython pulls items one at a
# time, which matters when iterators are shared or infinite.
RULES[zip] = lazy_zip
RULES[enumerate] = lazy_enumerate
RULES[map] = lazy_map
RULES[filter] = lazy_filter
RULES[iter] = lazy_iter
