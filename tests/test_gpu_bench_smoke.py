"""Smoke test of benchmarks/gpu.py: its CPU dry run (tiny configs, the eager
backend, the pure-torch workload; transformers / torchvision workloads are
skipped with a note where they are not installed) exits 0 and writes the
table and the JSON, with both compilers correct and a compile time measured
in a subprocess for each."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import USING_TORCH
from machine import generous

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(USING_TORCH, reason="runs armature itself, not the differential corpus")


def test_gpu_bench_cpu_dry_run(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "src"), env.get("PYTHONPATH")]))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu.py"), "--device", "cpu", "--quick",
                        "--backend", "eager", "--only", "toy_mlp,gpt2_decode", "--rounds", "2", "--calls", "2",
                        "--out", str(tmp_path)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=generous(240))
    assert p.returncode == 0, f"exit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}"
    md = (tmp_path / "gpu.md").read_text()
    assert md.startswith("# armature vs torch.compile on cpu")
    assert "| toy_mlp | default |" in md and "| gpt2_decode | default |" in md
    rows = {r["workload"]: r for r in json.loads((tmp_path / "gpu.json").read_text())["rows"]}
    toy = rows["toy_mlp"]
    for c in ("armature", "torch"):
        assert toy[c]["correct"] is True, toy
        assert toy[c]["ms"] > 0
        assert toy[c]["compile"]["compile_s"] >= 0, toy[c]
    gpt2 = rows["gpt2_decode"]
    assert "note" in gpt2 or gpt2["armature"]["correct"] is True, gpt2


def test_gpu_bench_refuses_cuda_without_a_gpu(tmp_path):
    import torch
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "src"), env.get("PYTHONPATH")]))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu.py"), "--out", str(tmp_path)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=generous(120))
    assert p.returncode == 2 and "torch.cuda.is_available() is False" in p.stderr
