"""The GraphModule of a cache entry loaded from disk (the warm start:
persistent_cache.py), for the tools that inspect entries
(``armature.cache_entries(f)[i].graph_module``, ``explain()``, the run's
report) -- rebuilt on first read, not at load, since running a loaded entry
never needs it.

An entry stores its graph node by node (persist_codec.encode_fx_graph: for
the compiling backends because the warm process compiles it again, for
``eager`` only for this).  The rebuilt module holds the warm call's own
parameters and buffers (the objects the loaded entry runs with) and must
print as the stored code, the code that runs: the very graph.  What it does
not have is the trace's node metadata (example values, stack traces): it
was not traced in this process.
"""
from __future__ import annotations

from typing import Callable

import torch

from ..diagnostics import logs
from ..runtime.cache import CacheEntry
from . import persist_codec as codec
from .persist_codec import NotStorable

log = logs.artifact("cache")


def encode_eager_nodes(info) -> tuple | None:
    """The nodes of an ``eager`` entry's graph (the compiling backends store
    them anyway), None when a node cannot be written: the entry is stored
    all the same and a loaded copy has no graph_module."""
    from .cache_events import stands_for
    gm, backend = info.graph_module, stands_for(info.backend)
    if gm is None or not (backend.name == "eager" and not backend.kwargs):
        return None
    try:
        return codec.encode_fx_graph(gm.graph)
    except NotStorable as e:
        log.debug("the graph of %s is stored without its nodes (a loaded copy has no graph_module): %s",
                  info.fn.__qualname__, e)
        return None


def rebuild(src: str, nodes, values: dict, subgraphs=(), static_inputs=()) -> torch.fx.GraphModule:
    """The GraphModule of the stored code ``src`` from its ``nodes``, holding
    ``values`` (the tensors the loaded entry runs with) and the regions'
    subgraphs; LookupError when it does not print as ``src``."""
    from ..names import STATIC_INPUTS_META
    root = torch.nn.Module()
    for name, t in values.items():
        if isinstance(t, torch.nn.Parameter):
            root.register_parameter(name, t)
        else:
            root.register_buffer(name, t)
    for name, (sub_nodes, sub_src) in subgraphs:
        sub = torch.fx.GraphModule(torch.nn.Module(), codec.decode_fx_graph(sub_nodes))
        if sub.graph.python_code(root_module="self").src != sub_src:
            raise LookupError(f"the region {name} rebuilt from its nodes differs from the stored one")
        root.add_module(name, sub)
    gm = torch.fx.GraphModule(root, codec.decode_fx_graph(nodes), class_name="ArmatureGraph")
    if gm.graph.python_code(root_module="self").src != src:
        raise LookupError("the graph rebuilt from its nodes differs from the stored code")
    gm.meta[STATIC_INPUTS_META] = tuple(static_inputs)
    return gm


def rebuilder(graph, eager_nodes, values: dict, name: str) -> Callable | None:
    """What makes the GraphModule of a loaded entry whose stored graph is
    ``graph`` (persistent_cache._encode_graph's tuple), None when it has no
    graph or its nodes were not stored."""
    if graph is None:
        return None
    src, _names, _attrs, inputs, static_inputs, subgraphs = graph[:6]
    nodes = inputs[1] if inputs is not None else eager_nodes
    if nodes is None:
        return None

    def make():
        try:
            return rebuild(src, nodes, values, subgraphs, static_inputs)
        except Exception as e:   # noqa: BLE001 - an inspection aid: never fails what reads it
            log.info("the graph of a loaded entry of %s could not be rebuilt (graph_module is None): %s: %s",
                     name, type(e).__name__, e)
            return None
    return make


class LoadedEntry(CacheEntry):
    """A cache entry loaded from disk: as any entry, with its graph_module
    rebuilt when first read (``rebuild``: what makes it, or None)."""

    def __init__(self, *args, rebuild: Callable | None = None, **kwargs):
        self._rebuild = rebuild
        self._graph_module = None
        super().__init__(*args, **kwargs)

    @property
    def graph_module(self):
        if self._graph_module is None and self._rebuild is not None:
            make, self._rebuild = self._rebuild, None
            self._graph_module = make()
        return self._graph_module

    @graph_module.setter
    def graph_module(self, gm) -> None:
        self._graph_module = gm
        if gm is not None:
            self._rebuild = None
