"""Data-dependent values: config.capture_scalar_outputs (.item(), int(t),
float(t), tolist()) and config.capture_dynamic_output_shape_ops (nonzero,
boolean masks, unique) keep them in the graph as unbacked symbols;
torch._check tells the ShapeEnv facts about them."""
import pytest
import torch

import armature

from .util import same

SCALARS = armature.config.patch(capture_scalar_outputs=True)
SHAPES = armature.config.patch(capture_dynamic_output_shape_ops=True)


def scale_by_item(x):
    return x * x.max().item(), x.sum().item() + 1


def _explain(fn, *args, **kw):
    return armature.explain(armature.compile(fn, backend="eager", **kw))(*args)


def test_item_is_a_break_by_default():
    report = _explain(scale_by_item, torch.randn(4))
    assert report.graph_break_count >= 1


def test_item_stays_in_the_graph_with_capture_scalar_outputs():
    with SCALARS:
        report = _explain(scale_by_item, torch.randn(4))
        assert report.graph_count == 1 and report.graph_break_count == 0
        cf = armature.compile(scale_by_item, backend="eager")
        for _ in range(4):                 # other values: same entry, eager's results
            x = torch.randn(4)
            same(scale_by_item(x), cf(x))
        assert len(armature.cache_entries(cf)) == 1


def test_fullgraph_captures_scalars_without_the_option():
    cf = armature.compile(scale_by_item, backend="eager", fullgraph=True)
    x = torch.randn(5)
    same(scale_by_item(x), cf(x))


def conversions(x, i):
    a = int(i)
    b = float(x[0])
    c = i.tolist()
    d = x[:2].tolist()
    return a * 2, b + 1.5, c, d, x * a


def test_int_float_tolist():
    x, i = torch.randn(4), torch.tensor(3)
    with SCALARS:
        report = _explain(conversions, x, i)
        assert report.graph_count == 1 and report.graph_break_count == 0
        cf = armature.compile(conversions, backend="eager")
        for v in (3, 5, -2):
            x, i = torch.randn(4), torch.tensor(v)
            same(conversions(x, i), cf(x, i))


def branch_on_item(x):
    if x.sum().item() > 0:
        return x * 2
    return x - 1


def test_branch_on_a_data_dependent_value_breaks():
    with SCALARS:
        report = _explain(branch_on_item, torch.ones(3))
        assert report.graph_break_count >= 1
        assert any("data-dependent" in r.reason for r in report.break_reasons)
        cf = armature.compile(branch_on_item, backend="eager")
        for x in (torch.ones(3), -torch.ones(3)):
            same(branch_on_item(x), cf(x))


def test_fullgraph_branch_on_data_dependent_value_is_a_clear_error():
    cf = armature.compile(branch_on_item, backend="eager", fullgraph=True)
    with pytest.raises(armature.Unsupported, match="data-dependent") as info:
        cf(torch.ones(3))
    assert "torch._check" in str(info.value)


def nonzero_and_masks(x):
    idx = (x > 0).nonzero()
    pos = x[x > 0]
    u = torch.unique(x.round())
    return idx, pos * 2, u, len(idx), pos.shape[0] + 1


def test_dynamic_output_shapes_break_by_default():
    report = _explain(nonzero_and_masks, torch.randn(6))
    assert report.graph_break_count >= 1


def test_dynamic_output_shapes_stay_in_the_graph():
    with SHAPES:
        report = _explain(nonzero_and_masks, torch.randn(6))
        assert report.graph_count == 1 and report.graph_break_count == 0
        cf = armature.compile(nonzero_and_masks, backend="eager")
        for x in (torch.randn(6), torch.tensor([1.0, -1.0, 2.0, 3.0, -4.0, 0.5]), -torch.ones(6)):
            same(nonzero_and_masks(x), cf(x))
        assert len(armature.cache_entries(cf)) == 1


def sized_by_item(x, n_t):
    n = n_t.item()
    torch._check(n >= 0)
    torch._check(n <= 64)
    return torch.zeros(n) + x.sum(), n


def test_torch_check_makes_a_data_dependent_size_usable():
    with SCALARS:
        report = _explain(sized_by_item, torch.ones(3), torch.tensor(4))
        assert report.graph_count == 1 and report.graph_break_count == 0
        cf = armature.compile(sized_by_item, backend="eager")
        for n in (4, 7, 0):
            same(sized_by_item(torch.ones(3), torch.tensor(n)), cf(torch.ones(3), torch.tensor(n)))


def test_torch_check_of_a_false_constant_raises_like_eager():
    def f(x):
        torch._check(x.shape[0] == 5, lambda: "need five")
        return x
    cf = armature.compile(f, backend="eager", dynamic=False)
    with pytest.raises(RuntimeError, match="need five"):
        f(torch.ones(3))
    with pytest.raises(RuntimeError, match="need five"):
        cf(torch.ones(3))


@pytest.mark.aot_eager
def test_aot_eager_runs_unbacked_graphs():
    with SCALARS, SHAPES:
        cf = armature.compile(nonzero_and_masks, backend="aot_eager")
        x = torch.randn(7)
        same(nonzero_and_masks(x), cf(x))
        cf2 = armature.compile(scale_by_item, backend="aot_eager")
        same(scale_by_item(x), cf2(x))
