"""User ``nn.Module`` subclasses constructed inside the compiled frame
(values/nn/user_module_construction.py): the constructor is audited by tracing
it in a sandbox, and a clean one is built for real by the setup on every
call, so the module's forward is in the graph.

Each case runs eager and compiled from the same seed, call after call, and
compares results, module state and identities exactly (identity_support);
graph counts are compared with torch.compile's.  Constructors with effects
outside the module (a counter, a registry, a print), list arguments, reads of
state the frame changed first: a graph break, still eager's answer.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from helpers import USING_TORCH, armature_only, compile_fn, reset
from python_semantics.identity_support import check_against_oracle, check_identity

import armature


def two():
    return torch.randn(2, 4), torch.randn(2, 4)


class Scaled(nn.Module):
    def __init__(self, n, scale=2.0):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.scale = scale

    def forward(self, x):
        return self.lin(x) * self.scale


class Activation(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 3


class Block(nn.Module):
    """Nested user modules, a ModuleList built from a local list, a helper
    method, a buffer and a parameter of its own."""

    def __init__(self, n, depth=2):
        super(Block, self).__init__()
        layers = []
        for _ in range(depth):
            layers.append(Scaled(n, scale=0.5))
        self.layers = nn.ModuleList(layers)
        self.act = Activation()
        self._make_norm(n)
        self.register_buffer("offset", torch.arange(n, dtype=torch.float32))
        self.gain = nn.Parameter(torch.ones(n) * 1.5)
        self.name = f"block{n}"

    def _make_norm(self, n):
        self.norm = nn.LayerNorm(n)

    def forward(self, x):
        for layer in self.layers:
            x = self.act(layer(x))
        return self.norm(x) * self.gain + self.offset


class RandomParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))   # drawn before the Linear's weights, as in eager
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x @ self.w)


class Masked(nn.Module):
    """The older ``nn.Module.__init__(self)``, a plain tensor attribute and a
    dict of settings."""

    def __init__(self, n):
        nn.Module.__init__(self)
        self.mask = torch.tril(torch.ones(n, n))
        self.cfg = {"k": 2}
        self.proj = nn.Linear(n, n, bias=False)

    def forward(self, x):
        return self.proj(x) @ self.mask * self.cfg["k"]


def masked(x, y):
    return Masked(4)(x) + y


def scaled(x, y):
    return Scaled(4)(x) + y


def scaled_returned(x, y):
    m = Scaled(4, scale=3.0)
    return m(x), m, m.lin.weight


def activation(x, y):
    return Activation()(x) - y


def block(x, y):
    b = Block(4)
    return b(x), b


def random_parameter(x, y):
    return RandomParameter()(x) + torch.randn(4)   # the generator where eager leaves it


def across_break(x, y):
    m = Scaled(4)
    z = m(x)
    print(end="")   # a graph break in both
    return m(z + y), m


CASES = [scaled, scaled_returned, activation, block, random_parameter, across_break, masked]


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_against_eager_and_graph_count(fn):
    check_against_oracle(fn, two, calls=3, fullgraph_ok=False)


@armature_only
@pytest.mark.parametrize("fn", [scaled, scaled_returned, activation, block, random_parameter, masked],
                         ids=lambda f: f.__name__)
def test_fullgraph_one_graph(fn):
    counter = check_identity(fn, two, calls=3, fullgraph=True)
    assert counter.frame_count == 1
    reset()


@armature_only
def test_construction_is_not_a_graph_break():
    compiled = armature.compile(block, backend="eager")
    for _ in range(3):
        compiled(*two())
    (entry,) = armature.cache_entries(compiled)
    assert entry.graph_break is None and entry.fallback_reason is None


def test_gradients_reach_the_new_parameters():
    compiled = compile_fn(scaled_returned, backend="aot_eager")
    x = torch.randn(2, 4)
    torch.manual_seed(0)
    y_e, m_e, _ = scaled_returned(x, x)
    torch.manual_seed(0)
    y_c, m_c, _ = compiled(x, x)
    y_e.sum().backward()
    y_c.sum().backward()
    assert type(m_c) is Scaled and isinstance(m_c.lin.weight, nn.Parameter)
    torch.testing.assert_close(m_c.lin.weight.grad, m_e.lin.weight.grad)
    reset()


# --- constructors the audit refuses: a graph break, eager's answer ------------------------------

BUILT = []
WIDTH = 4


class Registers(nn.Module):
    def __init__(self):
        super().__init__()
        BUILT.append(type(self).__name__)   # an effect outside the module
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


class Counts(nn.Module):
    made = 0

    def __init__(self):
        super().__init__()
        Counts.made += 1
        self.k = Counts.made

    def forward(self, x):
        return x * self.k


class Prints(nn.Module):
    def __init__(self):
        super().__init__()
        print("building", end="")

    def forward(self, x):
        return x + 1


class FromList(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        sizes.append(4)   # eager's frame sees its list grow
        self.lins = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])

    def forward(self, x):
        for lin in self.lins:
            x = lin(x)
        return x


class ReadsGlobalWidth(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(WIDTH, 2)

    def forward(self, x):
        return self.lin(x[..., :WIDTH])


class AppliesInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.apply(self._init)

    def _init(self, m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.lin(x)


class SubclassesLinear(nn.Linear):
    def __init__(self):
        super().__init__(4, 4)

    def forward(self, x):
        return super().forward(x) * 2


def registers(x, y):
    return Registers()(x), list(BUILT)


def counts(x, y):
    return Counts()(x), Counts.made


def prints(x, y):
    return Prints()(x)


def from_list(x, y):
    sizes = [4, 8]
    m = FromList(sizes)
    return m(x), sizes


def after_outside_write(x, y):
    global WIDTH
    WIDTH = 3   # the constructor reads it after this write
    out = ReadsGlobalWidth()(x)
    WIDTH = 4
    return out


def applies_init(x, y):
    return AppliesInit()(x)


def subclasses_linear(x, y):
    return SubclassesLinear()(x)


REFUSED = [(registers, "changes state outside the module"), (counts, "changes state outside the module"),
           (prints, "creating the module Prints"), (from_list, "not an immutable constant"),
           (after_outside_write, "after the frame changed state outside itself"),
           (applies_init, "creating the module AppliesInit"),
           (subclasses_linear, "a subclass of Linear")]


@pytest.mark.parametrize("fn", [f for f, _ in REFUSED], ids=lambda f: f.__name__)
def test_refused_constructor_runs_natively_like_eager(fn, capsys):
    BUILT.clear()
    Counts.made = 0
    torch.manual_seed(0)
    inputs = two()
    outs_e = []
    for seed in range(3):
        torch.manual_seed(seed)
        outs_e.append(fn(*inputs))
    printed_e = capsys.readouterr().out
    state_e = (list(BUILT), Counts.made)
    BUILT.clear()
    Counts.made = 0
    compiled = compile_fn(fn, backend="eager")
    outs_c = []
    for seed in range(3):
        torch.manual_seed(seed)
        outs_c.append(compiled(*inputs))
    assert capsys.readouterr().out == printed_e
    assert (list(BUILT), Counts.made) == state_e
    _assert_same(outs_c, outs_e)
    reset()


def _assert_same(a, b):
    if isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif isinstance(a, torch.Tensor):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    else:
        assert a == b


@armature_only
@pytest.mark.parametrize("fn,why", REFUSED, ids=[f.__name__ for f, _ in REFUSED])
def test_refused_constructor_names_the_reason(fn, why):
    compiled = armature.compile(fn, backend="eager", fullgraph=True)
    with pytest.raises(armature.Unsupported, match="creating the module") as info:
        compiled(*two())
    assert why in str(info.value)
    reset()


@armature_only
def test_global_read_by_the_constructor_is_guarded():
    global WIDTH

    def f(x):
        return ReadsGlobalWidth()(x)

    compiled = armature.compile(f, backend="eager", fullgraph=True)
    x = torch.randn(2, 4)
    try:
        for width in (4, 4, 3):
            WIDTH = width
            torch.manual_seed(0)
            expected = f(x)
            torch.manual_seed(0)
            torch.testing.assert_close(compiled(x), expected, rtol=0, atol=0)
        assert len(armature.cache_entries(compiled)) == 2
    finally:
        WIDTH = 4
        reset()


@armature_only
def test_global_made_dynamic_and_specialised_by_the_constructor_stays_guarded():
    """WIDTH changes, so it becomes a dynamic int; the constructor (traced in
    a sandbox for the setup code) builds Linear(WIDTH, 2), which specialises
    it again.  The entry must guard ``WIDTH == 3`` -- it used to guard only
    its type, and served WIDTH 5 with a graph slicing 3 columns."""
    global WIDTH

    def f(x):
        return ReadsGlobalWidth()(x)

    compiled = armature.compile(f, backend="eager")
    x = torch.randn(2, 6)
    try:
        for width in (4, 3, 5, 2):
            WIDTH = width
            torch.manual_seed(0)
            expected = f(x)
            torch.manual_seed(0)
            torch.testing.assert_close(compiled(x), expected, rtol=0, atol=0)
    finally:
        WIDTH = 4
        reset()


class ScalesGiven(nn.Module):
    """Changes, in place, the weight of a module made in the frame that the
    graph used before the call: the setup would change it before the graph."""

    def __init__(self, inner):
        super().__init__()
        with torch.no_grad():
            inner.weight.mul_(2)
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


class InitsOwn(nn.Module):
    """Initialises its own submodule's tensors in place (fine: nothing read them before)."""

    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        nn.init.zeros_(self.lin.bias)
        with torch.no_grad():
            self.lin.weight.mul_(0.5)

    def forward(self, x):
        return self.lin(x)


