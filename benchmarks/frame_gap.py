#!/usr/bin/env python
"""Frames armature gives up on where torch.compile captures a graph.

Runs the differential corpus (by default tests/differential,
tests/python_semantics, tests/graph_breaks, tests/modules) under pytest with
this file loaded as a plugin.  The plugin notes every function or module a
test compiles with ``armature.compile`` and a copy of the arguments of its
first call.  After the test, each noted case is run again twice from empty
caches, ``fullgraph=False``, with counting backends:

* under armature: the graphs captured, and every frame that ran entirely as
  Python (a cache entry made by ``compile_frame._fallback``, with its reason,
  or by ``compile_frame._native_frame``: a loop over modules that breaks);
* under torch.compile: the graphs captured, and the frames (code objects,
  torch's resume functions mapped to the code they resume) they came from.

A *given-up frame* is a frame (a case's code object, resume functions
counted as the code they continue) that armature ran entirely as Python
while torch.compile captured at least one graph in that same frame.  The
summary prints how many there are, how many cases armature captured no graph
at all for where torch.compile captured some, how many cases armature
compiled more graphs for than torch.compile (recompiles), and the reasons
armature gave, grouped, most frequent first.

Usage:
    PYTHONPATH=src python benchmarks/frame_gap.py [--json PATH] [--list] [pytest paths or args...]

The test outcomes themselves do not matter here (the suite's strict
internal-error switch is turned off, so an internal error counts as a frame
run as Python, as a user would see it).
"""
from __future__ import annotations

import collections
import copy
import json
import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_PATHS = ["tests/differential", "tests/python_semantics", "tests/graph_breaks", "tests/modules"]
_OUT_ENV = "ARMATURE_FRAME_GAP_OUT"


# --------------------------------------------------------------------------
# the pytest plugin (loaded with -p frame_gap)
# --------------------------------------------------------------------------

_pending: list = []      # cases noted during the current test
_roots: dict = {}        # id(CompiledFunction or original module) -> (model, options)


def _copy(obj):
    try:
        return copy.deepcopy(obj)
    except Exception:  # noqa: BLE001 - e.g. a non-leaf tensor: the suite's own copier
        from helpers import deep_copy
        return deep_copy(obj)


def pytest_configure(config):
    import armature
    import armature.api as api
    from armature.driver import compile_frame

    global _real_compile
    real_compile = _real_compile = api.compile

    def noting_compile(model=None, **options):
        if model is None:
            return lambda m: noting_compile(m, **options)
        result = real_compile(model, **options)
        if isinstance(result, api.CompiledFunction):
            _roots[id(result)] = (model, options, result)
        elif isinstance(result, api.CompiledModule):
            _roots[id(model)] = (model, options, result)
        return result

    armature.compile = noting_compile
    api.compile = noting_compile

    real_miss = api.CompiledFunction._miss

    def noting_miss(self, args, kwargs):
        key = id(self._self) if self._fn is api._module_call else id(self)
        root = _roots.get(key)
        if root is not None and root[2] is not None and not getattr(self, "_frame_gap_noted", False) \
                and not _measuring:
            self._frame_gap_noted = True
            model, options, _ = root
            call_args = args[1:] if self._has_self and self._fn is api._module_call else args
            try:
                _pending.append((_copy(model) if _is_module(model) else model, options,
                                 _copy((tuple(call_args), dict(kwargs))),
                                 _copy(model) if _is_module(model) else model,
                                 _copy((tuple(call_args), dict(kwargs)))))
            except Exception:  # noqa: BLE001 - arguments that cannot be copied: not measured
                pass
        return real_miss(self, args, kwargs)

    api.CompiledFunction._miss = noting_miss

    real_fallback = compile_frame._fallback

    def noting_fallback(fn, guards, reason, trace_time):
        if _measuring:
            _fallbacks.append((_frame_key(fn.__code__), reason))
        return real_fallback(fn, guards, reason, trace_time)

    compile_frame._fallback = noting_fallback

    # a frame that breaks inside a loop over modules runs its own code as
    # Python too (its calls are compiled): counted the same way
    real_native = getattr(compile_frame, "_native_frame", None)
    if real_native is None:   # (an armature from before native loop frames)
        return

    def noting_native(fn, ctx, e, backend, trace_time):
        entry = real_native(fn, ctx, e, backend, trace_time)
        if _measuring:
            _fallbacks.append((_frame_key(fn.__code__), entry.graph_break.reason))
        return entry

    compile_frame._native_frame = noting_native


