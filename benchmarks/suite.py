#!/usr/bin/env python
"""armature vs torch.compile on the same workloads, in one process.

Workloads:

* the real models of tests/models (built by tests/models/zoo.py: tiny sizes,
  random weights, eval mode, ``torch.no_grad()``), skipped with a note when
  torchvision / transformers / timm are not installed;
* hard Python cases written here: closures, user classes, dataclasses, a
  data-dependent branch, ``print`` in the middle, ``.item()``, list / dict /
  global mutation, a module counter attribute incremented on every call and
  a global list that grows on every call.  Each case is Python source that is
  ``exec``'d into a fresh namespace per variant (eager, armature,
  torch.compile), so every variant has its own globals and the side effects
  of each can be compared with eager's.

Per workload and per compiler (both with a counting backend that wraps the
eager backend, so compile time is the frontend's):

* ``correct``     every output of the warm-up calls and the final side-effect
                  state (globals, printed text, object attributes) match eager;
* ``graphs``      backend compilations during the first call;
* ``breaks``      graph breaks during the first call (armature: cache entries
                  with a user-visible break; torch.compile: the
                  ``counters["graph_break"]`` total);
* ``ops``         call_function / call_method / call_module nodes, summed over
                  the graphs of the first call;
* ``recompiles``  cache entries of the root code object minus one after all
                  warm-up calls (30 for the counter / growing-list cases,
                  2 otherwise), and whether the recompile limit (8 for both)
                  was hit;
* ``compile ms``  first-call time minus the median eager call time; the
                  fastest of 3 compiles from empty caches per compiler,
                  alternating which compiler goes first (after a warm-up
                  of both on a small model);
* ``overhead µs`` median over interleaved rounds of (compiled - eager) per
                  call on cached calls, and the ratio armature / torch.compile.

``--inductor`` adds resnet18, vit and gpt2 with backend="inductor": end-to-end
compile time (first call - eager) and speedup over eager for both (the
inductor FX-graph cache is off and each compiler gets its own cache dir).

Everything runs in one process; ``torch._dynamo.reset()`` and
``armature.reset()`` between workloads.  A crash or a wrong result of either
compiler is recorded in the table and the suite goes on.

Usage:  ./dev suite [--quick] [--inductor] [--only NAME[,NAME...]] [--json PATH] [--md PATH]
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as _dt
import gc
import io
import json
import linecache
import logging
import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import platform
import statistics
import sys
import tempfile
import textwrap
import time
import traceback
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
try:
    import armature  # noqa: F401
except ImportError:  # a checkout without install
    sys.path.insert(0, os.path.join(ROOT, "src"))

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
from torch._dynamo.utils import counters as dynamo_counters  # noqa: E402

import armature  # noqa: E402
from armature.backends import lookup_backend as arm_lookup_backend  # noqa: E402
from armature.driver import explain as arm_explain  # noqa: E402
from armature.runtime import cache as arm_cache  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

DEFAULT_JSON = os.path.join(HERE, "results", "suite.json")
DEFAULT_MD = os.path.join(HERE, "results", "suite.md")
COMPILERS = ("armature", "torch.compile")
VARIANTS = ("eager",) + COMPILERS
INDUCTOR_MODELS = ("resnet18", "vit", "gpt2")
RECOMPILE_LIMIT = 8


# ====================================================================== workloads


@dataclass
class Instance:
    fn: Callable                      # what gets compiled (function or nn.Module)
    args: tuple
    kwargs: dict = field(default_factory=dict)
    state: Callable[[], Any] = lambda: None   # side-effect state to compare with eager
    codes: tuple = ()                 # root code objects (torch.compile cache entries)


@dataclass
class Workload:
    name: str
    kind: str                         # "model" | "python"
    make: Callable[[], Instance]      # a fresh instance (own state) per variant
    calls: int = 2                    # warm-up calls (the first one compiles)
    shared: bool = False              # one instance for all variants (stateless models)
    calls_per_round: int = 50
    tol: float = 1e-4


# ---------------------------------------------------------------------- models


def model_workloads() -> tuple[list[Workload], str | None]:
    missing = [m for m in ("torchvision", "transformers", "timm") if not _importable(m)]
    try:
        from zoo import BUILDERS
    except Exception as e:  # noqa: BLE001
        return [], f"tests/models/zoo.py not importable: {e}"
    need = {"resnet18": "torchvision", "mobilenet_v3_small": "torchvision", "vit": "torchvision",
            "bert": "transformers", "gpt2": "transformers", "llama": "transformers", "t5": "transformers",
            "timm_convnext_atto": "timm", "timm_vit_tiny": "timm", "timm_efficientnet_b0": "timm"}
    out = []
    for name, builder in BUILDERS.items():
        if need.get(name) in missing:
            continue

        def make(builder=builder):
            case = builder()
            args, kwargs = case.make_inputs()
            model = case.model.eval()
            return Instance(model, args, kwargs, codes=_module_codes(model))
        out.append(Workload(name, "model", make, calls=2, shared=True, calls_per_round=10))
    note = f"model workloads needing {', '.join(missing)} skipped (not installed)" if missing else None
    return out, note


def _importable(mod: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(mod) is not None


def _module_codes(model) -> tuple:
    """Where torch.compile keeps a compiled module's cache entries: torch
    2.14 compiles the ``inner`` wrapper of ``external_utils.wrap_inline``
    (one code object shared by every compiled module), earlier releases
    ``forward`` or ``_call_impl``."""
    from torch._dynamo import external_utils
    inner = external_utils.wrap_inline(lambda: None).__code__
    return (type(model).forward.__code__, torch.nn.Module._call_impl.__code__, inner)


# ---------------------------------------------------------------- hard Python

#: name -> (source, entry expression, args expression, state expression, calls)
#: Each source is exec'd in a fresh namespace per variant.
PY_CASES: dict[str, dict] = {
    "closures": dict(src="""
        def make_scaler(scale):
            offset = scale * 2
            def inner(t):
                return t * scale + offset
            return inner

        def make_counter_fn():
            k = 3
            def step(t):
                nonlocal k
                k = k + 1
                return t + k
            return step

        SCALE = make_scaler(1.5)

        def fn(x):
            y = SCALE(x)
            g = make_scaler(0.5)
            h = lambda t: g(t).relu()
            step = make_counter_fn()
            return h(y) + step(x) + step(x)
        """, entry="fn", args="(torch.randn(16, 16),)"),
    "user_classes": dict(src="""
        class Base:
            def __init__(self, w):
                self.w = w
            def apply(self, x):
                return x * self.w

        class Shift(Base):
            def __init__(self, w, b):
                super().__init__(w)
                self.b = b
            @property
            def bias(self):
                return self.b + 1
            def apply(self, x):
                return super().apply(x) + self.bias
            @staticmethod
            def act(x):
                return torch.tanh(x)

        def fn(x):
            objs = [Shift(2.0, 0.5), Base(3.0), Shift(0.5, -1.0)]
            for o in objs:
                x = o.apply(x)
                if isinstance(o, Shift):
                    x = Shift.act(x)
            return x
        """, entry="fn", args="(torch.randn(16, 16),)"),
    "dataclasses": dict(src="""
        import dataclasses

        @dataclasses.dataclass
        class Cfg:
            scale: float = 2.0
            layers: int = 3
            names: tuple = ("a", "b")

        @dataclasses.dataclass
        class Out:
            value: torch.Tensor
            aux: torch.Tensor
            cfg: Cfg

        CFG = Cfg(scale=0.5)

        def fn(x):
            c = dataclasses.replace(CFG, layers=2)
            for _ in range(c.layers):
                x = torch.sin(x) * c.scale
            o = Out(value=x, aux=x.sum(0), cfg=c)
            return o.value + o.aux * len(o.cfg.names)
        """, entry="fn", args="(torch.randn(16, 16),)"),
    "data_dep_branch": dict(src="""
        def fn(x):
            y = x * 2
            if y.sum() > 0:
                z = y + 1
            else:
                z = y - 1
            return z.relu()
        """, entry="fn", args="(torch.randn(16, 16),)"),
    "print_mid": dict(src="""
        def fn(x):
            y = x.cos() + 1
            print("mid", tuple(y.shape))
            return y * 2
        """, entry="fn", args="(torch.randn(16, 16),)"),
    "item": dict(src="""
        def fn(x):
            s = x.abs().sum().item()
            return x / (s + 1.0) + 1
        """, entry="fn", args="(torch.randn(16, 16),)"),
    "list_dict_global_mut": dict(src="""
        LAST = None
        LOG = {}

        def fn(x, acc, table):
            global LAST
            y = x + 1
            acc.append(y * 2)
            acc.append(y.sum())
            table["mean"] = y.mean()
            table["n"] = len(acc)
            LAST = y - 3
            LOG["last"] = y.max()
            return y * len(acc)

        ACC, TABLE = [], {}

        def run(x):
            ACC.clear()
            TABLE.clear()
            return fn(x, ACC, TABLE)
        """, entry="run", compile_entry="fn", args="(torch.randn(16, 16),)",
        state="[ACC, TABLE, LAST, LOG]"),
    "counter_attr": dict(src="""
        class Stepper(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(16, 16)
                self.steps = 0
            def forward(self, x):
                self.steps += 1
                return self.lin(x) + self.steps

        MOD = Stepper().eval()
        """, entry="MOD", args="(torch.randn(4, 16),)", state="MOD.steps", calls=30),
    "growing_global_list": dict(src="""
        HISTORY = []

        def fn(x):
            y = x * 2 + 1
            HISTORY.append(y.sum())
            return y
        """, entry="fn", args="(torch.randn(16, 16),)", state="HISTORY", calls=30),
}


def _exec_case(name: str, spec: dict) -> dict:
    src = "import torch\n" + textwrap.dedent(spec["src"])
    filename = f"<suite:{name}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    # a real module in sys.modules (dataclasses looks its globals up there),
    # a fresh one per variant so each has its own globals
    global _EXEC_COUNT
    _EXEC_COUNT += 1
    mod = types.ModuleType(f"_armature_suite_{name}_{_EXEC_COUNT}")
    sys.modules[mod.__name__] = mod
    ns = mod.__dict__
    torch.manual_seed(0)
    exec(compile(src, filename, "exec"), ns)  # noqa: S102
    return ns


_EXEC_COUNT = 0


def python_workloads() -> list[Workload]:
    out = []
    for name, spec in PY_CASES.items():
        def make(name=name, spec=spec):
            ns = _exec_case(name, spec)
            torch.manual_seed(1)
            args = eval(spec["args"], ns)  # noqa: S307
            # compile_entry: the function compiled (a caller in the same namespace
            # resets per-call containers); entry: what the suite calls.
            target = ns[spec.get("compile_entry", spec["entry"])]
            inst = Instance(ns[spec["entry"]], args,
                            state=(lambda: eval(spec["state"], ns)) if "state" in spec else (lambda: None))
            inst.ns = ns
            inst.target_name = spec.get("compile_entry", spec["entry"])
            inst.entry_name = spec["entry"]
            if isinstance(target, torch.nn.Module):
                inst.codes = _module_codes(target)
            else:
                inst.codes = (target.__code__,)
            return inst
        out.append(Workload(name, "python", make, calls=spec.get("calls", 2)))
    return out


# ====================================================================== helpers


def tensors_of(obj) -> list:
    """Flatten outputs / state into comparable leaves (tensors and plain values)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if obj is None or isinstance(obj, (int, float, bool, str)):
        return [obj]
    if hasattr(obj, "to_tuple"):  # transformers ModelOutput
        return tensors_of(obj.to_tuple())
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in tensors_of(item)]
    if isinstance(obj, dict):
        return [("key", k) for k in sorted(obj, key=repr)] + [t for k in sorted(obj, key=repr)
                                                              for t in tensors_of(obj[k])]
    layers = getattr(obj, "layers", None)  # transformers Cache
    if layers is not None:
        return [t for layer in layers for t in tensors_of([getattr(layer, "keys", None),
                                                            getattr(layer, "values", None)])]
    return [repr(obj)]


