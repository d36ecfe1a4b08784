"""DistributedDataParallel under armature: DDP's machinery runs as it does
eagerly, the module it wraps is compiled.

DDP's ``forward`` is communication and bookkeeping (buffer broadcast,
``no_sync`` state, the reducer's preparation for backward, unused-parameter
search); its math is the wrapped module's.  torch.compile leaves DDP's own
frames to Python and compiles the wrapped module's ``forward`` as a frame
of its own, under ``DistributedDataParallel._inside_ddp_forward`` -- which
is what tells the backend to split the graph at DDP's bucket boundaries
(backends/ddp_split.py).

armature has no frame hook, so :func:`ddp_call` does it explicitly: for the
duration of one call of the DDP module, the wrapped module is replaced in
``ddp._modules["module"]`` by its :class:`~armature.api.CompiledModule` (the
same parameters, buffers and submodules: the CompiledModule shares the
dicts), DDP's own ``__call__`` runs natively, and the original is put back.
Everything DDP does (hooks, collectives, ``no_sync``) therefore happens
exactly as eagerly, on every rank, in the same order; compile work (tracing,
the backend) runs no collective.

Three spellings meet here: ``armature.compile(DDP(m))`` (CompiledModule
calls :func:`ddp_call` directly), a DDP module called inside compiled code
(the call is a graph break whose native call is routed here:
codegen/breaks.py), and ``DDP(armature.compile(m))`` (DDP calls the
CompiledModule it was given: nothing to do but the split).
"""
from __future__ import annotations

import sys
import types
import weakref

from .. import upcalls


def ddp_class():
    """DistributedDataParallel, or None where it was never imported (then no
    module is one; asking must not import torch.distributed's machinery)."""
    mod = sys.modules.get("torch.nn.parallel.distributed")
    return getattr(mod, "DistributedDataParallel", None)


def _fsdp_classes() -> tuple:
    """(FSDPModule, FullyShardedDataParallel): FSDP2's mixin (fully_shard
    makes each sharded module's class a subclass of it) and FSDP1's wrapper;
    () while torch.distributed.fsdp is not imported."""
    mod = sys.modules.get("torch.distributed.fsdp")
    if mod is None:
        return ()
    return tuple(c for c in (getattr(mod, "FSDPModule", None), getattr(mod, "FullyShardedDataParallel", None))
                 if c is not None)


def is_ddp(mod) -> bool:
    cls = ddp_class()
    return cls is not None and isinstance(mod, cls)


def kind_of(mod) -> str | None:
    """"ddp" / "fsdp1" (a wrapper whose wrapped module is compiled), "fsdp2"
    (a fully_shard'ed module: its FSDP hooks run eagerly, its forward is
    compiled), or None for any other module."""
    if is_ddp(mod):
        return "ddp"
    fsdp = _fsdp_classes()
    if len(fsdp) == 2:
        if isinstance(mod, fsdp[1]):
            return "fsdp1"
        if isinstance(mod, fsdp[0]):
            return "fsdp2"
    return None


#: the attribute under which a wrapper keeps the module it wraps
_WRAPPED = {"ddp": "module", "fsdp1": "_fsdp_wrapped_module"}


class DistributedRunner:
    """Calls DDP, FSDP1 and FSDP2 modules with their math compiled for one
    backend (and fullgraph / dynamic setting); one per setting.

    The compiled code is generic over module instances
    (``module_parameters="inputs"``) under FSDP, as torch.compile treats
    FSDP-managed modules: FSDP swaps the parameter objects of the modules it
    manages (sharded and unsharded) around every forward, so their
    parameters are graph inputs guarded by type and metadata, and the blocks
    of a model of one class share one graph.  Under DDP the parameters stay
    as they are, and so does ``config.module_parameters``."""

    def __init__(self, backend, fullgraph: bool = False, dynamic=None):
        self.backend, self.fullgraph, self.dynamic = backend, fullgraph, dynamic
        self._inner: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def compiled_inner(self, inner, kind: str):
        CompiledModule = upcalls.CompiledModule
        if isinstance(inner, CompiledModule):
            return inner     # DDP(armature.compile(m)) compiled again from outside
        c = self._inner.get(inner)
        if c is None:
            c = self._inner[inner] = CompiledModule(inner, self.backend, self.fullgraph, self.dynamic)
            if kind != "ddp":
                c.__dict__["_armature_module_parameters"] = "inputs"
        return c

    def compiled_forward(self, mod):
        CompiledFunction = upcalls.CompiledFunction
        fwd = type(mod).forward
        cf = self._inner.get(fwd)
        if cf is None:
            cf = CompiledFunction(fwd, self.backend, self.fullgraph, dynamic=self.dynamic)
            cf._module_parameters = "inputs"
            self._inner[fwd] = cf
        return types.MethodType(cf, mod)

    def __call__(self, mod, *args, **kwargs):
        CompiledModule = upcalls.CompiledModule
        if isinstance(mod, CompiledModule):
            return mod(*args, **kwargs)   # (compiled, then fully_shard'ed: its forward is compiled already)
        kind = kind_of(mod)
        if kind in _WRAPPED:
            name = _WRAPPED[kind]
            return wrapper_call(mod, name, self.compiled_inner(mod._modules[name], kind), args, kwargs)
        if kind == "fsdp2" and "forward" not in mod.__dict__ and isinstance(type(mod).forward, types.FunctionType):
            return forward_call(mod, self.compiled_forward(mod), args, kwargs)
        return mod(*args, **kwargs)


def wrapper_call(wrapper, name: str, compiled_inner, args, kwargs):
    """``wrapper(*args, **kwargs)`` with ``compiled_inner`` standing in for
    the wrapped module (``wrapper._modules[name]``) during the call."""
    modules = wrapper._modules
    original = modules[name]
    if compiled_inner is original:
        return wrapper(*args, **kwargs)
    modules[name] = compiled_inner
    try:
        return wrapper(*args, **kwargs)
    finally:
        modules[name] = original


def forward_call(mod, compiled_forward, args, kwargs):
    """``mod(*args, **kwargs)``: nn.Module.__call__ runs natively (FSDP2's
    hooks: all-gather before, reshard after, backward hooks) and calls the
    compiled forward, set on the instance for the duration of the call."""
    d = mod.__dict__
    d["forward"] = compiled_forward
    try:
        return mod(*args, **kwargs)
    finally:
        d.pop("forward", None)


_RUNNERS: dict = {}


def runner_for(backend, fullgraph: bool = False, dynamic=None) -> DistributedRunner:
    key = (backend, fullgraph, dynamic)
    r = _RUNNERS.get(key)
    if r is None:
        r = _RUNNERS[key] = DistributedRunner(backend, fullgraph, dynamic)
    return r


def reset() -> None:
    _RUNNERS.clear()
