#!/usr/bin/env python
"""End-to-end inductor compile time of deep models: armature with and
without regions (graph/regions.py) next to torch.compile, plain and with
``torch.compiler.nested_compile_region`` marked by hand on the block.

Models (defined here, self-contained, hidden 128, inference under
``torch.no_grad()``, eval mode):

* ``gpt2``   GPT-2-like: learned positions, pre-LN blocks (fused qkv, causal
             SDPA, GELU-tanh MLP), tied-free LM head
* ``llama``  LLaMA-style: RMSNorm, rotary embeddings (cos/sin made once and
             passed to every block), SwiGLU MLP, no biases
* ``vit``    ViT-like: conv patch embedding, class token, pre-LN blocks
* ``resnet`` a ResNet whose stage repeats: stem, N identical BasicBlocks
             (BatchNorm in eval mode), pool, classifier
* ``tvresnet`` torchvision's ResNet with BasicBlocks, N blocks in all
             (N/4 per stage, N a multiple of 4; 32x32 images, 10 classes):
             the first block of a stage downsamples, the others are
             identical, so regions make one subgraph per stage

Every (model, depth, compiler) measurement runs in its own process with a
fresh ``TORCHINDUCTOR_CACHE_DIR`` and the FX graph cache off (cold caches),
``--reps`` times; the table shows medians.  Per run:

* ``compile s``  first call minus the median eager call;
* ``steady``     median compiled call time over ``--iters`` calls after
                 warm-up, divided by eager's (lower is faster);
* ``graphs``     backend compilations (armature: cache entries with a
                 graph; torch.compile: Dynamo's unique graphs);
* ``calls``      invoke_subgraph calls in the graphs (subgraphs compiled).

Usage:  python benchmarks/regions.py [--models gpt2,llama] [--depths 2,12,24]
        [--compilers armature,armature+regions,torch.compile,torch.compile+ncr]
        [--reps 3] [--iters 20] [--json PATH]
        python benchmarks/regions.py --steady [--models ...] [--depths ...] [--rounds 30] [--threads 1]
        (``./dev suite --regions [args]``)
"""
from __future__ import annotations

import argparse
import ast
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

HIDDEN = 128
COMPILERS = ("armature", "armature+regions", "torch.compile", "torch.compile+ncr")


# --- models -----------------------------------------------------------------

