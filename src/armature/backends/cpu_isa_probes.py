"""Inductor's CPU vector-ISA probes, run side by side instead of one after another.

Before it generates its first C++ kernel in a process, inductor decides which
SIMD instruction sets it may use (``cpu_vec_isa.valid_vec_isa_list``): for
every ISA the CPU reports (AVX-512 with VNNI, AVX-512, AVX2 on a typical x86
server) it compiles a small program against torch's vectorised headers and
loads it in a child process.  With a cold inductor cache those are up to six
C++ builds, one after another, on the critical path of the first compile:
9 s of a 17 s GPT-2 compile on this project's 2-core machine, paid by
torch.compile too.

The probes of different ISAs are independent (different compiler flags,
different output files, separate ``functools.cache`` entries on separate
instances), so :func:`probe_in_parallel` asks each candidate ISA the same
question inductor asks (``bool(isa)``, inductor's own code, under the
compile's inductor config) on its own thread, up to one per core; inductor's
later, serial ``valid_vec_isa_list()`` then finds every answer cached.  The
answers are exactly the ones inductor would compute: only their order in time
changes.  Each ISA's own probes (AVX-512 VNNI: the base program, then bf16,
then VNNI) stay in order on one thread.

Nothing is done where inductor would not probe (not x86, ``cpp.vec_isa_ok``
set: inductor's ``__bool__`` answers without building), for graphs without
CPU tensors (a GPU graph need not pay for CPU probes) or once the list has
been computed in this process.  Any failure leaves the work to inductor.
"""
from __future__ import annotations

import contextvars
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from ..diagnostics import logs

__all__ = ["probe_in_parallel", "wants_cpu_probes"]

log_perf = logs.artifact("perf")

_probing = threading.Lock()   # (two compiles on two threads: one probes, the other waits and finds the answers)


def wants_cpu_probes(example_inputs: list[Any]) -> bool:
    """Whether a graph with these inputs will likely have C++ kernels: a CPU
    tensor among them, or no tensor input at all (factories default to CPU)."""
    devices = {x.device.type for x in example_inputs if isinstance(x, torch.Tensor)}
    return not devices or "cpu" in devices


def _candidates(cpu_vec_isa) -> list:
    """The ISAs ``valid_vec_isa_list`` would probe on this machine (x86 only:
    elsewhere it probes at most one)."""
    flags = cpu_vec_isa.x86_isa_checker()
    return [isa for isa in cpu_vec_isa.supported_vec_isa_list
            if flags and all(flag in flags for flag in str(isa).split())]


def probe_in_parallel(patches: dict[str, Any]) -> None:
    """Run inductor's ISA probes concurrently, under the inductor config
    overrides ``patches`` (a ``cpp.vec_isa_ok`` given in ``options`` wins, as
    it does inside ``compile_fx``)."""
    with _probing:
        try:
            _probe(patches)
        except Exception as e:  # noqa: BLE001 - an optimisation only: inductor probes by itself
            log_perf.debug("inductor CPU ISA probes left to inductor (%s: %s)", type(e).__name__, e)


def _probe(patches: dict[str, Any]) -> None:
    from torch._inductor import config, cpu_vec_isa

    cache_info = getattr(cpu_vec_isa.valid_vec_isa_list, "cache_info", None)
    if cache_info is None or cache_info().currsize:
        return   # (computed already, or not inductor's cached function: nothing to gain)
    with config.patch(patches):
        if config.cpp.vec_isa_ok is not None or config.is_fbcode():
            return
        isas = _candidates(cpu_vec_isa)
        if len(isas) < 2:
            return
        workers = min(len(isas), os.cpu_count() or 1)
        if workers < 2:
            return
        # (inductor's config overrides are per thread (context variables): each probe runs in a
        # copy of this thread's context, so it sees the compile's settings, the compiler to use
        # among them)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="armature-isa-probe") as pool:
            futures = [pool.submit(contextvars.copy_context().run, bool, isa) for isa in isas]
            answers = [f.result() for f in futures]
    log_perf.debug("inductor CPU ISA probes run on %d threads: %s", workers,
                   ", ".join(f"{isa}={ok}" for isa, ok in zip(isas, answers)))
