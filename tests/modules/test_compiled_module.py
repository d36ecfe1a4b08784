"""The wrapper returned by ``armature.compile(model)``: shared state, attribute
forwarding, train/eval in both directions, and module hooks (instance and
global, added before and after compiling, removed later)."""

from __future__ import annotations

import copy
import io

import pytest
import torch
import torch.nn as nn

from helpers import CountingBackend, armature_only, assert_equal, assert_same, compile_fn, t

import armature


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))
        self.register_buffer("shift", torch.arange(4.0))
        self.register_buffer("scratch", torch.zeros(4), persistent=False)
        self.scale = 2.0

    def forward(self, x, bias=None):
        y = self.bn(self.lin(x) + self.shift) * self.scale
        if bias is not None:
            y = y + bias
        return self.head(y)


def make():
    torch.manual_seed(0)
    return Net()


def n_entries(cm) -> int:
    return len(armature.cache_entries(cm))


# --------------------------------------------------------------------------
# shared state
# --------------------------------------------------------------------------


def test_returns_a_module():
    m = make()
    cm = compile_fn(m, backend="eager")
    assert isinstance(cm, nn.Module)
    assert cm is not m


# armature's wrapper shares the original's dicts (torch.compile's
# OptimizedModule prefixes every key with "_orig_mod."): armature only
@armature_only
def test_shares_parameters_buffers_submodules():
    m = make()
    cm = compile_fn(m, backend="eager")
    assert [id(p) for p in cm.parameters()] == [id(p) for p in m.parameters()]
    assert [id(b) for b in cm.buffers()] == [id(b) for b in m.buffers()]
    assert [n for n, _ in cm.named_parameters()] == [n for n, _ in m.named_parameters()]
    assert [n for n, _ in cm.named_buffers()] == [n for n, _ in m.named_buffers()]
    assert [n for n, _ in cm.named_children()] == [n for n, _ in m.named_children()]
    assert [id(c) for c in cm.children()] == [id(c) for c in m.children()]
    assert cm.lin is m.lin and cm.head[1] is m.head[1]
    assert cm.lin.weight is m.lin.weight
    assert cm.shift is m.shift


@armature_only
def test_state_dict_keys_identical():
    m = make()
    cm = compile_fn(m, backend="eager")
    assert list(cm.state_dict()) == list(m.state_dict())
    assert "scratch" not in cm.state_dict()  # non-persistent buffer stays non-persistent
    for (k1, v1), (k2, v2) in zip(cm.state_dict().items(), m.state_dict().items()):
        assert k1 == k2 and v1.data_ptr() == v2.data_ptr()


@armature_only
def test_state_dict_roundtrip_through_bytesio():
    m = make()
    cm = compile_fn(m, backend="eager")
    x = t(3, 4)
    cm.eval()
    cm(x)  # compiled once

    # save from the wrapper, load into a fresh module
    buf = io.BytesIO()
    torch.save(cm.state_dict(), buf)
    buf.seek(0)
    loaded = torch.load(buf)
    fresh = Net()
    fresh.load_state_dict(loaded)
    fresh.eval()
    assert_equal(m.state_dict(), fresh.state_dict())
    assert_equal(fresh(x), cm(x))

    # new values loaded into the wrapper change the original's tensors
    new = {k: (v * 3 + 1 if v.is_floating_point() else v + 5) for k, v in loaded.items()}
    buf = io.BytesIO()
    torch.save(new, buf)
    buf.seek(0)
    w_before = m.lin.weight
    res = cm.load_state_dict(torch.load(buf))
    assert list(res.missing_keys) == [] and list(res.unexpected_keys) == []
    assert m.lin.weight is w_before  # copied in place
    assert_equal(new["lin.weight"], m.lin.weight.detach())
    assert_equal(new["bn.running_mean"], m.bn.running_mean)
    assert_equal(new["bn.num_batches_tracked"], m.bn.num_batches_tracked)
    twin = Net()
    twin.load_state_dict(new)
    twin.eval()
    assert_equal(twin(x), cm(x))

    # and loading into the original is visible through the wrapper
    buf = io.BytesIO()
    torch.save(twin.state_dict(), buf)
    buf.seek(0)
    m.load_state_dict(torch.load(buf))
    assert_equal(cm.state_dict(), twin.state_dict())


