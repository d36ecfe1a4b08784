"""Differential-testing harness for armature.

The central helper is :func:`assert_same`: it compiles a function once and
calls it twice -- first on a copy of the given inputs, then (exercising the
cached path) on copies whose float values are perturbed -- each time against
an eager run on an independent deep copy of the same inputs, and checks that

* return values agree (tensors: values, dtype, shape, device, requires_grad;
  containers: type, length, keys; namedtuples: type; python scalars: type
  and value),
* mutated inputs agree afterwards (tensors mutated in place, including via
  views),
* output identity / aliasing agrees (an output that *is* an input in eager is
  that same input when compiled; two outputs that are the same object in
  eager are the same object compiled; an output sharing storage with an
  input in eager does so compiled),
* output strides agree (eager backend only),
* raised exceptions agree (when eager raises),
* optionally, the number of graphs captured and the number of ops in them,
* optionally, gradients after ``loss.backward()``.

Set ``ARMATURE_TEST_IMPL=torch`` to run the whole corpus with
``torch.compile`` standing in for ``armature.compile``; this validates the
corpus itself independently of armature.
"""

from __future__ import annotations

import copy
import os
from typing import Any, Callable, NamedTuple

import pytest
import torch

IMPL = os.environ.get("ARMATURE_TEST_IMPL", "armature").strip().lower()
if IMPL not in ("armature", "torch"):
    raise RuntimeError(f"ARMATURE_TEST_IMPL must be 'armature' or 'torch', got {IMPL!r}")
USING_TORCH = IMPL == "torch"

#: Use as a decorator/mark on tests that exercise armature-specific API
#: (cache_entries, guards, armature.Unsupported, ...).
armature_only = pytest.mark.skipif(
    USING_TORCH, reason="armature-specific API; not applicable to torch.compile"
)

_OP_KINDS = ("call_function", "call_method", "call_module")


# --------------------------------------------------------------------------
# implementation switch
# --------------------------------------------------------------------------


def compile_fn(fn=None, **kwargs):
    """``armature.compile`` or, under ARMATURE_TEST_IMPL=torch, ``torch.compile``."""
    if USING_TORCH:
        return torch.compile(fn, **kwargs) if fn is not None else torch.compile(**kwargs)
    import armature

    return armature.compile(fn, **kwargs) if fn is not None else armature.compile(**kwargs)


def reset():
    if USING_TORCH:
        torch._dynamo.reset()
    else:
        import armature

        armature.reset()


def lookup_backend(name: str) -> Callable:
    """Resolve a backend name with the implementation under test."""
    if USING_TORCH:
        from torch._dynamo.backends.registry import lookup_backend as lb
    else:
        from armature.backends import lookup_backend as lb
    return lb(name)


class CountingBackend:
    """Backend that records every captured graph and delegates to ``inner``.

    ``inner`` is a backend name ("eager", "aot_eager", "inductor") or a
    callable backend.  "eager" is handled directly (``gm.forward``); other
    names are resolved with the implementation's ``lookup_backend``.
    """

    def __init__(self, inner: Any = "eager"):
        self.inner = inner
        self.graphs: list[torch.fx.GraphModule] = []
        self.example_inputs: list[list] = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        self.example_inputs.append(list(example_inputs))
        if self.inner == "eager":
            return gm.forward
        real = lookup_backend(self.inner) if isinstance(self.inner, str) else self.inner
        return real(gm, example_inputs)

    @property
    def frame_count(self) -> int:
        return len(self.graphs)

    @property
    def op_count(self) -> int:
        return sum(count_ops(gm) for gm in self.graphs)

    def op_targets(self) -> list[str]:
        return [str(n.target) for gm in self.graphs for n in gm.graph.nodes if n.op in _OP_KINDS]


def count_ops(gm) -> int:
    return sum(1 for n in gm.graph.nodes if n.op in _OP_KINDS)


# --------------------------------------------------------------------------
# deterministic inputs
# --------------------------------------------------------------------------

_GEN = torch.Generator().manual_seed(1234)


def t(*shape, dtype=torch.float32, requires_grad=False):
    """Deterministic random float tensor (standard normal)."""
    x = torch.randn(shape, generator=_GEN).to(dtype)
    return x.requires_grad_(requires_grad) if requires_grad else x


def tpos(*shape, dtype=torch.float32):
    """Deterministic strictly positive float tensor in [0.5, 1.5)."""
    return (torch.rand(shape, generator=_GEN) + 0.5).to(dtype)