def same(a, b, tol: float) -> str | None:
    """None when equal, else a short description of the first difference."""
    la, lb = tensors_of(a), tensors_of(b)
    if len(la) != len(lb):
        return f"{len(la)} leaves vs eager's {len(lb)}"
    for i, (x, y) in enumerate(zip(la, lb)):
        if isinstance(y, torch.Tensor):
            if not isinstance(x, torch.Tensor):
                return f"leaf {i}: {type(x).__name__} vs a tensor"
            if x.shape != y.shape or x.dtype != y.dtype:
                return f"leaf {i}: {tuple(x.shape)}/{x.dtype} vs {tuple(y.shape)}/{y.dtype}"
            if not torch.allclose(x.float(), y.float(), rtol=tol, atol=tol, equal_nan=True):
                return f"leaf {i}: max abs diff {(x.float() - y.float()).abs().max().item():.3g}"
        elif x != y:
            return f"leaf {i}: {x!r} vs {y!r}"
    return None


def counting_backend(base: Callable, stats: dict) -> Callable:
    def backend(gm, example_inputs):
        stats["graphs"] += 1
        stats["ops"] += sum(1 for n in gm.graph.nodes
                            if n.op in ("call_function", "call_method", "call_module"))
        return base(gm, example_inputs)
    return backend


