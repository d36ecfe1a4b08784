"""A backend that cannot compile a graph armature built is never an error
where eager works (issue #36, item 2).

Boolean-mask assignment into a tensor that requires grad (``x[mask] = v``)
has an output of known size, so the trace keeps it; aot_autograd's joint
graph then meets the backward's ``nonzero`` (the gradient indexed by the
mask), a data-dependent size inside the op.  It failed in the backend and
the error reached the user; now the backend meets an unbacked size there
(driver/backend_failures.py), so it stays one graph, with eager's values
and gradients.  Any other failure of armature's own backends, and the
fake-tensor limits of any backend, make the frame run as Python with a
warning (``fullgraph=True``: armature.Unsupported); a user's own backend
failing is the user's error and still raises BackendCompilerFailed.
"""
from __future__ import annotations

import logging

import pytest
import torch

import armature
from armature.diagnostics.errors import InternalError
from helpers import CASE_ARGS, USING_TORCH, CountingBackend, assert_same, case, dynamo_graph_count, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="armature's handling of backend failures")


# --- boolean-mask assignment -------------------------------------------------------

def mask_assign(x, mask, v):
    x = x.clone()
    x[mask] = v
    return x


def mask_assign_columns(x, mask, v):
    x = x.clone()
    x[:, mask] = v
    return x


def mask_assign_scalar(x, mask):
    x = x.clone()
    x[mask] = 2.5
    return x * 3


def mask_assign_broadcast(x, mask, v):
    y = x * 2
    y[mask] = v            # v of shape (1,) broadcast over the selected elements
    return y.sum(0), y


def mask_iadd(x, mask):
    x = x.clone()
    x[mask] += 1           # x[mask] has a data-dependent size: a break without capture
    return x


def mask_from_data(x, v):
    y = x.clone()
    y[x > 0] = v * 2       # the mask is computed in the frame
    return y + 1


def mask_assign_2d(x, mask, v):
    y = x.clone()
    y[mask] = v            # 2-d mask, 1-d values
    return y.exp()


def mask_assign_into_input_view(x, mask, v):
    y = x.clone()
    row = y[0]
    row[mask] = v          # through a view: y changes too
    return y, row


MASK = torch.tensor([True, False, True, False])
MASK2 = torch.tensor([[True, False, True, False], [False, False, True, True], [True, True, True, False]])

MASK_CASES = [
    case(mask_assign, t(4, requires_grad=True), MASK, t(2, requires_grad=True)),
    case(mask_assign_columns, t(3, 4, requires_grad=True), MASK, t(3, 2, requires_grad=True)),
    case(mask_assign_scalar, t(4, requires_grad=True), MASK),
    case(mask_assign_broadcast, t(3, 4, requires_grad=True), MASK2, t(1, requires_grad=True)),
    case(mask_iadd, t(4, requires_grad=True), MASK),
    case(mask_from_data, t(6, requires_grad=True), t(1, requires_grad=True)),
    case(mask_assign_2d, t(3, 4, requires_grad=True), MASK2, t(7, requires_grad=True)),
    case(mask_assign_into_input_view, t(3, 4, requires_grad=True), MASK, t(2, requires_grad=True)),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize("fullgraph", [False, True], ids=["breaks", "fullgraph"])
@pytest.mark.parametrize(CASE_ARGS, MASK_CASES)
def test_mask_assignment_requiring_grad_under_aot_eager(fn, args, opts, fullgraph):
    assert_same(fn, *args, backend="aot_eager", fullgraph=fullgraph, check_grad=True, **opts)


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, [c for c in MASK_CASES if c.id not in ("mask_iadd", "mask_from_data")])
def test_mask_assignment_is_one_graph_as_torch_compile(fn, args, opts):
    # torch.compile holds it in one graph too (its explain(), whose backend
    # does not trace the backward); armature's graph now also compiles
    # under aot_eager, where torch.compile falls back to Python
    counter = CountingBackend("aot_eager")
    compiled = armature.compile(fn, backend=counter)
    out = compiled(*args)
    assert counter.frame_count == dynamo_graph_count(fn, *args) == 1
    (entry,) = armature.cache_entries(compiled)
    assert not entry.is_fallback
    outs = out if isinstance(out, tuple) else (out,)
    sum(o.sum() for o in outs).backward()


def test_mask_iadd_breaks_once_and_resumes_in_a_graph():
    counter = CountingBackend("aot_eager")
    x, mask = t(4, requires_grad=True), MASK
    out = armature.compile(mask_iadd, backend=counter)(x, mask)
    expected = mask_iadd(x, mask)
    torch.testing.assert_close(out, expected)
    # before the break (clone) and after it (the assignment): both compiled
    assert counter.frame_count == dynamo_graph_count(mask_iadd, x, mask) == 2


