#!/usr/bin/env python
"""Per-call dispatch overhead of a cached compiled call: armature vs torch.compile.

For each workload (functions of 1, 4 and 16 tiny tensor arguments doing a
trivial sum, and an ``nn.Linear(16, 16)`` module) this times, in one process:

* ``eager``          the plain Python function / module,
* ``armature``       ``armature.compile(..., backend="eager")``,
* ``torch.compile``  ``torch.compile(..., backend="eager")``,

after a warm-up that triggers (and checks) exactly one compile of each.  Each
of ``--rounds`` rounds times ``--calls`` back-to-back calls of every variant,
interleaved (the order rotates from round to round) with the garbage
collector off; the per-call time of a round is its total / calls.  Reported:
the median over rounds of the per-call time, the overhead (compiled - eager)
and the ratio of armature's overhead to torch.compile's.

With backend="eager" the compiled graph runs the same ATen ops as eager, so
the overhead is the frontend's own cost on a cache hit: guard evaluation,
argument plumbing, and the call into the FX graph.

Usage:  ./dev bench [--rounds N] [--calls N] [--json PATH] [--quick]
"""
from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import platform
import statistics
import sys
import time
import warnings
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
try:
    import armature  # noqa: F401  (installed with `pip install -e .`)
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(ROOT, "src"))

import torch  # noqa: E402

import armature  # noqa: E402

DEFAULT_JSON = os.path.join(HERE, "results", "overhead.json")
VARIANTS = ("eager", "armature", "torch.compile")


# ---------------------------------------------------------------- workloads


def add1(a):
    return a + 1


def add4(a, b, c, d):
    return a + b + c + d


def add16(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15):
    return (a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7
            + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15)


def make_workloads() -> list[tuple[str, Callable[[], object], tuple]]:
    """(name, factory of the callable, args).  Tensors are tiny (8
    elements) so the op itself costs little next to the dispatch."""
    torch.manual_seed(0)

    def tensors(n):
        return tuple(torch.randn(8) for _ in range(n))

    def linear():
        return torch.nn.Linear(16, 16).eval()

    return [
        ("fn, 1 tensor arg", lambda: add1, tensors(1)),
        ("fn, 4 tensor args", lambda: add4, tensors(4)),
        ("fn, 16 tensor args", lambda: add16, tensors(16)),
        ("nn.Linear(16,16)", linear, (torch.randn(4, 16),)),
    ]


