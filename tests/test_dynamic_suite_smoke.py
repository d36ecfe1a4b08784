"""Smoke test of benchmarks/dynamic_suite.py (varying sizes, armature vs
torch.compile): the MLP and Python-int workloads run in the main venv with
one timing round and one compile pass, exit 0 and write the table and JSON.
It checks the report's shape, not the targets (benchmarks are not run in CI)."""
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


def test_dynamic_suite_quick(tmp_path):
    py = MAIN_PY if os.path.exists(MAIN_PY) else sys.executable
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "src"), env.get("PYTHONPATH")]))
    out_json, out_md = tmp_path / "dynamic.json", tmp_path / "dynamic.md"
    p = subprocess.run([py, os.path.join(ROOT, "benchmarks", "dynamic_suite.py"), "--quick", "--rounds", "1",
                        "--only", "mlp,ints (dynamic=True)", "--json", str(out_json), "--md", str(out_md)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=generous(120))
    assert p.returncode == 0, f"exit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}"
    assert "| workload | sizes (in call order) | correct (arm / tc) | compiles (arm / tc)" in p.stdout
    assert "| mlp | batch 1..20 | yes / yes |" in p.stdout
    assert "## Targets missed" in p.stdout
    data = json.loads(out_json.read_text())
    rows = data["rows"]
    assert [r["workload"] for r in rows] == ["mlp", "ints (dynamic=True)"]
    mlp = rows[0]
    assert mlp["n_sizes"] == 20
    for c in ("armature", "torch.compile"):
        res = mlp[c]
        assert res["correct"] is True and res["error"] is None
        assert res["compiles"] == sum(res["compiles_per_call"]) >= 1
        assert res["first_pass_s"] > 0 and res["call_s"] > 0
    assert mlp["eager_s"] > 0
    assert out_md.read_text().startswith("# armature vs torch.compile: varying sizes")
