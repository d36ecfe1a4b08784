"""itertools: every iterator as a ``LazyIterator`` whose items are computed
exactly when CPython's would be (Modules/itertoolsmodule.c), so shared and
infinite iterators behave as in eager code.  ``LazyIterator`` is also the
base of the lazy builtins (lazy_builtins.py) and of deque's iterator.
"""
from __future__ import annotations

import itertools
import operator

from ...diagnostics.errors import Unsupported, user_error
from ..base import Value
from ..constant import ConstantValue
from ..containers.containers import IteratorValue, TupleValue
from .common import (MAX_MATERIALIZE, _StdCallable, _const, _index, _is_none, _iter, _next,
                     _no_kwargs, _r, _std_class)
from .. import kinds


class LazyIterator(IteratorValue):
    """An iterator whose items are computed on demand by ``next``, exactly
    when CPython would compute them.  Infinite ones refuse to materialize."""

    py_type: type = object

    def __init__(self):
        super().__init__([])

    def python_type(self):
        return self.py_type

    def is_python_constant(self):
        return False

    def is_infinite(self) -> bool:
        return False

    def next(self, tx) -> Value | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def unpack(self, tx):
        if self.is_infinite():
            raise Unsupported(f"materializing the infinite iterator {self.py_type.__name__}",
                              hint="consume it with a loop that stops, or itertools.islice")
        out = []
        while True:
            v = self.next(tx)
            if v is None:
                return out
            out.append(v)
            if len(out) > MAX_MATERIALIZE:
                raise Unsupported(f"materializing more than {MAX_MATERIALIZE} items of "
                                  f"{self.py_type.__name__}")

    def length(self, tx):
        raise user_error(TypeError, f"object of type '{self.py_type.__name__}' has no len()")

    def truth(self, tx):
        return True

    def getattr(self, tx, name):
        if name == "__next__":
            return _StdCallable(lambda tx_: self._next_or_stop(tx_), f"{self.py_type.__name__}.__next__")
        if name == "__iter__":
            return _StdCallable(lambda tx_: self, f"{self.py_type.__name__}.__iter__")
        raise Unsupported(f"attribute {name!r} of {self.py_type.__name__}")

    def _next_or_stop(self, tx):
        v = self.next(tx)
        if v is None:
            raise user_error(StopIteration)
        return v

    def rebuild(self) -> tuple | None:
        """(callable, argument Values) that make this iterator again in its
        current state (residual code after a graph break continues it), or
        None where that is not possible."""
        return None

    def reconstruct(self, out):
        spec = self.rebuild()
        if spec is None:
            raise Unsupported(f"an {self.py_type.__name__} iterator escaping the compiled frame")
        fn, args = spec
        out.instr("PUSH_NULL")
        out.load_const(fn)
        for a in args:
            out.reconstruct(a)
        out.call(len(args))

    def __repr__(self):
        return f"<{self.py_type.__name__} iterator>"


def _infinite(v: Value) -> bool:
    return isinstance(v, LazyIterator) and v.is_infinite()


class CountIterator(LazyIterator):
    py_type = itertools.count

    def __init__(self, start: Value, step: Value):
        super().__init__()
        self.cur, self.step = start, step

    def rebuild(self):
        return itertools.count, [self.cur, self.step]

    def is_infinite(self):
        return True

    def next(self, tx):
        from ..operations.operators import binary_op
        v = self.cur = _r(tx, self.cur)
        self.cur = binary_op(tx, operator.add, v, _r(tx, self.step))
        return v


class RepeatIterator(LazyIterator):
    py_type = itertools.repeat

    def __init__(self, obj: Value, times: int | None):
        super().__init__()
        self.obj, self.times = obj, times

    def is_infinite(self):
        return self.times is None

    def next(self, tx):
        if self.times is None:
            return self.obj
        if self.times <= 0:
            return None
        self.times -= 1
        return self.obj

    def length(self, tx):
        raise user_error(TypeError, "object of type 'itertools.repeat' has no len()")


class CycleIterator(LazyIterator):
    py_type = itertools.cycle

    def __init__(self, it: Value):
        super().__init__()
        self.it, self.saved, self.index = it, [], 0

    def unpack(self, tx):
        # finite only when the source is empty: look at its first item
        if self.saved or self.next(tx) is not None:
            raise Unsupported("materializing the infinite iterator cycle",
                              hint="consume it with a loop that stops, or itertools.islice")
        return []

    def next(self, tx):
        if self.it is not None:
            v = _next(tx, self.it)
            if v is not None:
                self.saved.append(v)
                return v
            self.it = None
        if not self.saved:
            return None
        v = self.saved[self.index]
        self.index = (self.index + 1) % len(self.saved)
        return v


