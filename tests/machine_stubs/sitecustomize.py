"""Lets the test suite run as if on another CPU: inductor's view of the vector ISAs.

The suite must pass on machines unlike the one it is developed on (AVX2-only
laptops and older servers, AVX-512 servers with AMX tiles), and a test that
asserts one machine's facts fails there.  To check that without those
machines, ``ARMATURE_TEST_CPU_ISA`` names the x86 ISA flags inductor should
believe the CPU reports:

* ``avx2``: an AVX2-only machine (no AVX-512);
* ``amx``: AVX-512 with VNNI and AMX tiles (Intel Sapphire Rapids and later);
* or a comma-separated list of inductor's flag names (``avx2,avx512``).

tests/conftest.py puts this folder first on ``PYTHONPATH`` when the variable
is set, so Python imports this ``sitecustomize`` at start-up in the pytest
process and in every interpreter a test starts.  It replaces
``torch._inductor.cpu_vec_isa.x86_isa_checker`` (the one place inductor reads
the CPU's flags for its ISA list) as that module is imported; nothing else of
torch changes, so ATen's own kernels keep the real CPU's dispatch (set
``ATEN_CPU_CAPABILITY`` for those).  A stubbed ISA the real CPU lacks still
goes through inductor's probe: on a machine without AMX, the AMX candidate is
asked about and fails its probe (``torch.cpu._init_amx()``), exactly as
inductor handles a CPU that reports AMX but cannot use it.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

_PRESETS = {"avx2": ["avx2"], "amx": ["avx2", "avx512", "avx512_vnni", "amx_tile"]}
_TARGET = "torch._inductor.cpu_vec_isa"


def stubbed_flags() -> "list[str] | None":
    """The flags ``ARMATURE_TEST_CPU_ISA`` asks for (None: the real CPU's)."""
    value = os.environ.get("ARMATURE_TEST_CPU_ISA", "").strip().lower()
    if not value:
        return None
    return _PRESETS.get(value) or [flag.strip() for flag in value.split(",") if flag.strip()]


def _patch(module) -> None:
    flags = stubbed_flags()

    def x86_isa_checker() -> list[str]:
        return list(flags)

    x86_isa_checker.__doc__ = f"(ARMATURE_TEST_CPU_ISA stub: {flags})"
    module.x86_isa_checker = x86_isa_checker


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches inductor's module right after it executes."""

    def find_spec(self, name, path, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original_exec = loader.exec_module

        def exec_module(module):
            original_exec(module)
            _patch(module)
        loader.exec_module = exec_module
        return spec


if stubbed_flags() is not None:
    if _TARGET in sys.modules:
        _patch(sys.modules[_TARGET])
    else:
        sys.meta_path.insert(0, _PatchOnImport())
