"""Compiled callables that residual code calls: resume functions and the
compiled wrappers of callees whose trace broke."""
from __future__ import annotations

import types
from typing import Any

from .. import upcalls
from ..names import FN_ARG


class TailCall:
    """Returned by a transformed function that hands the rest of its frame
    to a resume function; the dispatcher runs it (so loops that break on
    every iteration do not nest Python frames)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn, *args):
        self.fn = fn
        self.args = args

    def run(self) -> Any:
        result = self
        while type(result) is TailCall:
            result = result.fn.dispatch(result.args, {})
        return result


_RESUME: dict[tuple, Any] = {}
_WRAPPERS: dict[tuple, Any] = {}


def resume_function_for(fn, code, offset, slots, local_names, cell_names, backend, build_resume_code, dynamic=None,
                        module_parameters=None):
    """The compiled resume function of ``code`` at ``offset``; it keeps the
    caller's dynamic-shapes policy (``dynamic``) and its module-parameters
    override (``module_parameters``: driver/native_frames.py).  The code
    generator hands in its ``build_resume_code`` (codegen/resume.py), run
    the first time this key is asked for."""
    CompiledFunction = upcalls.CompiledFunction
    key = (code, offset, slots, local_names, cell_names, backend, id(fn.__globals__), dynamic, module_parameters)
    cf = _RESUME.get(key)
    if cf is None:
        rcode = build_resume_code(code, offset, slots, local_names, cell_names)
        rfn = types.FunctionType(rcode, fn.__globals__, rcode.co_name)
        cf = CompiledFunction(rfn, backend, fullgraph=False, dynamic=dynamic)
        cf._resume = True
        cf._top = False
        cf._module_parameters = module_parameters
        # (what names it in another process: the warm start rebuilds it from
        # the original code and keys its stored entries by these:
        # driver/persist_callees.py)
        cf._persist_role = ("resume", code, offset, slots, local_names, cell_names)
        cf = _RESUME.setdefault(key, cf)   # (threads: the first one stored is the one every caller uses)
    return cf


class NestedCompiled:
    """The compiled form of a function *made inside* a traced frame (a def or
    lambda whose own trace broke): a new function object is made on every
    call of the enclosing code, so entries are kept per code object and the
    actual function object is what guards and resume functions read (its
    closure cells and defaults)."""

    def __init__(self, code, backend):
        from .cache import new_cache
        self._cache = new_cache(code)
        self._backend = backend

    def call(self, fn, *args, **kwargs):
        from . import stance
        if stance.special and stance.current.stance == "force_eager":
            return fn(*args, **kwargs)
        for entry in self._cache.entries:
            try:
                hit = entry.guard(*args, **{FN_ARG: fn}, **kwargs)
            except TypeError:
                return fn(*args, **kwargs)
            if hit:
                result = entry.run(*args, **{FN_ARG: fn}, **kwargs)
                return result.run() if type(result) is TailCall else result
        with self._cache.lock:   # (see CompiledFunction._miss: one compile at a time, entries re-read)
            entry = self._compile_miss(fn, args, kwargs)
        if entry is None:
            return fn(*args, **kwargs)
        result = entry.run(*args, **{FN_ARG: fn}, **kwargs)
        return result.run() if type(result) is TailCall else result

    def _compile_miss(self, fn, args, kwargs):
        """The entry to run this call with, or None to run ``fn`` itself."""
        from . import stance
        for entry in list(self._cache.entries):   # added by another thread while this one waited
            try:
                if entry.guard(*args, **{FN_ARG: fn}, **kwargs):
                    return entry
            except TypeError:
                return None
        from .. import config as config_mod
        if len(self._cache.entries) >= config_mod.config.recompile_limit:
            return None
        name = stance.current.stance
        if name in ("force_eager", "eager_on_recompile"):
            return None
        if name == "fail_on_recompile":
            raise stance.RecompileError(
                f"armature: {fn.__qualname__} (a function made inside compiled code) would compile under the "
                "stance 'fail_on_recompile'")
        entry = upcalls.compile_call(fn, args, kwargs, self._backend, False)
        if entry is None:
            return None
        self._cache.add(entry)
        from ..diagnostics import record
        if record.active:
            record.entry_added(fn, self._cache, entry)
        return entry


_NESTED: dict[tuple, NestedCompiled] = {}


def nested_compiled_for(code, backend) -> NestedCompiled:
    key = (code, backend)
    nc = _NESTED.get(key)
    if nc is None:
        nc = _NESTED.setdefault(key, NestedCompiled(code, backend))
    return nc


def compiled_wrapper_for(fn, backend, dynamic=None, module_parameters=None):
    """The compiled form of a callee residual code calls.  ``module_parameters``
    overrides ``config.module_parameters`` for it (and its resume functions)."""
    CompiledFunction = upcalls.CompiledFunction
    key = (fn, backend, dynamic, module_parameters)
    cf = _WRAPPERS.get(key)
    if cf is None:
        made = CompiledFunction(fn, backend, fullgraph=False, dynamic=dynamic)
        made._top = False
        made._module_parameters = module_parameters
        made._persist_role = ("wrapper",)   # (stored and found again by its function: driver/persist_callees.py)
        cf = _WRAPPERS.setdefault(key, made)
    return cf


def reset() -> None:
    """(``armature.reset()`` also resets the native frames' and the
    distributed wrappers' caches.)"""
    _RESUME.clear()
    _WRAPPERS.clear()
    _NESTED.clear()
