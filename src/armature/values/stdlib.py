"""Models of standard-library objects (functools, operator, itertools, math,
collections, dataclasses, enum, typing).

``wrap_special`` is consulted first by the builder: it returns a Value for
objects this module models, or None to let the builder continue.  Builtin
(C) functions of these modules get rules in ``builtins.RULES``, registered
when this module is imported (the builder imports it before wrapping
anything).

Everything here follows CPython 3.11's C implementations (Modules/
_functoolsmodule.c, itertoolsmodule.c, _collectionsmodule.c, _operator.c):
the same evaluation order, laziness and error conditions.  Where an error is
certain, the same exception is raised as a user exception; where the model
is unsure, Unsupported makes the frame run as plain Python.
"""
from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import gc
import inspect
import itertools
import math
import operator
import sys
import types
import typing
from typing import Any, Callable

from ..diagnostics.errors import Unsupported, UserException, user_error

from ..guards.guard import Guard, Kind
from ..guards.sources import AttrSource, ItemSource
from .base import LazyValue, Value
from .builtins import RULES, BuiltinValue, fold_call
from .constant import ConstantValue
from .containers import BoundContainerMethod, DictValue, IteratorValue, ListValue, TupleValue, _key
from .objects import ClassValue

_MISSING = object()
#: the most items an iterator is materialized into (list(), tuple(), ...)
MAX_MATERIALIZE = 100_000
_SCALAR_TYPES = (int, float, bool, str, bytes, complex, type(None))

Py_TPFLAGS_SEQUENCE = 1 << 5
Py_TPFLAGS_MAPPING = 1 << 6
Py_TPFLAGS_MATCH_SELF = 1 << 22


# =============================================================================
# helpers
# =============================================================================

def _r(tx, v):
    """The realized Value of ``v`` (arguments may arrive lazy)."""
    return v.realize(tx.ctx) if type(v) is LazyValue else v


def _wrap(ctx, obj, source) -> Value:
    from .builder import wrap
    return wrap(ctx, obj, source)


def _guard(ctx, kind: Kind, source, expected=None) -> None:
    if source is not None:
        ctx.guards.add(Guard(kind, source, expected))


def _attr_src(source, name):
    return AttrSource(source, name) if source is not None else None


def _const(v: Value, what: str):
    if not v.is_python_constant():
        raise Unsupported(f"{what} with an argument that is not known while tracing")
    return v.as_python_constant()


def _is_none(v: Value) -> bool:
    return isinstance(v, ConstantValue) and v.value is None


def _next(tx, it: Value) -> Value | None:
    """``next(it)`` for a Value from ``tx.get_iter``; None when exhausted."""
    if not isinstance(it, IteratorValue):
        nv = getattr(it, "next_value", None)
        if nv is None:
            raise Unsupported(f"next() on {it}")
        try:
            return nv(tx)
        except UserException as e:
            if issubclass(e.exc_type, StopIteration):
                return None
            raise
    return it.next(tx)


def _iter(tx, v: Value) -> Value:
    return tx.get_iter(v)


def _index(v: Value, what: str) -> int:
    """``operator.index`` of a constant."""
    c = _const(v, what)
    try:
        return operator.index(c)
    except TypeError:
        raise user_error(TypeError, f"{type(c).__name__!r} object cannot be interpreted as an integer")


def _callable(tx, v: Value) -> bool:
    """``callable(v)``: ``type(v)`` defines ``__call__``."""
    from .functions import BoundMethodValue, _Function
    v = _r(tx, v)
    if isinstance(v, (_Function, BoundMethodValue, PartialValue, _StdCallable, ClassValue, BuiltinValue)):
        return True
    if isinstance(v, ConstantValue):
        return callable(v.value)
    t = v.python_type()
    return any("__call__" in k.__dict__ for k in t.__mro__)


def _wrap_scalar_or(ctx, obj, source) -> Value:
    """An attribute value: immutable scalars fold, anything else is wrapped
    (and guarded) through its source."""
    if type(obj) in _SCALAR_TYPES or isinstance(obj, enum.Enum):
        return ConstantValue(obj) if not isinstance(obj, enum.Enum) else EnumMemberValue(obj, None)
    if type(obj) is tuple and all(type(i) in _SCALAR_TYPES for i in obj):
        return ConstantValue(obj)
    if source is None:
        raise Unsupported(f"a {type(obj).__name__} value reached without a source")
    return _wrap(ctx, obj, source)


class _StdCallable(Value):
    """A callable modelled by a Python handler ``handler(tx, *args, **kwargs)``."""

    def __init__(self, handler: Callable, name: str, obj: Any = _MISSING, source=None):
        super().__init__(source)
        self.handler, self.name, self.obj = handler, name, obj

    def python_type(self):
        if self.obj is _MISSING:
            return types.BuiltinFunctionType
        return type(self.obj)

    def is_python_constant(self):
        return self.obj is not _MISSING

    def as_python_constant(self):
        if self.obj is _MISSING:
            return super().as_python_constant()
        return self.obj

    def call(self, tx, args, kwargs):
        args = [_r(tx, a) for a in args]
        kwargs = {k: _r(tx, v) for k, v in kwargs.items()}
        return self.handler(tx, *args, **kwargs)

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        if self.obj is not _MISSING:
            return out.load_const(self.obj)
        raise Unsupported(f"returning {self.name} from a compiled frame")

    def __repr__(self):
        return f"<{self.name}>"


