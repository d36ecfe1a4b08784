"""The runtime's side of CUDA graphs: one "step" per top-level call.

torch's CUDA-graph trees (inductor's ``mode="reduce-overhead"``) decide that a
new iteration began, and that the outputs of the previous replay may be
overwritten, from a generation counter that ``torch.compile`` advances once
per call of a compiled function.  Without that, a tree whose previous outputs
are still alive never leaves warm-up: every call runs the kernels one by one.

The frontend does not know torch's counter (it lives in torch's own
frontend, which only backends/ may import); a backend that compiles a graph using CUDA graphs
installs its ``step`` here (:func:`install`), and ``CompiledFunction.__call__``
calls it once per *top-level* call: not in resume functions or the compiled
wrappers residual code calls, and never per graph.  While no such graph
exists ``step`` is None and the hot path pays one attribute read.

``reset`` runs the backends' reset hooks (``armature.reset()`` drops the
trees, as torch's own reset does).
"""
from __future__ import annotations

from typing import Callable

#: called once at the start of every top-level call of a compiled function
#: while a graph compiled with CUDA graphs exists; None otherwise
step: Callable[[], None] | None = None

_resets: list[Callable[[], None]] = []


def install(step_fn: Callable[[], None], reset_fn: Callable[[], None] | None = None) -> None:
    """Called by a backend that compiled a graph using CUDA graphs."""
    global step
    step = step_fn
    if reset_fn is not None and reset_fn not in _resets:
        _resets.append(reset_fn)


def reset() -> None:
    """Drop every backend's CUDA-graph state; calls stop stepping until a
    backend installs a step again."""
    global step
    step = None
    hooks = list(_resets)
    _resets.clear()
    for fn in hooks:
        fn()
