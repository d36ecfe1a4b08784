"""The one-file HTML report of a run: ``ARMATURE_REPORT=path.html``,
``armature.report(path)`` or ``python -m armature run --report path``.

The page is built from the run record (diagnostics/record.py) with jinja2
(a dependency of torch itself) and the template in report_page.py: one
self-contained file (inline CSS, an inline SVG timeline, a few lines of
optional JavaScript; nothing fetched), readable with scripts off.  Per
compiled function it shows the source with the lines each graph captured
shaded by graph, the break points with the reason and the hint
(diagnostics/hints.py), lines that ran as Python, and per cache entry its
guards, compile time and FX code; per recompile the guard that failed with
the value compiled for and the value seen.  Long lists are cut (with a
count of what was left out) so a real model's page stays small.
"""
from __future__ import annotations

import atexit
import datetime
import inspect
import linecache
import os
import platform
import sys

from . import record as record_mod
from .record import FunctionRecord, RunRecord
from .summary import grouped_breaks

#: caps that keep the page small for big models
MAX_GUARDS = 150
MAX_FX_LINES = 600
MAX_SOURCE_LINES = 400
#: graph colours (the n-th graph of a function gets the n % len-th)
PALETTE = ("#cfe8ff", "#d7f5d0", "#ffe3c2", "#ecd9ff", "#fff3a8", "#c9f1ee", "#ffd6e0", "#e3e3e3")


def _source(code) -> tuple[int, list[str]]:
    try:
        lines, start = inspect.getsourcelines(code)
        start = start or 1
    except (OSError, TypeError):
        lines = []
        last = max((ln for _, _, ln in code.co_lines() if ln), default=code.co_firstlineno)
        start = code.co_firstlineno
        lines = [linecache.getline(code.co_filename, n) for n in range(start, last + 1)]
    return start, [ln.rstrip("\n") for ln in lines][:MAX_SOURCE_LINES]


def _guards(entry) -> tuple[list[str], int]:
    gs = list(entry.guards)
    out = []
    for g in gs[:MAX_GUARDS]:
        try:
            out.append(g.describe())
        except Exception as e:   # a guard that cannot print itself still counts
            out.append(f"<{g.kind.name}: {type(e).__name__}>")
    return out, max(0, len(gs) - MAX_GUARDS)


def _fx(gm) -> tuple[str, int]:
    lines = gm.code.strip("\n").splitlines()
    return "\n".join(lines[:MAX_FX_LINES]), max(0, len(lines) - MAX_FX_LINES)


def _function_view(index: int, f: FunctionRecord) -> dict:
    start, src = _source(f.code)
    graphs = f.graphs
    colour = {e.graph_index: PALETTE[i % len(PALETTE)] for i, e in enumerate(graphs)}
    local = {e.graph_index: i for i, e in enumerate(graphs)}
    per_line: dict[int, list] = {}
    elsewhere: dict[str, list] = {}     # other files: {file: [lines, ops]} (inlined callees)
    for e in graphs:
        for (filename, lineno), n in e.lines.items():
            if filename == f.filename:
                per_line.setdefault(lineno, []).append(e.graph_index)
            else:
                item = elsewhere.setdefault(filename, [set(), 0])
                item[0].add(lineno)
                item[1] += n
    breaks: dict[int, list] = {}
    for e in f.breaks:
        b = e.graph_break
        for filename, lineno, _ in b.stack or [(b.filename, b.lineno, None)]:
            if filename == f.filename and lineno is not None:
                items = breaks.setdefault(lineno, [])
                if all(x["reason"] != b.reason for x in items):
                    items.append({"reason": b.reason.splitlines()[0], "hint": str(b.hint),
                                  "category": b.hint.category})
                break
    all_python = f.fell_back and not graphs
    rows = []
    for i, text in enumerate(src):
        lineno = start + i
        gs = sorted(set(per_line.get(lineno, ())))
        rows.append({
            "lineno": lineno, "text": text,
            "graphs": [local[g] for g in gs],
            "colour": colour[gs[0]] if gs else None,
            "breaks": breaks.get(lineno, []),
            "python": lineno in breaks or (all_python and text.strip() != ""),
        })
    entries = []
    for k, e in enumerate(f.entries):
        guards, more = _guards(e.entry)
        fx, fx_more = _fx(e.entry.graph_module) if e.entry.graph_module is not None else ("", 0)
        entries.append({
            "k": k, "resume": e.resume, "graph": local.get(e.graph_index),
            "colour": colour.get(e.graph_index), "ops": e.op_count,
            "start_ms": e.start_s * 1e3, "trace_ms": e.trace_s * 1e3, "backend_ms": e.backend_s * 1e3,
            "break": e.graph_break, "fallback": e.fallback.splitlines()[0] if e.fallback else None,
            "fallback_hint": str(e.fallback_hint) if e.fallback_hint else None,
            "guards": guards, "guards_more": more, "n_guards": len(e.entry.guards),
            "fx": fx, "fx_more": fx_more,
            "specializations": [str(s) for s in e.entry.specializations],
            "loaded_from": e.loaded_from,
        })
    from .hints import hint_for
    return {
        "id": f"fn{index}", "name": f.name, "label": f.label, "where": f"{_rel(f.filename)}:{f.firstlineno}",
        "calls": f.calls, "n_entries": len(f.entries), "n_graphs": len(graphs), "n_breaks": f.distinct_breaks,
        "n_recompiles": len(f.recompiles), "compile_ms": f.compile_s * 1e3, "fell_back": f.fell_back,
        "rows": rows, "truncated": len(src) >= MAX_SOURCE_LINES, "entries": entries,
        "elsewhere": [{"file": _rel(fn), "lines": len(v[0]), "ops": v[1]}
                      for fn, v in sorted(elsewhere.items(), key=lambda kv: -kv[1][1])[:12]],
        "legend": [{"n": i, "colour": colour[e.graph_index], "ops": e.op_count} for i, e in enumerate(graphs)],
        "recompiles": [{"at_ms": r.at_s * 1e3, "guard": r.guard, "expected": r.expected, "now": r.now,
                        "reason": r.reason.splitlines()[0] if r.reason else ""} for r in f.recompiles],
        "disk": _disk_events(f),
        "python": [{"reason": e["fallback"], "hint": e["fallback_hint"]} for e in entries if e["fallback"]]
                  + [{"reason": r, "hint": str(hint_for(r))} for r in f.limit_hits],
    }