class StdClassValue(ClassValue):
    """A standard-library class whose construction armature models."""

    def __init__(self, cls: type, source, construct: Callable, class_attrs: dict | None = None):
        super().__init__(cls, source)
        self._construct = construct
        self._class_attrs = class_attrs or {}

    def call(self, tx, args, kwargs):
        args = [_r(tx, a) for a in args]
        kwargs = {k: _r(tx, v) for k, v in kwargs.items()}
        return self._construct(tx, *args, **kwargs)

    def getattr(self, tx, name):
        h = self._class_attrs.get(name)
        if h is not None:
            return _StdCallable(h, f"{self.cls.__name__}.{name}")
        return super().getattr(tx, name)


def _no_kwargs(name, kwargs):
    if kwargs:
        raise user_error(TypeError, f"{name}() takes no keyword arguments")


# =============================================================================
# wrap_special: the builder's first stop
# =============================================================================

#: exact type of the object -> handler(ctx, obj, source) -> Value | None
_TYPE_HANDLERS: dict[type, Callable] = {}
#: the object itself (classes, functions) -> handler(ctx, obj, source) -> Value
_OBJECT_HANDLERS: dict[int, tuple[Any, Callable]] = {}


def _register_object(obj, handler):
    _OBJECT_HANDLERS[id(obj)] = (obj, handler)


def wrap_special(ctx, obj: Any, source) -> Value | None:
    t = type(obj)
    h = _TYPE_HANDLERS.get(t)
    if h is not None:
        return h(ctx, obj, source)
    entry = _OBJECT_HANDLERS.get(id(obj))
    if entry is not None and entry[0] is obj:
        return entry[1](ctx, obj, source)
    if isinstance(obj, type):
        if issubclass(obj, enum.Enum):
            _guard(ctx, Kind.ID_MATCH, source, obj)
            return EnumClassValue(obj, source)
        if _is_namedtuple_class(obj):
            _guard(ctx, Kind.ID_MATCH, source, obj)
            return NamedTupleClassValue(obj, source)
        return None
    if isinstance(obj, enum.Enum):
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return EnumMemberValue(obj, source)
    if isinstance(obj, tuple) and t is not tuple and _is_namedtuple_class(t):
        return _wrap_namedtuple(ctx, obj, source)
    return None


def _std_class(cls, construct, class_attrs=None):
    def handler(ctx, obj, source):
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return StdClassValue(obj, source, construct, class_attrs)
    _register_object(cls, handler)


def _std_function(fn, handler_fn):
    def handler(ctx, obj, source):
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return _StdCallable(handler_fn, getattr(obj, "__qualname__", str(obj)), obj, source)
    _register_object(fn, handler)


def _nonfinite_float(ctx, obj, source):
    # nan and +-inf: CONSTANT_MATCH renders them as ``x != x`` and a pooled
    # constant (an identity guard would recompile for every new nan object)
    if math.isfinite(obj):
        return None
    _guard(ctx, Kind.CONSTANT_MATCH, source, obj)
    return ConstantValue(obj, source)


_TYPE_HANDLERS[float] = _nonfinite_float


# =============================================================================
# functools
# =============================================================================

class PartialValue(Value):
    """A ``functools.partial`` object: calling it merges the stored
    arguments with the call's and calls ``func``."""

    def __init__(self, func: Value, args: TupleValue, keywords: DictValue, source=None):
        super().__init__(source)
        self.func, self.args, self.keywords = func, args, keywords

    def python_type(self):
        return functools.partial

    def call(self, tx, args, kwargs):
        kw = dict(self.keywords.items)
        kw.update(kwargs)
        return self.func.call(tx, [*self.args.items, *args], kw)

    def getattr(self, tx, name):
        if name == "func":
            return self.func
        if name == "args":
            return self.args
        if name == "keywords":
            return self.keywords
        raise Unsupported(f"attribute {name!r} of a functools.partial")

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.instr("PUSH_NULL")
        out.load_const(functools.partial)
        out.reconstruct(self.func)
        for a in self.args.items:
            out.reconstruct(a)
        out.instr("BUILD_TUPLE", 1 + len(self.args.items))
        out.build_map(self.keywords.items)
        out.instr("CALL_FUNCTION_EX", 1)

    def __repr__(self):
        return f"<partial {self.func!r}>"


def _partial_has_instance_dict(p: functools.partial) -> bool:
    # partial_new flattens only a partial without an instance __dict__;
    # reading p.__dict__ would create one, so look at what p references.
    return any(isinstance(r, dict) and r is not p.keywords for r in gc.get_referents(p))


def _make_partial(tx, *args, **kwargs):
    if not args:
        raise user_error(TypeError, "type 'partial' takes at least one argument")
    func, pargs = args[0], list(args[1:])
    if not _callable(tx, func):
        raise user_error(TypeError, "the first argument must be callable")
    kw: dict[str, Value] = {}
    if isinstance(func, PartialValue):
        real = getattr(func, "real", None)
        if real is None or not _partial_has_instance_dict(real):
            pargs = list(func.args.items) + pargs
            kw = dict(func.keywords.items)
            func = func.func
    kw.update(kwargs)
    return PartialValue(func, TupleValue(pargs), DictValue(kw))


def _wrap_partial(ctx, p, source):
    if source is None:
        return None
    _guard(ctx, Kind.TYPE_MATCH, source, functools.partial)
    func = _wrap(ctx, p.func, AttrSource(source, "func"))
    args = _wrap(ctx, p.args, AttrSource(source, "args"))
    keywords = _wrap(ctx, p.keywords, AttrSource(source, "keywords"))
    if not isinstance(args, TupleValue) or not isinstance(keywords, DictValue):
        raise Unsupported("a functools.partial with unusual args/keywords")
    v = PartialValue(func, args, keywords, source)
    v.real = p
    return v


_std_class(functools.partial, _make_partial)
_TYPE_HANDLERS[functools.partial] = _wrap_partial


