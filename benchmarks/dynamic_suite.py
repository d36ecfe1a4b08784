#!/usr/bin/env python
"""armature vs torch.compile on workloads whose sizes vary from call to call.

Each workload is a model or function and a list of inputs of different sizes
(batch sizes, sequence lengths, image resolutions, Python ints), called in
order, each size once, then over and over.  Both compilers use their default
policy (``dynamic=None``: a size that changed becomes symbolic in the
recompile); rows marked ``dynamic=True`` compile with symbolic sizes from the
first call.  The backend of both is a counting wrapper around the eager
backend, so compile time is the frontend's.

Workloads: ``mlp`` (nn.Sequential of Linear / ReLU / LayerNorm, batch sizes
1..20; size 1 specialises in both systems), ``block`` (a transformer block,
attention by ``F.scaled_dot_product_attention``, sequence lengths 8, 9, ...,
27 as in generation), ``gpt2`` (transformers, tiny config of
tests/models/zoo.py, 6 sequence lengths), ``bert`` (5 batch x length shapes),
``resnet18`` (torchvision, 4 image resolutions) and ``ints`` (a function of
a tensor and Python ints: ``x.view(n, -1)[:k]``).  The model workloads are
skipped with a note when their package is not installed.

Per workload and compiler:

* ``correct``        every call's output equals eager's (first pass over the
                     sizes and the last timed cycle);
* ``compiles``       backend compilations over all calls (every frame);
* ``entries``        cache entries of the compiled root code after all calls;
* ``compile ms``     the time of the first pass over all sizes (each size
                     called once, in order, from empty caches) minus the time
                     eager takes for one pass (its steady-state per-call median
                     x the number of sizes); the fastest of 3 passes from empty
                     caches per compiler, alternating which compiler goes first
                     (after a warm-up of both frontends, static and dynamic);
* ``overhead µs``    per call on cached calls after all sizes were seen:
                     the median over interleaved rounds (each one pass over
                     all sizes per variant) of compiled - eager per-call
                     time in the same round; and the ratios armature /
                     torch.compile.

The run checks the targets "never more compiles than torch.compile" and
"cached-call overhead no more than torch.compile's" and lists every miss
under "Targets missed", with the recompile reasons of both compilers.

Usage:  ./dev suite --dynamic [--quick] [--only NAME[,NAME...]] [--json PATH] [--md PATH]
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import statistics
import sys
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import suite as S  # noqa: E402  (adds src/ when armature is not installed, and tests/models)

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import armature  # noqa: E402
from armature.backends import lookup_backend as arm_lookup_backend  # noqa: E402
from armature.runtime import cache as arm_cache  # noqa: E402

DEFAULT_JSON = os.path.join(HERE, "results", "dynamic_suite.json")
DEFAULT_MD = os.path.join(HERE, "results", "dynamic_suite.md")
COMPILERS = S.COMPILERS


# ====================================================================== workloads


@dataclass
class Built:
    fn: Callable                      # what gets compiled (a module or a function)
    inputs: list                      # [(args, kwargs)], one per size, in call order
    codes: tuple                      # root code objects (torch.compile cache entries)


@dataclass
class DynWorkload:
    name: str
    build: Callable[[], Built]
    sizes: str                        # the sizes, as the table shows them
    dynamic: bool | None = None
    needs: str | None = None          # package the workload needs
    round_factor: int = 1             # timing rounds (one pass over all sizes each) per --rounds
    tol: float = 1e-4


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def build_mlp(batches) -> Built:
    torch.manual_seed(0)
    nn = torch.nn
    m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.LayerNorm(64),
                      nn.Linear(64, 64), nn.ReLU(), nn.LayerNorm(64), nn.Linear(64, 16)).eval()
    g = _gen(1)
    return Built(m, [((torch.randn(b, 32, generator=g),), {}) for b in batches], S._module_codes(m))


class Block(torch.nn.Module):
    """A pre-norm transformer block: causal self-attention and an MLP."""

    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.ln2 = torch.nn.LayerNorm(dim)
        self.fc1 = torch.nn.Linear(dim, 4 * dim)
        self.fc2 = torch.nn.Linear(4 * dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def build_block(lengths) -> Built:
    torch.manual_seed(0)
    m = Block().eval()
    g = _gen(1)
    return Built(m, [((torch.randn(2, t, 32, generator=g),), {}) for t in lengths], S._module_codes(m))


def build_gpt2(lengths) -> Built:
    from zoo import hf_gpt2
    m = hf_gpt2().model.eval()
    g = _gen(1)
    return Built(m, [((torch.randint(0, 128, (2, t), generator=g),), {}) for t in lengths], S._module_codes(m))


def build_bert(shapes) -> Built:
    from zoo import hf_bert
    m = hf_bert().model.eval()
    g = _gen(1)
    inputs = []
    for b, t in shapes:
        ids = torch.randint(0, 128, (b, t), generator=g)
        mask = torch.ones_like(ids)
        mask[1, -2:] = 0  # one padded sequence: the mask matters
        inputs.append(((ids,), {"attention_mask": mask}))
    return Built(m, inputs, S._module_codes(m))


def build_resnet18(resolutions) -> Built:
    import torchvision
    torch.manual_seed(0)
    m = torchvision.models.resnet18(weights=None, num_classes=10).eval()
    g = _gen(1)
    return Built(m, [((torch.randn(2, 3, r, r, generator=g),), {}) for r in resolutions], S._module_codes(m))


def view_slice(x, n, k):
    y = x.view(n, -1)
    z = y[:k]
    return z * 2 + z.sum(1, keepdim=True), z.shape[0] + n


def build_ints(ns) -> Built:
    g = _gen(1)
    # n rows of 6, keep the first k = n - 2 (k >= 2: 0 and 1 specialise in both systems)
    return Built(view_slice, [((torch.randn(n * 6, generator=g), n, n - 2), {}) for n in ns],
                 (view_slice.__code__,))


MLP_BATCHES = list(range(1, 21))
BLOCK_LENGTHS = list(range(8, 28))
GPT2_LENGTHS = [8, 10, 13, 17, 24, 32]
BERT_SHAPES = [(2, 8), (3, 12), (4, 16), (2, 24), (5, 10)]
RESNET_RESOLUTIONS = [56, 64, 80, 96]
INT_NS = list(range(4, 14))


def workloads() -> list[DynWorkload]:
    def span(v):
        return f"{v[0]}..{v[-1]}" if v == list(range(v[0], v[-1] + 1)) else ", ".join(map(str, v))
    base = [
        DynWorkload("mlp", lambda: build_mlp(MLP_BATCHES), f"batch {span(MLP_BATCHES)}", round_factor=10),
        DynWorkload("block", lambda: build_block(BLOCK_LENGTHS), f"seq {span(BLOCK_LENGTHS)}", round_factor=5),
        DynWorkload("gpt2", lambda: build_gpt2(GPT2_LENGTHS), f"seq {span(GPT2_LENGTHS)}", needs="transformers",
                    round_factor=2),
        DynWorkload("bert", lambda: build_bert(BERT_SHAPES),
                    "batch x seq " + ", ".join(f"{b}x{t}" for b, t in BERT_SHAPES), needs="transformers",
                    round_factor=2),
        DynWorkload("resnet18", lambda: build_resnet18(RESNET_RESOLUTIONS),
                    "image " + ", ".join(map(str, RESNET_RESOLUTIONS)), needs="torchvision"),
        DynWorkload("ints", lambda: build_ints(INT_NS), f"n {span(INT_NS)}, k = n-2", round_factor=20),
    ]
    variants = [DynWorkload(f"{w.name} (dynamic=True)", w.build, w.sizes, dynamic=True, needs=w.needs,
                            round_factor=w.round_factor, tol=w.tol)
                for w in base if w.name in ("mlp", "block", "gpt2", "ints")]
    order = ["mlp", "mlp (dynamic=True)", "block", "block (dynamic=True)", "gpt2", "gpt2 (dynamic=True)",
             "bert", "resnet18", "ints", "ints (dynamic=True)"]
    by_name = {w.name: w for w in base + variants}
    return [by_name[n] for n in order]


# ====================================================================== measuring


class _RecompileLog(logging.Handler):
    """Keeps torch._dynamo's recompile messages (the guards that failed)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record):
        with contextlib.suppress(Exception):
            self.messages.append(record.getMessage())


