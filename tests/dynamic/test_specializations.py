"""mark_dynamic(..., specialize_on=[...]): one trace, a generic graph, and a
specialized graph per predicate compiled on the first call it accepts."""
import warnings

import pytest
import torch
from torch.fx.experimental.symbolic_shapes import is_concrete_int, statically_known_true

import armature
from armature.driver.specialize import SpecializingGraph

from .util import compiles, same


class CountingBackend:
    """Records each compile (the example sizes, the graph) and how often
    each compiled graph runs."""

    def __init__(self):
        self.compiles = []

    def __call__(self, gm, example_inputs):
        rec = {"sizes": [tuple(e.shape) if isinstance(e, torch.Tensor) else e for e in example_inputs],
               "gm": gm, "calls": 0, "specialization": gm.meta.get("specialization")}
        self.compiles.append(rec)

        def run(*args):
            rec["calls"] += 1
            return gm(*args)
        return run

    def calls(self):
        return [c["calls"] for c in self.compiles]


def _f(x, w):
    return torch.softmax(x @ w, -1) * x.shape[0]


def _marked(n, preds, d=64):
    x = torch.randn(n, d)
    armature.mark_dynamic(x, 0, specialize_on=preds)
    return x


PREDS = [lambda s: s == 8, lambda s: s % 16 == 0]


def test_one_trace_generic_graph_and_lazy_specializations():
    be = CountingBackend()
    cf = armature.compile(_f, backend=be)
    w = torch.randn(64, 64)
    for n in (10, 12, 5):                    # no predicate holds: the generic graph
        x = _marked(n, PREDS)
        same(_f(x, w), cf(x, w))
    assert len(be.compiles) == 1 and be.calls() == [3]
    assert isinstance(be.compiles[0]["sizes"][1], torch.SymInt)   # generic: symbolic size
    for n in (8, 8, 8):                      # s == 8: compiled once, on the first call
        x = _marked(n, PREDS)
        same(_f(x, w), cf(x, w))
    assert len(be.compiles) == 2 and be.calls() == [3, 3]
    assert be.compiles[1]["sizes"][2] == (8, 64)
    for n in (32, 48, 9, 16):                # s % 16 == 0: one more compile, for 32
        x = _marked(n, PREDS)
        same(_f(x, w), cf(x, w))
    assert len(be.compiles) == 3 and be.calls() == [4, 3, 3]
    assert compiles(cf) == 1                  # one trace, one cache entry
    specs = armature.cache_entries(cf)[0].specializations
    assert [s.predicate for s in specs] == ["lambda s: s == 8", "lambda s: s % 16 == 0"]
    assert [s.compiled_for for s in specs] == [8, 32]
    assert all(s.is_compiled and s.compile_time_s > 0 and s.source == "x.size()[0]" for s in specs)


def test_specializations_compile_lazily_only_when_matched():
    be = CountingBackend()
    cf = armature.compile(_f, backend=be)
    w = torch.randn(64, 64)
    for n in (3, 4, 5, 6):
        x = _marked(n, PREDS)
        same(_f(x, w), cf(x, w))
    assert len(be.compiles) == 1
    assert not any(s.is_compiled for s in armature.cache_entries(cf)[0].specializations)


def test_predicates_are_tried_in_order():
    w = torch.randn(64, 64)
    for preds in ([lambda s: s % 16 == 0, lambda s: s == 32], [lambda s: s == 32, lambda s: s % 16 == 0]):
        armature.reset()
        be = CountingBackend()
        cf = armature.compile(_f, backend=be)
        x = _marked(32, preds)
        same(_f(x, w), cf(x, w))
        specs = armature.cache_entries(cf)[0].specializations
        assert [s.is_compiled for s in specs] == [True, False]
        assert be.calls() == [0, 1]                # the first matching predicate's graph ran
        # the other predicate is never compiled for 32 (it would have matched too)
        x = _marked(32, preds)
        same(_f(x, w), cf(x, w))
        assert len(be.compiles) == 2 and be.calls() == [0, 2]


def test_specialized_graphs_know_the_predicate():
    """s == 8: the ShapeEnv of the specialized compile replaces the size by
    8 (static); s % 16 == 0: it knows the divisibility."""
    be = CountingBackend()
    cf = armature.compile(_f, backend=be)
    w = torch.randn(64, 64)
    for n in (10, 8, 48):
        x = _marked(n, PREDS)
        same(_f(x, w), cf(x, w))
    generic, eq8, mod16 = (c["gm"] for c in be.compiles)

    def size0(gm):
        x = [n for n in gm.graph.nodes if n.op == "placeholder" and n.name == "x"][0]
        return x.meta["val"].size(0)
    assert not is_concrete_int(size0(generic))
    assert is_concrete_int(size0(eq8)) and int(size0(eq8)) == 8
    assert not is_concrete_int(size0(mod16))
    assert statically_known_true(size0(mod16) % 16 == 0)
    assert not statically_known_true(size0(generic) % 16 == 0)
    assert be.compiles[1]["specialization"] == "x.size()[0]: lambda s: s == 8"


def test_recompile_limit_is_unaffected():
    be = CountingBackend()
    cf = armature.compile(_f, backend=be)
    w = torch.randn(64, 64)
    with armature.config.patch(recompile_limit=1), warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (5, 8, 16, 7, 8, 32, 64, 3, 9):
            x = _marked(n, PREDS)
            same(_f(x, w), cf(x, w))
    cache = cf._cache
    assert compiles(cf) == 1 and not cache.limit_hit and cache.recompiles == 0
    assert len(be.compiles) == 3
    assert all(s.is_compiled for s in armature.cache_entries(cf)[0].specializations)


