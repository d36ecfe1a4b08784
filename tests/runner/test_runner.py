"""`python -m armature run`: unmodified torch.compile scripts run through
armature print exactly what they print under torch.compile, and the summary
names the breaks, recompiles and their places.  Each script runs twice as a
subprocess: plain (torch.compile, the oracle) and under the runner."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from machine import generous

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")
SRC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "src")


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]))
    env.pop("ARMATURE_LOGS", None)
    env.pop("ARMATURE_REPORT", None)
    env["ARMATURE_STRICT_INTERNAL_ERRORS"] = "1"
    env.update(extra)
    return env


def run(args, cwd=SCRIPTS, **env):
    return subprocess.run([sys.executable, *args], cwd=cwd, env=_env(**env), capture_output=True, text=True,
                          timeout=generous(600))


def both(script, *args, runner_opts=()):
    plain = run([script, *args])
    assert plain.returncode == 0, plain.stderr
    arm = run(["-m", "armature", "run", *runner_opts, script, *args])
    assert arm.returncode == 0, arm.stderr
    assert arm.stdout == plain.stdout        # the same printed results as under torch.compile
    assert arm.stdout.strip()
    return arm


def at(script: str, text: str) -> str:
    """``script:line`` of the first line containing ``text``."""
    with open(os.path.join(SCRIPTS, script), encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if text in line:
                return f"{script}:{n}"
    raise AssertionError(f"{text!r} not in {script}")


def summary(proc) -> str:
    text = proc.stderr
    assert "armature run summary" in text, text
    return text[text.index("armature run summary"):]


def test_training_loop_with_a_break_and_a_recompile(tmp_path):
    report = tmp_path / "train.html"
    proc = both("train_loop.py", runner_opts=("--report", str(report)))
    s = summary(proc)
    assert "print() writes output" in s and at("train_loop.py", 'print("hidden mean"') in s
    assert "hint: print() runs as Python between two graphs" in s
    # a step counter on the module (self.steps): static at first, a symbol once it has changed
    # (one recompile; torch.compile, keeping it static, recompiles per value)
    assert "guard failed: self.steps == 0 (now: 1)" in s
    assert "x.size()[0] == 12 failed: got 4" in s            # the recompile for the last, smaller batch
    assert f"Net.forward ({at('train_loop.py', 'def forward')})" in s and "[compiled module Net]" in s
    assert "compile time:" in s and "tracing" in s and "backend" in s
    assert report.exists() and report.stat().st_size > 2000


def test_mark_dynamic_set_stance_and_is_compiling():
    proc = both("dynamic_stance.py")
    s = summary(proc)
    # mark_dynamic made the rows dynamic from the first compile: no recompile
    # for sizes 4, 6, 9; reset() dropped the entry (a second compile)
    assert "recompiles: 0" in s
    assert f"norm_rows ({at('dynamic_stance.py', 'def norm_rows')})" in s


def test_decorated_module_method_disable_and_graph_break():
    proc = both("method_decorator.py")
    s = summary(proc)
    assert "call to log_shape, which is marked armature.disable" in s
    assert at("method_decorator.py", "shape = log_shape(y)") in s
    assert "graph_break() was called" in s and at("method_decorator.py", "torch._dynamo.graph_break()") in s
    assert f"Block.forward ({at('method_decorator.py', 'mode=')})" in s   # (the code starts at its decorator)


def test_run_module_form(tmp_path):
    (tmp_path / "mymod.py").write_text(
        "import sys, torch\n"
        "f = torch.compile(lambda x: x * 2 + 1, backend='eager')\n"
        "print(sys.argv[1:], f(torch.ones(2)).tolist())\n")
    proc = run(["-m", "armature", "run", "-m", "mymod", "a", "b"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "['a', 'b'] [3.0, 3.0]\n"
    assert "graphs: 1" in summary(proc)


def test_exit_code_and_exceptions_pass_through(tmp_path):
    (tmp_path / "fails.py").write_text("import sys\nprint('before')\nsys.exit(3)\n")
    proc = run(["-m", "armature", "run", "fails.py"], cwd=str(tmp_path))
    assert proc.returncode == 3 and proc.stdout == "before\n"
    (tmp_path / "raises.py").write_text("raise ValueError('from the script')\n")
    proc = run(["-m", "armature", "run", "raises.py"], cwd=str(tmp_path))
    assert proc.returncode == 1 and "ValueError: from the script" in proc.stderr


def test_bad_command_lines():
    assert run(["-m", "armature"]).returncode == 2
    proc = run(["-m", "armature", "run", "no_such_script.py"])
    assert proc.returncode == 2 and "no such script" in proc.stderr
    proc = run(["-m", "armature", "run", "--backend", "nope", "train_loop.py"])
    assert proc.returncode == 2 and "unknown backend 'nope'" in proc.stderr


def test_armature_report_env(tmp_path):
    path = tmp_path / "env.html"
    proc = run(["-c", "import torch, armature\n"
                      "f = armature.compile(lambda x: x.sin() + 1, backend='eager')\n"
                      "f(torch.ones(3))\n"], cwd=str(tmp_path), ARMATURE_REPORT=str(path))
    assert proc.returncode == 0, proc.stderr
    assert path.exists() and "&lt;lambda&gt;" in path.read_text()   # (escaped)


def test_libraries_asking_whether_a_model_is_compiled():
    # accelerate-style checks (isinstance(m, OptimizedModule), m._orig_mod, the
    # wrapper given its module back) print what they print under torch.compile
    both("compiled_module_checks.py")