# ---------------------------------------------------------------- environment


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def environment() -> dict:
    return {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "armature": getattr(armature, "__version__", "?"),
        "python": platform.python_version(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
    }


# ---------------------------------------------------------------- timing


def time_calls(fn: Callable, args: tuple, calls: int) -> float:
    """Per-call time in ns of ``calls`` back-to-back calls."""
    pc = time.perf_counter_ns
    rng = range(calls)
    t0 = pc()
    for _ in rng:
        fn(*args)
    return (pc() - t0) / calls


def check_armature(compiled, name: str) -> None:
    entries = armature.cache_entries(compiled)
    if len(entries) != 1:
        raise RuntimeError(f"{name}: expected 1 armature cache entry after warm-up, got {len(entries)}")
    if entries[0].is_fallback:
        raise RuntimeError(f"{name}: armature fell back to plain Python: {entries[0].fallback_reason}")


def bench_workload(name: str, factory: Callable, args: tuple, rounds: int, calls: int,
                   warmup: int) -> dict:
    # One callable (for nn.Linear: one module instance, so the same weights)
    # behind all three variants.
    eager = factory()
    arm = armature.compile(eager, backend="eager")
    tc = torch.compile(eager, backend="eager")
    fns = {"eager": eager, "armature": arm, "torch.compile": tc}

    with torch.no_grad():
        ref = eager(*args)
        for v in ("armature", "torch.compile"):
            out = fns[v](*args)  # triggers the compile
            if not torch.allclose(out, ref):
                raise RuntimeError(f"{name}: {v} output differs from eager")
        for v in VARIANTS:
            time_calls(fns[v], args, warmup)
        check_armature(arm, name)

        per_round: dict[str, list[float]] = {v: [] for v in VARIANTS}
        gc.collect()
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            for r in range(rounds):
                order = VARIANTS[r % 3:] + VARIANTS[:r % 3]
                for v in order:
                    per_round[v].append(time_calls(fns[v], args, calls))
        finally:
            if gc_was_enabled:
                gc.enable()
        check_armature(arm, name)  # still one entry: every timed call was a cache hit

    med = {v: statistics.median(per_round[v]) for v in VARIANTS}
    arm_over = med["armature"] - med["eager"]
    tc_over = med["torch.compile"] - med["eager"]
    return {
        "workload": name,
        "eager_ns": med["eager"],
        "armature_ns": med["armature"],
        "torch_compile_ns": med["torch.compile"],
        "armature_overhead_ns": arm_over,
        "torch_compile_overhead_ns": tc_over,
        # Only meaningful when both overheads are positive (a negative one is
        # within noise, or a compiled module skipping nn.Module.__call__).
        "overhead_ratio": (arm_over / tc_over) if tc_over > 0 and arm_over > 0 else None,
        "total_ratio": med["armature"] / med["torch.compile"],
        "per_round_ns": per_round,
    }


# ---------------------------------------------------------------- report


def us(ns: float) -> str:
    return f"{ns / 1000:.2f}"


def markdown_table(rows: list[dict]) -> str:
    head = ["workload", "eager µs", "armature µs", "torch.compile µs",
            "armature ovh µs", "torch.compile ovh µs", "ovh ratio arm/tc"]
    body = []
    for r in rows:
        ratio = f"{r['overhead_ratio']:.2f}x" if r["overhead_ratio"] is not None else "n/a"
        body.append([r["workload"], us(r["eager_ns"]), us(r["armature_ns"]), us(r["torch_compile_ns"]),
                     us(r["armature_overhead_ns"]), us(r["torch_compile_overhead_ns"]), ratio])
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]

    def line(cells):
        out = []
        for i, c in enumerate(cells):
            out.append(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]))
        return "| " + " | ".join(out) + " |"

    sep = "|" + "|".join(("-" * (w + 2)) if i == 0 else ("-" * (w + 1) + ":") for i, w in enumerate(widths)) + "|"
    return "\n".join([line(head), sep] + [line(b) for b in body])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds (default 7)")
    p.add_argument("--calls", type=int, default=5000, help="calls per variant per round (default 5000)")
    p.add_argument("--warmup", type=int, default=200, help="untimed calls per variant after compiling")
    p.add_argument("--json", default=DEFAULT_JSON, metavar="PATH",
                   help=f"where to write the JSON results (default {os.path.relpath(DEFAULT_JSON, ROOT)}); "
                        "'-' to skip")
    p.add_argument("--quick", action="store_true", help="3 rounds x 200 calls: a smoke run, numbers are noisy")
    a = p.parse_args(argv)
    if a.quick:
        a.rounds, a.calls, a.warmup = 3, 200, 20
    if a.rounds < 1 or a.calls < 1:
        p.error("--rounds and --calls must be >= 1")

    warnings.filterwarnings("ignore", category=UserWarning)
    env = environment()
    t_start = time.perf_counter()
    rows = []
    for name, factory, args in make_workloads():
        armature.reset()
        torch._dynamo.reset()
        rows.append(bench_workload(name, factory, args, a.rounds, a.calls, a.warmup))
    elapsed = time.perf_counter() - t_start

    print("## Cached-call dispatch overhead (backend=\"eager\", no_grad, median of per-round per-call times)")
    print()
    print(markdown_table(rows))
    print()
    print(f"ovh = compiled - eager per call; ratio = armature ovh / torch.compile ovh (n/a unless both > 0). "
          f"{a.rounds} rounds x {a.calls} calls, interleaved, gc off.")
    print("A compiled module's call skips the wrapped module's nn.Module.__call__, so its ovh can be < 0.")
    print(f"torch {env['torch']}, Python {env['python']}, CPU: {env['cpu']} "
          f"({env['cpu_count']} cores, {env['torch_threads']} torch threads), {env['date']}; "
          f"ran in {elapsed:.1f} s")

    if a.json != "-":
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"environment": env, "rounds": a.rounds, "calls": a.calls, "warmup": a.warmup,
                       "units": "ns per call", "elapsed_s": elapsed, "results": rows}, f, indent=2)
            f.write("\n")
        print(f"JSON written to {os.path.relpath(os.path.abspath(a.json))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
