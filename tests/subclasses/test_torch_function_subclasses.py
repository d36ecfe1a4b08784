"""Tensor subclasses with ``__torch_function__``, and TorchFunctionModes.

Each case compiles a function over a subclass (or under a mode), compares
results, their classes and Python attributes with eager, counts graphs, and
where torch.compile supports the same thing, compares graph counts with it.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import armature

from helpers import CountingBackend


# --- the zoo ----------------------------------------------------------------------

GGML_SIZES = {"q8": (32, 34), "f16": (1, 2)}


class GGUFParameter(torch.nn.Parameter):
    """The shape of diffusers' GGUF quantized weight: a Parameter subclass
    made with _make_subclass, carrying attributes, re-wrapping the tensors
    its ops return."""

    def __new__(cls, data, requires_grad=False, quant_type=None):
        data = data if data is not None else torch.empty(0)
        self = torch.Tensor._make_subclass(cls, data, requires_grad)
        self.quant_type = quant_type
        block, size = GGML_SIZES[quant_type]
        self.quant_shape = (*self.shape[:-1], self.shape[-1] // size * block)
        return self

    def as_tensor(self):
        return torch.Tensor._make_subclass(torch.Tensor, self, self.requires_grad)

    @staticmethod
    def _extract_quant_type(args):
        for arg in args:
            if isinstance(arg, list) and isinstance(arg[0], GGUFParameter):
                return arg[0].quant_type
            if isinstance(arg, GGUFParameter):
                return arg.quant_type
        return None

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        result = super().__torch_function__(func, types, args, kwargs)
        if isinstance(result, torch.Tensor):
            return cls(result, quant_type=cls._extract_quant_type(args))
        if type(result) in (list, tuple):
            quant_type = cls._extract_quant_type(args)
            wrapped = [cls(x, quant_type=quant_type) if isinstance(x, torch.Tensor) else x for x in result]
            return type(result)(wrapped)
        return result


class Tagged(torch.Tensor):
    """A subclass with extra attributes, methods and a property; results of
    ops become Tagged through torch's default __torch_function__."""

    def scaled(self, k):
        return self * k

    @property
    def double_sum(self):
        return self.sum() * 2

    def describe(self):
        return getattr(self, "tag", "untagged")


CALLS = []


class Logged(torch.Tensor):
    """Overrides __torch_function__ and changes results (adds 1 after every
    torch.mul), so a bypassed override would show."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        CALLS.append(getattr(func, "__name__", str(func)))
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
        if func is torch.mul:
            out = out + 1
        return out


class Priority(Logged):
    """A subclass of Logged: offered first, before its base."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.add:
            return NotImplemented
        return super().__torch_function__(func, types, args, kwargs)


class PlusTen(TorchFunctionMode):
    def __init__(self, amount=10):
        super().__init__()
        self.amount = amount

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.add:
            return out + self.amount
        return out