def test_graphs_without_predicates_are_not_wrapped():
    cf = armature.compile(_f, backend="eager")
    x = torch.randn(8, 64)
    armature.mark_dynamic(x, 0)
    cf(x, torch.randn(64, 64))
    entry = armature.cache_entries(cf)[0]
    assert not isinstance(entry.compiled_graph, SpecializingGraph)
    assert entry.specializations == []


def test_a_check_the_specialized_compile_adds_is_evaluated():
    """What the backend assumed while compiling a specialization (here a
    bound on the size, from its hint) is checked on each call: a matching
    call that breaks it runs the generic graph."""
    compiles_ = []

    def backend(gm, example_inputs):
        compiles_.append(gm.meta.get("specialization"))
        if gm.meta.get("specialization"):
            sym = [e for e in example_inputs if isinstance(e, torch.SymInt)][0]
            assert bool(sym < 100)            # a guard on the hint (32)
        return gm
    cf = armature.compile(_f, backend=backend)
    w = torch.randn(64, 64)
    for n in (10, 32, 160, 48):
        x = _marked(n, [lambda s: s % 16 == 0])
        same(_f(x, w), cf(x, w))
    spec = armature.cache_entries(cf)[0].specializations[0]
    assert any("< 100" in g or "<= 99" in g for g in spec.guards), spec.guards
    assert len(compiles_) == 2 and compiles(cf) == 1
    assert spec._check(_args(cf, 160)) is False
    assert spec._check(_args(cf, 48)) is True


def _args(cf, n):
    """The graph's argument list for x of size n (in placeholder order)."""
    gm = armature.cache_entries(cf)[0].graph_module
    out = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            out.append({"x": torch.randn(n, 64), "w": torch.randn(64, 64)}.get(node.name, n))
    return out


def test_a_predicate_of_ints_only_specializes_on_the_value():
    """``s in {8, 24}`` cannot run on a symbolic size: its specialization is
    compiled for the first matching value and checked against it."""
    be = CountingBackend()
    cf = armature.compile(_f, backend=be)
    w = torch.randn(64, 64)
    for n in (10, 8, 24, 8):
        x = _marked(n, [lambda s: s in {8, 24}])
        same(_f(x, w), cf(x, w))
    spec = armature.cache_entries(cf)[0].specializations[0]
    assert spec.compiled_for == 8 and any(g.endswith("== 8") for g in spec.guards)
    assert len(be.compiles) == 2 and be.calls() == [2, 2]     # 24 ran the generic graph


def test_failing_specialized_compile_runs_the_generic_graph():
    def backend(gm, example_inputs):
        if gm.meta.get("specialization"):
            raise RuntimeError("no")
        return gm
    cf = armature.compile(_f, backend=backend)
    w = torch.randn(64, 64)
    x = _marked(10, PREDS)
    same(_f(x, w), cf(x, w))
    with pytest.warns(RuntimeWarning, match="could not compile the specialization"):
        x = _marked(8, PREDS)
        same(_f(x, w), cf(x, w))
    x = _marked(8, PREDS)
    same(_f(x, w), cf(x, w))                 # (no second attempt)
    spec = armature.cache_entries(cf)[0].specializations[0]
    assert not spec.is_compiled and "RuntimeError: no" in spec.failure


def test_specializations_across_a_graph_break_and_in_modules():
    """Each graph of the split frame (the module's forward, its resume
    function) has its own specializations of the marked size."""
    from armature.driver.explain import recording

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, x):
            y = self.lin(x).relu()
            armature.graph_break()
            return y.sum(0) * x.shape[0] + self.lin(x).mean()
    m = M()
    cm = armature.compile(m, backend="eager")
    with recording() as entries:
        for n in (3, 4, 4, 8, 5):
            x = torch.randn(n, 16)
            armature.mark_dynamic(x, 0, specialize_on=[lambda s: s == 4])
            same(m(x), cm(x))
    graphs = [e for e in entries if e.graph_module is not None]
    assert len(graphs) == 2 and not any(e.is_fallback for e in entries)
    for e in graphs:
        assert [(s.source, s.compiled_for) for s in e.specializations] == [("x.size()[0]", 4)]


def test_explain_lists_specializations():
    x = _marked(8, PREDS)
    out = armature.explain(_f)(x, torch.randn(64, 64))
    assert len(out.specializations) == 1 and len(out.specializations[0]) == 2
    text = str(out)
    assert "Specializations of graph 0" in text
    assert "lambda s: s == 8  (compiled for 8" in text and "s % 16 == 0  (not compiled yet)" in text


@pytest.mark.parametrize("bad", [
    lambda: armature.mark_dynamic(torch.randn(4), 0, specialize_on=lambda s: s == 4),
    lambda: armature.mark_dynamic(torch.randn(4), 0, specialize_on=[lambda s: s == 4, 4]),
    lambda: armature.mark_dynamic(torch.randn(4), 0, specialize_on="s == 4"),
])
def test_bad_specialize_on_is_a_type_error(bad):
    with pytest.raises(TypeError, match="specialize_on"):
        bad()


@pytest.mark.inductor
def test_inductor_specialized_graph():
    def f(x, w):
        h = torch.nn.functional.layer_norm(x, (64,))
        return torch.softmax(h @ w, -1)
    cf = armature.compile(f, backend="inductor")
    w = torch.randn(64, 64)
    for n in (10, 16, 16, 12):
        x = _marked(n, [lambda s: s == 16])
        torch.testing.assert_close(cf(x, w), f(x, w))
    assert compiles(cf) == 1
    spec = armature.cache_entries(cf)[0].specializations[0]
    assert spec.is_compiled and spec.compiled_for == 16 and spec.failure is None