def _reduce(tx, function, iterable=_MISSING, *initial, **kwargs):
    _no_kwargs("reduce", kwargs)
    if iterable is _MISSING or len(initial) > 1:
        n = 1 if iterable is _MISSING else 2 + len(initial)
        raise user_error(TypeError, f"reduce expected at least 2 arguments, got {n}" if n < 2
                         else f"reduce expected at most 3 arguments, got {n}")
    it = _iter(tx, iterable)
    acc = initial[0] if initial else None
    while True:
        v = _next(tx, it)
        if v is None:
            break
        acc = v if acc is None else function.call(tx, [acc, v], {})
    if acc is None:
        raise user_error(TypeError, "reduce() of empty iterable with no initial value")
    return acc


RULES[functools.reduce] = _reduce


class LruCacheValue(Value):
    """A function wrapped by ``functools.lru_cache``/``functools.cache``.
    Calling it reads and fills the cache, state outside the frame."""

    def __init__(self, fn, source):
        super().__init__(source)
        self.fn = fn

    def python_type(self):
        return type(self.fn)

    def call(self, tx, args, kwargs):
        raise Unsupported(f"calling the lru_cache-wrapped function {self.fn.__qualname__}",
                          hint="a cached call reads and fills the cache; call the undecorated "
                               "function (fn.__wrapped__) inside compiled code")

    def getattr(self, tx, name):
        if name == "__wrapped__":
            return _wrap(tx.ctx, self.fn.__wrapped__, _attr_src(self.source, "__wrapped__"))
        raise Unsupported(f"attribute {name!r} of an lru_cache wrapper")


def _wrap_lru(ctx, obj, source):
    _guard(ctx, Kind.ID_MATCH, source, obj)
    return LruCacheValue(obj, source)


_TYPE_HANDLERS[functools._lru_cache_wrapper] = _wrap_lru


# =============================================================================
# operator
# =============================================================================

def _register_operator_rules():
    from . import operators as ops

    def binary(fn):
        return lambda tx, a, b: ops.binary_op(tx, fn, a, b)

    for fn in (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
               operator.mod, operator.pow, operator.matmul, operator.and_, operator.or_,
               operator.xor, operator.lshift, operator.rshift,
               operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
               operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior,
               operator.ixor, operator.ilshift, operator.irshift):
        RULES[fn] = binary(fn)

    def compare(fn):
        return lambda tx, a, b: ops.compare_op(tx, fn, a, b)

    for fn in (operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge):
        RULES[fn] = compare(fn)

    def unary(fn):
        return lambda tx, a: ops.unary_op(tx, fn, a)

    for fn in (operator.neg, operator.pos, operator.invert, operator.inv):
        RULES[fn] = unary(operator.invert if fn is operator.inv else fn)

    RULES[operator.not_] = lambda tx, a: ConstantValue(not a.truth(tx))
    RULES[operator.truth] = lambda tx, a: ConstantValue(a.truth(tx))
    RULES[operator.is_] = lambda tx, a, b: ConstantValue(ops.is_same(tx, a, b))
    RULES[operator.is_not] = lambda tx, a, b: ConstantValue(not ops.is_same(tx, a, b))
    RULES[operator.abs] = lambda tx, a: RULES[abs](tx, a)
    RULES[operator.contains] = lambda tx, a, b: ConstantValue(ops.contains(tx, b, a))
    RULES[operator.getitem] = lambda tx, a, b: ops.getitem(tx, a, b)

    def _setitem(tx, a, b, c):
        from .tensor import TensorValue, graph_call
        if isinstance(a, TensorValue):
            graph_call(tx, "call_function", operator.setitem, [a, b, c], {})
        elif hasattr(a, "setitem"):
            a.setitem(tx, b, c)
        else:
            raise Unsupported(f"item assignment on {a}")
        return ConstantValue(None)

    def _delitem(tx, a, b):
        if not hasattr(a, "delitem"):
            raise Unsupported(f"item deletion on {a}")
        a.delitem(tx, b)
        return ConstantValue(None)

    RULES[operator.setitem] = _setitem
    RULES[operator.delitem] = _delitem

    def _index_rule(tx, a):
        if isinstance(a, ConstantValue):
            return fold_call(operator.index, [a], {})
        raise Unsupported(f"operator.index() of {a}")

    RULES[operator.index] = _index_rule

    def _seq_check(a, opname):
        t = a.python_type()
        if issubclass(t, dict) or not hasattr(t, "__getitem__"):
            raise user_error(TypeError, f"'{t.__name__}' object can't be concatenated")

    def _concat(tx, a, b):
        _seq_check(a, "concat")
        return ops.binary_op(tx, operator.add, a, b)

    def _iconcat(tx, a, b):
        _seq_check(a, "iconcat")
        return ops.binary_op(tx, operator.iadd, a, b)

    RULES[operator.concat] = _concat
    RULES[operator.iconcat] = _iconcat

    def _count_of(tx, a, b):
        it = _iter(tx, a)
        n = 0
        while (v := _next(tx, it)) is not None:
            if ops.values_equal(tx, v, b):
                n += 1
        return ConstantValue(n)

    def _index_of(tx, a, b):
        it = _iter(tx, a)
        i = 0
        while (v := _next(tx, it)) is not None:
            if ops.values_equal(tx, v, b):
                return ConstantValue(i)
            i += 1
        raise user_error(ValueError, "sequence.index(x): x not in sequence")

    RULES[operator.countOf] = _count_of
    RULES[operator.indexOf] = _index_of

    def _length_hint(tx, obj, default=ConstantValue(0)):
        if isinstance(obj, ConstantValue):
            return fold_call(operator.length_hint, [obj, default], {})
        if isinstance(obj, (ListValue, TupleValue, DictValue, DequeValue)):
            return ConstantValue(obj.length(tx))
        raise Unsupported(f"operator.length_hint() of {obj}")

    RULES[operator.length_hint] = _length_hint

    if hasattr(operator, "call"):
        RULES[operator.call] = lambda tx, obj, *args, **kwargs: obj.call(tx, list(args), kwargs)