class ChainIterator(LazyIterator):
    py_type = itertools.chain

    def __init__(self, source: Value):
        super().__init__()
        self.source, self.active = source, None

    def is_infinite(self):
        if _infinite(self.active) or _infinite(self.source):
            return True
        src = self.source
        if isinstance(src, IteratorValue) and type(src) is IteratorValue:
            return any(_infinite(v) for v in src.items[src.index:])
        return False

    def next(self, tx):
        while self.source is not None:
            if self.active is None:
                iterable = _next(tx, self.source)
                if iterable is None:
                    self.source = None
                    return None
                self.active = _iter(tx, iterable)
            v = _next(tx, self.active)
            if v is not None:
                return v
            self.active = None
        return None


class IsliceIterator(LazyIterator):
    py_type = itertools.islice

    def __init__(self, it: Value, start: int, stop: int, step: int):
        super().__init__()
        self.it, self.next_index, self.stop, self.step, self.cnt = it, start, stop, step, 0

    def next(self, tx):
        it = self.it
        if it is None:
            return None
        while self.cnt < self.next_index:
            if _next(tx, it) is None:
                self.it = None
                return None
            self.cnt += 1
        if self.stop != -1 and self.cnt >= self.stop:
            self.it = None
            return None
        v = _next(tx, it)
        if v is None:
            self.it = None
            return None
        self.cnt += 1
        old = self.next_index
        self.next_index += self.step
        if self.next_index < old or (self.stop != -1 and self.next_index > self.stop):
            self.next_index = self.stop
        return v


class AccumulateIterator(LazyIterator):
    py_type = itertools.accumulate

    def __init__(self, it: Value, func: Value | None, initial: Value | None):
        super().__init__()
        self.it, self.func, self.initial, self.total = it, func, initial, None

    def is_infinite(self):
        return _infinite(self.it)

    def next(self, tx):
        from ..operations.operators import binary_op
        if self.initial is not None:
            self.total, self.initial = self.initial, None
            return self.total
        v = _next(tx, self.it)
        if v is None:
            return None
        if self.total is None:
            self.total = v
        elif self.func is None:
            self.total = binary_op(tx, operator.add, _r(tx, self.total), _r(tx, v))
        else:
            self.total = self.func.call(tx, [self.total, v], {})
        return self.total


class StarmapIterator(LazyIterator):
    py_type = itertools.starmap

    def __init__(self, func: Value, it: Value):
        super().__init__()
        self.func, self.it = func, it

    def rebuild(self):
        return itertools.starmap, [self.func, self.it]

    def is_infinite(self):
        return _infinite(self.it)

    def next(self, tx):
        args = _next(tx, self.it)
        if args is None:
            return None
        return self.func.call(tx, tx.iterate(args), {})


class TakewhileIterator(LazyIterator):
    py_type = itertools.takewhile

    def __init__(self, pred: Value, it: Value):
        super().__init__()
        self.pred, self.it, self.stopped = pred, it, False

    def next(self, tx):
        if self.stopped:
            return None
        v = _next(tx, self.it)
        if v is None:
            return None
        if self.pred.call(tx, [v], {}).truth(tx):
            return v
        self.stopped = True
        return None


class DropwhileIterator(LazyIterator):
    py_type = itertools.dropwhile

    def __init__(self, pred: Value, it: Value):
        super().__init__()
        self.pred, self.it, self.started = pred, it, False

    def is_infinite(self):
        return _infinite(self.it)

    def next(self, tx):
        while True:
            v = _next(tx, self.it)
            if v is None:
                return None
            if self.started:
                return v
            if not self.pred.call(tx, [v], {}).truth(tx):
                self.started = True
                return v


class FilterfalseIterator(LazyIterator):
    py_type = itertools.filterfalse

    def __init__(self, pred: Value, it: Value):
        super().__init__()
        self.pred, self.it = pred, it

    def rebuild(self):
        return itertools.filterfalse, [self.pred, self.it]

    def next(self, tx):
        while True:
            v = _next(tx, self.it)
            if v is None:
                return None
            ok = v.truth(tx) if _is_none(self.pred) else self.pred.call(tx, [v], {}).truth(tx)
            if not ok:
                return v


