"""Modules inside traced code: attributes, parameters, buffers, submodules,
the member iterators (parameters(), named_modules(), ...), the containers
(Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict), lazy
modules, ``self.training`` and changing a module's structure in a frame."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

from helpers import CASE_ARGS, CountingBackend, armature_only, assert_equal, assert_same, case, compile_fn, t

import armature


class Base(nn.Module):
    """Holds one of everything; subclasses' forwards exercise one access."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.Tanh())
        self.ml = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.md = nn.ModuleDict({"a": nn.Linear(4, 4), "b": nn.Tanh(), "c": nn.Linear(4, 4)})
        self.pl = nn.ParameterList([nn.Parameter(torch.randn(4)) for _ in range(3)])
        self.pd = nn.ParameterDict({"u": nn.Parameter(torch.randn(4)), "v": nn.Parameter(torch.randn(4))})
        self.w = nn.Parameter(torch.randn(4))
        self.register_buffer("buf", torch.randn(4))
        self.scale = 1.5
        self.name = "base"
        self.sizes = (4, 4)


def mod(forward):
    """A Base whose forward is ``forward``."""
    cls = type(f"M_{forward.__name__}", (Base,), {"forward": forward})
    return cls()


def mcase(forward, *args, marks=(), **opts):
    return case(mod(forward), *args, id=forward.__name__.removeprefix("f_"), marks=marks, **opts)


# --------------------------------------------------------------------------
# attributes
# --------------------------------------------------------------------------


def f_plain_attrs(self, x):
    return x * self.scale + len(self.name) + self.sizes[0]


def f_param_buffer(self, x):
    return x * self.w + self.buf


def f_submodule(self, x):
    return self.lin(x) + self.lin.weight.sum() + self.lin.bias


def f_nested(self, x):
    return self.seq[0].weight @ x.T + self.md.a.bias[:, None] + self.ml[1].in_features


def f_getattr_builtin(self, x):
    lin = getattr(self, "lin")
    extra = getattr(self, "missing", None)
    return lin(x) if extra is None else x


def f_hasattr(self, x):
    if hasattr(self, "lin") and hasattr(self, "buf") and hasattr(self, "w") and not hasattr(self, "zz"):
        return x + 1
    return x


def f_submodule_config(self, x):
    return x[:, : self.lin.out_features] * self.lin.in_features + self.seq[1].inplace


def f_instance_dict(self, x):
    d = self.__dict__
    return x * (d["scale"] if "scale" in d else 1.0) + ("lin" in d)


def f_module_type_checks(self, x):
    n = 0
    for m in self.seq:
        if isinstance(m, nn.Linear):
            n += 1
    return x * n


ATTR_CASES = [
    mcase(f_plain_attrs, t(3, 4), graphs=1),
    mcase(f_param_buffer, t(3, 4), graphs=1),
    mcase(f_submodule, t(3, 4), graphs=1),
    mcase(f_nested, t(3, 4), graphs=1),
    mcase(f_getattr_builtin, t(3, 4), graphs=1),
    mcase(f_hasattr, t(3, 4), graphs=1),
    mcase(f_submodule_config, t(3, 4), graphs=1),
    mcase(f_module_type_checks, t(3, 4), graphs=1),
    mcase(f_instance_dict, t(3, 4), graphs=1),
]


# --------------------------------------------------------------------------
# parameters() and friends
# --------------------------------------------------------------------------


def f_parameters_sum(self, x):
    return x + sum(p.sum() for p in self.parameters())


def f_parameters_no_recurse(self, x):
    return x * sum(p.sum() for p in self.parameters(recurse=False))


def f_named_parameters_names(self, x):
    return x + 1, [n for n, _ in self.named_parameters()]


def f_named_parameters_prefix(self, x):
    return x + 1, [n for n, _ in self.lin.named_parameters(prefix="lin")]


def f_named_parameters_sum(self, x):
    total = 0
    for name, p in self.named_parameters():
        if "weight" in name:
            total = total + p.sum()
    return x * total


