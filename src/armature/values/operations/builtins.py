"""Python builtins as a rule table: one small function per builtin.

A builtin with no rule folds when all its arguments are constants and it is
known to be pure; otherwise it is Unsupported.
"""
from __future__ import annotations

import inspect as _inspect
import math
import operator
import sys as _sys
import types
from typing import Callable

from ...diagnostics.errors import Unsupported, UserException, user_error
from ..base import CallableConstantValue, Value, concrete, get_attribute, realize
from ..constant import ConstantValue, ConstantMethodValue
from ..containers.containers import DictValue, IteratorValue, ListValue, SliceValue, TupleValue
from ..builder import wrap, wrap_constant_result
from .. import kinds

RULES: dict[object, Callable] = {}

PURE_BUILTINS = {
    abs, all, any, ascii, bin, bool, chr, divmod, float, format, hex, int, len, max, min, oct, ord,
    pow, repr, round, sorted, str, sum, tuple, list, complex, hash, frozenset, range, slice,
    *(v for k, v in vars(math).items() if callable(v)),
    *(v for k, v in vars(operator).items() if callable(v) and not k.startswith("_")),
}


def rule(*fns):
    def deco(handler):
        for f in fns:
            RULES[f] = handler
        return handler
    return deco


class BuiltinValue(CallableConstantValue):
    def call(self, tx, args, kwargs):
        if self.fn not in _SYMBOLIC_AWARE:  # (their rules keep symbolic numbers symbolic)
            args = [concrete(tx, a) for a in args]
            kwargs = {k: concrete(tx, v) for k, v in kwargs.items()}
        handler = RULES.get(self.fn)
        if handler is None and getattr(self.fn, "__objclass__", None) in (list, tuple, dict):
            from ..objects.builtin_subclasses import unbound_rule   # (list.__getitem__(obj, i)...)
            handler = unbound_rule(self.fn)
        if handler is not None:
            return handler(tx, *args, **kwargs)
        return fold_call(self.fn, args, kwargs)

    def __repr__(self):
        return f"<builtin {getattr(self.fn, '__qualname__', self.fn)}>"


_IMMUTABLE_TYPES = (frozenset, str, bytes, tuple, int, float, complex, bool, range, type(None))


def _is_pure(fn) -> bool:
    if fn in PURE_BUILTINS:
        return True
    # methods of immutable builtin types (frozenset.__contains__, str.join...)
    owner = getattr(fn, "__objclass__", None)
    if owner in _IMMUTABLE_TYPES:
        return True
    self_ = getattr(fn, "__self__", None)
    return type(self_) in _IMMUTABLE_TYPES and not isinstance(self_, type)


#: builtins whose rules take symbolic numbers as they are: print, min, max and
#: abs keep them symbolic; isinstance and type only ask their type (which a
#: dynamic size has without being specialised: transformers asks
#: ``isinstance(past_seen_tokens, torch.Tensor)`` of the KV-cache length);
#: str, repr and format format them at run time (operations/deferred_text.py)
_SYMBOLIC_AWARE = frozenset({print, min, max, abs, isinstance, type, str, repr, format})


def fold_call(fn, args, kwargs) -> Value:
    if not _is_pure(fn):
        name = getattr(fn, "__qualname__", repr(fn))
        mod = getattr(fn, "__module__", None)
        raise Unsupported(f"call to {mod + '.' if mod and mod != 'builtins' else ''}{name}, "
                          "a C function armature does not know",
                          hint="if it is pure, compute it outside the compiled function")
    from ..containers.containers import unwrap_constants
    a, k = unwrap_constants(args, kwargs, what=f"{getattr(fn, '__name__', fn)}()")
    try:
        result = fn(*a, **k)
    except Exception as e:
        from .operators import folded_exception
        raise folded_exception(fn, e) from None
    return wrap_constant_result(result)


def _all_const(*vals) -> bool:
    return all(v.is_python_constant() for v in vals)


def _tensor_scalar_rule(kind):
    """``int(t)`` / ``float(t)`` of a one-element tensor: a graph node when
    config.capture_scalar_outputs is on (else a graph break)."""
    def handler(tx, *args, **kwargs):
        if len(args) == 1 and not kwargs:
            v = realize(tx.ctx, args[0])
            if isinstance(v, kinds.TensorValue):
                return v.scalar(tx, kind)
        return fold_call(kind, args, kwargs)
    return handler


