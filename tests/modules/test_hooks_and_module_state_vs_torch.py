"""Module hooks on the submodules of a compiled model, and modules that set
attributes on themselves in ``forward``, against eager and torch.compile.

Hooks (forward pre-hooks and forward hooks, with kwargs, prepended,
``always_call``, global ones, backward hooks; after the variants of
PyTorch's test/dynamo/test_modules.py): traced into the graph, results,
gradients and the hooks' own side effects as eager, graphs no more than
torch.compile's.  Hooks added or removed after compiling are seen (where
torch.compile keeps running the graph it made without them).

State (``self.step += 1``, ``self.cache = x.detach()``, a new attribute, a
buffer replaced, a list grown, a flag flipped, ``object.__setattr__``): the
writes replayed as eager, one graph where torch.compile makes one or more.
"""
from __future__ import annotations

import copy
import functools

import pytest
import torch
import torch.nn as nn

from helpers import USING_TORCH, CountingBackend, assert_equal, compile_fn, reset

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def _torch_graphs(run) -> int:
    counter = CountingBackend("eager")
    torch._dynamo.reset()
    try:
        run(lambda m, **kw: torch.compile(m, backend=counter, **kw))
    finally:
        torch._dynamo.reset()
    return counter.frame_count


def _ours(run, backend="eager"):
    reset()
    counter = CountingBackend(backend)
    result = run(lambda m, **kw: compile_fn(m, backend=counter, **kw))
    return result, counter.frame_count


class ToyModel(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, hidden), nn.ReLU(), nn.Linear(hidden, 5), nn.ReLU())

    def forward(self, x):
        return self.net(x)


class SelfContained(ToyModel):
    def forward(self, x):
        return self.net(x) * self.net(x)


class ExplicitDunderCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(10, 6)

    def forward(self, x):
        return self.linear.__call__(x)


# --- hooks ------------------------------------------------------------------------


def _activations_run(model_cls, backend_kwargs=None):
    """Forward hooks that save every module's input (test_hooks_allowed_modules):
    two training steps; the names recorded on the second."""
    def run(wrap):
        torch.manual_seed(0)
        model = model_cls()
        seen = {}
        for name, module in model.named_modules():
            module.register_forward_hook(functools.partial(lambda n, mod, inp, out: seen.__setitem__(n, inp[0].shape),
                                                           name))
        compiled = wrap(model, **(backend_kwargs or {}))
        grads = []
        for step in range(2):
            seen.clear()
            torch.manual_seed(10 + step)
            x = torch.randn(20, 10)
            compiled(x).sum().backward()
            grads.append([p.grad.clone() for p in model.parameters()])
        return sorted(seen.items()), grads
    return run


@pytest.mark.parametrize("model_cls", [ToyModel, ExplicitDunderCall], ids=["allowed_modules", "dunder_call"])
def test_forward_hooks_on_every_module(model_cls):
    run = _activations_run(model_cls)
    expected = run(lambda m, **kw: m)
    (got, ours) = _ours(run, backend="aot_eager")
    assert_equal(expected, got)
    assert ours <= _torch_graphs(run)


def test_forward_hooks_fullgraph_one_graph():
    run = _activations_run(ToyModel, {"fullgraph": True})
    expected = run(lambda m, **kw: m)
    got, ours = _ours(run)
    assert_equal(expected, got)
    assert ours == 1 == _torch_graphs(run)


def test_output_replacing_hooks_self_contained():
    """Hooks returning a new output on every module, the net called twice;
    another number of dimensions recompiles once, then is stable."""
    def run(wrap):
        torch.manual_seed(0)
        model = SelfContained()
        for module in model.modules():
            module.register_forward_hook(lambda mod, inp, out: 2 * out + 1)
        compiled = wrap(model, fullgraph=True)
        torch.manual_seed(1)
        x = torch.randn(20, 10)
        out = compiled(x)
        out.sum().backward()
        outs = [out, [p.grad.clone() for p in model.parameters()]]
        outs.append(compiled(torch.randn(10, 10, 10)))
        outs.append(compiled(torch.randn(10, 10, 10)))
        return outs
    torch.manual_seed(5)
    expected = run(lambda m, **kw: m)
    torch.manual_seed(5)
    got, ours = _ours(run)
    assert_equal(expected, got)
    torch.manual_seed(5)
    assert ours <= _torch_graphs(run)


HOOK_KINDS = ["pre", "post", "pre_and_post", "kwargs", "returns_none_logs", "on_root", "prepend", "always_call",
              "global"]