def _is_module(obj) -> bool:
    import torch
    return isinstance(obj, torch.nn.Module)


_measuring = False
_fallbacks: list = []


def _frame_key(code):
    """The frame a code object stands for: armature's resume functions and
    torch's (``torch_dynamo_resume_in_NAME_at_LINE``) map to the code they
    continue.  The key names the file, the function and the line its
    definition starts on, so two functions of one name in one file (every
    ``forward`` of a test file) are two frames."""
    try:
        from armature.codegen.resume import origin_of
        code = origin_of(code)[0]
    except Exception:  # noqa: BLE001
        pass
    m = re.match(r"^torch_dynamo_resume_in_(.*)_at_(\d+)$", code.co_name)
    if m is None:
        return f"{code.co_filename}:{code.co_name}:{code.co_firstlineno}"
    name, line = m.group(1), int(m.group(2))
    start = _enclosing_def(code.co_filename, name, line)
    return f"{code.co_filename}:{name}:{start}" if start is not None else f"{code.co_filename}:{name}:?"


_DEFS: dict = {}


def _enclosing_def(filename, name, line):
    """The first line (decorators included, as co_firstlineno counts) of the
    innermost function ``name`` in ``filename`` whose body holds ``line``."""
    import ast
    defs = _DEFS.get(filename)
    if defs is None:
        defs = []
        try:
            with open(filename) as fh:
                tree = ast.parse(fh.read())
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                    defs.append((node.name, first, node.end_lineno))
        except (OSError, SyntaxError, ValueError):
            pass
        _DEFS[filename] = defs
    best = None
    for n, first, last in defs:
        if n == name and first <= line <= last and (best is None or first > best):
            best = first
    return best


def _torch_frames(counter_graph_frames):
    """A backend for torch.compile that records which frame each graph came
    from (the code object Dynamo's ``_compile`` is converting)."""
    import sys as _sys

    def backend(gm, example_inputs):
        f = _sys._getframe(1)
        while f is not None:
            if f.f_code.co_name == "_compile" and "code" in f.f_locals and \
                    f.f_code.co_filename.endswith("convert_frame.py"):
                counter_graph_frames.append(_frame_key(f.f_locals["code"]))
                break
            f = f.f_back
        else:
            counter_graph_frames.append("?")
        return gm.forward
    return backend


def _measure(case) -> dict:
    global _measuring
    import torch
    import armature
    import armature.api as api
    model_a, options, (args_a, kwargs_a), model_t, (args_t, kwargs_t) = case
    opts = {k: v for k, v in options.items() if k in ("dynamic",)}
    res = {"case": _describe(model_a)}
    graphs_a = []

    def count_a(gm, example_inputs):
        graphs_a.append(gm)
        return gm.forward

    _fallbacks.clear()
    _measuring = True
    armature.reset()
    try:
        _real_compile(model_a, backend=count_a, fullgraph=False, **opts)(*args_a, **kwargs_a)
    except Exception as e:  # noqa: BLE001 - the program's own exception, or armature's
        res["armature_error"] = f"{type(e).__name__}: {e}"[:200]
    finally:
        _measuring = False
        armature.reset()
    res["armature_graphs"] = len(graphs_a)
    res["armature_python_frames"] = sorted({k for k, _ in _fallbacks})
    res["armature_reasons"] = [r for _, r in _fallbacks]
    frames_t: list = []
    torch._dynamo.reset()
    try:
        torch.compile(model_t, backend=_torch_frames(frames_t), fullgraph=False, **opts)(*args_t, **kwargs_t)
    except Exception as e:  # noqa: BLE001
        res["torch_error"] = f"{type(e).__name__}: {e}"[:200]
    finally:
        torch._dynamo.reset()
    res["torch_graphs"] = len(frames_t)
    # a module's call: armature traces it from api._module_call, torch from
    # its wrapper (external_utils.inner) or the forward itself: one frame
    if _is_module(model_a):
        forward = getattr(type(model_a).forward, "__code__", None)
        root = {_frame_key(api._module_call.__code__)} | ({_frame_key(forward)} if forward else set())
        res["armature_python_frames"] = sorted({"<module call>" if k in root else k
                                                for k in res["armature_python_frames"]})
        frames_t = ["<module call>" if k in root or "external_utils.py:inner:" in k else k
                    for k in frames_t]
    res["torch_frames"] = sorted(set(frames_t))
    return res


