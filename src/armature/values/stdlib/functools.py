"""functools: ``partial`` (made in the frame or passed in), ``reduce``, and
``lru_cache`` wrappers (whose calls read and fill a cache outside the frame:
a constant of the graph where the wrapped function is pure, a call replayed
natively where its only effect is output, else refused).  Follows
Modules/_functoolsmodule.c.
"""
from __future__ import annotations

import functools
import gc
import weakref

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Kind
from ...guards.sources import AttrSource
from ..base import Value, concrete
from ..operations.builtins import RULES
from ..containers.containers import DictValue, TupleValue
from .common import (_MISSING, _TYPE_HANDLERS, _attr_src, _callable, _guard, _iter, _next,
                     _no_kwargs, _std_class, _wrap)
from ..builder import wrap
from ..constant import ConstantValue
from .. import kinds


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
        if self.source is None and getattr(self, "real", None) is None:
            # made in the frame: its instance __dict__ starts empty (stores to
            # the partial are not modelled), so the class's plain attributes
            # answer (``__module__``, ``__doc__``, ``__dict__``: what
            # functools.wraps(p) reads)
            if name == "__dict__":
                if getattr(self, "instance_dict", None) is None:
                    self.instance_dict = DictValue({})
                return self.instance_dict
            d = getattr(self, "instance_dict", None)
            if d is not None and name in d.items:
                return d.items[name]
            owner = next((k for k in functools.partial.__mro__ if name in vars(k)), None)
            if owner is None:
                raise user_error(AttributeError, f"'functools.partial' object has no attribute {name!r}")
            if type(vars(owner)[name]) in (str, type(None)):
                return ConstantValue(vars(owner)[name])
        raise Unsupported(f"attribute {name!r} of a functools.partial")

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        d = getattr(self, "instance_dict", None)
        if d is not None:   # (the frame read p.__dict__: the rebuilt partial gets that very dict)
            from ..functions.functions import set_function_attributes
            out.instr("PUSH_NULL")
            out.load_const(set_function_attributes)
        out.instr("PUSH_NULL")
        out.load_const(functools.partial)
        out.reconstruct(self.func)
        for a in self.args.items:
            out.reconstruct(a)
        out.instr("BUILD_TUPLE", 1 + len(self.args.items))
        out.build_map(self.keywords.items)
        out.instr("CALL_FUNCTION_EX", 1)
        if d is not None:
            out.load_const(("__dict__",))
            out.reconstruct(d)
            out.instr("BUILD_TUPLE", 1)
            out.call(3)

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
        has_dict = _partial_has_instance_dict(real) if real is not None else \
            getattr(func, "instance_dict", None) is not None   # (reading p.__dict__ made one)
        if not has_dict:
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
    """A function wrapped by ``functools.lru_cache``/``functools.cache``
    (also reached as a method: ``obj.meth`` binds the wrapper to ``obj``).
    Calling it reads and fills the cache, state outside the frame.

    The arguments must be known while tracing: constants, or objects from
    outside the frame hashed by identity (``self`` of a cached method;
    guarded by identity).  The wrapped function is first traced in a
    sandbox (:func:`_speculate`); then:

    * pure (no side effect, no tensor work, an immutable constant result):
      the call is a constant of the graph.  The real wrapper is called
      while tracing, which fills the cache as the eager call would (a hit
      returns the cached value, even a stale one).  The entry's guard calls
      the wrapper again on every call and checks it still answers the same:
      the cache sees one call per call (hits and misses as in eager), a
      cleared cache refills, and an answer that changed recompiles.
    * its only effect is output (logging, warnings: ``logger.warning_once``)
      and it returns None on every path: the call is replayed natively in
      the residual code, in program order with the frame's other side
      effects (values/stdlib/deferred_output.py), and the guards of the
      path it took are kept.
    * anything else is a graph break: the call runs natively."""

    def __init__(self, fn, source):
        super().__init__(source)
        self.fn = fn

    def python_type(self):
        return type(self.fn)

    def call(self, tx, args, kwargs):
        name = self.fn.__qualname__
        hint = ("a cached call reads and fills the cache; this one is kept out of the graph "
                "(call the undecorated function, fn.__wrapped__, to trace it)")
        args = [concrete(tx, a) for a in args]
        kwargs = {k: concrete(tx, v) for k, v in kwargs.items()}
        objects = [_identity_object(tx, v) if not v.is_python_constant() else None for v in args]
        if not all(v.is_python_constant() for v in kwargs.values()) or \
                any(o is None and not v.is_python_constant() for o, v in zip(objects, args)):
            raise Unsupported(f"calling the lru_cache-wrapped function {name} with arguments not known "
                              "while tracing", hint=hint)
        a = [v.as_python_constant() if o is None else o for o, v in zip(objects, args)]
        k = {n: v.as_python_constant() for n, v in kwargs.items()}
        try:
            hash((tuple(a), tuple(k.items())))
        except TypeError:
            raise Unsupported(f"calling the lru_cache-wrapped function {name} with unhashable arguments")
        out, sub, output = _speculate(tx, self, args, objects, kwargs, name, hint)
        if output:   # (replayed natively in program order: it sees the frame's writes before it)
            return _replayed_call(tx, self, args, kwargs, sub, name, hint)
        if _reads_pending_writes(tx, [a.source for a, o in zip(args, objects) if o is not None], sub):
            # (called while tracing, the function reads outside state as it is now: the frame's
            # pending writes to what it reads are not in it)
            raise Unsupported(f"calling the lru_cache-wrapped function {name} after the frame changed state "
                              "it reads", hint=hint)
        if not out.is_python_constant() or not _immutable(out.as_python_constant()):
            raise Unsupported(f"the lru_cache-wrapped function {name} returns a mutable or non-constant value "
                              "(the cache hands out the same object on every call)", hint=hint)
        try:
            real = self.fn(*a, **k)
        except Exception as e:  # noqa: BLE001  (the native call raises it)
            raise Unsupported(f"{name}() raised {type(e).__name__} when called while tracing", hint=hint)
        if not _immutable(real):
            raise Unsupported(f"the cache of {name} holds a mutable value", hint=hint)
        from ...guards.guard import Guard
        tx.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text="___g(___c, ___a, ___k, ___v)",
                                consts={"___g": _answers, "___c": self.fn,
                                        "___a": tuple(_Ref(x) if o is not None else x for o, x in zip(objects, a)),
                                        "___k": k,
                                        "___v": real},
                                label=f"{name}(...) == {real!r}"))
        return ConstantValue(real)

    def getattr(self, tx, name):
        if name == "__wrapped__":
            return _wrap(tx.ctx, self.fn.__wrapped__, _attr_src(self.source, "__wrapped__"))
        raise Unsupported(f"attribute {name!r} of an lru_cache wrapper")


