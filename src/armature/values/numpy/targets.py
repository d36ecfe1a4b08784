"""The callables that NumPy code becomes in the FX graph.

Graph nodes compute on torch tensors; NumPy's semantics (dtype rules,
broadcasting, argument names) come from torch's NumPy-on-torch layer,
``torch._numpy``.  Each target here wraps one ``torch._numpy`` function,
``ndarray`` method, attribute or operator: its tensor arguments are wrapped
as ``torch._numpy.ndarray`` (which shares the tensor), and ``ndarray``
results are unwrapped back to their tensors, so the graph sees tensors in and
tensors out.  The same objects run on fake tensors while tracing and on real
ones (or under aot_autograd's tracing) when the graph runs.

Targets are cached per function/name, so a graph holds a bounded set of
them and equal calls share one target object.
"""
from __future__ import annotations

import functools

import torch


def _tnp():
    import torch._numpy as tnp
    return tnp


def to_tnp(x):
    """Tensors (the graph's form of ndarrays) as torch._numpy ndarrays."""
    if isinstance(x, torch.Tensor):
        return _tnp().ndarray(x)
    if type(x) in (list, tuple):
        return type(x)(to_tnp(i) for i in x)
    if type(x) is dict:
        return {k: to_tnp(v) for k, v in x.items()}
    if type(x) is slice:
        return slice(to_tnp(x.start), to_tnp(x.stop), to_tnp(x.step))
    return x


def from_tnp(x):
    """torch._numpy ndarrays back to their tensors."""
    tnp = _tnp()
    if isinstance(x, tnp.ndarray):
        return x.tensor
    if type(x) in (list, tuple):
        return type(x)(from_tnp(i) for i in x)
    return x


class NumpyFunction:
    """``numpy.<name>(...)`` computed by its ``torch._numpy`` counterpart."""

    def __init__(self, fn, qualname: str):
        self.fn = fn
        self.qualname = qualname
        self.__name__ = "numpy_" + qualname.replace("numpy.", "").replace(".", "_")

    def __call__(self, *args, **kwargs):
        return from_tnp(self.fn(*to_tnp(args), **to_tnp(kwargs)))

    def __repr__(self):
        return f"<{self.qualname} via torch._numpy>"


class NumpyMethod:
    """``ndarray.<name>(...)``: the first argument is the array."""

    def __init__(self, name: str):
        self.name = name
        self.__name__ = "ndarray_" + name.strip("_")

    def __call__(self, arr, *args, **kwargs):
        return from_tnp(getattr(to_tnp(arr), self.name)(*to_tnp(args), **to_tnp(kwargs)))

    def __repr__(self):
        return f"<ndarray.{self.name} via torch._numpy>"


class NumpyAttr:
    """``ndarray.<name>`` for attributes that are arrays (``T``, ``real``, ``imag``)."""

    def __init__(self, name: str):
        self.name = name
        self.__name__ = "ndarray_attr_" + name

    def __call__(self, arr):
        return from_tnp(getattr(to_tnp(arr), self.name))

    def __repr__(self):
        return f"<ndarray.{self.name} via torch._numpy>"


class NumpyOperator:
    """A Python operator (``+``, ``+=``, ``<``, ``a[i]``, ``a[i] = v``) on ndarrays."""

    def __init__(self, op):
        self.op = op
        self.__name__ = "ndarray_op_" + op.__name__.strip("_")

    def __call__(self, *args):
        return from_tnp(self.op(*to_tnp(args)))

    def __repr__(self):
        return f"<operator.{self.op.__name__} on ndarrays via torch._numpy>"


@functools.lru_cache(maxsize=None)
def function_target(fn, qualname: str) -> NumpyFunction:
    return NumpyFunction(fn, qualname)


@functools.lru_cache(maxsize=None)
def method_target(name: str) -> NumpyMethod:
    return NumpyMethod(name)


@functools.lru_cache(maxsize=None)
def attr_target(name: str) -> NumpyAttr:
    return NumpyAttr(name)


@functools.lru_cache(maxsize=None)
def operator_target(op) -> NumpyOperator:
    return NumpyOperator(op)


# --- run-time conversions at the graph boundary ---------------------------------

def tensor_to_ndarray(t: torch.Tensor):
    """A graph output that the traced code held as an ndarray."""
    return t.numpy(force=True)


def tensor_to_numpy_scalar(t: torch.Tensor):
    """A 0-d graph output that eager NumPy returns as a scalar (np.float64...)."""
    return t.numpy(force=True)[()]


def ndarray_to_tensor(a):
    """An ndarray frame input as the graph's tensor input (shares its memory,
    so in-place writes of the graph reach the caller's array)."""
    return torch.from_numpy(a)


def numpy_scalar_to_tensor(s):
    import numpy as np
    return torch.from_numpy(np.asarray(s))


def may_share_memory(a, b) -> bool:
    import numpy as np
    return bool(np.may_share_memory(a, b))