def dynamo_eager_backend() -> Callable:
    from torch._dynamo.backends.registry import lookup_backend
    return lookup_backend("eager")


class _LimitWatcher(logging.Handler):
    """Counts torch._dynamo's 'hit config.recompile_limit' warnings."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.hits = 0

    def emit(self, record):
        try:
            if "hit config." in record.getMessage():
                self.hits += 1
        except Exception:  # noqa: BLE001
            pass


def dynamo_cache_entries(codes) -> int:
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    return max((len(_debug_get_cache_entry_list(c)) for c in codes), default=0)


def err_text(e: BaseException) -> str:
    msg = f"{type(e).__name__}: {e}".strip().splitlines()
    return (msg[0] if msg else type(e).__name__)[:300]


def reset_all() -> None:
    torch._dynamo.reset()
    armature.reset()
    dynamo_counters.clear()


# ====================================================================== measuring


@dataclass
class Prepared:
    fn: Callable | None = None        # the callable timed (None: failed)
    inst: Instance | None = None
    result: dict = field(default_factory=dict)


def _call(inst: Instance, fn: Callable, sink):
    with contextlib.redirect_stdout(sink):
        return fn(*inst.args, **inst.kwargs)


def _compile(compiler: str, inst: Instance, backend, w: Workload):
    """Compile inst's target; returns the callable the suite calls."""
    target_name = getattr(inst, "target_name", None)
    ns = getattr(inst, "ns", None)
    obj = ns[target_name] if ns is not None else inst.fn
    if compiler == "armature":
        compiled = armature.compile(obj, backend=backend)
    else:
        compiled = torch.compile(obj, backend=backend)
    if ns is not None and target_name != inst.entry_name:
        ns[target_name] = compiled  # the caller in the namespace calls the compiled one
        return inst.fn, compiled
    return compiled, compiled