_register_operator_rules()


class ItemGetterValue(Value):
    def __init__(self, items: list[Value], source=None):
        super().__init__(source)
        self.items = items

    def python_type(self):
        return operator.itemgetter

    def call(self, tx, args, kwargs):
        from .operators import getitem
        _no_kwargs("itemgetter", kwargs)
        if len(args) != 1:
            raise user_error(TypeError, f"itemgetter expected 1 argument, got {len(args)}")
        obj = _r(tx, args[0])
        if len(self.items) == 1:
            return getitem(tx, obj, self.items[0])
        return TupleValue([getitem(tx, obj, i) for i in self.items])

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.instr("PUSH_NULL")
        out.load_const(operator.itemgetter)
        for i in self.items:
            out.reconstruct(i)
        out.call(len(self.items))


class AttrGetterValue(Value):
    def __init__(self, names: list[str], source=None):
        super().__init__(source)
        self.names = names

    def python_type(self):
        return operator.attrgetter

    def _get(self, tx, obj, dotted):
        for part in dotted.split("."):
            obj = obj.getattr(tx, part)
        return obj

    def call(self, tx, args, kwargs):
        _no_kwargs("attrgetter", kwargs)
        if len(args) != 1:
            raise user_error(TypeError, f"attrgetter expected 1 argument, got {len(args)}")
        if len(self.names) == 1:
            return self._get(tx, args[0], self.names[0])
        return TupleValue([self._get(tx, args[0], n) for n in self.names])

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.instr("PUSH_NULL")
        out.load_const(operator.attrgetter)
        for n in self.names:
            out.load_const(n)
        out.call(len(self.names))


class MethodCallerValue(Value):
    def __init__(self, name: str, args: list[Value], kwargs: dict[str, Value], source=None):
        super().__init__(source)
        self.name, self.args, self.kwargs = name, args, kwargs

    def python_type(self):
        return operator.methodcaller

    def call(self, tx, args, kwargs):
        _no_kwargs("methodcaller", kwargs)
        if len(args) != 1:
            raise user_error(TypeError, f"methodcaller expected 1 argument, got {len(args)}")
        return args[0].call_method(tx, self.name, list(self.args), dict(self.kwargs))

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.instr("PUSH_NULL")
        out.load_const(operator.methodcaller)
        out.load_const(self.name)
        for a in self.args:
            out.reconstruct(a)
        out.instr("BUILD_TUPLE", 1 + len(self.args))
        out.build_map(self.kwargs)
        out.instr("CALL_FUNCTION_EX", 1)


def _make_itemgetter(tx, *items, **kwargs):
    _no_kwargs("itemgetter", kwargs)
    if not items:
        raise user_error(TypeError, "itemgetter expected 1 argument, got 0")
    return ItemGetterValue(list(items))


def _make_attrgetter(tx, *names, **kwargs):
    _no_kwargs("attrgetter", kwargs)
    if not names:
        raise user_error(TypeError, "attrgetter expected 1 argument, got 0")
    out = []
    for n in names:
        c = n.as_python_constant() if n.is_python_constant() else None
        if not isinstance(c, str):
            raise user_error(TypeError, "attribute name must be a string")
        out.append(c)
    return AttrGetterValue(out)


def _make_methodcaller(tx, *args, **kwargs):
    if not args:
        raise user_error(TypeError, "methodcaller needs at least one argument, the method name")
    name = args[0].as_python_constant() if args[0].is_python_constant() else None
    if not isinstance(name, str):
        raise user_error(TypeError, "method name must be a string")
    return MethodCallerValue(name, list(args[1:]), dict(kwargs))


def _consts_to_values(objs) -> list[Value]:
    out = []
    for o in objs:
        if type(o) in _SCALAR_TYPES or (type(o) is tuple and all(type(i) in _SCALAR_TYPES for i in o)):
            out.append(ConstantValue(o))
        else:
            raise Unsupported(f"an operator helper holding a {type(o).__name__}")
    return out


def _wrap_itemgetter(ctx, obj, source):
    _guard(ctx, Kind.ID_MATCH, source, obj)
    return ItemGetterValue(_consts_to_values(obj.__reduce__()[1]), source)


def _wrap_attrgetter(ctx, obj, source):
    _guard(ctx, Kind.ID_MATCH, source, obj)
    return AttrGetterValue(list(obj.__reduce__()[1]), source)


def _wrap_methodcaller(ctx, obj, source):
    _guard(ctx, Kind.ID_MATCH, source, obj)
    ctor, args = obj.__reduce__()
    if isinstance(ctor, functools.partial):  # keyword arguments
        name, kwargs = ctor.args[0], dict(ctor.keywords)
        rest = args
    else:
        name, rest, kwargs = args[0], args[1:], {}
    kw = dict(zip(kwargs, _consts_to_values(kwargs.values())))
    return MethodCallerValue(name, _consts_to_values(rest), kw, source)


_std_class(operator.itemgetter, _make_itemgetter)
_std_class(operator.attrgetter, _make_attrgetter)
_std_class(operator.methodcaller, _make_methodcaller)
_TYPE_HANDLERS[operator.itemgetter] = _wrap_itemgetter
_TYPE_HANDLERS[operator.attrgetter] = _wrap_attrgetter
_TYPE_HANDLERS[operator.methodcaller] = _wrap_methodcaller


