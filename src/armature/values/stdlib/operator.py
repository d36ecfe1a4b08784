"""operator: the functions (rules in ``builtins.RULES`` that reuse the
interpreter's own binary/compare/unary operations) and the three callable
classes ``itemgetter``, ``attrgetter``, ``methodcaller``.  Follows
Modules/_operator.c.
"""
from __future__ import annotations

import functools
import operator

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Kind
from ..base import Value
from ..operations.builtins import RULES, fold_call
from ..constant import ConstantValue
from ..containers.containers import DictValue, ListValue, TupleValue
from .common import _SCALAR_TYPES, _TYPE_HANDLERS, _guard, _iter, _next, _no_kwargs, _r, _std_class
from .. import kinds


def _register_operator_rules():
    from ..operations import operators as ops

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
        if isinstance(a, kinds.TensorValue):
            kinds.graph_call(tx, "call_function", operator.setitem, [a, b, c], {})
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
        if isinstance(obj, (ListValue, TupleValue, DictValue, kinds.DequeValue)):
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
        from ..operations.operators import getitem
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
