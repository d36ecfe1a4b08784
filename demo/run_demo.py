#!/usr/bin/env python
"""armature demo: compile a small GPT-style transformer and show what happened.

Compiles ``demo/model.py``'s TinyGPT (vocab 256, d_model 128, 2 blocks,
seq 64, batch 4, random weights, eval mode, no_grad) with armature, then
prints, on one screen:

  1. what was captured: graphs, ops per graph, graph inputs, the FX code
  2. the guards that protect the cached entry
  3. graph breaks / fallbacks, with their reasons
  4. compile time: armature's tracing vs the backend's compile
  5. speed: median per-call latency of eager vs armature vs torch.compile
     (same backend, same model, interleaved rounds) and a correctness check
  6. a greedy decoding loop (eager backend) with a graph break and a
     recompile, as a user's generate() would have

and writes the run's one-file HTML report (demo/report.html, or --report
PATH): every compiled function's source shaded by graph, the breaks with
their hints, guards, recompiles, FX code and a compile timeline.

Usage:  ./dev demo [--backend inductor|aot_eager|eager] [--no-torch-compile] [--quick] [--report PATH]
"""
from __future__ import annotations

import argparse
import collections
import gc
import os
import platform
import statistics
import sys
import textwrap
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
try:
    import armature  # noqa: F401  (installed with `pip install -e .`)
except ImportError:  # running from a checkout without install
    sys.path.insert(0, os.path.join(ROOT, "src"))

import torch  # noqa: E402

import armature  # noqa: E402
from model import GPTConfig, make_model  # noqa: E402

WIDTH = 78
CODE_LINES = 25
GUARD_LINES = 12


# ---------------------------------------------------------------- printing


def section(title: str) -> None:
    print()
    print(f"== {title} " + "=" * max(0, WIDTH - len(title) - 4))


def banner(lines: list[str]) -> None:
    """A loud box, for things the reader must not miss."""
    print("!" * WIDTH)
    for line in (sub for text in lines for sub in text.splitlines()):
        for chunk in textwrap.wrap(line, WIDTH - 4, subsequent_indent="    ") or [""]:
            print(f"! {chunk.ljust(WIDTH - 4)} !")
    print("!" * WIDTH)


def print_wrapped(text: str, indent: str) -> None:
    """Wrap each line of a (multi-line) message, keeping its line breaks."""
    for sub in text.splitlines():
        for line in textwrap.wrap(sub, WIDTH - len(indent), subsequent_indent="    ") or [""]:
            print(f"{indent}{line}")


def kv(key: str, value, width: int = 22) -> None:
    print(f"  {key:<{width}} {value}")


def fmt_s(s: float) -> str:
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def fmt_ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


# ---------------------------------------------------------------- pieces


def placeholder_kinds(gm: torch.fx.GraphModule, model: torch.nn.Module) -> list[tuple[str, str, str]]:
    """(name, kind, shape) of each graph input; kind is 'parameter',
    'buffer' or 'input' (a guess from armature's ``self_a_b`` naming)."""
    params = {"self_" + n.replace(".", "_") for n, _ in model.named_parameters()}
    buffers = {"self_" + n.replace(".", "_") for n, _ in model.named_buffers()}
    out = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        kind = "parameter" if node.name in params else "buffer" if node.name in buffers else "input"
        val = node.meta.get("example_value", node.meta.get("val"))
        if val is None and "example_value" not in node.meta and "val" not in node.meta:
            # (a graph rebuilt from an entry loaded from disk carries no example values)
            out.append((node.name, kind, "(loaded from disk: no example value)"))
            continue
        shape = "x".join(map(str, val.shape)) if isinstance(val, torch.Tensor) else type(val).__name__
        dtype = str(val.dtype).replace("torch.", "") if isinstance(val, torch.Tensor) else ""
        out.append((node.name, kind, f"{dtype}[{shape}]"))
    return out


