"""NumPy inside compiled code (``torch._numpy`` in the graph).

* ndarray.py   -- NdarrayValue: a graph tensor the program holds as an
                  ndarray or NumPy scalar; operators, attributes, methods.
* functions.py -- the ``numpy`` namespace (functions, classes) and the
                  torch <-> NumPy bridges.
* targets.py   -- the callables graph nodes run (torch._numpy wrappers) and
                  the run-time conversions at the graph boundary.
* shadow.py    -- NumPy itself, run on shadow arrays while tracing, to check
                  what torch._numpy computes (scalar or array, dtype, shape).
* this module  -- what the value builder asks: :func:`wrap_numpy_object`
                  (frame inputs, globals, numpy's objects) and the Source of
                  an ndarray input's tensor.

May import at module level: the core (``values.base``, ``values.constant``,
``values.builder``, ``values.kinds``) and ``tensors`` (an ndarray is a graph
tensor).  Anything else is reached inside a function.
"""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any

import torch

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource, Source
from ..constant import ConstantValue
from ..tensors.tensor import TensorValue
from . import targets
from .functions import (NumpyClassValue, NumpyFunctionValue, TorchFromNumpyValue, _namespace, is_bridge,
                        is_numpy_callable, tensor_numpy)
from .ndarray import _BREAK, NdarrayValue

__all__ = ["wrap_numpy_object", "tensor_numpy", "NdarrayValue", "is_ndarray_value", "scalar_input_as_number"]


def is_ndarray_value(v) -> bool:
    return isinstance(v, NdarrayValue)


@dataclass(frozen=True)
class FromNumpySource(Source):
    """The tensor over an ndarray (or NumPy scalar) frame input:
    ``torch.from_numpy(x)``, made on every call, sharing ``x``'s memory."""

    array: Source
    scalar: bool = False
    #: a new tensor object on every call (trace/context.py skips it in the
    #: distinct-inputs guard; memory overlap is guarded on the arrays)
    fresh_per_call = True

    @property
    def base(self):
        return self.array

    def _fn(self):
        return targets.numpy_scalar_to_tensor if self.scalar else targets.ndarray_to_tensor

    def expr(self, pool):
        return f"{pool.const(self._fn())}({pool.render(self.array)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(self._fn())
        self.array.emit(out)
        out.call(1)

    def __str__(self):
        return f"from_numpy({self.array})"


@dataclass(frozen=True)
class MayShareMemorySource(Source):
    """``np.may_share_memory(a, b)`` of two ndarray inputs (guarded False)."""

    a: Source
    b: Source

    def expr(self, pool):
        return f"{pool.const(targets.may_share_memory)}({pool.render(self.a)}, {pool.render(self.b)})"

    def emit(self, out):
        raise Unsupported("loading a memory-overlap test")

    def __str__(self):
        return f"may_share_memory({self.a}, {self.b})"


def scalar_input_as_number(ctx, v):
    """A NumPy scalar frame input (``f(t, np.float32(2.5))``) meeting torch
    (``t * s``, ``torch.add(t, s)``): torch parses it as a Scalar, the Python
    number of its value, which a 0-d graph input would not be (its dtype
    would take part in type promotion).  So its value is guarded and the
    number is a constant of the entry, as a Python float argument is; None
    for anything else (a scalar computed in the graph, an ndarray, a NumPy
    bool or complex scalar, which torch reads differently)."""
    np = sys.modules.get("numpy")
    if np is None or not isinstance(v, NdarrayValue) or not v.scalar or v.source is None:
        return None
    value = v.shadow
    if not isinstance(value, (np.floating, np.integer)) or value != value:
        return None
    _guard(ctx, Kind.CONSTANT_MATCH, v.source, value)
    return ConstantValue(value.item())


