"""The run-wide record of what armature did: every compile (graph, break,
fallback), every recompile with the guard that failed, every recompile limit
hit, grouped by the user function they belong to.

The runner's summary (diagnostics/summary.py) and the HTML report
(diagnostics/report.py) read it.  It is fed by three hooks on the miss path
(api.CompiledFunction._miss and wrappers.NestedCompiled.call), each guarded
by the module flag :data:`active`, so a run that records nothing pays
nothing; a cached call costs one counter increment (``CodeCache.calls``,
in ``CompiledFunction.__call__``), recording or not.  Everything expensive
(source text, guard descriptions, graph code) is read when a report is
made, from the entries the record keeps alive.
"""
from __future__ import annotations

import re
import time
import types
from dataclasses import dataclass, field
from typing import Any

#: read by the hooks before calling into this module
active = False

_RECORD: "RunRecord | None" = None


@dataclass
class BreakInfo:
    reason: str
    hint: Any                       # a diagnostics.hints.Hint
    filename: str | None
    lineno: int | None
    source_line: str | None
    #: (filename, lineno, function) from the innermost frame out
    stack: list = field(default_factory=list)


@dataclass
class EntryRecord:
    """One cache entry compiled during the run."""

    entry: Any                      # the CacheEntry (kept alive for the report)
    code: types.CodeType            # the code compiled (a resume function's own code for resumes)
    resume: bool
    start_s: float                  # seconds since the record started
    trace_s: float
    backend_s: float
    op_count: int
    graph_break: BreakInfo | None
    fallback: str | None
    fallback_hint: Any
    #: {(filename, lineno): number of ops} of the graph's ops (every frame level)
    lines: dict = field(default_factory=dict)
    #: index of its graph in the run (None: no graph)
    graph_index: int | None = None
    #: the file it was loaded from (the warm start: driver/persistent_cache.py), None: compiled in this run
    loaded_from: str | None = None


@dataclass
class RecompileRecord:
    at_s: float
    reason: str
    guard: str | None               # the guard that failed, as the logs print it
    expected: str | None
    now: str | None


@dataclass
class FunctionRecord:
    """A user function (its original code object), with every entry compiled
    for it: the function's own, its resume functions', and those of compiled
    wrappers of it (called from residual code)."""

    code: types.CodeType
    name: str
    filename: str
    firstlineno: int
    label: str = ""                 # e.g. "compiled module TinyGPT"
    caches: list = field(default_factory=list)
    entries: list[EntryRecord] = field(default_factory=list)
    recompiles: list[RecompileRecord] = field(default_factory=list)
    limit_hits: list[str] = field(default_factory=list)
    #: what the persistent cache did for it (driver/cache_events.CacheEvent)
    cache_events: list = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(c.calls for c in self.caches)

    @property
    def graphs(self) -> list[EntryRecord]:
        return [e for e in self.entries if e.graph_index is not None]

    @property
    def breaks(self) -> list[EntryRecord]:
        return [e for e in self.entries if e.graph_break is not None]

    @property
    def distinct_breaks(self) -> int:
        """Break places (reason and line): a break met again after a
        recompile counts once."""
        return len({(e.graph_break.reason, e.graph_break.filename, e.graph_break.lineno) for e in self.breaks})

    @property
    def fallbacks(self) -> list[EntryRecord]:
        return [e for e in self.entries if e.fallback is not None]

    @property
    def compile_s(self) -> float:
        return sum(e.trace_s + e.backend_s for e in self.entries)

    @property
    def fell_back(self) -> bool:
        return bool(self.fallbacks or self.limit_hits)


@dataclass
class RunRecord:
    started: float = field(default_factory=time.perf_counter)
    functions: dict = field(default_factory=dict)   # original code -> FunctionRecord
    graph_count: int = 0
    #: torch.compile arguments armature ignored or mapped (the runner's notes)
    notes: list[str] = field(default_factory=list)

    def all_entries(self) -> list[EntryRecord]:
        out = [e for f in self.functions.values() for e in f.entries]
        out.sort(key=lambda e: e.start_s)
        return out


def start() -> RunRecord:
    """Start recording (idempotent): the run's record from now on."""
    global _RECORD, active
    if _RECORD is None:
        _RECORD = RunRecord()
    active = True
    return _RECORD


def stop() -> RunRecord | None:
    global active
    active = False
    return _RECORD


def current() -> RunRecord | None:
    return _RECORD


def clear() -> None:
    global _RECORD, active
    _RECORD = None
    active = False


def note(text: str) -> None:
    """A line for the summary and report (once per distinct text)."""
    rec = _RECORD
    if rec is not None and text not in rec.notes:
        rec.notes.append(text)