def _hooked(kind, log):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    if kind in ("pre", "pre_and_post"):
        m[0].register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    if kind in ("post", "pre_and_post"):
        m[2].register_forward_hook(lambda mod, args, out: out + 1)
    if kind == "kwargs":
        m[0].register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] - 1,), kwargs), with_kwargs=True)
        m[2].register_forward_hook(lambda mod, args, kwargs, out: out * 3, with_kwargs=True)
    if kind == "returns_none_logs":
        m[1].register_forward_hook(lambda mod, args, out: log.append(tuple(out.shape)))
    if kind == "on_root":
        m.register_forward_hook(lambda mod, args, out: out.sum(-1))
        m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    if kind == "prepend":
        m[0].register_forward_hook(lambda mod, args, out: out + 1)
        m[0].register_forward_hook(lambda mod, args, out: out * 2, prepend=True)
    if kind == "always_call":
        m[2].register_forward_hook(lambda mod, args, out: out * 0.5, always_call=True)
    return m


@pytest.mark.parametrize("kind", HOOK_KINDS)
def test_submodule_hooks(kind):
    def run(wrap):
        log = []
        m = _hooked(kind, log)
        handle = None
        if kind == "global":
            handle = nn.modules.module.register_module_forward_hook(
                lambda mod, args, out: out * 1.5 if isinstance(mod, nn.Linear) else None)
        try:
            compiled = wrap(m)
            outs = []
            for step in range(2):
                torch.manual_seed(step)
                x = torch.randn(3, 4, requires_grad=True)
                out = compiled(x)
                out.sum().backward()
                outs.append((out, x.grad))
        finally:
            if handle is not None:
                handle.remove()
        return outs, log
    expected = run(lambda m, **kw: m)
    got, ours = _ours(run)
    assert_equal(expected, got)
    assert ours <= _torch_graphs(run)


def test_backward_hooks_fire_on_every_module():
    class CustomLinear(nn.Module):
        def __init__(self, a, b):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(a, b))

        def forward(self, x):
            return torch.mm(x, self.weight)

    def run(wrap):
        torch.manual_seed(0)
        model = nn.Sequential(CustomLinear(10, 10), CustomLinear(10, 20), CustomLinear(20, 5))
        sizes, pre_sizes = {}, {}
        for name, module in model.named_modules():
            module.register_full_backward_hook(functools.partial(
                lambda n, mod, gi, go: sizes.__setitem__(n, [tuple(g.shape) for g in go]), name))
            module.register_full_backward_pre_hook(functools.partial(
                lambda n, mod, go: pre_sizes.__setitem__(n, [tuple(g.shape) for g in go]), name))
        compiled = wrap(model)
        for step in range(2):
            torch.manual_seed(step)
            compiled(torch.randn(20, 10)).sum().backward()
        return sorted(sizes.items()), sorted(pre_sizes.items()), [p.grad for p in model.parameters()]
    expected = run(lambda m, **kw: m)
    got, ours = _ours(run, backend="aot_eager")
    assert_equal(expected, got)
    assert ours <= _torch_graphs(run)


def test_instance_method_of_a_user_object_as_hook():
    class Holder:
        def __init__(self, module):
            self.module = module
            self.handle = module.register_forward_pre_hook(self.shift, prepend=True, with_kwargs=True)

        def shift(self, module, args, kwargs):
            return (args[0] + 1,), kwargs

        def __call__(self, x):
            return self.module(x)

    class Square(nn.Module):
        def forward(self, x):
            return x * x

    x = torch.zeros(3, 4)
    counter = CountingBackend("eager")
    out = compile_fn(Holder(Square()), backend=counter, fullgraph=True)(x)
    assert_equal((x + 1) * (x + 1), out)
    assert counter.frame_count == 1


def test_hooks_added_and_removed_after_compiling_are_seen():
    """Each set of hooks is its own entry; going back to an earlier set
    reuses its entry (torch.compile does not see hooks added later)."""
    def run(wrap):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
        compiled = wrap(m)
        x = torch.randn(3, 4)
        outs = [compiled(x)]
        pre = m[0].register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        outs.append(compiled(x))
        post = m[2].register_forward_hook(lambda mod, args, out: out + 1)
        outs.append(compiled(x))
        pre.remove()
        outs.append(compiled(x))
        post.remove()
        outs.append(compiled(x))
        return outs
    expected = run(lambda m, **kw: m)
    got, ours = _ours(run)
    assert_equal(expected, got)
    assert ours == 4   # none, pre, pre+post, post (the last call reuses the first entry)


def test_hook_that_removes_itself():
    def run(wrap):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        handles = {}

        def hook(mod, args, out):
            handles["h"].remove()
            return out * 2
        handles["h"] = m[0].register_forward_hook(hook)
        compiled = wrap(m)
        x = torch.randn(3, 4)
        return [compiled(x), compiled(x), len(m[0]._forward_hooks)]
    expected = run(lambda m, **kw: m)
    got, ours = _ours(run)
    assert_equal(expected, got)
    assert ours <= max(_torch_graphs(run), 2)


