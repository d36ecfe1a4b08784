"""Tensors passed where an op takes a number (issue #36, item 3).

``torch._foreach_lerp_(xs, ys, torch.tensor(0.5))``, ``_foreach_add_(xs,
ys, alpha=t)``, ``torch.add(x, y, alpha=t)``...: torch reads such a tensor
with ``.item()`` before the op runs.  Traced with capture_scalar_outputs
(or fullgraph=True) that read made a symbol no output bound, an internal
error; it is now an explicit ``item()`` node (values/tensors/
number_arguments.py), and without capture a graph break as ``t.item()``
is.  ``_foreach_lerp(_)`` with a 0-d weight and ``_foreach_pow`` of a 0-d
base keep the tensor (their tensor-list overloads, where that computes
eager's bits), so an optimizer's lerp with tensor betas is one graph, as
under torch.compile.  Compared with eager: results, the lists mutated in
place, gradients; graph counts with torch.compile's.
"""
from __future__ import annotations

import pytest
import torch

import armature
from helpers import USING_TORCH, CountingBackend, assert_equal, deep_copy, dynamo_graph_count

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def lerp_(xs, ys, s):
    return torch._foreach_lerp_(xs, ys, s)


def lerp(xs, ys, s):
    return torch._foreach_lerp(xs, ys, s)


def lerp_weight_keyword(xs, ys, s):
    torch._foreach_lerp_(xs, ys, weight=s)
    return xs


def lerp_one_minus(xs, ys, s):
    torch._foreach_lerp_(xs, ys, 1 - s)     # an optimizer's tensor beta
    return [x * 2 for x in xs]


def mul_(xs, ys, s):
    torch._foreach_mul_(xs, s)
    return xs


def div_(xs, ys, s):
    torch._foreach_div_(xs, s)
    return xs


def add_(xs, ys, s):
    torch._foreach_add_(xs, s)
    return xs


def add_alpha(xs, ys, s):
    torch._foreach_add_(xs, ys, alpha=s)
    return xs


def add_same_tensor_twice(xs, ys, s):
    torch._foreach_add_(xs, s, alpha=s)
    return xs


def sub_(xs, ys, s):
    torch._foreach_sub_(xs, s)
    return xs


def sub_alpha(xs, ys, s):
    torch._foreach_sub_(xs, ys, alpha=s)
    return xs


def addcmul_value(xs, ys, s):
    torch._foreach_addcmul_(xs, ys, ys, value=s)
    return xs


def addcdiv_value(xs, ys, s):
    torch._foreach_addcdiv_(xs, ys, ys, value=s)
    return xs


def maximum_(xs, ys, s):
    torch._foreach_maximum_(xs, s)
    return xs


def clamp_min_(xs, ys, s):
    torch._foreach_clamp_min_(xs, s)
    return xs


def pow_(xs, ys, s):
    torch._foreach_pow_(xs, s)
    return xs


def pow_of_a_tensor_base(xs, ys, s):
    return torch._foreach_pow(s, xs)


def mul(xs, ys, s):
    return torch._foreach_mul(xs, s)


def adam_like_step(xs, ys, s):
    """An Adam step's foreach ops with tensor betas (the gradients are ys)."""
    avgs = [torch.zeros_like(x) for x in xs]
    sqs = [torch.zeros_like(x) for x in xs]
    torch._foreach_lerp_(avgs, ys, 1 - s)
    torch._foreach_mul_(sqs, s)
    torch._foreach_addcmul_(sqs, ys, ys, value=1 - s)
    denom = torch._foreach_sqrt(sqs)
    torch._foreach_add_(denom, 1e-8)
    torch._foreach_addcdiv_(xs, avgs, denom, value=-0.01)
    return xs


FOREACH = [lerp_, lerp, lerp_weight_keyword, lerp_one_minus, mul_, div_, add_, add_alpha, add_same_tensor_twice,
           sub_, sub_alpha, addcmul_value, addcdiv_value, maximum_, clamp_min_, pow_, pow_of_a_tensor_base, mul,
           adam_like_step]

#: kept whole without capture_scalar_outputs (the rest read the tensor: a break)
ONE_GRAPH = {"lerp_", "lerp", "lerp_weight_keyword", "lerp_one_minus", "mul_", "div_", "pow_of_a_tensor_base",
             "mul"}


