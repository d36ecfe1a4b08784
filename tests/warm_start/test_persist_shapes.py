"""driver/persist_shapes.py in one process: size expressions as data, and
the fresh ShapeEnv a loaded dynamic graph is compiled under -- what it
replays, and that a compile assuming anything more is refused (the warm
processes themselves are in test_warm_start.py)."""
import pytest
import sympy
import torch
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.utils._sympy.functions import FloorDiv, ModularIndexing

from armature.driver import persist_shapes
from armature.driver.persist_codec import NotStorable

pytestmark = pytest.mark.armature_only


def _settings():
    env = ShapeEnv()
    return tuple((f, getattr(env.settings, f)) for f in env.settings.__dataclass_fields__)


def _data(guards=(), hint=5, lo=2, hi="+oo"):
    table = (("s7", hint, True, lo, hi, "x.size()[0]"), ("s8", 3, False, "-oo", "+oo", "n"))
    return (table, tuple((persist_shapes.encode_expr(g), False) for g in guards), _settings())


def test_expressions_round_trip_through_data():
    a = sympy.Symbol("s7", positive=True, integer=True)
    b = sympy.Symbol("s8", integer=True)
    for e in (a * 3 + b, FloorDiv(a, 2) + ModularIndexing(a, 1, 4), sympy.Eq(a, b), sympy.Max(a, 4) <= b,
              sympy.And(a > 2, sympy.Ne(b, 0))):
        assert persist_shapes.decode_expr(persist_shapes.encode_expr(e), {"s7": a, "s8": b}) == e
    with pytest.raises(NotStorable):
        persist_shapes.encode_expr(a * sympy.Float(0.5))
    with pytest.raises(LookupError):
        persist_shapes.decode_expr(persist_shapes.encode_expr(a), {})


def test_rebuilt_shape_env_replays_ranges_and_guards():
    s7 = sympy.Symbol("s7", positive=True, integer=True)
    s8 = sympy.Symbol("s8", integer=True)
    r = persist_shapes.Rebuilt(_data(guards=[sympy.Le(s7, 64), sympy.Eq(s8, s7)], hint=3, hi=100))
    sym = r.symbols["s7"]
    assert r.env.var_to_range[sym].lower == 2 and r.env.var_to_range[sym].upper == 64
    assert r.env.replace(r.symbols["s8"]) == r.env.replace(sym)   # (the relation, as the trace's ShapeEnv had it)
    t = r.tensor((("e", persist_shapes.encode_expr(s7)), 3), (3, 1), torch.float32, "cpu", True)
    assert isinstance(t.size(0), torch.SymInt) and t.size(0).node._expr == sym and t.requires_grad
    assert r.value(("e", persist_shapes.encode_expr(s7 * 2))).node.hint == 6
    r.check()   # nothing assumed since


def test_a_compile_that_assumes_more_is_refused():
    s7 = sympy.Symbol("s7", positive=True, integer=True)
    r = persist_shapes.Rebuilt(_data(guards=[sympy.Le(s7, 64)]))
    r.env.evaluate_expr(sympy.Le(r.symbols["s7"], 64))   # (a stored guard again: fine)
    r.check()
    r.env.evaluate_expr(sympy.Gt(r.symbols["s7"], 4))   # (true for the hint 5; the entry's guards do not say it)
    with pytest.raises(LookupError, match="assumed"):
        r.check()


def test_a_guard_false_for_its_own_hints_is_refused():
    s7 = sympy.Symbol("s7", positive=True, integer=True)
    with pytest.raises(LookupError, match="does not hold"):
        persist_shapes.Rebuilt(_data(guards=[sympy.Gt(s7, 10)]))


def test_other_shape_env_settings_are_refused():
    table, guards, settings = _data()
    with pytest.raises(LookupError, match="settings"):
        persist_shapes.Rebuilt((table, guards, settings[:-1]))
