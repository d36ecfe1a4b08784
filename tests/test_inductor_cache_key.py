"""Inductor's on-disk caches are keyed on the CPU's vector ISA for
armature's compiles (backends/inductor_cache_key.py): a cache directory
filled under one vector ISA and read under another misses instead of
serving kernels written for another vector width (torch 2.11-2.15's own key
leaves the ISA out: results off by orders of magnitude, torch.compile too)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from armature.backends.inductor_cache_key import cpu_isa_fingerprint, keyed_on_cpu_isa
from machine import generous

SCRIPT = textwrap.dedent("""
    import json, torch, armature
    def f(x, y):
        return torch.relu(x) @ y + 1, x.sin() * 2
    g = armature.compile(f, backend="inductor", dynamic=True)
    worst = 0.0
    for n in (4, 7, 19):
        x, y = torch.randn(n, 5), torch.randn(5, 3)
        worst = max(worst, *[(a - b).abs().max().item() for a, b in zip(g(x, y), f(x, y))])
    print(json.dumps({"worst": worst, "capability": torch.backends.cpu.get_cpu_capability()}))
""")


def _other_capability() -> "str | None":
    """A capability this machine can run that differs from the one in use."""
    now = torch.backends.cpu.get_cpu_capability()
    if now.startswith("AVX512"):
        return "avx2"
    if now == "AVX2":
        return "default"
    return None


def _run(cache_dir, capability: "str | None") -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache_dir))
    env.pop("ATEN_CPU_CAPABILITY", None)
    if capability:
        env["ATEN_CPU_CAPABILITY"] = capability
    p = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                       timeout=generous(600))
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.inductor
@pytest.mark.slow
def test_a_cache_filled_under_another_vector_isa_is_not_served(tmp_path):
    other = _other_capability()
    if other is None or "ATEN_CPU_CAPABILITY" in os.environ:
        pytest.skip("this machine (or ATEN_CPU_CAPABILITY) leaves no second vector ISA to try")
    first = _run(tmp_path, None)            # (fills the cache, native ISA)
    second = _run(tmp_path, other)          # (same cache directory, another ISA)
    assert first["capability"] != second["capability"]
    assert first["worst"] < 1e-4 and second["worst"] < 1e-4, (first, second)


def test_the_key_names_the_isa_and_keeps_the_users_tag():
    from torch.compiler import config as compiler_config

    fingerprint = cpu_isa_fingerprint()
    assert torch.backends.cpu.get_cpu_capability() in fingerprint
    with compiler_config.patch(cache_key_tag="users-own"):
        with keyed_on_cpu_isa():
            assert compiler_config.cache_key_tag == f"users-own|{fingerprint}"
            with keyed_on_cpu_isa():   # (the backward's compile inside the forward's)
                assert compiler_config.cache_key_tag == f"users-own|{fingerprint}"
        assert compiler_config.cache_key_tag == "users-own"
