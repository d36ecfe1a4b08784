"""``armature.explain(fn)(*args, **kwargs)``: run once and report what was
captured, where the frame was split and why, and the guards."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

_recorders: list[list] = []


def record(entry) -> None:
    """Called by compile_frame for every new cache entry."""
    for r in _recorders:
        r.append(entry)


@contextlib.contextmanager
def recording():
    entries: list = []
    _recorders.append(entries)
    try:
        yield entries
    finally:
        _recorders.remove(entries)


@dataclass
class BreakReason:
    reason: str
    filename: str | None
    lineno: int | None
    source_line: str | None
    user_stack: list = field(default_factory=list)
    #: what to do about it (diagnostics/hints.py: the same text as the logs and the run report)
    hint: Any = None

    def __str__(self):
        where = f"{self.filename}:{self.lineno}" if self.filename else "<unknown>"
        line = f"\n      {self.source_line}" if self.source_line else ""
        hint = f"\n    hint: {self.hint}" if self.hint is not None else ""
        return f"{self.reason.splitlines()[0]}\n    at {where}{line}{hint}"


@dataclass
class ExplainOutput:
    graphs: list
    graph_count: int
    graph_break_count: int
    break_reasons: list[BreakReason]
    ops_per_graph: list[int]
    guards: list[list]
    fallbacks: list[str]
    compile_time_s: float
    out: Any = None
    #: per graph (as ``graphs``): its specializations (``mark_dynamic(...,
    #: specialize_on=)``), compiled lazily, not counted as graphs
    specializations: list = field(default_factory=list)
    #: per graph (as ``graphs``): the file its entry was loaded from, or None
    graph_loaded_from: list = field(default_factory=list)
    #: data-dependent branches assumed to avoid a side that only raises,
    #: checked after their graph (trace/speculation.py)
    assumptions: list[str] = field(default_factory=list)
    #: per entry (as ``guards``): the file it was loaded from (the warm
    #: start: driver/persistent_cache.py), None when compiled in this run
    loaded_from: list = field(default_factory=list)
    #: what the persistent cache did during the run (driver/cache_events.py):
    #: entries loaded (and their files), stored entries not used and why, entries not stored and why
    cache: list = field(default_factory=list)

    @property
    def cache_not_used(self) -> list:
        """The events that say why stored entries were not used."""
        from .cache_events import NOT_USED
        return [ev for ev in self.cache if ev.kind in NOT_USED]

    def __str__(self):
        lines = [f"Graph count: {self.graph_count}",
                 f"Graph break count: {self.graph_break_count}",
                 f"Op count: {sum(self.ops_per_graph)}  (per graph: {self.ops_per_graph})",
                 f"Compile time: {self.compile_time_s:.3f} s"]
        if self.break_reasons:
            lines.append("Break reasons:")
            for i, r in enumerate(self.break_reasons, 1):
                lines.append(f"  {i}. {r}")
        if self.assumptions:
            lines.append("Assumed branches (a side that only raises; checked after the graph, "
                         "the call reruns as Python if one goes the other way):")
            lines.extend(f"  - {a}" for a in self.assumptions)
        if self.fallbacks:
            lines.append("Ran as plain Python:")
            from ..diagnostics.hints import hint_for
            for f in self.fallbacks:
                lines.append(f"  - {f.splitlines()[0]}")
                lines.append(f"    hint: {hint_for(f)}")
        if self.cache:
            lines.append("Persistent cache:")
            lines.extend(f"  - {ev}" for ev in self.cache)
        for i, gm in enumerate(self.graphs):
            loaded = self.graph_loaded_from[i] if i < len(self.graph_loaded_from) else None
            lines.append(f"Graph {i}:" + (f"  (loaded from disk: {loaded})" if loaded else ""))
            lines.extend("    " + line for line in gm.code.strip().splitlines())
            specs = self.specializations[i] if i < len(self.specializations) else []
            if specs:
                lines.append(f"  Specializations of graph {i} (one trace, compiled on first matching call):")
                lines.extend(f"    - {s}" for s in specs)
        n = sum(len(g) for g in self.guards)
        lines.append(f"Guards ({n} in {len(self.guards)} entries):")
        for i, gs in enumerate(self.guards):
            if i < len(self.loaded_from) and self.loaded_from[i]:
                lines.append(f"  [{i}] (entry loaded from disk: {self.loaded_from[i]})")
            for g in gs[:40]:
                lines.append(f"  [{i}] {g.describe()}")
            if len(gs) > 40:
                lines.append(f"  [{i}] ... {len(gs) - 40} more")
        return "\n".join(lines)


def explain(fn, backend: str = "eager"):
    """``explain(fn)(*args, **kwargs)`` compiles ``fn`` afresh, runs it once
    and returns an ExplainOutput."""
    from .. import upcalls
    CompiledFunction, CompiledModule, compile_ = upcalls.CompiledFunction, upcalls.CompiledModule, upcalls.compile

    def run(*args, **kwargs) -> ExplainOutput:
        target = fn
        if isinstance(target, CompiledFunction):
            target = target._fn if not target._has_self else target._fn.__get__(target._self)
        if isinstance(target, CompiledModule):
            target = target._orig_mod
        # a backend object of its own: resume functions and compiled callees
        # are cached per backend, so this run compiles (and reports) them all
        from ..backends import lookup_backend
        base = lookup_backend(backend)

        def fresh_backend(gm, example_inputs):
            return base(gm, example_inputs)

        from . import cache_events
        # (with the persistent cache on, this compile looks up and stores
        # entries as the named backend's: what it reports is what a compile does)
        setattr(fresh_backend, cache_events.PERSIST_AS, base)
        compiled = compile_(target, backend=fresh_backend)
        with recording() as entries, cache_events.recording() as events:
            out = compiled(*args, **kwargs)
        graphs, ops, guards, reasons, fallbacks, specs, assumptions = [], [], [], [], [], [], []
        loaded_from, graph_loaded_from = [], []
        total = 0.0
        for e in entries:
            total += e.compile_time_s
            guards.append(list(e.guards))
            loaded_from.append(e.loaded_from)
            if e.graph_module is not None:
                graphs.append(e.graph_module)
                graph_loaded_from.append(e.loaded_from)
                ops.append(e.op_count)
                specs.append(e.specializations)
            if e.graph_break is not None and not e.graph_break.internal:
                b = e.graph_break
                loc = b.location
                reasons.append(BreakReason(b.reason, loc.filename if loc else None, loc.lineno if loc else None,
                                           loc.source_line if loc else None, b.user_stack, b.hint))
            if e.fallback_reason:
                fallbacks.append(e.fallback_reason)
            assumptions.extend(e.assumptions)
        return ExplainOutput(graphs, len(graphs), len(reasons), reasons, ops, guards, fallbacks, total, out,
                             specializations=specs, assumptions=assumptions, loaded_from=loaded_from,
                             cache=list(events), graph_loaded_from=graph_loaded_from)

    return run
