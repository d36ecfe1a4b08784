"""NumPy dtypes, finfo/iinfo, strides and tensors handed to NumPy (issue #25).

PyTorch's own Dynamo tests found these failing in armature: dtype objects
passed in as arguments or called, ``np.finfo``/``np.iinfo`` results meeting
tensors (the graph's code spelled ``np.float32(...)`` and had no ``np``),
``ndarray.strides`` (NumPy's are bytes, and NumPy's layout of a result need
not be torch._numpy's), and a ``torch.Tensor`` passed to NumPy functions
(``__array__``).  Each program runs eagerly and compiled (twice, the second
call on new values), results and mutated inputs compared; graph counts are
compared with torch.compile where torch.compile computes the same answer.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from helpers import USING_TORCH, compile_fn, reset
from .test_numpy import arr, check, same, torch_compile_graphs, x

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def check_like_torch(fn, *args, graphs=1):
    check(fn, *args, graphs=graphs)
    assert torch_compile_graphs(fn, *args) == graphs


# --- dtype objects as arguments, called -------------------------------------------

def astype_arg(t, dt):
    return torch.from_numpy(t.numpy().astype(dt)) * 2


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int32, np.dtype("float64"), np.dtype("int16")],
                         ids=str)
def test_dtype_passed_as_argument(dt):
    check_like_torch(astype_arg, x(3, 4), dt)


def dtype_called(t, dt):
    return t.numpy() * dt(2), dt(3)


def dtype_type_called(t, dt):
    return t.numpy() + dt.type(2), dt.type(5), dt.itemsize, dt.kind


def test_scalar_type_argument_called():
    check_like_torch(dtype_called, x(3), np.float32)


def test_dtype_object_argument_type_called():
    # was: the frame ran as Python ("method 'type' of Float64DType")
    check_like_torch(dtype_type_called, x(3), np.dtype("float64"))
    check(dtype_type_called, x(3), np.dtype("int32"))


def scalar_type_in_frame(t):
    return t + float(np.float32(3)), np.float32(3), np.int8(-2), np.float64(2.5) * np.float32(2)


def test_numpy_scalar_made_in_frame():
    check(scalar_type_in_frame, x(3))   # torch.compile returns a 0-d ndarray for np.float32(3)


# --- NumPy scalars meeting tensors (the graph spelled np.float32(...)) -------------

def finfo_of_argument(t, dt):
    fi = np.finfo(dt)
    return t * fi.eps, fi.max, fi.tiny, fi.bits, fi.resolution, fi.dtype


def iinfo_of_argument(t, dt):
    ii = np.iinfo(dt)
    return t + ii.bits, ii.max, ii.min, t.clamp(max=ii.max)


def finfo_of_array_dtype(a):
    return a * np.finfo(a.dtype).eps, np.finfo(a.dtype).bits, np.finfo(a.dtype).max


def iinfo_of_array_dtype(a):
    return a + np.iinfo(a.dtype).max // 4, np.iinfo(a.dtype).min


@pytest.mark.parametrize("dt", [np.float32, np.dtype("float64"), np.float16], ids=str)
def test_finfo_of_dtype_argument(dt):
    # torch.compile returns Python floats for fi.max/fi.tiny (eager: NumPy scalars)
    check(finfo_of_argument, x(3), dt)


@pytest.mark.parametrize("dt", [np.int16, np.dtype("int32"), np.uint8], ids=str)
def test_iinfo_of_dtype_argument(dt):
    check_like_torch(iinfo_of_argument, x(3), dt)


def test_finfo_iinfo_of_arrays_dtypes():
    # torch.compile runs both frames as Python (0 graphs)
    check(finfo_of_array_dtype, arr(3, dtype=np.float32))
    check(iinfo_of_array_dtype, np.arange(4, dtype=np.int32))


def numpy_scalars_into_torch_ops(t):
    return (t * np.float32(1.5), np.float64(0.5) * t, t - np.int64(2), t.to(torch.int32) * np.uint8(3),
            torch.full((2,), np.int32(4)), t[np.int64(1)], t.view(np.int64(3)))


def test_numpy_scalars_passed_to_torch_ops():
    # each was a NameError at run time (the graph's code had no 'np')
    check(numpy_scalars_into_torch_ops, x(3))


def bool_and_complex_scalars(t):
    return (t.to(torch.int32) + np.bool_(True), t * np.complex64(2), torch.tensor(np.float64(2.0)) + 1,
            torch.tensor([np.float64(2.0), 1.0]))


def test_numpy_scalars_without_a_python_equal_run_as_python():
    # np.bool_ is a double to torch, complex64 loses its imaginary part and
    # torch.tensor(np.float64) keeps NumPy's dtype: a graph break each, eager's answers
    check(bool_and_complex_scalars, x(3), graphs=None, fullgraph=False)
    import armature
    reset()
    with pytest.raises(armature.Unsupported, match="NumPy bool scalar passed to a torch op"):
        compile_fn(bool_and_complex_scalars, backend="eager", fullgraph=True)(x(3))


# --- ndarray.strides -------------------------------------------------------------

def strides_of_input(a):
    return a * 2, a.strides, a.T.strides, a[:, 1:].strides, a[::2].strides, a[:, ::2].strides


def strides_of_made(t):
    b = t.numpy() * 2
    return b, b.strides, b.T.strides, b[:, ::2].strides, b[1:].strides, b.astype(np.float32).strides


def strides_of_results_laid_out_by_numpy(a):
    c = a.T * 2                  # NumPy keeps the input's (Fortran) order
    return c.strides, (a.T + 1).copy().strides, np.ascontiguousarray(a.T).strides, \
        c.sum(axis=0).strides, np.float64(2).strides


def strides_of_tensor_views(t):
    return t.numpy().strides, t.T.numpy().strides, t[:, 1:].numpy().strides, t.T.numpy().copy().strides


@pytest.mark.parametrize("a", [arr(3, 4), arr(4, 6)[::2, 1:], arr(3, 4, dtype=np.float32).T], ids=["c", "sliced", "T"])
def test_strides_of_input_arrays(a):
    check_like_torch(strides_of_input, a)


def test_strides_of_arrays_made_in_the_frame():
    check_like_torch(strides_of_made, x(3, 4))     # was 4 graphs (each .strides a graph break)


def test_strides_follow_numpy_layout():
    check(strides_of_results_laid_out_by_numpy, arr(3, 4))


def test_strides_of_tensor_views():
    check_like_torch(strides_of_tensor_views, x(3, 4))
    check(strides_of_tensor_views, x(6, 4)[::2])


def test_strides_of_a_non_contiguous_input_after_a_recompile():
    reset()
    compiled = compile_fn(strides_of_input, backend="eager", fullgraph=True)
    for a in (arr(3, 4), arr(3, 4).T, np.asfortranarray(arr(4, 4))[:, 1:]):
        same(strides_of_input(a.copy(order="K")), compiled(a))


# --- a torch.Tensor handed to NumPy (__array__) ------------------------------------

def asarray_and_array(t):
    a = np.asarray(t)
    return a * 2, np.array(t) + 1


def test_asarray_array_of_a_tensor():
    check_like_torch(asarray_and_array, x(3, 4))


def ufunc_of_tensor(t):
    return np.add(t, 1), np.sin(t)      # eager: tensors (__array_wrap__)


def reduction_of_tensor(t):
    return np.sum(t)                    # eager: Tensor.sum(axis=None, ...) raises TypeError


def concatenate_tensors(t):
    return np.concatenate([t, t]) * 2   # eager: an ndarray through __array__


def test_numpy_functions_of_a_tensor_run_as_python():
    # torch.compile returns ndarrays for the ufuncs (eager: tensors) and an
    # array for np.sum (eager raises): armature breaks, eager's answers
    check(ufunc_of_tensor, x(3), graphs=0, fullgraph=False)
    check(concatenate_tensors, x(3), graphs=None, fullgraph=False)
    import armature
    reset()
    with pytest.raises(armature.Unsupported, match=re.escape("a torch.Tensor passed to NumPy code")):
        compile_fn(ufunc_of_tensor, backend="eager", fullgraph=True)(x(3))


def test_numpy_reduction_of_a_tensor_raises_like_eager():
    with pytest.raises(TypeError) as eager:
        reduction_of_tensor(x(3))
    reset()
    with pytest.raises(TypeError) as compiled:
        compile_fn(reduction_of_tensor, backend="eager")(x(3))
    assert str(compiled.value) == str(eager.value)


def strides_downstream_of_a_dynamic_tensor(t):
    b = t.T.numpy()          # (3, n): symbolic strides once n is dynamic
    return b[:, 0].strides, t + 1


@pytest.mark.parametrize("dynamic", [None, True], ids=["automatic", "dynamic"])
def test_strides_downstream_of_a_dynamic_tensor_are_eagers(dynamic):
    # the shadow of a tensor with symbolic strides is laid out contiguously:
    # strides read below it would be (28,) where eager has (4,); a graph break instead
    reset()
    compiled = compile_fn(strides_downstream_of_a_dynamic_tensor, backend="eager", dynamic=dynamic)
    for n in (5, 7, 9):
        a = torch.rand(n, 3)
        same(strides_downstream_of_a_dynamic_tensor(a), compiled(a.clone()))


# --- NumPy scalar inputs meeting tensors -------------------------------------------

def scalar_input_with_tensors(t, s):
    h = t.sin()
    return (h * s).cos(), s * h, torch.add(h, s), h.to(torch.int32) * s, h > s, torch.clamp(h, max=s)


@pytest.mark.parametrize("s", [np.float32(0.75), np.float64(0.5), np.int64(2), np.int8(-1)], ids=repr)
def test_numpy_scalar_input_is_a_python_number_to_torch(s):
    # eager: torch parses the NumPy scalar as a Python number (int32 * np.float64 is float32,
    # where a float64 0-d tensor would make it float64).  Was a graph break (2 graphs)
    check(scalar_input_with_tensors, x(3), s)
    assert torch_compile_graphs(scalar_input_with_tensors, x(3), s) == 1


def test_numpy_scalar_input_new_value_recompiles():
    reset()
    compiled = compile_fn(scalar_input_with_tensors, backend="eager", fullgraph=True)
    for s in (np.float64(0.5), np.float64(0.25), np.float32(0.5), np.float64(0.5)):
        same(scalar_input_with_tensors(x(3), s), compiled(x(3), s))


def numpy_scalar_input_to_data_constructors(t, s):
    return torch.tensor(s), torch.as_tensor(s), torch.tensor([s, s]), t.new_tensor([s]), t * s


@pytest.mark.parametrize("s", [np.float64(2.5), np.int32(3), np.float16(1.5)], ids=repr)
def test_numpy_scalar_input_keeps_its_dtype_in_data_constructors(s):
    """``torch.tensor([s, s])`` takes its dtype from the NumPy scalar input
    (float64, int32...), not from a Python number: such calls are not given
    the Python number that operators get (they were, and came out float32)."""
    reset()
    expected = numpy_scalar_input_to_data_constructors(x(2), s)
    got = compile_fn(numpy_scalar_input_to_data_constructors, backend="eager")(x(2), s)
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype and torch.equal(g, e), (e, g)
