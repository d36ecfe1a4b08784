"""Facts of the machine the tests run on, read where they are needed.

The suite runs on machines unlike the one it is developed on: 1 to 64
cores, busy hosts, other CPUs.  A test never assumes those facts; it reads
them here.  Bounds on waits are the one place a machine's speed shows: a
child process that imports torch and compiles a graph takes seconds on an
idle developer machine and several times that on one core shared with
another job.  A bound exists to stop a hang, not to time anything, so it is
stretched by what the machine can give now (:func:`generous`).
"""
from __future__ import annotations

import os


def usable_cores() -> int:
    """Cores this process may run on (its affinity: ``taskset`` and
    container limits included), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):   # (no affinity on this platform)
        return max(1, os.cpu_count() or 1)


def load_per_core() -> float:
    """The one-minute load average per usable core (0 where unknown)."""
    try:
        return os.getloadavg()[0] / usable_cores()
    except (AttributeError, OSError):
        return 0.0


def generous(seconds: float) -> float:
    """A bound for a wait that takes ``seconds`` at most on an idle 2-core
    machine, stretched for this one: by the cores missing below two, by
    the load beyond one runnable job per core, and by
    ``ARMATURE_TEST_TIMEOUT_SCALE`` (a factor, for slow hosts).  Only a hang
    should ever reach it."""
    few_cores = max(1.0, 2.0 / usable_cores())
    busy = 1.0 + max(0.0, load_per_core() - 1.0)
    scale = float(os.environ.get("ARMATURE_TEST_TIMEOUT_SCALE") or 1.0)
    return seconds * few_cores * min(busy, 8.0) * scale