RULES[int] = _tensor_scalar_rule(int)
RULES[float] = _tensor_scalar_rule(float)


@rule(len)
def _len(tx, obj):
    obj = realize(tx.ctx, obj)
    if isinstance(obj, kinds.LazyListValue):
        n = obj.symbolic_length()
        if n is not None:
            return n
    if isinstance(obj, kinds.TensorValue):
        return obj.symbolic_length(tx)
    return ConstantValue(obj.length(tx))


def _format_rule(fmt):
    """str()/repr() of a user object or of an exception the trace made
    (``except KeyError as e: str(e)``; values/operations/formatting.py,
    values/operations/exception_text.py); anything else folds as a constant call."""

    def handler(tx, *args, **kwargs):
        if len(args) == 1 and not kwargs:
            v = realize(tx.ctx, args[0])
            from .formatting import text_value
            from .runtime_text import RuntimeTextValue
            if isinstance(v, RuntimeTextValue):   # (str/repr of text: itself / its quoted form)
                if fmt is str:
                    return v
                raise Unsupported("repr() of text that holds the address of an object made in the frame")
            from .deferred_text import format_field
            deferred = format_field(tx, v, "s" if fmt is str else "r")   # (str(x.size()), dynamic)
            if deferred is not None:
                return deferred
            text = text_value(tx, v, fmt.__name__)
            if text is not None:
                return text
        return fold_call(fmt, args, kwargs)
    return handler


RULES[str] = _format_rule(str)
RULES[repr] = _format_rule(repr)


from ..functions import frame_locals as _frame_locals  # noqa: E402
from ...runtime import frame_view as _frame_view  # noqa: E402

FrameIntrospection = _frame_locals.FrameIntrospection


def _introspection(what):
    def handler(tx, *args, **kwargs):
        raise FrameIntrospection(f"{what} looks at the frame itself")
    return handler


RULES[_sys._getframe] = _introspection("sys._getframe()")
RULES[_inspect.currentframe] = _introspection("inspect.currentframe()")
RULES[_inspect.stack] = _introspection("inspect.stack()")
# locals(), vars() and dir() without an argument: the user's variables
# (values/functions/frame_locals.py); a resume function calls the runtime/frame_view
# stand-ins instead of the builtins, traced alike
RULES[locals] = RULES[_frame_view.frame_locals] = _frame_locals.locals_rule
from . import eval_builtin as _eval_builtin  # noqa: E402

_eval_builtin.register(RULES)   # eval()/exec() without namespaces read the frame
from ..containers import mapping_proxy as _mapping_proxy  # noqa: E402

_mapping_proxy.register(RULES)  # types.MappingProxyType(d) made in the frame
from . import exception_text as _exception_text, formatting as _formatting  # noqa: E402

_exception_text.register(RULES)  # BaseException.__str__(e), super().__str__() of exceptions the trace made
RULES[format] = _formatting.format_rule   # format() of user objects and exceptions


@rule(_frame_view.resolve)
def _resolve_frame_looker(tx, obj):
    """A resume function's load of ``locals``/``vars``/``dir``."""
    fn = getattr(obj, "fn", None)
    stand_in = _frame_view.resolve(fn) if fn is not None else None
    if stand_in is None or stand_in is fn:
        return obj
    return BuiltinValue(stand_in)


from ...runtime import super_adapter as _zero_arg_super  # noqa: E402


class _BareSuperCall(Value):
    """A shadowing ``super`` as generated code's zero-argument ``super()``
    calls it (codegen/zero_arg_super.py): with no arguments."""

    def __init__(self, fn: Value):
        super().__init__()
        self.fn = fn

    def call(self, tx, args, kwargs):
        return self.fn.call(tx, [], {})

    def reconstruct(self, out):
        out.instr("PUSH_NULL")
        out.load_const(_zero_arg_super.adapt)
        out.reconstruct(self.fn)
        out.call(1)