class GetItemToIndex(TorchFunctionMode):
    """transformers' TransformGetItemToIndex: tensor indices via aten.index."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func == torch.Tensor.__getitem__:
            index_args = args[1] if isinstance(args[1], tuple) else (args[1],)
            if all(isinstance(i, torch.Tensor) for i in index_args):
                return torch.ops.aten.index(args[0], list(index_args))
        return func(*args, **(kwargs or {}))


def _compile(fn, **kw):
    backend = CountingBackend(kw.pop("backend", "eager"))
    return armature.compile(fn, backend=backend, **kw), backend


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            torch.testing.assert_close(a, b)
        assert {k: v for k, v in vars(a).items()} == {k: v for k, v in vars(b).items()}
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


# --- GGUF-style Parameter subclass ---------------------------------------------------

class QuantLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = GGUFParameter(torch.randn(4, 34), quant_type="q8")

    def forward(self, x):
        w = self.weight
        deq = w.as_tensor()[:, :32]            # a "dequantize" that drops the scales
        return F.linear(x, deq), w.quant_type, w.quant_shape


def test_gguf_parameter_subclass_in_a_module():
    m = QuantLinear()
    cm, backend = _compile(m)
    x = torch.randn(2, 32)
    for _ in range(2):
        _same(cm(x), m(x))
    assert backend.frame_count == 1


def test_gguf_ops_return_wrapped_subclass_with_attributes():
    w = GGUFParameter(torch.randn(4, 34), quant_type="q8")

    def f(w, x):
        y = w * 2                              # GGUFParameter(quant_type="q8")
        parts = torch.split(w, 2)              # a tuple of GGUFParameters
        return y, parts, y.quant_type, x + 1

    cf, backend = _compile(f)
    x = torch.randn(3)
    for _ in range(2):
        _same(cf(w, x), f(w, x))
    assert backend.frame_count == 1


# --- subclasses with attributes and methods --------------------------------------------

def test_subclass_methods_properties_and_attributes():
    def f(t):
        u = t.scaled(3)                        # a user method: Tagged
        u.tag = "scaled"                       # a Python attribute on a new tensor
        return u, u.describe(), t.describe(), t.double_sum, hasattr(t, "tag")

    cf, backend = _compile(f)
    t = torch.randn(4).as_subclass(Tagged)
    for _ in range(2):
        _same(cf(t), f(t))
    t.tag = "input"                            # the attribute appears: guards notice
    _same(cf(t), f(t))
    assert backend.frame_count == 2


def test_attribute_written_on_an_input_subclass_is_replayed():
    def f(t):
        t.calls = getattr(t, "calls", 0) + 1
        return t + 1

    cf, _ = _compile(f)
    a = torch.zeros(2).as_subclass(Tagged)
    b = torch.zeros(2).as_subclass(Tagged)
    for _ in range(3):
        _same(cf(a), f(b))
    assert a.calls == b.calls == 3


def test_as_subclass_and_plain_results_keep_eager_classes():
    def f(x):
        t = x.as_subclass(Tagged)
        with torch._C.DisableTorchFunctionSubclass():
            plain = t + 1                      # plain Tensor under the switch
        return t * 2, plain, t.as_subclass(torch.Tensor)

    cf, backend = _compile(f)
    x = torch.randn(3)
    _same(cf(x), f(x))
    assert backend.frame_count == 1


def test_overriding_subclass_changes_results_and_sees_every_call():
    def f(t):
        return torch.mul(t, 2), t.sum(), t.shape[0]

    cf, backend = _compile(f)
    t = torch.ones(3).as_subclass(Logged)
    CALLS.clear()
    expected = f(t)
    eager_calls = list(CALLS)
    assert eager_calls == ["mul", "sum", "__get__"]   # x.shape is offered too
    for _ in range(2):                         # traced, then cached
        CALLS.clear()
        _same(cf(t), expected)
        assert CALLS == eager_calls            # the override's list appends are replayed
    assert backend.frame_count == 1


def test_subclass_dispatch_order_and_not_implemented():
    def f(a, b):
        return torch.mul(a, b), torch.add(a, b)

    a = torch.ones(2).as_subclass(Logged)
    b = torch.ones(2).as_subclass(Priority)
    cf, _ = _compile(f)
    _same(cf(a, b), f(a, b))


def test_guard_on_subclass_type():
    def f(t):
        return torch.mul(t, 2)

    cf, backend = _compile(f)
    for t in (torch.ones(2), torch.ones(2).as_subclass(Logged), torch.ones(2)):
        _same(cf(t), f(t))
    assert backend.frame_count == 2


# --- TorchFunctionModes ---------------------------------------------------------------

def test_mode_around_the_compiled_call_is_traced_and_guarded():
    def f(x):
        return torch.add(x, 1) * 2

    cf, backend = _compile(f)
    x = torch.ones(2)
    with PlusTen():
        _same(cf(x), f(x))
        _same(cf(x), f(x))
    with PlusTen(100):                         # another mode object, another amount
        _same(cf(x), f(x))
    _same(cf(x), f(x))                         # no mode
    assert backend.frame_count == 3


def test_mode_entered_inside_compiled_code_is_one_graph():
    def f(x, idx):
        with GetItemToIndex():
            y = x[idx] * 2                     # tensor index through aten.index
        with PlusTen():
            z = torch.add(y, 1)
        return z

    cf, backend = _compile(f, fullgraph=True)
    x, idx = torch.randn(5), torch.tensor([0, 3])
    _same(cf(x, idx), f(x, idx))
    assert torch._C._len_torch_function_stack() == 0
    assert backend.frame_count == 1


def test_mode_and_subclass_together():
    def f(t):
        return torch.add(torch.mul(t, 2), 1)

    cf, _ = _compile(f)
    t = torch.ones(2).as_subclass(Logged)
    with PlusTen():
        _same(cf(t), f(t))


def test_graph_count_matches_torch_compile():
    def f(t, x):
        u = t.scaled(2) + x
        return u.sum()

    t, x = torch.randn(3).as_subclass(Tagged), torch.randn(3)
    cf, ours = _compile(f)
    _same(cf(t, x), f(t, x))
    theirs = CountingBackend("eager")
    torch._dynamo.reset()
    _same(torch.compile(f, backend=theirs)(t, x), f(t, x))
    assert ours.frame_count == theirs.frame_count == 1


# --- what breaks cleanly ------------------------------------------------------------

class DispatchOnly(torch.Tensor):
    """__torch_dispatch__ without __tensor_flatten__: not traceable."""

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        with torch._C._DisableTorchDispatch():
            return func(*args, **(kwargs or {}))


def test_dispatch_subclass_without_flatten_runs_as_python():
    def f(x):
        return x + 1

    t = torch.Tensor._make_subclass(DispatchOnly, torch.ones(2))
    cf = armature.compile(f, backend="eager")
    out = cf(t)
    torch.testing.assert_close(out.as_subclass(torch.Tensor) if isinstance(out, DispatchOnly) else out,
                               torch.full((2,), 2.0))
    with pytest.raises(armature.Unsupported, match="__tensor_flatten__"):
        armature.compile(f, backend="eager", fullgraph=True)(t)


# --- traceable wrapper subclasses and Parameter subclasses -----------------------------

@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_traceable_wrapper_subclass_is_a_graph_input(backend):
    from torch.testing._internal.two_tensor import TwoTensor

    def f(x, y):
        return (x * 2).sin() + y

    x = TwoTensor(torch.randn(3), torch.randn(3))
    y = torch.randn(3)
    cf, counting = _compile(f, backend=backend)
    for _ in range(2):
        out, ref = cf(x, y), f(x, y)
        assert type(out) is TwoTensor
        torch.testing.assert_close(out.a, ref.a)
        torch.testing.assert_close(out.b, ref.b)
    assert counting.frame_count == 1


class ScaledParameter(torch.nn.Parameter):
    """A Parameter subclass (torch's disabled __torch_function__ is
    inherited: ops on it return plain tensors) with a method of its own."""

    def scale(self):
        return 2.0


class ScaledLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = ScaledParameter(torch.randn(3, 3))

    def forward(self, x):
        return F.linear(x, self.weight) * self.weight.scale()


def test_parameter_subclass_in_a_module_with_gradients():
    m = ScaledLinear()
    cm, backend = _compile(m, backend="aot_eager")
    x = torch.randn(2, 3)
    out = cm(x)
    out.sum().backward()
    got = m.weight.grad.clone()
    m.weight.grad = None
    m(x).sum().backward()
    torch.testing.assert_close(got, m.weight.grad)
    torch.testing.assert_close(out, m(x))
    assert type(out) is torch.Tensor and backend.frame_count == 1
