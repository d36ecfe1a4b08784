"""NumPy inside compiled code (values/numpy/): differential tests.

Every program runs eagerly and compiled on independent copies of its inputs
(ndarrays copied, tensors cloned), twice (the second call on new values of
the same shapes must hit the cache).  Compared: results (ndarrays must be
real ``numpy.ndarray``s with eager's dtype, shape and values; NumPy scalars
of eager's exact type), mutated inputs, and the number of graphs, which is
also compared with torch.compile's (it traces NumPy through torch._numpy
too) where torch.compile keeps the same code in the graph.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from helpers import USING_TORCH, CountingBackend, assert_equal, compile_fn, reset

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


# --- harness -----------------------------------------------------------------------

def copy_inputs(obj, scale=None):
    if isinstance(obj, np.ndarray):
        out = obj.copy()
        if scale is not None and out.dtype.kind in "fc":
            out *= scale
        return out
    if isinstance(obj, torch.Tensor):
        out = obj.clone()
        if scale is not None and out.is_floating_point():
            out.mul_(scale)
        return out
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        return type(obj)(copy_inputs(o, scale) for o in obj)
    return obj


def same(expected, actual, path="out"):
    if isinstance(expected, np.ndarray):
        assert type(actual) is np.ndarray, f"{path}: {type(actual).__name__} is not numpy.ndarray"
        assert actual.dtype == expected.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.shape == expected.shape, f"{path}: shape {actual.shape} != {expected.shape}"
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=path)
        return
    if isinstance(expected, np.generic):
        assert type(actual) is type(expected), f"{path}: {type(actual).__name__} != {type(expected).__name__}"
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=path)
        return
    if isinstance(expected, (list, tuple)) and not isinstance(expected, torch.Size):
        assert type(actual) is type(expected), f"{path}: {type(actual).__name__} != {type(expected).__name__}"
        assert len(actual) == len(expected), f"{path}: length"
        for i, (e, a) in enumerate(zip(expected, actual)):
            same(e, a, f"{path}[{i}]")
        return
    if isinstance(expected, np.dtype):
        assert actual == expected and type(actual) is type(expected), f"{path}: {actual!r} != {expected!r}"
        return
    assert_equal(expected, actual, path)


def check(fn, *args, graphs=1, fullgraph=True, backend="eager"):
    """Compiled vs eager on two calls; returns the counting backend."""
    reset()
    counter = CountingBackend(backend)
    compiled = compile_fn(fn, backend=counter, fullgraph=fullgraph)
    for call, scale in enumerate((None, 1.5), start=1):
        call_args = copy_inputs(args, scale)
        e_args, c_args = copy_inputs(call_args), copy_inputs(call_args)
        expected = fn(*e_args)
        got = compiled(*c_args)
        same(expected, got, f"out (call #{call})")
        same(list(e_args), list(c_args), f"inputs after call #{call}")
    if graphs is not None:
        assert counter.frame_count == graphs, \
            f"{counter.frame_count} graphs, expected {graphs}:\n" + "\n".join(str(g.graph) for g in counter.graphs)
    return counter


def torch_compile_graphs(fn, *args) -> int:
    counter = CountingBackend("eager")
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend=counter)(*copy_inputs(args))
    finally:
        torch._dynamo.reset()
    return counter.frame_count


def check_like_torch(fn, *args, graphs=1):
    """``check`` plus: torch.compile captures as many graphs."""
    check(fn, *args, graphs=graphs)
    assert torch_compile_graphs(fn, *args) == graphs


def x(*shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(7)
    return (torch.rand(shape, generator=g) + 0.5).to(dtype)


def arr(*shape, dtype=np.float64):
    return np.random.default_rng(3).uniform(0.5, 1.5, size=shape).astype(dtype)


# --- Tensor.numpy(), torch.from_numpy, ndarrays returned ---------------------------------

def tensor_roundtrip(t):
    a = t.numpy()
    b = np.sin(a) * 2
    return torch.from_numpy(b) + 1, b


def test_tensor_numpy_and_from_numpy():
    check_like_torch(tensor_roundtrip, x(3, 4))


def numpy_returned(t):
    return t.numpy() * 2, (t * 2).numpy()


def test_ndarrays_come_back_as_numpy_arrays():
    check_like_torch(numpy_returned, x(2, 3))


def numpy_write_through(t):
    a = t.numpy()
    a[0] = 7.0            # eager: t shares a's memory
    return t + 1


def test_writes_through_numpy_view_reach_the_tensor():
    check(numpy_write_through, x(3))


def numpy_force(t):
    return (t * 2).numpy(force=True).sum(axis=0)


def test_numpy_force():
    check(numpy_force, x(2, 3))


# --- np.* functions --------------------------------------------------------------------

def reductions(t):
    a = t.numpy()
    return np.mean(a), np.sum(a, axis=1), a.max(), np.std(a, axis=0), a.argmax(), np.prod(a)


def test_reductions_return_numpy_scalars():
    check_like_torch(reductions, x(3, 4))


def int_reductions(t):
    a = t.numpy()
    return np.sum(a), a.mean(), np.cumsum(a)


def int32_reductions(t):
    a = t.numpy()
    return np.sum(a), a.mean(), a.max(axis=0)


def test_integer_dtypes_follow_numpy():
    check(int_reductions, torch.arange(12).reshape(3, 4))
    check(int32_reductions, torch.arange(12, dtype=torch.int32).reshape(3, 4))


def creation(t):
    a = np.zeros((2, 3)) + np.ones(3) * 2 + np.arange(3)
    b = np.linspace(0.0, 1.0, 5)
    c = np.full((2, 2), 3, dtype=np.float32)
    return a, b, c, np.eye(3), torch.from_numpy(a) + t


def test_creation_defaults_to_numpy_dtypes():
    check_like_torch(creation, x(2, 3, dtype=torch.float64))


def meshgrid(t):
    a = t.numpy()
    xx, yy = np.meshgrid(a, np.arange(4.0))
    return xx + yy, np.stack([xx, yy]), np.concatenate([a, a])


def test_meshgrid_stack_concatenate():
    check_like_torch(meshgrid, x(3))


def fft(t):
    a = t.numpy()
    f = np.fft.fft(a)
    return f, np.abs(f), np.fft.ifft(f).real, np.fft.rfft(a)


def test_fft():
    check_like_torch(fft, x(8, dtype=torch.float64))


def linalg(t):
    a = t.numpy() + 3 * np.eye(3)
    return np.linalg.inv(a), np.linalg.norm(a), np.linalg.det(a), np.linalg.solve(a, np.ones(3)), a @ a.T


def test_linalg():
    check_like_torch(linalg, x(3, 3, dtype=torch.float64))


def ufuncs_and_where(t):
    a = t.numpy()
    return np.where(a > 1.0, a, -a), np.clip(a, 0.7, 1.2), np.exp(a), np.maximum(a, 1.0), np.sqrt(a)


def test_ufuncs_and_where():
    check_like_torch(ufuncs_and_where, x(4, 2))


# --- finfo/iinfo, dtypes -------------------------------------------------------------------

def finfo_eps(t):
    a = t.numpy()
    eps = np.finfo(a.dtype).eps
    return a + eps, np.iinfo(np.int32).max, a.dtype == np.float32, a.astype(np.float64)


def test_finfo_iinfo_and_dtypes():
    check(finfo_eps, x(3))


def dtype_arguments(t):
    a = t.numpy()
    return (np.zeros(3, dtype=np.int32), np.ones(2, dtype="float32"), a.astype(np.int64),
            np.sum(a, dtype=np.float64), np.float32(2.5) * a, np.issubdtype(a.dtype, np.floating))


def test_dtype_arguments_and_calls():
    check(dtype_arguments, x(3))


def true_divide_of_ints(t):
    a = t.numpy()
    return a / 2     # NumPy: float64; torch._numpy would compute float32


def cumsum_int32(t):
    return np.cumsum(t.numpy())   # NumPy: int64 (platform int); torch._numpy: int32


@pytest.mark.parametrize("fn, found, expected", [(true_divide_of_ints, "float32", "float64"),
                                                 (cumsum_int32, "int32", "int64")])
def test_dtype_that_torch_numpy_gets_wrong_breaks(fn, found, expected):
    t = torch.arange(6, dtype=torch.int32 if fn is cumsum_int32 else torch.int64)
    check(fn, t, graphs=None, fullgraph=False)
    import armature
    reset()
    with pytest.raises(armature.Unsupported, match=f"torch._numpy computes dtype {found} where NumPy computes "
                                                   f"{expected}"):
        compile_fn(fn, backend="eager", fullgraph=True)(t)


# --- ndarray methods, attributes, operators ------------------------------------------------

def methods_and_attributes(t):
    a = t.numpy()
    b = a.reshape(2, 6).T.copy()
    return (b.shape, b.ndim, b.size, b.dtype, b.itemsize, b.nbytes, a.transpose(1, 0), a.flatten(),
            a.squeeze(), b.sum(axis=0), len(a), a.real)


def test_ndarray_methods_and_attributes():
    check(methods_and_attributes, x(3, 4))


def operators(t):
    a = t.numpy()
    b = a.copy()
    b += 1
    b *= a
    c = -a + (a ** 2) - a / 3 @ np.ones((4, 4)) % 2
    return b, c, a < 1.0, a == a, ~(a > 1.0), abs(a) if False else a[1:, ::2], a[0, 1], a[None, ..., 0]


def test_ndarray_operators_and_indexing():
    check(operators, x(3, 4))


def setitem(a, b):
    a[0] = 5.0
    a[1:, 1] += b[:2]
    b.fill(2.0)
    return a.sum()


def test_in_place_writes_reach_the_callers_arrays():
    check_like_torch(setitem, arr(3, 3), arr(3))


def iterate(t):
    out = []
    for row in t.numpy():
        out.append(row.sum())
    return out


def test_iterating_over_an_array():
    check(iterate, x(3, 2))


# --- ndarrays passed in ---------------------------------------------------------------------

def ndarray_inputs(a, b):
    return a * b + np.mean(a), torch.from_numpy(a) * 2


def test_ndarray_inputs():
    check_like_torch(ndarray_inputs, arr(2, 3), arr(3))


def returns_input(a):
    a += 1
    return a


def test_returning_an_input_returns_the_same_object():
    import armature
    c = armature.compile(returns_input, backend="eager", fullgraph=True)
    a = arr(4)
    before = a.copy()
    assert c(a) is a
    np.testing.assert_allclose(a, before + 1)


def guarded(a):
    return a * 2


def test_ndarray_guards_recompile_on_dtype_and_shape():
    reset()
    counter = CountingBackend("eager")
    c = compile_fn(guarded, backend=counter, fullgraph=True)
    for a in (arr(3), arr(3), arr(4), arr(3, dtype=np.float32), arr(3, dtype=np.float32)):
        same(guarded(a.copy()), c(a.copy()))
    assert counter.frame_count == 3


def test_same_memory_inputs_do_not_reuse_the_disjoint_entry():
    def add_into(a, b):
        a += b
        return a
    reset()
    c = compile_fn(add_into, backend="eager")
    a, b = arr(4), arr(4)
    same(add_into(a.copy(), b.copy()), c(a.copy(), b.copy()))
    base = arr(5)
    e = base.copy()
    expected = add_into(e[1:], e[:4])
    got = c(base[1:], base[:4])
    same(expected, got)
    same(e, base)


def numpy_scalar_input(a, s):
    return a * s


def test_numpy_scalar_inputs_are_graph_inputs():
    reset()
    counter = CountingBackend("eager")
    c = compile_fn(numpy_scalar_input, backend=counter, fullgraph=True)
    for s in (np.float32(2.0), np.float32(3.0)):
        same(numpy_scalar_input(arr(3, dtype=np.float32), s), c(arr(3, dtype=np.float32), s))
    assert counter.frame_count == 1


# --- across a graph break ----------------------------------------------------------------------

def break_in_middle(t):
    a = t.numpy() * 2
    print("", end="")
    return np.sum(a) + a


def test_ndarrays_cross_a_graph_break():
    check(break_in_middle, x(3), graphs=2, fullgraph=False)


# --- unsupported: a clean break ------------------------------------------------------------------

def random_draw(t):
    return t.numpy() + np.random.rand(3)


def no_counterpart(t):
    return np.interp(t.numpy(), np.arange(3.0), np.ones(3))


def no_counterpart2(t):
    return np.polyfit(t.numpy(), t.numpy(), 1)


def data_dependent(t):
    if t.numpy().sum() > 0:
        return t + 1
    return t - 1


def item_of(t):
    return t.numpy().sum().item() + 1


def tensor_into_numpy(t):
    return np.concatenate([t, t])


@pytest.mark.parametrize("fn, reason", [
    (random_draw, "numpy.random.rand() inside a compiled function"),
    (no_counterpart, "numpy.interp() has no counterpart in torch._numpy"),
    (no_counterpart2, "numpy.polyfit() has no counterpart in torch._numpy"),
    (data_dependent, "truth value of a NumPy array depends on its data"),
    (item_of, "ndarray.item() reads a value"),
    (tensor_into_numpy, "a torch.Tensor passed to NumPy code"),
])
def test_unsupported_numpy_raises_with_fullgraph_and_runs_without(fn, reason):
    import armature
    reset()
    with pytest.raises(armature.Unsupported, match=re.escape(reason)) as info:
        compile_fn(fn, backend="eager", fullgraph=True)(x(3))
    assert "test_numpy.py" in str(info.value)
    reset()
    if fn is not random_draw:
        check(fn, x(3), graphs=None, fullgraph=False)
    else:
        np.random.seed(0)
        e = fn(x(3))
        np.random.seed(0)
        got = compile_fn(fn, backend="eager")(x(3))
        same(e, got)


def more_functions(t):
    a = t.numpy()
    return (np.einsum("ij,jk->ik", a, a.T), np.sort(a, axis=1), np.argsort(a[0]), np.trace(a), np.tril(a),
            np.outer(a[0], a[1]), np.tensordot(a, a.T, 1),
            np.diag(a), np.kron(a[:1], a[:1]), np.nan_to_num(a))


def test_more_functions():
    check(more_functions, x(3, 3, dtype=torch.float64))


def median(t):
    return np.median(t.numpy())   # torch._numpy: shape (1,); NumPy: a scalar


def test_shape_that_torch_numpy_gets_wrong_breaks():
    check(median, x(3, 3), graphs=None, fullgraph=False)
    import armature
    reset()
    with pytest.raises(armature.Unsupported, match=re.escape("torch._numpy computes shape (1,) where NumPy "
                                                             "computes ()")):
        compile_fn(median, backend="eager", fullgraph=True)(x(3, 3))


def unique(t):
    return np.unique(t.numpy())


def test_data_dependent_shapes_with_fullgraph():
    check(unique, torch.tensor([3, 1, 3, 2]))


def test_inductor_computes_numpy_code():
    check(linalg, x(3, 3, dtype=torch.float64), backend="inductor")


def asarray_of_tensor(t):
    a = np.asarray(t)      # Tensor.__array__: t.numpy()
    b = np.array(t)        # a copy
    a[0] = 3.0
    return a.sum() + b, t


def test_asarray_of_a_tensor_is_its_numpy_view():
    check_like_torch(asarray_of_tensor, x(3))


def numpy_on_constants(t):
    n = np.sum([1, 2, 3])          # np.int64, folded: NumPy on constants only
    return t * int(n) + float(np.sqrt(2.0)), n, np.pi * np.float32(2)


def test_numpy_on_constants_folds():
    check(numpy_on_constants, x(3))      # one graph (torch.compile: two, it breaks at int(n))
    assert torch_compile_graphs(numpy_on_constants, x(3)) == 2
