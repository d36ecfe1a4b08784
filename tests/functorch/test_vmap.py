"""torch.vmap inside compiled code: traced into the graph (values/tensors/vmap.py).

Differential against eager, graph counts against torch.compile, and the
transformers 4.57 mask pattern: nested vmaps over a Python mask function
inside a TorchFunctionMode that turns tensor indexing into aten.index.
"""
from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

import armature

from helpers import CountingBackend


def _check(fn, *args, backend="eager", graphs=1):
    counting = CountingBackend(backend)
    cf = armature.compile(fn, backend=counting, fullgraph=graphs == 1)
    for _ in range(2):
        torch.testing.assert_close(cf(*args), fn(*args))
    assert counting.frame_count == graphs
    assert torch._C._functorch.maybe_get_level(torch.ones(1)) == -1   # no nesting left behind
    return counting


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_vmap_in_dims_none_and_reductions(backend):
    def f(x, y):
        return torch.vmap(lambda r, s: (r * s).sum() + r.max(), in_dims=(0, None))(x, y) + 1

    _check(f, torch.randn(3, 4), torch.randn(4), backend=backend)


def test_vmap_out_dims_tuple_outputs_and_negative_in_dim():
    def f(x):
        return torch.vmap(lambda c: (c.sin(), c.cos().sum()), in_dims=-1, out_dims=(1, 0))(x)

    _check(f, torch.randn(2, 3, 5))


def test_nested_vmap_matches_torch_compile():
    def f(a, b):
        outer = torch.vmap(torch.vmap(lambda x, y: x * y + 1, in_dims=(None, 0)), in_dims=(0, None))
        return outer(a, b)

    a, b = torch.randn(3), torch.randn(4)
    ours = _check(f, a, b)
    theirs = CountingBackend("eager")
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(f, backend=theirs)(a, b), f(a, b))
    assert ours.frame_count == theirs.frame_count


class GetItemToIndex(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func == torch.Tensor.__getitem__:
            index_args = args[1] if isinstance(args[1], tuple) else (args[1],)
            if all(isinstance(i, torch.Tensor) and i.dtype in (torch.int64, torch.int32) for i in index_args):
                return torch.ops.aten.index(args[0], list(index_args))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_transformers_mask_pattern_is_one_graph(backend):
    def causal(b, h, q, kv):
        return kv <= q

    def padding(mask):
        def inner(b, h, q, kv):
            return mask[b, kv]
        return inner

    def and_masks(*fns):
        def both(b, h, q, kv):
            out = q.new_ones((), dtype=torch.bool)
            for fn in fns:
                out = out & fn(b, h, q, kv)
            return out
        return both

    def build(x, attention_mask):
        fn = and_masks(causal, padding(attention_mask))
        for dims in [(None, None, None, 0), (None, None, 0, None), (None, 0, None, None), (0, None, None, None)]:
            fn = torch.vmap(fn, in_dims=dims, out_dims=0)
        n = x.shape[1]
        with GetItemToIndex():
            m = fn(torch.arange(x.shape[0]), torch.arange(1), torch.arange(n), torch.arange(n))
        return x.masked_fill(~m[:, 0, :, :].any(-1, keepdim=True), 0.0) * 2

    x = torch.randn(2, 5, 5)
    attention_mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    _check(build, x, attention_mask, backend=backend)


def test_break_inside_vmap_body_runs_the_vmapped_call_as_python():
    def f(x):
        y = x + 1

        def body(r):
            print("side effect")                   # a graph break inside the body
            return r * 2

        return torch.vmap(body)(y).sum()

    counting = CountingBackend("eager")
    cf = armature.compile(f, backend=counting)
    x = torch.randn(3, 2)
    for _ in range(2):
        torch.testing.assert_close(cf(x), f(x))
    assert torch._C._functorch.maybe_get_level(torch.ones(1)) == -1
    with pytest.raises(armature.Unsupported):
        armature.compile(f, backend="eager", fullgraph=True)(x)


def test_vmap_errors_are_eagers():
    def f(x):
        return torch.vmap(lambda r: r, in_dims=3)(x)

    with pytest.raises(ValueError):
        f(torch.randn(2))
    with pytest.raises(ValueError):
        armature.compile(f, backend="eager")(torch.randn(2))


def test_torchs_own_get_item_to_index_mode_with_padding_mask():
    """transformers 4.57 uses torch's TransformGetItemToIndex (torch.utils._pytree.tree_leaves
    and ModIndex inside): one graph, eager's result, over several lengths with one recompile."""
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

    def build(x, attention_mask):
        def mask(b, h, q, kv):
            return (kv <= q) & attention_mask[b, kv]
        fn = mask
        for dims in [(None, None, None, 0), (None, None, 0, None), (None, 0, None, None), (0, None, None, None)]:
            fn = torch.vmap(fn, in_dims=dims, out_dims=0)
        n = x.shape[1]
        with TransformGetItemToIndex():
            m = fn(torch.arange(x.shape[0]), torch.arange(1), torch.arange(n), torch.arange(n))
        return torch.where(m[:, 0], x, torch.zeros_like(x))

    counting = CountingBackend("eager")
    cf = armature.compile(build, backend=counting)
    for n in (5, 6, 7, 9):
        x = torch.randn(2, n, n)
        attention_mask = torch.rand(2, n) > 0.3
        torch.testing.assert_close(cf(x, attention_mask), build(x, attention_mask))
    assert counting.frame_count == 2          # the second size makes the length dynamic
    assert torch._C._len_torch_function_stack() == 0


def test_tree_leaves_in_traced_code():
    import torch.utils._pytree as pytree

    def f(x, y):
        leaves = pytree.tree_leaves(((x, None), {"a": y, "b": [x, 3]}))
        return sum(v * 2 for v in leaves if isinstance(v, torch.Tensor)) + len(leaves)

    x, y = torch.randn(2), torch.randn(2)
    _check(f, x, y)
