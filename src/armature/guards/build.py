"""Compile the guards of one cache entry into ONE Python function.

The function has the original function's signature (so CPython binds the
arguments, defaults included), followed by the hidden keyword-only
``___f`` (the called function object: renamed ``FN_ARG`` once compiled,
names.py), and is named like the original so a wrong call reports
``f() takes 2 positional arguments`` exactly as eager does.  Every object
it compares against is a closure constant; expressions are ordered cheapest
first, and the whole conjunction sits in a zero-cost ``try`` so a source
that no longer resolves simply fails the guard.
"""
from __future__ import annotations

import inspect
import types
from typing import Any, Callable

import torch

from ..names import FN_ARG, generated_prefix, guard_fn_name
from .guard import Guard, Kind


class _Pool:
    """Constants of the guard function, and common-subexpression hoisting:
    a source read by several guards is bound with ``:=`` at its first use
    (guards run left to right) and read from that local afterwards.
    Its names start with ``prefix`` (names.py), which no parameter
    of the guarded function starts with."""

    def __init__(self, prefix: str, shared: set | None = None):
        self.prefix = prefix
        self.objs: list[Any] = []
        self.names: dict[int, str] = {}
        self.shared = shared or set()
        self.bound: dict[Any, str] = {}
        #: the text of each ``(name := expr)`` render wrote, to its name
        self.bindings: dict[str, str] = {}
        self.nvars = 0
        #: names SHAPE guards bound so far (Guard.binds)
        self.bound_names: set[str] = set()

    def _var(self) -> str:
        self.nvars += 1
        return f"{self.prefix}v{self.nvars}"

    def render(self, source) -> str:
        name = self.bound.get(source)
        if name is not None:
            return name
        text = source.expr(self)
        if source in self.shared and not text.isidentifier():
            name = self.bound[source] = self._var()
            bound = f"({name} := {text})"
            self.bindings[bound] = name
            return bound
        return text

    def hoist(self, text: str) -> tuple[str, str]:
        """(first use, later uses) of an expression used several times in one guard."""
        if text.isidentifier():
            return text, text
        if text in self.bindings:   # (the whole text binds a name; not ``(v := parent)['key']``)
            return text, self.bindings[text]
        name = self._var()
        return f"({name} := {text})", name

    def const(self, obj: Any) -> str:
        key = id(obj)
        name = self.names.get(key)
        if name is None:
            name = f"{self.prefix}c{len(self.objs)}"
            self.names[key] = name
            self.objs.append(obj)
        return name


def _shared_sources(guards: list[Guard]) -> set:
    """Sources (including prefixes) that more than one guard reads."""
    counts: dict[Any, int] = {}
    for g in guards:
        srcs = [g.source] if g.source is not None else []
        if g.kind is Kind.SAME_OBJECT:
            srcs.append(g.expected)
        if g.kind is Kind.DISTINCT:
            srcs.extend(g.expected)
        for s in srcs:
            while s is not None:
                counts[s] = counts.get(s, 0) + 1
                s = s.base
    return {s for s, n in counts.items() if n > 1}


def _without_implied_distinct(guards: list[Guard]) -> list[Guard]:
    """Drop a DISTINCT guard whose sources another DISTINCT guard already
    covers (several mechanisms ask for distinct objects: mutated inputs,
    ``is``, ``id()``, dict keys; their groups overlap)."""
    groups = [(g, set(g.expected)) for g in guards if g.kind is Kind.DISTINCT]
    if len(groups) < 2:
        return guards
    dropped = set()
    for i, (g, srcs) in enumerate(groups):
        for j, (other, other_srcs) in enumerate(groups):
            if i != j and j not in dropped and srcs <= other_srcs and (srcs < other_srcs or j < i):
                dropped.add(i)
                break
    drop_ids = {id(groups[i][0]) for i in dropped}
    return [g for g in guards if id(g) not in drop_ids]