def show_graph(i: int, entry, model: torch.nn.Module) -> None:
    gm = entry.graph_module
    nodes = list(gm.graph.nodes)
    ins = placeholder_kinds(gm, model)
    kinds = collections.Counter(k for _, k, _ in ins)
    outs = [n for n in nodes if n.op == "output"]
    n_out = len(outs[0].args[0]) if outs and isinstance(outs[0].args[0], (tuple, list)) else len(outs)
    kinds_s = ", ".join(f"{v} {k}" + ("s" if v != 1 else "") for k, v in kinds.items())
    n_call = sum(n.op.startswith("call_") for n in nodes)
    print(f"  graph {i}: {entry.op_count} ops ({n_call} FX call nodes), {len(ins)} inputs ({kinds_s}), "
          f"{n_out} output(s)")
    user = [f"{n} {s}" for n, k, s in ins if k == "input"]
    if user:
        print(f"    user inputs: {', '.join(user)}")
    ops = collections.Counter(
        (n.target if isinstance(n.target, str) else getattr(n.target, "__name__", str(n.target)))
        for n in nodes if n.op in ("call_function", "call_method", "call_module"))
    top = ", ".join(f"{name} x{c}" for name, c in ops.most_common(8))
    print(textwrap.fill(f"ops: {top}" + (", ..." if len(ops) > 8 else ""), WIDTH,
                        initial_indent="    ", subsequent_indent="      "))
    code = gm.code.strip("\n").splitlines()
    print(f"    FX graph code (first {min(CODE_LINES, len(code))} of {len(code)} lines):")
    for line in code[:CODE_LINES]:
        line = "      " + line
        print(line if len(line) <= WIDTH + 40 else line[:WIDTH + 37] + "...")
    if len(code) > CODE_LINES:
        print(f"      ... ({len(code) - CODE_LINES} more lines elided)")


def show_guards(entries) -> None:
    for i, e in enumerate(entries):
        kinds = collections.Counter(g.kind.name for g in e.guards)
        label = f"entry {i}" + (" (fallback)" if e.is_fallback else "")
        print(f"  {label}: {len(e.guards)} guards")
        print(textwrap.fill("by kind: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()), WIDTH,
                            initial_indent="    ", subsequent_indent="      "))
        # Most informative first: tensor and global-state guards, then the rest in order.
        gs = sorted(e.guards, key=lambda g: (g.kind.name not in ("TENSOR_MATCH", "GLOBAL_STATE"),))
        for g in gs[:GUARD_LINES]:
            line = g.describe()
            print(f"    {line if len(line) <= WIDTH + 30 else line[:WIDTH + 27] + '...'}")
        if len(e.guards) > GUARD_LINES:
            print(f"    ... ({len(e.guards) - GUARD_LINES} more)")


def frontend_compile_times(model, x, with_torch_compile: bool, repeats: int = 3) -> dict[str, float]:
    """First-call time of each frontend with the eager backend (so the time
    is the frontend's), the fastest of ``repeats`` compiles from empty caches,
    alternating which frontend goes first."""
    names = ["armature"] + (["torch.compile"] if with_torch_compile else [])
    best: dict[str, float] = {}
    # (the frontend's own time: with the persistent cache on, a compile after reset() would load
    # the entry the first one stored instead of tracing)
    cache_was, armature.config.cache = armature.config.cache, False
    try:
        _time_frontends(model, x, names, repeats, best)
    finally:
        armature.config.cache = cache_was
    armature.reset()
    torch._dynamo.reset()
    return best


def _time_frontends(model, x, names: list[str], repeats: int, best: dict[str, float]) -> None:
    for r in range(repeats):
        for name in (names if r % 2 else list(reversed(names))):
            try:
                if name == "armature":
                    armature.reset()
                    fn = armature.compile(model, backend="eager")
                else:
                    torch._dynamo.reset()
                    fn = torch.compile(model, backend="eager")
                t0 = time.perf_counter()
                fn(x)
                took = time.perf_counter() - t0
            except Exception:  # the main run below reports failures
                continue
            best[name] = min(best.get(name, took), took)


