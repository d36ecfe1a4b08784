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

import weakref


def ddp_class():
    """DistributedDataParallel, or None where torch.distributed is not built."""
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:   # pragma: no cover - torch built without distributed
        return None
    return DistributedDataParallel


def is_ddp(mod) -> bool:
    cls = ddp_class()
    return cls is not None and isinstance(mod, cls)


class DDPRunner:
    """Calls DDP modules with their wrapped module compiled for one backend
    (and fullgraph / dynamic setting); one per setting, the compiled inner
    modules kept per wrapped module (weakly)."""

    def __init__(self, backend, fullgraph: bool = False, dynamic=None):
        self.backend, self.fullgraph, self.dynamic = backend, fullgraph, dynamic
        self._inner: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def compiled_inner(self, inner):
        from ..api import CompiledModule
        if type(inner) is CompiledModule:
            return inner     # DDP(armature.compile(m)) compiled again from outside
        c = self._inner.get(inner)
        if c is None:
            c = self._inner[inner] = CompiledModule(inner, self.backend, self.fullgraph, self.dynamic)
        return c

    def __call__(self, ddp, *args, **kwargs):
        return ddp_call(ddp, self.compiled_inner(ddp._modules["module"]), args, kwargs)


def ddp_call(ddp, compiled_inner, args, kwargs):
    """``ddp(*args, **kwargs)`` with ``compiled_inner`` standing in for the
    wrapped module during the call."""
    modules = ddp._modules
    original = modules["module"]
    if compiled_inner is original:
        return ddp(*args, **kwargs)
    modules["module"] = compiled_inner
    try:
        return ddp(*args, **kwargs)
    finally:
        modules["module"] = original


_RUNNERS: dict = {}


def runner_for(backend, fullgraph: bool = False, dynamic=None) -> DDPRunner:
    key = (backend, fullgraph, dynamic)
    r = _RUNNERS.get(key)
    if r is None:
        r = _RUNNERS[key] = DDPRunner(backend, fullgraph, dynamic)
    return r


def reset() -> None:
    _RUNNERS.clear()