@pytest.mark.inductor
def test_mask_assignment_requiring_grad_under_inductor():
    assert_same(mask_assign_columns, t(3, 4, requires_grad=True), MASK, t(3, 2, requires_grad=True),
                backend="inductor", fullgraph=True, check_grad=True)


# --- what a backend failure costs ----------------------------------------------------

def double_plus_one(x):
    return x * 2 + 1


def _raise_fake_limit(gm, example_inputs):
    from torch._subclasses.fake_tensor import DynamicOutputShapeException
    raise DynamicOutputShapeException(torch.ops.aten.nonzero.default)


@pytest.fixture
def lenient(monkeypatch):
    monkeypatch.setenv("ARMATURE_STRICT_INTERNAL_ERRORS", "0")


@pytest.fixture
def broken_aot_eager(monkeypatch):
    """armature's own aot_eager backend failing the way a bug would (its
    compiler of aot_autograd's graphs raising)."""
    from armature.backends import aot_eager

    def broken(gm, example_inputs):
        raise RuntimeError("a graph aot_eager cannot take")
    monkeypatch.setattr(aot_eager, "_boxed_nop", broken)


def test_fake_tensor_limit_in_any_backend_runs_the_frame_as_python(caplog):
    compiled = armature.compile(double_plus_one, backend=_raise_fake_limit)
    x = t(3)
    with caplog.at_level(logging.WARNING, logger="armature.fallbacks"):
        torch.testing.assert_close(compiled(x), double_plus_one(x))
    torch.testing.assert_close(compiled(x), double_plus_one(x))
    (entry,) = armature.cache_entries(compiled)
    assert entry.is_fallback and "DynamicOutputShapeException" in entry.fallback_reason
    assert any("runs as Python" in r.getMessage() and "_raise_fake_limit" in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)


def test_fake_tensor_limit_with_fullgraph_is_unsupported():
    compiled = armature.compile(double_plus_one, backend=_raise_fake_limit, fullgraph=True)
    with pytest.raises(armature.Unsupported) as info:
        compiled(t(3))
    text = str(info.value)
    assert "failed to compile" in text and "DynamicOutputShapeException" in text
    assert "double_plus_one" in text and "def double_plus_one" in text     # where: the frame's line
    assert "capture_dynamic_output_shape_ops" in text                     # what to do


def test_own_backend_failure_falls_back_with_a_warning(broken_aot_eager, lenient, caplog):
    compiled = armature.compile(double_plus_one, backend="aot_eager")
    x = t(3, requires_grad=True)
    with caplog.at_level(logging.WARNING, logger="armature.fallbacks"):
        out = compiled(x)
    torch.testing.assert_close(out, double_plus_one(x))
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))
    (entry,) = armature.cache_entries(compiled)
    assert entry.is_fallback and "a graph aot_eager cannot take" in entry.fallback_reason
    assert any("a graph aot_eager cannot take" in r.getMessage() for r in caplog.records)


def test_own_backend_failure_with_fullgraph_is_unsupported(broken_aot_eager, lenient):
    compiled = armature.compile(double_plus_one, backend="aot_eager", fullgraph=True)
    with pytest.raises(armature.Unsupported, match="a graph aot_eager cannot take"):
        compiled(t(3))


def test_own_backend_failure_is_loud_under_the_strict_switch(broken_aot_eager):
    compiled = armature.compile(double_plus_one, backend="aot_eager")
    with pytest.raises(InternalError, match="a graph aot_eager cannot take"):
        compiled(t(3))


def test_users_own_backend_failing_is_their_error():
    def my_backend(gm, example_inputs):
        raise ValueError("my backend refuses")
    compiled = armature.compile(double_plus_one, backend=my_backend)
    with pytest.raises(armature.BackendCompilerFailed, match="my backend refuses"):
        compiled(t(3))


def test_a_graph_after_a_break_falls_back_alone_when_its_backend_fails(lenient):
    calls = []

    def picky_backend(gm, example_inputs):
        calls.append(gm)
        if any(n.target is torch.sin for n in gm.graph.nodes):
            _raise_fake_limit(gm, example_inputs)
        return gm.forward

    def f(x):
        y = x + 1
        armature.graph_break()
        return torch.sin(y) * 2

    compiled = armature.compile(f, backend=picky_backend)
    x = t(3)
    for _ in range(2):
        torch.testing.assert_close(compiled(x), f(x))
    entries = armature.cache_entries(compiled)
    assert not entries[0].is_fallback and entries[0].graph_break is not None
    assert len(calls) == 2      # the first graph, and the resumed one the backend refused