# =============================================================================
# itertools: lazy iterators
# =============================================================================

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
        from .operators import binary_op
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
        from .operators import binary_op
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
            from .tensor import TensorValue
            if not isinstance(v, TensorValue):
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


# --- lazy builtins (zip, enumerate, map, filter) ---------------------------------
# builtins.py materializes its arguments for these; that consumes a shared
# iterator too far and cannot take an infinite one.  These follow
# Python/bltinmodule.c and Objects/enumobject.c; builtins.py can route its
# rules here (``RULES[zip] = stdlib.lazy_zip`` and so on).

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
        from .operators import binary_op
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


# =============================================================================
# math
# =============================================================================

def _math_prod(tx, iterable, *rest, start=None, **kwargs):
    if rest or kwargs:
        raise user_error(TypeError, "prod() takes exactly 1 positional argument")
    from .operators import binary_op
    start = start if start is not None else ConstantValue(1)
    items = tx.iterate(iterable)
    if start.is_python_constant() and all(i.is_python_constant() for i in items):
        return fold_call(math.prod, [ListValue(items)], {"start": start})
    acc = start
    for v in items:
        acc = binary_op(tx, operator.mul, _r(tx, acc), _r(tx, v))
    return acc


RULES[math.prod] = _math_prod


# =============================================================================
# collections: OrderedDict, defaultdict, deque, namedtuple
# =============================================================================

def _refuse_outside_mutation(value: Value, what: str):
    if value.source is not None:
        raise Unsupported(f"{what} on a {value.python_type().__name__} that exists outside the compiled frame",
                          hint="side effects on this container type are not replayed yet")


class OrderedDictValue(DictValue):
    """``collections.OrderedDict``: a dict whose order is part of its value."""

    def __init__(self, items, source=None):
        super().__init__(items, cls=collections.OrderedDict, source=source)

    def _check_mutable(self, tx=None, what=None):
        _refuse_outside_mutation(self, "mutation")

    def method(self, tx, name, args, kwargs):
        items = self.items
        if name == "copy":
            return OrderedDictValue(items)
        if name == "move_to_end":
            if not 1 <= len(args) + len(kwargs) <= 2 or set(kwargs) - {"last"} or not args:
                raise user_error(TypeError, "move_to_end() takes 1 or 2 arguments")
            self._check_mutable(tx)
            last = kwargs.get("last", args[1] if len(args) > 1 else ConstantValue(True))
            k = _key(args[0])
            if k not in items:
                raise user_error(KeyError, k)
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
            return TupleValue([ConstantValue(k), items.pop(k)])
        return super().method(tx, name, args, kwargs)

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.instr("PUSH_NULL")
        out.load_const(collections.OrderedDict)
        for k, v in self.items.items():
            out.load_const(k)
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

    def _check_mutable(self, tx=None, what=None):
        _refuse_outside_mutation(self, "mutation")

    def getitem(self, tx, key):
        k = _key(key)
        if k in self.items:
            return self.items[k]
        if _is_none(self.factory):
            raise user_error(KeyError, k)
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
        self._check_mutable(tx)
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
        if isinstance(other, DictValue):
            target.items.update(other.items)
        elif hasattr(other.python_type(), "keys"):
            raise Unsupported(f"{name}() from a mapping that is not a dict")
        else:
            for pair in tx.iterate(other):
                kv = tx.iterate(pair)
                if len(kv) != 2:
                    raise user_error(ValueError, f"dictionary update sequence element has length "
                                     f"{len(kv)}; 2 is required")
                target.items[_key(kv[0])] = kv[1]
    for k, v in kwargs.items():
        target.items[k] = v


def _make_ordered_dict(tx, *args, **kwargs):
    out = OrderedDictValue({})
    _fill_dict(tx, out, args, kwargs, "OrderedDict")
    return out


def _od_fromkeys(tx, iterable, value=None):
    value = value if value is not None else ConstantValue(None)
    return OrderedDictValue({_key(k): value for k in tx.iterate(iterable)})


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
        raise Unsupported(f"a {type(obj).__name__} with non-string/int keys passed into a compiled frame")
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
        from .operators import values_equal
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
        from .containers import SliceValue
        if isinstance(index, SliceValue):
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
        from .operators import values_equal
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


# --- namedtuple ---------------------------------------------------------------------

def _is_namedtuple_class(cls) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple) \
        and hasattr(cls, "_make") and hasattr(cls, "_replace")


def _standard_namedtuple_new(cls) -> bool:
    new = cls.__new__
    g = getattr(new, "__globals__", None)
    return isinstance(new, types.FunctionType) and g is not None \
        and str(g.get("__name__", "")).startswith("namedtuple_") and cls.__init__ is object.__init__


_NT_SIGS: dict[type, inspect.Signature] = {}


def _namedtuple_signature(cls) -> inspect.Signature:
    sig = _NT_SIGS.get(cls)
    if sig is None:
        sig = _NT_SIGS[cls] = inspect.signature(cls.__new__)
    return sig


def _construct_namedtuple(tx, cls_value: "NamedTupleClassValue", args, kwargs) -> "NamedTupleValue":
    cls = cls_value.cls
    if not _standard_namedtuple_new(cls):
        raise Unsupported(f"creating {cls.__qualname__}, a namedtuple with its own __new__/__init__")
    sig = _namedtuple_signature(cls)
    try:
        bound = sig.bind(None, *args, **kwargs)
    except TypeError as e:
        raise user_error(TypeError, str(e).replace("__new__()", f"{cls.__name__}.__new__()"))
    params = list(sig.parameters.values())[1:]
    items = []
    ndefaults = len(cls.__new__.__defaults__ or ())
    for pos, p in enumerate(params):
        if p.name in bound.arguments:
            items.append(bound.arguments[p.name])
            continue
        d_index = pos - (len(params) - ndefaults)
        src = None
        if cls_value.source is not None:
            src = ItemSource(AttrSource(AttrSource(cls_value.source, "__new__"), "__defaults__"), d_index)
        items.append(_wrap_scalar_or(tx.ctx, p.default, src))
    return NamedTupleValue(items, cls)


