#!/usr/bin/env python
"""armature vs torch.compile on a GPU: compile time, time per call, kernel
or CUDA-graph launches per call, correctness against eager.

Workloads (random weights, built from transformers configs / torchvision; no
network): ``gpt2_decode`` (4-layer GPT-2, 1x16 tokens, fp32) in the default
mode and ``gpt2_decode_ro`` with ``mode="reduce-overhead"`` (CUDA graphs),
``gpt2_small`` (8x512, bf16), ``resnet50`` (32x224, bf16, channels_last),
``llama8`` (LLaMA-style, 8 layers, hidden 2048, 4x512, bf16) and
``gpt2_train`` (GPT-2 small training step, forward + loss + backward, bf16,
4x512, dropout off so eager and compiled compute the same thing).
``toy_mlp`` (pure torch) always runs on ``--device cpu``: the dry run that
tests/test_gpu_bench_smoke.py does here, where transformers / torchvision
are absent (those workloads are skipped with a note).

Measured per workload:

* ``compile s``   first compiled call minus one eager call, each compiler in
                  its own subprocess with its own fresh inductor cache
                  (``TORCHINDUCTOR_CACHE_DIR``) and the FX-graph and
                  AOTAutograd caches off for both (``--budget-s`` bounds the
                  whole run: compile children that would start after it are
                  skipped with a note);
* ``ms / call``   median over interleaved rounds (eager, armature,
                  torch.compile, in rotating order) of a round's time per
                  call, ``torch.cuda.synchronize()`` around each round, in
                  one process, after warm-up (CUDA graphs recorded);
* ``launches``    kernel launches (``cudaLaunchKernel`` / ``cuLaunchKernel``
                  ...) and CUDA-graph launches (``cudaGraphLaunch``) per
                  call, counted with torch.profiler;
* ``correct``     outputs (training: loss and every gradient) against eager:
                  max |compiled - eager| / max |eager| within 1e-3 (fp32) or
                  3e-2 (bf16).

Writes ``gpu.md`` and ``gpu.json`` into ``--out`` after every workload (a
run cut short keeps what it finished).

Usage:  python benchmarks/gpu.py --out DIR [--quick] [--only a,b] [--device cuda|cpu]
        [--backend inductor] [--budget-s 300] [--no-compile-time]
(``./dev suite --device cuda`` calls it.)
"""
from __future__ import annotations

import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import sys

# The caches are off for every process of the run (the children inherit it);
# set before torch is imported.
os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import datetime as _dt  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any, Callable  # noqa: E402

import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.path.join(ROOT, "src") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "src"))

import armature  # noqa: E402

COMPILERS = ("armature", "torch")
KERNEL_LAUNCH_NAMES = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx",
                       "cudaLaunchCooperativeKernel")
GRAPH_LAUNCH_NAMES = ("cudaGraphLaunch",)


# ====================================================================== workloads


@dataclass
class Workload:
    name: str
    what: str
    needs: tuple[str, ...]          # importable modules it needs
    build: Callable[[str, bool], "Built"]   # (device, tiny) -> Built
    mode: str | None = None         # torch.compile / armature.compile mode
    train: bool = False
    dtype: torch.dtype = torch.float32


@dataclass
class Built:
    model: torch.nn.Module
    call: Callable[[Callable], Any]    # call(model_or_compiled) -> outputs (tensors)


def _seeded():
    torch.manual_seed(0)