def ti(*shape, low=0, high=10, dtype=torch.int64):
    """Deterministic integer tensor in [low, high)."""
    return torch.randint(low, high, shape, generator=_GEN, dtype=dtype)


def tb(*shape):
    """Deterministic bool tensor."""
    return torch.rand(shape, generator=_GEN) > 0.5


# --------------------------------------------------------------------------
# copying
# --------------------------------------------------------------------------


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def deep_copy(obj, memo=None, tensor_fn=None):
    """Copy inputs: tensors cloned (keeping requires_grad / leafness and
    strides), containers rebuilt recursively, modules deep-copied; aliasing
    between inputs (the same object passed twice) is preserved.
    ``tensor_fn`` may modify each cloned tensor in place (see perturb)."""
    if memo is None:
        memo = {}
    key = id(obj)
    if key in memo:
        return memo[key]
    if isinstance(obj, torch.nn.Module):
        out = copy.deepcopy(obj)
    elif isinstance(obj, torch.Tensor):
        out = obj.detach().clone()
        if tensor_fn is not None:
            tensor_fn(out)
        if obj.requires_grad:
            out.requires_grad_(True)
    elif isinstance(obj, list):
        out = [deep_copy(v, memo, tensor_fn) for v in obj]
    elif _is_namedtuple(obj):
        out = type(obj)(*[deep_copy(v, memo, tensor_fn) for v in obj])
    elif isinstance(obj, tuple) and type(obj) is tuple:
        out = tuple(deep_copy(v, memo, tensor_fn) for v in obj)
    elif isinstance(obj, dict):
        out = type(obj)()
        for k, v in obj.items():
            out[k] = deep_copy(v, memo, tensor_fn)
    else:
        return obj  # immutable / opaque (numbers, str, None, dtype, slice, functions, Size)
    memo[key] = out
    return out


def perturb(obj, seed=0):
    """Copy like deep_copy, but scale every floating-point tensor elementwise
    by a factor in [0.75, 1.25) (signs, zeros and ranges are preserved;
    integer and bool tensors are kept).  Used for the second compiled call so
    that a graph which baked input *values* in as constants is caught."""
    gen = torch.Generator().manual_seed(seed)

    def scale(x):
        if x.is_floating_point() or x.is_complex():
            factor = torch.rand(x.shape, generator=gen, dtype=torch.float64) * 0.5 + 0.75
            x.mul_(factor.to(x.dtype))

    return deep_copy(obj, tensor_fn=scale)