class NamedTupleClassValue(ClassValue):
    def call(self, tx, args, kwargs):
        return _construct_namedtuple(tx, self, args, kwargs)

    def getattr(self, tx, name):
        cls = self.cls
        if name == "_fields":
            return ConstantValue(cls._fields)
        if name == "_make" and _is_nt_helper(inspect.getattr_static(cls, "_make"), "_make") \
                and _standard_namedtuple_new(cls):
            return _StdCallable(lambda tx_, iterable: self._make(tx_, iterable), f"{cls.__name__}._make")
        return super().getattr(tx, name)

    def _make(self, tx, iterable):
        items = tx.iterate(iterable)
        n = len(self.cls._fields)
        if len(items) != n:
            raise user_error(TypeError, f"Expected {n} arguments, got {len(items)}")
        return NamedTupleValue(items, self.cls)


_NT_PROBE = collections.namedtuple("_NT_PROBE", "a")
# namedtuple() makes new functions for every class, from the same code objects
_NT_CODES = {"_make": inspect.getattr_static(_NT_PROBE, "_make").__func__.__code__,
             "_replace": _NT_PROBE._replace.__code__,
             "_asdict": _NT_PROBE._asdict.__code__}
_TUPLEGETTER = type(inspect.getattr_static(_NT_PROBE, "a"))


def _is_nt_helper(raw, name) -> bool:
    fn = raw.__func__ if isinstance(raw, classmethod) else raw
    return getattr(fn, "__code__", None) is _NT_CODES[name]


