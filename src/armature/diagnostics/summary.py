"""The short text summary of a run (printed by the runner at exit): what was
compiled, where it broke and why, what recompiled and why, what ran as
Python, and where compile time went.  Reads diagnostics/record.py."""
from __future__ import annotations

import os

from .record import RunRecord

WIDTH = 100


def _where(filename: str | None, lineno: int | None) -> str:
    if not filename:
        return "<unknown>"
    try:
        rel = os.path.relpath(filename)
        name = rel if not rel.startswith("..") else filename
    except ValueError:
        name = filename
    return f"{name}:{lineno}"


def _cut(text: str, width: int = WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def grouped_breaks(rec: RunRecord) -> list[tuple]:
    """[(reason, hint, [(filename, lineno, source_line, count)])], most
    frequent first: the same break seen by several entries (recompiles)
    counts once per place."""
    groups: dict = {}
    for f in rec.functions.values():
        for e in f.entries:
            b = e.graph_break
            if b is None:
                continue
            g = groups.setdefault(b.reason.splitlines()[0], [b.hint, {}])
            key = (b.filename, b.lineno)
            seen = g[1].get(key)
            g[1][key] = (b.filename, b.lineno, b.source_line, (seen[3] + 1) if seen else 1)
    out = [(reason, hint, list(places.values())) for reason, (hint, places) in groups.items()]
    out.sort(key=lambda t: -sum(p[3] for p in t[2]))
    return out


def text(rec: RunRecord, report_path: str | None = None) -> str:
    fns = list(rec.functions.values())
    entries = rec.all_entries()
    graphs = [e for e in entries if e.graph_index is not None]
    ops = sum(e.op_count for e in graphs)
    breaks = grouped_breaks(rec)
    n_breaks = sum(len(places) for _, _, places in breaks)
    recompiles = [(f, r) for f in fns for r in f.recompiles]
    python = [(f, e.fallback, e.fallback_hint) for f in fns for e in f.fallbacks]
    from .hints import hint_for
    python += [(f, reason, hint_for(reason)) for f in fns for reason in f.limit_hits]
    trace = sum(e.trace_s for e in entries)
    backend = sum(e.backend_s for e in entries)
    lines = ["=" * 30 + " armature run summary " + "=" * 30,
             f"compiled functions: {len(fns)}   cache entries: {len(entries)}   graphs: {len(graphs)} "
             f"({ops} ops)   graph breaks: {n_breaks}   recompiles: {len(recompiles)}   "
             f"ran as Python: {len(python)}",
             f"compile time: {trace + backend:.2f} s (tracing {trace:.2f} s, backend {backend:.2f} s)"]
    if fns:
        lines.append("functions:")
        for f in sorted(fns, key=lambda f: -f.compile_s):
            tag = f"  [{f.label}]" if f.label else ""
            lines.append(f"  {f.name} ({_where(f.filename, f.firstlineno)}){tag}: {f.calls} calls, "
                         f"{len(f.entries)} entries, {len(f.graphs)} graphs, {f.distinct_breaks} breaks, "
                         f"{len(f.recompiles)} recompiles, {f.compile_s:.2f} s"
                         + (", RAN AS PYTHON" if f.fell_back else ""))
    if breaks:
        lines.append("graph breaks (by reason):")
        for reason, hint, places in breaks:
            lines.append(f"  - {_cut(reason)}  [{hint.category}]")
            for filename, lineno, source, count in places[:5]:
                times = f"  (x{count})" if count > 1 else ""
                lines.append(f"      at {_where(filename, lineno)}: {_cut(source or '', 70)}{times}")
            if len(places) > 5:
                lines.append(f"      ... {len(places) - 5} more places")
            lines.append(f"      hint: {_cut(str(hint), 300)}")
    if recompiles:
        lines.append("recompiles:")
        for f, r in recompiles[:20]:
            what = r.reason.splitlines()[0] if r.reason else (r.guard or "?")
            lines.append(f"  - {f.name} ({_where(f.filename, f.firstlineno)}): guard failed: {_cut(what, 240)}")
        if len(recompiles) > 20:
            lines.append(f"  ... {len(recompiles) - 20} more")
    if python:
        lines.append("ran as Python:")
        for f, reason, hint in python:
            lines.append(f"  - {f.name} ({_where(f.filename, f.firstlineno)}): {_cut(reason.splitlines()[0])}")
            lines.append(f"      hint: {_cut(str(hint), 300)}")
    if rec.notes:
        lines.append("notes:")
        lines.extend(f"  - {n}" for n in rec.notes)
    if report_path:
        lines.append(f"report: {report_path}")
    lines.append("=" * 82)
    return "\n".join(lines)
