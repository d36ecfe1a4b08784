"""armature.patch_torch_compile in process: what is routed, how torch's
arguments are mapped, and that everything is put back."""
from __future__ import annotations

import torch
import torch._dynamo

import armature
from armature.diagnostics import record


def _compiled_by_armature(obj) -> bool:
    return isinstance(obj, (armature.CompiledFunction, armature.CompiledModule))


def test_routes_and_restores():
    originals = (torch.compile, torch._dynamo.optimize, torch._dynamo.mark_dynamic, torch.compiler.set_stance,
                 torch._dynamo.graph_break, torch.compiler.disable)
    with armature.patch_torch_compile(backend="eager", record_run=False):
        assert torch._dynamo.graph_break is armature.graph_break     # what the tracer recognises
        assert torch.compiler.set_stance is armature.set_stance
        assert torch._dynamo.allow_in_graph is armature.allow_in_graph

        @torch.compile                       # bare decorator
        def f(x):
            return x.cos() + 1

        g = torch._dynamo.optimize("eager", nopython=True)(lambda x: x * 3)
        m = torch.compile(torch.nn.Linear(2, 2))
        assert _compiled_by_armature(f) and _compiled_by_armature(g) and _compiled_by_armature(m)
        x = torch.randn(4)
        assert torch.allclose(f(x), x.cos() + 1) and torch.equal(g(x), x * 3)
        assert len(armature.cache_entries(f)) == 1
        torch._dynamo.reset()
        assert armature.cache_entries(f) == []
    assert (torch.compile, torch._dynamo.optimize, torch._dynamo.mark_dynamic, torch.compiler.set_stance,
            torch._dynamo.graph_break, torch.compiler.disable) == originals


def test_unknown_arguments_are_reported_not_fatal(capsys):
    record.clear()
    try:
        with armature.patch_torch_compile():
            f = torch.compile(lambda x: x + 1, backend="cudagraphs", mode="bogus", options={"no": 1},
                              recompile_limit=3, name="f", dynamic="yes")
            assert torch.equal(f(torch.ones(2)), torch.full((2,), 2.0))
            torch.compile(lambda x: x, backend="eager", options={"trace.enabled": True})
        notes = record.current().notes
    finally:
        record.clear()
    err = capsys.readouterr().err
    for text in ("backend 'cudagraphs' is not an armature backend", "mode='bogus'",
                 "torch.compile(recompile_limit=...) has no armature counterpart",
                 "torch.compile(name=...)", "dynamic='yes'", "options={'trace.enabled': True} ignored"):
        assert any(text in n for n in notes), (text, notes)
        assert text in err
    assert err.count("torch.compile(name=...)") == 1 or "name=" in err   # reported once per process


def test_disable_and_mark_dynamic_take_torch_signatures():
    with armature.patch_torch_compile(backend="eager", record_run=False):
        helper = torch.compiler.disable(lambda t: t.sum().item(), recursive=False, reason="logging")

        def f(x):
            return x * helper(x)

        cf = torch.compile(f)
        x = torch.randn(5, 3)
        torch._dynamo.mark_dynamic(x, 0, min=2, max=64)
        assert torch.allclose(cf(x), f(x))
        out = armature.explain(f)(x)
        assert out.graph_break_count == 1 and "marked armature.disable" in out.break_reasons[0].reason
        assert "hint:" in str(out)


def test_optimized_module_checks_and_orig_mod():
    from torch._dynamo.eval_frame import OptimizedModule as real
    net = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
    torch_compiled = torch.compile(net, backend="eager")
    with armature.patch_torch_compile(backend="eager", record_run=False):
        stand_in = torch._dynamo.eval_frame.OptimizedModule
        assert torch._dynamo.OptimizedModule is stand_in and stand_in is not real
        m = torch.compile(net)
        assert isinstance(m, armature.CompiledModule)
        assert isinstance(m, torch._dynamo.eval_frame.OptimizedModule)
        assert isinstance(torch_compiled, stand_in)           # torch's own still pass
        assert issubclass(type(m), stand_in) and issubclass(real, stand_in)
        assert not isinstance(net, stand_in) and not issubclass(torch.nn.Linear, stand_in)
        assert m._orig_mod is net
        x = torch.randn(4, 3)
        assert torch.equal(m(x), net(x))
    assert torch._dynamo.eval_frame.OptimizedModule is real and torch._dynamo.OptimizedModule is real
    assert not isinstance(m, real)


def test_orig_mod_given_back_or_swapped():
    torch.manual_seed(0)
    net, other = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    m = armature.compile(net, backend="eager")
    x = torch.randn(4, 3)
    m._orig_mod = net                      # accelerate's extract_model_from_parallel: the same module back
    assert m._orig_mod is net and "_orig_mod" not in net._modules
    assert list(m.state_dict()) == ["weight", "bias"] and torch.equal(m(x), net(x))
    m._orig_mod = other                    # as torch.compile: attributes and state follow, calls do not
    assert m._orig_mod is other and m.weight is other.weight
    assert all(a is b for a, b in zip(m.state_dict(keep_vars=True).values(), other.parameters()))
    assert torch.equal(m(x), net(x))
    t = torch.compile(torch.nn.Linear(3, 2), backend="eager")
    first = t._orig_mod
    t._orig_mod = other
    assert torch.equal(t(x), first(x)) and t.weight is other.weight   # (torch.compile's behaviour)
    torch._dynamo.reset()