@rule(_zero_arg_super.adapt)
def _adapt_zero_arg_super(tx, global_super):
    if global_super.is_python_constant() and global_super.as_python_constant() is super:
        return global_super
    return _BareSuperCall(global_super)


@rule(dir, _frame_view.frame_dir)
def _dir(tx, *args):
    if not args:
        return _frame_locals.dir_of_frame(tx)
    return fold_call(dir, args, {})


@rule(vars, _frame_view.frame_vars)
def _vars(tx, *args):
    if not args:
        return _frame_locals.locals_dict(tx, "vars()")
    if len(args) != 1:
        raise user_error(TypeError, f"vars expected at most 1 argument, got {len(args)}")
    obj = realize(tx.ctx, args[0])
    if isinstance(obj, kinds.ModuleValue):   # (a module's instance dict: ``self.__dict__``)
        return obj.getattr(tx, "__dict__")
    if not isinstance(obj, kinds.ObjectValue):
        raise Unsupported(f"vars() of {obj}")
    try:
        return obj.getattr(tx, "__dict__")
    except UserException as e:
        if e.exc_type is AttributeError:
            raise user_error(TypeError, "vars() argument must have __dict__ attribute")
        raise



@rule(isinstance)
def _isinstance(tx, obj, classinfo):
    cls = classinfo.as_python_constant()
    from ..objects.metaclasses import isinstance_through_metaclass
    through = isinstance_through_metaclass(tx, obj, cls)
    if through is not None:
        return through
    try:
        return ConstantValue(issubclass(obj.python_type(), cls))
    except TypeError:
        raise user_error(TypeError, "isinstance() arg 2 must be a type, a tuple of types, or a union") from None


@rule(type.__call__)
def _type_call(tx, cls, *args, **kwargs):
    from ..objects.metaclasses import type_call
    return type_call(tx, cls, args, kwargs)


@rule(issubclass)
def _issubclass(tx, cls, classinfo):
    try:
        return ConstantValue(issubclass(cls.as_python_constant(), classinfo.as_python_constant()))
    except TypeError as e:
        from .operators import folded_exception
        raise folded_exception(issubclass, e) from None


@rule(type)
def _type(tx, obj, *rest):
    if rest:
        raise Unsupported("type() with three arguments")
    t = obj.python_type()
    return wrap(tx.ctx, t, None)


@rule(range)
def _range(tx, *args):
    return ConstantValue(range(*[a.as_python_constant() for a in args]))


@rule(slice)
def _slice(tx, *args):
    if _all_const(*args):
        return ConstantValue(slice(*[a.as_python_constant() for a in args]))
    a = list(args) + [ConstantValue(None)] * (3 - len(args))
    if len(args) == 1:
        a = [ConstantValue(None), args[0], ConstantValue(None)]
    return SliceValue(*a)


@rule(enumerate)
def _enumerate(tx, iterable, start=ConstantValue(0)):
    s = start.as_python_constant()
    it = IteratorValue([TupleValue([ConstantValue(i + s), v]) for i, v in enumerate(tx.iterate(iterable))])
    it.kind = enumerate
    return it


@rule(zip)
def _zip(tx, *iterables, strict=ConstantValue(False)):
    seqs = [tx.iterate(i) for i in iterables]
    if strict.as_python_constant() and len({len(s) for s in seqs}) > 1:
        raise Unsupported("zip(strict=True) with arguments of different lengths")
    it = IteratorValue([TupleValue(list(t)) for t in zip(*seqs)])
    it.kind = zip
    return it


_NO_REVERSED = object()


@rule(reversed)
def _reversed(tx, seq):
    from ..containers.iterator_types import reversed_type
    seq = realize(tx.ctx, seq)
    if isinstance(seq, kinds.TensorValue):   # Tensor.__reversed__: the tensor flipped along dim 0
        return seq if seq.fake.dim() == 0 else \
            kinds.graph_call(tx, "call_method", "flip", [seq, ConstantValue(0)], {})
    if isinstance(seq, kinds.ObjectValue):   # reversed() returns what a class's own __reversed__ returns
        raw = getattr(seq.python_type(), "__reversed__", _NO_REVERSED)
        if raw is None:
            raise user_error(TypeError, f"'{seq.python_type().__name__}' object is not reversible")
        if isinstance(raw, types.FunctionType):
            return seq.dunder(tx, "__reversed__").call(tx, [], {})
    it = IteratorValue(list(reversed(tx.iterate(seq))))
    it.kind = reversed_type(realize(tx.ctx, seq).python_type())
    return it