def test_load_state_dict_strict_error_same_as_eager():
    m = make()
    cm = compile_fn(m, backend="eager")
    bad = dict(m.state_dict())
    bad.pop("lin.bias")
    bad["extra"] = torch.zeros(1)
    with pytest.raises(RuntimeError) as e_eager:
        make().load_state_dict(bad)
    with pytest.raises(RuntimeError) as e_comp:
        cm.load_state_dict(bad)
    assert str(e_comp.value).replace("Net", "X") == str(e_eager.value).replace("Net", "X") or \
        "lin.bias" in str(e_comp.value) and "extra" in str(e_comp.value)


# --------------------------------------------------------------------------
# attributes and train / eval
# --------------------------------------------------------------------------


def test_attribute_access_forwarded():
    m = make()
    cm = compile_fn(m, backend="eager")
    assert cm.scale == 2.0
    assert cm.lin.in_features == 4
    cm.scale = 3.0
    assert m.scale == 3.0
    m.scale = 4.0
    assert cm.scale == 4.0
    cm.new_attr = "hello"
    assert m.new_attr == "hello"
    with pytest.raises(AttributeError):
        cm.does_not_exist


def test_attribute_written_through_wrapper_seen_by_compiled_call():
    m = make().eval()
    cm = compile_fn(m, backend="eager")
    x = t(3, 4)
    assert_equal(m(x), cm(x))
    cm.scale = 0.5
    twin = copy.deepcopy(m)
    assert_equal(twin(x), cm(x))


def test_eval_on_wrapper_changes_original():
    m = make()
    cm = compile_fn(m, backend="eager")
    assert m.training and cm.training
    out = cm.eval()
    assert out is cm or out is m
    assert not m.training and not m.bn.training and not m.head[1].training
    assert not cm.training
    cm.train()
    assert m.training and m.bn.training
    cm.train(False)
    assert not m.training


def test_train_on_original_seen_by_wrapper():
    m = make()
    cm = compile_fn(m, backend="eager")
    m.eval()
    assert cm.training is False
    m.train()
    assert cm.training is True
    m.training = False
    assert cm.training is False


def test_train_eval_switch_gives_right_answer():
    m = make()
    twin = copy.deepcopy(m)
    counter = CountingBackend()
    cm = compile_fn(m, backend=counter, fullgraph=True)
    x = t(6, 4)
    for mode in ("eval", "train", "eval", "train"):
        getattr(cm, mode)()
        getattr(twin, mode)()
        assert_equal(twin(x), cm(x))
        assert_equal(twin.bn.running_mean, m.bn.running_mean)
        assert_equal(twin.bn.num_batches_tracked, m.bn.num_batches_tracked)
    assert counter.frame_count == 2


def test_kwargs_forwarded():
    assert_same(make().eval(), t(3, 4), graphs=1, bias=t(2 * 0 + 4))


def test_assert_same_whole_module_train():
    assert_same(make(), t(5, 4), graphs=1)


# --------------------------------------------------------------------------
# hooks
# --------------------------------------------------------------------------


