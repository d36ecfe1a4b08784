"""Work inductor will wait for, started while armature traces the frame.

A compile with inductor begins with armature's trace (Python, one core) and
only then reaches inductor, which on a cold start first waits for things
that do not depend on the graph at all:

- **Triton's compile workers** (GPU): a pool of processes, each importing
  torch; inductor compiles kernels in this process, one after another, until
  the pool reports ready.  torch.compile starts the pool as soon as its
  backend is called; armature starts it before tracing.
- **The CPU's vector-ISA probes** (CPU): before it writes its first C++
  kernel, inductor compiles and loads a small program with each vector
  instruction set the CPU claims (AVX-512, AVX2...) to learn which ones the
  compiler and the machine accept (``cpu_vec_isa.valid_vec_isa_list``, one
  C++ build with torch's headers per candidate: seconds).  The answer is
  cached in the process and, as built files, in inductor's cache folder, so
  only a cold cache pays it, but then it sits on the critical path of the
  first compile.  armature runs the probes in a background thread while it
  traces and while AOTAutograd and inductor's lowering run; the thread
  mostly waits on the compiler subprocess, so it costs the trace nothing.
  If inductor needs the answer before the thread has it, inductor's own call
  waits on the file lock of the build in progress and reuses the built file:
  nothing is built twice.

Both only start work inductor would do anyway, with the configuration it
would use.  The probes are skipped where they may not be wanted: with CUDA
available (the graph is most likely on the GPU, where inductor never
probes), where the user decided the answer (``cpp.vec_isa_ok`` set globally
or in the compile's ``options``), or with ``TORCH_WARM_POOL=0``, torch's
switch for warming up compile work.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from typing import Any

import torch

_workers_started = False   # (the pool lives as long as the process: started once)
_isa_probe: threading.Thread | None = None


def warm_compile_workers() -> None:
    """Start inductor's pool of Triton compile workers now, if it will have one.

    Nothing happens without Triton (a CPU-only install: C++ kernels do not use
    the pool this way) or with ``TORCH_WARM_POOL=0``, as in torch.
    """
    global _workers_started
    if _workers_started:
        return
    if importlib.util.find_spec("triton") is None or os.environ.get("TORCH_WARM_POOL", "1") != "1":
        return
    from torch._inductor.async_compile import maybe_warm_pool

    maybe_warm_pool()
    _workers_started = True


def _probe_vector_isas() -> None:
    from torch._inductor import cpu_vec_isa

    try:
        cpu_vec_isa.valid_vec_isa_list()
    except Exception:  # noqa: BLE001 - inductor meets the same failure itself, on its own path
        pass


def warm_cpu_isa_probe(options: dict[str, Any] | None = None) -> threading.Thread | None:
    """Run inductor's vector-ISA probes in a background thread (once per
    process); the thread, or None where the probes are skipped (see the
    module docstring)."""
    global _isa_probe
    if _isa_probe is not None:
        return _isa_probe
    if os.environ.get("TORCH_WARM_POOL", "1") != "1" or torch.cuda.is_available():
        return None
    if any(k.replace("-", "_") == "cpp.vec_isa_ok" for k in (options or {})):
        return None
    from torch._inductor import config

    if config.cpp.vec_isa_ok is not None or config.is_fbcode():
        return None
    # Imported here, in the calling thread: the probe imports them lazily, and
    # two threads importing the same modules at once can see them half made.
    from torch._inductor import codecache, cpp_builder, cpu_vec_isa  # noqa: F401

    _isa_probe = threading.Thread(target=_probe_vector_isas, name="armature-inductor-isa-probe", daemon=True)
    _isa_probe.start()
    return _isa_probe


def prepare_inductor(mode: str | None = None, options: dict[str, Any] | None = None) -> None:
    """The inductor backend's ``prepare`` (backends/__init__.py): both warm-ups."""
    warm_compile_workers()
    warm_cpu_isa_probe(options)