def time_interleaved(fns: dict, x: torch.Tensor, rounds: int, calls: int) -> dict[str, list[float]]:
    """Per-call times (ns) of each variant.  The variants take turns within
    each round (the order rotating from round to round), gc off.  A call
    here takes milliseconds, so each is timed on its own and the median of
    all of them is robust to the odd descheduled call."""
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    pc = time.perf_counter_ns
    gc.collect()
    gc.disable()
    try:
        for r in range(rounds):
            k = r % len(names)
            for n in names[k:] + names[:k]:
                f, ts = fns[n], times[n]
                for _ in range(calls):
                    t0 = pc()
                    f(x)
                    ts.append(pc() - t0)
    finally:
        gc.enable()
    return times


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="inductor", choices=["inductor", "aot_eager", "eager"],
                   help="backend for armature and for torch.compile (default inductor)")
    p.add_argument("--no-torch-compile", action="store_true", help="skip the torch.compile comparison")
    p.add_argument("--quick", action="store_true", help="few timing rounds (a smoke run; numbers are noisy)")
    p.add_argument("--rounds", type=int, default=None, help="timing rounds (default 7, --quick 2)")
    p.add_argument("--calls", type=int, default=None, help="calls per variant per round (default 20, --quick 2)")
    p.add_argument("--report", default=os.path.join(HERE, "report.html"),
                   help="where to write the HTML report of the run (default demo/report.html)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads (default 1: steadier timings on a small shared CPU; "
                        "0 keeps torch's default)")
    a = p.parse_args(argv)
    rounds = a.rounds or (2 if a.quick else 7)
    calls = a.calls or (2 if a.quick else 20)
    warnings.filterwarnings("ignore", category=UserWarning)
    if a.threads > 0:
        torch.set_num_threads(a.threads)

    cfg = GPTConfig()
    model, idx = make_model(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"armature {armature.__version__} demo: TinyGPT, backend={a.backend!r}")
    print(f"  model: vocab {cfg.vocab_size}, d_model {cfg.d_model}, {cfg.n_layers} blocks x {cfg.n_heads} heads, "
          f"{n_params / 1e6:.2f} M params; input int64[{cfg.batch}x{cfg.seq_len}]; eval, no_grad")
    print(f"  torch {torch.__version__}, Python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, torch threads: {torch.get_num_threads()}")

    torch.set_grad_enabled(False)
    ref = model(idx)

    # --- frontends alone (backend "eager"), measured before anything else is
    # compiled: fastest of 3 compiles from empty caches, alternating which
    # frontend goes first, so neither is charged torch's one-time warm-up
    frontend = {} if a.quick else frontend_compile_times(model, idx, not a.no_torch_compile)

    # --- compile with armature (the first call traces and compiles) ---------
    # From here on the run is recorded; the HTML report is written at exit.
    armature.report(a.report)
    compiled = armature.compile(model, backend=a.backend)
    arm_error = None
    arm_out = None
    t0 = time.perf_counter()
    try:
        arm_out = compiled(idx)
    except Exception as e:  # a tracer or backend failure must not end the demo
        arm_error = e
    arm_first_call = time.perf_counter() - t0
    entries = armature.cache_entries(compiled) if arm_error is None else []
    graphs = [e for e in entries if e.graph_module is not None]
    fallbacks = [e for e in entries if e.is_fallback]
    # Entries of a frame split at a graph break carry a ``graph_break`` (why
    # and where); getattr keeps the demo working on versions without it.
    breaks = [e for e in entries if getattr(e, "graph_break", None) is not None]

    if arm_error is not None:
        print()
        banner([f"armature FAILED on the first call: {type(arm_error).__name__}: {arm_error}",
                "The sections below show eager (and torch.compile) only."])
        traceback.print_exception(arm_error, limit=-3, file=sys.stdout)
    elif fallbacks:
        print()
        banner(["armature FELL BACK to plain Python for part of the model:"]
               + [f"- {e.fallback_reason}" for e in fallbacks])

    # --- 1. what was captured ----------------------------------------------
    section("1. Captured graphs")
    if arm_error is not None:
        print("  (nothing: armature failed, see above)")
    else:
        kv("cache entries", len(entries))
        kv("graphs", len(graphs))
        kv("ops per graph", ", ".join(str(e.op_count) for e in graphs) or "-")
        for i, e in enumerate(graphs):
            show_graph(i, e, model)

    # --- 2. guards -----------------------------------------------------------
    section("2. Guards (checked on every call before the cached graph runs)")
    if entries:
        show_guards(entries)
    else:
        print("  (none)")

    # --- 3. graph breaks / fallbacks ----------------------------------------
    section("3. Graph breaks and fallbacks")
    if arm_error is not None:
        print(f"  armature raised {type(arm_error).__name__}: {arm_error}")
    elif fallbacks or breaks:
        for i, e in enumerate(fallbacks):
            print(f"  fallback {i}: ran as plain Python because:")
            print_wrapped(e.fallback_reason, "      ")
        for i, e in enumerate(breaks):
            print(f"  graph break {i}: the frame was split because:")
            print_wrapped(str(e.graph_break), "      ")
        if breaks:
            print("  (the code after a break runs in resume functions compiled on their own;\n"
                  "   cache_entries() lists only the compiled forward's entries, so their graphs\n"
                  "   are not counted in section 1)")
    elif len(graphs) == 1:
        print("  no graph breaks: the whole forward was captured in 1 graph")
    elif not graphs:
        print("  no graph breaks, but no graph either: the forward ran no tensor ops")
    else:
        print(f"  the forward was split into {len(graphs)} graphs (graph breaks)")

    # --- torch.compile (compiled before the timing section) -----------------
    tc = tc_out = tc_error = None
    tc_first_call = None
    if not a.no_torch_compile:
        torch._dynamo.reset()
        tc = torch.compile(model, backend=a.backend)
        t0 = time.perf_counter()
        try:
            tc_out = tc(idx)
        except Exception as e:
            tc_error = e
            tc = None
        tc_first_call = time.perf_counter() - t0

    # --- 4. compile time -----------------------------------------------------
    section("4. Compile time (first call)")
    loaded = [e for e in entries if getattr(e, "loaded_from", None)]
    if arm_error is None and loaded and len(loaded) == len(entries):
        kv("armature first call", f"{fmt_s(arm_first_call):>10}   (loaded from the persistent cache: no trace, "
           "no backend compile)")
        print(f"  (a warm start: an earlier run stored {'this entry' if len(loaded) == 1 else 'these entries'} "
              f"in {os.path.dirname(os.path.dirname(loaded[0].loaded_from))};\n"
              "   ARMATURE_CACHE=0 or `python -m armature cache clear` to see a cold compile)")
    elif arm_error is None:
        trace = sum(e.trace_time_s for e in entries)
        backend = sum(e.backend_time_s for e in entries)
        kv("armature trace", f"{fmt_s(trace):>10}   (bytecode -> FX graph + guards + transformed code)")
        kv(f"backend ({a.backend})", f"{fmt_s(backend):>10}")
        kv("armature first call", f"{fmt_s(arm_first_call):>10}   (trace + backend + one run)")
    else:
        kv("armature first call", f"{fmt_s(arm_first_call):>10}   (failed)")
    if tc_first_call is not None:
        kv("torch.compile 1st call", f"{fmt_s(tc_first_call):>10}" + ("   (failed)" if tc_error else ""))
    if frontend:
        print("  frontend only (backend 'eager': bytecode -> graph + guards), fastest of 3 compiles:")
        for name in ("armature", "torch.compile"):
            if name in frontend:
                kv(f"  {name}", f"{fmt_s(frontend[name]):>10}")
        if len(frontend) == 2 and frontend["torch.compile"] > 0:
            ratio = frontend["armature"] / frontend["torch.compile"]
            print(f"  armature / torch.compile frontend time: {ratio:.2f}x (< 1: armature faster)")
    if a.backend == "inductor":
        print("  (inductor caches compiled kernels on disk: repeat runs compile faster, and\n"
              "   torch.compile, compiling the same graph second, reuses armature's kernels)")

    # --- 5. speed + correctness ---------------------------------------------
    section(f"5. Speed (median per-call latency, {rounds} interleaved rounds x {calls} calls)")
    fns = {"eager": model}
    if arm_error is None:
        fns["armature"] = compiled
    if tc is not None:
        fns["torch.compile"] = tc
    for f in fns.values():  # warm up the cached paths
        f(idx)
    before = len(armature.cache_entries(compiled)) if arm_error is None else 0
    times = time_interleaved(fns, idx, rounds, calls)
    med = {n: statistics.median(v) for n, v in times.items()}
    print(f"  {'variant':<15} {'median':>10} {'min':>10} {'max':>10} {'speedup vs eager':>18}")
    for n, ns in med.items():
        print(f"  {n:<15} {fmt_ms(ns):>10} {fmt_ms(min(times[n])):>10} {fmt_ms(max(times[n])):>10} "
              f"{med['eager'] / ns:>17.2f}x")
    if "armature" in med and "torch.compile" in med:
        print(f"  armature / torch.compile latency: {med['armature'] / med['torch.compile']:.2f}x "
              "(< 1: armature faster)")
    if arm_error is None and len(armature.cache_entries(compiled)) != before:
        print("  note: armature recompiled during timing")

    print()
    print("  correctness (max abs diff vs eager):")
    if arm_out is not None:
        print(f"    armature       {(arm_out - ref).abs().max().item():.3e}")
    else:
        print(f"    armature       n/a (failed: {type(arm_error).__name__})")
    if tc_out is not None:
        print(f"    torch.compile  {(tc_out - ref).abs().max().item():.3e}")
    elif tc_error is not None:
        print(f"    torch.compile  n/a (failed: {type(tc_error).__name__}: {str(tc_error)[:120]})")
    ok = arm_out is not None and torch.allclose(arm_out, ref, atol=1e-4, rtol=1e-4)
    if arm_out is None:
        print("  armature FAILED: no output to check")
    else:
        print(f"  armature output {'matches' if ok else 'DOES NOT MATCH'} eager (atol=rtol=1e-4)")
    decode_ok = decode_section(model, idx)
    print()
    print(f"HTML report of this run: {a.report} (written at exit; open it in a browser)")
    # A fallback is reported but is not an error; a failure or a wrong result is.
    return 0 if ok and decode_ok else 1