class CompressIterator(LazyIterator):
    py_type = itertools.compress

    def __init__(self, data: Value, selectors: Value):
        super().__init__()
        self.data, self.selectors = data, selectors

    def rebuild(self):
        return itertools.compress, [self.data, self.selectors]

    def next(self, tx):
        while True:
            d = _next(tx, self.data)
            if d is None:
                return None
            s = _next(tx, self.selectors)
            if s is None:
                return None
            if s.truth(tx):
                return d


class PairwiseIterator(LazyIterator):
    py_type = getattr(itertools, "pairwise", object)

    def __init__(self, it: Value):
        super().__init__()
        self.it, self.old = it, None

    def is_infinite(self):
        return _infinite(self.it)

    def next(self, tx):
        if self.it is None:
            return None
        if self.old is None:
            self.old = _next(tx, self.it)
            if self.old is None:
                self.it = None
                return None
        new = _next(tx, self.it)
        if new is None:
            self.it = self.old = None
            return None
        out = TupleValue([self.old, new])
        self.old = new
        return out


class ZipLongestIterator(LazyIterator):
    py_type = itertools.zip_longest

    def __init__(self, its: list[Value], fill: Value):
        super().__init__()
        self.its, self.fill, self.numactive = list(its), fill, len(its)

    def is_infinite(self):
        return bool(self.its) and all(_infinite(i) for i in self.its)

    def next(self, tx):
        if not self.its or self.numactive == 0:
            return None
        out = []
        for i, it in enumerate(self.its):
            if it is None:
                out.append(self.fill)
                continue
            v = _next(tx, it)
            if v is None:
                self.numactive -= 1
                if self.numactive == 0:
                    return None
                self.its[i] = None
                v = self.fill
            out.append(v)
        return TupleValue(out)


class IndexedIterator(LazyIterator):
    """product/combinations/permutations: the pools are materialized when the
    iterator is made (as CPython does); index tuples come from the real
    itertools function over ranges, so order and count are exact."""

    def __init__(self, py_type, pools: list[list[Value]], indices):
        super().__init__()
        self.py_type = py_type
        self.pools, self.indices = pools, indices

    def next(self, tx):
        idx = next(self.indices, None)
        if idx is None:
            return None
        if len(self.pools) == 1:
            pool = self.pools[0]
            return TupleValue([pool[i] for i in idx])
        return TupleValue([pool[i] for pool, i in zip(self.pools, idx)])


class GroupbyIterator(LazyIterator):
    py_type = itertools.groupby

    def __init__(self, it: Value, key: Value | None):
        super().__init__()
        self.it, self.key = it, key
        self.tgtkey = self.currkey = self.currvalue = None
        self.currgrouper = None

    def step(self, tx) -> bool:
        v = _next(tx, self.it)
        if v is None:
            return False
        k = v if self.key is None else self.key.call(tx, [v], {})
        self.currvalue, self.currkey = v, k
        return True

    def keys_equal(self, a: Value, b: Value) -> bool:
        if a is b:
            return True
        if not (a.is_python_constant() and b.is_python_constant()):
            raise Unsupported("itertools.groupby with keys that are not constants")
        x, y = a.as_python_constant(), b.as_python_constant()
        try:
            return x is y or bool(x == y)
        except Exception as e:
            raise Unsupported(f"comparing groupby keys raised {type(e).__name__}")

    def next(self, tx):
        self.currgrouper = None
        while True:
            if self.currkey is None:
                pass
            elif self.tgtkey is None:
                break
            elif not self.keys_equal(self.tgtkey, self.currkey):
                break
            if not self.step(tx):
                return None
        self.tgtkey = self.currkey
        grouper = GrouperIterator(self, self.tgtkey)
        self.currgrouper = grouper
        return TupleValue([self.currkey, grouper])


class GrouperIterator(LazyIterator):
    py_type = type(next(itertools.groupby([1]))[1])

    def __init__(self, parent: GroupbyIterator, tgtkey: Value):
        super().__init__()
        self.parent, self.tgtkey = parent, tgtkey

    def next(self, tx):
        gbo = self.parent
        if gbo.currgrouper is not self:
            return None
        if gbo.currvalue is None:
            if not gbo.step(tx):
                return None
        if not gbo.keys_equal(self.tgtkey, gbo.currkey):
            return None
        v = gbo.currvalue
        gbo.currvalue = None
        gbo.currkey = None
        return v


# --- constructors ---------------------------------------------------------------

