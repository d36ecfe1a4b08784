"""nn.Module instances compiled directly (Linear, LayerNorm, Sequential,
small custom modules).  assert_same deep-copies the module for the eager and
compiled runs and compares the module state afterwards."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from helpers import CASE_ARGS, assert_same, case, compile_fn, t, ti

torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self, d_in=4, d_hidden=8, d_out=3):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ScaledResidual(nn.Module):
    def __init__(self, d=4):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.proj = nn.Linear(d, d, bias=False)
        self.scale = 0.5

    def forward(self, x):
        return x + self.scale * self.proj(self.norm(x))


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("shift", torch.arange(4.0))
        self.weight = nn.Parameter(torch.ones(4) * 2)

    def forward(self, x):
        return x * self.weight + self.shift


class KwargsForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, bias=None, scale=1.0):
        y = self.lin(x) * scale
        if bias is not None:
            y = y + bias
        return y


class MultiOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 6)

    def forward(self, x):
        h = self.lin(x)
        a, b = h.chunk(2, dim=-1)
        return {"a": a, "b": b, "n": h.shape[-1]}


class TrainingFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if self.training:
            return self.lin(x) * 2
        return self.lin(x)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        return self.head(self.pool(F.relu(self.conv(x))).flatten(1))


class EmbedHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.norm = nn.LayerNorm(4)
        self.drop = nn.Dropout(0.5)

    def forward(self, idx):
        return self.drop(self.norm(self.emb(idx))).mean(1)


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(4, 4), nn.GELU())
        self.mlp = MLP(4, 8, 4)

    def forward(self, x):
        return self.mlp(self.block(x)) + x


class InplaceInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        x.mul_(2)
        return self.lin(x)


class UsesParamAttrs(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return x @ self.lin.weight.T + self.lin.bias, self.lin.weight.shape, self.lin.out_features


def eval_mode(m):
    return m.eval()


CASES = [
    case(nn.Linear(4, 3), t(2, 4), id="linear"),
    case(nn.Linear(4, 3, bias=False), t(5, 2, 4), id="linear_no_bias_3d"),
    case(nn.LayerNorm(4), t(2, 3, 4), id="layer_norm"),
    case(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), t(3, 4), id="sequential"),
    case(nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.LayerNorm(4), nn.Linear(4, 1)), t(3, 4), id="sequential_norm"),
    case(MLP(), t(2, 4), id="mlp"),
    case(ScaledResidual(), t(2, 3, 4), id="scaled_residual"),
    case(WithBuffer(), t(3, 4), id="with_buffer"),
    case(KwargsForward(), t(2, 4), id="kwargs_forward_default"),
    case(KwargsForward(), t(2, 4), bias=t(4), scale=3.0, id="kwargs_forward_kwargs"),
    case(MultiOutput(), t(2, 4), id="multi_output_dict"),
    case(TrainingFlag(), t(2, 4), id="training_flag_train"),
    case(eval_mode(TrainingFlag()), t(2, 4), id="training_flag_eval"),
    case(ConvNet(), t(2, 2, 5, 5), id="convnet"),
    case(eval_mode(EmbedHead()), ti(2, 3, high=10), id="embed_head_eval"),
    case(Nested(), t(2, 4), id="nested_modules"),
    case(InplaceInput(), t(2, 4), id="inplace_input"),
    case(UsesParamAttrs(), t(2, 4), id="param_attrs"),
    case(nn.GELU(), t(3, 4), id="gelu_module"),
    case(eval_mode(nn.Dropout(0.3)), t(3, 4), id="dropout_eval_module"),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_modules(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(MLP(), t(2, 4), id="mlp"),
    case(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), t(3, 4), id="sequential"),
    case(ConvNet(), t(2, 2, 5, 5), id="convnet"),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_modules_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


GRAD_CASES = [
    case(MLP(), t(2, 4), id="mlp"),
    case(ScaledResidual(), t(2, 3, 4, requires_grad=True), id="scaled_residual_input_grad"),
    case(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)), t(3, 4), id="sequential"),
]


@pytest.mark.parametrize("backend", ["eager", pytest.param("aot_eager", marks=pytest.mark.aot_eager)])
@pytest.mark.parametrize(CASE_ARGS, GRAD_CASES)
def test_module_grads(fn, args, opts, backend):
    assert_same(fn, *args, backend=backend, graphs=1, check_grad=True, **opts)


def test_module_under_no_grad():
    with torch.no_grad():
        assert_same(MLP(), t(2, 4), graphs=1)


def test_compiled_module_sees_parameter_update():
    # parameters are read at call time, not baked in as constants
    m = MLP()
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(2, 4)
    torch.testing.assert_close(cm(x), m(x))
    with torch.no_grad():
        m.fc1.weight.mul_(-1)
        m.fc2.bias.add_(1)
    torch.testing.assert_close(cm(x), m(x))


def test_module_attribute_change_between_calls():
    m = ScaledResidual()
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(2, 3, 4)
    torch.testing.assert_close(cm(x), m(x))
    m.scale = 1.5
    torch.testing.assert_close(cm(x), m(x))


def test_module_train_eval_switch_between_calls():
    m = TrainingFlag()
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(2, 4)
    torch.testing.assert_close(cm(x), m(x))
    m.eval()
    torch.testing.assert_close(cm(x), m(x))
    m.train()
    torch.testing.assert_close(cm(x), m(x))


def test_submodule_replaced_between_calls():
    m = MLP()
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(2, 4)
    torch.testing.assert_close(cm(x), m(x))
    m.fc2 = nn.Linear(8, 3)
    torch.testing.assert_close(cm(x), m(x))


def test_module_input_shape_change():
    m = MLP()
    cm = compile_fn(m, backend="eager", fullgraph=True)
    for x in (t(2, 4), t(5, 4), t(3, 2, 4)):
        torch.testing.assert_close(cm(x), m(x))
