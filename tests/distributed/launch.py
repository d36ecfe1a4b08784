"""Spawning the ranks of a multi-process test: ``world`` Python processes on
127.0.0.1 (gloo, CPU), each running ``worker.py`` on a list of scenarios and
writing its results as JSON.  Every run is bounded: past ``timeout`` seconds
all ranks are killed and the run reports a hang (a hang fails a test, it
never blocks the suite)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))   # (tests/: machine.py)
from machine import generous  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RunResult:
    def __init__(self, ranks: list[dict], outputs: list[str], hung: bool, codes: list):
        self.ranks, self.outputs, self.hung, self.codes = ranks, outputs, hung, codes

    def save(self, path: str) -> None:
        with open(path + ".tmp", "w") as f:
            json.dump({"ranks": self.ranks, "outputs": self.outputs, "hung": self.hung, "codes": self.codes}, f)
        os.replace(path + ".tmp", path)

    @classmethod
    def wait_for(cls, path: str, timeout: float) -> "RunResult":
        """The results another process saves at ``path`` (bounded wait,
        stretched for this machine: tests/machine.py)."""
        timeout = generous(timeout)
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise AssertionError(f"no distributed results at {path} after {timeout} s")
            time.sleep(0.5)
        with open(path) as f:
            d = json.load(f)
        return cls(d["ranks"], d["outputs"], d["hung"], d["codes"])

    def scenario(self, name: str) -> list[dict]:
        """The results of one scenario on every rank (a failure on a rank is
        reported with its traceback and the rank's output)."""
        if self.hung:
            raise AssertionError("the ranks did not finish in time (a hang?):\n" + "\n".join(self.outputs))
        out = []
        for rank, res in enumerate(self.ranks):
            r = res.get(name)
            if r is None:
                raise AssertionError(f"rank {rank} has no result for {name} (exit {self.codes[rank]}):\n"
                                     + self.outputs[rank][-4000:])
            if "error" in r:
                raise AssertionError(f"rank {rank}, {name}:\n{r['error']}")
            out.append(r)
        return out


def run(scenarios: list[str], world: int = 2, timeout: float = 150.0, extra_env: dict | None = None,
        modules: tuple[str, ...] = (), paths: tuple[str, ...] = ()) -> RunResult:
    """Run ``scenarios`` on ``world`` ranks.  Another suite's scenarios live
    in ``modules`` (imported by each rank after scenarios.py, from ``paths``
    put on the ranks' sys.path): tests/models uses it for its real models.
    ``timeout`` (and each collective's) is stretched for this machine
    (tests/machine.py): a bound for a hang, not a timing."""
    import armature
    timeout = generous(timeout)
    src = os.path.dirname(os.path.dirname(os.path.abspath(armature.__file__)))
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="armature-dist-")
    procs, logs = [], []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1",
                   ARMATURE_DIST_MODULES=",".join(modules),
                   ARMATURE_TEST_COLLECTIVE_TIMEOUT=str(generous(60)),
                   PYTHONPATH=os.pathsep.join([src, HERE, *paths, os.environ.get("PYTHONPATH", "")]))
        env.update(extra_env or {})
        log = open(os.path.join(tmp, f"rank{rank}.log"), "w+")
        logs.append(log)
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py"), tmp, ",".join(scenarios)],
                                      env=env, stdout=log, stderr=subprocess.STDOUT))
    deadline = time.monotonic() + timeout
    hung = False
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            hung = True
    if hung:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
    ranks = []
    for rank in range(world):
        path = os.path.join(tmp, f"rank{rank}.json")
        if os.path.exists(path):
            with open(path) as f:
                ranks.append(json.load(f))
        else:
            ranks.append({})
    shutil.rmtree(tmp, ignore_errors=True)   # (the logs and results are in the RunResult now)
    return RunResult(ranks, outputs, hung, [p.returncode for p in procs])
