"""A graph break inside a loop over modules (driver/native_frames.py): the
looping frame runs as Python with its calls routed to compiled callees, one
graph serving every layer of a class, as torch.compile does (LayerDrop in
Whisper's and BART's layer loops)."""
import sys
import warnings

import pytest
import torch
from torch import nn

import armature
from armature.codegen.routed_calls import route_calls

from helpers import CountingBackend, reset


class Layer(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x, scale=1.0):
        return self.norm(torch.relu(self.lin(x))) * scale + x


class LayerDropEncoder(nn.Module):
    def __init__(self, n, p=0.3):
        super().__init__()
        self.layers = nn.ModuleList([Layer() for _ in range(n)])
        self.head = nn.Linear(8, 8)
        self.p = p
        self.dropped = []

    def forward(self, x):
        x = self.head(x) * 2
        for i, layer in enumerate(self.layers):
            if self.training and torch.rand([]) < self.p:   # data-dependent: a break inside the loop
                self.dropped.append(i)                        # a side effect of the native loop
                continue
            x = layer(x, scale=0.5 if i % 2 else 1.0)
        return x.sum(-1)


class Top(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.enc = LayerDropEncoder(n)
        self.out = nn.Linear(8, 8)

    def forward(self, x):
        y = self.enc(x)
        return self.out(x) + y[..., None]


def _torch_graphs(model, x):
    torch._dynamo.reset()
    try:
        return torch._dynamo.explain(model)(x).graph_count
    finally:
        torch._dynamo.reset()


def _run_calls(model, compiled, x, seeds=range(4)):
    """Compiled against eager over calls whose random draws drop different
    layers (the same seed for both)."""
    for seed in seeds:
        model.enc.dropped.clear()
        torch.manual_seed(seed)
        expected, dropped = model(x), list(model.enc.dropped)
        model.enc.dropped.clear()
        torch.manual_seed(seed)
        got = compiled(x)
        torch.testing.assert_close(got, expected)
        assert model.enc.dropped == dropped   # the same layers dropped, the side effect replayed


def _torch_compile_graphs(model, x):
    """torch.compile's graph count over the same calls (the oracle)."""
    torch._dynamo.reset()
    try:
        counting = CountingBackend("eager")
        _run_calls(model, torch.compile(model, backend=counting), x)
        return counting.frame_count
    finally:
        torch._dynamo.reset()


@pytest.mark.parametrize("n", [2, 12])
def test_layerdrop_one_graph_per_layer_class(n):
    reset()
    torch.manual_seed(0)
    model = Top(n).train()
    x = torch.randn(2, 8)
    expected_graphs = _torch_compile_graphs(model, x)
    counting = CountingBackend("eager")
    compiled = armature.compile(model, backend=counting)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _run_calls(model, compiled, x)
    assert not [w for w in caught if "recompile limit" in str(w.message)]
    # the layers share their graphs: the count does not grow with the depth
    # (the layer's graph with scale 1.0, then with scale a dynamic float; the caller's)
    assert counting.frame_count <= expected_graphs
    assert counting.frame_count <= 3


def test_layerdrop_reason_names_the_policy():
    reset()
    model = Top(3).train()
    report = armature.explain(model)(torch.randn(2, 8))
    assert not report.fallbacks
    assert any("inside a loop over modules" in r.reason for r in report.break_reasons), report.break_reasons


def test_eval_mode_compiles_the_loop_whole():
    """The native entry is guarded on what the trace read (self.training):
    in eval mode nothing breaks and the frame is one graph again."""
    reset()
    torch.manual_seed(0)
    model = Top(3)
    counting = CountingBackend("eager")
    compiled = armature.compile(model, backend=counting)
    x = torch.randn(2, 8)
    model.train()
    torch.manual_seed(1)
    expected = model(x)
    torch.manual_seed(1)
    torch.testing.assert_close(compiled(x), expected)
    before = counting.frame_count
    model.eval()
    torch.testing.assert_close(compiled(x), model(x))
    assert counting.frame_count == before + 1


def test_parameter_updates_are_seen():
    """The layers' parameters are inputs of the shared graph: an in-place
    update (an optimizer step) is read on the next call."""
    reset()
    torch.manual_seed(0)
    model = Top(3).train()
    model.enc.p = 0.0
    compiled = armature.compile(model, backend="eager")
    x = torch.randn(2, 8)
    torch.testing.assert_close(compiled(x), model(x))
    with torch.no_grad():
        for layer in model.enc.layers:
            layer.lin.weight.mul_(2.0)
    torch.testing.assert_close(compiled(x), model(x))


def test_layers_of_another_shape_get_their_own_graph():
    reset()

    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Layer(8), Layer(8), nn.Linear(8, 4), Layer(4), Layer(4)])

        def forward(self, x):
            for layer in self.layers:
                if x.sum() > 1e9:       # a data-dependent break that is never taken
                    x = x * 0
                x = layer(x)
            return x

    model = Mixed()
    counting = CountingBackend("eager")
    compiled = armature.compile(model, backend=counting)
    x = torch.randn(2, 8)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
        # Layer(8), then Layer(4) recompiles once with its width dynamic, and
        # that graph serves both (nn.Linear is torch's own module: it runs as
        # it is, like torch.compile)
        assert counting.frame_count == 2
        torch.testing.assert_close(compiled(x), model(x))
        assert counting.frame_count == 2