@rule(iter)
def _iter(tx, obj, *sentinel):
    if sentinel:
        raise Unsupported("iter() with a sentinel")
    return tx.get_iter(obj)


@rule(next)
def _next(tx, it, *default):
    if not isinstance(it, IteratorValue):
        raise Unsupported(f"next() on {it}")
    v = it.next(tx)
    if v is None:
        if default:
            return default[0]
        raise user_error(StopIteration)
    return v


@rule(list)
def _list(tx, iterable=None):
    return ListValue([] if iterable is None else tx.iterate(iterable))


@rule(tuple)
def _tuple(tx, iterable=None):
    return TupleValue([] if iterable is None else tx.iterate(iterable))


@rule(set)
def _set(tx, iterable=None):
    from ..containers.containers import _key
    from ..containers import set_order
    s = kinds.SetValue(set())
    if isinstance(iterable, kinds.SetValue):   # (no iteration order leaks into a set)
        s.items = set(iterable.items)
        s.recipe = set_order.derived(("new_from", set_order.snapshot(tx, iterable)))
    elif iterable is not None:
        for v in tx.iterate(iterable):
            s.add_key(_key(v, tx))
    return s


@rule(frozenset)
def _frozenset(tx, iterable=None):
    from ..containers.containers import _key
    from ..containers.keys import has_value_keys
    from ..containers import set_order
    snap = None if iterable is None else set_order.snapshot(tx, iterable)
    if isinstance(iterable, kinds.SetValue):   # (no iteration order leaks into a set)
        keys = frozenset(iterable.items)
    else:
        keys = frozenset() if iterable is None else frozenset(_key(v, tx) for v in tx.iterate(iterable))
    if not has_value_keys(keys):
        return ConstantValue(keys)
    out = kinds.SetValue(keys, cls=frozenset)
    out.recipe = set_order.derived(("new_from", snap))
    return out


@rule(dict)
def _dict(tx, *args, **kwargs):
    out = DictValue({})
    out.method(tx, "update", list(args), kwargs)
    return out


def _reduce_minmax(tx, fn, args, kwargs):
    """min()/max() as CPython computes them: the first item whose key is
    strictly smaller (larger) than the best so far wins; keys are compared
    with the traced ``<`` (so user ``__lt__`` runs, and tensors break)."""
    import operator as _op
    if not kwargs and all(a.is_python_constant() for a in args) and \
            (len(args) > 1 or args[0].is_python_constant()):
        return fold_call(fn, args, kwargs)
    key = kwargs.get("key")
    if key is not None and key.is_python_constant() and key.as_python_constant() is None:
        key = None
    items = tx.iterate(args[0]) if len(args) == 1 else list(args)
    if not items:
        if "default" in kwargs:
            return kwargs["default"]
        raise user_error(ValueError, f"{fn.__name__}() arg is an empty sequence")
    from .operators import compare_op
    better = _op.lt if fn is min else _op.gt
    best = items[0]
    best_k = key.call(tx, [best], {}) if key is not None else best
    for item in items[1:]:
        k = key.call(tx, [item], {}) if key is not None else item
        if compare_op(tx, better, k, best_k).truth(tx):
            best, best_k = item, k
    return best


def _symbolic(tx, fn, args, kwargs):
    """``fn(*args)`` kept symbolic, or None (the caller specialises the
    arguments and folds)."""
    from ..tensors.symbolic import symbolic_call
    return None if kwargs else symbolic_call(tx.ctx, fn, [realize(tx.ctx, a) for a in args])


def _concrete_all(tx, args, kwargs):
    return [concrete(tx, a) for a in args], {k: concrete(tx, v) for k, v in kwargs.items()}


@rule(min)
def _min(tx, *args, **kwargs):
    return _symbolic(tx, min, args, kwargs) or _reduce_minmax(tx, min, *_concrete_all(tx, args, kwargs))


