"""torch.nn modules created inside the compiled frame (``nn.ReLU()(x)`` in a
forward, as DistilBERT's classification head does), compiled vs eager.

torch.nn's own classes built from constants are modelled: one graph, and a
module that escapes (returned, stored on self) is a fresh object per call
with eager's state, the same object wherever it is referenced.  Modules with
parameters are built by the transformed function on every call
(tests/modules/test_fresh_modules.py has their differential tests); one
built after the same graph drew random numbers is a graph break that runs
the constructor as Python.  User classes: tests/modules/test_user_modules_in_frame.py.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from helpers import armature_only, assert_same, compile_fn, t

import armature


def relu_module_call(x):
    return nn.ReLU()(x) * 2


def modules_with_arguments(x):
    y = nn.GELU(approximate="tanh")(x)
    y = nn.Softmax(dim=-1)(y)
    y = nn.LeakyReLU(0.2, inplace=False)(y - 0.5)
    return nn.Flatten(0)(y), nn.Dropout(p=0.0)(x)


def module_attributes_read(x):
    m = nn.GELU(approximate="tanh")
    s = nn.Softmax(dim=1)
    return x * (m.approximate == "tanh"), s.dim, m.training, isinstance(m, nn.Module), type(s) is nn.Softmax


def module_escapes(x):
    m = nn.Tanh()
    return m(x), m, m


def module_in_container(x):
    acts = {"relu": nn.ReLU(), "tanh": nn.Tanh()}
    return acts["relu"](x) + acts["tanh"](x), acts


def module_from_symbolic_number(x, p):
    # p arrives as a number that changes between calls: specialised (guarded)
    return nn.Hardtanh(-p, p)(x)


class ClassifierHead(nn.Module):
    """DistilBertForSequenceClassification.forward's pattern."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.pre = nn.Linear(4, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        pooled = self.pre(x)
        pooled = nn.ReLU()(pooled)
        return self.out(pooled)


class StoresActivation(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.act = nn.SiLU()  # registered as a submodule, replaced on every call
        return self.act(self.lin(x))


X = t(3, 4)


@pytest.mark.parametrize("fn,args", [
    (relu_module_call, (X,)),
    (modules_with_arguments, (X,)),
    (module_attributes_read, (X,)),
    (module_in_container, (X,)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_module_created_in_frame(fn, args):
    assert_same(fn, *args, graphs=1)


@pytest.mark.parametrize("make", [ClassifierHead, StoresActivation], ids=lambda c: c.__name__)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_module_created_in_forward(make, backend):
    assert_same(make(), X, backend=backend, graphs=1)


def test_escaping_module_is_new_per_call_and_one_object():
    compiled = compile_fn(module_escapes, backend="eager", fullgraph=True)
    first = compiled(X)
    second = compiled(X)
    for out in (first, second):
        torch.testing.assert_close(out[0], torch.tanh(X))
        assert type(out[1]) is nn.Tanh and out[1] is out[2]
        assert out[1].training
    assert first[1] is not second[1]


def test_module_stored_on_self_is_registered():
    eager, model = StoresActivation(), StoresActivation()
    compiled = compile_fn(model, backend="eager", fullgraph=True)
    for _ in range(2):
        before = model._modules.get("act")
        torch.testing.assert_close(compiled(X), eager(X))
        assert type(model._modules["act"]) is nn.SiLU
        assert model._modules["act"] is not before
    assert list(model._modules) == list(eager._modules)


@armature_only
def test_changing_constructor_argument_recompiles():
    compiled = armature.compile(module_from_symbolic_number, backend="eager", fullgraph=True)
    for p in (0.5, 0.5, 0.25):
        torch.testing.assert_close(compiled(X, p), module_from_symbolic_number(X, p))
    assert len(armature.cache_entries(compiled)) == 2


def bad_constructor_argument(x):
    return nn.Dropout(p=2.0)(x)


def module_with_parameters(x):
    lin = nn.Linear(4, 4, bias=False)  # built by the setup, before the graph
    return x + lin.weight.shape[0]


def module_after_random_draw(x):
    noise = torch.randn(4)   # drawn in the graph: the constructor would draw after it
    return nn.Linear(4, 4)(x + noise)


class UserActivation(nn.Module):
    def forward(self, x):
        return x * 3


def user_module_class(x):
    return UserActivation()(x)


@pytest.mark.parametrize("fn", [module_with_parameters, user_module_class], ids=lambda f: f.__name__)
def test_construction_matches_eager(fn):
    assert_same(fn, X, fullgraph=False)


def test_construction_after_random_draw_breaks_and_matches_eager():
    # eager's random numbers, call after call (same seeds as eager's run);
    # torch.compile also breaks here
    from python_semantics.identity_support import check_against_oracle
    check_against_oracle(module_after_random_draw, lambda: (torch.randn(3, 4),), fullgraph_ok=False)


@armature_only
@pytest.mark.parametrize("fn,what", [(module_after_random_draw, "after random numbers were drawn")],
                         ids=["after_random_draw"])
def test_unmodelled_construction_names_the_reason(fn, what):
    compiled = armature.compile(fn, backend="eager", fullgraph=True)
    with pytest.raises(armature.Unsupported, match="creating the module") as info:
        compiled(X)
    assert what in str(info.value)


@armature_only
def test_user_class_is_one_graph():
    # (its constructor is audited: tests/modules/test_user_modules_in_frame.py)
    compiled = armature.compile(user_module_class, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(X), user_module_class(X))


def test_constructor_error_raised_like_eager():
    assert_same(bad_constructor_argument, X, fullgraph=False, exc_match="exact")