# --- modules that set attributes on themselves ------------------------------------


class Step(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.step += 1
        return self.lin(x) * self.step


class Cache(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.cache = None

    def forward(self, x):
        y = self.lin(x)
        self.cache = y.detach()
        return y + 1


class NewAttribute(nn.Module):
    def forward(self, x):
        self.text_encoding = x + 1
        return self.text_encoding


class RunningBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(4))
        self.n = 0

    def forward(self, x):
        self.running = self.running * 0.9 + x.mean(0) * 0.1
        self.n = self.n + 1
        return x - self.running


class FirstCallFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.first = True

    def forward(self, x):
        if self.first:
            self.first = False
            return self.lin(x) * 2
        return self.lin(x)


class History(nn.Module):
    def __init__(self):
        super().__init__()
        self.hist = []

    def forward(self, x):
        self.hist.append(x.sum().detach())
        self.last_shape = x.shape
        return x * len(self.hist)


class SubmoduleAttributes(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Step()

    def forward(self, x):
        self.inner.flag = True
        out = self.inner(x)
        self.inner.last = out.detach()
        return out


class TensorStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.step += 1
        return x * self.step


class BypassesSetattr(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        setattr(self, "rows", x.shape[0])
        object.__setattr__(self, "raw", 3)
        return self.lin(x) + self.rows + self.raw


STATE_MODULES = [Step, Cache, NewAttribute, RunningBuffer, FirstCallFlag, History, SubmoduleAttributes, TensorStep,
                 BypassesSetattr]


def _state_of(m):
    """Every attribute a forward may write, parameters and buffers included."""
    out = {}
    for k, v in vars(m).items():
        if k.startswith("_") and k not in ("_buffers", "_modules"):
            continue
        if k == "_modules":
            out[k] = {name: _state_of(sub) for name, sub in v.items()}
        elif k == "_buffers":
            out[k] = {name: b.clone() for name, b in v.items()}
        elif isinstance(v, torch.Tensor):
            out[k] = v.clone()
        elif isinstance(v, list):
            out[k] = [i.clone() if isinstance(i, torch.Tensor) else i for i in v]
        else:
            out[k] = v
    return out


@pytest.mark.parametrize("cls", STATE_MODULES, ids=[c.__name__ for c in STATE_MODULES])
def test_module_writes_its_own_attributes(cls):
    torch.manual_seed(0)
    base = cls()

    def run(wrap):
        m = copy.deepcopy(base)
        compiled = wrap(m)
        outs = []
        for step in range(4):
            torch.manual_seed(step)
            outs.append(compiled(torch.randn(3, 4)))
            outs.append(_state_of(m))
        if cls is NewAttribute:
            outs.append(m.text_encoding is outs[-2])
        return outs
    expected = run(lambda m, **kw: m)
    got, ours = _ours(run)
    assert_equal(expected, got)
    assert ours <= _torch_graphs(run)
    if cls in (Step, SubmoduleAttributes):
        # an int counter on a module: static at first, a symbol once it has changed
        # (config.allow_unspec_int_on_nn_module; torch.compile keeps it static: a graph per value)
        assert ours == 2, f"{ours} graphs"
    if cls in (Cache, NewAttribute, TensorStep, BypassesSetattr):
        assert ours == 1, f"{ours} graphs"


def test_attribute_of_a_submodule_set_from_a_function():
    models = nn.Sequential(nn.Linear(3, 3))
    models[0].abc = False

    def run():
        models[0].abc = True
        return models(torch.ones(1, 3))

    counter = CountingBackend("eager")
    out = compile_fn(run, backend=counter, fullgraph=True)()
    assert models[0].abc is True
    assert_equal(models(torch.ones(1, 3)), out)
    assert counter.frame_count == 1


@pytest.mark.parametrize("cls", [Step, Cache, NewAttribute, SubmoduleAttributes, TensorStep, BypassesSetattr],
                         ids=lambda c: c.__name__)
def test_module_writes_in_one_graph_fullgraph(cls):
    """The writes need no graph break (``object.__setattr__`` on a module
    included: the instance dict, nothing registered), as torch.compile's
    fullgraph."""
    torch.manual_seed(0)
    base = cls()

    def run(wrap):
        m = copy.deepcopy(base)
        compiled = wrap(m, fullgraph=True)
        torch.manual_seed(1)
        return compiled(torch.randn(3, 4)), _state_of(m)
    expected = run(lambda m, **kw: m)
    got, ours = _ours(run)
    assert_equal(expected, got)
    assert ours == 1 == _torch_graphs(run)
