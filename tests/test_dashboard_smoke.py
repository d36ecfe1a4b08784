"""Smoke test of benchmarks/dashboard.py: one small HuggingFace model of
PyTorch's dashboard, inference only, both compilers, each in its own worker
process; exits 0, writes the JSON and the table, and both compilers get the
model right.  Needs transformers (the models venvs: `./dev models
tests/test_dashboard_smoke.py`); `./dev test`'s venv has none, so it skips there."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from helpers import USING_TORCH

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = "DistilBertForMaskedLM"

pytestmark = [
    pytest.mark.skipif(USING_TORCH, reason="runs armature itself, not the differential corpus"),
    pytest.mark.skipif(importlib.util.find_spec("transformers") is None,
                       reason="transformers is not installed (the dashboard's models need it: ./dev dashboard)"),
]


def test_dashboard_quick_one_model(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "src"), env.get("PYTHONPATH")]))
    out_json, out_md = tmp_path / "dashboard.json", tmp_path / "dashboard.md"
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "dashboard.py"), "--quick",
                        "--models", MODEL, "--mode", "inference", "--json", str(out_json), "--md", str(out_md)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"exit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}"
    results = json.loads(out_json.read_text())["results"]
    assert list(results) == [MODEL]
    for compiler in ("armature", "torch.compile"):
        cell = results[MODEL][compiler]["modes"]["inference"]
        assert cell["correct"] is True, (compiler, cell)
        assert cell["graphs"] >= 1 and cell["compile_s"] is not None, (compiler, cell)
    md = out_md.read_text()
    assert md.startswith("# armature vs torch.compile on PyTorch's dashboard models")
    assert f"| {MODEL} | inference | yes / yes |" in md