@contextlib.contextmanager
def dynamo_recompile_reasons():
    log = logging.getLogger("torch._dynamo.guards.__recompiles")
    handler = _RecompileLog()
    torch._logging.set_logs(recompiles=True)
    log.addHandler(handler)
    old = log.propagate
    log.propagate = False
    try:
        yield handler.messages
    finally:
        log.removeHandler(handler)
        log.propagate = old
        torch._logging.set_logs()


def _backend(compiler: str, stats: dict):
    base = arm_lookup_backend("eager") if compiler == "armature" else S.dynamo_eager_backend()
    return S.counting_backend(base, stats)


def _compile(compiler: str, fn, backend, dynamic):
    if compiler == "armature":
        return armature.compile(fn, backend=backend, dynamic=dynamic)
    return torch.compile(fn, backend=backend, dynamic=dynamic)


def _reset(compiler: str) -> None:
    if compiler == "armature":
        armature.reset()
    else:
        torch._dynamo.reset()


def first_pass(fn, inputs) -> tuple[list, list[float]]:
    """Call ``fn`` once per input, in order; outputs and per-call times."""
    outs, times = [], []
    pc = time.perf_counter
    for args, kwargs in inputs:
        t0 = pc()
        outs.append(fn(*args, **kwargs))
        times.append(pc() - t0)
    return outs, times


