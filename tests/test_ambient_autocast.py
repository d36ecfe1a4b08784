"""The autocast state a compiled function is called under is guarded:
aot_eager and inductor bake the casts of the first call's state into the
graph, so a graph compiled inside ``torch.autocast`` must not serve a call
outside it (it returned bfloat16 where eager returns float32)."""
import pytest
import torch

import armature
from armature.guards.ambient_autocast import autocast_state


def mm(x, y):
    return (x @ y).relu()


@pytest.fixture(autouse=True)
def _reset():
    armature.reset()
    yield
    armature.reset()


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_compiled_inside_autocast_then_called_outside(backend):
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    f = armature.compile(mm, backend=backend)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        inside, ref_inside = f(x, y), mm(x, y)
    assert inside.dtype == ref_inside.dtype == torch.bfloat16
    torch.testing.assert_close(inside, ref_inside)
    outside = f(x, y)
    assert outside.dtype == torch.float32
    torch.testing.assert_close(outside, mm(x, y))
    assert len(armature.cache_entries(f)) == 2


def test_other_autocast_dtype_recompiles_and_same_state_reuses():
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    f = armature.compile(mm, backend="aot_eager")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        f(x, y)
        f(x, y)
    assert len(armature.cache_entries(f)) == 1
    with torch.autocast("cpu", dtype=torch.float16):
        out = f(x, y)
        assert out.dtype == mm(x, y).dtype == torch.float16
    assert len(armature.cache_entries(f)) == 2


def test_compiled_outside_then_called_inside():
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    f = armature.compile(mm, backend="inductor")
    assert f(x, y).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = f(x, y)
        assert out.dtype == torch.bfloat16
        torch.testing.assert_close(out, mm(x, y))


def test_guard_is_reported():
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        text = str(armature.explain(mm)(x, y))
        assert ("cpu", torch.bfloat16) in autocast_state()
    assert "autocast is on for cpu (bfloat16)" in text
    assert "autocast is off" in str(armature.explain(mm)(x, y))
