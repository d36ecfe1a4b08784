"""torch.inference_mode: compiled functions called under it, ``with
torch.inference_mode():`` blocks and ``@torch.inference_mode()`` helpers
inside compiled code, ``torch.is_inference_mode_enabled()`` and
``Tensor.is_inference()`` while tracing.

Besides what assert_same compares (values, requires_grad, aliasing,
gradients), every test compares ``is_inference()`` of each output tensor with
eager's.

Tests marked armature_only are beyond torch.compile (2.13): it graph-breaks
on ``is_inference()`` / ``torch.is_inference_mode_enabled()`` (an error
under fullgraph), rejects ``inference_mode(mode=...)`` and stored
inference_mode objects, and under aot_eager returns ordinary tensors for
results made in an inference_mode block.
"""

import pytest
import torch

import armature
from helpers import (armature_only, assert_equal, assert_same, compile_fn, CountingBackend,
                     deep_copy, dynamo_graph_count, t)


def rg(*shape):
    return t(*shape, requires_grad=True)


def inference_tensor(*shape):
    with torch.inference_mode():
        return t(*shape)


def _flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [x for o in out for x in _flat(o)]
    return []


def assert_same_inference(fn, *args, backend="eager", graphs=None, fullgraph=True, check_grad=False,
                          ambient=False):
    """assert_same (optionally called under an ambient inference mode), then
    one more compiled call compared for ``is_inference()`` of every output."""
    import contextlib
    mode = torch.inference_mode if ambient else contextlib.nullcontext
    with mode():
        assert_same(fn, *args, backend=backend, graphs=graphs, fullgraph=fullgraph, check_grad=check_grad)
    cf = compile_fn(fn, backend=backend, fullgraph=fullgraph)
    with mode():
        expected = fn(*deep_copy(args))
        got = cf(*deep_copy(args))
    e, g = _flat(expected), _flat(got)
    assert [x.is_inference() for x in g] == [x.is_inference() for x in e], \
        f"is_inference: compiled {[x.is_inference() for x in g]} eager {[x.is_inference() for x in e]}"
    return got


# ----------------------------------------------------------- ambient mode


def plain(x, w):
    return (x @ w).relu() + 1, x.sum()


def test_called_under_inference_mode():
    assert_same_inference(plain, t(2, 3), rg(3, 4), graphs=1, ambient=True)


@pytest.mark.aot_eager
def test_called_under_inference_mode_aot_eager():
    assert_same_inference(plain, t(2, 3), rg(3, 4), backend="aot_eager", graphs=1, ambient=True)


def queries(x):
    return x * 2, torch.is_inference_mode_enabled(), torch.is_grad_enabled(), x.is_inference()


@armature_only
@pytest.mark.parametrize("backend", ["eager", pytest.param("aot_eager", marks=pytest.mark.aot_eager)])
def test_mode_guarded_compile_change_call_again(backend):
    """Compile outside inference mode, call under it, and back: each call
    is right, and each mode has its own entry (no recompile on return)."""
    counter = CountingBackend(backend)
    cf = compile_fn(queries, backend=counter, fullgraph=True)
    x = rg(3)
    for ambient in (False, True, False, True):
        with torch.inference_mode() if ambient else _null():
            got, exp = cf(x), queries(x)
        assert_equal(exp, got)
        assert got[0].is_inference() == exp[0].is_inference() == ambient
        assert got[1] is ambient and got[2] is (not ambient)
    assert counter.frame_count == 2


def _null():
    import contextlib
    return contextlib.nullcontext()


@armature_only
def test_inference_mode_guard_is_listed():
    import armature
    cf = armature.compile(queries, backend="eager")
    cf(rg(3))
    with torch.inference_mode():
        cf(rg(3))
    texts = [str(g) for e in armature.cache_entries(cf) for g in e.guards]
    assert "global state: inference mode is disabled" in texts
    assert "global state: inference mode is enabled" in texts


@armature_only
def test_enable_grad_under_inference_mode():
    """In inference mode enable_grad makes is_grad_enabled() true, yet
    nothing requires grad."""
    def f(x, w):
        with torch.enable_grad():
            y = x * w
            g = torch.is_grad_enabled()
        return y, g, y.requires_grad
    assert_same_inference(f, t(3), rg(3), graphs=1, ambient=True)