def run_compiler(compiler: str, w: DynWorkload, b: Built, eager_outs: list) -> dict:
    res: dict = {"error": None, "correct": None, "compiles": None, "entries": None, "first_pass_s": None,
                 "mismatch": None, "compiles_per_call": None, "recompile_reasons": []}
    stats = {"graphs": 0, "ops": 0}
    _reset(compiler)
    try:
        compiled = _compile(compiler, b.fn, _backend(compiler, stats), w.dynamic)
        res["fn"] = compiled
        per_call, outs, times = [], [], []
        ctx = dynamo_recompile_reasons() if compiler == "torch.compile" else contextlib.nullcontext([])
        with ctx as tc_reasons, torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for args, kwargs in b.inputs:
                before = stats["graphs"]
                o, t = first_pass(compiled, [(args, kwargs)])
                outs += o
                times += t
                per_call.append(stats["graphs"] - before)
        res["first_pass_s"] = sum(times)
        res["first_call_s"] = times
        res["compiles_per_call"] = per_call
        res["compiles"] = stats["graphs"]
        res["ops"] = stats["ops"]
        if compiler == "armature":
            root = armature.cache_entries(compiled)
            res["entries"] = len(root)
            res["fallbacks"] = [e.fallback_reason.splitlines()[0] for e in root if e.fallback_reason]
            res["shape_guards"] = [sum(1 for g in e.guards if g.kind.name == "SHAPE") for e in root]
            res["guards"] = [len(e.guards) for e in root]
            caches = [c for c in list(arm_cache._ALL) if c.entries or c.limit_hit]
            res["entries_all_frames"] = sum(len(c.entries) for c in caches)
            res["limit_hit"] = any(c.limit_hit for c in caches)
            res["recompile_reasons"] = [r for c in caches for r in c.recompile_reasons]
        else:
            res["entries"] = S.dynamo_cache_entries(b.codes)
            res["recompile_reasons"] = list(tc_reasons)
        bad = None
        for i, (o, e) in enumerate(zip(outs, eager_outs)):
            d = S.same(o, e, w.tol)
            if d:
                bad = f"call {i + 1} (size #{i}): {d}"
                break
        res["correct"] = bad is None
        res["mismatch"] = bad
    except Exception as e:  # noqa: BLE001
        res["error"] = S.err_text(e)
        res["traceback"] = traceback.format_exc()[-3000:]
        res["compiles"] = stats["graphs"]
        res["correct"] = False
        res["fn"] = None
    return res


