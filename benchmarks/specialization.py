#!/usr/bin/env python
"""What a specialization buys: the generic (dynamic-N) inductor graph vs the
graph specialized for N=256 by ``mark_dynamic(x, 0, specialize_on=[lambda s:
s == 256])``, called at N=256, on two small blocks over (N, 64) inputs:
``rowwise`` (layer norm / matmul / softmax / gelu, all reductions along the
static dim) and ``batchnorm`` (statistics over the rows: reductions along N).

Variants, each timed at N=256 after warm-up:

* ``eager``        the plain function;
* ``generic``      ``armature.compile(block, backend="inductor")`` with x's
                   dim 0 marked dynamic: the one symbolic graph;
* ``specialized``  the same with ``specialize_on=[lambda s: s == 256]``: one
                   trace, the generic graph compiled at the first call (N=100),
                   the specialized one at the first N=256 call; timed calls go
                   through the dispatcher (predicate + check) to it;
* ``static``       ``dynamic=False``: a graph traced and compiled for N=256
                   only (what a specialization should match).

Compile times are measured with inductor's FX graph and AOT autograd caches
off (else a second run's specialized graph is a cache hit); built C++ kernels
are still reused from inductor's on-disk code cache, so only the first run on
a machine pays for the C++ builds.  Each of ``--rounds`` rounds times ``--calls`` back-to-back calls of every
variant (order rotating, garbage collector off); the per-call time of a round
is its total / calls; reported is the median over rounds.  Torch runs with
``--threads`` intra-op threads (default 1: the machine is shared).

Usage:  python benchmarks/specialization.py [--rounds N] [--calls N] [--json PATH]
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
try:
    import armature  # noqa: F401
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(ROOT, "src"))

import torch  # noqa: E402

import armature  # noqa: E402

DEFAULT_JSON = os.path.join(HERE, "results", "specialization.json")
N = 256
D = 64


def rowwise(x, w1, w2):
    """layer norm, matmuls, softmax, gelu: every reduction runs along the
    static dim (64); N only sets the number of rows."""
    h = torch.nn.functional.layer_norm(x, (D,))
    a = torch.softmax(h @ w1, dim=-1)
    return torch.nn.functional.gelu(a @ w2) + x


def batchnorm(x, w1, w2):
    """the same with statistics over the rows (a batch norm): reductions
    along the dynamic dim N."""
    h = torch.nn.functional.layer_norm(x, (D,)) @ w1
    c = h - h.mean(0)
    c = c * torch.rsqrt(c.pow(2).mean(0) + 1e-5)
    return torch.softmax(c, dim=-1) @ w2


WORKLOADS = {"rowwise": rowwise, "batchnorm": batchnorm}


def _x(n, preds=None):
    x = torch.randn(n, D)
    armature.mark_dynamic(x, 0, specialize_on=preds)
    return x


def build(block, w1, w2):
    """The compiled variants, warmed up (every compile happens here)."""
    t = {}
    generic = armature.compile(block, backend="inductor")
    t0 = time.perf_counter()
    generic(_x(100), w1, w2)
    t["generic"] = time.perf_counter() - t0

    specialized = armature.compile(block, backend="inductor")
    preds = [lambda s: s == N]
    specialized(_x(100, preds), w1, w2)            # the trace and the generic graph
    t0 = time.perf_counter()
    specialized(_x(N, preds), w1, w2)              # compiles the specialization
    t["specialization"] = time.perf_counter() - t0

    static = armature.compile(block, backend="inductor", dynamic=False)
    t0 = time.perf_counter()
    static(torch.randn(N, D), w1, w2)
    t["static"] = time.perf_counter() - t0

    assert len(armature.cache_entries(generic)) == 1
    entries = armature.cache_entries(specialized)
    assert len(entries) == 1, "one trace"
    spec = entries[0].specializations[0]
    assert spec.is_compiled and spec.compiled_for == N, spec
    assert len(armature.cache_entries(static)) == 1
    return {"generic": generic, "specialized": specialized, "static": static}, t, spec


def run_workload(name, block, w1, w2, args) -> dict:
    fns, compile_s, spec = build(block, w1, w2)
    x = _x(N)
    ref = block(x, w1, w2)
    variants = {"eager": block, **fns}
    for fn in variants.values():
        torch.testing.assert_close(fn(x, w1, w2), ref, rtol=1e-4, atol=1e-4)
    per_call = {v: [] for v in variants}
    names = list(variants)
    gc.disable()
    try:
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for v in order:
                fn = variants[v]
                for _ in range(10):
                    fn(x, w1, w2)
                t0 = time.perf_counter()
                for _ in range(args.calls):
                    fn(x, w1, w2)
                per_call[v].append((time.perf_counter() - t0) / args.calls)
    finally:
        gc.enable()
    med = {v: statistics.median(t) for v, t in per_call.items()}
    print(f"\n{name}(x[{N}, {D}], w1, w2) on inductor")
    print(f"  {'variant':<13}{'us/call':>10}{'vs generic':>12}")
    for v in names:
        print(f"  {v:<13}{med[v] * 1e6:>10.1f}{med[v] / med['generic']:>11.2f}x")
    print(f"  compile: generic {compile_s['generic']:.1f} s, specialization {compile_s['specialization']:.1f} s "
          f"(lazily, at the first N={N} call), static {compile_s['static']:.1f} s")
    print(f"  the specialization checks: {' and '.join(spec.guards)}")
    return {
        "median_us_per_call": {k: round(v * 1e6, 2) for k, v in med.items()},
        "speedup_specialized_vs_generic": round(med["generic"] / med["specialized"], 3),
        "compile_s": {k: round(v, 2) for k, v in compile_s.items()},
        "specialization_guards": spec.guards,
    }


def add1(x, w1, w2):
    return x + 1


def dispatch_overhead(args) -> dict:
    """The dispatcher's own cost: ``x + 1`` on the eager backend (the graph
    does next to nothing), without predicates (no dispatcher), with one that
    fails (predicate, then the generic graph) and with one that holds
    (predicate, check, specialized graph)."""
    fns = {}
    for name, preds in (("no predicates", None), ("not matching", [lambda s: s == 7]),
                        ("matching", [lambda s: s == N])):
        cf = armature.compile(add1, backend="eager")
        cf(_x(N, preds), None, None)
        fns[name] = cf
    x = _x(N)
    per_call = {v: [] for v in fns}
    gc.disable()
    try:
        for r in range(args.rounds):
            for v, fn in fns.items():
                for _ in range(10):
                    fn(x, None, None)
                t0 = time.perf_counter()
                for _ in range(args.calls * 5):
                    fn(x, None, None)
                per_call[v].append((time.perf_counter() - t0) / (args.calls * 5))
    finally:
        gc.enable()
    med = {v: statistics.median(t) for v, t in per_call.items()}
    print(f"\ndispatcher overhead: add1(x[{N}, {D}]) on the eager backend")
    print(f"  {'specialize_on':<15}{'us/call':>10}{'overhead':>10}")
    for v in fns:
        print(f"  {v:<15}{med[v] * 1e6:>10.2f}{(med[v] - med['no predicates']) * 1e6:>10.2f}")
    return {"median_us_per_call": {k: round(v * 1e6, 3) for k, v in med.items()}}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--warm-caches", action="store_true",
                    help="keep inductor's FX graph / AOT autograd caches on (compile times then "
                         "depend on earlier runs)")
    args = ap.parse_args(argv)
    if not args.warm_caches:
        import torch._functorch.config
        import torch._inductor.config
        torch._inductor.config.fx_graph_cache = False
        torch._functorch.config.enable_autograd_cache = False
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    w1, w2 = torch.randn(D, D) / D ** 0.5, torch.randn(D, D) / D ** 0.5
    print(f"torch {torch.__version__}, {args.threads} thread(s), median of {args.rounds} rounds x "
          f"{args.calls} calls, interleaved")
    with torch.no_grad():
        workloads = {name: run_workload(name, fn, w1, w2, args) for name, fn in WORKLOADS.items()}
        overhead = dispatch_overhead(args)
    result = {
        "benchmark": "specialization",
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "threads": args.threads,
        "rounds": args.rounds,
        "calls": args.calls,
        "shape": [N, D],
        "inductor_caches": "on" if args.warm_caches else "off",
        "workloads": workloads,
        "dispatch_overhead_eager_backend": overhead,
    }
    if args.json:
        os.makedirs(os.path.dirname(args.json), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
        print(f"\nwrote {os.path.relpath(args.json, ROOT)}")
    return result


if __name__ == "__main__":
    main()