def prepare_eager(w: Workload, shared: Instance | None) -> tuple[Prepared, list, Any, str]:
    inst = shared or w.make()
    sink = io.StringIO()
    outs = []
    with torch.no_grad():
        for _ in range(w.calls):
            torch.manual_seed(0)
            outs.append(_call(inst, inst.fn, sink))
    state = copy.deepcopy(inst.state())
    return Prepared(inst.fn, inst), outs, state, sink.getvalue()


def prepare_compiled(compiler: str, w: Workload, shared: Instance | None, eager_outs, eager_state,
                     eager_text, backend_name: str = "eager") -> Prepared:
    res: dict = {"error": None, "correct": None, "graphs": None, "breaks": None, "ops": None,
                 "recompiles": None, "limit_hit": None, "first_call_s": None, "mismatch": None}
    p = Prepared(result=res)
    stats = {"graphs": 0, "ops": 0}
    try:
        inst = shared or w.make()
        p.inst = inst
        if backend_name == "eager":
            base = arm_lookup_backend("eager") if compiler == "armature" else dynamo_eager_backend()
            backend = counting_backend(base, stats)
        else:
            backend = backend_name
        call_fn, compiled = _compile(compiler, inst, backend, w)
        sink = io.StringIO()
        outs = []
        watcher = _LimitWatcher()
        # catch (and keep off stderr) torch._dynamo's recompile-limit warnings
        dlog = logging.getLogger("torch._dynamo.convert_frame")
        dlog.addHandler(watcher)
        dlog.propagate = False
        try:
            with arm_explain.recording() as entries, torch.no_grad(), warnings.catch_warnings(record=True) as warns:
                warnings.simplefilter("always")
                for i in range(w.calls):
                    torch.manual_seed(0)
                    gb0 = sum(dynamo_counters["graph_break"].values())
                    t0 = time.perf_counter()
                    outs.append(_call(inst, call_fn, sink))
                    if i == 0:
                        res["first_call_s"] = time.perf_counter() - t0
                        res["graphs"] = stats["graphs"]
                        res["ops"] = stats["ops"]
                        if compiler == "armature":
                            res["breaks"] = sum(1 for e in entries if e.graph_break is not None
                                                and not e.graph_break.internal)
                            res["fallbacks"] = [e.fallback_reason.splitlines()[0] for e in entries
                                                if e.fallback_reason]
                        else:
                            res["breaks"] = sum(dynamo_counters["graph_break"].values()) - gb0
                            res["break_reasons"] = [k[:160] for k in dynamo_counters["graph_break"]][:5]
        finally:
            dlog.removeHandler(watcher)
            dlog.propagate = True
        if compiler == "armature":
            ents = armature.cache_entries(compiled)
            res["recompiles"] = max(len(ents) - 1, 0)
            caches = [c for c in list(arm_cache._ALL) if c.entries or c.limit_hit]
            res["limit_hit"] = any(c.limit_hit for c in caches)
            res["recompiles_all_frames"] = sum(c.recompiles for c in caches)
            res["armature_warnings"] = [str(x.message).splitlines()[0][:200] for x in warns][:3]
        else:
            res["recompiles"] = max(dynamo_cache_entries(inst.codes) - 1, 0) if inst.codes else None
            res["limit_hit"] = watcher.hits > 0
        res["graphs_all_calls"] = stats["graphs"] if backend_name == "eager" else None
        # correctness: every warm-up output, printed text and side-effect state
        bad = None
        for i, (o, e) in enumerate(zip(outs, eager_outs)):
            d = same(o, e, w.tol)
            if d:
                bad = f"call {i + 1} output: {d}"
                break
        if bad is None and sink.getvalue() != eager_text:
            bad = f"printed {sink.getvalue()[:80]!r} vs eager {eager_text[:80]!r}"
        if bad is None:
            d = same(inst.state(), eager_state, w.tol)
            if d:
                bad = f"side-effect state: {d}"
        res["correct"] = bad is None
        res["mismatch"] = bad
        p.fn = call_fn
    except Exception as e:  # noqa: BLE001
        res["error"] = err_text(e)
        res["traceback"] = traceback.format_exc()[-3000:]
        res["graphs"] = res["graphs"] if res["graphs"] is not None else stats["graphs"]
        res["correct"] = False
    return p


