#!/usr/bin/env python
"""The per-block recipe: N identical blocks, each compiled on its own
(``for i, b in enumerate(layers): layers[i] = compile(b)``, PyTorch's
advice for large models and torchtitan's recipe), armature next to
torch.compile: how many graphs each makes and how long the first training
step takes (every block's first forward, then the backward).

Blocks (self-contained, CPU, float32):

* ``mlp``          LayerNorm-Linear-GELU-Linear with a residual, width 64,
                   input 4x32x64
* ``transformer``  a pre-LN transformer block (fused qkv, causal SDPA, 4
                   heads, GELU MLP), width 64, input 4x32x64

Small on purpose: the first step is then compile work, not arithmetic.

Every (block, depth, backend, compiler) measurement runs in a process of
its own with a fresh ``TORCHINDUCTOR_CACHE_DIR`` and the FX graph and
autograd caches off (cold caches), one torch thread; the process has
imported torch, armature and torch._dynamo (from .pyc files, after one
throw-away child) and compiled nothing when the step starts.  The two
compilers alternate, rep by rep.
``--reps`` runs each; the table shows medians.  Per row:

* ``first s``   the first training step: forward through the N compiled
                blocks, ``out.square().mean().backward()``;
* ``ratio``     armature's first step / torch.compile's (the target: 0.5 or
                less); ``ratio of CPU s``: the same of the process's CPU
                time (``time.process_time``; steadier on a loaded machine,
                but without inductor's compile workers, which are other
                processes);
* ``graphs``    graphs compiled (armature: distinct cache entries with a
                graph over all blocks; torch.compile: Dynamo's unique
                graphs); the backward's graphs come with them;
* ``steady``    median step time over ``--iters`` later steps, divided by
                the uncompiled model's;
* ``max err``   largest difference of the output and the gradients from
                the uncompiled model's after the first step.

Usage:  python benchmarks/per_block.py [--blocks mlp,transformer] [--depths 8,32]
        [--backends eager,inductor] [--reps 3] [--iters 5] [--json PATH] [--quick]
        (``./dev suite --per-block [args]``)
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
import time

COMPILERS = ("armature", "torch.compile")
#: torch's threads in each child (both compilers alike: steadier on a shared machine)
THREADS = 1


def _block_classes():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class MLPBlock(nn.Module):
        def __init__(self, d=64):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)

        def forward(self, x):
            return x + self.fc2(F.gelu(self.fc1(self.ln(x))))

    class TransformerBlock(nn.Module):
        def __init__(self, d=64, heads=4):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    return {"mlp": (MLPBlock, (4, 32, 64)), "transformer": (TransformerBlock, (4, 32, 64))}


def child(block: str, depth: int, backend: str, compiler: str, iters: int) -> dict:
    import torch
    import torch._dynamo  # noqa: F401  (imported, as armature is: neither import is timed)

    import armature
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    cls, shape = _block_classes()[block]
    blocks = torch.nn.ModuleList(cls() for _ in range(depth))
    import copy
    reference = copy.deepcopy(blocks)
    x = torch.randn(*shape)

    def step(layers):
        h = x
        for b in layers:
            h = b(h)
        h.square().mean().backward()
        return h

    compile_fn = armature.compile if compiler == "armature" else torch.compile
    compiled = [compile_fn(b, backend=backend) for b in blocks]
    c0, t0 = time.process_time(), time.perf_counter()
    out = step(compiled)
    first, first_cpu = time.perf_counter() - t0, time.process_time() - c0
    ref = step(reference)
    err = (out - ref).abs().max().item()
    for p, q in zip(blocks.parameters(), reference.parameters()):
        err = max(err, (p.grad - q.grad).abs().max().item())
    steady = _median(lambda: step(compiled), iters)
    eager = _median(lambda: step(reference), iters)
    if compiler == "armature":
        entries = {id(e): e for c in compiled for e in armature.cache_entries(c)}
        graphs = sum(e.graph_module is not None for e in entries.values())
    else:
        from torch._dynamo.utils import counters
        graphs = int(counters["stats"]["unique_graphs"])
    return {"block": block, "depth": depth, "backend": backend, "compiler": compiler, "first_s": first,
            "first_cpu_s": first_cpu,
            "graphs": graphs, "steady_ratio": steady / eager, "steady_ms": steady * 1e3, "max_err": err}


def _median(fn, n: int) -> float:
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def run_child(block: str, depth: int, backend: str, compiler: str, iters: int) -> dict:
    """One measurement in a fresh process with empty inductor caches."""
    with tempfile.TemporaryDirectory(prefix="per-block-bench-") as cache:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_FX_GRAPH_CACHE="0",
                   TORCHINDUCTOR_AUTOGRAD_CACHE="0", OMP_NUM_THREADS=str(THREADS))
        # imports from .pyc files, as an installed package does (torch's are
        # compiled at install; an environment that forbids writing them
        # would charge armature's source compile to every measurement)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cmd = [sys.executable, __file__, "--child", block, str(depth), backend, compiler, str(iters)]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        return {"block": block, "depth": depth, "backend": backend, "compiler": compiler, "error": p.stderr[-2000:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def table(results: list[dict]) -> str:
    rows: dict = {}
    for r in results:
        rows.setdefault((r["block"], r["depth"], r["backend"]), {}).setdefault(r["compiler"], []).append(r)
    head = ["block", "blocks", "backend", "armature first s", "torch.compile first s", "ratio",
            "ratio of CPU s", "graphs (armature, torch.compile)", "steady vs eager (armature, torch.compile)",
            "max err"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (block, depth, backend), per in rows.items():
        def med(c, key):
            vals = [r[key] for r in per.get(c, []) if key in r]
            return statistics.median(vals) if vals else None

        def fmt(v, spec=".2f"):   # ("-": not run or failed; the error is in the JSON)
            return "-" if v is None else format(v, spec)
        a, t = med("armature", "first_s"), med("torch.compile", "first_s")
        errs = [r["max_err"] for rs in per.values() for r in rs if "max_err" in r]
        ac, tc = med("armature", "first_cpu_s"), med("torch.compile", "first_cpu_s")
        cells = [block, str(depth), backend, fmt(a), fmt(t), fmt(None if a is None or t is None else a / t),
                 fmt(None if ac is None or tc is None else ac / tc),
                 f"{fmt(med('armature', 'graphs'), '.0f')}, {fmt(med('torch.compile', 'graphs'), '.0f')}",
                 f"{fmt(med('armature', 'steady_ratio'))}, {fmt(med('torch.compile', 'steady_ratio'))}",
                 fmt(max(errs) if errs else None, ".1e")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=5, metavar=("BLOCK", "DEPTH", "BACKEND", "COMPILER", "ITERS"))
    ap.add_argument("--blocks", default="mlp,transformer")
    ap.add_argument("--depths", default="8,32")
    ap.add_argument("--backends", default="eager,inductor")
    ap.add_argument("--compilers", default=",".join(COMPILERS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="mlp, 2 blocks, eager, one rep (a smoke run)")
    ap.add_argument("--no-warmup", action="store_true", help="skip the throw-away first child")
    a = ap.parse_args(argv)
    if a.child:
        block, depth, backend, compiler, iters = a.child
        print(json.dumps(child(block, int(depth), backend, compiler, int(iters))))
        return
    if a.quick:
        a.blocks, a.depths, a.backends, a.reps, a.iters, a.no_warmup = "mlp", "2", "eager", 1, 2, True
    print(f"# load average at start: {os.getloadavg()}, {os.cpu_count()} cpus", flush=True)
    if not a.no_warmup:
        # one throw-away child: writes armature's .pyc files, reads torch's
        # libraries into the page cache (regions.py's _warm_up)
        r = run_child("mlp", 2, "eager", "armature", 1)
        print(f"# warm-up child (not counted): {r.get('first_s', r.get('error', '?'))}", flush=True)
    results = []
    for block in a.blocks.split(","):
        for depth in (int(d) for d in a.depths.split(",")):
            for backend in a.backends.split(","):
                for rep in range(a.reps):
                    # alternated, so that load on a shared machine hits both alike
                    for compiler in a.compilers.split(","):
                        r = run_child(block, depth, backend, compiler, a.iters)
                        results.append(r)
                        print(json.dumps(r), flush=True)
    print()
    print(table(results))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
