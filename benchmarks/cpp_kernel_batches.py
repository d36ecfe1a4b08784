"""Inductor's C++ kernels built one per compiler run (inductor) vs a few to a run (armature).

Each round compiles the same model twice with armature and inductor, each
time in a fresh process with its own empty inductor cache (FX graph and
autograd caches off): once with ``ARMATURE_CPP_KERNEL_BATCHES=0`` (the option
``armature.config.cpp_kernel_batches`` off: every
kernel built on its own, as inductor and torch.compile do) and once with
batching on (backends/cpp_kernel_batches.py).  The order alternates between
rounds, so a change of load hits both alike.  It reports the median
end-to-end compile time (first call minus an eager call, as
``benchmarks/regions.py`` measures it).  Then one more process compiles the
model both ways and times the two in interleaved rounds of 10 calls (one
torch thread): the steady-state time must not change, since the kernels are
the same code.

    python benchmarks/cpp_kernel_batches.py [--model tvresnet] [--depth 24] [--rounds 3] [--steady-rounds 15]

The models are those of ``benchmarks/regions.py``.
"""
from __future__ import annotations

import argparse
import json
import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import regions  # noqa: E402  (the models and the cold-process measurement)


def one(model: str, depth: int, batches: bool) -> dict:
    """One cold compile, measured as benchmarks/regions.py measures it."""
    out = regions.run_child(model, depth, "armature", 20, env={"ARMATURE_CPP_KERNEL_BATCHES": "1" if batches else "0"})
    if "error" in out:
        raise SystemExit(f"child failed ({'batched' if batches else 'one per kernel'}):\n{out['error']}")
    return out


STEADY = """
import json, statistics, sys, time
sys.path.insert(0, {here!r})
import torch
import armature
import regions
torch.set_num_threads(1)
torch.manual_seed(0)
cls, make_inputs = regions._models(marked=False)[{model!r}]
m = cls({depth}).eval()
inputs = make_inputs()
armature.config.set(regions="off")
variants = {{}}
with torch.no_grad():
    ref = m(*inputs)
    for name, flag in (("one per kernel", False), ("batched", True)):
        armature.config.set(cpp_kernel_batches=flag)
        variants[name] = armature.compile(m, backend="inductor")
        assert (variants[name](*inputs) - ref).abs().max().item() < 1e-3
    times = {{k: [] for k in variants}}
    for _ in range({rounds}):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            for _ in range(10):
                fn(*inputs)
            times[name].append((time.perf_counter() - t0) / 10)
print(json.dumps({{k: statistics.median(v) * 1e3 for k, v in times.items()}}))
"""


def steady(model: str, depth: int, rounds: int) -> dict:
    """Steady-state ms per call, both ways, compiled and timed in one process."""
    with tempfile.TemporaryDirectory(prefix="cpp-batches-") as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_FX_GRAPH_CACHE="0",
                   TORCHINDUCTOR_AUTOGRAD_CACHE="0")
        code = STEADY.format(here=HERE, model=model, depth=depth, rounds=rounds)
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise SystemExit(f"steady-state child failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="tvresnet")
    ap.add_argument("--depth", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steady-rounds", type=int, default=15)
    args = ap.parse_args()
    runs: dict[bool, list[dict]] = {False: [], True: []}
    for r in range(args.rounds):
        for batches in ((False, True) if r % 2 == 0 else (True, False)):
            out = one(args.model, args.depth, batches)
            runs[batches].append(out)
            print(f"# round {r + 1}, {'batched' if batches else 'one per kernel'}: compile {out['compile_s']:.2f} s, "
                  f"max error {out['max_err']:.1e}", flush=True)
    med = {b: statistics.median(o["compile_s"] for o in runs[b]) for b in runs}
    print(f"{args.model}, {args.depth} blocks, {args.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    print(f"  compile s:  one per kernel {med[False]:.2f}, batched {med[True]:.2f} ({med[True] / med[False]:.2f}x)")
    if args.steady_rounds:
        ms = steady(args.model, args.depth, args.steady_rounds)
        print(f"  steady ms (one process, interleaved, 1 thread):  one per kernel {ms['one per kernel']:.2f}, "
              f"batched {ms['batched']:.2f} ({ms['batched'] / ms['one per kernel']:.2f}x)")


if __name__ == "__main__":
    main()