def _inputs(dtype=torch.float32, weight=0.25, weight_dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    xs = [torch.rand(2, 3, generator=g, dtype=torch.float64).to(dtype) + 1 for _ in range(2)]
    ys = [torch.rand(2, 3, generator=g, dtype=torch.float64).to(dtype) + 1 for _ in range(2)]
    return xs, ys, torch.tensor(weight, dtype=weight_dtype)


def _check(fn, inputs, **compile_kwargs):
    counter = CountingBackend(compile_kwargs.pop("backend", "eager"))
    compiled = armature.compile(fn, backend=counter, **compile_kwargs)
    for call in range(2):
        e_in, c_in = deep_copy(inputs), deep_copy(inputs)
        assert_equal(fn(*e_in), compiled(*c_in), f"call {call}", rtol=0, atol=0)
        assert_equal(e_in, c_in, f"inputs after call {call}", rtol=0, atol=0)
    return counter, compiled


@pytest.mark.parametrize("fn", FOREACH, ids=lambda f: f.__name__)
def test_foreach_with_a_tensor_number(fn):
    inputs = _inputs()
    counter, compiled = _check(fn, inputs)
    graphs = dynamo_graph_count(fn, *inputs)
    if fn.__name__ in ONE_GRAPH:
        assert counter.frame_count == 1 and not armature.cache_entries(compiled)[0].is_fallback
    assert counter.frame_count >= graphs          # (one graph where torch.compile has one)
    assert counter.frame_count <= max(graphs, 1)


_TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])

#: before torch 2.13 the fake kernel of _foreach_pow_(xs, number) branches on
#: the number (torch._refs.pow): with it read in the graph, a clean break
_KEPT = [pytest.param(f, marks=pytest.mark.skipif(_TORCH < (2, 13), reason="the fake kernel branches on the number"))
         if f is pow_ else f for f in FOREACH]


@pytest.mark.parametrize("fn", _KEPT, ids=lambda f: f.__name__)
@pytest.mark.parametrize("how", ["capture", "fullgraph"])
def test_foreach_with_a_tensor_number_kept_in_the_graph(fn, how):
    inputs = _inputs()
    if how == "capture":
        with armature.config.patch(capture_scalar_outputs=True):
            counter, _ = _check(fn, inputs)
    else:
        counter, _ = _check(fn, inputs, fullgraph=True)
    assert counter.frame_count == 1
    if fn.__name__ not in ONE_GRAPH:   # the number is read in the graph (an item() node)
        assert "item" in counter.op_targets()


@pytest.mark.aot_eager
@pytest.mark.parametrize("fn", [lerp_one_minus, add_alpha, addcmul_value, maximum_, pow_of_a_tensor_base,
                                adam_like_step], ids=lambda f: f.__name__)
def test_foreach_with_a_tensor_number_under_aot_eager(fn):
    _check(fn, _inputs(), backend="aot_eager", fullgraph=True)


@pytest.mark.parametrize("dtype,weight_dtype", [(torch.float64, torch.float32), (torch.float32, torch.float64),
                                                (torch.bfloat16, torch.float32), (torch.float16, torch.float32)],
                         ids=["f64-f32", "f32-f64", "bf16-f32", "f16-f32"])
@pytest.mark.parametrize("fn", [lerp_, lerp_one_minus, pow_of_a_tensor_base], ids=lambda f: f.__name__)
def test_foreach_tensor_weight_in_other_dtypes(fn, dtype, weight_dtype):
    # half precision reads the weight as a float: not kept as a tensor
    # (rounded to the tensors' dtype it could differ): a break, eager's bits
    inputs = _inputs(dtype, weight=0.1, weight_dtype=weight_dtype)
    counter, compiled = _check(fn, inputs)
    kept = dtype in (torch.float32, torch.float64)
    assert (armature.cache_entries(compiled)[0].graph_break is None) == kept
    if kept:
        assert counter.frame_count == 1


@pytest.mark.parametrize("weight", [0.0, 0.1, 0.5, 0.7, 1.0, -0.3, 1.5], ids=str)
def test_foreach_lerp_weights_either_side_of_one_half(weight):
    _check(lerp_, _inputs(weight=weight))


def _lerp_sum(xs, ys, s):
    xs = [x * 1 for x in xs]
    torch._foreach_lerp_(xs, ys, s)
    return sum(x.sum() for x in xs)


@pytest.mark.aot_eager
def test_foreach_lerp_gradients():
    xs, ys, s = _inputs()
    leaves = [t.requires_grad_() for t in [*xs, *ys]]
    e_leaves = [t.detach().clone().requires_grad_() for t in leaves]
    _lerp_sum(e_leaves[:2], e_leaves[2:], s).backward()
    armature.compile(_lerp_sum, backend="aot_eager", fullgraph=True)(leaves[:2], leaves[2:], s).backward()
    assert_equal([t.grad for t in e_leaves], [t.grad for t in leaves])


@pytest.mark.parametrize("fullgraph", [False, True], ids=["breaks", "fullgraph"])
def test_a_weight_that_requires_grad_is_refused_as_eager_refuses_it(fullgraph):
    # torch does not read a tensor that requires grad as a number
    xs, ys, s = _inputs()
    s.requires_grad_()
    with pytest.raises(TypeError) as eager:
        _lerp_sum(xs, ys, s)
    # (with fullgraph=True the op failing on fake tensors is an Unsupported naming eager's error)
    with pytest.raises(armature.Unsupported if fullgraph else TypeError) as compiled:
        armature.compile(_lerp_sum, backend="eager", fullgraph=fullgraph)(xs, ys, s)
    assert "_foreach_lerp_() received an invalid combination of arguments" in str(compiled.value)


# --- the same read by other ops -----------------------------------------------------

def add_with_alpha(x, y, s):
    return torch.add(x, y, alpha=s)