def scales_given(x, y):
    inner = nn.Linear(4, 4)
    a = inner(x)
    return a, ScalesGiven(inner)(y)


def inits_own_after_other(x, y):
    first = nn.Linear(4, 4)   # (the frame's module 0; the constructor's own is numbered after it)
    return InitsOwn(4)(first(x)) + y


def test_in_place_changes_in_the_constructor():
    # changing a passed module in place is a graph break (2 graphs; torch.compile traces
    # the constructor in program order, 1): eager's answer either way
    check_identity(scales_given, two, calls=3)
    reset()
    check_against_oracle(inits_own_after_other, two, calls=3, fullgraph_ok=False)


@armature_only
def test_changing_a_passed_module_in_place_breaks():
    compiled = armature.compile(scales_given, backend="eager", fullgraph=True)
    with pytest.raises(armature.Unsupported, match="changes a tensor of a module passed to it in place"):
        compiled(*two())
    reset()
    counter = check_identity(inits_own_after_other, two, calls=3, fullgraph=True)
    assert counter.frame_count == 1
    reset()


def class_made_in_the_frame(x, y):
    class Local(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, v):
            return self.lin(v)

    m = Local()
    # the module's class is the class this call's statement made (a break at the
    # constructor: the setup would run before the statement)
    return m(x) + y, type(m) is Local, Local is type(m)


def test_module_of_a_class_made_in_the_frame():
    counter = check_identity(class_made_in_the_frame, two, calls=3, observe=_with_class_identity)
    if not USING_TORCH:
        assert counter.frame_count <= 2
    reset()


def _with_class_identity(out, inputs):
    return out[0], out[1], out[2]


@armature_only
def test_class_made_in_the_frame_escaping_is_the_modules_class():
    def f(x):
        class Local(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)

        m = Local()
        return Local, m

    compiled = armature.compile(f, backend="eager")
    for _ in range(3):
        cls, m = compiled(torch.randn(4))
        assert type(m) is cls
    reset()
