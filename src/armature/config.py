"""Typed tracing options, read through the tracer (never at import time).

Four ways to set an option, one mechanism: ``armature.config.name = value``
(this module's class is :class:`_ConfigModule`, whose ``__setattr__`` routes
an option to :data:`config`), ``config.set(name=value)``,
``config.patch(name=value)`` (a context manager and a decorator), and the
environment variable ``ARMATURE_<NAME>`` read when armature is imported
(``ARMATURE_RECOMPILE_LIMIT=2``).  Every one of them ends in
``Config.__setattr__``, which checks the name, the type and the range: an
unknown name, a wrong type or a value out of range raises, so a setting is
never silently dropped (an assignment to a misspelt name used to land on the
module and do nothing).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import types
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
    #:   the graph.  Each module instance gets its own cache entry -- except
    #:   where two or more instances are compiled separately for one code
    #:   (the per-block recipe): their shared cache takes parameters as
    #:   inputs (driver/shared_code.py).
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
    #: int attributes of nn.Modules (``self.num_heads``, ``self.steps``):
    #: True (the default): static at first, a constant of the graph guarded
    #: by value, and a symbol once one has changed between calls (automatic
    #: dynamic, as for any other int), so configuration stays a constant and
    #: a step counter costs one recompile, not one per value.  False, as
    #: torch.compile's option of the same name defaults: always static, a
    #: changed one recompiles with the new constant (up to recompile_limit).
    allow_unspec_int_on_nn_module: bool = True

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

    #: a graph compiled inside a DistributedDataParallel forward is split at
    #: DDP's gradient-bucket boundaries (torch's DDPOptimizer, as
    #: torch.compile's optimize_ddp setting), so each bucket's all-reduce starts
    #: while the rest of the backward runs; off: one graph, all gradients
    #: ready at its end (same results, no overlap).  backends/ddp_split.py
    optimize_ddp: bool = True

    #: the parameters and buffers of modules FSDP manages (graph inputs of
    #: the code compiled for them) are not checked on every call (their
    #: dtype, shape, strides, requires_grad), as torch.compile's
    #: skip_fsdp_guards (on by default there) skips guards on FSDP modules.
    #: Saves the checks; the risk: a parameter whose metadata changes after
    #: compiling (frozen with requires_grad_(False), cast to another dtype,
    #: resharded to another shape) still runs the old graph -- wrong
    #: gradients, or an error inside the graph -- instead of recompiling.
    skip_fsdp_guards: bool = False

    #: with the inductor backend on a CPU, the C++ kernels of one generated
    #: module are built as a few translation units (at most inductor's
    #: ``compile_threads``) instead of one compiler run each: the same
    #: kernels, built in a fraction of the time.  Off: one run per kernel,
    #: as inductor does.  backends/cpp_kernel_batches.py
    cpp_kernel_batches: bool = True

    #: a graph break inside a ``for``/``while`` loop of a frame: "native" --
    #: the frame runs as Python and the user functions and modules it calls
    #: are compiled as frames of their own, as torch.compile does (its graph
    #: count, no graphs per iteration); "split" -- the frame is split there
    #: and the loop body's parts compile as resume functions (more, smaller
    #: graphs, reused every iteration).  driver/native_frames.py
    loop_breaks: str = "native"

    #: the persistent compile cache (the warm start: driver/persistent_cache.py):
    #: entries compiled in one process are stored in ``cache_dir`` and loaded
    #: by later processes, whose first call then runs without tracing.  On by
    #: default, as torch's own compile caches are; ARMATURE_CACHE=0 turns it off.
    cache: bool = True
    #: where the persistent cache lives (ARMATURE_CACHE_DIR); empty: the
    #: user's cache directory, ``$XDG_CACHE_HOME/armature`` or ``~/.cache/armature``
    cache_dir: str = ""
    #: the persistent cache's size bound: least recently used entries go beyond it
    cache_size_mb: int = 1024

    def dynamic_sources_list(self) -> list[str]:
        return [item.strip() for item in self.dynamic_sources.split(",") if item.strip()]

    def __setattr__(self, name: str, value: Any) -> None:
        _check(name, value)
        object.__setattr__(self, name, value)


_FIELDS = {f.name: f for f in dataclasses.fields(Config)}
#: each option's type (the annotations are strings here)
_TYPES = {name: {"int": int, "bool": bool, "str": str}[f.type] for name, f in _FIELDS.items()}


def _from_env(name: str, raw: str) -> Any:
    """An option's value spelt in the environment (``ARMATURE_<NAME>``)."""
    kind = _TYPES[name]
    var = f"ARMATURE_{name.upper()}"
    if kind is bool:
        low = raw.strip().lower()
        if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
            raise ValueError(f"{var}={raw!r}: expected 1/0, true/false, yes/no or on/off")
        return low in ("1", "true", "yes", "on")
    if kind is int:
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"{var}={raw!r}: expected an integer") from None
    return raw


def _config_from_env() -> "Config":
    made = Config()
    for name in _FIELDS:
        raw = os.environ.get(f"ARMATURE_{name.upper()}")
        if raw is None or name == "dynamic_sources":   # (its default reads the variable)
            continue
        value = _from_env(name, raw)
        try:
            setattr(made, name, value)
        except (TypeError, ValueError) as e:
            raise ValueError(f"ARMATURE_{name.upper()}={raw!r}: {e}") from None
    return made


def _check(name: str, value: Any) -> None:
    if name not in _FIELDS:
        raise AttributeError(
            f"armature.config has no option {name!r}; options: {', '.join(sorted(_FIELDS))}")
    expected = _TYPES[name]
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise TypeError(f"armature.config.{name} must be {expected.__name__}, got {value!r}")
    if name == "cache_size_mb" and value < 1:
        raise ValueError("armature.config.cache_size_mb must be >= 1")
    if name == "recompile_limit" and value < 1:
        raise ValueError("armature.config.recompile_limit must be >= 1")
    if name == "regions" and value not in ("auto", "always", "off"):
        raise ValueError(f"armature.config.regions must be 'auto', 'always' or 'off', got {value!r}")
    if name == "loop_breaks" and value not in ("native", "split"):
        raise ValueError(f"armature.config.loop_breaks must be 'native' or 'split', got {value!r}")
    if name == "module_parameters" and value not in ("attributes", "inputs"):
        raise ValueError("armature.config.module_parameters must be 'attributes' or 'inputs', "
                         f"got {value!r}")


config = _config_from_env()


def dynamic_sources_list() -> list[str]:
    return config.dynamic_sources_list()


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
    raise AttributeError(f"armature.config has no option {name!r}; options: {', '.join(sorted(_FIELDS))}")


class _ConfigModule(types.ModuleType):
    """This module's class: ``armature.config.name = value`` sets the option
    (checked), instead of adding a module attribute that nothing reads."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FIELDS:
            setattr(config, name, value)
            return
        if name not in self.__dict__ and not name.startswith("_"):
            _check(name, value)   # raises: not an option (a misspelt one, most likely)
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in _FIELDS:
            raise AttributeError(f"armature.config.{name} is an option: it cannot be deleted "
                                 f"(set it, or use config.patch to change it for a while)")
        super().__delattr__(name)


sys.modules[__name__].__class__ = _ConfigModule