def method_add_with_alpha(x, y, s):
    return x.clone().add_(y, alpha=s)


def full_of(x, y, s):
    return torch.full((2,), s) + x[:2]


def addcmul_with_value(x, y, s):
    return torch.addcmul(x, y, y, value=s)


def leaky_relu_slope(x, y, s):
    return torch.nn.functional.leaky_relu(x - 0.5, s)


def celu_alpha(x, y, s):
    return torch.nn.functional.celu(x - 0.5, alpha=s)


OTHERS = [add_with_alpha, method_add_with_alpha, full_of, addcmul_with_value, leaky_relu_slope, celu_alpha]


@pytest.mark.parametrize("fn", OTHERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("how", ["default", "capture", "fullgraph"])
def test_other_ops_reading_a_tensor_as_a_number(fn, how):
    inputs = (torch.rand(3), torch.rand(3), torch.tensor(2.5))
    if how == "capture":
        with armature.config.patch(capture_scalar_outputs=True):
            counter, compiled = _check(fn, inputs)
    else:
        counter, compiled = _check(fn, inputs, fullgraph=how == "fullgraph")
    if how == "default":       # a graph break, as Tensor.item() is
        graph_break = armature.cache_entries(compiled)[0].graph_break
        assert graph_break is not None and "item()" in graph_break.reason
        assert counter.frame_count <= max(dynamo_graph_count(fn, *inputs), 1)
    else:
        assert counter.frame_count == 1 and "item" in counter.op_targets()


def test_an_integer_tensor_is_read_as_an_int():
    def fn(x, n):
        return torch.full((3,), n) * x

    with armature.config.patch(capture_scalar_outputs=True):
        _check(fn, (torch.rand(3), torch.tensor(4)))


# --- upstream Dynamo's variants (test_functions.py) -----------------------------------

def foreach_pow_broadcast(x, ys):
    return torch._foreach_pow(x, ys)


def method_addcmul_(x, y, z, s):
    return x.addcmul_(y, z, value=s)


@pytest.mark.parametrize("fullgraph", [False, True], ids=["breaks", "fullgraph"])
def test_foreach_pow_of_a_0d_base_over_0d_exponents(fullgraph):
    inputs = (torch.tensor(0.80), [torch.tensor(3.4), torch.tensor(7.8)])
    counter, _ = _check(foreach_pow_broadcast, inputs, fullgraph=fullgraph)
    assert counter.frame_count == 1 == dynamo_graph_count(foreach_pow_broadcast, *inputs)


def test_method_addcmul_with_a_tensor_value_in_one_graph():
    inputs = (torch.ones(2, 2), torch.ones(2, 2) + 1, torch.rand(2, 2), torch.tensor(0.3))
    counter, _ = _check(method_addcmul_, inputs, fullgraph=True)
    assert counter.frame_count == 1


def chunked(h, w):
    # Longformer's _chunk: a tensor made from static sizes where view takes a number
    return h.view(h.size(0), torch.div(h.size(1), (w * 2), rounding_mode="trunc"), w * 2, h.size(2)) * 2


def filled_from_literals(x):
    return torch.full((2,), torch.tensor(3) + 1) + x, x.add(x, alpha=torch.tensor(2) * 3)


def filled_from_input(x):
    return torch.full((2,), x.sum().round().long()) + x


@pytest.mark.parametrize("fn,args", [(chunked, (torch.randn(2, 64, 8), 8)), (filled_from_literals, (torch.ones(2),))],
                         ids=["view-of-div-of-sizes", "numbers-from-literals"])
def test_a_tensor_whose_value_the_trace_knows_is_read_as_eager_reads_it(fn, args):
    """A 0-d tensor made in the frame from known numbers, passed where an op
    takes a number: eager's .item() value, no break (AllenaiLongformerBase:
    22 graphs -> 4, torch.compile's)."""
    counter = CountingBackend("eager")
    compiled = armature.compile(fn, backend=counter)
    assert_equal(fn(*args), compiled(*args))
    assert armature.explain(fn)(*args).graph_break_count == 0
    assert counter.frame_count <= dynamo_graph_count(fn, *args)


def test_a_tensor_computed_from_an_input_is_still_a_read():
    """Where only the data knows the value, the read stays a break (or an
    item() node under capture): eager's answers either way."""
    x = torch.tensor([1.2, 2.6])
    e = armature.explain(filled_from_input)(x)
    assert e.graph_break_count == 1, str(e)
    assert_equal(filled_from_input(x), armature.compile(filled_from_input, backend="eager")(x))
    assert_equal(filled_from_input(x), armature.compile(filled_from_input, backend="eager", fullgraph=True)(x))


def test_dynamic_sizes_keep_the_read():
    """Under dynamic sizes the tensor holds a symbol, not a known value: the
    results are eager's for every size."""
    compiled = armature.compile(chunked, backend="eager", dynamic=True)
    for n in (64, 32, 96):
        h = torch.randn(2, n, 8)
        assert_equal(chunked(h, 8), compiled(h, 8))
