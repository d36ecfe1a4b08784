"""CUDA graphs at the backend boundary: what torch's frontend tells inductor.

Two things make ``mode="reduce-overhead"`` (inductor's CUDA-graph trees) work
under torch.compile, and armature provides both here, where torch's own
backends are allowed to be touched:

* **A generation per call.**  The trees start a new iteration (and may
  overwrite the previous replay's outputs) only when the generation counter
  ``torch._dynamo.mutation_guard.GenerationTracker.generation`` moved, which
  ``torch.compile`` does once per call of a compiled function.  A backend
  that compiled a graph using CUDA graphs calls :func:`install_step`; the
  runtime (backends/cudagraph_step.py) then advances the counter once per
  top-level call.  ``torch.compiler.cudagraph_mark_step_begin()`` (or
  :func:`cudagraph_mark_step_begin`) overrides the counter as under
  torch.compile: the trees read the mark-step counter first.
* **Static inputs.**  Parameters, buffers and tensors marked with
  ``mark_static_address`` keep their address, so a replay reads them in place
  instead of copying them into graph-owned memory.  AOTAutograd learns which
  inputs are static only from metadata Dynamo leaves on its GraphModule
  (``meta["dynamo_compile_id"]``, ``_param_name_to_source``, each
  placeholder's ``_dynamo_source`` and ``meta["tensor_dict"]
  ["_dynamo_static_input_type"]``; see ``_try_get_metadata_from_dynamo`` in
  torch/_functorch/_aot_autograd/frontend_utils.py); it then sets
  ``fw_metadata.static_input_indices``, which inductor's
  ``get_static_input_idxs`` hands to the trees.  :func:`annotate_static_inputs`
  writes that metadata from armature's own (``gm.meta["armature_static_inputs"]``,
  graph/output_graph.py).  Without it every replay copied every weight.

When inductor skips CUDA graphs for a graph (CPU tensors, mutated inputs,
dynamic shapes beyond the limit...) it logs why on its ``cudagraphs``
logger; :func:`install_step` forwards those lines to ``ARMATURE_LOGS=perf``.
"""
from __future__ import annotations

import logging
import sys
from typing import Any

import torch

from ..diagnostics import logs
from ..names import STATIC_INPUTS_META
from . import cudagraph_step as _runtime

__all__ = ["annotate_static_inputs", "compile_with_static_inputs", "cudagraph_mark_step_begin", "install_step",
           "uses_cudagraphs"]

log_perf = logs.artifact("perf")


def uses_cudagraphs(patches: dict[str, Any]) -> bool:
    """Whether inductor, under the config overrides ``patches``, uses CUDA graphs."""
    from .inductor import setting
    return bool(setting("triton.cudagraphs", patches))


def _source(label: str):
    from .input_sources import ArmatureInputSource
    return ArmatureInputSource(label)


def annotate_static_inputs(gm: torch.fx.GraphModule) -> list[int]:
    """Write on ``gm`` the metadata AOTAutograd reads to find static inputs
    (as torch.compile's frontend does); returns the static placeholder
    positions.  The GraphModule's own parameters and buffers (``get_attr``,
    lifted by AOTAutograd ahead of the placeholders) are static too."""
    static = set(gm.meta.get(STATIC_INPUTS_META, ()))
    gm.meta.setdefault("dynamo_compile_id", None)
    names = [n for n, _ in gm.named_parameters(remove_duplicate=False)]
    names += [n for n, _ in gm.named_buffers(remove_duplicate=False)]
    gm._param_name_to_source = {n: _source(f"armature graph attribute {n}") for n in names}
    positions = []
    for i, node in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        node._dynamo_source = _source(f"armature graph input {i} ({node.name})")
        if i in static:
            node.meta["tensor_dict"] = {**node.meta.get("tensor_dict", {}), "_dynamo_static_input_type": "unguarded"}
            positions.append(i)
    return positions


def _strip_static_annotation(gm: torch.fx.GraphModule) -> None:
    gm.meta.pop("dynamo_compile_id", None)
    if "_param_name_to_source" in gm.__dict__:
        del gm.__dict__["_param_name_to_source"]
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            node.__dict__.pop("_dynamo_source", None)
            td = node.meta.get("tensor_dict")
            if td and "_dynamo_static_input_type" in td:
                node.meta["tensor_dict"] = {k: v for k, v in td.items() if k != "_dynamo_static_input_type"}


def compile_with_static_inputs(gm: torch.fx.GraphModule, compile_fn):
    """``compile_fn(gm)`` with the static-input metadata written on ``gm``.
    Should a torch version read that metadata differently and refuse it (an
    error that names a source), the graph compiles without it, every input
    then treated as torch treats an unknown graph's (copied on a replay),
    and ``ARMATURE_LOGS=perf`` says so."""
    annotate_static_inputs(gm)
    try:
        return compile_fn(gm)
    except Exception as e:  # noqa: BLE001  (retried only when the metadata is the cause)
        if "source" not in str(e).lower():
            raise
        log_perf.debug("static-input metadata refused by this torch (%s: %s); compiling without it: "
                       "CUDA graphs copy every input on a replay", type(e).__name__, e)
        _strip_static_annotation(gm)
        return compile_fn(gm)


class _SkipForwarder(logging.Handler):
    """Forwards inductor's "skipping cudagraphs due to ..." lines to the
    ``perf`` artifact."""

    def emit(self, record: logging.LogRecord) -> None:
        if log_perf.isEnabledFor(logging.DEBUG):
            log_perf.debug("CUDA graphs not used: %s", record.getMessage())


_forwarder: _SkipForwarder | None = None


def _advance_generation_fn():
    from torch._dynamo.mutation_guard import GenerationTracker

    def step() -> None:
        GenerationTracker.generation += 1
    return step


_step = None


def _reset_trees() -> None:
    trees = sys.modules.get("torch._inductor.cudagraph_trees")
    if trees is not None:
        trees.reset_cudagraph_trees()


def install_step() -> None:
    """A graph using CUDA graphs was compiled: every top-level call of a
    compiled function advances the generation from now on (until
    ``armature.reset()``); skip reasons go to ``ARMATURE_LOGS=perf``."""
    global _step, _forwarder
    if _step is None:
        _step = _advance_generation_fn()
    if _forwarder is None:
        from torch._inductor import cudagraph_utils
        _forwarder = _SkipForwarder()
        cudagraph_utils.cudagraphs_log.addHandler(_forwarder)
    _runtime.install(_step, _reset_trees)


def note_cpu_only(gm: torch.fx.GraphModule, example_inputs) -> bool:
    """Whether the graph has no CUDA tensor (no CUDA graph then, and no
    step to install).  inductor skips such a graph silently (it logs only
    mixed-device graphs): ``ARMATURE_LOGS=perf`` says it."""
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    tensors += list(gm.parameters()) + list(gm.buffers())
    if any(t.device.type == "cuda" for t in tensors):
        return False
    if log_perf.isEnabledFor(logging.DEBUG):
        log_perf.debug("CUDA graphs not used: skipping cudagraphs due to no CUDA tensors in the graph "
                       "(its inputs are on %s)", sorted({str(t.device) for t in tensors}) or "no device")
    return True


def cudagraph_mark_step_begin() -> None:
    """A new iteration begins: outputs of earlier CUDA-graph replays may be
    overwritten from now on (``torch.compiler.cudagraph_mark_step_begin``)."""
    torch.compiler.cudagraph_mark_step_begin()
