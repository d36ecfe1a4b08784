"""``armature.config.patch(...)`` inside compiled code.

A ``with armature.config.patch(capture_scalar_outputs=True):`` block (or a
function decorated with ``@armature.config.patch(...)`` that compiled code
calls) is not traced into: it changes how its region is traced.  Entering
it sets the options for the rest of the trace (the trace reads options
live), leaving it restores them, and the region compiles into the same graph
as its surroundings; nothing of it runs at run time.  A trace that stops
inside a region (an error, a fallback) has the options restored by
``TraceContext.restore_global_state``.  Options that do not change how code
is traced (``recompile_limit``) cannot be patched there.  A graph break
inside a region is not split: the frame runs as Python (documented limit).
"""
from __future__ import annotations

from ... import config as config_mod
from ...diagnostics.errors import Unsupported
from ..base import Value
from ..constant import ConstantValue

#: options that change how code is traced, and so may be patched inside it
TRACING_OPTIONS = frozenset({"capture_scalar_outputs", "capture_dynamic_output_shape_ops", "inline_depth_limit",
                             "guard_torch_internals", "module_parameters", "dynamic_sources"})


def check_changes(changes: dict) -> None:
    for name, value in changes.items():
        if name not in TRACING_OPTIONS and name in config_mod._FIELDS:
            raise Unsupported(f"armature.config.patch({name}=...) inside compiled code: {name} does not change how "
                              "code is traced, so it cannot be patched inside a compiled function",
                              hint="patch it around the call of the compiled function instead")
        try:
            config_mod._check(name, value)
        except (AttributeError, TypeError, ValueError) as e:
            raise Unsupported(f"armature.config.patch inside compiled code: {e}") from None


class ConfigPatchFunctionValue(Value):
    """``armature.config.patch`` itself, called in traced code."""

    def python_type(self):
        return type(config_mod.patch)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return config_mod.patch

    def call(self, tx, args, kwargs):
        if args:
            raise Unsupported("armature.config.patch() takes keyword arguments only")
        changes = {k: v.as_python_constant() for k, v in kwargs.items()}
        check_changes(changes)
        return ConfigPatchValue(changes)


class ConfigPatchValue(Value):
    """One ``config.patch(...)`` object: a context manager of the trace."""

    def __init__(self, changes: dict, source=None):
        super().__init__(source)
        self.changes = changes
        self.saved: list[dict] = []

    def python_type(self):
        return config_mod._Patch

    def enter(self, tx) -> Value:
        self.saved.append(tx.ctx.patch_config(self.changes))
        return self

    def exit(self, tx) -> Value:
        tx.ctx.unpatch_config(self.saved.pop())
        return ConstantValue(False)

    def getattr(self, tx, name):
        if name in ("__enter__", "__exit__"):
            return _PatchMethod(self, name)
        if name == "_recreate_cm":   # ContextDecorator: a decorated function re-enters the same patch
            return _SelfReturning(self)
        raise Unsupported(f"attribute {name!r} of an armature.config.patch object")

    def reconstruct(self, out):
        if self.saved:
            raise Unsupported("a graph break inside an armature.config.patch region of compiled code",
                              hint="move the graph break out of the region, or the patch around the compiled call")
        if self.source is not None:
            self.source.emit(out)
            return
        out.load_const(config_mod.patch(**self.changes))   # (patch objects can be entered again)


class _PatchMethod(Value):
    def __init__(self, patch: ConfigPatchValue, name: str):
        super().__init__()
        self.patch, self.name = patch, name

    def call(self, tx, args, kwargs):
        return self.patch.enter(tx) if self.name == "__enter__" else self.patch.exit(tx)

    def reconstruct(self, out):
        raise Unsupported("a graph break inside an armature.config.patch region of compiled code",
                          hint="move the graph break out of the region, or the patch around the compiled call")


class _SelfReturning(Value):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def call(self, tx, args, kwargs):
        return self.value