def f_buffers_sum(self, x):
    return x + sum(b.sum() for b in self.buffers())


def f_named_buffers(self, x):
    return x + 1, [n for n, _ in self.named_buffers()]


def f_children(self, x):
    return x * len(list(self.children()))


def f_named_children(self, x):
    return x + 1, [n for n, _ in self.named_children()]


def f_modules_count(self, x):
    return x * len(list(self.modules()))


def f_named_modules(self, x):
    return x + 1, [n for n, _ in self.named_modules()]


def f_named_modules_call_linears(self, x):
    for name, m in self.named_modules():
        if isinstance(m, nn.Linear) and name.startswith("ml"):
            x = m(x)
    return x


def f_children_call(self, x):
    for m in self.seq.children():
        x = m(x)
    return x


def f_parameters_list(self, x):
    ps = list(self.lin.parameters())
    return x @ ps[0] + ps[1]


def f_parameters_next(self, x):
    p = next(self.parameters())
    return x.to(p.dtype) * p.sum()


def f_parameter_count(self, x):
    return x * sum(p.numel() for p in self.parameters())


ITER_CASES = [
    mcase(f_parameters_sum, t(3, 4), graphs=1),
    mcase(f_parameters_no_recurse, t(3, 4), graphs=1),
    mcase(f_named_parameters_names, t(3, 4), graphs=1),
    mcase(f_named_parameters_prefix, t(3, 4), graphs=1),
    mcase(f_named_parameters_sum, t(3, 4), graphs=1),
    mcase(f_buffers_sum, t(3, 4), graphs=1),
    mcase(f_named_buffers, t(3, 4), graphs=1),
    mcase(f_children, t(3, 4), graphs=1),
    mcase(f_named_children, t(3, 4), graphs=1),
    mcase(f_modules_count, t(3, 4), graphs=1),
    mcase(f_named_modules, t(3, 4), graphs=1),
    mcase(f_named_modules_call_linears, t(3, 4), graphs=1),
    mcase(f_children_call, t(3, 4), graphs=1),
    mcase(f_parameters_list, t(3, 4), graphs=1),
    mcase(f_parameters_next, t(3, 4), graphs=1),
    mcase(f_parameter_count, t(3, 4), graphs=1),
]


# --------------------------------------------------------------------------
# containers
# --------------------------------------------------------------------------


def f_seq_call(self, x):
    return self.seq(x)


def f_seq_index(self, x):
    return self.seq[0](x) + self.seq[-2](x) + self.seq[-1](x)


def f_seq_slice(self, x):
    return self.seq[1:](x) + self.seq[:2](x) + self.seq[-2:](x) + self.seq[::2](x)


def f_seq_iter_len(self, x):
    for i, m in enumerate(self.seq):
        x = m(x) * (i + 1)
    return x * len(self.seq)


def f_modulelist_iter(self, x):
    for layer in self.ml:
        x = torch.relu(layer(x))
    return x


def f_modulelist_index(self, x):
    return self.ml[0](x) + self.ml[-1](x) + self.ml[len(self.ml) - 2](x)


def f_modulelist_slice(self, x):
    for layer in self.ml[1:]:
        x = layer(x)
    for layer in self.ml[::-1]:
        x = layer(x)
    return x


def f_modulelist_zip(self, x):
    out = 0
    for layer, p in zip(self.ml, self.pl):
        out = out + layer(x) * p
    return out


def f_modulelist_bool(self, x):
    return x + 1 if self.ml else x


def f_modulelist_in(self, x):
    # nn.ModuleList has no __contains__: `in` iterates and compares
    return x + 1 if self.ml[1] in self.ml else x


def f_modulelist_not_in(self, x):
    return x + 1 if self.lin not in self.ml else x


def f_moduledict_index(self, x):
    return self.md["b"](self.md["a"](x))


def f_moduledict_in(self, x):
    if "a" in self.md and "zz" not in self.md:
        x = x + 1
    return x * len(self.md)