def _count(tx, start=None, step=None, **kwargs):
    start = kwargs.pop("start", start)
    step = kwargs.pop("step", step)
    if kwargs:
        raise user_error(TypeError, f"count() got an unexpected keyword argument {next(iter(kwargs))!r}")
    start = start if start is not None else ConstantValue(0)
    step = step if step is not None else ConstantValue(1)
    for v in (start, step):
        if isinstance(v, ConstantValue) and not isinstance(v.value, (int, float, complex)):
            import numbers
            if not isinstance(v.value, numbers.Number):
                raise user_error(TypeError, "a number is required")
        elif not isinstance(v, ConstantValue):
            if not isinstance(v, kinds.TensorValue):
                raise Unsupported(f"itertools.count() over {v}")
    return CountIterator(start, step)


def _repeat(tx, obj=None, times=None, **kwargs):
    obj = kwargs.pop("object", obj)
    times = kwargs.pop("times", times)
    if kwargs or obj is None:
        raise Unsupported("itertools.repeat() with unusual arguments")
    n = None
    if times is not None:
        n = max(0, _index(times, "itertools.repeat()"))
    return RepeatIterator(obj, n)


def _cycle(tx, iterable, **kwargs):
    _no_kwargs("cycle", kwargs)
    return CycleIterator(_iter(tx, iterable))


def _chain(tx, *iterables, **kwargs):
    _no_kwargs("chain", kwargs)
    return ChainIterator(IteratorValue(list(iterables)))


def _chain_from_iterable(tx, iterable):
    return ChainIterator(_iter(tx, iterable))


def _islice_arg(v: Value | None):
    """PyNumber_AsSsize_t: -1 on failure (None included)."""
    if v is None or _is_none(v):
        return None
    c = _const(v, "itertools.islice()")
    try:
        i = operator.index(c)
    except TypeError:
        return -1
    return i if i <= 2**63 - 1 else -1


def _islice(tx, iterable, *args, **kwargs):
    _no_kwargs("islice", kwargs)
    if not 1 <= len(args) <= 3:
        raise user_error(TypeError, f"islice expected at most 4 arguments, got {len(args) + 1}"
                         if args else "islice expected at least 2 arguments, got 1")
    start, stop, step = 0, -1, 1
    stop_msg = "Stop argument for islice() must be None or an integer: 0 <= x <= sys.maxsize."
    if len(args) == 1:
        s = _islice_arg(args[0])
        if s is not None:
            stop = s
            if stop == -1:
                raise user_error(ValueError, stop_msg)
    else:
        s = _islice_arg(args[0])
        if s is not None:
            start = s
        s = _islice_arg(args[1])
        if s is not None:
            stop = s
            if stop == -1:
                raise user_error(ValueError, stop_msg)
    if start < 0 or stop < -1:
        raise user_error(ValueError, "Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize.")
    if len(args) == 3:
        s = _islice_arg(args[2])
        if s is not None:
            step = s
    if step < 1:
        raise user_error(ValueError, "Step for islice() must be a positive integer or None.")
    return IsliceIterator(_iter(tx, iterable), start, stop, step)


def _accumulate(tx, iterable, func=None, *rest, initial=None, **kwargs):
    if rest or kwargs:
        raise Unsupported("itertools.accumulate() with unusual arguments")
    func = None if func is None or _is_none(func) else func
    initial = None if initial is None or _is_none(initial) else initial
    return AccumulateIterator(_iter(tx, iterable), func, initial)


def _starmap(tx, func, iterable, **kwargs):
    _no_kwargs("starmap", kwargs)
    return StarmapIterator(func, _iter(tx, iterable))


def _takewhile(tx, pred, iterable, **kwargs):
    _no_kwargs("takewhile", kwargs)
    return TakewhileIterator(pred, _iter(tx, iterable))


def _dropwhile(tx, pred, iterable, **kwargs):
    _no_kwargs("dropwhile", kwargs)
    return DropwhileIterator(pred, _iter(tx, iterable))


def _filterfalse(tx, pred, iterable, **kwargs):
    _no_kwargs("filterfalse", kwargs)
    return FilterfalseIterator(pred, _iter(tx, iterable))


def _compress(tx, data=None, selectors=None, **kwargs):
    data = kwargs.pop("data", data)
    selectors = kwargs.pop("selectors", selectors)
    if kwargs or data is None or selectors is None:
        raise Unsupported("itertools.compress() with unusual arguments")
    return CompressIterator(_iter(tx, data), _iter(tx, selectors))


