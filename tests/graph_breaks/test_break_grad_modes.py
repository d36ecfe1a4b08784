"""Graph breaks inside grad-mode blocks: ``torch.no_grad()``,
``torch.enable_grad()``, ``torch.set_grad_enabled(...)``.  The grad mode must
be exactly right on both sides of the break, after the block, and after the
compiled call returns (checked through requires_grad of computed tensors and
torch.is_grad_enabled() recorded at several points)."""
import pytest
import torch

import armature
from helpers import assert_same, t

from .util import explain_fresh


def no_grad_break(w):
    seen = [torch.is_grad_enabled()]
    with torch.no_grad():
        a = w * 2
        seen.append(torch.is_grad_enabled())
        armature.graph_break()
        seen.append(torch.is_grad_enabled())
        b = w * 3
    seen.append(torch.is_grad_enabled())
    c = w * 4
    return a, b, c, seen


def no_grad_print(w):
    with torch.no_grad():
        a = w.sin()
        print("inside no_grad")
        b = w.cos()
    return a, b, w.tan()


def enable_grad_break(w):
    seen = [torch.is_grad_enabled()]
    with torch.enable_grad():
        a = w * 2
        armature.graph_break()
        seen.append(torch.is_grad_enabled())
        b = a * 3
    seen.append(torch.is_grad_enabled())
    return a, b, w * 5, seen


def set_grad_enabled_ctx_break(w, mode):
    seen = []
    with torch.set_grad_enabled(mode):
        a = w + 1
        armature.graph_break()
        seen.append(torch.is_grad_enabled())
        b = w + 2
    seen.append(torch.is_grad_enabled())
    return a, b, w + 3, seen


def nested_modes_break(w):
    seen = []
    with torch.no_grad():
        a = w * 2
        with torch.enable_grad():
            b = w * 3
            armature.graph_break()
            seen.append(torch.is_grad_enabled())
            c = w * 4
        seen.append(torch.is_grad_enabled())
        armature.graph_break()
        d = w * 5
        seen.append(torch.is_grad_enabled())
    seen.append(torch.is_grad_enabled())
    return a, b, c, d, w * 6, seen


def two_blocks_breaks(w):
    with torch.no_grad():
        a = w * 2
        armature.graph_break()
    b = w * 3
    with torch.no_grad():
        armature.graph_break()
        c = w * 4
    return a, b, c, torch.is_grad_enabled()


def no_grad_break_item(w):
    with torch.no_grad():
        s = (w * 2).sum().item()
        y = w * s
    return y, w * 2


def no_grad_loop_break(w, n):
    with torch.no_grad():
        acc = w * 0
        for i in range(n):
            acc = acc + w
            armature.graph_break()
    return acc, w + acc


def no_grad_data_dependent_branch(w):
    with torch.no_grad():
        if w.sum() > 0:
            y = w * 2
        else:
            y = w * 3
    return y, y + w


GRAD_CASES = [
    # fn, args, graphs of one call (torch.compile's count where it has one)
    pytest.param(no_grad_break, (t(3, requires_grad=True),), 2, id="no_grad_break"),
    pytest.param(no_grad_print, (t(3, requires_grad=True),), 2, id="no_grad_print"),
    pytest.param(enable_grad_break, (t(3, requires_grad=True),), 2, id="enable_grad_break"),
    pytest.param(set_grad_enabled_ctx_break, (t(3, requires_grad=True), False), 2, id="set_grad_enabled_false"),
    pytest.param(set_grad_enabled_ctx_break, (t(3, requires_grad=True), True), 2, id="set_grad_enabled_true"),
    pytest.param(nested_modes_break, (t(3, requires_grad=True),), 3, id="nested_modes_break"),
    pytest.param(two_blocks_breaks, (t(3, requires_grad=True),), 3, id="two_blocks_breaks"),
    pytest.param(no_grad_break_item, (t(3, requires_grad=True),), 2, id="no_grad_break_item"),
    pytest.param(no_grad_loop_break, (t(3, requires_grad=True), 5), None, id="no_grad_loop_break"),
    pytest.param(no_grad_data_dependent_branch, (t(3, requires_grad=True),), 2,
                 id="no_grad_data_dependent_branch"),
]