def f_moduledict_iter(self, x):
    for k in self.md:
        x = self.md[k](x)
    return x


def f_moduledict_items(self, x):
    names = []
    for k, m in self.md.items():
        names.append(k)
        x = m(x)
    return x, names


def f_moduledict_keys_values(self, x):
    for m in self.md.values():
        x = m(x)
    return x, list(self.md.keys())


def f_parameterlist_index(self, x):
    return x * self.pl[0] + self.pl[-1] + self.pl[1]


def f_parameterlist_iter_len(self, x):
    for p in self.pl:
        x = x * p
    return x + len(self.pl)


def f_parameterlist_slice(self, x):
    return x * sum(p.sum() for p in self.pl[1:])


def f_parameterlist_in(self, x):
    # identity short-circuits the comparison for the first element
    return x + 1 if self.pl[0] in self.pl else x


def f_parameterdict_index(self, x):
    return x * self.pd["u"] + self.pd["v"]


def f_parameterdict_items(self, x):
    for k, p in self.pd.items():
        x = x * p
    return x, list(self.pd.keys())


def f_parameterdict_values(self, x):
    return x + sum(p.sum() for p in self.pd.values())


def f_parameterdict_in(self, x):
    return x + 1 if "u" in self.pd and "zz" not in self.pd else x


def f_parameterdict_len(self, x):
    return x * len(self.pd)


def f_parameterdict_iter(self, x):
    for k in self.pd:
        x = x * self.pd[k]
    return x


CONTAINER_CASES = [
    mcase(f_seq_call, t(3, 4), graphs=1),
    mcase(f_seq_index, t(3, 4), graphs=1),
    mcase(f_seq_slice, t(3, 4), graphs=1),
    mcase(f_seq_iter_len, t(3, 4), graphs=1),
    mcase(f_modulelist_iter, t(3, 4), graphs=1),
    mcase(f_modulelist_index, t(3, 4), graphs=1),
    mcase(f_modulelist_slice, t(3, 4), graphs=1),
    mcase(f_modulelist_zip, t(3, 4), graphs=1),
    mcase(f_modulelist_bool, t(3, 4), graphs=1),
    mcase(f_modulelist_in, t(3, 4), graphs=1),
    mcase(f_modulelist_not_in, t(3, 4), graphs=1),
    mcase(f_moduledict_index, t(3, 4), graphs=1),
    mcase(f_moduledict_in, t(3, 4), graphs=1),
    mcase(f_moduledict_iter, t(3, 4), graphs=1),
    mcase(f_moduledict_items, t(3, 4), graphs=1),
    mcase(f_moduledict_keys_values, t(3, 4), graphs=1),
    mcase(f_parameterlist_index, t(3, 4), graphs=1),
    mcase(f_parameterlist_iter_len, t(3, 4), graphs=1),
    mcase(f_parameterlist_slice, t(3, 4), graphs=1),
    mcase(f_parameterlist_in, t(3, 4), graphs=1),
    mcase(f_parameterdict_index, t(3, 4), graphs=1),
    mcase(f_parameterdict_items, t(3, 4), graphs=1),
    mcase(f_parameterdict_values, t(3, 4), graphs=1),
    mcase(f_parameterdict_in, t(3, 4), graphs=1),
    mcase(f_parameterdict_len, t(3, 4), graphs=1),
    mcase(f_parameterdict_iter, t(3, 4), graphs=1),
]


@pytest.mark.parametrize(CASE_ARGS, ATTR_CASES + ITER_CASES + CONTAINER_CASES)
def test_module_access(fn, args, opts):
    assert_same(fn, *args, **opts)


def test_module_access_grads_aot_eager():
    assert_same(mod(f_named_parameters_sum), t(3, 4, requires_grad=True), backend="aot_eager", check_grad=True)


