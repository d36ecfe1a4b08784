"""Constructs of issue #36 (item 4) that armature already handled in one
graph where torch.compile makes one, kept here as regression tests of their
variants (compared with eager: results, side effects, gradients; graph
counts with torch.compile's over the same calls):

* ``cls.__dict__`` (a mappingproxy: reads, ``in``, iteration, ``.items()``)
  and ``obj.__dict__`` (reads, writes, ``vars(obj)``);
* NumPy dtype objects as arguments, changing between calls (guarded);
* lazy modules called again with other inputs after materialisation;
* an ``autograd.Function`` whose arguments include modules (reformer's
  reversible layers: ``apply(x, blocks)``, forward and backward call them).
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn

import armature
from helpers import USING_TORCH, CountingBackend, assert_equal, reset, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def graphs_over(fn, calls, impl):
    counter = CountingBackend("eager")
    reset()
    torch._dynamo.reset()
    try:
        compiled = armature.compile(fn, backend=counter) if impl == "armature" else \
            torch.compile(fn, backend=counter)
        results = [compiled(*args) for args in calls]
    finally:
        torch._dynamo.reset()
    return counter.frame_count, results


def check(fn, calls, fresh_args=None):
    """Each call compiled vs eager (``fresh_args(i)`` rebuilds mutable
    arguments for each run), and no more graphs than torch.compile."""
    make = fresh_args or (lambda i: calls[i])
    ours, got = graphs_over(fn, [make(i) for i in range(len(calls))], "armature")
    for i, g in enumerate(got):
        assert_equal(fn(*make(i)), g, f"call {i}")
    oracle, _ = graphs_over(fn, [make(i) for i in range(len(calls))], "torch")
    # (0: torch.compile ran the frame as Python, as torch 2.11's does on class_dict_reads)
    assert not oracle or ours <= oracle, f"armature {ours} graphs, torch.compile {oracle}"
    assert ours >= 1, "the frame ran as Python"


# --- cls.__dict__ and obj.__dict__ -------------------------------------------------

class Base:
    scale = 3
    shift = 1

    def method(self):
        return 1


class Derived(Base):
    extra = 2


class Plain:
    def __init__(self):
        self.a = 2
        self.b = 3


def class_dict_reads(x):
    d = Base.__dict__
    n = 0
    for k in Derived.__dict__:
        if not k.startswith("_"):
            n += 1
    out = x * d["scale"] + d.get("shift", 0) + d.get("missing", 7)
    for k, v in Base.__dict__.items():
        if isinstance(v, int):
            out = out + v
    return out, "scale" in d, "zz" in d, "extra" in Base.__dict__, n, callable(d["method"]), \
        sorted(k for k in d.keys() if not k.startswith("__"))


def instance_dict(x, o):
    o.__dict__["c"] = 5
    vars(o)["a"] = 10
    d = o.__dict__
    d.update(q=1)
    total = sum(v for v in vars(o).values())
    return x * o.a + o.c + o.q + total, "a" in d, "zz" in vars(o), sorted(vars(o))


def fresh_object_dict(x):
    p = Plain()
    p.__dict__["z"] = 4
    return x * p.z, sorted(vars(p)), len(p.__dict__)


def test_class_dict_mappingproxy():
    check(class_dict_reads, [(t(3),), (t(3),)])


def test_instance_dict_reads_and_writes():
    objs = [Plain() for _ in range(4)]
    check(instance_dict, [(t(3), objs[0]), (t(3), objs[1])],
          fresh_args=lambda i: (torch.ones(3) * i, Plain()))


def test_dict_of_an_object_made_in_the_frame():
    check(fresh_object_dict, [(t(3),), (t(3),)])


class WithProperty:
    k = 2

    @property
    def doubled(self):
        return self.k * 2


def property_from_class_dict(x):
    prop = WithProperty.__dict__["doubled"]
    return x * prop.fget(WithProperty()), prop.fset is None, prop.__doc__


class VarsModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.n = 2

    def forward(self, x):
        d = vars(self)
        self.extra = 5
        names = [k for k in d if not k.startswith("_")]
        values = [v for k, v in d.items() if k == "n"]
        return self.lin(x) * d["n"], names, values, len(d) > 3, "extra" in d.keys(), type(d.keys()).__name__


def test_property_fields_read_from_a_class_dict():
    # was: the frame ran as Python ("the C __getattribute__ of property")
    check(property_from_class_dict, [(t(3),), (t(3),)])


def test_vars_of_a_module_iterated():
    # was: the frame ran as Python ("vars() of <module>", then iterating its __dict__)
    torch.manual_seed(0)
    m = VarsModule()
    x = t(2, 3)
    counter = CountingBackend("eager")
    reset()
    compiled = armature.compile(copy.deepcopy(m), backend=counter, fullgraph=True)
    for _ in range(2):
        eager = copy.deepcopy(m)
        assert_equal(eager(x), compiled(x))
    # the second call sees the attribute the first one added: the keys guard recompiles once
    assert counter.frame_count == 2


# --- NumPy dtypes as arguments --------------------------------------------------------

def numpy_dtype_argument(x, dt):
    a = x.numpy().astype(dt)
    return (torch.as_tensor(a, dtype=torch.float64) + 1, torch.from_numpy(a) * 2, dt == np.float32,
            np.dtype(dt) == np.dtype("float64"), dt is np.float32, a.dtype == dt)


def test_numpy_dtype_arguments_change_between_calls():
    x = t(3)
    dts = [np.float32, np.dtype("float32"), np.float64, np.int64, np.float32, np.dtype("int64")]
    check(numpy_dtype_argument, [(x, dt) for dt in dts])


# --- lazy modules called again ------------------------------------------------------------

class LazyPair(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.LazyLinear(4)
        self.conv = nn.LazyConv2d(2, 3)

    def forward(self, x, y):
        return self.lin(x).relu().sum(-1), self.conv(y).mean()


def test_lazy_module_called_with_other_inputs():
    torch.manual_seed(0)
    m = LazyPair()
    m(t(2, 3), t(1, 3, 8, 8))   # materialised
    inputs = [(t(5, 3), t(2, 3, 9, 9)), (t(7, 3), t(3, 3, 10, 10)), (t(2, 3), t(1, 3, 8, 8))]
    ours, got = graphs_over(m, inputs, "armature")
    for args, g in zip(inputs, got):
        assert_equal(m(*args), g)
    oracle, _ = graphs_over(m, inputs, "torch")
    assert 1 <= ours <= oracle


def test_lazy_module_materialised_by_the_compiled_call():
    inputs = [(t(2, 3), t(1, 3, 8, 8)), (t(6, 3), t(2, 3, 9, 9))]
    torch.manual_seed(0)
    eager = LazyPair()
    torch.manual_seed(0)
    m = LazyPair()
    counter = CountingBackend("eager")
    compiled = armature.compile(m, backend=counter)
    for i, args in enumerate(inputs):
        torch.manual_seed(10 + i)    # (the first call draws the initial weights)
        expected = eager(*args)
        torch.manual_seed(10 + i)
        assert_equal(expected, compiled(*args))
    assert_equal(eager.state_dict(), m.state_dict())
    torch.manual_seed(0)
    oracle, _ = graphs_over(LazyPair(), inputs, "torch")
    assert 1 <= counter.frame_count <= oracle


# --- autograd.Function with modules among its arguments (reformer) -------------------------

class Reversible(torch.autograd.Function):
    """Reformer's pattern: the forward runs the blocks without saving
    activations; the backward recomputes each block under enable_grad and
    back-propagates through it by hand."""

    @staticmethod
    def forward(ctx, x, blocks, scale):
        ctx.blocks = blocks
        ctx.scale = scale
        with torch.no_grad():
            for b in blocks:
                x = x + b(x) * scale
        ctx.save_for_backward(x.detach())
        return x

    @staticmethod
    def backward(ctx, gy):
        (y,) = ctx.saved_tensors
        gx = gy
        for b in reversed(ctx.blocks):
            with torch.enable_grad():
                yd = y.detach().requires_grad_()
                out = b(yd) * ctx.scale
                torch.autograd.backward(out, gx)
            gx = gx + yd.grad
        return gx, None, None


class ReversibleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])

    def forward(self, x):
        return Reversible.apply(x * 2, self.blocks, 0.5).sum()


def test_autograd_function_with_a_module_list_argument():
    torch.manual_seed(0)
    net = ReversibleNet()
    x = t(3, 4)

    def run(impl):
        m = copy.deepcopy(net)
        xx = x.clone().requires_grad_()
        counter = CountingBackend("eager")
        reset()
        torch._dynamo.reset()
        try:
            f = m if impl == "eager" else armature.compile(m, backend=counter) if impl == "armature" \
                else torch.compile(m, backend=counter)
            out = f(xx)
            out.backward()
        finally:
            torch._dynamo.reset()
        return out.detach(), xx.grad, [p.grad for p in m.parameters()], counter.frame_count

    expected, ours, oracle = run("eager"), run("armature"), run("torch")
    assert_equal(expected[:3], ours[:3])
    assert 1 <= ours[3] <= oracle[3], f"armature {ours[3]} graphs, torch.compile {oracle[3]}"
