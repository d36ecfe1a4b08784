"""Graphs compiled inside a DistributedDataParallel forward are split at
DDP's gradient-bucket boundaries, so each bucket's all-reduce overlaps the
rest of the backward (``armature.config.optimize_ddp``).

A graph compiled as one piece runs its whole backward as one autograd node:
every gradient becomes ready at once at its end, and DDP's all-reduces
(fired by per-parameter autograd hooks) cannot start until the backward is
over.  torch's DDPOptimizer (torch/_dynamo/backends/distributed.py) walks
the forward graph backwards, counts parameter bytes up to DDP's
``bucket_bytes_cap`` (the first bucket up to DDP's first-bucket cap), and
splits the graph there; each piece is compiled by the user's backend.  It
is a backend-side pass over any GraphModule whose placeholders carry
``_dynamo_source`` and that has ``_param_name_to_source`` (it only copies
them to the pieces); armature's graphs get both here, from the sources of
their inputs.

This module is the only place that imports torch._dynamo for DDP; the
runtime asks :func:`split_backend` which compiler to use for a graph.
"""
from __future__ import annotations

from typing import Any, Callable


def active_ddp_module():
    """The DDP module whose forward is running (DDP sets it around the call
    of the module it wraps), or None."""
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:   # pragma: no cover - torch built without distributed
        return None
    return DistributedDataParallel._get_active_ddp_module()


def split_backend(backend: Callable, sources: list, optimize_ddp: bool) -> Callable:
    """The compiler for a graph about to be compiled: ``backend`` itself,
    or, inside a DDP forward with ``optimize_ddp`` on, DDPOptimizer's
    splitting compiler with ``backend`` compiling each piece."""
    ddp = active_ddp_module() if optimize_ddp else None
    if ddp is None:
        return backend

    def compile_split(gm, example_inputs: list[Any]):
        from torch._dynamo.backends.distributed import DDPOptimizer
        annotate(gm, sources)
        import torch.distributed as dist
        # (DDP's first bucket is at most its bucket cap; DDPOptimizer asserts it)
        first = min(dist._DEFAULT_FIRST_BUCKET_BYTES, ddp.bucket_bytes_cap)
        optimizer = DDPOptimizer(bucket_bytes_cap=ddp.bucket_bytes_cap, backend_compile_fn=_noting_aot(backend),
                                 first_bucket_cap=first)
        compiled = optimizer.compile_fn(gm, example_inputs)
        compile_split.buckets = len(optimizer.buckets)
        return compiled

    compile_split.__name__ = f"ddp_split({getattr(backend, '__name__', backend)})"
    return compile_split


def _noting_aot(backend: Callable) -> Callable:
    """``backend`` for one piece, telling DDPOptimizer when it ran AOT
    autograd: DDPOptimizer keeps one forward-metadata record per piece for
    the lazily compiled backwards, but learns that a piece went through AOT
    autograd from torch._dynamo's counter, which only torch's own backend
    wrappers bump.  AOT autograd leaves its metadata on the TracingContext:
    a new record there means it ran."""

    def piece(gm, example_inputs):
        from torch._dynamo.utils import counters
        from torch._guards import TracingContext
        tc = TracingContext.try_get()
        before = tc.fw_metadata if tc is not None else None
        compiled = backend(gm, example_inputs)
        if tc is not None and tc.fw_metadata is not before:
            counters["aot_autograd"]["total"] += 1
        return compiled

    return piece


def annotate(gm, sources: list) -> None:
    """The metadata DDPOptimizer copies to the pieces of a split graph: each
    placeholder's source (armature's Source, in placeholder order) and a
    (here empty) parameter-name map; armature's graphs hold parameters as
    attributes (``get_attr``), which DDPOptimizer counts directly."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, source in zip(placeholders, sources):
        node._dynamo_source = source
    for node in placeholders[len(sources):]:
        node._dynamo_source = None
    if not hasattr(gm, "_param_name_to_source"):
        gm._param_name_to_source = {}