def _disk_events(f: FunctionRecord) -> list[dict]:
    """The persistent cache's reasons for this function (driver/cache_events.py):
    stored entries not used and why, entries compiled and not stored and why
    (loaded entries are marked on the entries themselves)."""
    out = []
    for ev in f.cache_events:
        what = _DISK_KINDS.get(ev.kind)
        if what is not None:
            out.append({"what": what, "detail": ev.detail, "path": ev.path})
    return out


#: the events the report lists (the kinds of driver/cache_events.KINDS), as it names them
_DISK_KINDS = {
    "key_mismatch": "not used: key mismatch", "source_changed": "not used: source file changed",
    "guard_failed": "not used: guard failed on this call", "corrupt": "not used: corrupt file",
    "rejected": "not used", "not_stored": "not stored",
}


def _rel(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _timeline(rec: RunRecord, functions: list[dict], order: dict) -> dict:
    entries = rec.all_entries()
    if not entries:
        return {"bars": [], "width": 0, "height": 0, "total_ms": 0, "rows": []}
    end = max(e.start_s + e.trace_s + e.backend_s for e in entries) or 1e-6
    width, row_h, left = 900, 18, 170
    bars = []
    for e in entries:
        row = order.get(id(e), 0)
        x = left + (width - left) * e.start_s / end
        wt = max(1.0, (width - left) * e.trace_s / end)
        wb = max(0.0, (width - left) * e.backend_s / end)
        bars.append({"x": x, "y": 4 + row * row_h, "wt": wt, "wb": wb, "h": row_h - 6,
                     "title": f"{functions[row]['name']}: trace {e.trace_s * 1e3:.1f} ms, backend "
                              f"{e.backend_s * 1e3:.1f} ms, {e.op_count} ops, at {e.start_s * 1e3:.0f} ms"})
    return {"bars": bars, "width": width, "height": 8 + row_h * len(functions), "left": left,
            "total_ms": end * 1e3, "rows": [{"y": 4 + i * row_h + row_h / 2, "name": f["name"]}
                                            for i, f in enumerate(functions)]}


def render(rec: RunRecord, title: str | None = None) -> str:
    import jinja2
    from .report_page import TEMPLATE
    fns = list(rec.functions.values())
    views = [_function_view(i, f) for i, f in enumerate(fns)]
    order = {id(e): i for i, f in enumerate(fns) for e in f.entries}
    entries = rec.all_entries()
    graphs = [e for e in entries if e.graph_index is not None]
    env = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    page = env.from_string(TEMPLATE)
    import torch
    return page.render(
        title=title or "armature run report",
        command=" ".join([os.path.basename(sys.executable)] + sys.argv),
        when=datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        versions=f"armature {_version()}, torch {torch.__version__}, Python {platform.python_version()}",
        functions=views,
        totals={"functions": len(fns), "entries": len(entries), "graphs": len(graphs),
                "ops": sum(e.op_count for e in graphs),
                "breaks": sum(len(p) for _, _, p in grouped_breaks(rec)),
                "recompiles": sum(len(f.recompiles) for f in fns),
                "python": sum(len(v["python"]) for v in views),
                "trace_ms": sum(e.trace_s for e in entries) * 1e3,
                "backend_ms": sum(e.backend_s for e in entries) * 1e3},
        breaks=[{"reason": r, "hint": str(h), "category": h.category,
                 "places": [{"where": f"{_rel(fn)}:{ln}" if fn else "?", "source": src or "", "count": c}
                            for fn, ln, src, c in places]}
                for r, h, places in grouped_breaks(rec)],
        notes=list(rec.notes),
        timeline=_timeline(rec, views, order),
    )


def _version() -> str:
    from .._version import __version__
    return __version__


def write(path: str, rec: RunRecord | None = None) -> str:
    """Write the report of ``rec`` (default: the current run) to ``path``;
    returns the path written."""
    rec = rec if rec is not None else record_mod.current()
    if rec is None:
        rec = RunRecord()
    text = render(rec)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


_scheduled: set = set()


def report(path: str) -> str:
    """Record this run from now on and write its HTML report to ``path`` when
    the interpreter exits (``ARMATURE_REPORT=path`` does this at import).
    Returns ``path``; ``armature.diagnostics.report.write(path)`` writes one
    at any time."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"armature.report: expected a file path, got {type(path).__name__}")
    path = os.fspath(path)
    record_mod.start()
    if path not in _scheduled:
        _scheduled.add(path)
        atexit.register(_write_at_exit, path)
    return path


def _write_at_exit(path: str) -> None:
    try:
        write(path)
        print(f"[armature] report written to {path}", file=sys.stderr)
    except Exception as e:   # exiting: say so, never raise
        print(f"[armature] could not write the report {path}: {type(e).__name__}: {e}", file=sys.stderr)