def iter_tensors(obj):
    """Yield tensors found in (nested) containers / namedtuples / modules."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, torch.nn.Module):
        yield from obj.parameters()
        yield from obj.buffers()
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from iter_tensors(v)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from iter_tensors(v)


# --------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------


def assert_equal(expected, actual, path="out", rtol=None, atol=None):
    """Recursive structural equality with tensor closeness."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{path}: expected Tensor, got {type(actual).__name__}"
        assert actual.shape == expected.shape, f"{path}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
        assert actual.dtype == expected.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.device == expected.device, f"{path}: device {actual.device} != {expected.device}"
        assert actual.requires_grad == expected.requires_grad, (
            f"{path}: requires_grad {actual.requires_grad} != {expected.requires_grad}"
        )
        torch.testing.assert_close(
            actual.detach(), expected.detach(), rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{path}: {m}"
        )
        return
    if isinstance(expected, torch.nn.Module):
        assert isinstance(actual, torch.nn.Module), f"{path}: expected Module, got {type(actual).__name__}"
        es, as_ = expected.state_dict(), actual.state_dict()
        assert list(es) == list(as_), f"{path}: state_dict keys differ"
        for k in es:
            assert_equal(es[k], as_[k], f"{path}.{k}", rtol, atol)
        return
    if isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected), (
            f"{path}: type {type(actual).__qualname__} != {type(expected).__qualname__}"
        )
        assert len(actual) == len(expected), f"{path}: len {len(actual)} != {len(expected)}"
        if isinstance(expected, torch.Size):
            assert tuple(actual) == tuple(expected), f"{path}: {actual} != {expected}"
            return
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_equal(e, a, f"{path}[{i}]", rtol, atol)
        return
    if isinstance(expected, dict):
        assert type(actual) is type(expected), (
            f"{path}: type {type(actual).__qualname__} != {type(expected).__qualname__}"
        )
        assert list(actual.keys()) == list(expected.keys()), (
            f"{path}: keys {list(actual.keys())} != {list(expected.keys())}"
        )
        for k in expected:
            assert_equal(expected[k], actual[k], f"{path}[{k!r}]", rtol, atol)
        return
    if isinstance(expected, float) and isinstance(actual, float):
        if expected != expected and actual != actual:  # both nan
            return
    # python scalars, str, None, dtype, device, slices ...: type and value
    assert type(actual) is type(expected), (
        f"{path}: type {type(actual).__name__} != {type(expected).__name__} ({actual!r} vs {expected!r})"
    )
    assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def _flatten_with_paths(obj, path="out"):
    if isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        for i, v in enumerate(obj):
            yield from _flatten_with_paths(v, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _flatten_with_paths(v, f"{path}[{k!r}]")


def _assert_same_strides(expected, actual, label):
    for (p, e), (_, a) in zip(_flatten_with_paths(expected), _flatten_with_paths(actual)):
        es = [st for st, sz in zip(e.stride(), e.shape) if sz > 1]
        as_ = [st for st, sz in zip(a.stride(), a.shape) if sz > 1]
        assert es == as_, f"{label}: {p}: strides {a.stride()} != eager {e.stride()} (shape {tuple(e.shape)})"


def _storage_key(tensor):
    try:
        return tensor.untyped_storage().data_ptr()
    except Exception:  # pragma: no cover - e.g. tensors without storage
        return None


def _alias_signature(out, inputs):
    """Describe, for every tensor in the output, which input (if any) it *is*,
    which earlier output it *is*, and which input it shares storage with."""
    in_tensors = list(_flatten_with_paths(list(inputs), "arg"))
    sig = []
    out_tensors = list(_flatten_with_paths(out))
    for i, (p, o) in enumerate(out_tensors):
        is_input = next((ip for ip, it in in_tensors if it is o), None)
        is_output = next((op for op, ot in out_tensors[:i] if ot is o), None)
        sk = _storage_key(o)
        shares = sorted(
            {ip for ip, it in in_tensors if sk is not None and o.numel() > 0 and _storage_key(it) == sk}
        )
        sig.append((p, is_input, is_output, tuple(shares)))
    return sig


# --------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------


class _Outcome(NamedTuple):
    result: Any
    exc: BaseException | None
    args: tuple
    kwargs: dict
    grads: Any


def _run(fn, args, kwargs, check_grad):
    try:
        result = fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - we compare exceptions
        return _Outcome(None, e, args, kwargs, None)
    grads = None
    if check_grad:
        grads = _backward_and_collect(fn, result, args, kwargs)
    return _Outcome(result, None, args, kwargs, grads)


def _backward_and_collect(fn, result, args, kwargs):
    outs = [o for o in iter_tensors(result) if o.requires_grad and o.is_floating_point()]
    assert outs, "check_grad=True but no output requires grad"
    loss = sum(o.sum() for o in outs)
    loss.backward()
    leaves = [x for x in iter_tensors((list(args), kwargs)) if x.requires_grad and x.is_leaf]
    if isinstance(fn, torch.nn.Module):
        leaves += [p for p in fn.parameters() if p.requires_grad]
    return [None if x.grad is None else x.grad.detach().clone() for x in leaves]


def _check_exception(eager_exc, comp_exc, exc_match, label):
    assert comp_exc is not None, f"{label}: eager raised {eager_exc!r} but compiled did not raise"
    if exc_match == "exact":
        assert type(comp_exc) is type(eager_exc), f"{label}: raised {type(comp_exc)!r}, eager {type(eager_exc)!r}"
        assert str(comp_exc) == str(eager_exc), f"{label}: message {str(comp_exc)!r} != {str(eager_exc)!r}"
    else:
        assert isinstance(comp_exc, type(eager_exc)), (
            f"{label}: raised {type(comp_exc).__name__} ({comp_exc}), eager raised {type(eager_exc).__name__}"
        )
        if exc_match == "contains":
            assert str(eager_exc) in str(comp_exc), (
                f"{label}: eager message {str(eager_exc)!r} not found in {str(comp_exc)!r}"
            )


def assert_same(
    fn,
    *args,
    backend="eager",
    fullgraph=True,
    graphs=None,
    ops=None,
    check_grad=False,
    check_aliasing=True,
    check_strides=None,
    exc_match="contains",
    rtol=None,
    atol=None,
    **kwargs,
):
    """Run ``fn`` eagerly and compiled on independent copies of the inputs
    and compare everything observable.

    Harness options (all other keyword arguments are passed to ``fn``):

    backend     -- "eager", "aot_eager", "inductor" or a callable backend.
    fullgraph   -- passed to compile (default True).
    graphs      -- expected number of graphs captured over two calls
                   (the second call must hit the cache).
    ops         -- expected total number of op nodes (call_function /
                   call_method / call_module) over all captured graphs.
    check_grad  -- sum all float outputs requiring grad, backward, and compare
                   the .grad of every leaf input (and module parameters).
    check_aliasing -- compare output identity / storage-sharing structure.
    check_strides -- compare output strides (dims of size > 1); default: only
                   with the "eager" backend (other backends may legitimately
                   pick different layouts).
    exc_match   -- when eager raises: "exact" (same type, same message),
                   "contains" (isinstance of eager's type and eager's message
                   is a substring) or "type" (isinstance only).
    rtol, atol  -- tolerances for torch.testing.assert_close.

    Returns the eager result of the first call.
    """
    if backend == "inductor" and rtol is None and atol is None:
        rtol, atol = 1e-4, 1e-5

    counter = None
    compile_backend = backend
    if graphs is not None or ops is not None:
        counter = CountingBackend(backend)
        compile_backend = counter

    c_target = deep_copy(fn) if isinstance(fn, torch.nn.Module) else fn
    compiled = compile_fn(c_target, backend=compile_backend, fullgraph=fullgraph)
    if check_strides is None:
        check_strides = backend == "eager" or (isinstance(backend, CountingBackend) and backend.inner == "eager")

    # Call 1 uses the given inputs; call 2 (which must hit the cache) uses
    # perturbed values of the same shapes/dtypes.  Each call is checked
    # against an eager run on an independent copy of the same inputs.
    first = expected = None
    for call, (call_args, call_kwargs) in enumerate([(args, kwargs), perturb((args, kwargs), seed=1)], start=1):
        label = f"compiled call #{call}"
        e_fn = deep_copy(fn) if isinstance(fn, torch.nn.Module) else fn
        e_args, e_kwargs = deep_copy((call_args, call_kwargs))
        expected = _run(e_fn, e_args, e_kwargs, check_grad)
        if first is None:
            first = expected

        if isinstance(c_target, torch.nn.Module):
            # fresh module state for each call (grads / mutated buffers)
            c_target.load_state_dict(deep_copy(fn).state_dict())
            for p in c_target.parameters():
                p.grad = None
        c_args, c_kwargs = deep_copy((call_args, call_kwargs))
        got = _run(compiled, c_args, c_kwargs, False)
        if got.exc is None and check_grad:
            grads = _backward_and_collect(c_target, got.result, c_args, c_kwargs)
            got = got._replace(grads=grads)

        if expected.exc is not None:
            _check_exception(expected.exc, got.exc, exc_match, label)
            continue
        if got.exc is not None:
            raise AssertionError(f"{label}: raised {type(got.exc).__name__} but eager did not") from got.exc

        assert_equal(expected.result, got.result, f"out (call #{call})", rtol, atol)
        assert_equal(list(e_args), list(c_args), f"mutated args (call #{call})", rtol, atol)
        assert_equal(e_kwargs, c_kwargs, f"mutated kwargs (call #{call})", rtol, atol)
        if isinstance(fn, torch.nn.Module):
            assert_equal(e_fn, c_target, f"module state (call #{call})", rtol, atol)
        if check_aliasing:
            e_sig = _alias_signature(expected.result, (e_args, e_kwargs))
            c_sig = _alias_signature(got.result, (c_args, c_kwargs))
            assert e_sig == c_sig, f"{label}: aliasing differs\n eager:    {e_sig}\n compiled: {c_sig}"
        if check_strides:
            _assert_same_strides(expected.result, got.result, label)
        if check_grad:
            assert_equal(expected.grads, got.grads, f"grads (call #{call})", rtol, atol)

    if counter is not None:
        if graphs is not None:
            assert counter.frame_count == graphs, (
                f"captured {counter.frame_count} graphs, expected {graphs}: "
                + "\n".join(str(gm.graph) for gm in counter.graphs)
            )
        if ops is not None:
            assert counter.op_count == ops, (
                f"captured {counter.op_count} ops, expected {ops}: {counter.op_targets()}"
            )
    return first.result


def assert_same_calls(fn, calls, backend="eager", fullgraph=True, graphs=None, rtol=None, atol=None):
    """Compile ``fn`` once and call it with each entry of ``calls`` in turn
    (an args tuple, or ``(args, kwargs)`` with a dict second element),
    comparing each result and the mutated inputs with eager.  Exercises
    guards / recompilation: the inputs may differ in shape, dtype, constant
    values, container lengths, None-ness ...  ``graphs`` is the expected
    total number of graphs captured over all calls."""
    counter = CountingBackend(backend) if graphs is not None else None
    compiled = compile_fn(fn, backend=counter or backend, fullgraph=fullgraph)
    for i, call in enumerate(calls):
        if len(call) == 2 and isinstance(call[0], tuple) and isinstance(call[1], dict):
            args, kwargs = call
        else:
            args, kwargs = tuple(call), {}
        e_args, e_kwargs = deep_copy((args, kwargs))
        c_args, c_kwargs = deep_copy((args, kwargs))
        expected = fn(*e_args, **e_kwargs)
        got = compiled(*c_args, **c_kwargs)
        assert_equal(expected, got, f"out (call #{i + 1})", rtol, atol)
        assert_equal([e_args, e_kwargs], [c_args, c_kwargs], f"mutated inputs (call #{i + 1})", rtol, atol)
    if counter is not None:
        assert counter.frame_count == graphs, f"captured {counter.frame_count} graphs, expected {graphs}"


def assert_raises_same(fn, *args, exc_match="exact", fullgraph=False, **kwargs):
    """Eager must raise; compiled must raise the same (see ``assert_same``)."""
    try:
        fn(*deep_copy(args), **deep_copy(kwargs))
    except Exception:  # noqa: BLE001
        pass
    else:
        raise AssertionError("eager did not raise; use assert_same")
    assert_same(fn, *args, exc_match=exc_match, fullgraph=fullgraph, **kwargs)


# --------------------------------------------------------------------------
# torch.compile oracle
# --------------------------------------------------------------------------


class OracleStats(NamedTuple):
    graphs: int
    ops: int
    op_targets: list
    result: Any


def compiled_with_oracle(fn, *args, fullgraph=False, **kwargs) -> OracleStats:
    """Run ``torch.compile`` (torch's own, regardless of ARMATURE_TEST_IMPL)
    with a counting backend and report its graph and op counts."""
    counter = CountingBackend("eager")
    torch._dynamo.reset()
    try:
        target = deep_copy(fn) if isinstance(fn, torch.nn.Module) else fn
        c_args, c_kwargs = deep_copy((args, kwargs))
        result = torch.compile(target, backend=counter, fullgraph=fullgraph)(*c_args, **c_kwargs)
    finally:
        torch._dynamo.reset()
    return OracleStats(counter.frame_count, counter.op_count, counter.op_targets(), result)


def compiled_stats(fn, *args, backend="eager", fullgraph=True, **kwargs) -> CountingBackend:
    """Compile ``fn`` with the implementation under test and a counting
    backend, call it once, and return the counter."""
    counter = CountingBackend(backend)
    target = deep_copy(fn) if isinstance(fn, torch.nn.Module) else fn
    c_args, c_kwargs = deep_copy((args, kwargs))
    compile_fn(target, backend=counter, fullgraph=fullgraph)(*c_args, **c_kwargs)
    return counter


def assert_matches_oracle(fn, *args, ops="eq", **kwargs):
    """Graph count must equal torch.compile's; op count compared with
    ``ops`` in ("eq", "le", None)."""
    oracle = compiled_with_oracle(fn, *args, **kwargs)
    reset()
    ours = compiled_stats(fn, *args, **kwargs)
    assert ours.frame_count == oracle.graphs, f"graphs: {ours.frame_count} vs torch.compile {oracle.graphs}"
    if ops == "eq":
        assert ours.op_count == oracle.ops, f"ops: {ours.op_targets()} vs torch.compile {oracle.op_targets}"
    elif ops == "le":
        assert ours.op_count <= oracle.ops, f"ops: {ours.op_targets()} vs torch.compile {oracle.op_targets}"


# --------------------------------------------------------------------------
# case tables
# --------------------------------------------------------------------------


def case(fn, *args, id=None, marks=(), **opts):
    """A parametrize entry ``(fn, args, opts)`` named after the function.

    ``opts`` holds harness options (graphs=, ops=, ...) and/or keyword
    arguments for ``fn``; they are all passed to ``assert_same``.
    """
    return pytest.param(fn, args, opts, id=id or fn.__name__, marks=marks)


CASE_ARGS = "fn,args,opts"


def dynamo_graph_count(fn, *args) -> int:
    """torch.compile's graph count for ``fn(*args)`` (the oracle), from a
    clean torch._dynamo state, leaving none behind."""
    torch._dynamo.reset()
    try:
        return torch._dynamo.explain(fn)(*deep_copy(args)).graph_count
    finally:
        torch._dynamo.reset()

