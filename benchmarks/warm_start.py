#!/usr/bin/env python
"""Cold and warm first-call times of armature and torch.compile, each start a
fresh process (the warm start: driver/persistent_cache.py).

For each model and compiler: a fresh pair of cache directories (armature's
ARMATURE_CACHE_DIR and inductor's TORCHINDUCTOR_CACHE_DIR, one pair per
compiler), one cold process (empty caches) and then ``--warm`` warm
processes (the caches the cold one left).  Each process reports the time of
its first compiled call, its time from start to the first result (imports
included), how many frames armature traced and loaded, and a checksum of
the result (every warm result must equal the cold one: the table says so).

Models: the bundled demo model (demo/model.py TinyGPT, 2 blocks) and
``blocksN``, the same with N blocks (``blocks6``, ``blocks12``: issue 38's
12-block transformer); eval mode, no_grad.  ``demo_print`` and
``blocks6_print`` are the same with a print between the blocks and the head
(benchmarks/warm_start_models.py): a graph break, two graphs and a resume
function.  torch.compile runs with its default caches (FX-graph and
AOTAutograd caches on).

``demo-dyn`` (dynamic sizes; not in the default list): the demo model on
sequences of two lengths in the cold process (32, then 48: the second call
recompiles the length dynamic) and of a third length in each warm one (56),
so the warm first call is served by the stored dynamic entry (armature) or
by the caches' dynamic graph (torch.compile) -- neither may trace per size
again.  Its results are compared with eager (each process's ``max_err``),
as warm and cold run different lengths.

Usage:  python benchmarks/warm_start.py [--backend inductor] [--warm 3]
            [--models demo,blocks6[,demo-dyn,demo_print,blocks6_print]]
        (``./dev suite --warm`` runs it)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def worker(args) -> None:
    t_start = float(os.environ["WS_T0"])
    sys.path.insert(0, os.path.join(ROOT, "demo"))
    sys.path.insert(0, os.path.join(ROOT, "src"))
    import torch
    from model import GPTConfig, make_model

    name, _, variant = args.model.partition("_")
    cfg = GPTConfig(n_layers=int(name[len("blocks"):])) if name.startswith("blocks") else GPTConfig()
    model, idx = make_model(cfg)
    if variant == "print":   # (the same weights, a print in forward: a graph break)
        from warm_start_models import PrintingGPT
        model.__class__ = PrintingGPT
    if args.compiler == "armature":
        import armature
        compiled = armature.compile(model, backend=args.backend)
    else:
        compiled = torch.compile(model, backend=args.backend)
    lengths = [int(n) for n in args.lengths.split(",")] if args.lengths else [idx.shape[1]]
    times, err, total = [], 0.0, None
    with torch.no_grad():
        for n in lengths:
            x = idx[:, :n].contiguous()
            t0 = time.perf_counter()
            out = compiled(x)
            times.append(time.perf_counter() - t0)
            if total is None:
                total = time.time() - t_start
            err = max(err, float((out - model(x)).abs().max()))
    stats = {}
    if args.compiler == "armature":
        from armature.driver import persistent_cache
        stats = dict(persistent_cache.stats)
    print("RESULT " + json.dumps({"first_call_s": times[0], "call_s": times, "to_first_result_s": total,
                                  "stats": stats, "checksum": float(out.double().sum()), "max_err": err}))


#: model -> (its cold process's sequence lengths, its warm processes'): a dynamic-size case
DYNAMIC = {"demo-dyn": ("32,48", "56")}


def run_one(compiler: str, model: str, backend: str, arm_dir: str, ind_dir: str, lengths: str = "") -> dict:
    env = dict(os.environ, ARMATURE_CACHE="1", ARMATURE_CACHE_DIR=arm_dir, TORCHINDUCTOR_CACHE_DIR=ind_dir,
               WS_T0=repr(time.time()))
    env.pop("ARMATURE_LOGS", None)
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", "--compiler", compiler,
                           "--model", model, "--backend", backend, "--lengths", lengths], env=env, capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{compiler} {model} failed:\n{done.stderr[-4000:]}")
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--compiler", default="armature")
    p.add_argument("--model", default="demo")
    p.add_argument("--models", default="demo,blocks6",
                   help="comma-separated: demo, blocksN (N blocks: blocks6, blocks12), demo-dyn (dynamic sizes), "
                        "demo_print, blocks6_print (a print in forward: a graph break)")
    p.add_argument("--compilers", default="armature,torch")
    p.add_argument("--backend", default="inductor")
    p.add_argument("--warm", type=int, default=3, help="warm processes per model and compiler")
    p.add_argument("--lengths", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return 0
    rows = []
    for model in args.models.split(","):
        for compiler in args.compilers.split(","):
            with tempfile.TemporaryDirectory(prefix="armature-warm-bench-") as tmp:
                arm, ind = os.path.join(tmp, "armature"), os.path.join(tmp, "inductor")
                cold_lengths, warm_lengths = DYNAMIC.get(model, ("", ""))
                cold = run_one(compiler, model, args.backend, arm, ind, cold_lengths)
                warm = [run_one(compiler, model, args.backend, arm, ind, warm_lengths) for _ in range(args.warm)]
            if model in DYNAMIC:   # (other lengths than the cold process's: each result against eager)
                same = all(w["max_err"] < 1e-3 for w in warm)
            else:
                same = all(w["checksum"] == cold["checksum"] for w in warm)
            row = {"model": model, "compiler": compiler, "cold": cold["first_call_s"],
                   "warm": statistics.median(w["first_call_s"] for w in warm),
                   "warm_total": statistics.median(w["to_first_result_s"] for w in warm),
                   "cold_total": cold["to_first_result_s"], "cold_calls": cold["call_s"],
                   "traced": [w["stats"].get("traces") for w in warm],
                   "loaded": [w["stats"].get("loaded") for w in warm], "same": same,
                   "max_err": max(w["max_err"] for w in warm)}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print(f"\nwarm start, backend {args.backend}, {args.warm} warm processes each (medians; seconds)\n")
    print(f"{'model':8} {'compiler':9} {'cold 1st':>9} {'warm 1st':>9} {'warm/cold':>9} {'cold tot':>9} "
          f"{'warm tot':>9}  warm traces/loaded  warm==cold")
    for r in rows:
        print(f"{r['model']:8} {r['compiler']:9} {r['cold']:9.2f} {r['warm']:9.2f} {r['warm'] / r['cold']:9.2f} "
              f"{r['cold_total']:9.2f} {r['warm_total']:9.2f}  {r['traced']}/{r['loaded']}  {r['same']}")
    for r in rows:
        if r["model"] in DYNAMIC:
            print(f"{r['model']} {r['compiler']}: cold calls (lengths {DYNAMIC[r['model']][0]}) "
                  f"{', '.join(f'{t:.2f}' for t in r['cold_calls'])} s; warm first call (length "
                  f"{DYNAMIC[r['model']][1]}) {r['warm']:.2f} s")
    by = {(r["model"], r["compiler"]): r for r in rows}
    for model in args.models.split(","):
        a, t = by.get((model, "armature")), by.get((model, "torch"))
        if a and t:
            print(f"{model}: armature/torch.compile warm first call {a['warm'] / t['warm']:.2f}x, "
                  f"warm time to first result {a['warm_total'] / t['warm_total']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
