"""Modules in all their states, differential against eager with
torch.compile's graph count as the oracle: compiled modules and functions
composed inside compiled code, lazy modules, modules that write their own
attributes in forward, ``.to()``/``.float()`` on a compiled module, the
truth of a compiled module, forward hooks on torch.nn's own modules, slices
of slices of module containers, and a container made afresh on every call
handed across a graph break (guarded by content, not identity).

Each case builds its state three times from one factory (eager, armature,
torch.compile), runs a few calls, and compares results and the state after
every call (state_dict, plain attributes)."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import armature
from helpers import CountingBackend, USING_TORCH, assert_equal, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def _state(obj):
    obj = obj.__dict__.get("_orig_mod", obj) if isinstance(obj, nn.Module) else obj  # a compiled wrapper
    if isinstance(obj, nn.Module):
        plain = {k: v for k, v in vars(obj).items() if not k.startswith("_") and k != "training"
                 and isinstance(v, (int, float, str, bool, list, tuple, torch.Tensor, type(None)))}
        return [obj.state_dict(), plain, [type(m.__dict__.get("_orig_mod", m)).__name__ for m in obj.modules()],
                obj.training]
    return None


def _run(make, compiler, inputs, seed=0):
    """make(compile) -> (callable, state object); returns results, states."""
    fn, state = make(compiler)
    results, states = [], []
    for i, args in enumerate(inputs):
        torch.manual_seed(seed + i)
        results.append(fn(*args))
        states.append(_state(state))
    return results, states


def check(make, inputs, *, graphs=None, oracle=True):
    """Run ``make`` eagerly, under armature and under torch.compile (counting
    backends); compare armature with eager (results and states after every
    call), and its graph count with torch.compile's (or ``graphs``)."""
    eager = _run(make, lambda m, **kw: m, inputs)
    counter = CountingBackend("eager")
    armature.reset()
    got = _run(make, lambda m, **kw: armature.compile(m, backend=counter, **kw), inputs)
    assert_equal(eager[0], got[0], "results")
    assert_equal(eager[1], got[1], "state")
    if oracle:
        tc = CountingBackend("eager")
        torch._dynamo.reset()
        try:
            ref = _run(make, lambda m, **kw: torch.compile(m, backend=tc, **kw), inputs)
        finally:
            torch._dynamo.reset()
        assert_equal(eager[0], ref[0], "torch.compile results (the case itself)")
        expected = tc.frame_count if graphs is None else graphs
        assert counter.frame_count == expected, \
            f"armature compiled {counter.frame_count} graphs, torch.compile {tc.frame_count}"
    elif graphs is not None:
        assert counter.frame_count == graphs, f"armature compiled {counter.frame_count} graphs, expected {graphs}"
    return counter


def _lin(seed=0, n=4):
    torch.manual_seed(seed)
    return nn.Linear(n, n)


# --------------------------------------------------------------------------
# composition: a compiled module or function called from compiled code
# --------------------------------------------------------------------------


def make_compiled_module_in_function(compile):
    inner = compile(_lin())

    def f(x):
        return inner(x).relu() + 1

    return compile(f), inner


def make_compiled_module_in_module(compile):
    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = compile(_lin(1))
            self.head = _lin(2)

        def forward(self, x):
            return self.head(self.block(x).tanh())

    m = Outer()
    return compile(m), m


def make_compiled_function_in_function(compile):
    @compile
    def g(x, k=2):
        return x.sin() * k

    def f(x):
        return g(x) + g(x, k=3)

    return compile(f), None


@pytest.mark.parametrize("make", [make_compiled_module_in_function, make_compiled_module_in_module,
                                  make_compiled_function_in_function])
def test_composition_is_one_graph(make):
    # torch.compile cannot trace armature's wrappers: one graph is its
    # answer for its own composition, and armature's
    c = check(make, [(t(2, 4),), (t(2, 4),)], graphs=1, oracle=False)
    assert c.frame_count == 1


def test_composition_matches_torch_compile_composition():
    counter = CountingBackend("eager")
    inner = armature.compile(_lin(), backend=counter)
    outer = armature.compile(lambda x: inner(x) * 2, backend=counter)
    tc = CountingBackend("eager")
    torch._dynamo.reset()
    t_inner = torch.compile(_lin(), backend=tc)
    t_outer = torch.compile(lambda x: t_inner(x) * 2, backend=tc)
    x = t(3, 4)
    assert_equal(t_outer(x), outer(x))
    torch._dynamo.reset()
    assert counter.frame_count == tc.frame_count == 1
    # the inner module, called on its own, compiles on its own
    inner(x)
    assert counter.frame_count == 2