def test_container_passed_as_argument():
    seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    ml = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def f(seq, ml, x):
        for m in ml:
            x = m(x)
        return seq[-1](seq[:-1](x)), len(ml), len(seq)

    counter = CountingBackend()
    cf = compile_fn(f, backend=counter, fullgraph=True)
    x = t(3, 4)
    for _ in range(2):
        assert_equal(f(seq, ml, x), cf(seq, ml, x))
    assert counter.frame_count == 1


def test_container_growing_recompiles():
    ml = nn.ModuleList([nn.Linear(4, 4)])

    def f(x):
        for m in ml:
            x = m(x)
        return x

    cf = compile_fn(f, backend="eager", fullgraph=True)
    x = t(2, 4)
    assert_equal(f(x), cf(x))
    ml.append(nn.Linear(4, 4))
    assert_equal(f(x), cf(x))
    del ml[0]
    assert_equal(f(x), cf(x))


# --------------------------------------------------------------------------
# user subclasses calling super()
# --------------------------------------------------------------------------


class ScaledLinear(nn.Linear):
    def forward(self, x):
        return super().forward(x) * 2


class Helper(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def helper(self, x):
        return self.lin(x)

    def forward(self, x):
        return self.helper(x) + 1


class HelperSub(Helper):
    def helper(self, x):
        return super().helper(x) * 3


@pytest.mark.parametrize("make", [
    pytest.param(lambda: ScaledLinear(4, 4), id="super_forward"),
    pytest.param(HelperSub, id="super_helper"),
    pytest.param(Helper, id="plain_helper"),
])
def test_user_subclass_methods(make):
    assert_same(make(), t(3, 4), graphs=1)


@pytest.mark.parametrize("make", [lambda: ScaledLinear(4, 4), HelperSub])
def test_user_subclass_super_falls_back_cleanly(make):
    assert_same(make(), t(3, 4), fullgraph=False)


# --------------------------------------------------------------------------
# lazy modules
# --------------------------------------------------------------------------


def _check_lazy(make, fullgraph):
    m = make()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=fullgraph)
    x = t(3, 4)
    torch.manual_seed(7)
    got = cm(x)
    torch.manual_seed(7)
    expected = twin(x)
    assert_equal(expected, got)
    assert_equal(twin.state_dict(), m.state_dict())
    assert [type(s) for s in m.modules()] == [type(s) for s in twin.modules()]
    for xi in (t(3, 4), t(5, 4)):
        assert_equal(twin(xi), cm(xi))


LAZY = [
    pytest.param(lambda: nn.LazyLinear(5), id="LazyLinear"),
    pytest.param(lambda: nn.Sequential(nn.LazyLinear(6), nn.ReLU(), nn.LazyLinear(2)), id="Sequential"),
]


@pytest.mark.parametrize("make", LAZY)
def test_lazy_module_initialised_on_first_call(make):
    _check_lazy(make, fullgraph=False)


@pytest.mark.parametrize("make", LAZY)
def test_lazy_module_fullgraph(make):
    _check_lazy(make, fullgraph=True)


def test_lazy_module_inside_function():
    m = nn.LazyLinear(5)
    twin = copy.deepcopy(m)

    def f(m, x):
        return m(x).relu()

    cf = compile_fn(f, backend="eager")
    x = t(3, 4)
    torch.manual_seed(3)
    got = cf(m, x)
    torch.manual_seed(3)
    assert_equal(f(twin, x), got)
    assert_equal(f(twin, x), cf(m, x))


# --------------------------------------------------------------------------
# self.training
# --------------------------------------------------------------------------


