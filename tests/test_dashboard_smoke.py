"""Smoke test of benchmarks/dashboard.py: one small HuggingFace model of
PyTorch's dashboard, inference only, both compilers, each in its own worker
process; exits 0, writes the JSON and the table, and both compilers get the
model right.  Needs transformers (the models venvs: `./dev models
tests/test_dashboard_smoke.py`); `./dev test`'s venv has none, so it skips there.
The report (summary, flags, causes) is checked everywhere on made-up results."""
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

pytestmark = pytest.mark.skipif(USING_TORCH, reason="runs armature itself, not the differential corpus")
needs_transformers = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None,
    reason="transformers is not installed (the dashboard's models need it: ./dev dashboard)")


@needs_transformers
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


def _cell(correct, graphs, reasons=(), error=None, compile_s=1.0):
    return {"correct": correct, "graphs": graphs, "graphs_all_calls": graphs, "breaks": len(reasons),
            "reasons": list(reasons), "fallbacks": [], "error": error, "mismatch": None if correct else "output 0",
            "compile_s": compile_s, "inputs": "x", "reduced": "", "params_m": 1.0}


def test_dashboard_report_flags_what_differs():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import dashboard

    def per(arm, tc):
        return {"armature": {"modes": {"inference": arm}}, "torch.compile": {"modes": {"inference": tc}}}

    results = {
        "BertForMaskedLM": per(_cell(True, 1, compile_s=0.5), _cell(True, 1, compile_s=2.0)),
        "XGLMForCausalLM": per(_cell(True, 4, ["formatting a symbolic int into a string @ x.py:1"]),
                               _cell(True, 1)),
        "TrOCRForCausalLM": per(_cell(False, 2, error="ValueError: size"), _cell(True, 1)),
        "lcnet_050": {"armature": {"modes": {"inference": _cell(True, 1)}}},   # one compiler only
    }
    env = {"date": "d", "python": "3", "torch": "t", "transformers": "x", "timm": "y", "cpu": "c", "cpu_count": 2}
    md = dashboard.markdown(results, env, [], "./dev dashboard")
    assert "| hf | inference | 3 | 2 | 3 | 2 | 0 |" in md          # 3 models: 2 right, 2 with more graphs
    assert "| BertForMaskedLM | inference | yes / yes | 1 / 1 |" in md
    assert "| **XGLMForCausalLM** | inference | yes / yes | 4 / 1 |" in md
    assert "| **TrOCRForCausalLM** | inference | CRASH / yes |" in md
    assert "armature break: formatting a symbolic int into a string @ x.py:1" in md
    assert "armature: ValueError: size" in md
    assert "lcnet_050 |" not in md and "run under one compiler only: lcnet_050" in md
