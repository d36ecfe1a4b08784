"""functools: ``partial`` (made in the frame or passed in), ``reduce``, and
``lru_cache`` wrappers (whose calls read and fill a cache outside the frame,
so they are refused).  Follows Modules/_functoolsmodule.c.
"""
from __future__ import annotations

import functools
import gc

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Kind
from ...guards.sources import AttrSource
from ..base import Value
from ..builtins import RULES
from ..containers import DictValue, TupleValue
from .common import (_MISSING, _TYPE_HANDLERS, _attr_src, _callable, _guard, _iter, _next,
                     _no_kwargs, _std_class, _wrap)


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