# --- hooks (called only while ``active``) -----------------------------------

def _function_record(fn, module, cache) -> FunctionRecord:
    from ..names import origin_of
    rec = _RECORD
    code, _ = origin_of(cache.code)
    label = ""
    if module is not None:            # a compiled module: armature's _module_call on it
        import inspect
        forward = getattr(type(module), "forward", None)
        try:   # through decorators (transformers wraps forward) to the code the user wrote
            forward = inspect.unwrap(forward) if forward is not None else None
        except ValueError:
            pass
        if isinstance(forward, types.FunctionType):
            code = forward.__code__
        label = f"compiled module {type(module).__name__}"
    f = rec.functions.get(code)
    if f is None:
        name = code.co_qualname if hasattr(code, "co_qualname") else code.co_name
        f = rec.functions[code] = FunctionRecord(code, name, code.co_filename, code.co_firstlineno, label)
    elif label and not f.label:
        f.label = label
    if not any(c is cache for c in f.caches):
        f.caches.append(cache)
    return f


def entry_added(fn, cache, entry, module=None) -> None:
    """A new cache entry of ``cache`` (compiled for ``fn``)."""
    if _RECORD is None:
        return
    from .. import upcalls
    from ..names import ORIGIN, origin_of
    from .hints import hint_for
    loaded_from = getattr(entry, "loaded_from", None)
    if module is None and loaded_from is None and entry.graph_module is None and entry.fallback_reason is None \
            and origin_of(cache.code)[0] is upcalls.module_call_code:
        return   # the tail of armature's own call of a compiled module: nothing of the user's
    f = _function_record(fn, module, cache)
    now = time.perf_counter() - _RECORD.started
    brk = None
    gb = entry.graph_break
    if gb is not None and not gb.internal:
        loc = gb.location
        brk = BreakInfo(gb.reason, gb.hint,
                        loc.filename if loc else None, loc.lineno if loc else None,
                        loc.source_line if loc else None,
                        [(l.filename, l.lineno, l.func_name) for l in gb.user_stack])
    e = EntryRecord(entry, cache.code, cache.code in ORIGIN, max(0.0, now - entry.compile_time_s),
                    entry.trace_time_s, entry.backend_time_s, entry.op_count, brk, entry.fallback_reason,
                    hint_for(entry.fallback_reason) if entry.fallback_reason else None)
    e.loaded_from = loaded_from
    gm = entry.graph_module if loaded_from is None else None   # (a loaded one's is rebuilt when a report reads it)
    if gm is not None or (loaded_from is not None and entry.compiled_graph is not None):
        e.graph_index = _RECORD.graph_count
        _RECORD.graph_count += 1
    if gm is not None:
        lines: dict = {}
        for node in gm.graph.nodes:
            for where in node.meta.get("armature_stack", ()):
                lines[where] = lines.get(where, 0) + 1
        e.lines = lines
    f.entries.append(e)


def recompiled(fn, cache, reason: str, args, kwargs, module=None) -> None:
    """A cache miss of a code that already has entries: which guard failed,
    with the value it was compiled for and the value now."""
    if _RECORD is None or not cache.entries:
        return
    from ..guards.build import _current_value, failed_guard
    from ..guards.guard import Kind
    f = _function_record(fn, module, cache)
    guard = expected = now = None
    try:
        g = failed_guard(fn, cache.entries[0].guards, args, kwargs)
        if g is not None and g != "unbound":
            guard = g.describe()
            if g.kind not in (Kind.SHAPE, Kind.TENSOR_MATCH):
                expected = _short(g.expected)
                now = _current_value(fn, g, args, kwargs)
    except Exception:   # a report must never break the run
        pass
    if expected is None:   # tensor and shape guards: "x.size()[0] == 12 failed: got 4"
        m = re.search(r"== (\S+) failed: got (.+)$", reason.splitlines()[0] if reason else "")
        if m:
            expected, now = m.group(1), m.group(2)
    f.recompiles.append(RecompileRecord(time.perf_counter() - _RECORD.started, reason, guard, expected, now))


def cache_event(cf, event) -> None:
    """An event of the persistent cache (driver/cache_events.py) for the
    compiled function ``cf``."""
    cache = getattr(cf, "_cache", None)
    if _RECORD is None or cache is None:
        return
    f = _function_record(cf._fn, cf._module_of_call(), cache)
    f.cache_events.append(event)


def limit_hit(fn, cache, reason: str, module=None) -> None:
    if _RECORD is None:
        return
    f = _function_record(fn, module, cache)
    f.limit_hits.append(reason)


def _short(obj) -> str:
    text = repr(obj)
    return text if len(text) <= 120 else text[:117] + "..."