def test_compiled_module_hooks_on_wrapper_are_honoured():
    m = _lin()
    cm = armature.compile(m, backend="eager")
    seen = []
    cm.register_forward_hook(lambda mod, a, out: seen.append(out.shape))
    f = armature.compile(lambda x: cm(x) + 1, backend="eager")
    x = t(2, 4)
    assert_equal(m(x) + 1, f(x))
    assert seen == [torch.Size([2, 4])]


# --------------------------------------------------------------------------
# truth of a compiled module
# --------------------------------------------------------------------------


def test_truth_of_compiled_module():
    # a compiled container is as true as the module it wraps: false around
    # an empty Sequential
    # (eager here is the same code calling the same wrappers, uncompiled)
    empty = armature.compile(nn.Sequential(), backend="eager")
    lin = armature.compile(_lin(), backend="eager")

    def f(x):
        out = x
        if lin:
            out = out + 1
        if empty:
            out = out * 2
        if not empty:
            out = out - 100
        return out, bool(lin), bool(empty), not empty

    counter = CountingBackend("eager")
    x = t(2, 4)
    assert_equal(f(x), armature.compile(f, backend=counter, fullgraph=True)(x))
    assert counter.frame_count == 1


def make_truth_of_plain_containers(compile):
    empty, full = nn.Sequential(), nn.ModuleList([_lin()])

    def f(x):
        if empty:
            x = x - 100
        if full:
            x = x + 1
        return x

    return compile(f), None


def test_truth_of_module_containers():
    check(make_truth_of_plain_containers, [(t(2, 4),), (t(2, 4),)])


class _Switch(nn.Module):
    def __init__(self):
        super().__init__()
        self.on = True

    def __bool__(self):
        return self.on


