"""Methods assigned on module instances: ``forward`` (and other methods)
patched before compiling, after compiling, inside the compiled frame, and
deleted again."""

from __future__ import annotations

import copy
import types

import pytest
import torch
import torch.nn as nn

from helpers import CountingBackend, armature_only, assert_equal, compile_fn, t

import armature


def n_entries(c):
    return len(armature.cache_entries(c))


class WithHelper(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)

    def act(self, y):
        return torch.relu(y)

    def forward(self, x):
        return self.act(self.lin(x))


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.sub = nn.Linear(4, 4)
        self.other = WithHelper()

    def forward(self, x):
        return self.sub(x) + self.other(x)


# --------------------------------------------------------------------------
# forward patched outside the compiled frame
# --------------------------------------------------------------------------


def test_forward_patched_before_compiling_plain_function():
    m = nn.Linear(4, 4)
    m.forward = lambda x: x * 3 + 1
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(x * 3 + 1, cm(x))
    assert_equal(m(x), cm(x))


def test_forward_patched_before_compiling_bound_method():
    m = nn.Linear(4, 4)
    m.forward = types.MethodType(lambda self, x: nn.functional.linear(x, self.weight) * 2, m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(m(x), cm(x))
    assert_equal(x @ m.weight.T * 2, cm(x))


def test_forward_patched_on_submodule_before_compiling():
    m = Outer()
    twin = copy.deepcopy(m)
    for mod in (m, twin):
        mod.sub.forward = lambda x: x - 1
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))


def test_forward_patched_after_compiling_recompiles():
    m = nn.Linear(4, 4)
    counter = CountingBackend()
    cm = compile_fn(m, backend=counter, fullgraph=True)
    x = t(3, 4)
    assert_equal(nn.Linear.forward(m, x), cm(x))
    m.forward = lambda x: x * 5
    assert_equal(x * 5, cm(x))
    m.forward = lambda x: x * 7  # another function object
    assert_equal(x * 7, cm(x))
    del m.forward
    assert_equal(nn.Linear.forward(m, x), cm(x))
    assert counter.frame_count == 3


@armature_only
def test_forward_patched_after_compiling_entries():
    m = nn.Linear(4, 4)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    cm(x)
    assert n_entries(cm) == 1
    m.forward = lambda x: x * 5
    assert_equal(x * 5, cm(x))
    assert n_entries(cm) == 2
    del m.forward
    assert_equal(nn.Linear.forward(m, x), cm(x))
    assert n_entries(cm) == 2


def test_submodule_forward_patched_after_compiling():
    m = Outer()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))
    m.other.forward = lambda x: x * 0
    twin.other.forward = lambda x: x * 0
    assert_equal(twin(x), cm(x))
    del m.other.forward
    del twin.other.forward
    assert_equal(twin(x), cm(x))


def test_forward_patched_on_argument_module():
    def f(m, x):
        return m(x) + 1

    m = nn.Linear(4, 4)
    cf = compile_fn(f, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(f(m, x), cf(m, x))
    m.forward = lambda x: x * 9
    assert_equal(x * 9 + 1, cf(m, x))


# --------------------------------------------------------------------------
# forward assigned inside the compiled frame
# --------------------------------------------------------------------------


class PatchSubInFrame(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.sub = nn.Linear(4, 4)

    def forward(self, x):
        a = self.sub(x)
        self.sub.forward = lambda y: y * 5
        return a + self.sub(x)


@pytest.mark.parametrize("fullgraph", [True, False])
def test_forward_assigned_in_frame_on_submodule(fullgraph):
    m = PatchSubInFrame()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=fullgraph)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))
    # persists on the instance after the call
    assert "forward" in m.sub.__dict__
    assert_equal(x * 5, m.sub(x))
    # and the second call (the patched forward is already there) agrees too
    assert_equal(twin(x), cm(x))


def _patch_arg(m, x):
    m.forward = lambda y: y - 1
    return m(x)


@pytest.mark.parametrize("fullgraph", [True, False])
def test_forward_assigned_in_frame_on_argument(fullgraph):
    m = nn.Linear(4, 4)
    cf = compile_fn(_patch_arg, backend="eager", fullgraph=fullgraph)
    x = t(3, 4)
    assert_equal(x - 1, cf(m, x))
    assert "forward" in m.__dict__
    assert_equal(x - 1, m(x))
    m2 = nn.Linear(4, 4)
    assert_equal(x - 1, cf(m2, x))
    assert_equal(x - 1, m2(x))