def _gpt2(layers: int, batch: int, seq: int, dtype, train: bool):
    def build(device: str, tiny: bool) -> Built:
        from transformers import GPT2Config, GPT2LMHeadModel
        kw = dict(n_layer=layers)
        if tiny:
            kw = dict(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64)
        if train:
            kw.update(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        _seeded()
        model = GPT2LMHeadModel(GPT2Config(**kw)).to(device=device, dtype=dtype)
        model.train(train)
        b, s = (2, 8) if tiny else (batch, seq)
        ids = torch.randint(0, model.config.vocab_size, (b, s), device=device)
        if train:
            def call(m):
                loss = m(input_ids=ids, labels=ids, use_cache=False).loss
                loss.backward()
                return loss.detach()
        else:
            def call(m):
                with torch.no_grad():
                    return m(input_ids=ids, use_cache=False).logits
        return Built(model, call)
    return build


def _llama(device: str, tiny: bool) -> Built:
    from transformers import LlamaConfig, LlamaForCausalLM
    if tiny:
        cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=4, vocab_size=256, max_position_embeddings=64)
    else:
        cfg = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=16,
                          num_key_value_heads=16, vocab_size=32000, max_position_embeddings=2048)
    _seeded()
    model = LlamaForCausalLM(cfg).to(device=device, dtype=torch.bfloat16).eval()
    b, s = (2, 8) if tiny else (4, 512)
    ids = torch.randint(0, cfg.vocab_size, (b, s), device=device)

    def call(m):
        with torch.no_grad():
            return m(input_ids=ids, use_cache=False).logits
    return Built(model, call)


def _resnet50(device: str, tiny: bool) -> Built:
    import torchvision
    _seeded()
    model = torchvision.models.resnet50(weights=None)
    model = model.to(device=device, dtype=torch.bfloat16, memory_format=torch.channels_last).eval()
    shape = (2, 3, 64, 64) if tiny else (32, 3, 224, 224)
    x = torch.randn(shape, device=device, dtype=torch.bfloat16).to(memory_format=torch.channels_last)

    def call(m):
        with torch.no_grad():
            return m(x)
    return Built(model, call)


def _toy(device: str, tiny: bool) -> Built:
    _seeded()
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64),
                                torch.nn.LayerNorm(64)).to(device).eval()
    x = torch.randn(4, 16, 64, device=device)

    def call(m):
        with torch.no_grad():
            return m(x)
    return Built(model, call)


WORKLOADS = [
    Workload("gpt2_decode", "GPT-2 4 layers, 1x16, fp32", ("transformers",), _gpt2(4, 1, 16, torch.float32, False)),
    Workload("gpt2_decode_ro", "GPT-2 4 layers, 1x16, fp32, reduce-overhead", ("transformers",),
             _gpt2(4, 1, 16, torch.float32, False), mode="reduce-overhead"),
    Workload("gpt2_small", "GPT-2 small, 8x512, bf16", ("transformers",), _gpt2(12, 8, 512, torch.bfloat16, False),
             dtype=torch.bfloat16),
    Workload("llama8", "LLaMA-style 8 layers, hidden 2048, 4x512, bf16", ("transformers",), _llama,
             dtype=torch.bfloat16),
    Workload("resnet50", "ResNet-50, 32x224, bf16, channels_last", ("torchvision",), _resnet50,
             dtype=torch.bfloat16),
    Workload("gpt2_train", "GPT-2 small training step, 4x512, bf16", ("transformers",),
             _gpt2(12, 4, 512, torch.bfloat16, True), train=True, dtype=torch.bfloat16),
    Workload("toy_mlp", "pure-torch MLP, 4x16x64, fp32 (the CPU dry run)", (), _toy),
]
BY_NAME = {w.name: w for w in WORKLOADS}
CUDA_DEFAULT = [w.name for w in WORKLOADS if w.name != "toy_mlp"]


