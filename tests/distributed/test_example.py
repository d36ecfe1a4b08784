"""examples/distributed_gpt.py runs under torchrun as docs/guide/distributed.md says (2
processes, gloo), and its armature losses equal eager's on every rank."""
import os
import subprocess
import sys

import launch
from machine import generous

ROOT = os.path.dirname(os.path.dirname(launch.HERE))


def test_example_runs_under_torchrun():
    import armature
    src = os.path.dirname(os.path.dirname(os.path.abspath(armature.__file__)))
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
           "--master-port", str(launch.free_port()), os.path.join(ROOT, "examples", "distributed_gpt.py"),
           "--steps", "2"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=generous(180))
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert out.count("same losses") == 2, out[-4000:]