@rule(max)
def _max(tx, *args, **kwargs):
    return _symbolic(tx, max, args, kwargs) or _reduce_minmax(tx, max, *_concrete_all(tx, args, kwargs))


@rule(sum)
def _sum(tx, iterable, start=ConstantValue(0)):
    from .operators import binary_op
    if isinstance(start, ConstantValue) and isinstance(start.value, (str, bytes, bytearray)):
        kind = type(start.value).__name__
        raise user_error(TypeError, f"sum() can't sum {'strings' if kind == 'str' else kind} "
                                    f"[use {'' if kind == 'str' else 'b'}''.join(seq) instead]")
    acc = start
    for v in tx.iterate(iterable):
        acc = binary_op(tx, operator.add, acc, v)
    return acc


@rule(abs)
def _abs(tx, x):
    x = realize(tx.ctx, x)
    if isinstance(x, kinds.TensorValue):
        return kinds.graph_call(tx, "call_function", operator.abs, [x], {})
    return _symbolic(tx, abs, [x], {}) or fold_call(abs, *_concrete_all(tx, [x], {}))


@rule(pow)
def _pow(tx, a, b, *mod):
    from .operators import binary_op
    if mod:
        return fold_call(pow, [a, b, *mod], {})
    return binary_op(tx, operator.pow, a, b)


@rule(bool)
def _bool(tx, x=ConstantValue(False)):
    if isinstance(x, kinds.DeferredTruth):
        return x
    deferred = tx.deferred_truth(realize(tx.ctx, x))
    if deferred is not None:   # (a later branch on it may be assumed: trace/speculation.py)
        return deferred
    return ConstantValue(x.truth(tx))


@rule(all)
def _all(tx, iterable):
    return ConstantValue(all(v.truth(tx) for v in tx.iterate(iterable)))


@rule(any)
def _any(tx, iterable):
    return ConstantValue(any(v.truth(tx) for v in tx.iterate(iterable)))


@rule(callable)
def _callable(tx, obj):
    if obj.is_python_constant():
        return ConstantValue(callable(obj.as_python_constant()))
    from ..functions.functions import _Function
    from ..containers.containers import _Sequence
    if isinstance(obj, (_Function, kinds.BoundMethodValue, ConstantMethodValue, kinds.BoundContainerMethod, kinds.TensorMethodValue)):
        return ConstantValue(True)   # (methods: ``callable(x.sum)``)
    if isinstance(obj, (_Sequence, DictValue)) and obj.python_type() in (list, tuple, dict):
        return ConstantValue(False)
    return ConstantValue(any("__call__" in k.__dict__ for k in obj.python_type().__mro__[:-1]))


@rule(getattr)
def _getattr(tx, obj, name, *default):
    n = name.as_python_constant()
    if default:
        try:
            return get_attribute(tx, obj, n)
        except UserException as e:
            if issubclass(e.exc_type, AttributeError):
                return default[0]
            raise
    return get_attribute(tx, obj, n)


@rule(hasattr)
def _hasattr(tx, obj, name):
    n = name.as_python_constant()
    if obj.is_python_constant() and not hasattr(type(obj), "has_attr_override"):
        try:
            return ConstantValue(obj.has_attr(tx, n))
        except Unsupported:
            return ConstantValue(hasattr(obj.as_python_constant(), n))
    return ConstantValue(obj.has_attr(tx, n))


@rule(setattr)
def _setattr(tx, obj, name, value):
    obj.setattr(tx, name.as_python_constant(), value)
    return ConstantValue(None)


@rule(delattr)
def _delattr(tx, obj, name):
    n = name.as_python_constant() if name.is_python_constant() else None
    if not isinstance(n, str):
        raise user_error(TypeError, "attribute name must be string")
    if not hasattr(obj, "delattr"):
        raise Unsupported(f"delattr() on {obj}")
    obj.delattr(tx, n)
    return ConstantValue(None)


@rule(sorted)
def _sorted(tx, iterable, key=None, reverse=ConstantValue(False)):
    return ListValue(sorted_values(tx, tx.iterate(iterable), key, reverse.as_python_constant()))