def _describe(model) -> str:
    if _is_module(model):
        return f"module {type(model).__qualname__}"
    code = getattr(model, "__code__", None) or getattr(getattr(model, "__func__", None), "__code__", None)
    if code is not None:
        return f"{os.path.relpath(code.co_filename, ROOT)}:{code.co_firstlineno} {code.co_name}"
    return repr(model)[:80]


import pytest  # noqa: E402

_real_compile = None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _pending.clear()
    _roots.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    cases = list(_pending)
    _pending.clear()
    _roots.clear()
    out = os.environ.get(_OUT_ENV)
    if out:
        with open(out, "a") as f:
            for case in cases:
                try:
                    res = _measure(case)
                except Exception as e:  # noqa: BLE001 - never stop the run
                    res = {"case": "?", "measure_error": f"{type(e).__name__}: {e}"[:200]}
                res["test"] = item.nodeid
                f.write(json.dumps(res) + "\n")
    yield


# --------------------------------------------------------------------------
# the driver
# --------------------------------------------------------------------------

def _reason_key(reason: str) -> str:
    """Group reasons: the first line, without addresses, file positions,
    numbers or quoted names."""
    r = reason.splitlines()[0]
    r = re.sub(r"0x[0-9a-f]+", "0x..", r)
    r = re.sub(r"'[^']*'", "'..'", r)
    r = re.sub(r"\b\d+\b", "N", r)
    return r[:160]


def summarize(rows: list) -> dict:
    gap_frames = []
    no_graph_cases = []
    more_graphs = []
    for r in rows:
        if "measure_error" in r:
            continue
        torch_frames = set(r.get("torch_frames", []))
        for frame in r.get("armature_python_frames", []):
            if frame in torch_frames:
                gap_frames.append((r, frame))
        if r.get("armature_graphs", 0) == 0 and r.get("armature_python_frames") and r.get("torch_graphs", 0) > 0:
            no_graph_cases.append(r)
        if r.get("armature_graphs", 0) > r.get("torch_graphs", 0) > 0:
            more_graphs.append(r)
    reasons = collections.Counter()
    for r, frame in gap_frames:
        for reason in r["armature_reasons"]:
            reasons[_reason_key(reason)] += 1
    return {"cases": len(rows), "given_up_frames": gap_frames, "no_graph_cases": no_graph_cases,
            "more_graphs": more_graphs, "reasons": reasons}


def main(argv: list[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write every case's measurement here (one JSON object a line)")
    ap.add_argument("--list", action="store_true", help="list every given-up frame")
    ap.add_argument("paths", nargs="*", help="pytest paths/args (default: the differential corpus)")
    ns = ap.parse_args(argv)
    paths = ns.paths or DEFAULT_PATHS
    out = ns.json or tempfile.mktemp(suffix=".jsonl", prefix="frame_gap_")
    if os.path.exists(out):
        os.unlink(out)
    env = dict(os.environ)
    env[_OUT_ENV] = out
    env["ARMATURE_STRICT_INTERNAL_ERRORS"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "src"), os.path.join(ROOT, "benchmarks"),
                                         os.path.join(ROOT, "tests"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "pytest", "-p", "frame_gap", "-q", "-p", "no:cacheprovider",
           "--tb=no", "-W", "ignore", *paths]
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    rows = []
    if os.path.exists(out):
        with open(out) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    s = summarize(rows)
    print(f"cases measured: {s['cases']} (paths: {' '.join(paths)})")
    print(f"frames armature runs entirely as Python where torch.compile captures a graph: "
          f"{len(s['given_up_frames'])}")
    print(f"cases with no armature graph (a frame ran as Python) where torch.compile captures one: "
          f"{len(s['no_graph_cases'])}")
    print(f"cases where armature compiles more graphs than torch.compile: {len(s['more_graphs'])}")
    if s["reasons"]:
        print("\narmature's reasons in those frames (grouped):")
        for reason, n in s["reasons"].most_common(40):
            print(f"  {n:4d}  {reason}")
    if ns.list:
        print("\ngiven-up frames:")
        for r, frame in s["given_up_frames"]:
            print(f"  {r['test']}  [{frame}]\n      {r['armature_reasons'][0].splitlines()[0][:200]}")
        print("\nmore graphs than torch.compile:")
        for r in s["more_graphs"]:
            print(f"  {r['test']}  armature {r['armature_graphs']} vs torch {r['torch_graphs']}")
    if not ns.json:
        os.unlink(out) if os.path.exists(out) else None
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
