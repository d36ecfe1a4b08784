"""Shadow execution: what NumPy itself would return.

``torch._numpy`` follows NumPy's rules closely but not everywhere (it returns
0-d arrays where NumPy returns scalars such as ``np.float64``; a few dtype
rules differ, e.g. ``int_array / 2`` follows torch's default float dtype).
So every NumPy operation the trace puts in the graph is also run once, while
tracing, by real NumPy on *shadow* arrays: arrays of the same shapes and
dtypes (copies of the real inputs where the trace has them, deterministic
filler otherwise).  The shadow result says whether eager returns an array or
a scalar, and its dtype and shape must match what the graph computes; where
they differ the operation is unsupported (a graph break) instead of a wrong
answer.  Shadows follow the program's own aliasing: a view of a shadow is a
shadow view, and in-place operations update shadows in place.

Cost: one NumPy execution of the traced NumPy code per trace, never at run
time.
"""
from __future__ import annotations

import contextlib
import functools
import warnings

import torch

from ...diagnostics.errors import Unsupported


def np():
    import numpy
    return numpy


@functools.lru_cache(maxsize=None)
def numpy_dtype_of(dtype: torch.dtype):
    """The NumPy dtype a tensor of ``dtype`` converts to, or None (bfloat16...)."""
    try:
        return torch.empty(0, dtype=dtype).numpy().dtype
    except Exception:
        return None


def torch_dtype_of(npdtype):
    """The torch dtype of a NumPy dtype, or None where torch has none."""
    try:
        return torch.from_numpy(np().empty(0, dtype=npdtype)).dtype
    except Exception:
        return None


def dtype_name(obj) -> str | None:
    """``np.float32`` / ``np.dtype('float32')`` as the name torch._numpy takes."""
    n = np()
    if isinstance(obj, n.dtype) or isinstance(obj, type) and issubclass(obj, n.generic):
        try:
            return n.dtype(obj).name
        except TypeError:
            return None
    return None


def filler(shape, npdtype):
    """Deterministic data of a shape and dtype (never NumPy's global RNG)."""
    n = np()
    rng = n.random.default_rng(0)
    dt = n.dtype(npdtype)
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    if dt.kind in "iu":
        return rng.integers(1, 8, size=shape).astype(dt)
    if dt.kind == "c":
        return (rng.random(shape) + 0.5 + 1j * rng.random(shape)).astype(dt)
    return (rng.random(shape) + 0.5).astype(dt)


def with_layout(a, strides):
    """``a``'s data in an array with the byte ``strides`` given (non-negative,
    multiples of the item size): shadows keep the memory layout of what they
    stand for, so that NumPy run on them lays its results out as eager does
    (``ndarray.strides`` is read off the shadow)."""
    strides = tuple(int(s) for s in strides)
    if a.strides == strides or a.ndim != len(strides):
        return a
    n = np()
    span = 1 + sum((d - 1) * s // a.itemsize for d, s in zip(a.shape, strides)) if a.size else 1
    out = n.lib.stride_tricks.as_strided(n.empty(span, dtype=a.dtype), a.shape, strides)
    out[...] = a
    return out


def layout_known(fake: torch.Tensor) -> bool:
    """Whether the tensor's strides are plain ints (not symbolic)."""
    return not any(isinstance(s, torch.SymInt) for s in (*fake.shape, *fake.stride()))


def shadow_of_tensor(fake: torch.Tensor, real: torch.Tensor | None = None):
    """The shadow of ``t.numpy()``: the real data when the trace has it,
    laid out with the tensor's strides (``t.numpy()`` shares them)."""
    shadow = _shadow_data(fake, real)
    if layout_known(fake):
        shadow = with_layout(shadow, tuple(s * fake.element_size() for s in fake.stride()))
    return shadow


def _shadow_data(fake, real):
    if real is not None:
        return real.detach().cpu().resolve_conj().resolve_neg().numpy().copy()
    npdtype = numpy_dtype_of(fake.dtype)
    if npdtype is None:
        raise Unsupported(f"a {fake.dtype} tensor has no NumPy dtype")
    if any(isinstance(s, torch.SymInt) for s in fake.shape):
        shape = tuple(_hint(s) for s in fake.shape)
    else:
        shape = tuple(int(s) for s in fake.shape)
    return filler(shape, npdtype)


def _hint(s):
    if isinstance(s, torch.SymInt):
        hint = s.node.hint
        if hint is None:
            raise Unsupported("converting a tensor with data-dependent sizes to NumPy")
        return int(hint)
    return int(s)


@contextlib.contextmanager
def quiet():
    n = np()
    with warnings.catch_warnings(), n.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def run(what: str, fn, *args, **kwargs):
    """Run real NumPy on shadows; an error NumPy raises here is one eager
    raises too (or data of the filler's making): the trace stops there."""
    try:
        with quiet():
            return fn(*args, **kwargs)
    except Unsupported:
        raise
    except Exception as e:
        raise Unsupported(f"{what} raised {type(e).__name__} in NumPy: {e}",
                          hint="without fullgraph the frame is split here and NumPy runs it as Python") from None


def check(what: str, example: torch.Tensor, shadow) -> bool:
    """Whether the graph's tensor ``example`` stands for NumPy's ``shadow``
    result; returns True when NumPy's result is a scalar (np.generic)."""
    n = np()
    if isinstance(shadow, n.generic):
        scalar = True
        npdtype, shape = shadow.dtype, ()
    elif isinstance(shadow, n.ndarray):
        scalar = False
        npdtype, shape = shadow.dtype, shadow.shape
    else:
        raise Unsupported(f"{what} returns a {type(shadow).__name__} in NumPy, which torch._numpy computes as "
                          "an array")
    mine = numpy_dtype_of(example.dtype)
    if mine != npdtype:
        raise Unsupported(f"{what}: torch._numpy computes dtype {mine} where NumPy computes {npdtype}",
                          hint="without fullgraph the frame is split here and NumPy runs it as Python; "
                               "an explicit dtype= or astype() keeps it in the graph")
    fake_shape = tuple(example.shape)
    if len(fake_shape) != len(shape) or not any(isinstance(s, torch.SymInt) for s in fake_shape) and \
            tuple(int(s) for s in fake_shape) != tuple(shape):
        raise Unsupported(f"{what}: torch._numpy computes shape {tuple(fake_shape)} where NumPy computes "
                          f"{tuple(shape)}")
    return scalar