def test_called_under_inference_mode_with_enable_grad_around():
    cf = compile_fn(plain, backend="eager", fullgraph=True)
    x, w = t(2, 3), rg(3, 4)
    with torch.inference_mode(), torch.enable_grad():
        got, exp = cf(x, w), plain(x, w)
        got2 = cf(x, w)
    assert_equal(exp, got)
    assert_equal(exp, got2)
    assert got[0].is_inference()


# -------------------------------------------------------- inference inputs


def input_status(x, y):
    return x + y, x.is_inference(), y.is_inference(), x.view(-1), torch.is_inference(y)


@armature_only
def test_inference_tensor_inputs_guarded():
    counter = CountingBackend("eager")
    cf = compile_fn(input_status, backend=counter, fullgraph=True)
    for x, y in [(inference_tensor(3), t(3)), (t(3), inference_tensor(3)), (inference_tensor(3), t(3))]:
        got, exp = cf(x, y), input_status(x, y)
        assert_equal(exp, got)
        assert [v.is_inference() for v in _flat(got)] == [v.is_inference() for v in _flat(exp)]
    assert counter.frame_count == 2


# ------------------------------------------------------ blocks in the code


def block(x):
    with torch.inference_mode():
        y = x * 2
        v = y.view(-1)
        inside = torch.is_inference_mode_enabled()
        w = x.view(-1)          # a view of a normal tensor stays normal
    z = x.sin()
    return (y, v, w, z, inside, torch.is_inference_mode_enabled(), y.is_inference(), w.is_inference(),
            torch.Tensor.is_inference(v), torch.is_inference(z))


def block_no_queries(x, w):
    h = x @ w
    with torch.inference_mode():
        frozen = (x * 3).exp()
    return h.relu() + 1, frozen


def nested_false(x, w):
    with torch.inference_mode():
        a = x * w
        with torch.inference_mode(False):
            b = x * w
            g = torch.is_grad_enabled()
        c = x * w
    return a, b, c, g, a.is_inference(), b.is_inference()


def false_at_top(x, w):
    with torch.inference_mode(False):
        y = x * w
        g = torch.is_grad_enabled()
    return y, g, torch.is_grad_enabled()


def mode_arg(x, flag):
    with torch.inference_mode(mode=flag):
        y = x * 2
    return y, y.is_inference()


IM = torch.inference_mode()


def stored_context(x):
    with IM:
        y = x + 1
    return y, x - 1


@torch.inference_mode()
def _frozen_helper(x):
    return x.cos() * 2


@torch.inference_mode
def _frozen_helper_no_parens(x):
    return x.cos() * 3


def decorated_helpers(x):
    a = _frozen_helper(x)
    b = _frozen_helper_no_parens(x)
    return a, b, x.exp()


def enable_grad_inside(x, w):
    with torch.inference_mode():
        with torch.enable_grad():
            y = x * w
            g = torch.is_grad_enabled()
    return y, g, x * w


def inference_result_used_outside(x, w):
    with torch.inference_mode():
        y = x * 2
    return y + 1, (x * w).sum()


CASES = [
    pytest.param(block, (rg(3),), id="block", marks=armature_only),
    pytest.param(block_no_queries, (rg(2, 3), rg(3, 2)), id="block_no_queries"),
    pytest.param(nested_false, (t(3), rg(3)), id="nested_false", marks=armature_only),
    pytest.param(false_at_top, (t(3), rg(3)), id="false_at_top"),
    pytest.param(mode_arg, (rg(3), True), id="mode_arg_true", marks=armature_only),
    pytest.param(mode_arg, (rg(3), False), id="mode_arg_false", marks=armature_only),
    pytest.param(stored_context, (rg(3),), id="stored_context", marks=armature_only),
    pytest.param(decorated_helpers, (rg(3),), id="decorated_helpers"),
    pytest.param(enable_grad_inside, (t(3), rg(3)), id="enable_grad_inside"),
    pytest.param(inference_result_used_outside, (t(3), rg(3)), id="inference_result_used_outside"),
]