def decode_step(model, idx, eos: int = 0):
    """One greedy decoding step, as a user's generate() loop might write it."""
    logits = model(idx)[:, -1, :]
    next_tok = logits.argmax(-1, keepdim=True)
    if (next_tok == eos).all():        # stop at the end-of-sequence token: a graph break
        return None
    return torch.cat([idx, next_tok], dim=1)


def decode_section(model, idx) -> bool:
    """Section 6: a loop whose input grows by one token per call (a recompile,
    after which the length is dynamic) around a print of a Python number (a
    graph break).  Eager backend: this part is about what the report shows."""
    section("6. A decoding loop: a graph break and a recompile (eager backend)")
    step = armature.compile(decode_step, backend="eager")
    ids = eager_ids = idx[:1, :8]
    for _ in range(6):
        ids = step(model, ids)
        eager_ids = decode_step(model, eager_ids)
        print(f"    length {ids.shape[1]:>2}: last token {ids[0, -1].item():>3}")
    same = torch.equal(ids, eager_ids)
    entries = armature.cache_entries(step)
    breaks = [e.graph_break for e in entries if e.graph_break is not None]
    kv("cache entries", len(entries))
    kv("recompiles", step._cache.recompiles)
    if breaks:
        b = breaks[0]
        print(f"  graph break: {b.reason}")
        print_wrapped(f"hint: {b.hint}", "    ")
    print(f"  tokens {'match' if same else 'DO NOT MATCH'} eager decoding")
    return same


if __name__ == "__main__":
    sys.exit(main())