class TrainBranch(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        if self.training:
            x = x * 2
        return self.bn(self.lin(x))


def test_training_branch_eval_then_train():
    m = TrainBranch().eval()
    twin = copy.deepcopy(m)
    counter = CountingBackend()
    cm = compile_fn(m, backend=counter, fullgraph=True)
    x = t(6, 4)
    assert_equal(twin(x), cm(x))
    assert counter.frame_count == 1
    m.train()
    twin.train()
    for i in range(2):
        xi = x * (i + 1)
        assert_equal(twin(xi), cm(xi))
        assert_equal(twin.bn.running_mean, m.bn.running_mean)
        assert_equal(twin.bn.running_var, m.bn.running_var)
        assert_equal(twin.bn.num_batches_tracked, m.bn.num_batches_tracked)
    assert counter.frame_count == 2
    m.eval()
    twin.eval()
    before = m.bn.running_mean.clone()
    assert_equal(twin(x), cm(x))
    assert_equal(before, m.bn.running_mean)  # not updated in eval mode
    assert counter.frame_count == 2


def test_training_of_submodule_only():
    m = TrainBranch().train()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(6, 4)
    assert_equal(twin(x), cm(x))
    m.bn.eval()
    twin.bn.eval()
    assert_equal(twin(x), cm(x))
    assert_equal(twin.bn.running_mean, m.bn.running_mean)


def test_training_flag_of_module_argument():
    def f(m, x):
        return m(x) if m.training else m(x) * 0

    m = TrainBranch()
    cf = compile_fn(f, backend="eager", fullgraph=True)
    x = t(6, 4)
    twin = copy.deepcopy(m)
    assert_equal(f(twin, x), cf(m, x))
    m.eval()
    twin.eval()
    assert_equal(f(twin, x), cf(m, x))


# --------------------------------------------------------------------------
# registering / replacing / deleting members inside a frame
# --------------------------------------------------------------------------


class RegisterBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if not hasattr(self, "count"):
            self.register_buffer("count", torch.zeros(4))
        self.count = self.count + 1
        return self.lin(x) + self.count


class RegisterBufferEachCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.register_buffer("cache", self.lin(x).detach().sum(0), persistent=False)
        return x + self.cache


class NewParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.extra = nn.Parameter(torch.full((4,), 2.0))
        return self.lin(x) * self.extra


class ReplaceParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        y = x * self.w
        self.w = nn.Parameter(self.w.detach() * 2)
        return y


class ReplaceSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x):
        y = self.act(self.lin(x))
        self.act = nn.Identity()
        return y + self.act(x)


class AssignExistingSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        self.a, self.b = self.b, self.a
        return self.a(x)


class DeleteSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.foo = nn.Linear(4, 4)

    def forward(self, x):
        if hasattr(self, "foo"):
            x = self.foo(x)
            del self.foo
        return self.lin(x)


class DeleteBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("bb", torch.ones(4))

    def forward(self, x):
        if "bb" in self._buffers:
            x = x + self.bb
            del self.bb
        return self.lin(x)


class DeleteParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.pp = nn.Parameter(torch.full((4,), 3.0))

    def forward(self, x):
        if hasattr(self, "pp"):
            x = x * self.pp
            del self.pp
        return self.lin(x)


class PlainAttrs(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0
        self.tmp = 1.0

    def forward(self, x):
        self.calls = self.calls + 1
        self.last_sum = x.sum()
        if hasattr(self, "tmp"):
            del self.tmp
        return self.lin(x) * self.calls


STRUCTURE = [RegisterBuffer, RegisterBufferEachCall, NewParameter, ReplaceParameter, ReplaceSubmodule,
             AssignExistingSubmodule, DeleteSubmodule, DeleteBuffer, DeleteParameter, PlainAttrs]


def _structure(m):
    return (
        [n for n, _ in m.named_modules()],
        [type(s).__name__ for s in m.modules()],
        [n for n, _ in m.named_parameters()],
        [n for n, _ in m.named_buffers()],
        sorted(k for k in m.__dict__ if not k.startswith("_")),
    )


def _check_structure_change(cls, fullgraph):
    torch.manual_seed(0)
    m = cls()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=fullgraph)
    for i in range(3):
        x = t(3, 4)
        expected = twin(x)
        got = cm(x)
        assert_equal(expected, got, f"out (call {i})")
        assert _structure(m) == _structure(twin)
        assert_equal(twin.state_dict(), m.state_dict(), f"state (call {i})")
        for k, v in twin.__dict__.items():
            if not k.startswith("_") and not isinstance(v, (nn.Module, torch.Tensor)):
                assert_equal(v, m.__dict__[k], f"attr {k}")
        if hasattr(twin, "last_sum"):
            assert_equal(twin.last_sum, m.last_sum)