def _importable(mod: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(mod) is not None


# ====================================================================== helpers


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def compile_model(compiler: str, model, backend: str, mode: str | None):
    kw: dict[str, Any] = {"backend": backend}
    if mode is not None and backend == "inductor":
        kw["mode"] = mode
    if compiler == "armature":
        return armature.compile(model, **kw)
    return torch.compile(model, **kw)


def reset_compilers() -> None:
    armature.reset()
    torch._dynamo.reset()


def tensors_of(obj) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in tensors_of(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in tensors_of(o)]
    return []


def snapshot(w: Workload, built: Built, fn) -> list[torch.Tensor]:
    """One call's results, cloned (a CUDA-graph replay overwrites its outputs
    on the next one); training: the loss and every gradient."""
    if w.train:
        built.model.zero_grad(set_to_none=True)
    out = [t.detach().clone() for t in tensors_of(fn())]
    if w.train:
        out += [p.grad.detach().clone() for p in built.model.parameters() if p.grad is not None]
    return out


def rel_error(got: list[torch.Tensor], ref: list[torch.Tensor]) -> float:
    if len(got) != len(ref):
        return float("inf")
    worst = 0.0
    for g, r in zip(got, ref):
        if g.shape != r.shape:
            return float("inf")
        g, r = g.float(), r.float()
        denom = r.abs().max().item() or 1.0
        worst = max(worst, (g - r).abs().max().item() / denom)
    return worst


def tolerance(w: Workload) -> float:
    """Worst error per tensor, relative to the tensor's largest value.  A
    bf16 training step compares every gradient after a backward through the
    whole model: on an H200 both compilers' gradients differed from eager's
    by 3.2e-02 (the same for both: reassociated bf16 sums), so training
    gets a wider bound than inference."""
    if w.dtype in (torch.bfloat16, torch.float16):
        return 6e-2 if w.train else 3e-2
    return 1e-3


def count_launches(fn: Callable, device: str, calls: int) -> dict | None:
    if not device.startswith("cuda"):
        return None
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        sync(device)
    kernels = graphs = 0
    names: dict[str, int] = {}
    for ev in prof.events():
        name = ev.name
        if "Launch" in name and name.startswith("cu"):
            names[name] = names.get(name, 0) + 1
        if name in KERNEL_LAUNCH_NAMES or ("LaunchKernel" in name and name.startswith("cu")):
            kernels += 1
        elif name in GRAPH_LAUNCH_NAMES or ("GraphLaunch" in name and name.startswith("cu")):
            graphs += 1
    # (the raw counts of every launch-like API call, to check the names on a new CUDA)
    return {"kernels": kernels / calls, "graphs": graphs / calls, "api_calls": names}


def err_text(e: BaseException) -> str:
    lines = f"{type(e).__name__}: {e}".strip().splitlines()
    return (lines[0] if lines else type(e).__name__)[:300]


# ====================================================================== compile-time child


def child_compile(opts) -> int:
    """One compiler's first call of one workload (own process, own cache)."""
    w = BY_NAME[opts.workload]
    device = opts.device
    built = w.build(device, opts.tiny)
    model = built.model
    eager = lambda: built.call(model)  # noqa: E731
    for _ in range(2):                  # CUDA context, cuBLAS handles, allocator
        snapshot(w, built, eager)
    sync(device)
    t0 = time.perf_counter()
    snapshot(w, built, eager)
    sync(device)
    eager_s = time.perf_counter() - t0
    compiled = compile_model(opts.compiler, model, opts.backend, w.mode)
    t0 = time.perf_counter()
    snapshot(w, built, lambda: built.call(compiled))
    sync(device)
    first = time.perf_counter() - t0
    print("RESULT " + json.dumps({"compile_s": max(first - eager_s, 0.0), "first_call_s": first}), flush=True)
    return 0


def measure_compile(w: Workload, compiler: str, opts, deadline: float) -> dict:
    if time.monotonic() > deadline:
        return {"error": "skipped: --budget-s reached"}
    cache = tempfile.mkdtemp(prefix=f"gpu-bench-{w.name}-{compiler}-")
    env = dict(os.environ)
    env.update(TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0",
               TRITON_CACHE_DIR=os.path.join(cache, "triton"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "src"), env.get("PYTHONPATH")]))
    cmd = [sys.executable, os.path.abspath(__file__), "--child-compile", "--workload", w.name,
           "--compiler", compiler, "--device", opts.device, "--backend", opts.backend]
    if opts.tiny:
        cmd.append("--tiny")
    # a child may finish what it started past the budget, within a minute more
    left = None if deadline == float("inf") else max(deadline - time.monotonic(), 30.0) + 60.0
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=left, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {left:.0f} s"}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (p.stderr.strip().splitlines() or ["?"])[-1]
    return {"error": f"exit {p.returncode}: {tail[:300]}"}


# ====================================================================== per-call (one process)


