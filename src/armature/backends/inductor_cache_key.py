"""Inductor's on-disk caches keyed on the CPU's vector instruction set too.

Inductor's FX-graph cache and AOTAutograd's cache (on by default, on disk,
shared by every process that uses the same cache directory) key a compiled
graph on the graph, inductor's config, torch's version and the GPU, but in
torch 2.11-2.15 not on the CPU vector ISA its C++ kernels were generated
for.  The cached wrapper holds each kernel's C++ source, written for one
vector width (a loop stepping 16 floats at a time under AVX-512), and a
process that loads it builds that source with its own ISA's flags (8 floats
per ``Vectorized<float>`` under AVX2).  So a cache directory shared between
an AVX-512 and an AVX2 machine (a home directory on NFS, a cache copied
between hosts) or used with and without ``ATEN_CPU_CAPABILITY`` returns
wrong numbers: seen here, ``torch.compile`` as much as armature (a
dynamic-shape ``x.sin()`` off by 1e36 after a cache filled on AVX-512 was
read under ``ATEN_CPU_CAPABILITY=avx2``).

For armature's own compiles, :func:`keyed_on_cpu_isa` adds what decides the
ISA to ``torch.compiler.config.cache_key_tag`` (inductor's own knob for
extra key material; a tag the user set is kept in front): the x86 ISA flags
the CPU reports, which are what inductor's candidate list is made of, and
the capability ATen dispatches to (``ATEN_CPU_CAPABILITY`` honoured).  It is
fixed for a process and a machine, so a restart on the same machine keeps
hitting the cache; another machine or capability misses instead of being
wrong.  The forward compile and inductor's lazy backward compile both run
under it (the backend wraps ``inner_compile``).
"""
from __future__ import annotations

import contextlib
import functools
import platform
from typing import Any, Callable, Iterator

import torch

__all__ = ["cpu_isa_fingerprint", "keyed_on_cpu_isa", "keyed_inner_compile"]


@functools.cache
def _machine_part() -> str:
    flags: list[str] = []
    if platform.machine() in ("x86_64", "AMD64"):
        from torch._inductor import cpu_vec_isa
        flags = list(cpu_vec_isa.x86_isa_checker())   # (cheap: CPUID reads, no probe builds)
    return f"{platform.machine()}:{','.join(flags) or '-'}"


def cpu_isa_fingerprint() -> str:
    """What decides the vector ISA of inductor's C++ kernels in this process."""
    try:
        aten = torch.backends.cpu.get_cpu_capability()   # (ATEN_CPU_CAPABILITY honoured)
    except Exception:  # noqa: BLE001 - an older or unusual build: the flags still tell machines apart
        aten = "?"
    return f"armature-cpu-isa={_machine_part()};aten={aten}"


@contextlib.contextmanager
def keyed_on_cpu_isa(isa: "str | None" = None) -> Iterator[None]:
    """Inductor's cache keys within the block include :func:`cpu_isa_fingerprint`,
    and ``isa`` when given: the ISA the compile's kernels are generated for,
    where it is not the one a compile reading ahead of the ISA probe assumes
    (cpu_isa_probes.unexpected_isa).  So a compile that read ahead and one
    that read inductor's answer share their entries when the probe confirms
    the guess (a restart, with no trace to hide the probe behind, reads
    ahead where the first process did not), and never otherwise: kernels
    generated for an ISA whose probe then failed are not served to the
    compile made again after it, nor to any compile that knows better."""
    from torch.compiler import config as compiler_config

    user_tag = compiler_config.cache_key_tag
    fingerprint = cpu_isa_fingerprint()
    if fingerprint in user_tag:   # (nested: the forward compile's block around the backward's)
        yield
        return
    if isa is not None:
        fingerprint = f"{fingerprint};isa={isa}"
    with compiler_config.patch(cache_key_tag=f"{user_tag}|{fingerprint}" if user_tag else fingerprint):
        yield


def keyed_inner_compile(inner_compile: Callable[..., Any], isa: "str | None" = None) -> Callable[..., Any]:
    """``inner_compile`` run under :func:`keyed_on_cpu_isa` (inductor compiles
    the backward graph later, outside the forward's block, through it)."""
    @functools.wraps(inner_compile)
    def compile_keyed_on_cpu_isa(*args: Any, **kwargs: Any) -> Any:
        with keyed_on_cpu_isa(isa):
            return inner_compile(*args, **kwargs)
    return compile_keyed_on_cpu_isa