def _reads_pending_writes(tx, object_sources: list, sub) -> bool:
    """Whether the frame's pending writes (not yet made: they are replayed
    after the graph) touch what a cached call reads when it is made while
    tracing: an object argument (``self`` of a cached method) or anything
    the sandboxed trace read (its guards' sources), each compared with the
    written objects' and globals' sources as paths (one a prefix of the
    other: ``self`` and ``self.config.x``).  A write reaching the same
    object through another path is not seen: a write with no source (an
    object made in the frame) cannot be read from outside."""
    effects = tx.ctx.effects
    if not len(effects):
        return False
    read = [str(s) for s in object_sources if s is not None]
    read += [str(g.source) for g in sub.guards if getattr(g, "source", None) is not None]
    written = [str(v.source) for v in effects.mutated_values()]
    from ...effects import GlobalStore
    written += [r.name for r in effects.log if isinstance(r, GlobalStore)]

    def related(a: str, b: str) -> bool:
        return a == b or any(a.startswith(b + c) or b.startswith(a + c) for c in ".[")
    return any(related(r, w) for r in read for w in written if w)


def _replayed_call(tx, lru: LruCacheValue, args, kwargs, sub, name: str, hint: str):
    """A cached call whose only effect is output: replayed natively in the
    residual code (values/stdlib/deferred_output.py)."""
    from ...effects import MethodCall
    from .deferred_output import returns_only_none
    if not returns_only_none(lru.fn.__wrapped__):
        raise Unsupported(f"the lru_cache-wrapped function {name} writes output and may return a value "
                          "(a cache hit returns an earlier call's result)", hint=hint)
    if lru.source is None:
        raise Unsupported(f"the lru_cache-wrapped function {name} made in the frame", hint=hint)
    for g in sub.guards:   # (the path it took: the same path is what the replay runs)
        tx.ctx.guards.add(g)
    tx.ctx.effects.record(MethodCall(lru, "__call__", list(args), dict(kwargs)))
    return ConstantValue(None)