def sorted_values(tx, items, key, reverse: bool, in_place: bool = False):
    keys = [key.call(tx, [v], {}) if key is not None and not (key.is_python_constant() and key.as_python_constant() is None)
            else v for v in items]
    if not _all_const(*keys):
        try:
            return [items[i] for i in _traced_sort_order(tx, keys, reverse)]
        except UserException:
            if in_place:   # CPython leaves the list partly sorted then: not modelled
                raise Unsupported("list.sort() whose comparison raised (the list's partial order is not modelled)")
            raise
    order = sorted(range(len(items)), key=lambda i: keys[i].as_python_constant(), reverse=reverse)
    return [items[i] for i in order]


def _traced_sort_order(tx, keys, reverse: bool) -> list[int]:
    """The order CPython's sort gives ``keys`` (Values: user objects with
    ``__lt__``...), found by running the real sort on stand-ins whose ``<``
    is the traced comparison: the same comparisons, in the same order (user
    ``__lt__`` side effects included), as eager."""
    import operator as _op
    from .operators import compare_op

    class _Key:
        __slots__ = ("i",)

        def __init__(self, i):
            self.i = i

        def __lt__(self, other):
            return compare_op(tx, _op.lt, keys[self.i], keys[other.i]).truth(tx)

    return [k.i for k in sorted((_Key(i) for i in range(len(keys))), reverse=reverse)]


@rule(map)
def _map(tx, fn, *iterables):
    seqs = [tx.iterate(i) for i in iterables]
    it = IteratorValue([fn.call(tx, list(args), {}) for args in zip(*seqs)])
    it.kind = map
    return it


@rule(filter)
def _filter(tx, fn, iterable):
    items = tx.iterate(iterable)
    if fn.is_python_constant() and fn.as_python_constant() is None:
        it = IteratorValue([v for v in items if v.truth(tx)])
    else:
        it = IteratorValue([v for v in items if fn.call(tx, [v], {}).truth(tx)])
    it.kind = filter
    return it


@rule(print)
def _print(tx, *args, **kwargs):
    raise Unsupported("print() writes output", hint="without fullgraph the frame is split around print() "
                      "(a graph break); remove it to keep one graph")


@rule(id)
def _id(tx, obj):
    """id(): values/operations/identity.py (an IdValue, or the guarded number of an
    object fixed for the entry)."""
    from .identity import id_of
    return id_of(tx, obj)


@rule(types.CellType)
def _new_cell(tx, *args):
    """``types.CellType()`` / ``CellType(v)``: a resume function's MAKE_CELL
    (codegen/resume.py) makes its cells this way."""
    if len(args) > 1:
        raise user_error(TypeError, f"cell expected at most 1 argument, got {len(args)}")
    return kinds.CellValue(args[0]) if args else kinds.CellValue()


@rule(super)
def _super(tx, *args):
    if len(args) == 2:
        start = args[0].as_python_constant()
        return kinds.SuperValue(start, realize(tx.ctx, args[1]))
    if args:
        raise Unsupported("super() with one argument")
    # zero-argument form: the compiler's __class__ cell and the first argument
    code = tx.code
    cell = tx.cells.get("__class__")
    if cell is None or not code.co_argcount and not code.co_flags & 0x04:
        raise user_error(RuntimeError, "super(): no arguments")
    start = cell.get(tx, "__class__").as_python_constant()
    first = code.co_varnames[0]
    if first in tx.cells and first not in tx.locals:
        obj = tx.cells[first].get(tx, first)
    else:
        obj = tx.load_local(first)
    return kinds.SuperValue(start, realize(tx.ctx, obj))


from .. import stdlib as _stdlib  # noqa: E402,F401  (registers the stdlib modules' rules, lazy zip/map/...)


def _torch_type_info(kind):
    def rule(tx, *args, **kwargs):
        from ..containers.containers import unwrap_constants
        a, k = unwrap_constants(args, kwargs, what=f"torch.{kind.__name__}()")
        try:
            return ConstantValue(kind(*a, **k))
        except Exception as e:
            raise Unsupported(f"torch.{kind.__name__}() raised {type(e).__name__}: {e}")
    return rule


import torch as _torch  # noqa: E402