def _pairwise(tx, iterable, **kwargs):
    _no_kwargs("pairwise", kwargs)
    return PairwiseIterator(_iter(tx, iterable))


def _zip_longest(tx, *iterables, **kwargs):
    fill = kwargs.pop("fillvalue", ConstantValue(None))
    if kwargs:
        raise user_error(TypeError, "zip_longest() got an unexpected keyword argument "
                         f"'{next(iter(kwargs))}'")
    return ZipLongestIterator([_iter(tx, i) for i in iterables], fill)


def _pool(tx, iterable) -> list[Value]:
    if _infinite(iterable):
        raise Unsupported("an itertools combinatoric over an infinite iterator")
    return tx.iterate(iterable)


def _product(tx, *iterables, **kwargs):
    repeat = kwargs.pop("repeat", ConstantValue(1))
    if kwargs:
        raise user_error(TypeError, f"product() got an unexpected keyword argument '{next(iter(kwargs))}'")
    n = _index(repeat, "itertools.product()")
    if n < 0:
        raise user_error(ValueError, "repeat argument cannot be negative")
    pools = [_pool(tx, i) for i in iterables] * n
    indices = itertools.product(*[range(len(p)) for p in pools])
    return IndexedIterator(itertools.product, pools, indices)


def _r_arg(r: Value | None, n: int, fn: str) -> int:
    if r is None or _is_none(r):
        return n
    r = _index(r, f"itertools.{fn}()")
    if r < 0:
        raise user_error(ValueError, "r must be non-negative")
    return r


def _combinations(tx, iterable=None, r=None, **kwargs):
    iterable = kwargs.pop("iterable", iterable)
    r = kwargs.pop("r", r)
    if kwargs or iterable is None or r is None:
        raise Unsupported("itertools.combinations() with unusual arguments")
    pool = _pool(tx, iterable)
    r = _r_arg(r, len(pool), "combinations")
    return IndexedIterator(itertools.combinations, [pool], itertools.combinations(range(len(pool)), r))


def _combinations_wr(tx, iterable=None, r=None, **kwargs):
    iterable = kwargs.pop("iterable", iterable)
    r = kwargs.pop("r", r)
    if kwargs or iterable is None or r is None:
        raise Unsupported("itertools.combinations_with_replacement() with unusual arguments")
    pool = _pool(tx, iterable)
    r = _r_arg(r, len(pool), "combinations_with_replacement")
    return IndexedIterator(itertools.combinations_with_replacement, [pool],
                           itertools.combinations_with_replacement(range(len(pool)), r))


def _permutations(tx, iterable=None, r=None, **kwargs):
    iterable = kwargs.pop("iterable", iterable)
    r = kwargs.pop("r", r)
    if kwargs or iterable is None:
        raise Unsupported("itertools.permutations() with unusual arguments")
    pool = _pool(tx, iterable)
    r = _r_arg(r, len(pool), "permutations")
    return IndexedIterator(itertools.permutations, [pool], itertools.permutations(range(len(pool)), r))


def _groupby(tx, iterable=None, key=None, **kwargs):
    iterable = kwargs.pop("iterable", iterable)
    key = kwargs.pop("key", key)
    if kwargs or iterable is None:
        raise Unsupported("itertools.groupby() with unusual arguments")
    key = None if key is None or _is_none(key) else key
    return GroupbyIterator(_iter(tx, iterable), key)


_std_class(itertools.count, _count)
_std_class(itertools.repeat, _repeat)
_std_class(itertools.cycle, _cycle)
_std_class(itertools.chain, _chain, {"from_iterable": _chain_from_iterable})
_std_class(itertools.islice, _islice)
_std_class(itertools.accumulate, _accumulate)
_std_class(itertools.starmap, _starmap)
_std_class(itertools.takewhile, _takewhile)
_std_class(itertools.dropwhile, _dropwhile)
_std_class(itertools.filterfalse, _filterfalse)
_std_class(itertools.compress, _compress)
_std_class(itertools.zip_longest, _zip_longest)
_std_class(itertools.product, _product)
_std_class(itertools.combinations, _combinations)
_std_class(itertools.combinations_with_replacement, _combinations_wr)
_std_class(itertools.permutations, _permutations)
_std_class(itertools.groupby, _groupby)
if hasattr(itertools, "pairwise"):
    _std_class(itertools.pairwise, _pairwise)