def run_workload(w: Workload, opts, deadline: float) -> dict:
    row: dict[str, Any] = {"workload": w.name, "what": w.what, "mode": w.mode or "default"}
    missing = [m for m in w.needs if not _importable(m)]
    if missing:
        row["note"] = f"skipped: {', '.join(missing)} not installed"
        return row
    device = opts.device
    reset_compilers()
    built = w.build(device, opts.tiny)
    model = built.model
    fns: dict[str, Callable] = {"eager": lambda: built.call(model)}
    ref = snapshot(w, built, fns["eager"])
    tol = tolerance(w)
    for c in COMPILERS:
        r: dict[str, Any] = {}
        row[c] = r
        try:
            compiled = compile_model(c, model, opts.backend, w.mode)
            fn = (lambda compiled=compiled: built.call(compiled))
            t0 = time.perf_counter()
            got = snapshot(w, built, fn)
            sync(device)
            r["first_call_in_process_s"] = time.perf_counter() - t0
            for _ in range(opts.warmup):        # (CUDA graphs: warm-up, record, replay)
                got = snapshot(w, built, fn)
            err = rel_error(got, ref)
            r["rel_error"] = err
            r["correct"] = err <= tol
            fns[c] = fn
        except Exception as e:  # noqa: BLE001  (recorded in the table; the run goes on)
            r["error"] = err_text(e)
            if opts.verbose:
                traceback.print_exc()
    if w.train:
        for c in list(fns):
            inner = fns[c]
            fns[c] = (lambda inner=inner: (model.zero_grad(set_to_none=True), inner())[1])
    # interleaved rounds, rotating order
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    for i in range(opts.rounds):
        order = names[i % len(names):] + names[:i % len(names)]
        for n in order:
            fn = fns[n]
            sync(device)
            t0 = time.perf_counter()
            for _ in range(opts.calls):
                out = fn()
            sync(device)
            times[n].append((time.perf_counter() - t0) / opts.calls)
            del out
    medians = {n: statistics.median(v) * 1e3 for n, v in times.items()}
    row["eager_ms"] = medians.get("eager")
    for c in COMPILERS:
        if c in medians:
            row[c]["ms"] = medians[c]
            row[c]["speedup"] = medians["eager"] / medians[c] if medians[c] else None
    for n in names:
        try:
            launches = count_launches(fns[n], device, 3)
        except Exception as e:  # noqa: BLE001
            launches = {"error": err_text(e)}
        if n in COMPILERS:
            row[n]["launches"] = launches
        else:
            row["eager_launches"] = launches
    if w.mode == "reduce-overhead" and device.startswith("cuda"):
        row["cudagraph_replay_expected"] = True
    del fns, built, model
    reset_compilers()
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    if not opts.no_compile_time:
        for c in COMPILERS:
            row[c]["compile"] = measure_compile(w, c, opts, deadline)
    return row


# ====================================================================== output


def _f(v, fmt="{:.3f}") -> str:
    return "-" if v is None else fmt.format(v)


def _launch_text(launches) -> str:
    if not launches:
        return "n/a"
    if "error" in launches:
        return "error"
    return f"{launches['kernels']:.0f} k / {launches['graphs']:.0f} g"


