"""Unusual modules must not crash the compiler: overridden member iterators,
custom __getattr__ / __setattr__ / __call__, TorchScript modules.  Each is
compiled with fullgraph=False (must equal eager, graph-broken or not) and
with fullgraph=True (must equal eager, or refuse with armature.Unsupported)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

from helpers import USING_TORCH, armature_only, assert_equal, assert_same, compile_fn, t

import armature


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))


# --------------------------------------------------------------------------
# overridden member iterators
# --------------------------------------------------------------------------


class DictNamedBuffers(nn.Module):
    """named_buffers shadowed by a dict instance attribute."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("b", torch.ones(4))
        self.__dict__["named_buffers"] = {"z": torch.full((4,), 2.0)}

    def forward(self, x):
        return self.lin(x) + sum(v.sum() for v in self.named_buffers.values())


class PropertyParameters(nn.Module):
    """parameters replaced by a property returning a list."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    @property
    def parameters(self):
        return [self.lin.weight]

    def forward(self, x):
        return self.lin(x) * self.parameters[0].sum() + len(self.parameters)


class GeneratorNamedParameters(nn.Module):
    """named_parameters overridden by a generator function with an extra argument."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.full((1,), 1.5))

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True, only=None):
        for n, p in super().named_parameters(prefix, recurse, remove_duplicate):
            if only is None or only in n:
                yield n, p

    def forward(self, x):
        return self.lin(x) * sum(p.sum() for _, p in self.named_parameters(only="scale"))


class GeneratorParameters(nn.Module):
    """parameters overridden by a generator yielding derived tensors."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def parameters(self, recurse=True, factor=2.0):
        for p in super().parameters(recurse):
            yield p * factor

    def forward(self, x):
        return self.lin(x) + sum(p.sum() for p in self.parameters(factor=3.0))


class PlainNamedModules(nn.Module):
    """named_modules overridden by a plain function returning a list."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def named_modules(self, *args, **kwargs):
        return [("b", self.b)]

    def forward(self, x):
        for _, m in self.named_modules():
            x = m(x)
        return x + len(list(self.modules()))