def time_rounds(preps: dict[str, Prepared], rounds: int, calls: int) -> dict[str, float | None]:
    """Median over interleaved rounds of the per-call time (s) of each variant."""
    live = {v: p for v, p in preps.items() if p.fn is not None}
    per: dict[str, list[float]] = {v: [] for v in live}
    sink = io.StringIO()
    pc = time.perf_counter
    gc.collect()
    gc_on = gc.isenabled()
    gc.disable()
    try:
        with torch.no_grad(), contextlib.redirect_stdout(sink), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            names = list(live)
            for r in range(rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                for v in order:
                    p = live[v]
                    fn, a, kw = p.fn, p.inst.args, p.inst.kwargs
                    t0 = pc()
                    for _ in range(calls):
                        fn(*a, **kw)
                    per[v].append((pc() - t0) / calls)
                sink.seek(0)
                sink.truncate()
    finally:
        if gc_on:
            gc.enable()
    return {v: (statistics.median(per[v]) if v in per else None) for v in preps}


def run_workload(w: Workload, rounds: int, compile_repeats: int = 1) -> dict:
    reset_all()
    row: dict = {"workload": w.name, "kind": w.kind, "calls": w.calls}
    t_start = time.perf_counter()
    try:
        shared = w.make() if w.shared else None
        eager, eager_outs, eager_state, eager_text = prepare_eager(w, shared)
    except Exception as e:  # noqa: BLE001
        row["error"] = f"eager failed: {err_text(e)}"
        return row
    preps = {"eager": eager}
    for c in COMPILERS:
        preps[c] = prepare_compiled(c, w, shared, eager_outs, eager_state, eager_text)
        row[c] = preps[c].result
    # a compiled variant that raised or is wrong is not timed
    for c in COMPILERS:
        if row[c]["error"] or not row[c]["correct"]:
            preps[c].fn = None
    try:
        med = time_rounds(preps, rounds, w.calls_per_round)
    except Exception as e:  # noqa: BLE001
        row["timing_error"] = err_text(e)
        med = {v: None for v in VARIANTS}
    row["eager_s"] = med["eager"]
    if compile_repeats > 1:
        remeasure_compile(w, shared, row, compile_repeats)
    for c in COMPILERS:
        r = row[c]
        r["call_s"] = med[c]
        r["overhead_s"] = (med[c] - med["eager"]) if med[c] is not None and med["eager"] else None
        r["rel_to_eager"] = (med[c] / med["eager"]) if med[c] is not None and med["eager"] else None
        r["compile_s"] = (r["first_call_s"] - med["eager"]) if r.get("first_call_s") and med["eager"] else None
    a, t = row["armature"], row["torch.compile"]
    row["compile_ratio"] = (a["compile_s"] / t["compile_s"]) if a["compile_s"] and t["compile_s"] and t["compile_s"] > 0 else None
    row["overhead_ratio"] = (a["overhead_s"] / t["overhead_s"]) if (a["overhead_s"] is not None and t["overhead_s"]
                                                                  and t["overhead_s"] > 0 and a["overhead_s"] > 0) else None
    row["wall_s"] = time.perf_counter() - t_start
    return row


def remeasure_compile(w: Workload, shared: Instance | None, row: dict, repeats: int) -> None:
    """Compile the workload ``repeats - 1`` more times per compiler from
    empty caches, alternating which compiler goes first, and keep each
    compiler's fastest first call.  Whoever compiles an operator first in the
    process pays torch's one-time costs for it (meta kernels, dispatch and
    decomposition caches); the fastest of several alternating compiles
    measures the frontend, not the order."""
    for r in range(1, repeats):
        order = COMPILERS if r % 2 == 0 else tuple(reversed(COMPILERS))
        for c in order:
            res = row[c]
            if res.get("error") or not res.get("correct") or res.get("first_call_s") is None:
                continue
            if c == "armature":
                armature.reset()
            else:
                torch._dynamo.reset()
            try:
                inst = shared or w.make()
                base = arm_lookup_backend("eager") if c == "armature" else dynamo_eager_backend()
                call_fn, _ = _compile(c, inst, counting_backend(base, {"graphs": 0, "ops": 0}), w)
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    torch.manual_seed(0)
                    t0 = time.perf_counter()
                    _call(inst, call_fn, io.StringIO())
                    took = time.perf_counter() - t0
            except Exception as e:  # noqa: BLE001
                res.setdefault("remeasure_errors", []).append(err_text(e))
                continue
            res.setdefault("first_calls_s", [res["first_call_s"]]).append(took)
            res["first_call_s"] = min(res["first_call_s"], took)


def warm_up_frontends() -> None:
    """Pay torch's one-time costs (fake-tensor mode, shape environment,
    meta kernels of common operators, the dispatcher's caches) for both
    compilers before anything is timed, so that the first workload of the
    suite is not charged for them."""
    class Warm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)
            self.lin = torch.nn.Linear(4, 8)
            self.ln = torch.nn.LayerNorm(8)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x))).mean((2, 3))
            h = torch.nn.functional.gelu(self.ln(self.lin(y)))
            q = h.view(2, 1, 2, 4)
            return torch.nn.functional.scaled_dot_product_attention(q, q, q).sum() + h.softmax(-1).sum()

    m = Warm().eval()
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        for c in COMPILERS:
            backend = arm_lookup_backend("eager") if c == "armature" else dynamo_eager_backend()
            compiled = armature.compile(m, backend=backend) if c == "armature" else torch.compile(m, backend=backend)
            compiled(x)
            compiled(x)
    reset_all()