def time_rounds(fns: dict[str, Callable], inputs: list, rounds: int) -> tuple[dict, dict]:
    """Per-call times (s) of each variant in each of ``rounds`` interleaved
    rounds (a round calls each variant once per input, the order rotating
    from round to round), and their medians.  Rounds are short (a few ms)
    on purpose: on a shared machine the load changes over longer stretches
    (here the whole process ran 2x slower for seconds at a time), so the
    overhead is taken per round, against eager's time in the same round."""
    per: dict[str, list[float]] = {v: [] for v in fns}
    pc = time.perf_counter
    n = len(inputs)
    gc.collect()
    gc_on = gc.isenabled()
    gc.disable()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            names = list(fns)
            for r in range(rounds):
                for v in names[r % len(names):] + names[:r % len(names)]:
                    fn = fns[v]
                    t0 = pc()
                    for args, kwargs in inputs:
                        fn(*args, **kwargs)
                    per[v].append((pc() - t0) / n)
    finally:
        if gc_on:
            gc.enable()
    return {v: statistics.median(per[v]) for v in fns}, per


def remeasure_compile(w: DynWorkload, b: Built, row: dict, repeats: int) -> None:
    """``repeats - 1`` more first passes per compiler from empty caches,
    alternating which compiler goes first; each keeps its fastest."""
    for r in range(1, repeats):
        order = COMPILERS if r % 2 == 0 else tuple(reversed(COMPILERS))
        for c in order:
            res = row[c]
            if res.get("error") or not res.get("correct"):
                continue
            _reset(c)
            try:
                compiled = _compile(c, b.fn, _backend(c, {"graphs": 0, "ops": 0}), w.dynamic)
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _, times = first_pass(compiled, b.inputs)
            except Exception as e:  # noqa: BLE001
                res.setdefault("remeasure_errors", []).append(S.err_text(e))
                continue
            res.setdefault("first_passes_s", [res["first_pass_s"]]).append(sum(times))
            res["first_pass_s"] = min(res["first_pass_s"], sum(times))


def run_workload(w: DynWorkload, rounds: int, repeats: int) -> dict:
    S.reset_all()
    row: dict = {"workload": w.name, "sizes": w.sizes, "dynamic": w.dynamic}
    t_start = time.perf_counter()
    try:
        b = w.build()
        row["n_sizes"] = len(b.inputs)
        with torch.no_grad():
            eager_outs, _ = first_pass(b.fn, b.inputs)
    except Exception as e:  # noqa: BLE001
        row["error"] = f"eager failed: {S.err_text(e)}"
        return row
    for c in COMPILERS:
        row[c] = run_compiler(c, w, b, eager_outs)
    fns = {"eager": b.fn}
    for c in COMPILERS:
        fn = row[c].pop("fn", None)
        if fn is not None and row[c]["correct"]:
            fns[c] = fn
    try:
        med, row["per_round_s"] = time_rounds(fns, b.inputs, rounds * w.round_factor)
    except Exception as e:  # noqa: BLE001
        row["timing_error"] = S.err_text(e)
        med = {}
    # still right after the timed calls (every entry hit at least once)
    with torch.no_grad():
        for c in COMPILERS:
            if c in fns and med.get(c) is not None:
                outs, _ = first_pass(fns[c], b.inputs)
                bad = next((f"cached call {i + 1}: {d}" for i, (o, e) in enumerate(zip(outs, eager_outs))
                            if (d := S.same(o, e, w.tol))), None)
                if bad:
                    row[c]["correct"], row[c]["mismatch"] = False, bad
    if repeats > 1:
        remeasure_compile(w, b, row, repeats)
    eager_s = med.get("eager")
    row["eager_s"] = eager_s
    n = len(b.inputs)
    per = row.get("per_round_s") or {}
    for c in COMPILERS:
        r = row[c]
        r["call_s"] = med.get(c)
        r["overhead_s"] = statistics.median(x - e for x, e in zip(per[c], per["eager"])) \
            if c in per and "eager" in per else None
        r["compile_s"] = (r["first_pass_s"] - n * eager_s) if r.get("first_pass_s") and eager_s else None
    a, t = row["armature"], row["torch.compile"]
    row["compile_ratio"] = (a["compile_s"] / t["compile_s"]) if a["compile_s"] and t["compile_s"] and \
        t["compile_s"] > 0 else None
    row["overhead_ratio"] = (a["overhead_s"] / t["overhead_s"]) if (a["overhead_s"] is not None and t["overhead_s"]
                                                                  and t["overhead_s"] > 0 and a["overhead_s"] > 0) \
        else None
    row["wall_s"] = time.perf_counter() - t_start
    return row