def _models(marked: bool):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def mark(cls):
        if marked:
            cls.forward = torch.compiler.nested_compile_region(cls.forward)
        return cls

    class Attention(nn.Module):
        def __init__(self, d, heads, causal):
            super().__init__()
            self.heads, self.causal = heads, causal
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).split(d, dim=2)
            q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
            k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
            v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
            return self.proj(y.transpose(1, 2).reshape(b, t, d))

    @mark
    class GPT2Block(nn.Module):
        def __init__(self, d, heads=4, causal=True):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = Attention(d, heads, causal)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT2(nn.Module):
        def __init__(self, n, d=HIDDEN, vocab=512, ctx=64):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
            self.h = nn.ModuleList(GPT2Block(d) for _ in range(n))
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.wte(ids) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            return self.head(self.ln_f(x))

    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def rotate_half(x):
        a, b = x.chunk(2, dim=-1)
        return torch.cat((-b, a), dim=-1)

    @mark
    class LlamaBlock(nn.Module):
        def __init__(self, d, heads=4):
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
            self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
            self.gate, self.up = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False)
            self.down = nn.Linear(2 * d, d, bias=False)

        def forward(self, x, cos, sin):
            b, t, d = x.shape
            h = self.norm1(x)
            q, k, v = (p(h).view(b, t, self.heads, d // self.heads).transpose(1, 2) for p in (self.q, self.k, self.v))
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(y.transpose(1, 2).reshape(b, t, d))
            h = self.norm2(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Llama(nn.Module):
        def __init__(self, n, d=HIDDEN, vocab=512, heads=4):
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(LlamaBlock(d, heads) for _ in range(n))
            self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)
            hd = d // heads
            self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd)))

        def forward(self, ids):
            t = torch.arange(ids.shape[1], dtype=torch.float32)
            freqs = torch.outer(t, self.inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos(), emb.sin()
            x = self.embed(ids)
            for layer in self.layers:
                x = layer(x, cos, sin)
            return self.head(self.norm(x))

    class ViT(nn.Module):
        def __init__(self, n, d=HIDDEN, patch=4, image=32, classes=10):
            super().__init__()
            self.patch = nn.Conv2d(3, d, patch, patch)
            self.cls = nn.Parameter(torch.zeros(1, 1, d))
            self.pos = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, d))
            self.blocks = nn.ModuleList(GPT2Block(d, causal=False) for _ in range(n))
            self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

        def forward(self, img):
            x = self.patch(img).flatten(2).transpose(1, 2)
            x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), dim=1) + self.pos
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x)[:, 0])

    @mark
    class BasicBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            return F.relu(x + self.bn2(self.conv2(y)))

    class ResNet(nn.Module):
        def __init__(self, n, c=64, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
            self.stage = nn.Sequential(*(BasicBlock(c) for _ in range(n)))
            self.fc = nn.Linear(c, classes)

        def forward(self, x):
            x = self.stage(self.stem(x))
            return self.fc(x.mean((2, 3)))

    def tvresnet(n):
        from torchvision.models import resnet
        if n % 4:
            raise ValueError(f"tvresnet: {n} blocks is not a multiple of 4 (4 stages)")
        if marked and not getattr(resnet.BasicBlock, "_marked", False):
            resnet.BasicBlock.forward = torch.compiler.nested_compile_region(resnet.BasicBlock.forward)
            resnet.BasicBlock._marked = True
        return resnet.ResNet(resnet.BasicBlock, [n // 4] * 4, num_classes=10)

    def ids(vocab=512):
        return lambda: (torch.randint(0, vocab, (2, 64)),)

    return {
        "gpt2": (GPT2, ids()),
        "llama": (Llama, ids()),
        "vit": (ViT, lambda: (torch.randn(2, 3, 32, 32),)),
        "resnet": (ResNet, lambda: (torch.randn(2, 3, 16, 16),)),
        "tvresnet": (tvresnet, lambda: (torch.randn(2, 3, 32, 32),)),
    }


# --- one measurement (a child process) --------------------------------------

def child(model: str, depth: int, compiler: str, iters: int) -> dict:
    import torch
    torch.manual_seed(0)
    cls, make_inputs = _models(marked=compiler == "torch.compile+ncr")[model]
    m = cls(depth).eval()
    inputs = make_inputs()
    with torch.no_grad():
        for _ in range(3):
            ref = m(*inputs)
        eager = _median_time(lambda: m(*inputs), iters)
        if compiler.startswith("armature"):
            import armature
            armature.config.set(regions="auto" if compiler == "armature+regions" else "off")
            cm = armature.compile(m, backend="inductor")
        else:
            cm = torch.compile(m, backend="inductor")
        t0 = time.perf_counter()
        out = cm(*inputs)
        first = time.perf_counter() - t0
        for _ in range(3):
            cm(*inputs)
        steady = _median_time(lambda: cm(*inputs), iters)
    err = (out - ref).abs().max().item()
    graphs, calls = _graph_stats(compiler, cm)
    phases = {}
    if compiler.startswith("armature"):
        import armature
        es = armature.cache_entries(cm)
        phases = {"trace_s": sum(e.trace_time_s or 0 for e in es), "backend_s": sum(e.backend_time_s or 0 for e in es)}
    return {**phases, "model": model, "depth": depth, "compiler": compiler, "compile_s": first - eager,
            "steady_ratio": steady / eager, "steady_ms": steady * 1e3, "eager_ms": eager * 1e3,
            "graphs": graphs, "calls": calls, "max_err": err}


def _median_time(fn, n: int) -> float:
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _graph_stats(compiler: str, cm) -> tuple[int, int]:
    if compiler.startswith("armature"):
        import armature
        gms = [e.graph_module for e in armature.cache_entries(cm) if e.graph_module is not None]
        return len(gms), sum(str(gm.code).count("invoke_subgraph(") for gm in gms)
    from torch._dynamo.utils import counters
    calls = counters["stats"].get("invoke_subgraph_calls", None)
    return int(counters["stats"]["unique_graphs"]), (-1 if calls is None else calls)


def steady(model: str, depth: int, rounds: int, threads: int, options: dict | None = None,
           regions: str = "auto", channels: int | None = None) -> dict:
    """Steady-state speed in one process: armature without and with
    regions and torch.compile, compiled once each, then timed in
    interleaved rounds (each round calls every variant ``--iters``-free
    10 times), so that load on a shared machine hits all variants alike."""
    import torch
    import armature
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cls, make_inputs = _models(marked=False)[model]
    m = (cls(depth) if channels is None else cls(depth, c=channels)).eval()
    inputs = make_inputs()
    variants = {}
    with torch.no_grad():
        for name, setting in (("armature", "off"), ("armature+regions", regions)):
            armature.config.set(regions=setting)
            variants[name] = armature.compile(m, backend="inductor", options=options)
            variants[name](*inputs)
        armature.config.set(regions="auto")
        variants["torch.compile"] = torch.compile(m, backend="inductor", options=options)
        variants["torch.compile"](*inputs)
        variants["eager"] = m
        times = {k: [] for k in variants}
        for _ in range(rounds):
            for name, fn in variants.items():
                t0 = time.perf_counter()
                for _ in range(10):
                    fn(*inputs)
                times[name].append((time.perf_counter() - t0) / 10)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    return {"model": model, "depth": depth, "threads": threads, "options": options, "regions": regions,
            "channels": channels,
            "median_ms": med,
            "regions/armature": med["armature+regions"] / med["armature"],
            "regions/torch.compile": med["armature+regions"] / med["torch.compile"],
            "paired regions/armature": _paired(times["armature+regions"], times["armature"]),
            "paired regions/torch.compile": _paired(times["armature+regions"], times["torch.compile"]),
            "load": os.getloadavg()[0]}


def _paired(a: list, b: list) -> dict:
    """The ratios of two variants' times round by round (the same round ran
    both, back to back): their median and quartiles.  A machine whose speed
    drifts during a run (a shared host) moves both times of a round alike,
    so these vary less from run to run than the ratio of the two medians."""
    r = sorted(x / y for x, y in zip(a, b))
    return {"median": statistics.median(r), "q1": r[len(r) // 4], "q3": r[(3 * len(r)) // 4]}


def _warm_up() -> None:
    """One throw-away measurement before the first counted one.  In a fresh
    clone or venv the first child process otherwise pays one-time costs of
    the checkout inside its timed first call: writing armature's ``.pyc``
    files, and reading torch's C++ headers and libraries from disk into the
    page cache for inductor's first C++ builds (GPT-2, 12 blocks, regions: 19.1
    s for the first child of a fresh clone, 12-14 s after)."""
    r = run_child("gpt2", 2, "armature+regions", 3)
    print(f"# warm-up child (not counted): {r.get('compile_s', r.get('error', '?'))}", flush=True)


def run_child(model: str, depth: int, compiler: str, iters: int, env: dict | None = None) -> dict:
    """One measurement in a fresh process with an empty inductor cache (FX
    graph and autograd caches off); ``env``: more environment for it."""
    with tempfile.TemporaryDirectory(prefix="regions-bench-") as cache:
        env = dict(os.environ, **(env or {}), TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_FX_GRAPH_CACHE="0",
                   TORCHINDUCTOR_AUTOGRAD_CACHE="0")
        cmd = [sys.executable, __file__, "--child", model, str(depth), compiler, str(iters)]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        return {"model": model, "depth": depth, "compiler": compiler, "error": p.stderr[-2000:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


# --- the table ------------------------------------------------------------------

def table(results: list[dict], compilers: list[str]) -> str:
    rows = {}
    for r in results:
        rows.setdefault((r["model"], r["depth"]), {}).setdefault(r["compiler"], []).append(r)
    head = ["model", "blocks"] + [f"{c} compile s" for c in compilers] + \
        ["regions / torch.compile", "regions / armature", "steady regions / armature", "steady regions / torch.compile",
         f"graphs ({', '.join(compilers)})", "subgraph calls (arm+reg)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (model, depth), per in rows.items():
        def med(c, key):
            vals = [r[key] for r in per.get(c, []) if key in r]
            return statistics.median(vals) if vals else None
        def fmt(v, spec=".1f"):   # ("-": that compiler was not run or failed; its error is in the JSON)
            return "-" if v is None else format(v, spec)
        comp = {c: med(c, "compile_s") for c in compilers}
        ratio = lambda a, b: None if a is None or b is None else a / b   # noqa: E731
        cells = [model, str(depth)] + [fmt(comp[c]) for c in compilers] + [
            fmt(ratio(comp.get("armature+regions"), comp.get("torch.compile")), ".2f"),
            fmt(ratio(comp.get("armature+regions"), comp.get("armature")), ".2f"),
            fmt(ratio(med("armature+regions", "steady_ms"), med("armature", "steady_ms")), ".2f"),
            fmt(ratio(med("armature+regions", "steady_ms"), med("torch.compile", "steady_ms")), ".2f"),
            ", ".join(fmt(med(c, "graphs"), ".0f") for c in compilers),
            fmt(med("armature+regions", "calls"), ".0f")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=4, metavar=("MODEL", "DEPTH", "COMPILER", "ITERS"))
    ap.add_argument("--models", default="gpt2,llama,vit,resnet,tvresnet")
    ap.add_argument("--depths", default="2,12,24")
    ap.add_argument("--compilers", default=",".join(COMPILERS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--no-warmup", action="store_true",
                    help="skip the throw-away first child (see _warm_up)")
    ap.add_argument("--steady", action="store_true",
                    help="steady-state speed only: the variants in one process, interleaved rounds")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--channels", type=int,
                    help="--steady, --models resnet: the blocks' channels (64 by default); wider blocks have "
                         "larger convolution weights (graph/region_layouts.py merges up to 1 MiB each)")
    ap.add_argument("--regions", default="auto", choices=("auto", "always"),
                    help="--steady: armature's regions setting for the armature+regions variant")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="--steady: an inductor option for every compiled variant (a Python literal), "
                         "e.g. layout_optimization=False")
    a = ap.parse_args(argv)
    if a.steady:
        options = {k: ast.literal_eval(v) for k, v in (o.split("=", 1) for o in a.option)} or None
        for model in a.models.split(","):
            for depth in (int(d) for d in a.depths.split(",")):
                with tempfile.TemporaryDirectory(prefix="regions-bench-") as cache:
                    os.environ.update(TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_FX_GRAPH_CACHE="0")
                    r = steady(model, depth, a.rounds, a.threads, options, a.regions, a.channels)
                    print(json.dumps(r), flush=True)
        return
    if a.child:
        model, depth, compiler, iters = a.child
        print(json.dumps(child(model, int(depth), compiler, int(iters))))
        return
    compilers = a.compilers.split(",")
    results = []
    if not a.no_warmup:
        _warm_up()
    print(f"# load average at start: {os.getloadavg()}, {os.cpu_count()} cpus", flush=True)
    for model in a.models.split(","):
        for depth in (int(d) for d in a.depths.split(",")):
            if model == "tvresnet" and depth % 4:
                print(f"# tvresnet {depth}: not a multiple of 4 blocks (4 stages), skipped", flush=True)
                continue
            for rep in range(a.reps):
                order = compilers if rep % 2 == 0 else list(reversed(compilers))
                for compiler in order:
                    r = run_child(model, depth, compiler, a.iters)
                    r["load"] = os.getloadavg()[0]
                    results.append(r)
                    print(json.dumps(r)[:300], flush=True)
                    if a.json:
                        with open(a.json, "w") as f:
                            json.dump(results, f, indent=1)
    print(f"# load average at end: {os.getloadavg()}")
    print(table(results, compilers))


if __name__ == "__main__":
    main()
