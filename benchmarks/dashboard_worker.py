#!/usr/bin/env python
"""One model under one compiler, for benchmarks/dashboard.py (run in its own process).

``dashboard_worker.py MODEL --compiler armature|torch.compile --modes inference,train --out PATH``

Per mode, on a fresh build of the model (benchmarks/dashboard_models.py):

* eager first, on a deep copy of the model: ``CALLS`` calls, each from the
  same seed, keeping the outputs (and in training the loss's gradients of
  every parameter; the buffers after the last call);
* then the model compiled (backend "eager" wrapped in a counter, so the
  time is the frontend's) and called the same way; compared with eager
  call by call: outputs, gradients, and the buffers at the end (batch-norm
  statistics).  ``inference`` is ``eval()`` under ``torch.no_grad()``;
  ``train`` is ``train()``, forward, the loss (PyTorch's: the model's own
  loss for HuggingFace, the mean of the output for timm), ``backward()``.
  The model is compiled (``armature.compile(model)`` / ``torch.compile(model)``);
  the loss of timm models and ``backward()`` run outside it.

Reported per mode: correct (and the first difference), graphs of the first
call and of all calls (a later graph is a recompile), ops, graph breaks with
their reasons (armature: the cache entries' recorded breaks, their location,
and frames that ran as Python; torch.compile: ``counters["graph_break"]``),
and the compile time: first compiled call minus the fastest eager call
(both forward only), the fastest of ``--compile-repeats`` compiles from
empty caches (the first compile of a process pays one-time costs).  The result is written to ``--out`` after each mode, so
a crash or a timeout in one mode keeps the other.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import logging
import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import random
import sys
import time
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None

CALLS = 2          # the first compiles, the second must hit the cache
RTOL = 1e-3        # of the largest magnitude in the eager tensor
ATOL = 1e-6


def _prepare_imports() -> None:
    """torchvision's compiled ops do not load in the old library set's venv;
    transformers and timm import it: the same stub as tests/models."""
    try:
        import libsets
        libsets.import_torchvision()
    except Exception:  # noqa: BLE001  (no torchvision at all: fine)
        pass


# ---------------------------------------------------------------- compilers


def counting(base, stats):
    def backend(gm, example_inputs):
        stats["graphs"] += 1
        stats["ops"] += sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
        return base(gm, example_inputs)
    return backend


class Armature:
    name = "armature"

    def __init__(self):
        import armature
        from armature.backends import lookup_backend
        from armature.driver import explain
        self.mod, self.eager, self.explain = armature, lookup_backend("eager"), explain

    def reset(self):
        self.mod.reset()

    def compile(self, model, stats):
        return self.mod.compile(model, backend=counting(self.eager, stats))

    @contextlib.contextmanager
    def watch(self, info):
        with self.explain.recording() as entries:
            try:
                yield
            finally:
                self._collect(entries, info)

    @staticmethod
    def _collect(entries, info):
        for e in entries:
            b = e.graph_break
            if b is not None and not b.internal:
                loc = b.location
                where = f"{_short(loc.filename if loc else None)}:{loc.lineno if loc else '?'}"
                info["breaks"] += 1
                info["reasons"].append(f"{b.reason.splitlines()[0][:240]} @ {where}")
            if e.fallback_reason:
                info["fallbacks"].append(e.fallback_reason.splitlines()[0][:300])


class TorchCompile:
    name = "torch.compile"

    def __init__(self):
        import torch._dynamo
        from torch._dynamo.backends.registry import lookup_backend
        from torch._dynamo.utils import counters
        self.dynamo, self.eager, self.counters = torch._dynamo, lookup_backend("eager"), counters

    def reset(self):
        self.dynamo.reset()
        self.counters.clear()

    def compile(self, model, stats):
        import torch
        return torch.compile(model, backend=counting(self.eager, stats))

    @contextlib.contextmanager
    def watch(self, info):
        before = dict(self.counters["graph_break"])
        try:
            yield
        finally:
            self._collect(before, info)

    def _collect(self, before, info):
        for k, v in self.counters["graph_break"].items():
            n = v - before.get(k, 0)
            if n > 0:
                info["breaks"] += n
                info["reasons"].append(f"{str(k).splitlines()[0][:240]}" + (f" (x{n})" if n > 1 else ""))


def _short(path: str | None) -> str:
    """A file name as the table shows it: from the package on (site-packages) or from the repository."""
    if not path:
        return "?"
    if "site-packages" + os.sep in path:
        return path.split("site-packages" + os.sep, 1)[1]
    return os.path.relpath(path, ROOT) if path.startswith(ROOT) else path


def warm_up(compiler) -> None:
    """Pay the compiler's one-time costs (imports, fake-tensor mode, common
    meta kernels) before anything is timed, with and without grad."""
    import torch

    class Warm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)
            self.lin = torch.nn.Linear(4, 8)
            self.ln = torch.nn.LayerNorm(8)
            self.emb = torch.nn.Embedding(10, 8)

        def forward(self, x, ids):
            y = torch.relu(self.bn(self.conv(x))).mean((2, 3))
            h = torch.nn.functional.gelu(self.ln(self.lin(y))) + self.emb(ids).mean(1)
            q = h.view(2, 1, 2, 4)
            a = torch.nn.functional.scaled_dot_product_attention(q, q, q)
            return torch.nn.functional.dropout(a, 0.1, self.training).sum() + h.softmax(-1).sum()

    m = Warm()
    args = (torch.randn(2, 3, 8, 8), torch.randint(0, 10, (2, 3)))
    for mode in ("inference", "train"):
        m.train(mode == "train")
        compiled = compiler.compile(m, {"graphs": 0, "ops": 0})
        with torch.set_grad_enabled(mode == "train"):
            compiled(*args)
            out = compiled(*args)
        if mode == "train":
            out.backward()
    compiler.reset()


# ---------------------------------------------------------------- one step


def flatten(out) -> list:
    """The leaves of a model output: tensors (detached copies) and plain values."""
    import torch
    if isinstance(out, torch.Tensor):
        return [out.detach().clone()]
    if hasattr(out, "to_tuple"):       # transformers' ModelOutput
        return flatten(out.to_tuple())
    if isinstance(out, dict):
        return [v for k in out for v in flatten(out[k])]
    if isinstance(out, (tuple, list)):
        return [v for o in out for v in flatten(o)]
    if out is None or isinstance(out, (int, float, bool, str)):
        return [out]
    return [f"<{type(out).__name__}>"]


def step(module, params_of, built, mode):
    """One call (and in training the backward): (output leaves, gradients, forward seconds)."""
    import torch
    for p in params_of.parameters():
        p.grad = None
    args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in built.args)
    kwargs = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in built.kwargs.items()}
    torch.manual_seed(0)
    random.seed(0)
    if np is not None:
        np.random.seed(0)      # BigBird draws its random attention blocks with NumPy in training
    if mode == "inference":
        with torch.no_grad():
            t0 = time.perf_counter()
            out = module(*args, **kwargs)
            took = time.perf_counter() - t0
        return flatten(out), {}, took
    t0 = time.perf_counter()
    out = module(*args, **kwargs)
    took = time.perf_counter() - t0
    loss = built.loss(out)
    loss.backward()
    grads = {n: (p.grad.detach().clone() if p.grad is not None else None) for n, p in params_of.named_parameters()}
    return flatten(out), grads, took


def differ(got, want, what: str, worst: list) -> str | None:
    """None when equal within tolerance, else the first difference (worst[0]
    keeps the largest relative error seen)."""
    import torch
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"{what}: {type(got).__name__} vs a tensor"
        if got.shape != want.shape or got.dtype != want.dtype:
            return f"{what}: {tuple(got.shape)} {got.dtype} vs eager's {tuple(want.shape)} {want.dtype}"
        if not want.is_floating_point():
            return None if torch.equal(got, want) else f"{what}: integer values differ"
        g, w = got.double(), want.double()
        nan_g, nan_w = torch.isnan(g), torch.isnan(w)
        if not torch.equal(nan_g, nan_w):
            return f"{what}: NaN where eager has none (or the reverse)"
        g, w = g.masked_fill(nan_g, 0), w.masked_fill(nan_w, 0)
        err = (g - w).abs().max().item() if g.numel() else 0.0
        scale = w.abs().max().item() if w.numel() else 0.0
        rel = err / scale if scale else err
        worst[0] = max(worst[0], rel)
        if err > RTOL * scale + ATOL:
            return f"{what}: max abs diff {err:.3g} (eager's max {scale:.3g})"
        return None
    if got != want:
        return f"{what}: {got!r} vs eager's {want!r}"
    return None


def compare(run, ref, worst) -> str | None:
    outs, grads, _ = run
    ref_outs, ref_grads, _ = ref
    if len(outs) != len(ref_outs):
        return f"{len(outs)} output leaves vs eager's {len(ref_outs)}"
    for i, (g, w) in enumerate(zip(outs, ref_outs)):
        d = differ(g, w, f"output {i}", worst)
        if d:
            return d
    for n, w in ref_grads.items():
        g = grads.get(n)
        if (g is None) != (w is None):
            return f"grad of {n}: {'None' if g is None else 'a tensor'} vs eager's {'None' if w is None else 'a tensor'}"
        if w is not None:
            d = differ(g, w, f"grad of {n}", worst)
            if d:
                return d
    return None


# ---------------------------------------------------------------- one mode


def run_mode(name: str, compiler, mode: str, repeats: int = 2) -> dict:
    import torch
    from dashboard_models import build

    res: dict = {"correct": None, "mismatch": None, "error": None, "graphs": None, "graphs_all_calls": None,
                 "ops": None, "breaks": None, "reasons": [], "fallbacks": [], "compile_s": None,
                 "first_call_s": None, "eager_s": None, "max_rel_err": None}
    t_build = time.perf_counter()
    built = build(name)
    res.update(reduced=built.reduced, inputs=built.inputs,
               params_m=round(sum(p.numel() for p in built.model.parameters()) / 1e6, 2),
               build_s=time.perf_counter() - t_build)
    model = built.model
    ref_model = copy.deepcopy(model)
    model.train(mode == "train")
    ref_model.train(mode == "train")
    try:
        ref = [step(ref_model, ref_model, built, mode) for _ in range(CALLS)]
    except Exception as e:  # noqa: BLE001
        res["error"] = f"eager failed: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        return res
    res["eager_s"] = min(r[2] for r in ref)
    ref_buffers = {n: b.detach().clone() for n, b in ref_model.named_buffers()}
    del ref_model

    compiler.reset()
    stats = {"graphs": 0, "ops": 0}
    info = {"breaks": 0, "reasons": [], "fallbacks": []}
    worst = [0.0]
    try:
        compiled = compiler.compile(model, stats)
        runs = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with compiler.watch(info):
                runs.append(step(compiled, model, built, mode))
            res["graphs"], res["ops"] = stats["graphs"], stats["ops"]
            res["first_call_s"] = runs[0][2]
            for _ in range(CALLS - 1):
                runs.append(step(compiled, model, built, mode))
        res["graphs_all_calls"] = stats["graphs"]
        res.update(breaks=info["breaks"], reasons=info["reasons"], fallbacks=info["fallbacks"])
        bad = None
        for i, (run, r) in enumerate(zip(runs, ref)):
            d = compare(run, r, worst)
            if d:
                bad = f"call {i + 1}: {d}"
                break
        if bad is None:
            for n, b in model.named_buffers():
                d = differ(b.detach(), ref_buffers.get(n), f"buffer {n} after {CALLS} calls", worst)
                if d:
                    bad = d
                    break
        res["correct"] = bad is None
        res["mismatch"] = bad
        res["max_rel_err"] = worst[0]
        # (after the checks: these calls move batch-norm statistics again)
        # the fastest of `repeats` compiles from empty caches: the first compile of a
        # process pays one-time costs the second does not (lazy imports, first traces)
        firsts = [res["first_call_s"]]
        try:
            for _ in range(repeats - 1):
                compiler.reset()
                again = compiler.compile(model, {"graphs": 0, "ops": 0})
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    firsts.append(step(again, model, built, mode)[2])
        except Exception as e:  # noqa: BLE001  (the first compile's time stands)
            res["remeasure_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        res["first_calls_s"] = firsts
        res["first_call_s"] = min(firsts)
        res["compile_s"] = res["first_call_s"] - res["eager_s"]
    except Exception as e:  # noqa: BLE001
        res["correct"] = False
        res["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        res["traceback"] = traceback.format_exc()[-4000:]
        res["graphs"] = res["graphs"] if res["graphs"] is not None else stats["graphs"]
        res.update(breaks=info["breaks"], reasons=info["reasons"], fallbacks=info["fallbacks"])
    finally:
        compiler.reset()
    return res


def versions() -> dict:
    import importlib.metadata as md
    import platform
    out = {"python": platform.python_version()}
    for dist in ("torch", "transformers", "timm"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--compiler", choices=("armature", "torch.compile"), required=True)
    ap.add_argument("--modes", default="inference,train")
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--compile-repeats", type=int, default=2,
                    help="compiles per mode from empty caches; the fastest first call counts")
    opts = ap.parse_args(argv)

    _prepare_imports()
    import torch
    torch.set_num_threads(opts.threads)
    warnings.filterwarnings("ignore")
    for name in ("torch._dynamo", "torch._inductor", "transformers", "timm", "armature"):
        logging.getLogger(name).setLevel(logging.ERROR)
    from dashboard_models import suite_of

    result = {"model": opts.model, "suite": suite_of(opts.model), "compiler": opts.compiler,
              "versions": versions(), "modes": {}}

    def save():
        tmp = opts.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1, default=repr)
        os.replace(tmp, opts.out)

    compiler = Armature() if opts.compiler == "armature" else TorchCompile()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        warm_up(compiler)
    result["warm_up_s"] = time.perf_counter() - t0
    for mode in opts.modes.split(","):
        result["modes"][mode] = {"error": "did not finish (crash or timeout)"}
        save()
        with contextlib.redirect_stdout(io.StringIO()):
            result["modes"][mode] = run_mode(opts.model, compiler, mode, opts.compile_repeats)
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
