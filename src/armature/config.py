"""Typed tracing options, read through the tracer (never at import time).

``config.patch(name=value)`` works as a context manager and as a decorator.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
from typing import Any


@dataclasses.dataclass
class Config:
    #: cache entries per code object before armature stops compiling it and
    #: runs the original code (with one warning).
    recompile_limit: int = 8
    #: maximum depth of inlined user calls before the tracer gives up.
    inline_depth_limit: int = 64
    #: guard module globals that belong to torch itself (they never change in
    #: practice; guarding them costs on every call).
    guard_torch_internals: bool = False
    #: how parameters and buffers of nn.Modules enter graphs:
    #: "attributes" -- modules are guarded by identity and their parameters
    #:   and buffers are get_attr nodes of the GraphModule (the same tensor
    #:   objects): nothing to load per call, and backends see them as part of
    #:   the graph.  Each module instance gets its own cache entry.
    #: "inputs" -- modules are guarded by type only and parameters/buffers are
    #:   graph inputs, so one compiled graph serves every instance of a class
    #:   (e.g. one function called with many layers of the same kind).
    module_parameters: str = "attributes"
    #: names (as logs print them: ``x``, ``self.cache_len``, ``batch["ids"]``)
    #: of ints and tensor dimensions that are dynamic from the first compile,
    #: comma separated; each a literal or a regular expression, optionally
    #: ``name:dim``.  Overrides ``dynamic=False`` and static parameters.
    #: Default: the ARMATURE_DYNAMIC_SOURCES environment variable.
    dynamic_sources: str = dataclasses.field(default_factory=lambda: os.environ.get("ARMATURE_DYNAMIC_SOURCES", ""))

    #: ``.item()``, ``int(t)``, ``float(t)`` and ``tolist()`` of small tensors
    #: stay in the graph as unbacked SymInts/SymFloats instead of graph
    #: breaks (on with fullgraph=True).
    capture_scalar_outputs: bool = False
    #: ops whose output size depends on data (``nonzero``, boolean masks,
    #: ``unique``) stay in the graph with unbacked sizes (on with fullgraph=True).
    capture_dynamic_output_shape_ops: bool = False
    #: repeated blocks compiled once (graph/regions.py): identical calls of
    #: modules of one class, and of functions marked ``armature.compile_region``
    #: or ``torch.compiler.nested_compile_region``, become one subgraph called
    #: per block through ``invoke_subgraph``.  "auto": with the inductor and
    #: aot_eager backends; "always": with every backend (a callable backend
    #: then sees ``invoke_subgraph`` nodes); "off": every call inlined.
    regions: str = "auto"

    def dynamic_sources_list(self) -> list[str]:
        return [item.strip() for item in self.dynamic_sources.split(",") if item.strip()]


config = Config()


def dynamic_sources_list() -> list[str]:
    return config.dynamic_sources_list()


_FIELDS = {f.name: f for f in dataclasses.fields(Config)}


def _check(name: str, value: Any) -> None:
    if name not in _FIELDS:
        raise AttributeError(
            f"armature.config has no option {name!r}; options: {', '.join(sorted(_FIELDS))}")
    expected = type(getattr(Config(), name))
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise TypeError(f"armature.config.{name} must be {expected.__name__}, got {value!r}")
    if name == "recompile_limit" and value < 1:
        raise ValueError("armature.config.recompile_limit must be >= 1")
    if name == "regions" and value not in ("auto", "always", "off"):
        raise ValueError(f"armature.config.regions must be 'auto', 'always' or 'off', got {value!r}")
    if name == "module_parameters" and value not in ("attributes", "inputs"):
        raise ValueError("armature.config.module_parameters must be 'attributes' or 'inputs', "
                         f"got {value!r}")


class _Patch(contextlib.ContextDecorator):
    def __init__(self, changes: dict[str, Any]):
        for k, v in changes.items():
            _check(k, v)
        self.changes = changes
        self.saved: list[dict[str, Any]] = []

    def __enter__(self):
        self.saved.append({k: getattr(config, k) for k in self.changes})
        for k, v in self.changes.items():
            setattr(config, k, v)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.pop().items():
            setattr(config, k, v)
        return False


def patch(**changes: Any) -> _Patch:
    """Temporarily change options: ``with armature.config.patch(recompile_limit=2):``."""
    return _Patch(changes)


def set(**changes: Any) -> None:  # noqa: A001 - mirrors dict-like config APIs
    for k, v in changes.items():
        _check(k, v)
        setattr(config, k, v)


def __getattr__(name: str) -> Any:
    # ``armature.config.recompile_limit`` reads the live value.
    if name in _FIELDS:
        return getattr(config, name)
    raise AttributeError(name)