RULES[_torch.finfo] = _torch_type_info(_torch.finfo)
RULES[_torch.iinfo] = _torch_type_info(_torch.iinfo)




def _state_query(fn, label: str):
    """A no-argument query of process state (``torch.distributed.is_initialized()``,
    ``sys.getrecursionlimit()``):
    evaluated while tracing and guarded by calling it again, so the answer is
    a constant in the graph and a change (a process group created later)
    recompiles."""
    def handler(tx, *args, **kwargs):
        from ...guards.guard import Guard, Kind
        if args or kwargs:
            raise Unsupported(f"{label} with arguments")
        value = fn()
        tx.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text="___f() == ___v", consts={"___f": fn, "___v": value},
                                label=f"{label} == {value!r}"))
        return ConstantValue(value)
    return handler


RULES[_sys.getrecursionlimit] = _state_query(_sys.getrecursionlimit, "sys.getrecursionlimit()")

import torch.distributed as _dist  # noqa: E402

for _fn, _label in ((getattr(_dist, "is_available", None), "torch.distributed.is_available()"),
                    (getattr(_dist, "is_initialized", None), "torch.distributed.is_initialized()")):
    if _fn is not None:
        RULES[_fn] = _state_query(_fn, _label)

import logging as _logging  # noqa: E402


@rule(_logging.Logger.isEnabledFor)
def _logger_is_enabled_for(tx, logger, level):
    """``logger.isEnabledFor(level)`` (what ``logger.debug(...)`` asks first):
    the real answer, guarded by asking again, so a disabled log call costs
    a guard instead of graph breaks in logging's locks."""
    from ...guards.guard import Guard, Kind
    logger = realize(tx.ctx, logger)
    real = getattr(logger, "obj", None)
    if getattr(logger, "is_new", True) or not isinstance(real, _logging.Logger) or not level.is_python_constant():
        raise Unsupported("Logger.isEnabledFor of a logger made in the frame or a level not known while tracing")
    lvl = level.as_python_constant()
    value = real.isEnabledFor(lvl)
    tx.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text="___l.isEnabledFor(___n) is ___v",
                            consts={"___l": real, "___n": lvl, "___v": value},
                            label=f"logger {real.name!r}.isEnabledFor({_logging.getLevelName(lvl)}) is {value}"))
    return ConstantValue(value)




@rule(_inspect.signature)
def _signature(tx, obj, *args, **kwargs):
    """inspect.signature of a function that existed before the frame: the
    real Signature, a constant (the function itself is identity-guarded)."""
    real = None
    if isinstance(obj, kinds.UserFunctionValue):
        real = obj.fn
    elif isinstance(obj, kinds.BoundMethodValue) and isinstance(obj.func, kinds.UserFunctionValue):
        real = obj.func.fn
    elif isinstance(obj, kinds.NestedFunctionValue):
        real = obj.signature_stand_in(tx)
    if real is None:
        raise Unsupported(f"inspect.signature() of {obj}")
    a, k = [x.as_python_constant() for x in args], {n: v.as_python_constant() for n, v in kwargs.items()}
    sig = _inspect.signature(real, *a, **k)
    if isinstance(obj, kinds.BoundMethodValue):  # drop the bound first parameter, as for a method
        params = list(sig.parameters.values())[1:]
        sig = sig.replace(parameters=params)
    return ConstantValue(sig)


from ..tensors import cuda_queries as _cuda_queries  # noqa: E402
from ..tensors import state_queries as _state_queries  # noqa: E402
from . import strings as _strings  # noqa: E402

_strings.register(RULES)

_state_queries.register(RULES)
_cuda_queries.register(RULES)


@rule(_torch.device)
def _torch_device(tx, *args, **kwargs):
    """``torch.device("cpu")`` made in the frame: a constant (a device is
    nothing but its type and index); a bad spec raises eager's error."""
    from ..containers.containers import unwrap_constants
    a, k = unwrap_constants(args, kwargs, what="torch.device()")
    try:
        return ConstantValue(_torch.device(*a, **k))
    except Exception as e:  # noqa: BLE001 - eager raises it
        from .operators import folded_exception
        raise folded_exception(_torch.device, e) from None