@pytest.mark.parametrize("fn,args,graphs", GRAD_CASES)
@pytest.mark.parametrize("outer", ["grad", "no_grad"])
def test_grad_mode_across_break(fn, args, graphs, outer):
    ctx = torch.no_grad() if outer == "no_grad" else torch.enable_grad()
    with ctx:
        assert_same(fn, *args, fullgraph=False)
        expected_mode = torch.is_grad_enabled()
    assert torch.is_grad_enabled()
    assert expected_mode == (outer == "grad")


@pytest.mark.parametrize("fn,args,graphs", [
    pytest.param(*p.values, id=p.id) for p in GRAD_CASES if p.values[2] is not None
])
def test_grad_mode_break_graph_count(fn, args, graphs):
    e = explain_fresh(fn, *args)
    assert not e.fallbacks, str(e)
    assert e.graph_count == graphs, str(e)
    assert e.graph_break_count == graphs - 1, str(e)


def test_grad_mode_restored_after_call():
    cf = armature.compile(no_grad_break, backend="eager")
    w = t(3, requires_grad=True)
    a, b, c, seen = cf(w)
    assert torch.is_grad_enabled()
    assert seen == [True, False, False, True]
    assert not a.requires_grad and not b.requires_grad and c.requires_grad
    a, b, c, seen = cf(w)  # cached
    assert torch.is_grad_enabled()
    assert seen == [True, False, False, True]


def test_grad_flows_through_split_graphs():
    def fn(w, x):
        y = (w * x).sin()
        with torch.no_grad():
            scale = y.abs().max() + 1
            armature.graph_break()
            scale = scale * 2
        return (y / scale).sum()

    assert_same(fn, t(4, requires_grad=True), t(4), fullgraph=False, check_grad=True)


def set_grad_enabled_call_break(w):
    a = w * 2
    torch.set_grad_enabled(False)
    b = w * 3
    armature.graph_break()
    c = w * 4
    return a, b, c, torch.is_grad_enabled()


def set_grad_enabled_call_restored(w):
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    b = w * 3
    print("grad disabled here")
    torch.set_grad_enabled(prev)
    return b, w * 4, torch.is_grad_enabled()


def test_set_grad_enabled_as_a_call_persists_like_eager():
    """``torch.set_grad_enabled(False)`` used as a plain call changes the
    global mode for the rest of the program, also after the compiled call."""
    w = t(3, requires_grad=True)
    try:
        expected = set_grad_enabled_call_break(w)
        eager_after = torch.is_grad_enabled()
    finally:
        torch.set_grad_enabled(True)
    try:
        got = armature.compile(set_grad_enabled_call_break, backend="eager")(w)
        compiled_after = torch.is_grad_enabled()
    finally:
        torch.set_grad_enabled(True)
    assert compiled_after == eager_after is False
    for e, g in zip(expected[:3], got[:3]):
        assert e.requires_grad == g.requires_grad
        torch.testing.assert_close(e, g)
    assert expected[3] == got[3]


def test_set_grad_enabled_call_and_restore():
    assert_same(set_grad_enabled_call_restored, t(3, requires_grad=True), fullgraph=False)
    assert torch.is_grad_enabled()


def raise_after_break_in_no_grad(w):
    with torch.no_grad():
        a = w * 2
        armature.graph_break()
        raise ValueError("boom in no_grad")
    return a


def test_exception_after_break_restores_grad_mode():
    cf = armature.compile(raise_after_break_in_no_grad, backend="eager")
    for _ in range(2):
        with pytest.raises(ValueError, match="boom in no_grad"):
            cf(t(3, requires_grad=True))
        assert torch.is_grad_enabled()
