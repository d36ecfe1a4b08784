"""Smoke test of benchmarks/suite.py: the hard-Python part runs in the main
venv (no torchvision/transformers/timm there: model workloads are skipped
with a note), exits 0 and prints the table."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import USING_TORCH
from machine import generous

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAIN_PY = os.path.join(ROOT, ".venv", "bin", "python")

pytestmark = pytest.mark.skipif(USING_TORCH, reason="runs armature itself, not the differential corpus")


def test_suite_quick_closures(tmp_path):
    py = MAIN_PY if os.path.exists(MAIN_PY) else sys.executable
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "src"), env.get("PYTHONPATH")]))
    out_json, out_md = tmp_path / "suite.json", tmp_path / "suite.md"
    p = subprocess.run([py, os.path.join(ROOT, "benchmarks", "suite.py"), "--quick", "--only", "closures",
                        "--json", str(out_json), "--md", str(out_md)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=generous(120))
    assert p.returncode == 0, f"exit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}"
    assert "| workload | correct (arm / tc) | graphs (arm / tc)" in p.stdout
    assert "| closures |" in p.stdout
    rows = json.loads(out_json.read_text())["rows"]
    assert [r["workload"] for r in rows] == ["closures"]
    assert out_md.read_text().startswith("# armature vs torch.compile suite")