# ---------------------------------------------------------------- inductor


def run_inductor(w: Workload, rounds: int) -> dict:
    reset_all()
    import torch._inductor.config as icfg
    from torch._inductor import codecache
    icfg.fx_graph_cache = False
    row: dict = {"workload": w.name}
    t_start = time.perf_counter()
    shared = w.make()
    eager, eager_outs, eager_state, eager_text = prepare_eager(w, shared)
    preps = {"eager": eager}
    old_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    for c in COMPILERS:
        # own on-disk and in-memory kernel caches: neither compiler reuses the other's kernels
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"suite-inductor-{c.replace('.', '')}-")
        for cls in ("PyCodeCache", "CppCodeCache", "CppPythonBindingsCodeCache", "CppWrapperCodeCache"):
            cache_cls = getattr(codecache, cls, None)
            if cache_cls is not None and hasattr(cache_cls, "cache_clear"):
                with contextlib.suppress(Exception):
                    cache_cls.cache_clear()
        w2 = Workload(w.name, w.kind, w.make, calls=2, shared=True, calls_per_round=w.calls_per_round, tol=1e-3)
        preps[c] = prepare_compiled(c, w2, shared, eager_outs, eager_state, eager_text, backend_name="inductor")
        row[c] = preps[c].result
        if row[c]["error"] or not row[c]["correct"]:
            preps[c].fn = None
    if old_dir is None:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    else:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = old_dir
    med = time_rounds(preps, rounds, w.calls_per_round)
    row["eager_s"] = med["eager"]
    if compile_repeats > 1:
        remeasure_compile(w, shared, row, compile_repeats)
    for c in COMPILERS:
        r = row[c]
        r["call_s"] = med[c]
        r["compile_s"] = (r["first_call_s"] - med["eager"]) if r.get("first_call_s") and med["eager"] else None
        r["speedup"] = (med["eager"] / med[c]) if med[c] else None
    row["wall_s"] = time.perf_counter() - t_start
    return row


