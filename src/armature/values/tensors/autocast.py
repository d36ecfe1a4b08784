"""``torch.autocast(...)`` regions inside compiled code that keep the autocast
state as it is.

Model code often wraps a computation in ``with torch.autocast(device,
enabled=False):`` to force float32 (LLaMA's rotary embedding does, on every
decoding step).  Called without autocast on, that region changes nothing a
program can observe: the same ops run with the same dtypes (entering bumps
autocast's nesting count and leaving clears its cast cache, which is empty
when autocast is off).  So armature traces it as a no-op region, guarded on
the autocast state the decision read.  A region that would switch autocast
on, off or to another dtype is a graph break (the ``with`` block runs as
Python), as are regions entered through anything but ``with``.
"""
from __future__ import annotations

import torch

from ...diagnostics.errors import Unsupported
from ..base import CallableConstantValue, Value, realize
from ..constant import ConstantValue


def is_autocast_class(obj) -> bool:
    return obj is torch.amp.autocast_mode.autocast


class AutocastClassValue(CallableConstantValue):
    def call(self, tx, args, kwargs):
        names = ("device_type", "dtype", "enabled", "cache_enabled")
        bound = dict(zip(names, args))
        bound.update(kwargs)
        if set(bound) - set(names) or "device_type" not in bound:
            raise Unsupported("torch.autocast() with these arguments")
        opts = {}
        for name, default in (("device_type", None), ("dtype", None), ("enabled", True), ("cache_enabled", None)):
            v = realize(tx.ctx, bound[name]) if name in bound else ConstantValue(default)
            if not v.is_python_constant():
                raise Unsupported(f"torch.autocast({name}=...) that is not a constant")
            opts[name] = v.as_python_constant()
        return AutocastValue(**opts)


class AutocastValue(Value):
    """One ``torch.autocast(...)`` object made in the traced code."""

    def __init__(self, device_type, dtype, enabled, cache_enabled):
        super().__init__()
        self.device_type, self.dtype = device_type, dtype
        self.enabled, self.cache_enabled = bool(enabled), cache_enabled

    def python_type(self):
        return torch.amp.autocast_mode.autocast

    def getattr(self, tx, name):
        if name in ("__enter__", "__exit__"):
            return _Method(self, name)
        raise Unsupported(f"attribute {name!r} of a torch.autocast object")

    def enter(self, tx) -> Value:
        from .tensor import _guard_global_query
        device = self.device_type
        try:
            current = torch.is_autocast_enabled(device)
            current_dtype = torch.get_autocast_dtype(device)
        except Exception as e:
            raise Unsupported(f"torch.autocast({device!r}): {e}")
        _guard_global_query(tx, torch.is_autocast_enabled, (device,), {}, current)
        wanted_dtype = self.dtype if self.dtype is not None else current_dtype
        if self.enabled:
            _guard_global_query(tx, torch.get_autocast_dtype, (device,), {}, current_dtype)
        if self.enabled != current or (self.enabled and wanted_dtype != current_dtype):
            raise Unsupported(f"torch.autocast({device!r}, enabled={self.enabled}) changes the autocast state "
                              "inside compiled code",
                              hint="the with block runs as Python (a graph break); or enter autocast around the "
                                   "compiled call")
        return self

    def exit(self, tx) -> Value:
        return ConstantValue(None)

    def reconstruct(self, out):
        raise Unsupported("a torch.autocast object handed over a graph break")


class _Method(Value):
    def __init__(self, owner: AutocastValue, name: str):
        super().__init__()
        self.owner, self.name = owner, name

    def call(self, tx, args, kwargs):
        return self.owner.enter(tx) if self.name == "__enter__" else self.owner.exit(tx)

    def reconstruct(self, out):
        # the region changed nothing: leaving it after a break changes nothing either
        if self.name != "__exit__":
            raise Unsupported("rebuilding torch.autocast.__enter__")
        out.load_const(_leave_noop_region)


def _leave_noop_region(*exc_info):
    return None


def wrap_special(ctx, obj) -> Value | None:
    if is_autocast_class(obj):
        return AutocastClassValue(obj)
    return None
