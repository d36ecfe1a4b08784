#!/usr/bin/env python
"""armature vs torch.compile on the models of PyTorch's benchmark dashboard.

The HuggingFace CPU list and the timm list of pytorch/pytorch
``benchmarks/dynamo`` (benchmarks/dashboard_models.py: how each model is
built offline, and what is smaller than PyTorch's run), each model in two
modes, inference (``eval()``, ``no_grad``) and a training step (``train()``,
forward, loss, backward), under both compilers with backend "eager" (so the
compile time is the frontend's).  Per model, mode and compiler: correct or
not (outputs, gradients and buffers against eager), graphs, graph breaks
with their reasons, compile time.

Every (model, compiler) runs in its own process (benchmarks/dashboard_worker.py)
with a timeout, so a crash, a hang or a memory blow-up costs one cell, not
the run; results are saved after each process (``--json``; ``--resume``
keeps what a file already has), and the markdown table (``--md``) is written
at the end (and by ``--report`` from a JSON file alone).

Usage:  ./dev dashboard [--list hf|timm|all] [--models A,B] [--mode inference|train|both]
                        [--quick] [--jobs N] [--timeout S] [--resume] [--json PATH] [--md PATH]
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from dashboard_models import HF_MODELS, TIMM_MODELS, pt_ci_breaks  # noqa: E402

WORKER = os.path.join(HERE, "dashboard_worker.py")
DEFAULT_JSON = os.path.join(HERE, "results", "dashboard.json")
DEFAULT_MD = os.path.join(HERE, "results", "dashboard.md")
COMPILERS = ("armature", "torch.compile")
MODES = ("inference", "train")
QUICK_MODELS = ("DistilBertForMaskedLM", "lcnet_050")


# ---------------------------------------------------------------- running


def run_worker(model: str, compiler: str, modes: list[str], timeout: float, repeats: int, threads: int) -> dict:
    """Run one (model, compiler) in its own process; its JSON, or what it left before dying."""
    fd, out = tempfile.mkstemp(prefix="dashboard-", suffix=".json")
    os.close(fd)
    env = dict(os.environ)
    src = os.path.join(ROOT, "src")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    cmd = [sys.executable, WORKER, model, "--compiler", compiler, "--modes", ",".join(modes), "--out", out,
           "--compile-repeats", str(repeats), "--threads", str(threads)]
    t0 = time.perf_counter()
    status, tail = "ok", ""
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            status = f"exit {p.returncode}"
            tail = (p.stderr or p.stdout)[-1500:]
    except subprocess.TimeoutExpired:
        status = f"timeout after {timeout:.0f} s"
    try:
        with open(out) as f:
            text = f.read()
        result = json.loads(text) if text.strip() else {}
    except (OSError, json.JSONDecodeError):
        result = {}
    finally:
        if os.path.exists(out):
            os.unlink(out)
    result.setdefault("model", model)
    result.setdefault("compiler", compiler)
    result.setdefault("modes", {})
    for m in modes:
        cell = result["modes"].get(m)
        if cell is None or (status != "ok" and cell.get("correct") is None and cell.get("error")):
            result["modes"][m] = {"error": f"worker {status}" + (f": {_last_line(tail)}" if tail else "")}
    result["status"] = status
    result["wall_s"] = time.perf_counter() - t0
    if tail:
        result["stderr_tail"] = tail
    return result


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def select(opts) -> list[str]:
    names: list[str] = []
    if opts.list in ("hf", "all"):
        names += list(HF_MODELS)
    if opts.list in ("timm", "all"):
        names += TIMM_MODELS
    if opts.models:
        wanted = [m.strip() for m in opts.models.split(",") if m.strip()]
        unknown = [m for m in wanted if m not in HF_MODELS and m not in TIMM_MODELS]
        if unknown:
            raise SystemExit(f"not in the dashboard's lists: {', '.join(unknown)} (see --show)")
        names = [m for m in wanted if m in names] if opts.list != "all" else wanted
    elif opts.quick:
        names = [m for m in QUICK_MODELS if m in names]
    return names


# ---------------------------------------------------------------- report


def environment() -> dict:
    import importlib.metadata as md
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    env = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "python": platform.python_version(), "cpu": cpu, "cpu_count": os.cpu_count(),
           "platform": platform.platform()}
    for dist in ("torch", "transformers", "timm"):
        try:
            env[dist] = md.version(dist)
        except md.PackageNotFoundError:
            env[dist] = None
    try:
        env["armature_commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                                capture_output=True, text=True).stdout.strip()
    except OSError:
        env["armature_commit"] = None
    return env


def _cell(r: dict | None) -> dict:
    return r or {"error": "not run"}


def _correct(r: dict) -> str:
    if r.get("correct") is True:
        return "yes"
    if r.get("error"):
        return "CRASH" if not str(r["error"]).startswith("eager failed") else "eager fails"
    return "WRONG" if r.get("correct") is False else "?"


def _num(v) -> str:
    return "—" if v is None else str(v)


def rows_of(results: dict) -> list[dict]:
    """One row per (model, mode) from {model: {compiler: worker result}}."""
    rows = []
    for model, per in results.items():
        if not all(c in per for c in COMPILERS):
            continue        # one compiler only (a run cut short): no comparison to make
        suite = next((r.get("suite") for r in per.values() if r.get("suite")), None) or \
            ("hf" if model in HF_MODELS else "timm")
        modes = [m for m in MODES if any(m in r.get("modes", {}) for r in per.values())]
        for mode in modes:
            a = _cell(per.get("armature", {}).get("modes", {}).get(mode))
            t = _cell(per.get("torch.compile", {}).get("modes", {}).get(mode))
            rows.append({"model": model, "suite": suite, "mode": mode, "arm": a, "tc": t})
    return rows


def classify(row: dict) -> list[str]:
    """What is wrong with armature on this row (empty: nothing)."""
    a, t = row["arm"], row["tc"]
    out = []
    if _correct(a) == "eager fails":
        return ["eager fails"]
    if _correct(a) != "yes":
        out.append("wrong" if _correct(a) == "WRONG" else "crash")
    ga, gt = a.get("graphs_all_calls", a.get("graphs")), t.get("graphs_all_calls", t.get("graphs"))
    if a.get("graphs") is not None and t.get("graphs") is not None and a["graphs"] > t["graphs"]:
        out.append("more graphs")
    elif ga is not None and gt is not None and ga > gt:
        out.append("more recompiles")
    if a.get("fallbacks"):
        out.append("ran as Python")
    return out


def summary(rows: list[dict]) -> list[str]:
    lines = ["| list | mode | models | armature correct | torch.compile correct | armature more graphs "
             "| armature fewer graphs | compile time, sum (arm / tc) | ratio | median per-model ratio |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for suite in ("hf", "timm"):
        for mode in MODES:
            rs = [r for r in rows if r["suite"] == suite and r["mode"] == mode and _correct(r["arm"]) != "eager fails"]
            if not rs:
                continue
            ok_a = sum(_correct(r["arm"]) == "yes" for r in rs)
            ok_t = sum(_correct(r["tc"]) == "yes" for r in rs)
            more = sum("more graphs" in classify(r) for r in rs)
            fewer = sum(1 for r in rs if r["arm"].get("graphs") is not None and r["tc"].get("graphs") is not None
                        and r["arm"]["graphs"] < r["tc"]["graphs"])
            both = [(r["arm"]["compile_s"], r["tc"]["compile_s"]) for r in rs
                    if r["arm"].get("compile_s") and r["tc"].get("compile_s")
                    and r["arm"]["compile_s"] > 0 and r["tc"]["compile_s"] > 0]
            sa, st = sum(a for a, _ in both), sum(t for _, t in both)
            med = statistics.median(a / t for a, t in both) if both else None
            lines.append(f"| {suite} | {mode} | {len(rs)} | {ok_a} | {ok_t} | {more} | {fewer} | "
                         f"{sa:.1f} s / {st:.1f} s | {sa / st:.2f}x | {med:.2f}x |" if both else
                         f"| {suite} | {mode} | {len(rs)} | {ok_a} | {ok_t} | {more} | {fewer} | — | — | — |")
    return lines


def markdown(results: dict, env: dict, notes: list[str], command: str) -> str:
    rows = rows_of(results)
    ms = lambda s: "—" if s is None else f"{s * 1e3:.0f}"  # noqa: E731
    lines = ["# armature vs torch.compile on PyTorch's dashboard models", "",
             f"`{command}` · {env['date']} · Python {env['python']} · torch {env['torch']} · "
             f"transformers {env['transformers']} · timm {env['timm']} · armature {env.get('armature_commit')} · "
             f"{env['cpu']} ({env['cpu_count']} cores)", "",
             "Backend \"eager\" for both compilers (wrapped in a counter), so compile time is the frontend's: "
             "the first compiled call minus the fastest eager call, forward only, the fastest of the "
             "compiles from empty caches.  graphs: backend compilations in the first call (`+n`: more in the "
             "second call, a recompile); breaks: graph breaks in the first call.  correct: every output "
             "(and in training every parameter's gradient, and the buffers at the end) equals eager's within "
             "1e-3 of its largest magnitude.  PT CI: the graph breaks PyTorch's CI expects with backend eager "
             "(their harness compiles the whole step, optimizer included; a reference only).", "",
             "## Summary", ""] + summary(rows) + ["", "## Per model", "",
             "| model | mode | correct (arm / tc) | graphs (arm / tc) | breaks (arm / tc) | PT CI | "
             "compile ms (arm / tc) | ratio |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]

    def graphs(r):
        g = r.get("graphs")
        if g is None:
            return "—"
        extra = (r.get("graphs_all_calls") or g) - g
        return f"{g}{f' +{extra}' if extra else ''}"

    for r in rows:
        a, t = r["arm"], r["tc"]
        ci = pt_ci_breaks(r["model"], r["mode"])
        ratio = (a["compile_s"] / t["compile_s"]) if a.get("compile_s") and t.get("compile_s") and \
            t["compile_s"] > 0 and a["compile_s"] > 0 else None
        flag = classify(r)
        name = f"**{r['model']}**" if flag and flag != ["eager fails"] else r["model"]
        lines.append(f"| {name} | {r['mode']} | {_correct(a)} / {_correct(t)} | {graphs(a)} / {graphs(t)} | "
                     f"{_num(a.get('breaks'))} / {_num(t.get('breaks'))} | {_num(ci)} | "
                     f"{ms(a.get('compile_s'))} / {ms(t.get('compile_s'))} | "
                     f"{'—' if ratio is None else f'{ratio:.2f}x'} |")

    problems = []
    for r in rows:
        flag = classify(r)
        if not flag:
            continue
        a, t = r["arm"], r["tc"]
        head = f"- **{r['model']}** ({r['mode']}): {', '.join(flag)}; graphs {graphs(a)} vs {graphs(t)}"
        detail = []
        if a.get("error"):
            detail.append(f"armature: {a['error']}")
        if a.get("mismatch"):
            detail.append(f"differs: {a['mismatch']}")
        detail += [f"armature break: {x}" for x in a.get("reasons", [])[:8]]
        detail += [f"armature ran as Python: {x}" for x in a.get("fallbacks", [])[:4]]
        detail += [f"torch.compile break: {x}" for x in t.get("reasons", [])[:4]]
        problems.append("\n".join([head] + [f"  - {d}" for d in detail]))
    if problems:
        lines += ["", "## Where armature differs (wrong, crashed, more graphs, ran as Python)", ""] + problems
    tc_bad = [r for r in rows if _correct(r["tc"]) not in ("yes", "eager fails")]
    if tc_bad:
        lines += ["", "## Where torch.compile fails", ""]
        lines += [f"- {r['model']} ({r['mode']}): {_correct(r['tc'])}: {r['tc'].get('error') or r['tc'].get('mismatch')}"
                  for r in tc_bad]

    half = [m for m, per in results.items() if not all(c in per for c in COMPILERS)]
    lines += ["", "## Models as built", "", "| model | list | parameters | inputs | smaller than PyTorch's run |",
              "| --- | --- | --- | --- | --- |"]
    for model, per in results.items():
        if model in half:
            continue
        cell = next((m for r in per.values() for m in r.get("modes", {}).values() if m.get("inputs")), {})
        suite = "hf" if model in HF_MODELS else "timm"
        reduced = cell.get("reduced") or ("—" if suite == "timm" else "")
        if suite == "hf":
            reduced = f"batch 2 (PyTorch {HF_MODELS[model]}); " + reduced
        lines.append(f"| {model} | {suite} | {cell.get('params_m', '—')}M | {cell.get('inputs', '—')} | {reduced} |")
    if half:
        notes = notes + [f"left out, run under one compiler only: {', '.join(half)}"]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=repr))


def save(path: str, payload: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_jsonable(payload), f, indent=1)
    os.replace(tmp, path)


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", choices=("hf", "timm", "all"), default="all", help="which of PyTorch's lists")
    ap.add_argument("--models", default=None, help="comma-separated model names (of the lists)")
    ap.add_argument("--mode", choices=("inference", "train", "both"), default="both")
    ap.add_argument("--compilers", default=",".join(COMPILERS))
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke test: {' and '.join(QUICK_MODELS)} unless --models, one compile each")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes at a time")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per (model, compiler) (default 900)")
    ap.add_argument("--compile-repeats", type=int, default=None, help="compiles per mode (default 2, --quick 1)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    ap.add_argument("--resume", action="store_true", help="keep the (model, compiler) results --json already has")
    ap.add_argument("--show", action="store_true", help="print the selected models and exit")
    ap.add_argument("--report", action="store_true",
                    help="only write --md from --json (comma-separated files are merged)")
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--md", default=DEFAULT_MD)
    opts = ap.parse_args(argv)
    command = "./dev dashboard " + " ".join(argv if argv is not None else sys.argv[1:])

    if opts.report:
        # one or more JSON files (comma-separated: runs of parts of the lists), merged
        results, notes, env, commands = {}, [], None, []
        for path in opts.json.split(","):
            with open(path) as f:
                payload = json.load(f)
            env = env or payload["environment"]
            commands.append(payload.get("command", ""))
            notes += payload.get("notes", [])
            for model, per in payload["results"].items():
                results.setdefault(model, {}).update(per)
        order = list(HF_MODELS) + TIMM_MODELS
        results = {m: results[m] for m in sorted(results, key=lambda m: order.index(m) if m in order else len(order))}
        md = markdown(results, env, notes, " + ".join(dict.fromkeys(c for c in commands if c)))
        with open(opts.md, "w") as f:
            f.write(md)
        print(md)
        return 0

    names = select(opts)
    if opts.show:
        print("\n".join(names))
        return 0
    modes = list(MODES) if opts.mode == "both" else [opts.mode]
    compilers = [c.strip() for c in opts.compilers.split(",") if c.strip()]
    timeout = opts.timeout or (300 if opts.quick else 900)
    repeats = opts.compile_repeats or (1 if opts.quick else 2)

    results: dict = {}
    if opts.resume and os.path.exists(opts.json):
        with open(opts.json) as f:
            results = json.load(f).get("results", {})
    env = environment()
    notes = [f"{len(names)} models, modes {', '.join(modes)}; each (model, compiler) in its own process "
             f"(timeout {timeout:.0f} s, {opts.threads} torch thread(s), {opts.jobs} at a time)"]
    jobs = [(m, c) for m in names for c in compilers
            if not (opts.resume and all(x in results.get(m, {}).get(c, {}).get("modes", {}) and
                                        "did not finish" not in str(results[m][c]["modes"][x].get("error"))
                                        for x in modes))]
    lock = threading.Lock()
    t0 = time.perf_counter()

    def one(job):
        model, compiler = job
        r = run_worker(model, compiler, modes, timeout, repeats, opts.threads)
        with lock:
            results.setdefault(model, {})[compiler] = r
            save(opts.json, {"environment": env, "command": command, "notes": notes, "results": results})
            done = "; ".join(f"{m}: {_correct(v)} {v.get('graphs', '—')} graph(s)" for m, v in r["modes"].items())
            print(f"[dashboard] {model} / {compiler}: {done} ({r['wall_s']:.0f} s)", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        list(pool.map(one, jobs))
    notes.append(f"wall time {time.perf_counter() - t0:.0f} s for {len(jobs)} process(es)")
    ordered = {m: results[m] for m in names if m in results}
    ordered.update({m: v for m, v in results.items() if m not in ordered})
    save(opts.json, {"environment": env, "command": command, "notes": notes, "results": ordered})
    md = markdown(ordered, env, notes, command)
    os.makedirs(os.path.dirname(os.path.abspath(opts.md)), exist_ok=True)
    with open(opts.md, "w") as f:
        f.write(md)
    print(md)
    print(f"[dashboard] wrote {opts.json} and {opts.md}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