class _Sized(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 0

    def __len__(self):
        return self.n


def make_truth_of_plain_modules(compile):
    lin, switch, sized = _lin(), _Switch(), _Sized()

    def f(x):
        if lin:   # nn.Module has neither __bool__ nor __len__: true
            x = x + 1
        if switch:
            x = x * 2
        if sized:
            x = x - 3
        # flipped for the next call: the guards on what __bool__/__len__ read must fail
        return x, bool(switch), len(sized)

    compiled = compile(f)

    def call(x):
        out = compiled(x)
        switch.on = not switch.on
        sized.n = 1 - sized.n
        return out

    return call, None


def test_truth_of_plain_modules():
    check(make_truth_of_plain_modules, [(t(2, 4),), (t(2, 4),), (t(2, 4),)])


# --------------------------------------------------------------------------
# lazy modules
# --------------------------------------------------------------------------


def make_lazy_stack(compile):
    torch.manual_seed(5)
    m = nn.Sequential(nn.LazyLinear(6), nn.ReLU(), nn.LazyLinear(3))
    return compile(m), m


def make_lazy_in_function(compile):
    torch.manual_seed(5)
    m = nn.LazyLinear(3)

    def f(x):
        return m(x.cos()).sum(-1)

    return compile(f), m


@pytest.mark.parametrize("make", [make_lazy_stack, make_lazy_in_function])
def test_lazy_module_first_call_initialises_in_graph(make):
    check(make, [(t(2, 4),), (t(2, 4),), (t(5, 4),)])


def test_lazy_module_fullgraph_one_graph():
    torch.manual_seed(5)
    eager = nn.Sequential(nn.LazyLinear(6), nn.Tanh())
    torch.manual_seed(5)
    m = nn.Sequential(nn.LazyLinear(6), nn.Tanh())
    counter = CountingBackend("eager")
    cm = armature.compile(m, backend=counter, fullgraph=True)
    x = t(2, 4)
    torch.manual_seed(1)
    expected = eager(x)
    after_eager = torch.rand(1)
    torch.manual_seed(1)
    got = cm(x)
    after_compiled = torch.rand(1)
    assert_equal(expected, got)
    assert_equal(after_eager, after_compiled)  # the same random numbers were drawn
    assert type(m[0]) is nn.Linear
    assert counter.frame_count == 1


class DropoutThenLazy(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.lazy = nn.LazyLinear(3)

    def forward(self, x):
        return self.lazy(self.drop(x))


def test_lazy_module_after_random_op_keeps_eager_order():
    # the dropout mask is drawn before the lazy weights in eager: the
    # initialisation cannot move to trace time, the call runs natively
    torch.manual_seed(5)
    eager = DropoutThenLazy()
    torch.manual_seed(5)
    m = DropoutThenLazy()
    cm = armature.compile(m, backend="eager")
    x = t(4, 4)
    torch.manual_seed(2)
    expected = eager(x)
    torch.manual_seed(2)
    got = cm(x)
    assert_equal(expected, got)
    assert_equal(eager.state_dict(), m.state_dict())
    with pytest.raises(armature.Unsupported, match="random numbers were drawn"):
        torch.manual_seed(5)
        armature.compile(DropoutThenLazy(), backend="eager", fullgraph=True)(x)


# --------------------------------------------------------------------------
# modules that write their own attributes in forward
# --------------------------------------------------------------------------


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = _lin()
        self.calls = 0
        self.history = []
        self.last_norm = None
        self.mode = "a"

    def forward(self, x):
        self.calls += 1
        self.history.append(self.calls)
        y = self.lin(x)
        self.last_norm = y.norm()
        self.mode = "b" if self.mode == "a" else "a"
        return y * self.calls


def make_counter(compile):
    m = Counter()
    return compile(m), m


def test_module_mutates_own_attributes():
    check(make_counter, [(t(2, 4),) for _ in range(4)], oracle=False)


class SwapsSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = _lin(1), _lin(2)
        self.cur = self.a

    def forward(self, x):
        out = self.cur(x)
        self.cur = self.b if self.cur is self.a else self.a
        return out


def make_swaps(compile):
    m = SwapsSubmodule()
    return compile(m), m


def test_module_swaps_its_submodule():
    check(make_swaps, [(t(2, 4),) for _ in range(4)], oracle=False)


# --------------------------------------------------------------------------
# .to() / .float() / .double() on a compiled module, then a call
# --------------------------------------------------------------------------


@pytest.mark.parametrize("convert", ["double", "float_after_double", "to_dtype", "half_to_float"])
def test_dtype_conversion_of_compiled_module(convert):
    m, twin = _lin(), _lin()
    cm = armature.compile(m, backend="eager")
    x = t(2, 4)
    assert_equal(twin(x), cm(x))
    if convert == "double":
        out = cm.double()
        twin.double()
        x = x.double()
    elif convert == "float_after_double":
        cm.double()
        out = cm.float()
        twin.double()
        twin.float()
    elif convert == "to_dtype":
        out = cm.to(torch.float64)
        twin.to(torch.float64)
        x = x.double()
    else:
        cm.half()
        out = cm.float()
        twin.half()
        twin.float()
    assert out is cm
    assert_equal(twin(x), cm(x))
    assert_equal(twin.state_dict(), m.state_dict())


def test_to_on_compiled_module_in_compiled_function():
    m, twin = _lin(), _lin()
    cm = armature.compile(m, backend="eager")
    f = armature.compile(lambda x: cm(x).sum(), backend="eager")
    x = t(2, 4)
    assert_equal(twin(x).sum(), f(x))
    cm.to(torch.float64)
    twin.to(torch.float64)
    assert_equal(twin(x.double()).sum(), f(x.double()))


# --------------------------------------------------------------------------
# forward hooks on torch.nn's own modules
# --------------------------------------------------------------------------


def make_hooked_builtin(compile):
    seen = []
    lin = _lin()
    lin.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    lin.register_forward_hook(lambda mod, args, out: out + args[0])
    relu = nn.ReLU()
    relu.register_forward_hook(lambda mod, args, out: seen.append(1))
    m = nn.Sequential(lin, relu, nn.Tanh())
    m[2].register_forward_hook(lambda mod, args, kwargs, out: out * 3, with_kwargs=True)

    def f(x):
        return m(x), len(seen)

    return compile(f), None


def test_forward_hooks_on_builtin_modules():
    check(make_hooked_builtin, [(t(2, 4),), (t(2, 4),)])


# --------------------------------------------------------------------------
# slices of module containers
# --------------------------------------------------------------------------


class Slices(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.layers = nn.ModuleList([_lin(i) for i in range(5)])
        self.seq = nn.Sequential(*[_lin(10 + i) for i in range(4)])

    def forward(self, x):
        k = self.kind
        if k == "reverse_then_head":
            for layer in self.layers[::-1][:2]:
                x = layer(x)
        elif k == "three_levels":
            for layer in self.layers[1:][::2][::-1]:
                x = layer(x)
        elif k == "sequential_slice_of_slice":
            x = self.seq[1:][:2](x)
        elif k == "index_into_slice":
            x = self.layers[::-1][1](x) + self.layers[2:][-1](x)
        elif k == "len_of_slice":
            x = x * len(self.layers[1:][:-1])
        return x


@pytest.mark.parametrize("kind", ["reverse_then_head", "three_levels", "sequential_slice_of_slice",
                                  "index_into_slice", "len_of_slice"])
def test_slice_of_slice(kind):
    def make(compile):
        m = Slices(kind)
        return compile(m, fullgraph=True), m

    check(make, [(t(2, 4),), (t(2, 4),)], graphs=1)


def test_slice_of_slice_index_error_is_eagers():
    m = Slices("reverse_then_head")

    def f(m):
        return m.layers[1:][::2][7]

    with pytest.raises(IndexError) as eager:
        f(m)
    with pytest.raises(IndexError) as got:
        armature.compile(f, backend="eager")(m)
    assert str(got.value) == str(eager.value)


# --------------------------------------------------------------------------
# a container made on every call, handed across a break
# --------------------------------------------------------------------------


class SliceAcrossBreak(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.layers = nn.ModuleList([_lin(i) for i in range(4)])
        self.seq = nn.Sequential(_lin(7), nn.ReLU(), _lin(8))
        self.log = []

    def forward(self, x):
        if self.kind == "modulelist":
            tail = self.layers[1:]
        elif self.kind == "slice_of_slice":
            tail = self.layers[::-1][1:]
        else:
            tail = self.seq[:2]
        x = x + 1
        self.log.append(len(tail))
        print("between graphs")       # a graph break
        if self.kind == "sequential":
            return tail(x)
        for layer in tail:
            x = layer(x)
        return x


@pytest.mark.parametrize("kind", ["modulelist", "slice_of_slice", "sequential"])
def test_container_made_per_call_across_break_does_not_recompile(kind, capsys):
    def make(compile):
        m = SliceAcrossBreak(kind)
        return compile(m), m

    # armature used to compile a new resume graph on every call (identity
    # guard) until the limit; torch.compile 2.13 recompiles here too (9)
    check(make, [(t(2, 4),) for _ in range(12)], graphs=2, oracle=False)


def test_container_made_per_call_still_guards_its_members():
    m = SliceAcrossBreak("modulelist")
    twin = SliceAcrossBreak("modulelist")
    counter = CountingBackend("eager")
    cm = armature.compile(m, backend=counter)
    x = t(2, 4)
    assert_equal(twin(x), cm(x))
    n = counter.frame_count
    # a member replaced: the same slice now holds another module
    m.layers[2] = _lin(42)
    twin.layers[2] = _lin(42)
    assert_equal(twin(x), cm(x))
    assert counter.frame_count > n
    # a member added: the slice is longer
    m.layers.append(_lin(43))
    twin.layers.append(_lin(43))
    assert_equal(twin(x), cm(x))


class LazyPair(nn.modules.lazy.LazyModuleMixin, nn.Module):
    """A lazy module whose input is a list (or tuple) of tensors: its
    initialisation hook reads the structure (torch's test_lazy_module
    cases with list/tuple inputs)."""

    def __init__(self):
        super().__init__()
        self.weight = nn.parameter.UninitializedParameter()

    def initialize_parameters(self, xs):
        if self.has_uninitialized_params():
            with torch.no_grad():
                self.weight.materialize(xs[0].shape[-1:])
                self.reset_parameters()

    def reset_parameters(self):
        if not self.has_uninitialized_params():
            nn.init.uniform_(self.weight)

    def forward(self, xs):
        return xs[0] * self.weight + xs[1]


def make_lazy_from_list(compile):
    torch.manual_seed(5)
    m = LazyPair()

    def f(x):
        return m([x.sin(), x]).cos()

    return compile(f), m


def make_lazy_from_tuple(compile):
    torch.manual_seed(5)
    m = LazyPair()

    def f(x):
        return m((x, x * 2)).sum()

    return compile(f), m


@pytest.mark.parametrize("make", [make_lazy_from_list, make_lazy_from_tuple])
def test_lazy_module_initialised_from_a_list_or_tuple(make):
    check(make, [(t(2, 4),), (t(2, 4),)])
    counter = CountingBackend("eager")
    compiled, m = make(lambda f: armature.compile(f, backend=counter, fullgraph=True))
    compiled(t(2, 4))
    assert counter.frame_count == 1 and not m.has_uninitialized_params()
