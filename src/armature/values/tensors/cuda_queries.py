"""``torch.cuda``'s device queries, answered while tracing.

``torch.cuda.get_device_capability()`` and friends are Python functions
that initialise CUDA lazily (``_lazy_init`` asks ``_is_in_bad_fork``, a C
function that may change global state): inlined, every such query was a
graph break, and under ``fullgraph=True`` an error, where torch.compile
folds them to constants.  Here each is called for real while tracing (as
eager would call it at that point) and its answer becomes a constant of
the graph.

What is guarded: a device's capability, name and properties never change
in a process, nor do ``is_available()`` and ``device_count()`` once CUDA is
initialised, so those need no guard, except that a query of "the current
device" (no argument) depends on ``torch.cuda.set_device``: it is guarded
on the current device where there is more than one.  ``current_device()``
and ``is_initialized()`` are guarded on every call (one C call each).
"""
from __future__ import annotations

import torch

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind
from ..base import concrete
from ..constant import ConstantValue
from .state_queries import _query as _guarded   # (asked again on every call)


def _constant_args(tx, label, args, kwargs):
    out_a, out_k = [], {}
    for v in args:
        v = concrete(tx, v)
        if not v.is_python_constant():
            raise Unsupported(f"{label} with an argument not known while tracing")
        out_a.append(v.as_python_constant())
    for k, v in kwargs.items():
        v = concrete(tx, v)
        if not v.is_python_constant():
            raise Unsupported(f"{label} with an argument not known while tracing")
        out_k[k] = v.as_python_constant()
    return out_a, out_k


def _guard_current_device(tx) -> None:
    cur = torch.cuda.current_device()
    tx.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text="___cuda_cur() == ___cuda_dev",
                            consts={"___cuda_cur": torch.cuda.current_device, "___cuda_dev": cur},
                            label=f"torch.cuda.current_device() == {cur}"))


def _per_device(fn, label, takes_device=True):
    """A query of one device (None, or no device argument at all: the
    current one), fixed for the process."""
    def handler(tx, *args, **kwargs):
        a, k = _constant_args(tx, label, args, kwargs)
        try:
            value = fn(*a, **k)
        except Exception as e:  # noqa: BLE001 - eager raises it at this call too
            raise Unsupported(f"{label} raised {type(e).__name__}: {e}")
        device = (a[0] if a else k.get("device")) if takes_device else None
        if device is None and torch.cuda.device_count() > 1:
            _guard_current_device(tx)
        return ConstantValue(value)
    return handler


def _fixed(fn, label):
    """A no-argument query whose answer does not change in the process."""
    def handler(tx, *args, **kwargs):
        if args or kwargs:
            raise Unsupported(f"{label} with arguments")
        return ConstantValue(fn())
    return handler


def register(rules: dict) -> None:
    cuda = torch.cuda
    rules[cuda.is_available] = _fixed(cuda.is_available, "torch.cuda.is_available()")
    rules[cuda.device_count] = _fixed(cuda.device_count, "torch.cuda.device_count()")
    rules[cuda.is_initialized] = _guarded(cuda.is_initialized, "torch.cuda.is_initialized()")
    if cuda.is_available():
        # (without CUDA these raise; inlined they raise the same error as eager)
        rules[cuda.current_device] = _guarded(cuda.current_device, "torch.cuda.current_device()")
        for name in ("get_device_capability", "get_device_name", "is_bf16_supported"):
            fn = getattr(cuda, name, None)
            if fn is not None:
                rules[fn] = _per_device(fn, f"torch.cuda.{name}()", takes_device=name != "is_bf16_supported")