def test_training_gradients_flow_through_shared_graph():
    reset()
    torch.manual_seed(0)
    eager = Top(3).train()
    model = Top(3).train()
    model.load_state_dict(eager.state_dict())
    compiled = armature.compile(model, backend="aot_eager")
    x = torch.randn(2, 8)
    torch.manual_seed(5)
    eager(x).sum().backward()
    torch.manual_seed(5)
    compiled(x).sum().backward()
    for (name, a), b in zip(eager.named_parameters(), model.parameters()):
        if a.grad is None:
            assert b.grad is None, name
        else:
            torch.testing.assert_close(b.grad, a.grad, msg=name)


# --- the call-site rewrite (codegen/routed_calls.py) ----------------------------


class _Recorder:
    def __init__(self):
        self.seen = []

    def call(self, f, args):
        self.seen.append(getattr(f, "__name__", type(f).__name__))
        return f(*args)

    def call_kw(self, f, args, kwnames=None):
        if kwnames is None:
            kwnames, args = args[-1], args[:-1]
        self.seen.append(getattr(f, "__name__", type(f).__name__))
        k = len(kwnames)
        return f(*args[:len(args) - k], **dict(zip(kwnames, args[len(args) - k:])))


def _helper(a, b=0, *, k=1):
    return a + b * k


class _Base:
    def method(self, v, w=1):
        return v * w


class _Child(_Base):
    def method(self, v, w=1):
        return super().method(v, w=w) + 1


def _sample(obj, xs, flag):
    out = []
    for x in xs:
        out.append(_helper(x))
        out.append(_helper(x, 2, k=3))
        out.append(obj.method(x))
        out.append(obj.method(x, w=(2 if flag else 3)))
        out.append(_helper(_helper(x), b=len(xs)))
        out.append(_helper(x if flag else -x, k=2 if flag else 4))
    out.append(sorted(locals()))      # looks at the frame: never routed
    return out


def _routed(fn, recorder):
    import types
    code = route_calls(fn.__code__, recorder.call, recorder.call_kw)
    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


@pytest.mark.parametrize("flag", [True, False])
def test_rewritten_calls_behave_as_the_original(flag):
    rec = _Recorder()
    routed = _routed(_sample, rec)
    assert routed(_Child(), [1, 2, 3], flag) == _sample(_Child(), [1, 2, 3], flag)
    # every call of the loop body went through the router, locals() did not
    assert rec.seen.count("_helper") == 3 * 5 and rec.seen.count("method") == 3 * 2
    assert "locals" not in rec.seen


def test_zero_argument_super_is_left_in_place():
    rec = _Recorder()
    method = _routed(_Child.method, rec)
    assert method(_Child(), 3, w=2) == _Child().method(3, w=2)
    assert "super" not in rec.seen


def test_exceptions_pass_through_routed_calls():
    def boom(x):
        raise ValueError(x)

    def f(x):
        try:
            boom(x)
        except ValueError as e:
            return ("caught", e.args)
        return None

    rec = _Recorder()
    assert _routed(f, rec)(3) == ("caught", (3,))
    assert rec.seen == ["boom"]


@pytest.mark.skipif(sys.version_info[:2] not in ((3, 11), (3, 12), (3, 13)),
                    reason="routing is written for 3.11, 3.12 and 3.13")
def test_routing_covers_this_python():
    rec = _Recorder()
    _routed(_sample, rec)(_Child(), [1], True)
    assert rec.seen


def _double(x):
    return x * 2


def test_marked_functions_are_called_as_they_are():
    """A function marked disallow_in_graph (or armature.disable) that the
    native loop calls runs as plain Python: the router does not compile it."""
    reset()
    armature.disallow_in_graph(_double)
    try:
        layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

        def f(x):
            for layer in layers:
                if x.sum() > 1e9:
                    x = -x
                x = _double(layer(x))
            return x

        counting = CountingBackend("eager")
        x = torch.randn(2, 4)
        torch.testing.assert_close(armature.compile(f, backend=counting)(x), f(x))
        assert counting.frame_count == 0   # nn.Linear runs as it is; _double is not compiled
    finally:
        armature.disallow_in_graph(_double, enable=False)