class NamedTupleValue(TupleValue):
    """An instance of a namedtuple class: a tuple whose fields read by name
    and whose generated helpers (_replace, _asdict, _make) are modelled."""

    def __init__(self, items, cls, source=None):
        super().__init__(items, cls=cls, source=source)

    def _class_value(self, tx):
        return _wrap(tx.ctx, self.cls, None)

    def getattr(self, tx, name):
        cls = self.cls
        raw = inspect.getattr_static(cls, name, _MISSING)
        if type(raw) is _TUPLEGETTER:
            return self.items[cls._fields.index(name)]
        if name == "_fields":
            return ConstantValue(cls._fields)
        if name == "__class__":
            return self._class_value(tx)
        if name in ("_replace", "_asdict") and _is_nt_helper(raw, name) and _standard_namedtuple_new(cls):
            return BoundContainerMethod(self, name)
        if name == "_make":
            return self._class_value(tx).getattr(tx, name)
        if name in ("count", "index") and raw is getattr(tuple, name):
            return BoundContainerMethod(self, name)
        if self.source is not None and cls.__dictoffset__:
            raise Unsupported(f"attribute {name!r} of a {cls.__name__} instance that has a __dict__")
        if raw is _MISSING:
            raise user_error(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")
        from .objects import bind_attr, find_class_attr
        raw, owner = find_class_attr(cls, name)
        if getattr(raw, "__objclass__", None) is tuple or owner is tuple:
            raise Unsupported(f"tuple.{name} of a namedtuple")
        return bind_attr(tx, raw, owner, name, self, self._class_value(tx))

    def method(self, tx, name, args, kwargs):
        cls = self.cls
        if name == "_replace":
            if args:
                raise user_error(TypeError, f"{cls.__name__}._replace() takes 1 positional argument "
                                 f"but {len(args) + 1} were given")
            kw = dict(kwargs)
            items = [kw.pop(f, v) for f, v in zip(cls._fields, self.items)]
            if kw:
                raise user_error(ValueError, f"Got unexpected field names: {list(kw)!r}")
            return NamedTupleValue(items, cls)
        if name == "_asdict":
            if args or kwargs:
                raise user_error(TypeError, "_asdict() takes 1 positional argument")
            return DictValue(dict(zip(cls._fields, self.items)))
        return super().method(tx, name, args, kwargs)

    def __repr__(self):
        return f"{self.cls.__name__}({self.items!r})"


def _wrap_namedtuple(ctx, obj, source):
    if source is None:
        return None
    t = type(obj)
    _guard(ctx, Kind.TYPE_MATCH, source, t)
    _guard(ctx, Kind.LEN_MATCH, source, len(obj))
    items = [_wrap(ctx, v, ItemSource(source, i)) for i, v in enumerate(obj)]
    return NamedTupleValue(items, t, source)


# =============================================================================
# enum
# =============================================================================

def _enum_attr(tx, member, name: str, source):
    """``member.name`` for names that are not Enum's own properties."""
    cls = type(member)
    d = member.__dict__
    from .objects import bind_attr, find_class_attr
    raw, owner = find_class_attr(cls, name)
    is_data = raw is not _MISSING and (hasattr(type(raw), "__set__") or hasattr(type(raw), "__delete__"))
    if name in d and not is_data:
        return _wrap_scalar_or(tx.ctx, d[name], _attr_src(source, name))
    if raw is _MISSING:
        raise user_error(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")
    if isinstance(raw, enum.Enum):
        return EnumMemberValue(raw, None)
    if owner in (enum.Enum, enum.IntEnum, enum.Flag, enum.IntFlag, object, int, str) \
            or getattr(owner, "__module__", None) == "enum":
        raise Unsupported(f"{owner.__name__}.{name} of an enum member")
    return bind_attr(tx, raw, owner, name, EnumMemberValue(member, source), _wrap(tx.ctx, cls, None))


class EnumMemberValue(ConstantValue):
    """An enum member: a constant guarded by identity.  ``name``/``value``
    fold; methods and properties defined on the enum class are inlined."""

    def getattr(self, tx, name):
        m = self.value
        if name in ("name", "_name_"):
            return ConstantValue(m._name_)
        if name in ("value", "_value_"):
            return _wrap_scalar_or(tx.ctx, m._value_, _attr_src(self.source, "_value_"))
        if name == "__class__":
            return _wrap(tx.ctx, type(m), None)
        if isinstance(m, (int, str, float)) and not isinstance(inspect.getattr_static(type(m), name, None),
                                                             (types.FunctionType, property)):
            # IntEnum / StrEnum: the mixed-in type's own attributes
            return super().getattr(tx, name)
        return _enum_attr(tx, m, name, self.source)

    def __repr__(self):
        return f"EnumMember({self.value!r})"


_ENUM_MISSING_OK = {enum.Enum._missing_.__func__, enum.Flag._missing_.__func__}


class EnumClassValue(ClassValue):
    def getattr(self, tx, name):
        cls = self.cls
        member = cls.__dict__.get("_member_map_", {}).get(name)
        if member is not None and inspect.getattr_static(cls, name, None) is not None:
            return EnumMemberValue(getattr(cls, name), None)
        if name == "__members__":
            raise Unsupported("Enum.__members__ (a mappingproxy)")
        return super().getattr(tx, name)

    def call(self, tx, args, kwargs):
        cls = self.cls
        if kwargs or len(args) != 1:
            raise Unsupported(f"{cls.__name__}(...) other than a lookup by value")
        missing = getattr(getattr(cls, "_missing_", None), "__func__", None)
        if missing not in _ENUM_MISSING_OK:
            raise Unsupported(f"{cls.__name__}(value) with a custom _missing_")
        v = _const(args[0], f"{cls.__name__}()")
        try:
            return EnumMemberValue(cls(v), None)
        except ValueError as e:
            raise user_error(ValueError, str(e))
        except Exception as e:
            raise Unsupported(f"{cls.__name__}({v!r}) raised {type(e).__name__}")

    def getitem(self, tx, key):
        k = _const(key, f"{self.cls.__name__}[...]")
        try:
            return EnumMemberValue(self.cls[k], None)
        except KeyError:
            raise user_error(KeyError, k)

    def unpack(self, tx):
        return [EnumMemberValue(m, None) for m in self.cls]

    def length(self, tx):
        return len(self.cls)

    def truth(self, tx):
        return True

    def contains(self, tx, item) -> bool:
        if isinstance(item, ConstantValue):
            try:
                return item.value in self.cls
            except TypeError as e:
                raise user_error(TypeError, str(e))
        raise Unsupported(f"`in` on {self.cls.__name__} with {item}")


# =============================================================================
# dataclasses
# =============================================================================

class FieldValue(ConstantValue):
    """A ``dataclasses.Field``: its attributes are read as constants (fields
    belong to the class, which is guarded by identity or type)."""

    def getattr(self, tx, name):
        f = self.value
        if name in ("name", "init", "repr", "hash", "compare", "kw_only"):
            return ConstantValue(getattr(f, name))
        if name in ("type", "default", "default_factory", "metadata"):
            v = getattr(f, name)
            if v is dataclasses.MISSING:
                return ConstantValue(v)
            if isinstance(v, type):
                return _wrap(tx.ctx, v, None)
            if type(v) in _SCALAR_TYPES:
                return ConstantValue(v)
            return _wrap(tx.ctx, v, None)
        raise Unsupported(f"attribute {name!r} of a dataclasses.Field")


def _dataclass_type(v: Value):
    """The dataclass type of an instance Value (None if it is not one)."""
    if isinstance(v, ClassValue):
        return None
    try:
        t = v.python_type()
    except Unsupported:
        return None
    return t if dataclasses.is_dataclass(t) else None


def _dc_fields(cls) -> list:
    return list(dataclasses.fields(cls))


def _fields(tx, class_or_instance):
    v = class_or_instance
    if isinstance(v, ClassValue):
        cls = v.as_python_constant()
    else:
        try:
            cls = v.python_type()
        except Unsupported:
            raise Unsupported("dataclasses.fields() of a value whose type is not known")
    if not dataclasses.is_dataclass(cls):
        raise user_error(TypeError, "must be called with a dataclass type or instance")
    return TupleValue([FieldValue(f) for f in _dc_fields(cls)])


def _is_dataclass(tx, obj):
    if isinstance(obj, ClassValue) or obj.is_python_constant() and isinstance(obj, ConstantValue):
        return ConstantValue(dataclasses.is_dataclass(obj.as_python_constant()))
    return ConstantValue(dataclasses.is_dataclass(obj.python_type()))


def _replace(tx, obj, *args, **changes):
    if args:
        raise user_error(TypeError, f"replace() takes 1 positional argument but {len(args) + 1} were given")
    cls = _dataclass_type(obj)
    if cls is None:
        raise user_error(TypeError, "replace() should be called on dataclass instances")
    changes = dict(changes)
    for f in getattr(cls, "__dataclass_fields__").values():
        if f._field_type is dataclasses._FIELD_CLASSVAR:
            continue
        if not f.init:
            if f.name in changes:
                raise user_error(ValueError, f"field {f.name} is declared with init=False, "
                                 "it cannot be specified with replace()")
            continue
        if f.name not in changes:
            if f._field_type is dataclasses._FIELD_INITVAR and f.default is dataclasses.MISSING:
                raise user_error(ValueError, f"InitVar {f.name!r} must be specified with replace()")
            changes[f.name] = obj.getattr(tx, f.name)
    return obj.getattr(tx, "__class__").call(tx, [], changes)


def _deepcopy_leaf(tx, v: Value) -> Value:
    """``copy.deepcopy`` of a non-container leaf, where it is exact."""
    from .tensor import TensorValue, graph_call
    if isinstance(v, EnumMemberValue):
        return v
    if isinstance(v, ConstantValue) and (type(v.value) in _SCALAR_TYPES or type(v.value) in (range, slice)):
        return v
    if isinstance(v, ConstantValue) and type(v.value) is tuple and all(type(i) in _SCALAR_TYPES for i in v.value):
        return v
    if isinstance(v, TensorValue):
        fake = v.fake
        # deepcopy copies the whole storage and keeps strides/offset; it makes a
        # leaf (requires_grad kept) and copies .grad and attributes.  A clone is
        # the same tensor only for a fresh, contiguous, grad-free intermediate.
        if v.source is None and type(fake).__name__ in ("FakeTensor", "Tensor") and not fake.requires_grad \
                and fake.is_contiguous() and fake.storage_offset() == 0 \
                and fake.untyped_storage().nbytes() == fake.numel() * fake.element_size():
            return graph_call(tx, "call_method", "clone", [v], {})
        raise Unsupported("copy.deepcopy of a tensor inside dataclasses.asdict/astuple",
                          hint="deepcopy keeps storage, strides, requires_grad and .grad; "
                               "this frame runs eagerly")
    raise Unsupported(f"copy.deepcopy of {v} inside dataclasses.asdict/astuple")


def _as_inner(tx, v: Value, factory: Value | None, as_dict: bool) -> Value:
    v = _r(tx, v)
    cls = _dataclass_type(v)
    if cls is not None:
        vals = []
        for f in _dc_fields(cls):
            inner = _as_inner(tx, v.getattr(tx, f.name), factory, as_dict)
            vals.append(TupleValue([ConstantValue(f.name), inner]) if as_dict else inner)
        if factory is None:
            if as_dict:
                return DictValue({f.name: pair.items[1] for f, pair in zip(_dc_fields(cls), vals)})
            return TupleValue(vals)
        return factory.call(tx, [ListValue(vals)], {})
    if isinstance(v, NamedTupleValue):
        return NamedTupleValue([_as_inner(tx, i, factory, as_dict) for i in v.items], v.cls)
    if isinstance(v, TupleValue):
        if v.cls is not tuple:
            raise Unsupported(f"dataclasses.asdict/astuple over a {v.cls.__name__}")
        return TupleValue([_as_inner(tx, i, factory, as_dict) for i in v.items])
    if isinstance(v, ListValue):
        return ListValue([_as_inner(tx, i, factory, as_dict) for i in v.items])
    if isinstance(v, DictValue):
        if type(v) is DictValue and v.cls is dict:
            return DictValue({k: _as_inner(tx, i, factory, as_dict) for k, i in v.items.items()})
        if isinstance(v, OrderedDictValue):
            return OrderedDictValue({k: _as_inner(tx, i, factory, as_dict) for k, i in v.items.items()})
        raise Unsupported(f"dataclasses.asdict/astuple over a {v.python_type().__name__}")
    return _deepcopy_leaf(tx, v)


def _asdict(tx, obj, *args, dict_factory=None, **kwargs):
    if args or kwargs:
        raise Unsupported("dataclasses.asdict() with unusual arguments")
    if _dataclass_type(obj) is None:
        raise user_error(TypeError, "asdict() should be called on dataclass instances")
    factory = None if dict_factory is None or _is_builtin_class(dict_factory, dict) else dict_factory
    return _as_inner(tx, obj, factory, True)


def _astuple(tx, obj, *args, tuple_factory=None, **kwargs):
    if args or kwargs:
        raise Unsupported("dataclasses.astuple() with unusual arguments")
    if _dataclass_type(obj) is None:
        raise user_error(TypeError, "astuple() should be called on dataclass instances")
    factory = None if tuple_factory is None or _is_builtin_class(tuple_factory, tuple) else tuple_factory
    return _as_inner(tx, obj, factory, False)


def _is_builtin_class(v: Value, cls: type) -> bool:
    return v.is_python_constant() and v.as_python_constant() is cls


_std_function(dataclasses.fields, _fields)
_std_function(dataclasses.is_dataclass, _is_dataclass)
_std_function(dataclasses.replace, _replace)
_std_function(dataclasses.asdict, _asdict)
_std_function(dataclasses.astuple, _astuple)


def _wrap_missing(ctx, obj, source):
    _guard(ctx, Kind.ID_MATCH, source, obj)
    return ConstantValue(obj)


_register_object(dataclasses.MISSING, _wrap_missing)


# =============================================================================
# typing
# =============================================================================

def _cast(tx, typ, val):
    return val


_std_function(typing.cast, _cast)


class TypingAliasValue(Value):
    """An unsubscripted ``typing`` alias (``typing.List``, ``typing.Sequence``):
    usable as the class argument of isinstance/issubclass."""

    def __init__(self, alias, source=None):
        super().__init__(source)
        self.alias = alias

    def python_type(self):
        return type(self.alias)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.alias

    def reconstruct(self, out):
        out.load_const(self.alias)


def _wrap_typing_alias(ctx, obj, source):
    _guard(ctx, Kind.ID_MATCH, source, obj)
    return TypingAliasValue(obj, source)


_TYPE_HANDLERS[type(typing.List)] = _wrap_typing_alias


# The lazy iterators replace the eager builtins: CPython pulls items one at a
# time, which matters when iterators are shared or infinite.
from .builtins import RULES as _RULES  # noqa: E402

_RULES[zip] = lazy_zip
_RULES[enumerate] = lazy_enumerate
_RULES[map] = lazy_map
_RULES[filter] = lazy_filter
