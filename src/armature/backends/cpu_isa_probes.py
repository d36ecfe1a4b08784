"""Inductor's CPU vector-ISA probes, run side by side and behind the compile.

Before it generates its first C++ kernel in a process, inductor decides which
SIMD instruction sets it may use (``cpu_vec_isa.valid_vec_isa_list``): for
every ISA the CPU reports (AVX-512 with VNNI, AVX-512, AVX2 on a typical x86
server) it compiles a small program against torch's vectorised headers and
loads it in a child process.  With a cold inductor cache those are up to six
C++ builds, one after another, on the critical path of the first compile:
9 s of a 17 s GPT-2 compile on this project's 2-core machine, paid by
torch.compile too.

Two changes of *when*, none of *what*:

* **Side by side.**  The probes of different ISAs are independent (different
  compiler flags, different output files, separate ``functools.cache``
  entries on separate instances), so each candidate ISA is asked the question
  inductor asks (``bool(isa)``, inductor's own code, under the compile's
  inductor config) on its own thread.  Each ISA's own
  probes (AVX-512 VNNI: the base program, then bf16, then VNNI) stay in order
  on one thread.
* **Behind the compile.**  :func:`start_probes` returns at once; the probes
  build while the compiling thread runs AOTAutograd and inductor's lowering,
  which do not need the answer (only C++ code generation and builds do).
  Until the probes are done, ``cpu_vec_isa.valid_vec_isa_list`` is a gate
  that waits for them and then calls inductor's own function, which finds
  every answer cached.  Every reader of the list goes through that module
  global (``pick_vec_isa`` looks it up at each call), so no thread can probe
  an ISA while a probe thread is probing it: that race is real, since a
  probe changes its ISA object's compiler flags for a moment (AVX-512's bf16
  check).  The gate is removed when the probes end.

The answers are exactly the ones inductor would compute: only their order in
time changes.  Nothing is done where inductor would not probe (not x86,
``cpp.vec_isa_ok`` set: inductor's ``__bool__`` answers without building),
for graphs without CPU tensors (a GPU graph need not pay for CPU probes) or
once the list has been computed in this process.  Any failure leaves the
work to inductor.
"""
from __future__ import annotations

import contextvars
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from ..diagnostics import logs

__all__ = ["probe_in_parallel", "start_probes", "wait_for_probes", "wants_cpu_probes"]

log_perf = logs.artifact("perf")


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


def start_probes(patches: dict[str, Any]) -> None:
    """Start inductor's ISA probes on background threads, under the inductor
    config overrides ``patches`` (a ``cpp.vec_isa_ok`` given in ``options``
    wins, as it does inside ``compile_fx``), and return; inductor's own
    reads of the list wait for them."""
    try:
        _start(patches)
    except Exception as e:  # noqa: BLE001 - an optimisation only: inductor probes by itself
        log_perf.debug("inductor CPU ISA probes left to inductor (%s: %s)", type(e).__name__, e)


def probe_in_parallel(patches: dict[str, Any]) -> None:
    """:func:`start_probes`, then wait for them (benchmarks/isa_probes.py
    times the probes alone this way)."""
    start_probes(patches)
    wait_for_probes()


def wait_for_probes() -> None:
    """Return once no probe started here is running."""
    done = _running
    if done is not None:
        done.wait()


_state = threading.Lock()                  # (guards _running, _installed and the module global)
_running: threading.Event | None = None    # (set when the probes in flight are done)
_installed: tuple | None = None            # (inductor's module, its function, the gate standing in for it)
_probe_threads = threading.local()         # (marks the probe threads: the gate never makes them wait)


def _start(patches: dict[str, Any]) -> None:
    global _running, _installed
    from torch._inductor import config, cpu_vec_isa

    with _state:
        if _running is not None:
            return   # (a compile on another thread started them: the gate covers this one too)
        inductors = cpu_vec_isa.valid_vec_isa_list
        cache_info = getattr(inductors, "cache_info", None)
        if cache_info is None or cache_info().currsize:
            return   # (computed already, or not inductor's cached function: nothing to gain)
        with config.patch(patches):
            if config.cpp.vec_isa_ok is not None or config.is_fbcode():
                return
            isas = _candidates(cpu_vec_isa)
            # (one thread per ISA, not per core: the probes share the cores with the compile, and
            # a third ISA waiting for a free thread would be the last thing the compile waits for)
            workers = len(isas)
            if workers < 2 or (os.cpu_count() or 1) < 2:
                return
            # (inductor's config overrides are per thread (context variables): each probe runs in
            # a copy of this thread's context, so it sees the compile's settings, the compiler to
            # use among them; a context is entered by one thread at a time, hence one copy each)
            contexts = [contextvars.copy_context() for _ in isas]
            list_context = contextvars.copy_context()
        done = threading.Event()
        gate = _gate(inductors, done)
        cpu_vec_isa.valid_vec_isa_list = gate
        _running, _installed = done, (cpu_vec_isa, inductors, gate)
    threading.Thread(target=_probe, args=(done, isas, contexts, workers, inductors, list_context),
                     name="armature-isa-probes", daemon=True).start()


def _gate(inductors, done: threading.Event):
    @functools.wraps(inductors)
    def valid_vec_isa_list():
        if not getattr(_probe_threads, "active", False):
            done.wait()
        return inductors()
    return valid_vec_isa_list


def _probe(done: threading.Event, isas: list, contexts: list, workers: int, inductors, list_context) -> None:
    answers: list = []
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="armature-isa-probe",
                                initializer=_mark_probe_thread) as pool:
            futures = [pool.submit(ctx.run, bool, isa) for ctx, isa in zip(contexts, isas)]
            answers = [f.result() for f in futures]
        # (inductor's list itself, from the cached answers, before the gate opens: a later compile
        # then finds it known and starts nothing, even if this one never generated C++ code)
        list_context.run(inductors)
        log_perf.debug("inductor CPU ISA probes run on %d threads: %s", workers,
                       ", ".join(f"{isa}={ok}" for isa, ok in zip(isas, answers)))
    except Exception as e:  # noqa: BLE001 - inductor probes what is not cached by itself
        log_perf.debug("inductor CPU ISA probes left to inductor (%s: %s)", type(e).__name__, e)
    finally:
        with _state:
            _remove_gate()
        done.set()


def _mark_probe_thread() -> None:
    _probe_threads.active = True


def _remove_gate() -> None:
    """Put inductor's function back (unless someone replaced the gate since)."""
    global _running, _installed
    if _installed is not None:
        module, inductors, gate = _installed
        if module.valid_vec_isa_list is gate:
            module.valid_vec_isa_list = inductors
    _running = _installed = None


def _after_fork_in_child() -> None:
    """A process forked while the probes ran has the gate but not the probe
    threads that would open it: it gets inductor's function back (and probes
    by itself if it compiles)."""
    global _state
    _state = threading.Lock()
    _remove_gate()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