def signature_text(code: types.CodeType, default_names: list[str], kwdefault_names: dict[str, str],
                   prefix: str) -> str:
    """Parameter list text for a function with ``code``'s signature, plus the
    hidden keyword-only ``___f`` (keyword-only so that a call with too many
    positional arguments fails with eager's exact message)."""
    # (a comprehension's ".0" is not an identifier: it gets a stand-in name)
    names = tuple(n if n.isidentifier() else f"{prefix}arg{i}" for i, n in enumerate(code.co_varnames))
    npos, nposonly, nkw = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    params = []
    first_default = npos - len(default_names)
    for i in range(npos):
        p = names[i]
        if i >= first_default:
            p += f"={default_names[i - first_default]}"
        params.append(p)
        if i == nposonly - 1:
            params.append("/")
    idx = npos + nkw
    if code.co_flags & inspect.CO_VARARGS:
        params.append("*" + names[idx])
        idx += 1
    else:
        params.append("*")
    for i in range(npos, npos + nkw):
        p = names[i]
        if p in kwdefault_names:
            p += f"={kwdefault_names[p]}"
        params.append(p)
    params.append(guard_fn_name(prefix))
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append("**" + names[idx])
    return ", ".join(params)


def _reads_through_torch_function(g: Guard) -> bool:
    if g.kind is Kind.TENSOR_MATCH:
        from ..tensor_classes import has_torch_function
        return has_torch_function(g.expected.cls)
    return bool(getattr(g, "modes_active", False))


def _takes_fn_arg(inner: types.FunctionType, prefix: str) -> types.FunctionType:
    """``inner`` (compiled from source) with its hidden parameter renamed
    from the identifier ``___f`` to FN_ARG, which no user keyword can be."""
    code = inner.__code__
    spelled = guard_fn_name(prefix)

    def rename(names):
        return tuple(FN_ARG if n == spelled else n for n in names)
    inner.__code__ = code.replace(co_varnames=rename(code.co_varnames), co_cellvars=rename(code.co_cellvars))
    return inner


def build_guard_function(fn: types.FunctionType, guards: list[Guard]) -> Callable[..., bool]:
    code = fn.__code__
    prefix = generated_prefix(code)
    pool = _Pool(prefix)
    default_names = [pool.const(d) for d in (fn.__defaults__ or ())]
    kwdefault_names = {k: pool.const(v) for k, v in (fn.__kwdefaults__ or {}).items()}
    sig = signature_text(code, default_names, kwdefault_names, prefix)
    fn_arg = guard_fn_name(prefix)
    ordered = _without_implied_distinct(sorted(guards, key=lambda g: g.kind))
    pool.shared = _shared_sources(ordered)
    exprs = [g.expr(pool) for g in ordered]
    # The defaults were frozen into this function's signature: they must
    # still be the called function's defaults.
    if fn.__kwdefaults__:
        exprs.insert(0, f"{fn_arg}.__kwdefaults__ == {pool.const(fn.__kwdefaults__)}")
    if fn.__defaults__:
        exprs.insert(0, f"{fn_arg}.__defaults__ is {pool.const(fn.__defaults__)}")
    body = " and ".join(f"({e})" for e in exprs) if exprs else "True"
    if any(_reads_through_torch_function(g) for g in ordered):
        # a tensor subclass's metadata, or any tensor's under an active
        # TorchFunctionMode: read with torch function handling off, so that
        # checking guards never runs the user's __torch_function__
        off = pool.const(torch._C.DisableTorchFunction)
        src = (
            f"def ___make({', '.join(pool.names.values()) or ''}):\n"
            f"    def ___guard({sig}):\n"
            f"        try:\n"
            f"            with {off}():\n"
            f"                return {body}\n"
            f"        except Exception:\n"
            f"            return False\n"
            f"    return ___guard\n"
        )
    else:
        src = (
            f"def ___make({', '.join(pool.names.values()) or ''}):\n"
            f"    def ___guard({sig}):\n"
            f"        try:\n"
            f"            return {body}\n"
            f"        except Exception:\n"
            f"            return False\n"
            f"    return ___guard\n"
        )
    ns: dict[str, Any] = {}
    exec(compile(src, f"<armature guards for {code.co_qualname}>", "exec"), ns)
    guard_fn = _takes_fn_arg(ns["___make"](*pool.objs), prefix)
    # Named like the original, so a bad call fails with eager's exact message.
    guard_fn.__code__ = guard_fn.__code__.replace(co_name=code.co_name, co_qualname=code.co_qualname)
    guard_fn.__name__, guard_fn.__qualname__ = fn.__name__, fn.__qualname__
    guard_fn.__armature_source__ = src
    return guard_fn