def wrap_numpy_object(ctx, obj: Any, source: Source | None):
    """The Value of a NumPy object (or of a torch function that bridges to
    NumPy), or None for anything else.  Asked by values/builder.py."""
    if is_bridge(obj):
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return TorchFromNumpyValue(obj, source)
    np = sys.modules.get("numpy")
    if np is None or isinstance(obj, types.ModuleType):
        return None
    if isinstance(obj, np.ndarray):
        return _wrap_ndarray(ctx, np, obj, source)
    if isinstance(obj, np.generic):
        return _wrap_scalar(ctx, np, obj, source)
    if isinstance(obj, (np.dtype, np.finfo, np.iinfo)):
        _guard(ctx, Kind.ID_MATCH if not isinstance(obj, np.dtype) else Kind.CONSTANT_MATCH, source, obj)
        return ConstantValue(obj, source)
    if isinstance(obj, type) and (issubclass(obj, (np.generic, np.ndarray, np.dtype))
                                  or obj in (np.finfo, np.iinfo)):
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return NumpyClassValue(obj, source)
    if callable(obj) and is_numpy_callable(obj):
        entry = _namespace().get(id(obj))
        if entry is not None and entry[0] is obj:
            _guard(ctx, Kind.ID_MATCH, source, obj)
            return NumpyFunctionValue(obj, entry[2], entry[1], source)
        _guard(ctx, Kind.ID_MATCH, source, obj)
        name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", repr(obj))
        return NumpyFunctionValue(obj, f"{getattr(obj, '__module__', None) or 'numpy'}.{name}", None, source)
    if type(obj).__module__.startswith("numpy.random."):
        return None   # (a Generator, RandomState: an object like any other; its draws are calls that break)
    if type(obj).__module__.split(".")[0] == "numpy":
        raise Unsupported(f"a NumPy {type(obj).__name__} object inside a compiled function", hint=_BREAK)
    return None


def _guard(ctx, kind, source, expected):
    if source is not None:
        ctx.guards.add(Guard(kind, source, expected))


def _wrap_ndarray(ctx, np, obj, source) -> NdarrayValue:
    if source is None:
        raise Unsupported("an ndarray reached from torch internals")
    if type(obj) is not np.ndarray:
        raise Unsupported(f"an ndarray subclass ({type(obj).__qualname__}) passed into a compiled function",
                          hint=_BREAK)
    from .shadow import torch_dtype_of
    if torch_dtype_of(obj.dtype) is None or not obj.dtype.isnative:
        raise Unsupported(f"an ndarray of dtype {obj.dtype} (torch has no such dtype)", hint=_BREAK)
    if not obj.flags.writeable:
        raise Unsupported("a read-only ndarray passed into a compiled function", hint=_BREAK)
    if any(s < 0 or s % obj.itemsize for s in obj.strides):
        raise Unsupported("an ndarray with negative or unaligned strides (torch.from_numpy refuses it)",
                          hint=_BREAK)
    _guard(ctx, Kind.TYPE_MATCH, source, np.ndarray)
    _guard(ctx, Kind.CONSTANT_MATCH, AttrSource(source, "dtype"), obj.dtype)
    _guard(ctx, Kind.CONSTANT_MATCH, AttrSource(source, "shape"), obj.shape)
    _guard(ctx, Kind.CONSTANT_MATCH, AttrSource(source, "strides"), obj.strides)
    _guard(ctx, Kind.CONSTANT_MATCH, AttrSource(AttrSource(source, "flags"), "writeable"), True)
    # two input arrays over the same memory would let the graph's writes
    # through one reach the other: compiled only for disjoint arrays
    others = getattr(ctx, "_numpy_inputs", None)
    if others is None:
        others = ctx._numpy_inputs = []
    for other_obj, other_src in others:
        if np.may_share_memory(obj, other_obj):
            raise Unsupported(f"ndarray inputs {other_src} and {source} share memory", hint=_BREAK)
        _guard(ctx, Kind.CONSTANT_MATCH, MayShareMemorySource(other_src, source), False)
    others.append((obj, source))
    real = torch.from_numpy(obj)
    node, fake = ctx.graph.add_input(real, FromNumpySource(source))
    from .shadow import with_layout
    return NdarrayValue(TensorValue(node, fake), with_layout(obj.copy(), obj.strides), source=source)


def _wrap_scalar(ctx, np, obj, source):
    from .shadow import torch_dtype_of
    if source is None or torch_dtype_of(obj.dtype) is None:
        if isinstance(obj, (np.number, np.bool_)):
            _guard(ctx, Kind.CONSTANT_MATCH, source, obj)
            return ConstantValue(obj, source)
        raise Unsupported(f"a NumPy {type(obj).__name__} scalar inside a compiled function", hint=_BREAK)
    # a graph input (a 0-d tensor), so a new value does not recompile
    _guard(ctx, Kind.TYPE_MATCH, source, type(obj))
    real = targets.numpy_scalar_to_tensor(obj)
    node, fake = ctx.graph.add_input(real, FromNumpySource(source, scalar=True))
    return NdarrayValue(TensorValue(node, fake), obj, scalar=True, source=source)