def _log_hooks(m, log=None):
    """A full set of hooks of every flavour on ``m``, logging into ``log``
    (a closed-over list whose length changes is guarded, so pass None where
    the number of cache entries is checked)."""
    handles = []
    if log is None:
        class _Sink:
            def append(self, item):
                pass

        log = _Sink()

    def pre(mod, args):
        log.append("pre")

    def pre_replace(mod, args):
        log.append("pre_replace")
        return (args[0] * 2,) + tuple(args[1:])

    def pre_kw(mod, args, kwargs):
        log.append(("pre_kw", sorted(kwargs)))
        return (args[0] + 1,), dict(kwargs)

    def post(mod, args, out):
        log.append("post")

    def post_replace(mod, args, out):
        log.append("post_replace")
        return out * 3

    def post_kw(mod, args, kwargs, out):
        log.append(("post_kw", sorted(kwargs)))
        return out - args[0].sum()

    def first(mod, args, out):
        log.append("first")

    handles.append(m.register_forward_pre_hook(pre))
    handles.append(m.register_forward_pre_hook(pre_replace))
    handles.append(m.register_forward_pre_hook(pre_kw, with_kwargs=True))
    handles.append(m.register_forward_hook(post))
    handles.append(m.register_forward_hook(post_replace))
    handles.append(m.register_forward_hook(post_kw, with_kwargs=True))
    handles.append(m.register_forward_hook(first, prepend=True))
    return handles


def test_hooks_before_compiling():
    m = make().eval()
    twin = copy.deepcopy(m)
    log_c, log_e = [], []
    _log_hooks(m, log_c)
    _log_hooks(twin, log_e)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    for _ in range(3):
        assert_equal(twin(x), cm(x))
        assert_equal(twin(x, bias=x), cm(x, bias=x))
    assert log_c == log_e
    assert log_c.count("pre") == 6
    assert log_c[:3] == ["pre", "pre_replace", ("pre_kw", [])]
    assert log_c[3] == "first"


def test_pre_hook_returning_single_value():
    m = nn.Linear(4, 4)
    twin = copy.deepcopy(m)
    for mod in (m, twin):
        mod.register_forward_pre_hook(lambda mod, args: args[0] * 0.5)  # not a tuple: wrapped
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))


def test_pre_hook_with_kwargs_replaces_kwargs():
    m = make().eval()
    twin = copy.deepcopy(m)

    def hook(mod, args, kwargs):
        kwargs = dict(kwargs)
        kwargs["bias"] = args[0] * 10
        return args, kwargs

    for mod in (m, twin):
        mod.register_forward_pre_hook(hook, with_kwargs=True)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))
    assert_equal(twin(x, bias=x), cm(x, bias=x))


def test_prepend_order():
    m = nn.Linear(4, 4)
    twin = copy.deepcopy(m)
    logs = ([], [])
    for mod, log in zip((m, twin), logs):
        mod.register_forward_pre_hook(lambda mod, a, log=log: log.append("p1"))
        mod.register_forward_pre_hook(lambda mod, a, log=log: log.append("p0"), prepend=True)
        mod.register_forward_hook(lambda mod, a, o, log=log: log.append("h1"))
        mod.register_forward_hook(lambda mod, a, o, log=log: log.append("h0"), prepend=True)
        mod.register_forward_hook(lambda mod, a, k, o, log=log: log.append("hk"), with_kwargs=True, prepend=True)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(2, 4)
    assert_equal(twin(x), cm(x))
    assert logs[0] == logs[1] == ["p0", "p1", "hk", "h0", "h1"]


def test_hook_with_side_effect_counts_calls():
    m = make().eval()
    twin = copy.deepcopy(m)
    calls_c, calls_e = [], []
    m.lin.register_forward_hook(lambda mod, a, o: calls_c.append(o.shape[0]))
    twin.lin.register_forward_hook(lambda mod, a, o: calls_e.append(o.shape[0]))
    m.head.register_forward_pre_hook(lambda mod, a: calls_c.append("head"))
    twin.head.register_forward_pre_hook(lambda mod, a: calls_e.append("head"))
    counter = CountingBackend()
    cm = compile_fn(m, backend=counter, fullgraph=True)
    for n in (3, 3, 3):
        x = t(n, 4)
        assert_equal(twin(x), cm(x))
    assert calls_c == calls_e == [3, "head"] * 3
    # appending to a closed-over list changes its length, which (as with
    # torch.compile) is guarded: up to one graph per call, never more
    assert 1 <= counter.frame_count <= 3