# ====================================================================== report


def _cell_pair(a, b, fmt=str) -> str:
    f = lambda v: "—" if v is None else fmt(v)  # noqa: E731
    return f"{f(a)} / {f(b)}"


def _correct(r: dict) -> str:
    if r.get("error"):
        return "CRASH"
    return {True: "yes", False: "WRONG", None: "?"}[r.get("correct")]


def _recomp(r: dict) -> str:
    if r.get("recompiles") is None:
        return "—"
    return f"{r['recompiles']}{' (limit)' if r.get('limit_hit') else ''}"


def table_header(title: str, env: dict, head: list[str], legend: str) -> list[str]:
    """The first lines of a results page: title, environment, legend, and
    the header of its table (shared with dynamic_suite.py)."""
    return [f"# {title}",
            "",
            f"{env['date']} · torch {env['torch']} · armature {env['armature']} · Python {env['python']} · "
            f"{env['cpu']} ({env['cpu_count']} cores, {env['torch_threads']} torch threads)",
            "",
            legend,
            "",
            "| " + " | ".join(head) + " |",
            "| " + " | ".join(["---"] * len(head)) + " |"]


def markdown(rows: list[dict], ind_rows: list[dict], env: dict, notes: list[str]) -> str:
    ms = lambda s: f"{s * 1e3:.0f}"   # noqa: E731
    usf = lambda s: f"{s * 1e6:.1f}"  # noqa: E731
    ratio = lambda x: "—" if x is None else f"{x:.2f}x"  # noqa: E731
    head = ["workload", "correct (arm / tc)", "graphs (arm / tc)", "breaks (arm / tc)", "ops (arm / tc)",
            "recompiles (arm / tc)", "compile ms (arm / tc)", "compile ratio", "eager µs/call",
            "overhead µs (arm / tc)", "overhead ratio", "rel. to eager (arm / tc)"]
    lines = table_header(
        "armature vs torch.compile suite", env, head,
        "Backend \"eager\" wrapped in a counting backend for both; graphs / breaks / ops are for the first "
        "call; recompiles after all warm-up calls (30 for counter_attr / growing_global_list); "
        "overhead = median cached per-call time minus eager's, over interleaved rounds.")
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['workload']} | {r['error']} |" + " |" * (len(head) - 2))
            continue
        a, t = r["armature"], r["torch.compile"]
        cells = [r["workload"], f"{_correct(a)} / {_correct(t)}",
                 _cell_pair(a["graphs"], t["graphs"]), _cell_pair(a["breaks"], t["breaks"]),
                 _cell_pair(a["ops"], t["ops"]), f"{_recomp(a)} / {_recomp(t)}",
                 _cell_pair(a.get("compile_s"), t.get("compile_s"), ms), ratio(r.get("compile_ratio")),
                 "—" if r.get("eager_s") is None else usf(r["eager_s"]) if r["eager_s"] < 1e-3
                 else f"{r['eager_s'] * 1e3:.2f} ms",
                 _cell_pair(a.get("overhead_s"), t.get("overhead_s"), usf), ratio(r.get("overhead_ratio")),
                 _cell_pair(a.get("rel_to_eager"), t.get("rel_to_eager"), lambda x: f"{x:.2f}x")]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    for label, kinds in (("total, models", ("model",)), ("total, all workloads", ("model", "python"))):
        pairs = [(r["armature"].get("compile_s"), r["torch.compile"].get("compile_s")) for r in rows
                 if "error" not in r and r.get("kind") in kinds]
        if pairs and all(a is not None and t is not None for a, t in pairs):
            ta, tt = sum(a for a, _ in pairs), sum(t for _, t in pairs)
            lines.append(f"| **{label}** | | | | | | {ms(ta)} / {ms(tt)} | {ratio(ta / tt if tt else None)} "
                         "| | | | |")
    if ind_rows:
        lines += ["", "## backend=\"inductor\" (end to end)", "",
                  "| workload | correct (arm / tc) | compile s (arm / tc) | compile ratio | "
                  "eager ms/call | speedup over eager (arm / tc) |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for r in ind_rows:
            a, t = r["armature"], r["torch.compile"]
            cr = (a["compile_s"] / t["compile_s"]) if a.get("compile_s") and t.get("compile_s") else None
            lines.append("| " + " | ".join([
                r["workload"], f"{_correct(a)} / {_correct(t)}",
                _cell_pair(a.get("compile_s"), t.get("compile_s"), lambda s: f"{s:.1f}"), ratio(cr),
                "—" if r.get("eager_s") is None else f"{r['eager_s'] * 1e3:.2f}",
                _cell_pair(a.get("speedup"), t.get("speedup"), lambda x: f"{x:.2f}x")]) + " |")
    problems = []
    for r in rows + ind_rows:
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
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def environment() -> dict:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    return {"date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "torch": torch.__version__, "armature": getattr(armature, "__version__", "?"),
            "python": platform.python_version(), "cpu": cpu, "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "platform": platform.platform()}


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return repr(obj)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer timing rounds")
    ap.add_argument("--inductor", action="store_true", help="also resnet18, vit, gpt2 with backend=inductor")
    ap.add_argument("--only", default=None, help="comma-separated workload names")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--compile-repeats", type=int, default=None,
                    help="fresh compiles per compiler and workload, alternating which goes first; the "
                         "fastest counts (default 3, --quick 1)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (default 1: on a small shared machine more threads "
                         "made tiny convolutions ~100x slower and timings noisy)")
    ap.add_argument("--json", default=DEFAULT_JSON)
    ap.add_argument("--md", default=DEFAULT_MD)
    opts = ap.parse_args(argv)
    rounds = opts.rounds or (3 if opts.quick else 7)
    torch.set_num_threads(opts.threads)

    warnings.filterwarnings("ignore", category=UserWarning, module="torch")
    logging.getLogger("torch._dynamo").setLevel(logging.WARNING)
    assert armature.config.config.recompile_limit == RECOMPILE_LIMIT
    notes = [f"recompile limit: armature {armature.config.config.recompile_limit}, torch._dynamo "
             f"{getattr(torch._dynamo.config, 'recompile_limit', None) or torch._dynamo.config.cache_size_limit}"]
    models, note = model_workloads()
    if note:
        notes.append(note)
    workloads = models + python_workloads()
    only = set(opts.only.split(",")) if opts.only else None
    if only:
        unknown = only - {w.name for w in workloads} - (set(INDUCTOR_MODELS) if opts.inductor else set())
        known_py = set(PY_CASES)
        if unknown - known_py:
            # a model name without the model packages: skip, say so
            notes.append(f"not available here: {', '.join(sorted(unknown))}")
        workloads = [w for w in workloads if w.name in only]

    env = environment()
    t0 = time.perf_counter()
    repeats = opts.compile_repeats or (1 if opts.quick else 3)
    notes.append(f"compile time: fastest of {repeats} compile(s) from empty caches per compiler, alternating "
                 "which compiler goes first; both compilers warmed up on a small model before the first workload")
    warm_up_frontends()
    rows = []
    for w in workloads:
        print(f"[suite] {w.name} ...", file=sys.stderr, flush=True)
        row = run_workload(w, rounds, repeats)
        rows.append(row)
        print(f"[suite] {w.name} done in {row.get('wall_s', 0):.1f} s", file=sys.stderr, flush=True)
    ind_rows = []
    if opts.inductor:
        by_name = {w.name: w for w in models}
        for name in INDUCTOR_MODELS:
            if name not in by_name or (only and name not in only):
                continue
            print(f"[suite] inductor {name} ...", file=sys.stderr, flush=True)
            try:
                ind_rows.append(run_inductor(by_name[name], max(3, rounds // 2)))
            except Exception as e:  # noqa: BLE001
                ind_rows.append({"workload": name, "armature": {"error": err_text(e)},
                                 "torch.compile": {"error": err_text(e)}})
    reset_all()
    total = time.perf_counter() - t0
    notes.append(f"suite wall time {total:.0f} s ({'quick' if opts.quick else f'{rounds} rounds'}"
                 f"{', with inductor' if opts.inductor else ''})")
    md = markdown(rows, ind_rows, env, notes)
    print(md)
    for path, text in ((opts.json, json.dumps(_jsonable({"environment": env, "rounds": rounds, "rows": rows,
                                                          "inductor": ind_rows, "notes": notes,
                                                          "wall_s": total}), indent=1)),
                       (opts.md, md)):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    print(f"[suite] wrote {opts.json} and {opts.md}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
