"""Inputs whose shape or strides change in place (issue 36, "Never wrong").

``x.unsqueeze_(0); return x + 1`` changes the caller's tensor object
itself.  An autograd-aware backend replays such changes of its inputs only in
part (under aot_eager ``squeeze_`` and ``as_strided_`` left the caller's
tensor as it was), and a backend got its example inputs with the sizes from
before the change.  So an op tagged ``inplace_view`` (``unsqueeze_``,
``squeeze_``, ``t_``, ``transpose_``, ``swapdims_``, ``as_strided_``,
``resize_``, ``resize_as_``, ``set_``, ``detach_``) on a tensor from outside
the frame runs as Python, as under torch.compile: the caller's tensor, the
result and the example inputs of the next graph all have eager's sizes.  On
a tensor made in the frame the op stays in the graph.

Each case: result, caller's tensor (sizes, strides, values), gradients where
inputs require grad, on eager and aot_eager, graph count equal to
torch.compile's; and PyTorch's test_repros.py test_inplace_unsqueeze_input
(the sizes the backend receives).
"""
from __future__ import annotations

import pytest
import torch

from helpers import CountingBackend, USING_TORCH, assert_equal, compile_fn, compiled_with_oracle, reset


def unsqueeze_(x):
    x.unsqueeze_(0)
    return x + 1


def unsqueeze_kw(x):
    return x.unsqueeze_(dim=1)


def unsqueeze_through_tensor(x):
    y = torch.Tensor.unsqueeze_(x, 1)
    return y, y is x


def unsqueeze_through_aten(x):
    torch.ops.aten.unsqueeze_(x, 0)
    return x * 2


def squeeze_(x):
    x.squeeze_()
    return x + 1


def squeeze_dim(x):
    x.squeeze_(0)
    return x.sum(0)


def t_(x):
    x.t_()
    return x @ torch.ones(x.shape[1], 2)


def transpose_(x):
    x.transpose_(0, 1)
    return x.contiguous().view(-1)


def swapdims_(x):
    x.swapdims_(0, 1)
    return x + 1


def as_strided_(x):
    x.as_strided_((2,), (1,))
    return x + 1


def resize_(x):
    x.resize_(1)
    return x + 1


def resize_as_(x):
    x.resize_as_(torch.ones(2))
    return x * 3


def set_(x):
    x.set_(torch.ones(2, 2))
    return x + 1


def mutate_then_shape(x):
    y = x.mul(2)
    x.unsqueeze_(0)
    return y, x.shape, x.stride(), x.sum()


def data_then_metadata(x):
    x.add_(1)
    x.t_()
    return x.sum(0)


def in_list(xs):
    xs[0].unsqueeze_(0)
    return xs[0] + xs[1]


def on_a_clone(x):
    # made in the frame: stays in the graph
    y = x.clone()
    y.unsqueeze_(0)
    y.transpose_(0, 2)
    return y, y.shape


def on_a_view(x):
    # a view made in the frame: its own metadata changes, not the input's
    v = x[0]
    v.unsqueeze_(0)
    return v + 1, x.shape


CASES = [unsqueeze_, unsqueeze_kw, unsqueeze_through_tensor, unsqueeze_through_aten, squeeze_, squeeze_dim, t_,
         transpose_, swapdims_, as_strided_, set_, mutate_then_shape, data_then_metadata, on_a_clone, on_a_view]


def _describe(obj):
    if isinstance(obj, torch.Tensor):
        return ("tensor", tuple(obj.shape), obj.stride(), obj.storage_offset(), obj.detach().clone(),
                obj.requires_grad)
    if isinstance(obj, (tuple, list)):
        return type(obj).__name__, [_describe(o) for o in obj]
    return obj


def _inputs(fn, seed):
    torch.manual_seed(seed)
    if fn is in_list:
        return ([torch.randn(1, 3), torch.randn(1, 1, 3)],)
    return (torch.randn(1, 3),)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", CASES + [in_list])
def test_input_changed_in_shape_in_place(fn, backend):
    if USING_TORCH and fn is unsqueeze_through_aten:
        pytest.skip("torch.compile (2.13) fails making its guards after torch.ops.aten.unsqueeze_ of an input")
    if USING_TORCH and fn is on_a_clone:
        pytest.skip("torch.compile (2.13) returns the clone's shape from before its in-place transpose_")
    reset()
    counter = CountingBackend(backend)
    compiled = compile_fn(fn, backend=counter)
    for call in range(3):
        e_in, c_in = _inputs(fn, call), _inputs(fn, call)
        expected = _describe((fn(*e_in), e_in))
        got = _describe((compiled(*c_in), c_in))
        assert_equal(expected, got)
    if fn is unsqueeze_through_aten:
        graphs = 1   # (torch.compile crashes making its guards here: not an oracle; the call breaks, x * 2 is one graph)
    else:
        graphs = compiled_with_oracle(fn, *_inputs(fn, 0)).graphs
    assert counter.frame_count == graphs


@pytest.mark.parametrize("fn", [resize_, resize_as_])
def test_resize_of_an_input(fn):
    # new memory holds arbitrary values: compare sizes and the kept prefix
    reset()
    compiled = compile_fn(fn, backend="eager")
    e_in, c_in = _inputs(fn, 0), _inputs(fn, 0)
    e_out, c_out = fn(*e_in), compiled(*c_in)
    assert e_out.shape == c_out.shape and e_in[0].shape == c_in[0].shape
    n = min(e_in[0].numel(), 3)
    assert torch.equal(e_in[0].flatten()[:n], c_in[0].flatten()[:n])


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_metadata_mutation_with_grad(backend):
    # a non-leaf input (a view of a leaf) changed in shape, then used: the
    # gradient reaches the leaf as in eager
    def fn(x):
        x.unsqueeze_(0)
        return (x * 2).sum()

    reset()
    compiled = compile_fn(fn, backend=backend)
    for call in range(2):
        torch.manual_seed(call)
        leaf_e = torch.randn(3, requires_grad=True)
        leaf_c = leaf_e.detach().clone().requires_grad_()
        x_e, x_c = leaf_e * 1, leaf_c * 1
        out_e, out_c = fn(x_e), compiled(x_c)
        assert_equal(out_e, out_c)
        assert x_e.shape == x_c.shape
        out_e.backward()
        out_c.backward()
        assert_equal(leaf_e.grad, leaf_c.grad)


def test_backend_gets_example_inputs_with_the_new_sizes():
    # PyTorch's test_inplace_unsqueeze_input
    seen = []

    def backend(gm, example_inputs):
        seen.append([tuple(e.shape) for e in example_inputs if isinstance(e, torch.Tensor)])
        return gm.forward

    reset()
    fn = compile_fn(unsqueeze_, backend=backend)
    x = torch.randn(3, 4)
    out = fn(x)
    assert out.shape == (1, 3, 4) and x.shape == (1, 3, 4)
    assert seen and seen[-1][-1] == (1, 3, 4)


@pytest.mark.skipif(USING_TORCH, reason="armature's own break message")
def test_break_says_what_and_where():
    import armature
    with pytest.raises(armature.Unsupported, match=r"unsqueeze_\(\) changes the shape or strides of x"):
        armature.compile(unsqueeze_, backend="eager", fullgraph=True)(torch.randn(3))