def test_submodule_hook_replacing_output():
    m = make().eval()
    twin = copy.deepcopy(m)
    for mod in (m, twin):
        mod.bn.register_forward_hook(lambda mod, a, o: torch.zeros_like(o))
        mod.head[1].register_forward_pre_hook(lambda mod, a: (a[0] + 1,))
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))


@armature_only
def test_hooks_added_after_compiling_and_removed():
    m = make().eval()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))
    assert n_entries(cm) == 1

    hc = _log_hooks(m)
    he = _log_hooks(twin)
    assert_equal(twin(x), cm(x))
    assert n_entries(cm) == 2  # recompiled for the hooks
    assert_equal(twin(x), cm(x))
    assert_equal(twin(x, bias=x), cm(x, bias=x))
    assert n_entries(cm) == 3  # kwargs given: another entry

    for h in hc + he:
        h.remove()
    assert_equal(twin(x), cm(x))
    assert n_entries(cm) == 3  # the hook-free entry is used again

    # a hook on a submodule added later also invalidates
    h = m.lin.register_forward_hook(lambda mod, a, o: o * 0)
    h2 = twin.lin.register_forward_hook(lambda mod, a, o: o * 0)
    assert_equal(twin(x), cm(x))
    assert n_entries(cm) == 4
    h.remove()
    h2.remove()
    assert_equal(twin(x), cm(x))
    assert n_entries(cm) == 4


def test_hooks_added_after_compiling_log_like_eager():
    m = make().eval()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))
    log_c, log_e = [], []
    hc = _log_hooks(m, log_c)
    he = _log_hooks(twin, log_e)
    for _ in range(2):
        assert_equal(twin(x), cm(x))
    assert log_c == log_e and len(log_c) == 14
    for h in hc + he:
        h.remove()
    assert_equal(twin(x), cm(x))
    assert log_c == log_e and len(log_c) == 14  # removed hooks no longer run


@armature_only
def test_replaced_hook_function_recompiles():
    m = nn.Linear(4, 4)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(2, 4)
    h = m.register_forward_hook(lambda mod, a, o: o * 2)
    assert_equal(m(x), cm(x))
    h.remove()
    h = m.register_forward_hook(lambda mod, a, o: o * 5)
    assert_equal(m(x), cm(x))
    assert_equal(nn.Linear.forward(m, x) * 5, cm(x))
    h.remove()
    assert n_entries(cm) == 2


def test_hook_registered_on_wrapper():
    m = nn.Linear(4, 4)
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    calls = []
    h = cm.register_forward_hook(lambda mod, a, o: calls.append(1) or o + 1)
    x = t(2, 4)
    assert_equal(twin(x) + 1, cm(x))
    assert_equal(twin(x) + 1, cm(x))
    assert calls == [1, 1]
    h.remove()
    assert_equal(twin(x), cm(x))
    assert calls == [1, 1]


# global hooks see the original module, as in eager (torch.compile's
# OptimizedModule shows itself to them instead): armature only
@armature_only
def test_global_module_hooks():
    m = make().eval()
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))  # compiled without hooks first
    log = []
    mm = torch.nn.modules.module
    handles = []
    try:
        handles.append(mm.register_module_forward_pre_hook(lambda mod, a: log.append(("pre", type(mod).__name__))))
        handles.append(mm.register_module_forward_hook(lambda mod, a, o: log.append(("post", type(mod).__name__))))
        expected = twin(x)
        eager_log = list(log)
        log.clear()
        got = cm(x)
        assert_equal(expected, got)
        assert log == eager_log
        assert ("pre", "Net") in log and ("post", "BatchNorm1d") in log
        log.clear()
        assert_equal(expected, cm(x))
        assert log == eager_log
    finally:
        for h in handles:
            h.remove()
    log.clear()
    assert_equal(twin(x), cm(x))
    assert log == []