def markdown(rows: list[dict], env: dict) -> str:
    lines = [f"# armature vs torch.compile on {env.get('gpu') or env['device']}", "",
             f"{env['date']}; torch {env['torch']}, Python {env['python']}, backend {env['backend']}"
             f"{', quick' if env['quick'] else ''}; per call: median of {env['rounds']} interleaved rounds "
             f"of {env['calls']} calls; launches: kernel (k) / CUDA-graph (g) launches per call.", "",
             "| workload | mode | eager ms | armature ms | torch ms | arm/tc | armature launches | torch launches "
             "| correct (arm / tc) | compile s (arm / tc) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "note" in r:
            lines.append(f"| {r['workload']} | {r['mode']} | {r['note']} |||||||")
            continue
        a, t = r.get("armature", {}), r.get("torch", {})
        ratio = a["ms"] / t["ms"] if a.get("ms") and t.get("ms") else None

        def corr(x):
            if "error" in x:
                return "error: " + x["error"][:80].replace("|", "/")
            return ("yes" if x.get("correct") else "NO") + f" ({x.get('rel_error', 0):.1e})"

        def comp(x):
            c = x.get("compile")
            if c is not None and "error" not in c:
                return f"{c['compile_s']:.1f}"
            # no cold-cache child: the first call in the timing process (its
            # caches were cold too, but the other compiler had run before)
            warm = x.get("first_call_in_process_s")
            text = f"({warm:.1f} in-process)" if warm is not None else "-"
            return text if c is None else f"{text} {c['error'][:40]}".replace("|", "/")
        lines.append(f"| {r['workload']} | {r['mode']} | {_f(r.get('eager_ms'))} | {_f(a.get('ms'))} | "
                     f"{_f(t.get('ms'))} | {_f(ratio, '{:.2f}')} | {_launch_text(a.get('launches'))} | "
                     f"{_launch_text(t.get('launches'))} | {corr(a)} / {corr(t)} | {comp(a)} / {comp(t)} |")
    return "\n".join(lines) + "\n"


def environment(opts) -> dict:
    env = {"date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"), "torch": torch.__version__,
           "python": platform.python_version(), "device": opts.device, "backend": opts.backend,
           "quick": opts.quick, "rounds": opts.rounds, "calls": opts.calls, "tiny": opts.tiny}
    if opts.device.startswith("cuda") and torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name()
        env["cuda"] = torch.version.cuda
    for mod in ("transformers", "torchvision"):
        with contextlib.suppress(Exception):
            env[mod] = __import__(mod).__version__
    return env


def write(out_dir: str, rows: list[dict], env: dict) -> str:
    os.makedirs(out_dir, exist_ok=True)
    md = markdown(rows, env)
    with open(os.path.join(out_dir, "gpu.md"), "w") as f:
        f.write(md)
    with open(os.path.join(out_dir, "gpu.json"), "w") as f:
        json.dump({"env": env, "rows": rows}, f, indent=1, default=repr)
    return md


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="directory for gpu.md and gpu.json (default: $OUT or .)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--backend", default="inductor")
    ap.add_argument("--quick", action="store_true", help="fewer rounds and calls")
    ap.add_argument("--tiny", action="store_true", help="tiny model configs (implied by --device cpu)")
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--calls", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=None,
                    help="no compile-time child starts after this many seconds")
    ap.add_argument("--no-compile-time", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--child-compile", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--compiler", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    warnings.filterwarnings("ignore", category=UserWarning)
    if opts.device == "cpu":
        opts.tiny = True
        torch.set_num_threads(1)    # (a small shared machine: steadier timings)
    if opts.child_compile:
        return child_compile(opts)
    if opts.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu.py: --device cuda but torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    opts.rounds = opts.rounds or (5 if opts.quick else 15)
    opts.calls = opts.calls or (5 if opts.quick else 20)
    names = opts.only.split(",") if opts.only else (CUDA_DEFAULT if opts.device.startswith("cuda")
                                                    else [w.name for w in WORKLOADS])
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        print(f"gpu.py: unknown workload(s) {unknown}; known: {', '.join(BY_NAME)}", file=sys.stderr)
        return 2
    out_dir = opts.out or os.environ.get("OUT") or "."
    start = time.monotonic()
    deadline = start + (opts.budget_s if opts.budget_s is not None else float("inf"))
    env = environment(opts)
    rows: list[dict] = []
    for name in names:
        t0 = time.monotonic()
        try:
            row = run_workload(BY_NAME[name], opts, deadline)
        except Exception as e:  # noqa: BLE001
            row = {"workload": name, "mode": BY_NAME[name].mode or "default", "note": "failed: " + err_text(e)}
            if opts.verbose:
                traceback.print_exc()
        row["wall_s"] = time.monotonic() - t0
        rows.append(row)
        write(out_dir, rows, env)
        print(f"[gpu.py] {name}: {row['wall_s']:.0f} s (total {time.monotonic() - start:.0f} s)", flush=True)
    md = write(out_dir, rows, env)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