def explain_failure(fn: types.FunctionType, guards: list[Guard], args, kwargs) -> str | None:
    """Evaluate guards one by one (slow path, only on a cache miss) and say
    which failed, with the value seen now."""
    g = failed_guard(fn, guards, args, kwargs)
    if g is None:
        return None
    if g == "unbound":
        return "the call's arguments no longer bind the same way"
    if g.kind is Kind.SHAPE:
        return f"{g.describe()} failed"
    if g.kind is Kind.TENSOR_MATCH:
        value = read_source(fn, g.source, args, kwargs)
        mismatch = _tensor_mismatch(g, value)
        if mismatch is not None:
            return mismatch
    now = _current_value(fn, g, args, kwargs)
    return f"{g.describe()}  (now: {now})"


def failed_guard(fn: types.FunctionType, guards: list[Guard], args, kwargs):
    """The first guard (cheapest first) that fails for this call."""
    for g in sorted(guards, key=lambda g: g.kind):
        # one small function per guard, built once (a miss may ask again)
        cached = getattr(g, "_single", None)
        if cached is None or cached[0] is not fn:
            cached = g._single = (fn, build_guard_function(fn, [g]))
        one = cached[1]
        try:
            ok = one(*args, **{FN_ARG: fn}, **kwargs)
        except TypeError:
            return "unbound"
        if not ok:
            return g
    return None


class _Unreadable:
    def __init__(self, e: Exception):
        self.e = e

    def __repr__(self):
        return f"<{type(self.e).__name__}: {self.e}>"


def read_source(fn: types.FunctionType, source, args, kwargs):
    """The value ``source`` denotes for this call (slow path: a miss), or an
    ``_Unreadable`` when it no longer resolves."""
    prefix = generated_prefix(fn.__code__)
    pool = _Pool(prefix)
    expr = source.expr(pool)
    sig = signature_text(fn.__code__, [pool.const(d) for d in (fn.__defaults__ or ())],
                         {k: pool.const(v) for k, v in (fn.__kwdefaults__ or {}).items()}, prefix)
    src = (f"def ___make({', '.join(pool.names.values())}):\n"
           f"    def ___read({sig}):\n        return {expr}\n    return ___read\n")
    ns: dict[str, Any] = {}
    try:
        exec(src, ns)
        return _takes_fn_arg(ns["___make"](*pool.objs), prefix)(*args, **{FN_ARG: fn}, **kwargs)
    except Exception as e:  # the source itself no longer resolves
        return _Unreadable(e)


def _current_value(fn, g: Guard, args, kwargs) -> str:
    if g.source is None:
        return "changed"
    value = read_source(fn, g.source, args, kwargs)
    if isinstance(value, _Unreadable):
        return repr(value)
    if g.kind is Kind.TENSOR_MATCH:
        described = _tensor_mismatch(g, value)
        if described is not None:
            return described
    if g.kind is Kind.TENSOR_MATCH:
        import torch
        if isinstance(value, torch.Tensor):
            return (f"Tensor {type(value).__name__} {value.dtype} {value.device} size={list(value.size())} "
                    f"stride={list(value.stride())} requires_grad={value.requires_grad}")
    if g.kind is Kind.LEN_MATCH:
        try:
            return f"len {len(value)}"
        except TypeError:
            pass
    if g.kind is Kind.TYPE_MATCH:
        return type(value).__qualname__
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."


def _tensor_mismatch(g: Guard, value) -> str | None:
    """The first tensor property that no longer matches, in user terms
    (``x.size()[0] == 8 failed: got 9``)."""
    import torch
    meta = g.expected
    if not isinstance(value, torch.Tensor):
        return None
    if type(value) is not meta.cls or value.dtype != meta.dtype or value.device != meta.device \
            or value.requires_grad != meta.requires_grad:
        return None
    if value.dim() != len(meta.size):
        return f"{g.source}.dim() == {len(meta.size)} failed: got {value.dim()}"
    for d, n in enumerate(meta.size):
        if n is not None and value.size(d) != n:
            return f"{g.source}.size()[{d}] == {n} failed: got {value.size(d)}"
    for d, n in enumerate(meta.stride):
        if n is not None and meta.full and value.stride(d) != n:
            return f"{g.source}.stride()[{d}] == {n} failed: got {value.stride(d)}"
    return None