@pytest.mark.parametrize("cls", STRUCTURE, ids=lambda c: c.__name__)
def test_structure_change_in_frame(cls):
    # compiled or via fallback / graph break: the result and the module's
    # state after each call must equal eager's
    _check_structure_change(cls, fullgraph=False)


@armature_only
@pytest.mark.parametrize("cls", STRUCTURE, ids=lambda c: c.__name__)
def test_structure_change_fullgraph_is_clean(cls):
    """fullgraph=True: either it compiles and matches eager, or armature
    refuses with Unsupported before touching the module."""
    torch.manual_seed(0)
    m = cls()
    before = _structure(m)
    state = copy.deepcopy(m.state_dict())
    cm = compile_fn(m, backend="eager", fullgraph=True)
    try:
        cm(t(3, 4))
    except armature.Unsupported:
        assert _structure(m) == before
        assert_equal(state, m.state_dict())
        return
    _check_structure_change(cls, fullgraph=True)


def test_structure_change_on_submodule_from_parent():
    class Parent(nn.Module):
        def __init__(self):
            super().__init__()
            self.child = nn.Linear(4, 4)
            self.other = nn.Linear(4, 4)

        def forward(self, x):
            y = self.child(x)
            self.child.register_buffer("seen", y.detach().mean(0))
            self.child = self.other
            return y + self.child(x)

    torch.manual_seed(0)
    m = Parent()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager")
    x = t(3, 4)
    assert_equal(twin(x), cm(x))
    assert _structure(m) == _structure(twin)
    assert_equal(twin.state_dict(), m.state_dict())
    assert_equal(twin(x), cm(x))
    assert _structure(m) == _structure(twin)


class _Restructure(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)
        self.register_buffer("buf", torch.zeros(3))
        self.extra = nn.Identity()

    def forward(self, x):
        self.a, self.b = self.b, self.a       # replace registered submodules
        self.buf = self.buf + 1                # replace a registered buffer
        del self.extra                         # delete a registered submodule
        return self.a(x) + self.buf


def test_structure_changes_replayed_as_side_effects_in_one_graph():
    import copy
    m = _Restructure()
    m_e = copy.deepcopy(m)
    counter = CountingBackend()
    cm = armature.compile(m, backend=counter, fullgraph=True)
    x = torch.randn(2, 3)
    torch.testing.assert_close(cm(x), m_e(x))
    assert counter.frame_count == 1
    assert [n for n, _ in m.named_modules()] == [n for n, _ in m_e.named_modules()]
    assert list(m.state_dict()) == list(m_e.state_dict())
    for k, v in m_e.state_dict().items():
        torch.testing.assert_close(m.state_dict()[k], v)
    assert m.a is not None and not hasattr(m, "extra")


class _RegistersOnFirstCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if not hasattr(self, "count"):
            self.register_buffer("count", torch.zeros(4))   # registered inside the frame
        self.count = self.count + 1                          # then replaced every call
        return self.lin(x) + self.count


def test_register_buffer_in_frame_is_replayed_and_settles():
    import copy
    m = _RegistersOnFirstCall()
    m_e = copy.deepcopy(m)
    cm = armature.compile(m, backend="eager", fullgraph=True)
    x = torch.ones(2, 4)
    for _ in range(12):
        torch.testing.assert_close(cm(x), m_e(x))
    assert list(m.state_dict()) == list(m_e.state_dict())
    torch.testing.assert_close(m.count, m_e.count)
    assert "count" not in m.__dict__  # a registered buffer, not a plain attribute
    # first call (not registered yet), second (a graph attribute), then the
    # replaced buffer becomes a graph input: no recompile per call
    assert len(armature.cache_entries(cm)) <= 3