class StaticBuffers(nn.Module):
    """buffers replaced by a staticmethod."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    @staticmethod
    def buffers(recurse=True):
        return iter([torch.ones(2)])

    def forward(self, x):
        return self.lin(x) + sum(b.sum() for b in self.buffers())


ODD_ITERATORS = [DictNamedBuffers, PropertyParameters, GeneratorNamedParameters, GeneratorParameters,
                 PlainNamedModules, StaticBuffers]


def _external_iter_use(m, x):
    """Code outside the module calling the (overridden) iterators."""
    total = x
    for name in ("parameters", "buffers"):
        attr = getattr(m, name)
        items = attr() if callable(attr) else attr
        for p in items:
            total = total + p.sum()
    return total


# --------------------------------------------------------------------------
# custom __getattr__ / __setattr__ / __call__
# --------------------------------------------------------------------------


class CustomGetattr(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def __getattr__(self, name):
        if name.startswith("dyn_"):
            return float(len(name))
        return super().__getattr__(name)

    def forward(self, x):
        return self.lin(x) * self.dyn_abc + self.lin.bias


class CustomSetattr(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.log = []

    def __setattr__(self, name, value):
        if "log" in self.__dict__:
            self.__dict__["log"].append(name)
        super().__setattr__(name, value)

    def forward(self, x):
        self.k = 2.0
        return self.lin(x) * self.k


class CustomCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def __call__(self, x):
        return super().__call__(x) * 2

    def forward(self, x):
        return self.lin(x)


class CallWithoutSuper(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def __call__(self, x, scale=3.0):
        return self.forward(x) * scale

    def forward(self, x):
        return self.lin(x)


class GetattrDelegates(nn.Module):
    """A wrapper delegating unknown attributes to an inner module."""

    def __init__(self):
        super().__init__()
        self.inner = Small()

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.inner, name)

    def forward(self, x):
        return self.inner(x) + self.lin.bias  # lin found on inner through __getattr__


class HasCustomChild(nn.Module):
    def __init__(self):
        super().__init__()
        self.child = CustomCall()
        self.g = CustomGetattr()

    def forward(self, x):
        return self.child(x) + self.g(x)


CUSTOM = [CustomGetattr, CustomSetattr, CustomCall, CallWithoutSuper, GetattrDelegates, HasCustomChild]


def _fresh(cls):
    torch.manual_seed(0)
    return cls()


def _check_direct(cls, fullgraph):
    m = _fresh(cls)
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=fullgraph)
    for i in range(2):
        x = t(3, 4)
        try:
            got = cm(x)
        except armature.Unsupported:
            if fullgraph and not USING_TORCH:
                return "unsupported"
            raise
        assert_equal(twin(x), got, f"out (call {i})")
        assert_equal(twin.state_dict(), m.state_dict())
        for k, v in twin.__dict__.items():
            if not k.startswith("_") and not isinstance(v, (nn.Module, torch.Tensor)):
                assert_equal(v, m.__dict__[k], f"attr {k}")
    return "compiled"


def _check_in_function(cls, fn, fullgraph):
    m = _fresh(cls)
    twin = copy.deepcopy(m)
    cf = compile_fn(fn, backend="eager", fullgraph=fullgraph)
    for i in range(2):
        x = t(3, 4)
        try:
            expected = fn(twin, x)
        except Exception as e:  # noqa: BLE001 - compiled must raise the same
            accepted = (type(e), armature.Unsupported) if fullgraph and not USING_TORCH else type(e)
            with pytest.raises(accepted):
                cf(m, x)
            continue
        try:
            got = cf(m, x)
        except armature.Unsupported:
            if fullgraph and not USING_TORCH:
                return "unsupported"
            raise
        assert_equal(expected, got, f"out (call {i})")


def _calls_module(m, x):
    return m(x) + 1


@pytest.mark.parametrize("fullgraph", [False, True], ids=["fallback", "fullgraph"])
@pytest.mark.parametrize("cls", ODD_ITERATORS + CUSTOM, ids=lambda c: c.__name__)
def test_module_compiled_directly(cls, fullgraph):
    _check_direct(cls, fullgraph)


@pytest.mark.parametrize("fullgraph", [False, True], ids=["fallback", "fullgraph"])
@pytest.mark.parametrize("cls", ODD_ITERATORS + CUSTOM, ids=lambda c: c.__name__)
def test_module_called_from_function(cls, fullgraph):
    _check_in_function(cls, _calls_module, fullgraph)


@pytest.mark.parametrize("fullgraph", [False, True], ids=["fallback", "fullgraph"])
@pytest.mark.parametrize("cls", ODD_ITERATORS, ids=lambda c: c.__name__)
def test_overridden_iterators_used_from_outside(cls, fullgraph):
    # DictNamedBuffers: eager itself raises (buffers() calls the dict); the
    # compiled function must raise the same error type
    _check_in_function(cls, _external_iter_use, fullgraph)


def test_callable_of_member_iterator_method():
    m = nn.Linear(4, 4)

    def f(x):
        return x + callable(m.parameters) + callable(m.named_buffers)

    assert_same(f, t(3))


def test_custom_getattr_read_from_function():
    def f(m, x):
        return m.lin(x) * m.dyn_xyz

    m = _fresh(CustomGetattr)
    assert_same(f, m, t(3, 4), fullgraph=False)


def test_custom_setattr_log_matches():
    m = _fresh(CustomSetattr)
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager")
    x = t(3, 4)
    for _ in range(2):
        assert_equal(twin(x), cm(x))
    assert m.log == twin.log == ["k", "k"]


# --------------------------------------------------------------------------
# TorchScript
# --------------------------------------------------------------------------


def _scripted():
    torch.manual_seed(0)
    return torch.jit.script(Small())


def _traced():
    torch.manual_seed(0)
    return torch.jit.trace(Small(), torch.randn(3, 4))


class HoldsScripted(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.s = torch.jit.script(Small())
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.s(self.lin(x)) * 2


SCRIPTS = [pytest.param(_scripted, id="script"), pytest.param(_traced, id="trace"),
           pytest.param(HoldsScripted, id="submodule")]


def _script_result(make, how, fullgraph):
    m = make()
    x = t(3, 4)
    expected = m(x) if how == "direct" else _calls_module(m, x)
    if how == "direct":
        c = compile_fn(m, backend="eager", fullgraph=fullgraph)
        call = lambda: c(x)  # noqa: E731
    else:
        c = compile_fn(_calls_module, backend="eager", fullgraph=fullgraph)
        call = lambda: c(m, x)  # noqa: E731
    for _ in range(2):
        try:
            got = call()
        except armature.Unsupported:
            assert fullgraph
            return
        assert_equal(expected, got)


@armature_only  # torch.compile refuses ScriptModules outright
@pytest.mark.parametrize("fullgraph", [False, True], ids=["fallback", "fullgraph"])
@pytest.mark.parametrize("how", ["direct", "in_function"])
@pytest.mark.parametrize("make", SCRIPTS)
def test_script_module(make, how, fullgraph):
    _script_result(make, how, fullgraph)


def test_script_module_fallback_keeps_graph_around_it():
    """Without fullgraph the code around a TorchScript call may still be
    compiled; the result must equal eager's."""
    s = _scripted()

    def f(x):
        y = x * 2 + 1
        y = s(y)
        return y.sum(-1)

    assert_same(f, t(3, 4), fullgraph=False, graphs=2)   # (it used to run all of f as Python)


# --------------------------------------------------------------------------
# what torch.compile captures in one graph and armature only via fallback
# --------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [
    CustomGetattr,
    GetattrDelegates,
    CustomSetattr,
    CustomCall,
    GeneratorParameters,
    GeneratorNamedParameters,
    CallWithoutSuper, DictNamedBuffers, PropertyParameters, PlainNamedModules, StaticBuffers,
], ids=lambda c: c.__name__)
def test_captured_in_one_graph(cls):
    assert _check_direct(cls, fullgraph=True) == "compiled"
