"""The means by which the suite runs as on other machines (tests/machine.py,
tests/machine_stubs, tests/machine_conditions.py) do what they say."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

import machine
from machine import generous

HERE = os.path.dirname(os.path.abspath(__file__))


def test_bounds_only_ever_grow_with_the_machine(monkeypatch):
    monkeypatch.delenv("ARMATURE_TEST_TIMEOUT_SCALE", raising=False)
    assert generous(120) >= 120
    monkeypatch.setattr(machine, "usable_cores", lambda: 1)
    monkeypatch.setattr(machine, "load_per_core", lambda: 0.0)
    assert generous(120) == 240                       # one core: twice the bound of two
    monkeypatch.setattr(machine, "load_per_core", lambda: 3.0)
    assert generous(120) == 240 * 3                   # three runnable jobs per core
    monkeypatch.setenv("ARMATURE_TEST_TIMEOUT_SCALE", "2")
    assert generous(120) == 240 * 3 * 2


def test_usable_cores_follow_the_affinity():
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity on this platform")
    assert machine.usable_cores() == len(os.sched_getaffinity(0))


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="inductor reads x86 flags only on x86")
@pytest.mark.parametrize("isa,first", [("avx2", "avx2"), ("amx", "avx512 avx512_vnni amx_tile"),
                                       ("avx2,avx512", "avx512")])
def test_the_cpu_stub_is_what_inductor_sees_in_a_child_process(isa, first):
    """A child started with the stub folder on its path (as conftest.py puts
    it for every child of a test) sees the stubbed flags."""
    code = ("import json; from torch._inductor import cpu_vec_isa as C\n"
            "from armature.backends.cpu_isa_probes import _candidates\n"
            "print(json.dumps([C.x86_isa_checker(), [str(i) for i in _candidates(C)]]))")
    env = dict(os.environ, ARMATURE_TEST_CPU_ISA=isa,
               PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(HERE, "machine_stubs"),
                                                        os.environ.get("PYTHONPATH")])))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=generous(120))
    assert p.returncode == 0, p.stderr[-3000:]
    flags, candidates = json.loads(p.stdout.strip().splitlines()[-1])
    assert flags == (isa.split(",") if "," in isa else {"avx2": ["avx2"],
                                                        "amx": ["avx2", "avx512", "avx512_vnni", "amx_tile"]}[isa])
    assert candidates[0] == first and all(set(c.split()) <= set(flags) for c in candidates)


def test_the_conditions_runner_knows_its_conditions():
    sys.path.insert(0, HERE)
    import machine_conditions
    assert set(machine_conditions.CONDITIONS) >= {"avx2", "amx", "aten-default", "one-core", "loaded"}
    assert all(os.path.exists(os.path.join(os.path.dirname(HERE), p)) for p in machine_conditions.MACHINE_FACTS)
    with pytest.raises(SystemExit):
        machine_conditions.main(["--only", "no-such-machine"])