@pytest.mark.parametrize("fn,args", CASES)
def test_inference_blocks(fn, args):
    assert_same_inference(fn, *args, graphs=1)


@armature_only
@pytest.mark.aot_eager
@pytest.mark.parametrize("fn,args", CASES)
def test_inference_blocks_aot_eager(fn, args):
    assert_same_inference(fn, *args, backend="aot_eager", graphs=1)


@armature_only
@pytest.mark.parametrize("backend", ["eager", pytest.param("aot_eager", marks=pytest.mark.aot_eager)])
def test_inference_block_gradients(backend):
    assert_same(block_no_queries, rg(2, 3), rg(3, 2), backend=backend, graphs=1, check_grad=True)
    assert_same(nested_false, t(3), rg(3), backend=backend, graphs=1, check_grad=True)


@armature_only
def test_blocks_under_no_grad():
    with torch.no_grad():
        assert_same_inference(false_at_top, t(3), rg(3), graphs=1)
        assert_same_inference(nested_false, t(3), rg(3), graphs=1)


def test_false_under_ambient_inference_mode_breaks():
    """Inference mode really has to go off: the block runs after a graph
    break, with the mode off."""
    assert_same_inference(false_at_top, t(3), rg(3), fullgraph=False, ambient=True)
    assert_same_inference(nested_false, t(3), rg(3), fullgraph=False, ambient=True)


@pytest.mark.inductor
def test_inference_block_inductor():
    assert_same_inference(block_no_queries, rg(2, 3), rg(3, 2), backend="inductor", graphs=1)


# -------------------------------------------- what eager refuses, natively


def inplace_after_block(x):
    with torch.inference_mode():
        y = x * 2
    y.add_(1)
    return y


def saved_for_backward(x, w):
    with torch.inference_mode():
        y = x * 2
    return y * w


def added_to_grad_tensor(x, w):
    with torch.inference_mode():
        y = x * 2
    return y + w


@pytest.mark.parametrize("fn,args", [
    pytest.param(inplace_after_block, (t(3),), id="inplace_after_block"),
    pytest.param(saved_for_backward, (t(3), rg(3)), id="saved_for_backward"),
])
def test_eager_errors_on_inference_tensors(fn, args):
    with pytest.raises(RuntimeError, match="[Ii]nference tensor"):
        fn(*deep_copy(args))
    assert_same(fn, *args, fullgraph=False)


def test_inference_tensor_in_autograd_op_that_saves_nothing():
    assert_same_inference(added_to_grad_tensor, t(3), rg(3), fullgraph=False, check_grad=True)


def break_inside_block(x):
    with torch.inference_mode():
        y = x * 2
        print("inside", end="")
        z = y + 1
    return z, z.is_inference(), x + 1


def test_graph_break_inside_block(capsys):
    got = assert_same_inference(break_inside_block, rg(3), fullgraph=False)
    assert got[1] is True
    assert "inside" in capsys.readouterr().out


@armature_only
def test_break_inside_block_splits_at_its_enter(capsys):
    """The break moves to the block's enter (the graph runs a switched block
    as no_grad): the frame is split there instead of running as Python, and
    the block's ops run under the real inference mode."""
    report = armature.explain(break_inside_block)(rg(3))
    assert not report.fallbacks, report.fallbacks
    assert report.graph_count <= dynamo_graph_count(break_inside_block, rg(3))
    capsys.readouterr()


# ----------------------------------------------------- torch.compile oracle


def _dynamo_graphs(fn, *args):
    return dynamo_graph_count(fn, *args)


@armature_only
@pytest.mark.parametrize("fn,args", [
    pytest.param(block_no_queries, (rg(2, 3), rg(3, 2)), id="block_no_queries"),
    pytest.param(decorated_helpers, (rg(3),), id="decorated_helpers"),
    pytest.param(inference_result_used_outside, (t(3), rg(3)), id="inference_result_used_outside"),
])
def test_graph_count_matches_torch_compile(fn, args):
    counter = CountingBackend("eager")
    compile_fn(fn, backend=counter)(*deep_copy(args))
    assert counter.frame_count == _dynamo_graphs(fn, *args) == 1