def _answers(fn, args, kwargs, value) -> bool:
    """The guard of a cached call: the wrapper still returns ``value``."""
    if any(type(x) is _Ref for x in args):
        args = tuple(x.ref() if type(x) is _Ref else x for x in args)
        if any(x is None for x in args):   # (the object died: its identity guard fails too)
            return False
    r = fn(*args, **kwargs)
    return type(r) is type(value) and r == value


class _Ref:
    """An object argument of a cached call in its guard, held weakly (the
    argument's identity guard keeps it the same object)."""
    __slots__ = ("ref",)

    def __init__(self, obj):
        self.ref = weakref.ref(obj)


def _identity_object(tx, v: Value):
    """The real object behind ``v`` (an lru_cache-wrapped method's ``self``:
    a module or an object from outside the frame) when the cache keys on
    its identity (object's ``__hash__`` and ``__eq__``) and it can be held
    weakly; its identity is then guarded.  None otherwise."""
    from ..nn.modules import ModuleValue
    from ..objects.objects import ObjectValue
    if v.source is None:
        return None
    if isinstance(v, ModuleValue):
        obj = v.mod
    elif type(v) is ObjectValue and not v.is_new:
        obj = v.obj
    else:
        return None
    cls = type(obj)
    if cls.__hash__ is not object.__hash__ or cls.__eq__ is not object.__eq__:
        return None
    try:
        weakref.ref(obj)
    except TypeError:
        return None
    _guard(tx.ctx, Kind.ID_MATCH, v.source, obj)
    return obj


_IMMUTABLE = (int, float, bool, str, bytes, complex, type(None), frozenset)


def _immutable(v) -> bool:
    if type(v) is tuple:
        return all(_immutable(x) for x in v)
    return type(v) in _IMMUTABLE


def _speculate(tx, lru: LruCacheValue, args, objects, kwargs, name: str, hint: str):
    """Trace ``lru.fn.__wrapped__(*args, **kwargs)`` in a sandbox whose
    output calls are recorded, not run: (result Value, sandbox context,
    output calls).  Side effects or tensor work: Unsupported.  What it
    read is guarded only when the call is replayed (the sandbox's guards,
    copied by the caller); a constant call needs none of its own: the
    entry's guard asks the cache itself."""
    from ...diagnostics.errors import UserException
    from ...graph.dynamic import DynamicPolicy
    wrapped = lru.fn.__wrapped__
    if not isinstance(wrapped, type(_speculate)):
        raise Unsupported(f"calling the lru_cache-wrapped {name}, which is not a Python function", hint=hint)
    main = tx.ctx
    sub = main.sandbox()
    sub.policy = DynamicPolicy(mode=False)
    sub.dynamic_sources = frozenset()
    sub.deferred_output = []
    fn_v = wrap(sub, wrapped, _attr_src(lru.source, "__wrapped__"))
    # (an object argument is read afresh in the sandbox: nothing it reads
    # there reaches the trace's own Value of it)
    args = [a if o is None else wrap(sub, o, a.source) for a, o in zip(args, objects)]
    try:
        frame = sub.make_frame(fn_v, fn_v.bind(list(args), dict(kwargs), ctx=sub), tx)
        # (a number read from a module stays symbolic until used: its value
        # here, guarded in the sandbox only, as the cache's answer is guarded)
        out = concrete(frame, frame.run())
    except UserException as e:
        raise Unsupported(f"{name}() raises ({e}): not cached, the call runs natively", hint=hint) from e
    if len(sub.effects) or sub.graph.has_ops() or sub.graph.tensor_inputs() or sub.graph.attrs:
        raise Unsupported(f"the lru_cache-wrapped function {name} has side effects or does tensor work",
                          hint=hint)
    return out, sub, sub.deferred_output


def _wrap_lru(ctx, obj, source):
    _guard(ctx, Kind.ID_MATCH, source, obj)
    return LruCacheValue(obj, source)


_TYPE_HANDLERS[functools._lru_cache_wrapper] = _wrap_lru
