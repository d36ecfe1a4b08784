"""TorchFunctionModes and other C functions that change global state.

transformers 4.57's ``sdpa_mask_recent_torch`` breaks inside
``with TransformGetItemToIndex():`` (a TorchFunctionMode).  armature used to
run torch's ``_pop_torch_function_stack`` for real while tracing the resume
function's ``__exit__``, so the real ``__exit__`` then popped an empty mode
stack.  Only queries of global state run while tracing; the mode stack is
modelled (values/tensors/torch_function.py): a mode pushed by the traced code exists
only in the trace, a graph break inside it moves to where it was pushed, and
modes active around a compiled call are traced through and guarded.
"""
import pytest
import torch
from torch.overrides import TorchFunctionMode

import armature


class AddOneToMul(TorchFunctionMode):
    """A mode that changes results, so bypassing it would show."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.mul:
            return out + 1
        return out


def _depth():
    return torch._C._len_torch_function_stack()


def break_inside_mode(x):
    y = x * 2
    with AddOneToMul():
        z = torch.mul(y, 3)
        print("inside the mode")          # a graph break inside the with block
        w = torch.mul(z, 2)
    return w + 1


def _mask_helper(n):
    # the transformers shape: an inlined helper that enters a mode and breaks in it
    ar = torch.arange(n)
    with AddOneToMul():
        print("mask")
        m = torch.mul(ar, 2)
    return m


def model_like(x):
    h = x.relu()
    m = _mask_helper(x.shape[0])
    return h.sum(-1) + m


@pytest.mark.parametrize("fn", [break_inside_mode, model_like])
def test_break_inside_mode_matches_eager_and_leaves_stack_empty(fn):
    cf = armature.compile(fn, backend="eager")
    for n in (4, 4, 6, 9):                  # cached calls and recompiles
        x = torch.randn(n, 3) if fn is model_like else torch.randn(n)
        expected = fn(x)
        assert _depth() == 0
        got = cf(x)
        assert _depth() == 0
        torch.testing.assert_close(got, expected)


def test_break_in_mode_is_reported_not_run_at_trace_time():
    report = armature.explain(armature.compile(break_inside_mode, backend="eager"))(torch.ones(3))
    assert _depth() == 0
    reasons = " ".join(r.reason for r in report.break_reasons)
    assert "print()" in reasons and "_push_on_torch_function_stack" not in reasons
    assert report.graph_count >= 1


def test_compiled_call_under_an_outside_mode_sees_the_mode():
    def f(x):
        return torch.mul(x, 2) + 1

    cf = armature.compile(f, backend="eager")
    x = torch.ones(3)
    torch.testing.assert_close(cf(x), f(x))        # compiled, no mode
    with AddOneToMul():
        torch.testing.assert_close(cf(x), f(x))    # the mode is traced through
        assert _depth() == 1
    torch.testing.assert_close(cf(x), f(x))
    entries = armature.cache_entries(cf)
    assert len(entries) == 2 and not any(e.is_fallback for e in entries)


def test_call_under_mode_with_fullgraph_compiles_the_mode():
    cf = armature.compile(lambda x: torch.mul(x, 2), backend="eager", fullgraph=True)
    with AddOneToMul():
        torch.testing.assert_close(cf(torch.ones(2)), torch.full((2,), 3.0))


def test_state_changing_c_function_is_a_break_not_run_while_tracing():
    mode = AddOneToMul()

    def f(x):
        y = x + 1
        torch._C._push_on_torch_function_stack(mode)
        z = torch.mul(y, 2)                    # runs under the mode for real
        torch._C._pop_torch_function_stack()
        return z

    cf = armature.compile(f, backend="eager")
    x = torch.ones(2)
    for _ in range(2):
        torch.testing.assert_close(cf(x), f(x))
        assert _depth() == 0


def test_state_queries_still_answered_and_guarded():
    def f(x):
        if torch._C._len_torch_dispatch_stack() == 0 and not torch.is_autocast_enabled():
            return x + 1
        return x - 1

    report = armature.explain(armature.compile(f, backend="eager"))(torch.ones(2))
    assert report.graph_count == 1 and report.graph_break_count == 0


def test_module_built_in_frame_does_not_break_on_usage_logging():
    # nn.Module.__init__ calls torch._C._log_api_usage_once: skipped, not a break
    def f(x):
        return torch._C._log_api_usage_once("armature.test") or x + 1

    report = armature.explain(armature.compile(f, backend="eager"))(torch.ones(2))
    assert report.graph_break_count == 0


def _mode_then_inference(x, log):
    with AddOneToMul():
        y = x * 2
        with torch.inference_mode():
            z = y * 3
            log.append("inside")       # a break inside both regions
            w = z + 1
    return w, w.is_inference()


def test_break_inside_inference_block_inside_a_mode_goes_to_the_mode():
    """Regions a break cannot split nest: the break moves to the oldest (the
    mode's push), so both run as Python with their real state."""
    x = torch.randn(3)
    expected_log, got_log = [], []
    expected = _mode_then_inference(x, expected_log)
    got = armature.compile(_mode_then_inference, backend="eager")(x, got_log)
    torch.testing.assert_close(got[0], expected[0])
    assert got[1] == expected[1] and got_log == expected_log
    assert torch._C._len_torch_function_stack() == 0
