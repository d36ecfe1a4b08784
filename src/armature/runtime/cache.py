"""Cache entries and the per-code caches that hold them (shared by every
callable compiled for one code with one set of settings:
driver/shared_code.py)."""
from __future__ import annotations

import threading
import types
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ..guards.guard import Guard


@dataclass(eq=False)
class CacheEntry:
    guard: Callable[..., bool]            # guard(*args, **{FN_ARG: fn}, **kwargs) -> bool
    run: Callable[..., Any]               # run(*args, **{FN_ARG: fn}, **kwargs) -> result
    guards: list[Guard]
    graph_module: torch.fx.GraphModule | None = None
    compiled_graph: Callable | None = None
    transformed_code: types.CodeType | None = None
    fallback_reason: str | None = None     # set when the entry runs the original code
    trace_time_s: float = 0.0
    backend_time_s: float = 0.0
    op_count: int = 0
    graph_break: Any = None                # a GraphBreak when the frame was split
    side_effects: list = field(default_factory=list)
    #: branches assumed not to raise, checked after the graph (trace/speculation.py)
    assumptions: list = field(default_factory=list)
    #: what the persistent cache needs to store this entry (a
    #: persist_codec.Storable), None when it cannot be stored
    persist: Any = None
    #: the cache file a warm start loaded this entry from
    loaded_from: str | None = None

    @property
    def compile_time_s(self) -> float:
        return self.trace_time_s + self.backend_time_s

    @property
    def is_fallback(self) -> bool:
        return self.fallback_reason is not None

    @property
    def specializations(self) -> list:
        """The graph's specializations (``mark_dynamic(..., specialize_on=)``),
        compiled or not yet: each a driver.specialize.Specialization.  They
        are part of this entry, not entries of their own."""
        if getattr(type(self.compiled_graph), "is_specializing_graph", False):   # (driver/specialize.py)
            return list(self.compiled_graph.specializations)
        return []


@dataclass(eq=False)
class CodeCache:
    """Entries for one code object (as compiled by one CompiledFunction).
    Newest first, as a recompile usually means the new case is the common one."""

    code: types.CodeType
    entries: list[CacheEntry] = field(default_factory=list)
    #: what messages call the code (a shared cache: driver/shared_code.py);
    #: None: the compiled function's own name
    label: str | None = None
    recompiles: int = 0
    #: calls made through CompiledFunction.__call__ (the run report's "calls")
    calls: int = 0
    limit_hit: bool = False
    #: the persistent cache was consulted for this code (driver/persistent_cache.py)
    disk_tried: bool = False
    recompile_reasons: list[str] = field(default_factory=list)
    #: sources of Python numbers that changed between calls: later traces
    #: keep them symbolic (computed in residual code) instead of specialising
    dynamic_sources: set = field(default_factory=set)
    #: tensor dims whose size changed between calls: {Source: {dim, ...}}
    #: (automatic dynamic: they are symbolic in later traces)
    auto_dims: dict = field(default_factory=dict)
    #: eager_then_compile: the sizes and numbers of the first call made under
    #: the stance (runtime/stance.record_example), compared with later calls
    first_example: dict | None = None
    #: skip_guard_eval_unsafe: [(entry, guard function of only the guards
    #: that tell the entries apart)], rebuilt when entries change
    _distinguishing: list | None = field(default=None, repr=False)
    #: held while a miss decides what to do and compiles (not while an
    #: entry or the original code runs): threads that miss at once compile
    #: one after the other, each looking at the entries again first, so
    #: they make the entries and dynamic-shape decisions one thread would
    #: (reentrant: a compile that calls back into this code's dispatch)
    lock: Any = field(default_factory=threading.RLock, repr=False)

    def policy(self, mode: bool | None):
        """What the next trace of this code may treat as dynamic."""
        from ..graph.dynamic import DynamicPolicy
        return DynamicPolicy(mode=mode, auto_dims=self.auto_dims,
                             auto_ints={s for s in self.dynamic_sources if _is_int_source(s)})

    def add(self, entry: CacheEntry) -> None:
        self.entries.insert(0, entry)
        self._distinguishing = None

    def distinguishing_guards(self, fn) -> list:
        """For ``set_stance(skip_guard_eval_unsafe=True)``: each entry (newest
        first) with a guard function of its guards that not every entry
        shares.  A guard every entry has cannot tell them apart, so it is
        not evaluated (that is the risk the flag takes)."""
        d = self._distinguishing
        if d is None or d[0] is not fn:
            from ..guards.build import build_guard_function
            keys = [{_guard_key(g) for g in e.guards} for e in self.entries]
            common = set.intersection(*keys) if keys else set()
            d = (fn, [(e, build_guard_function(fn, [g for g in e.guards if _guard_key(g) not in common]))
                      for e in self.entries])
            self._distinguishing = d
        return d[1]

    def clear(self) -> None:
        self.entries.clear()
        self._distinguishing = None
        self.first_example = None
        self.recompiles = 0
        self.limit_hit = False
        self.disk_tried = False
        self.recompile_reasons.clear()
        self.dynamic_sources.clear()
        self.auto_dims.clear()


def _guard_key(g):
    key = g.key()
    try:
        hash(key)
    except TypeError:   # an unhashable expectation: this guard is its own
        return ("unhashable", id(g))
    return key


_ALL: "weakref.WeakSet[CodeCache]" = weakref.WeakSet()


def new_cache(code: types.CodeType) -> CodeCache:
    c = CodeCache(code)
    _ALL.add(c)
    return c


def reset_all() -> None:
    for c in list(_ALL):
        c.clear()


def _is_int_source(source) -> bool:
    from ..guards.sources import LengthSource
    return not isinstance(source, LengthSource)