def _patch_with_closure(m, x, k):
    def fwd(y):
        return y * k

    m.forward = fwd
    return m(x), m(x + 1)


def test_forward_assigned_in_frame_closure_over_local():
    m = nn.Linear(4, 4)
    cf = compile_fn(_patch_with_closure, backend="eager", fullgraph=True)
    x = t(3, 4)
    a, b = cf(m, x, 3.0)
    assert_equal(x * 3.0, a)
    assert_equal((x + 1) * 3.0, b)
    assert_equal(x * 3.0, m(x))  # the closure escaped with its cell


def _del_forward(m, x):
    a = m(x)
    del m.forward
    return a, m(x)


@pytest.mark.parametrize("fullgraph", [True, False])
def test_del_forward_in_frame_restores_class_forward(fullgraph):
    m = nn.Linear(4, 4)
    m.forward = lambda y: y * 7
    cf = compile_fn(_del_forward, backend="eager", fullgraph=fullgraph)
    x = t(3, 4)
    a, b = cf(m, x)
    assert_equal(x * 7, a)
    assert_equal(nn.Linear.forward(m, x), b)
    assert "forward" not in m.__dict__
    assert_equal(nn.Linear.forward(m, x), m(x))


class PatchAndRestore(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.sub = nn.Linear(4, 4)

    def forward(self, x):
        self.sub.forward = lambda y: y * 0 + 2
        a = self.sub(x)
        del self.sub.forward
        return a + self.sub(x)


def test_patch_and_delete_in_same_frame():
    m = PatchAndRestore()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    for _ in range(2):
        assert_equal(twin(x), cm(x))
    assert "forward" not in m.sub.__dict__


# --------------------------------------------------------------------------
# methods other than forward
# --------------------------------------------------------------------------


def test_helper_method_patched_before_and_after_compiling():
    m = WithHelper()
    m.act = lambda y: torch.tanh(y)
    counter = CountingBackend()
    cm = compile_fn(m, backend=counter, fullgraph=True)
    x = t(3, 4)
    assert_equal(torch.tanh(m.lin(x)), cm(x))
    m.act = lambda y: torch.sigmoid(y)
    assert_equal(torch.sigmoid(m.lin(x)), cm(x))
    del m.act
    assert_equal(torch.relu(m.lin(x)), cm(x))
    assert counter.frame_count == 3


def test_helper_method_patched_on_submodule():
    m = Outer()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))
    for mod in (m, twin):
        mod.other.act = types.MethodType(lambda self, y: y * self.lin.weight.sum(), mod.other)
    assert_equal(twin(x), cm(x))


def _patch_helper(m, x):
    m.act = lambda y: y * 0 + 1
    a = m(x)
    del m.act
    return a, m(x)


@pytest.mark.parametrize("fullgraph", [True, False])
def test_helper_method_patched_and_deleted_in_frame(fullgraph):
    m = WithHelper()
    twin = copy.deepcopy(m)
    cf = compile_fn(_patch_helper, backend="eager", fullgraph=fullgraph)
    x = t(3, 4)
    assert_equal(_patch_helper(twin, x), cf(m, x))
    assert "act" not in m.__dict__
    assert_equal(_patch_helper(twin, x), cf(m, x))


def _patch_helper_persist(m, x):
    m.act = torch.sigmoid
    return m(x)


def test_helper_method_patched_in_frame_persists():
    m = WithHelper()
    cf = compile_fn(_patch_helper_persist, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(torch.sigmoid(m.lin(x)), cf(m, x))
    assert m.__dict__["act"] is torch.sigmoid
    assert_equal(torch.sigmoid(m.lin(x)), m(x))


def test_class_method_patched_after_compiling():
    class Local(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def act(self, y):
            return y + 1

        def forward(self, x):
            return self.act(self.lin(x))

    m = Local()
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(m.lin(x) + 1, cm(x))
    Local.act = lambda self, y: y - 1
    assert_equal(m.lin(x) - 1, cm(x))


def test_class_forward_patched_after_compiling():
    class Local(nn.Module):
        def forward(self, x):
            return x + 1

    m = Local()
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(x + 1, cm(x))
    Local.forward = lambda self, x: x * 10
    assert_equal(x * 10, cm(x))


def test_class_method_patched_after_compiling_plain_object():
    """The same on a plain object works (for contrast with the module case)."""
    class Plain:
        def act(self, y):
            return y + 1

    p = Plain()

    def f(x):
        return p.act(x)

    cf = compile_fn(f, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(x + 1, cf(x))
    Plain.act = lambda self, y: y - 1
    assert_equal(x - 1, cf(x))