def test_global_hook_replacing_output():
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)

    def hook(mod, args, out):
        if isinstance(mod, nn.Linear):
            return out * 2

    h = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        assert_equal(twin(x), cm(x))
    finally:
        h.remove()
    assert_equal(twin(x), cm(x))


@armature_only
def test_global_pre_hook_and_local_hooks_order():
    m = nn.Linear(4, 4)
    twin = copy.deepcopy(m)
    logs = ([], [])
    for mod, log in zip((m, twin), logs):
        mod.register_forward_pre_hook(lambda mod, a, log=log: log.append("local_pre"))
        mod.register_forward_hook(lambda mod, a, o, log=log: log.append("local_post"))
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(2, 4)
    sink = []
    mm = torch.nn.modules.module
    h1 = mm.register_module_forward_pre_hook(lambda mod, a: sink.append("global_pre"))
    h2 = mm.register_module_forward_hook(lambda mod, a, o: sink.append("global_post"))
    try:
        twin(x)
        e_sink = list(sink)
        sink.clear()
        cm(x)
        assert sink == e_sink == ["global_pre", "global_post"]
    finally:
        h1.remove()
        h2.remove()
    assert logs[0] == logs[1]


@armature_only
def test_global_hooks_added_after_compiling_recompile():
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    twin = copy.deepcopy(m)
    cm = compile_fn(m, backend="eager", fullgraph=True)
    x = t(3, 4)
    assert_equal(twin(x), cm(x))
    assert n_entries(cm) == 1

    def hook(mod, args, out):
        if isinstance(mod, nn.ReLU):
            return out + 1

    def pre(mod, args):
        if isinstance(mod, nn.Linear):
            return (args[0] * 0.5,)

    mm = torch.nn.modules.module
    h1 = mm.register_module_forward_hook(hook)
    h2 = mm.register_module_forward_pre_hook(pre)
    try:
        expected = twin(x)
        assert_equal(expected, cm(x))
        assert_equal(expected, cm(x))
        assert n_entries(cm) == 2
    finally:
        h1.remove()
        h2.remove()
    assert_equal(twin(x), cm(x))
    assert n_entries(cm) == 2


def test_hooks_on_module_argument():
    def f(mod, x):
        return mod(x) * 2

    m = nn.Linear(4, 4)
    twin = copy.deepcopy(m)
    for mod in (m, twin):
        mod.register_forward_pre_hook(lambda mod, a, k: ((a[0] + 1,), k), with_kwargs=True)
        mod.register_forward_hook(lambda mod, a, o: o.relu())
    cf = compile_fn(f, backend="eager", fullgraph=True)
    x = t(3, 4)
    for _ in range(2):
        assert_equal(f(twin, x), cf(m, x))


def test_backward_hooks_fall_back_cleanly():
    """Backward hooks are not traced; without fullgraph the call still gives
    eager's outputs, gradients and hook calls."""
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    twin = copy.deepcopy(m)
    logs = ([], [])
    for mod, log in zip((m, twin), logs):
        mod[0].register_full_backward_hook(lambda mod, gi, go, log=log: log.append(tuple(go[0].shape)))
        mod.register_full_backward_pre_hook(lambda mod, go, log=log: log.append("pre"))
    cm = compile_fn(m, backend="eager")
    for _ in range(2):
        x = t(3, 4, requires_grad=True)
        xe = x.detach().clone().requires_grad_(True)
        cm(x).sum().backward()
        twin(xe).sum().backward()
        assert_equal(xe.grad, x.grad)
        for p, q in zip(m.parameters(), twin.parameters()):
            assert_equal(q.grad, p.grad)
    assert logs[0] == logs[1] == ["pre", (3, 4)] * 2
