#!/usr/bin/env python
"""Where armature's frontend compile time goes, for the models of ``./dev suite``.

For each model (tests/models/zoo.py, as the suite builds it: eval mode,
``torch.no_grad()``, the eager backend, so only the frontend is measured) it

1. warms up: compiles the model once with armature and once with
   torch.compile, so torch's one-time costs (meta kernels, dispatcher and
   decomposition caches) are paid before anything is measured, as the suite's
   alternating compiles do;
2. times ``--repeats`` first calls of a fresh ``armature.compile`` (median),
   and as many of torch.compile's, alternating;
3. times the phases of ``--repeats`` more first calls with perf_counter
   wrappers around the functions that start each (tracing, recording ops,
   making fake parameters and inputs, wrapping objects, finishing: the
   GraphModule, the backend call, guards, the guard function, the
   transformed code), outermost calls only;
4. profiles one more armature first call with cProfile and prints

   * the phases: cumulative time of the functions that start each one
     (tracing the bytecode, fake-tensor propagation, FX node creation,
     ShapeEnv, guard collection and guard-function codegen, transformed
     bytecode codegen, regions, the backend call), as ms and % of the call;
   * time by owner: armature's own Python vs torch (fake tensors, fx,
     symbolic shapes, the rest of torch) vs the Python library and builtins,
     by the files the self time (tottime) is spent in;
   * opcode handlers: calls and cumulative ms per handler of the dispatch
     table (``pyversion.HANDLERS``);
   * the top functions by tottime and by cumtime.

The phase rows overlap (fake-tensor propagation happens inside tracing);
they are a breakdown of where the call goes, not a partition.  cProfile
roughly doubles the time of Python-heavy code, so compare its numbers with
each other; the unprofiled medians of step 2 are the real compile times.

Usage (from the repository root; the models need torchvision / transformers /
timm, e.g. a real-model venv)::

    PYTHONPATH=$PWD/src:$PWD /work/main/.venv-models-py313/bin/python \\
        benchmarks/profile_compile.py [--models t5,timm_efficientnet_b0] \\
        [--repeats 3] [--top 40] [--no-profile] [--dump DIR]

``--models all`` takes every model of the zoo; the default is the heaviest
few.  ``--dump DIR`` writes each model's raw profile (``DIR/NAME.prof``)
for ``python -m pstats`` or snakeviz.
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import pstats
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

import torch  # noqa: E402

import armature  # noqa: E402
from armature.backends import lookup_backend  # noqa: E402

DEFAULT_MODELS = ("t5", "timm_efficientnet_b0", "mobilenet_v3_small", "timm_convnext_atto", "llama")

# phase name -> (file suffix, function name) whose cumtime measures it
PHASES = (
    ("first call, total", ("armature/driver/compile_frame.py", "compile_call")),
    ("  trace bytecode (Frame.run, root)", ("armature/trace/frame.py", "run")),
    ("    record ops (OutputGraph.create_node)", ("armature/graph/output_graph.py", "create_node")),
    ("    FakeTensorMode dispatch", ("torch/_subclasses/fake_tensor.py", "__torch_dispatch__")),
    ("    fx Graph.create_node", ("torch/fx/graph.py", "create_node")),
    ("    ShapeEnv.create_symbol", ("torch/fx/experimental/symbolic_shapes.py", "create_symbol")),
    ("    fake tensor from real (from_tensor)", ("torch/_subclasses/fake_tensor.py", "from_tensor")),
    ("  finish (graph, backend, guards, codegen)", ("armature/driver/compile_frame.py", "_finish")),
    ("    regions.merge", ("armature/graph/regions.py", "merge")),
    ("    backend call", ("armature/driver/compile_frame.py", "_compile_graph")),
    ("    guard function codegen", ("armature/guards/build.py", "build_guard_function")),
    ("    transformed bytecode codegen", ("armature/codegen/transformed.py", "build_transformed")),
)

OWNERS = (
    ("armature", ("armature/",)),
    ("torch fake tensors / dispatch", ("torch/_subclasses/", "torch/_ops.py", "torch/_prims", "torch/_refs",
                                        "torch/_decomp", "torch/_meta_registrations.py", "torch/utils/_pytree.py",
                                        "torch/_library", "torch/utils/_python_dispatch.py")),
    ("torch fx", ("torch/fx/graph.py", "torch/fx/node.py", "torch/fx/graph_module.py", "torch/fx/proxy.py",
                  "torch/fx/_compatibility.py", "torch/fx/immutable_collections.py", "torch/fx/traceback.py")),
    ("torch symbolic shapes / sympy", ("torch/fx/experimental/", "torch/utils/_sympy", "sympy/")),
    ("torch other", ("torch/",)),
    ("model code", ("transformers/", "timm/", "torchvision/")),
)


# phase name -> (module, qualified attribute): timed with perf_counter wrappers
# (outermost call only), without cProfile's distortion of small functions
TIMED = (
    ("first call: compile_call", "armature.driver.compile_frame", "compile_call"),
    ("trace: Frame.run (all frames)", "armature.trace.frame", "Frame.run"),
    ("  record ops: OutputGraph.create_node", "armature.graph.output_graph", "OutputGraph.create_node"),
    ("  fake params/buffers: OutputGraph.add_attr", "armature.graph.output_graph", "OutputGraph.add_attr"),
    ("  fake inputs: OutputGraph.add_input", "armature.graph.output_graph", "OutputGraph.add_input"),
    ("  wrap objects: builder.wrap", "armature.values.builder", "wrap"),
    ("finish: _finish", "armature.driver.compile_frame", "_finish"),
    ("  graph.finish (GraphModule)", "armature.graph.output_graph", "OutputGraph.finish"),
    ("  regions.merge", "armature.graph.regions", "merge"),
    ("  backend call: _compile_graph", "armature.driver.compile_frame", "_compile_graph"),
    ("  shape guards", "armature.graph.dynamic", "shape_guards"),
    ("  guard function: build_guard_function", "armature.guards.build", "build_guard_function"),
    ("  transformed code: build_transformed", "armature.codegen.transformed", "build_transformed"),
)


class PhaseTimer:
    """perf_counter wrappers around the TIMED functions (every module of
    armature that imported one by name gets the wrapper too)."""

    def __init__(self):
        self.totals: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._undo = []

    def install(self):
        import importlib
        for label, modname, qual in TIMED:
            mod = importlib.import_module(modname)
            owner, _, attr = qual.rpartition(".")
            holder = getattr(mod, owner) if owner else mod
            orig = holder.__dict__[attr] if owner else getattr(mod, attr)
            wrapper = self._wrap(label, orig)
            setattr(holder, attr, wrapper)
            self._undo.append((holder, attr, orig))
            if not owner:
                for m in list(sys.modules.values()):
                    if m is not mod and getattr(m, "__name__", "").startswith("armature") \
                            and getattr(m, "__dict__", {}).get(attr) is orig:
                        setattr(m, attr, wrapper)
                        self._undo.append((m, attr, orig))
        return self

    def _wrap(self, label, fn):
        depth = [0]
        totals, calls = self.totals, self.calls
        pc = time.perf_counter

        def timed(*a, **k):
            if depth[0]:
                return fn(*a, **k)
            depth[0] += 1
            t0 = pc()
            try:
                return fn(*a, **k)
            finally:
                depth[0] -= 1
                totals[label] = totals.get(label, 0.0) + pc() - t0
                calls[label] = calls.get(label, 0) + 1
        return timed

    def uninstall(self):
        for holder, attr, orig in reversed(self._undo):
            setattr(holder, attr, orig)
        self._undo = []

    def report(self, name: str, runs: int) -> None:
        first = self.totals.get(TIMED[0][0], 0.0) / max(runs, 1)
        print(f"\n### {name}: phases (perf_counter, mean of {runs} first call(s), outermost calls only)")
        for label, _m, _q in TIMED:
            t = self.totals.get(label)
            if t is None:
                print(f"  {label:<46} {'—':>9}")
                continue
            t /= max(runs, 1)
            print(f"  {label:<46} {t * 1e3:9.1f} ms {100 * t / first if first else 0:5.1f}%  "
                  f"calls {self.calls[label] // max(runs, 1)}")


def owner_of(filename: str) -> str:
    f = filename.replace(os.sep, "/")
    if f.startswith("~") or f.startswith("<"):
        return "builtins / C"
    for name, parts in OWNERS:
        if any(p in f for p in parts):
            return name
    return "Python stdlib / other"


def build(name: str):
    from zoo import BUILDERS
    case = BUILDERS[name]()
    args, kwargs = case.make_inputs()
    return case.model.eval(), args, kwargs


def first_call(compiler: str, model, args, kwargs, profiler=None) -> float:
    if compiler == "armature":
        armature.reset()
        fn = armature.compile(model, backend=lookup_backend("eager"))
    else:
        torch._dynamo.reset()
        from torch._dynamo.backends.registry import lookup_backend as dyn_lookup
        fn = torch.compile(model, backend=dyn_lookup("eager"))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        t0 = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        try:
            fn(*args, **kwargs)
        finally:
            if profiler is not None:
                profiler.disable()
        took = time.perf_counter() - t0
    return took


def eager_call(model, args, kwargs) -> float:
    with torch.no_grad():
        model(*args, **kwargs)
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            model(*args, **kwargs)
            ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _find(stats: pstats.Stats, suffix: str, func: str):
    best = None
    for (fname, _line, fn), row in stats.stats.items():
        if fn == func and fname.replace(os.sep, "/").endswith(suffix):
            # the entry with the largest cumtime (recursion is folded by cProfile)
            if best is None or row[3] > best[3]:
                best = row
    return best


def report_profile(name: str, prof: cProfile.Profile, total_s: float, top: int) -> None:
    st = pstats.Stats(prof)
    total_ms = total_s * 1e3
    print(f"\n### {name}: phases (profiled first call {total_ms:.0f} ms)")
    for label, (suffix, func) in PHASES:
        row = _find(st, suffix, func)
        if row is None:
            print(f"  {label:<46} {'—':>9}")
            continue
        cc, nc, tt, ct = row[:4]
        print(f"  {label:<46} {ct * 1e3:9.1f} ms {100 * ct / total_s:5.1f}%  calls {nc}")

    owners: dict[str, float] = {}
    for (fname, _line, _fn), row in st.stats.items():
        owners[owner_of(fname)] = owners.get(owner_of(fname), 0.0) + row[2]
    print(f"\n### {name}: self time by owner")
    for k, v in sorted(owners.items(), key=lambda kv: -kv[1]):
        print(f"  {k:<34} {v * 1e3:9.1f} ms {100 * v / total_s:5.1f}%")

    from armature import pyversion
    handler_ids = {}
    for opname, h in pyversion.HANDLERS.items():
        code = getattr(h, "__code__", None)
        if code is not None:
            handler_ids.setdefault((code.co_filename, code.co_firstlineno, code.co_name), []).append(opname)
    rows = []
    for key, row in st.stats.items():
        if key in handler_ids:
            rows.append((row[3], row[1], key[2], "/".join(handler_ids[key][:3])))
    rows.sort(reverse=True)
    print(f"\n### {name}: opcode handlers (cumulative, nested calls counted once)")
    for ct, nc, fn, ops in rows[:20]:
        print(f"  {fn:<30} {ops:<40} calls {nc:6d} {ct * 1e3:9.1f} ms")

    for key, label in (("tottime", "self time"), ("cumulative", "cumulative time")):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(key).print_stats(top)
        text = out.getvalue()
        start = text.find("   ncalls")
        print(f"\n### {name}: top {top} by {label}\n{text[start:] if start >= 0 else text}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--top", type=int, default=35)
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--dump", default=None)
    opts = ap.parse_args(argv)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    from zoo import BUILDERS
    names = list(BUILDERS) if opts.models == "all" else opts.models.split(",")
    summary = []
    for name in names:
        try:
            model, args, kwargs = build(name)
        except Exception as e:  # noqa: BLE001
            print(f"{name}: not built ({type(e).__name__}: {e})", file=sys.stderr)
            continue
        eager = eager_call(model, args, kwargs)
        with contextlib.redirect_stdout(io.StringIO()):
            first_call("armature", model, args, kwargs)
            first_call("torch.compile", model, args, kwargs)
        times = {"armature": [], "torch.compile": []}
        for r in range(opts.repeats):
            order = ("armature", "torch.compile") if r % 2 else ("torch.compile", "armature")
            for c in order:
                times[c].append(first_call(c, model, args, kwargs) - eager)
        a, t = statistics.median(times["armature"]), statistics.median(times["torch.compile"])
        summary.append((name, a, t))
        timer = PhaseTimer().install()
        try:
            for _ in range(opts.repeats):
                first_call("armature", model, args, kwargs)
        finally:
            timer.uninstall()
        timer.report(name, opts.repeats)
        print(f"{name}: compile ms armature {a * 1e3:.0f} (min {min(times['armature']) * 1e3:.0f}), "
              f"torch.compile {t * 1e3:.0f} (min {min(times['torch.compile']) * 1e3:.0f}), ratio {a / t:.2f}x",
              flush=True)
        if not opts.no_profile:
            prof = cProfile.Profile()
            took = first_call("armature", model, args, kwargs, profiler=prof)
            if opts.dump:
                os.makedirs(opts.dump, exist_ok=True)
                prof.dump_stats(os.path.join(opts.dump, f"{name}.prof"))
            report_profile(name, prof, took, opts.top)
        armature.reset()
        torch._dynamo.reset()
    if summary:
        ta, tt = sum(a for _, a, _ in summary), sum(t for _, _, t in summary)
        print(f"\nsummary: armature {ta * 1e3:.0f} ms, torch.compile {tt * 1e3:.0f} ms, ratio {ta / tt:.2f}x "
              f"over {len(summary)} model(s) (medians of {opts.repeats})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