def warm_up_dynamic() -> None:
    """Pay torch's one-time costs of symbolic shapes (sympy, the ShapeEnv's
    caches, symbolic meta functions) for both compilers before timing."""
    torch.manual_seed(0)
    lin, ln = torch.nn.Linear(8, 8), torch.nn.LayerNorm(8)

    def f(x, n):
        h = ln(lin(x)).relu()
        q = h.view(2, -1, 2, 4).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(h.shape)
        return y[: n] + h.view(n, -1).sum(1, keepdim=True)[:1]

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in COMPILERS:
            for dynamic in (None, True):
                compiled = _compile(c, f, _backend(c, {"graphs": 0, "ops": 0}), dynamic)
                for t in (3, 4, 5):
                    compiled(torch.randn(2 * t, 8), 2 * t)
    S.reset_all()


# ====================================================================== report


def _targets(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        a, t = r.get("armature") or {}, r.get("torch.compile") or {}
        if a.get("compiles") is not None and t.get("compiles") is not None and a["compiles"] > t["compiles"]:
            out.append(f"{r['workload']}: armature compiles {a['compiles']} times, torch.compile {t['compiles']}")
        # (a negative overhead of torch.compile is below the noise of a model's call: not a target)
        if a.get("overhead_s") is not None and t.get("overhead_s") is not None and a["overhead_s"] > t["overhead_s"] \
                and t["overhead_s"] > 0:
            out.append(f"{r['workload']}: armature's cached-call overhead {a['overhead_s'] * 1e6:.1f} µs > "
                       f"torch.compile's {t['overhead_s'] * 1e6:.1f} µs")
    return out


def markdown(rows: list[dict], env: dict, notes: list[str]) -> str:
    ms = lambda s: f"{s * 1e3:.0f}"   # noqa: E731
    usf = lambda s: f"{s * 1e6:.1f}"  # noqa: E731
    ratio = lambda x: "—" if x is None else f"{x:.2f}x"  # noqa: E731
    head = ["workload", "sizes (in call order)", "correct (arm / tc)", "compiles (arm / tc)",
            "cache entries (arm / tc)", "compile ms, all sizes (arm / tc)", "compile ratio", "eager µs/call",
            "overhead µs (arm / tc)", "overhead ratio"]
    lines = S.table_header(
        "armature vs torch.compile: varying sizes", env, head,
        "Backend \"eager\" wrapped in a counting backend for both; dynamic=None unless the row says "
        "dynamic=True. compiles = backend compilations over all calls; compile ms = first pass over all "
        "sizes (each once, in order, from empty caches) minus one eager pass; overhead = median over "
        "interleaved rounds (one pass over all sizes each) of the cached per-call time minus eager's in "
        "the same round; eager µs/call = median over rounds, averaged over the sizes.")
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['workload']} | {r['sizes']} | {r['error']} |" + " |" * (len(head) - 3))
            continue
        a, t = r["armature"], r["torch.compile"]
        eager = r.get("eager_s")
        cells = [r["workload"], r["sizes"], f"{S._correct(a)} / {S._correct(t)}",
                 S._cell_pair(a.get("compiles"), t.get("compiles")),
                 S._cell_pair(a.get("entries"), t.get("entries")),
                 S._cell_pair(a.get("compile_s"), t.get("compile_s"), ms), ratio(r.get("compile_ratio")),
                 "—" if eager is None else usf(eager) if eager < 1e-3 else f"{eager * 1e3:.2f} ms",
                 S._cell_pair(a.get("overhead_s"), t.get("overhead_s"), usf), ratio(r.get("overhead_ratio"))]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    pairs = [(r["armature"].get("compile_s"), r["torch.compile"].get("compile_s")) for r in rows if "error" not in r]
    if pairs and all(a is not None and t is not None for a, t in pairs):
        ta, tt = sum(a for a, _ in pairs), sum(t for _, t in pairs)
        lines.append(f"| **total** | | | {sum(r['armature']['compiles'] for r in rows)} / "
                     f"{sum(r['torch.compile']['compiles'] for r in rows)} | | {ms(ta)} / {ms(tt)} | "
                     f"{ratio(ta / tt if tt else None)} | | | |")
    problems = []
    for r in rows:
        for c in COMPILERS:
            res = r.get(c) or {}
            if res.get("error"):
                problems.append(f"- {r['workload']} / {c}: crashed: {res['error']}")
            elif res.get("correct") is False:
                problems.append(f"- {r['workload']} / {c}: wrong: {res.get('mismatch')}")
            if c == "armature" and res.get("fallbacks"):
                problems.append(f"- {r['workload']} / armature: ran as plain Python: {res['fallbacks'][0][:200]}")
    if problems:
        lines += ["", "## Failures", ""] + problems
    missed = _targets(rows)
    lines += ["", "## Targets missed", ""] + ([f"- {m}" for m in missed] or ["none: armature never compiles more "
                                                                         "than torch.compile, and its cached-call "
                                                                         "overhead is never higher"])
    detail = []
    for r in rows:
        a, t = r.get("armature") or {}, r.get("torch.compile") or {}
        if a.get("compiles_per_call") is None:
            continue
        calls = lambda res: ",".join(map(str, res.get("compiles_per_call") or []))  # noqa: E731
        detail.append(f"- {r['workload']}: armature [{calls(a)}], torch.compile [{calls(t)}]")
    if detail:
        lines += ["", "## Compiles per call (first pass, in call order)", ""] + detail
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer timing rounds, one compile pass")
    ap.add_argument("--only", default=None, help="comma-separated workload names (e.g. mlp,'gpt2 (dynamic=True)')")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--compile-repeats", type=int, default=None,
                    help="first passes from empty caches per compiler, alternating which goes first; the "
                         "fastest counts (default 3, --quick 1)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--md", default=DEFAULT_MD)
    opts = ap.parse_args(argv)
    rounds = opts.rounds or (3 if opts.quick else 21)
    repeats = opts.compile_repeats or (1 if opts.quick else 3)
    torch.set_num_threads(opts.threads)
    warnings.filterwarnings("ignore", category=UserWarning, module="torch")
    logging.getLogger("torch._dynamo").setLevel(logging.WARNING)

    notes = [f"recompile limit: armature {armature.config.config.recompile_limit}, torch._dynamo "
             f"{getattr(torch._dynamo.config, 'recompile_limit', None) or torch._dynamo.config.cache_size_limit}"]
    todo = workloads()
    missing = sorted({w.needs for w in todo if w.needs and not S._importable(w.needs)})
    if missing:
        notes.append(f"workloads needing {', '.join(missing)} skipped (not installed)")
        todo = [w for w in todo if w.needs not in missing]
    if opts.only:
        only = [n.strip() for n in opts.only.split(",")]
        unknown = set(only) - {w.name for w in workloads()}
        if unknown:
            ap.error(f"unknown workload(s): {', '.join(sorted(unknown))}")
        todo = [w for w in todo if w.name in only]
    notes.append(f"compile time: fastest of {repeats} first pass(es) from empty caches per compiler, alternating "
                 "which compiler goes first; both frontends warmed up (static and dynamic) before the first workload")

    env = S.environment()
    t0 = time.perf_counter()
    S.warm_up_frontends()
    warm_up_dynamic()
    rows = []
    for w in todo:
        print(f"[dynamic] {w.name} ...", file=sys.stderr, flush=True)
        rows.append(run_workload(w, rounds, repeats))
        print(f"[dynamic] {w.name} done in {rows[-1].get('wall_s', 0):.1f} s", file=sys.stderr, flush=True)
    S.reset_all()
    total = time.perf_counter() - t0
    notes.append(f"wall time {total:.0f} s ({'quick' if opts.quick else f'{rounds} rounds'})")
    md = markdown(rows, env, notes)
    print(md)
    data = {"environment": env, "rounds": rounds, "compile_repeats": repeats, "rows": rows,
            "targets_missed": _targets(rows), "notes": notes, "wall_s": total}
    for path, text in ((opts.json, json.dumps(S._jsonable(data), indent=1)), (opts.md, md)):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    print(f"[dynamic] wrote {opts.json} and {opts.md}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
