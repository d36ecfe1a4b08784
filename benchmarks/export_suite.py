"""Export time, side by side: armature.export and torch.export.export
(strict=True, Dynamo) on the real models of tests/models/zoo.py (eval mode,
the zoo's example inputs), each exported ``--repeats`` times in this
process; the median wall time of each and their ratio, and whether
armature's program gives eager's outputs.

    ./dev suite --export [--only NAME ...] [--repeats N]
"""
from __future__ import annotations

import argparse
import copy
import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "src"), os.path.join(ROOT, "tests", "models"), os.path.join(ROOT, "tests")]

import torch  # noqa: E402
import torch.utils._pytree as pytree  # noqa: E402

import armature  # noqa: E402


def _timed(fn, repeats: int) -> tuple[float | None, object, str]:
    times, result, err = [], None, ""
    for _ in range(repeats):
        t0 = time.perf_counter()
        try:
            result = fn()
        except Exception as e:   # reported in the table, not raised
            return None, None, f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result, err


def _matches(ep, model, args, kwargs) -> str:
    try:
        got = pytree.tree_leaves(ep.module()(*args, **kwargs))
        want = pytree.tree_leaves(model(*args, **kwargs))
        ok = len(got) == len(want) and all(
            torch.allclose(a, b, rtol=1e-4, atol=1e-4) if isinstance(a, torch.Tensor) else a == b
            for a, b in zip(got, want))
        return "yes" if ok else "NO"
    except Exception as e:
        return f"error: {type(e).__name__}"


def main(argv=None) -> int:
    from zoo import BUILDERS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", default=None, help="model names (default: all of the zoo)")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args(argv)
    names = a.only or sorted(BUILDERS)
    print(f"torch {torch.__version__}, {a.repeats} exports each, median seconds\n")
    print("| model | armature.export s | torch.export (strict) s | ratio | armature program matches eager |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name in names:
        case = BUILDERS[name]()
        model = copy.deepcopy(case.model).eval()
        args, kwargs = case.make_inputs()
        with torch.no_grad():
            t_arm, ep, err_a = _timed(lambda: armature.export(model, args, kwargs), a.repeats)
            t_torch, _, err_t = _timed(lambda: torch.export.export(model, args, kwargs, strict=True), a.repeats)
            ok = _matches(ep, model, args, kwargs) if ep is not None else err_a
        ratio = f"{t_arm / t_torch:.2f}" if t_arm and t_torch else "-"
        cell = lambda t, e: f"{t:.2f}" if t is not None else e  # noqa: E731
        print(f"| {name} | {cell(t_arm, err_a)} | {cell(t_torch, err_t)} | {ratio} | {ok} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
