"""``armature.config.module_parameters``: "attributes" (default: parameters
and buffers are get_attr nodes, modules guarded by identity) vs "inputs"
(placeholders, modules guarded by type, one entry for every instance)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

from helpers import CountingBackend, armature_only, assert_equal, t

import armature

pytestmark = armature_only


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.bn = nn.BatchNorm1d(4)
        self.register_buffer("shift", torch.arange(4.0))

    def forward(self, x):
        return self.bn(self.norm(self.lin(x)) + self.shift)


def _make():
    torch.manual_seed(0)
    return Block()


def _param_nodes(gm):
    return [(n.op, n.target) for n in gm.graph.nodes if n.op in ("get_attr", "placeholder")]


def test_default_is_attributes():
    assert armature.config.module_parameters == "attributes"


def test_attributes_mode_uses_get_attr():
    m = _make().eval()
    counter = CountingBackend()
    with armature.config.patch(module_parameters="attributes"):
        cm = armature.compile(m, backend=counter, fullgraph=True)
        x = t(3, 4)
        assert_equal(m(x), cm(x))
    assert counter.frame_count == 1
    gm = counter.graphs[0]
    nodes = _param_nodes(gm)
    placeholders = [tgt for op, tgt in nodes if op == "placeholder"]
    attrs = [tgt for op, tgt in nodes if op == "get_attr"]
    assert len(placeholders) == 1  # only x
    # lin.weight, lin.bias, norm.weight, norm.bias, bn.weight, bn.bias, running_mean, running_var, shift
    assert len(attrs) == 9, nodes
    # the get_attr targets hold the very same tensor objects as the module
    held = {id(getattr(gm, a)) for a in attrs}
    assert {id(p) for p in m.parameters()} <= held
    assert id(m.shift) in held and id(m.bn.running_mean) in held
    assert counter.example_inputs[0][0].shape == (3, 4) and len(counter.example_inputs[0]) == 1


def test_inputs_mode_uses_placeholders():
    m = _make().eval()
    counter = CountingBackend()
    with armature.config.patch(module_parameters="inputs"):
        cm = armature.compile(m, backend=counter, fullgraph=True)
        x = t(3, 4)
        assert_equal(m(x), cm(x))
    gm = counter.graphs[0]
    nodes = _param_nodes(gm)
    assert all(op == "placeholder" for op, _ in nodes), nodes
    assert len(nodes) == 10
    ins = counter.example_inputs[0]
    assert any(i is m.lin.weight for i in ins) and any(i is m.bn.running_var for i in ins)


@pytest.mark.parametrize("mode", ["attributes", "inputs"])
def test_in_place_update_of_parameter_seen(mode):
    m = _make().eval()
    counter = CountingBackend()
    with armature.config.patch(module_parameters=mode):
        cm = armature.compile(m, backend=counter, fullgraph=True)
        x = t(3, 4)
        cm(x)
        with torch.no_grad():
            m.lin.weight.mul_(3)
            m.shift.add_(1)
        assert_equal(m(x), cm(x))
    assert counter.frame_count == 1


def test_attributes_mode_replacing_parameter_recompiles():
    m = _make().eval()
    counter = CountingBackend()
    with armature.config.patch(module_parameters="attributes"):
        cm = armature.compile(m, backend=counter, fullgraph=True)
        x = t(3, 4)
        assert_equal(m(x), cm(x))
        m.lin.weight = nn.Parameter(torch.randn(4, 4))
        assert_equal(m(x), cm(x))
        assert len(armature.cache_entries(cm)) == 2
        m.register_buffer("shift", torch.ones(4))
        assert_equal(m(x), cm(x))
        assert len(armature.cache_entries(cm)) == 3
        assert_equal(m(x), cm(x))
    assert counter.frame_count == 3


def test_inputs_mode_replacing_parameter_reuses_entry():
    m = _make().eval()
    counter = CountingBackend()
    with armature.config.patch(module_parameters="inputs"):
        cm = armature.compile(m, backend=counter, fullgraph=True)
        x = t(3, 4)
        assert_equal(m(x), cm(x))
        m.lin.weight = nn.Parameter(torch.randn(4, 4))
        assert_equal(m(x), cm(x))
        m.register_buffer("shift", torch.ones(4))
        assert_equal(m(x), cm(x))
        assert len(armature.cache_entries(cm)) == 1
    assert counter.frame_count == 1


@pytest.mark.parametrize("mode", ["attributes", "inputs"])
def test_replacing_parameter_with_other_shape_recompiles(mode):
    m = nn.Linear(4, 4)
    with armature.config.patch(module_parameters=mode):
        cm = armature.compile(m, backend="eager", fullgraph=True)
        x = t(3, 4)
        assert_equal(m(x), cm(x))
        m.weight = nn.Parameter(torch.randn(6, 4))
        m.bias = nn.Parameter(torch.randn(6))
        assert_equal(m(x), cm(x))
        assert len(armature.cache_entries(cm)) == 2


def _layer_fn(layer, x):
    return layer(x).relu() * 2


@pytest.mark.parametrize("mode,entries", [("inputs", 1), ("attributes", 2)])
def test_one_function_two_instances(mode, entries):
    torch.manual_seed(0)
    la, lb = nn.Linear(4, 4), nn.Linear(4, 4)
    counter = CountingBackend()
    with armature.config.patch(module_parameters=mode):
        cf = armature.compile(_layer_fn, backend=counter, fullgraph=True)
        x = t(3, 4)
        for layer in (la, lb, la, lb):
            assert_equal(_layer_fn(layer, x), cf(layer, x))
        assert len(armature.cache_entries(cf)) == entries
    assert counter.frame_count == entries


def test_inputs_mode_other_class_or_config_recompiles():
    class OtherLinear(nn.Linear):
        pass

    torch.manual_seed(0)
    la, lo = nn.Linear(4, 4), OtherLinear(4, 4)
    with armature.config.patch(module_parameters="inputs"):
        cf = armature.compile(_layer_fn, backend="eager", fullgraph=True)
        x = t(3, 4)
        assert_equal(_layer_fn(la, x), cf(la, x))
        assert_equal(_layer_fn(lo, x), cf(lo, x))  # a different class: its own entry
        assert len(armature.cache_entries(cf)) == 2
        lb = nn.Linear(4, 4, bias=False)  # same class, no bias: must not reuse blindly
        assert_equal(_layer_fn(lb, x), cf(lb, x))
        lc = nn.Linear(4, 6)  # same class, other shape
        assert_equal(_layer_fn(lc, x), cf(lc, x))


def test_inputs_mode_instances_with_different_attributes():
    class Scaled(nn.Module):
        def __init__(self, scale):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.scale = scale

        def forward(self, x):
            return self.lin(x) * self.scale

    torch.manual_seed(0)
    a, b = Scaled(2.0), Scaled(3.0)
    with armature.config.patch(module_parameters="inputs"):
        cf = armature.compile(_layer_fn, backend="eager", fullgraph=True)
        x = t(3, 4)
        for m in (a, b, a):
            assert_equal(_layer_fn(m, x), cf(m, x))
        b.eval()
        assert_equal(_layer_fn(b, x), cf(b, x))


def test_inputs_mode_stack_of_layers_one_entry():
    torch.manual_seed(0)
    layers = [nn.Sequential(nn.Linear(4, 4), nn.GELU()) for _ in range(4)]
    with armature.config.patch(module_parameters="inputs"):
        cf = armature.compile(_layer_fn, backend="eager", fullgraph=True)
        x = t(3, 4)
        y_e, y_c = x, x
        for layer in layers:  # detach: every call sees a tensor that does not require grad
            y_e = _layer_fn(layer, y_e).detach()
            y_c = cf(layer, y_c).detach()
        assert_equal(y_e, y_c)
        assert len(armature.cache_entries(cf)) == 1


# --------------------------------------------------------------------------
# training through both modes (aot_eager)
# --------------------------------------------------------------------------


@pytest.mark.aot_eager
@pytest.mark.parametrize("mode", ["attributes", "inputs"])
def test_module_gradients_aot_eager(mode):
    m = _make().train()
    twin = copy.deepcopy(m)
    with armature.config.patch(module_parameters=mode):
        cm = armature.compile(m, backend="aot_eager", fullgraph=True)
        for step in range(2):
            x = t(5, 4)
            xc = x.clone().requires_grad_(True)
            xe = x.clone().requires_grad_(True)
            cm(xc).pow(2).sum().backward()
            twin(xe).pow(2).sum().backward()
            for (n, p), (_, q) in zip(m.named_parameters(), twin.named_parameters()):
                assert_equal(q.grad, p.grad, f"{n}.grad (step {step})", rtol=1e-4, atol=1e-5)
            assert_equal(xe.grad, xc.grad, rtol=1e-4, atol=1e-5)
            assert_equal(twin.bn.running_mean, m.bn.running_mean, rtol=1e-4, atol=1e-5)
            assert_equal(twin.bn.num_batches_tracked, m.bn.num_batches_tracked)
            # an SGD step, the same on both
            with torch.no_grad():
                for p, q in zip(m.parameters(), twin.parameters()):
                    p -= 0.1 * p.grad
                    q -= 0.1 * q.grad
                    p.grad = None
                    q.grad = None
        assert len(armature.cache_entries(cm)) == 1


@pytest.mark.aot_eager
@pytest.mark.parametrize("mode,entries", [("inputs", 1), ("attributes", 2)])
def test_two_instances_gradients_aot_eager(mode, entries):
    torch.manual_seed(0)
    la, lb = nn.Linear(4, 4), nn.Linear(4, 4)
    ea, eb = copy.deepcopy(la), copy.deepcopy(lb)
    with armature.config.patch(module_parameters=mode):
        cf = armature.compile(_layer_fn, backend="aot_eager", fullgraph=True)
        x = t(3, 4)
        cf(la, x).sum().backward()
        cf(lb, x).sum().backward()
        _layer_fn(ea, x).sum().backward()
        _layer_fn(eb, x).sum().backward()
        for c, e in ((la, ea), (lb, eb)):
            assert_equal(e.weight.grad, c.weight.grad, rtol=1e-4, atol=1e-5)
            assert_equal(e.bias.grad, c.bias.grad, rtol=1e-4, atol=1e-5)
        assert len(armature.cache_entries(cf)) == entries


@pytest.mark.aot_eager
def test_frozen_parameters_aot_eager():
    m = _make().train()
    m.lin.weight.requires_grad_(False)
    twin = copy.deepcopy(m)
    for mode in ("attributes", "inputs"):
        armature.reset()
        with armature.config.patch(module_parameters=mode):
            for p in list(m.parameters()) + list(twin.parameters()):
                p.grad = None
            cm = armature.compile(m, backend="aot_eager", fullgraph=True)
            x = t(5, 4)
            cm(x).sum().backward()
            twin(x).sum().backward()
            assert m.lin.weight.grad is None
            for p, q in zip(m.parameters(), twin.parameters()):
                assert_equal(q.grad, p.grad, rtol=1e-4, atol=1e-5)
