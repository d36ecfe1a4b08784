"""Smoke tests of the overhead benchmark and the demo: they run, exit 0 and
print their sections.  Each runs in a subprocess (the demo sets global torch
state: grad mode, thread count) with the smallest settings."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import USING_TORCH
from machine import generous

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(USING_TORCH, reason="runs armature itself, not the differential corpus")


def run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "src"), env.get("PYTHONPATH")]))
    p = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=generous(timeout))
    assert p.returncode == 0, f"exit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}"
    return p


def test_overhead_benchmark_quick(tmp_path):
    out = tmp_path / "overhead.json"
    p = run([os.path.join(ROOT, "benchmarks", "overhead.py"), "--quick", "--json", str(out)])
    for text in ("Cached-call dispatch overhead", "| workload", "fn, 1 tensor arg", "fn, 4 tensor args",
                 "fn, 16 tensor args", "nn.Linear(16,16)", "torch.compile", "torch "):
        assert text in p.stdout, text
    data = json.loads(out.read_text())
    assert data["environment"]["torch"]
    assert [r["workload"] for r in data["results"]] == [
        "fn, 1 tensor arg", "fn, 4 tensor args", "fn, 16 tensor args", "nn.Linear(16,16)"]
    for r in data["results"]:
        for key in ("eager_ns", "armature_ns", "torch_compile_ns"):
            assert r[key] > 0
        assert len(r["per_round_ns"]["armature"]) == data["rounds"]


DEMO_SECTIONS = ("1. Captured graphs", "2. Guards", "3. Graph breaks and fallbacks", "4. Compile time",
                 "5. Speed", "correctness")


def test_demo_quick():
    p = run([os.path.join(ROOT, "demo", "run_demo.py"), "--backend", "eager", "--no-torch-compile", "--quick"])
    for text in DEMO_SECTIONS:
        assert text in p.stdout, text
    assert "no graph breaks" in p.stdout
    assert "FX graph code" in p.stdout
    assert "armature output matches eager" in p.stdout
    assert "torch.compile" not in p.stdout.split("5. Speed")[1]


def test_demo_compares_frontend_compile_time():
    p = run([os.path.join(ROOT, "demo", "run_demo.py"), "--backend", "eager", "--rounds", "1", "--calls", "1"])
    section = p.stdout.split("4. Compile time")[1].split("5. Speed")[0]
    assert "frontend only" in section
    assert "armature / torch.compile frontend time:" in section
    assert "armature output matches eager" in p.stdout


def test_demo_reports_a_fallback(tmp_path):
    """A model armature cannot capture whole (data-dependent control flow):
    the demo reports it instead of crashing, and the result is still right."""
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.join(ROOT, "demo")!r})
        import torch
        import model as M
        import run_demo

        class Branchy(M.TinyGPT):
            def forward(self, idx):
                x = M.TinyGPT.forward(self, idx)
                if x.sum() > 0:
                    return x * 2
                return x

        def make(cfg=M.GPTConfig(), seed=0):
            torch.manual_seed(seed)
            return Branchy(cfg).eval(), torch.randint(0, cfg.vocab_size, (cfg.batch, cfg.seq_len))

        run_demo.make_model = make
        sys.exit(run_demo.main(["--backend", "eager", "--no-torch-compile", "--quick"]))
    """))
    p = run([str(driver)])
    for text in DEMO_SECTIONS:
        assert text in p.stdout, text
    assert "no graph breaks" not in p.stdout
    assert "data" in p.stdout  # the reason names the data-dependent branch
    assert "armature output matches eager" in p.stdout


def test_cpp_kernel_batches_benchmark_quick():
    p = run([os.path.join(ROOT, "benchmarks", "cpp_kernel_batches.py"), "--model", "resnet", "--depth", "2",
             "--rounds", "1", "--steady-rounds", "1"], timeout=600)
    for text in ("# round 1, one per kernel: compile", "# round 1, batched: compile", "resnet, 2 blocks, 1 rounds",
                 "compile s:  one per kernel", "steady ms (one process, interleaved, 1 thread)"):
        assert text in p.stdout, text


def test_per_block_benchmark_quick(tmp_path):
    """benchmarks/per_block.py (``./dev suite --per-block``): each compiler in
    a child process; the table; armature's blocks share their graphs."""
    out = tmp_path / "per_block.json"
    p = run([os.path.join(ROOT, "benchmarks", "per_block.py"), "--quick", "--json", str(out)], timeout=300)
    assert "| block | blocks | backend | armature first s |" in p.stdout
    results = json.loads(out.read_text())
    assert {r["compiler"] for r in results} == {"armature", "torch.compile"}
    assert all("error" not in r for r in results), results
    graphs = {r["compiler"]: r["graphs"] for r in results}
    assert graphs["armature"] <= graphs["torch.compile"]
    assert all(r["max_err"] < 1e-4 for r in results)
