"""The public API of armature: the forms of ``armature.compile``, what it
accepts and rejects, the compiled-module wrapper, ``reset``, backends, and the
errors users see.  (The backend-agnostic differential version of the basic
checks lives in tests/differential/test_api.py.)"""

import os

import pytest
import torch
import torch.nn as nn

import armature

pytestmark = pytest.mark.skipif(
    os.environ.get("ARMATURE_TEST_IMPL", "armature").strip().lower() == "torch",
    reason="armature-specific API",
)

THIS_FILE = os.path.basename(__file__)


def n_entries(cf) -> int:
    return len(armature.cache_entries(cf))


def check(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def graph_backend(calls):
    """A backend that records its calls and runs the graph as it is."""
    def backend(gm, example_inputs):
        calls.append((gm, example_inputs))
        return gm.forward
    return backend


# -------------------------------------------------------------- the forms


@pytest.mark.inductor
def test_bare_decorator_uses_default_backend():
    @armature.compile
    def g(x):
        return x.sin() + 1

    assert isinstance(g, armature.CompiledFunction)
    x = torch.randn(3)
    torch.testing.assert_close(g(x), x.sin() + 1)
    assert n_entries(g) == 1


def test_decorator_with_arguments():
    @armature.compile(backend="eager", fullgraph=True)
    def g(x):
        return x.cos() * 2

    x = torch.randn(3)
    check(g(x), x.cos() * 2)
    assert n_entries(g) == 1


def test_call_form():
    def g(x, y):
        return x @ y + 1

    cg = armature.compile(g, backend="eager", fullgraph=True)
    x, y = torch.randn(2, 3), torch.randn(3, 4)
    check(cg(x, y), g(x, y))
    assert n_entries(cg) == 1


class Scaler:
    def __init__(self, k):
        self.k = k

    def scale(self, x):
        return x * self.k

    @armature.compile(backend="eager", fullgraph=True)
    def scale_compiled(self, x):
        """Scale x by k."""
        return x * self.k


def test_bound_method():
    s = Scaler(3)
    cm = armature.compile(s.scale, backend="eager", fullgraph=True)
    x = torch.randn(3)
    check(cm(x), s.scale(x))
    s.k = 4  # self is guarded: the new value is seen
    check(cm(x), s.scale(x))
    assert n_entries(cm) == 2


def test_method_decorated_in_class_body():
    a, b = Scaler(2), Scaler(5)
    x = torch.randn(3)
    check(a.scale_compiled(x), x * 2)
    check(b.scale_compiled(x), x * 5)  # binds to b, not to a
    check(Scaler.scale_compiled(a, x), x * 2)  # unbound call through the class
    assert a.scale_compiled.__self__ is a
    assert a.scale_compiled.__name__ == "scale_compiled"
    assert a.scale_compiled.__doc__ == "Scale x by k."


def test_nested_function_with_closure():
    def make(offset):
        table = torch.arange(3.0)

        def inner(x):
            return x * table + offset

        return inner

    f = make(7)
    cf = armature.compile(f, backend="eager", fullgraph=True)
    x = torch.randn(3)
    check(cf(x), f(x))
    g = make(9)  # same code, different cells
    cg = armature.compile(g, backend="eager", fullgraph=True)
    check(cg(x), g(x))


def test_functools_wraps_metadata():
    def documented(x):
        """Add one."""
        return x + 1

    cf = armature.compile(documented, backend="eager")
    assert cf.__name__ == "documented"
    assert cf.__qualname__ == documented.__qualname__
    assert cf.__doc__ == "Add one."
    assert cf.__module__ == documented.__module__
    assert cf.__wrapped__ is documented


# --------------------------------------------------------------- modules


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 4)
        self.l2 = nn.Linear(4, 2)
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x))) * self.scale


def test_module_wrapper_shares_parameters():
    m = TwoLayer()
    cm = armature.compile(m, backend="eager", fullgraph=True)
    assert isinstance(cm, nn.Module)
    assert [id(p) for p in cm.parameters()] == [id(p) for p in m.parameters()]
    assert [id(b) for b in cm.buffers()] == [id(b) for b in m.buffers()]
    x = torch.randn(2, 3)
    check(cm(x), m(x))
    with torch.no_grad():
        m.l1.weight.add_(1)  # an in-place update of a shared parameter is seen
    check(cm(x), m(x))


def test_module_state_dict_keys_and_round_trip():
    m = TwoLayer()
    cm = armature.compile(m, backend="eager")
    assert list(cm.state_dict()) == list(m.state_dict())
    new = {k: torch.randn_like(v) for k, v in m.state_dict().items()}
    cm.load_state_dict(new)
    for k, v in m.state_dict().items():
        check(v, new[k])
    m2 = TwoLayer()
    m2.load_state_dict(cm.state_dict())
    x = torch.randn(2, 3)
    check(cm(x), m2(x))


def test_module_attribute_forwarding():
    m = TwoLayer()
    cm = armature.compile(m, backend="eager")
    assert cm.l1 is m.l1
    assert cm.scale is m.scale
    cm.extra = 5  # writes go to the original
    assert m.extra == 5
    m.other = "x"
    assert cm.other == "x"


def test_module_train_eval_propagate():
    m = TwoLayer()
    cm = armature.compile(m, backend="eager")
    cm.eval()
    assert not m.training and not m.l1.training and not cm.training
    cm.train()
    assert m.training and m.l1.training and cm.training


def test_module_training_read_from_original():
    m = TwoLayer()
    cm = armature.compile(m, backend="eager")
    m.eval()
    assert cm.training is False


# ------------------------------------------------------- reset, backends


def test_reset_drops_entries_and_retraces():
    calls = []
    cf = armature.compile(lambda x: x * 2, backend=graph_backend(calls), fullgraph=True)
    x = torch.randn(3)
    cf(x)
    assert n_entries(cf) == 1 and len(calls) == 1
    armature.reset()
    assert n_entries(cf) == 0
    check(cf(x), x * 2)
    assert n_entries(cf) == 1 and len(calls) == 2


def test_list_backends():
    names = armature.list_backends()
    assert {"eager", "aot_eager", "inductor"} <= set(names)


def test_custom_backend_receives_graph_module_and_real_tensors():
    calls = []

    def backend(gm, example_inputs):
        calls.append((gm, example_inputs))
        return lambda *args: tuple(o + 100 for o in gm.forward(*args))  # visibly used

    def f(x, y):
        return x * y

    cf = armature.compile(f, backend=backend, fullgraph=True)
    x, y = torch.randn(3), torch.randn(3)
    check(cf(x, y), f(x, y) + 100)
    (gm, example_inputs), = calls
    assert isinstance(gm, torch.fx.GraphModule)
    assert isinstance(example_inputs, list)
    assert all(type(t) is torch.Tensor for t in example_inputs)  # real, not fake
    assert sorted(tuple(t.shape) for t in example_inputs) == [(3,), (3,)]


def test_backend_that_raises():
    def broken_backend(gm, example_inputs):
        raise RuntimeError("kaboom from my backend")

    cf = armature.compile(lambda x: x + 1, backend=broken_backend)
    with pytest.raises(armature.BackendCompilerFailed, match="kaboom from my backend"):
        cf(torch.randn(3))


# -------------------------------------------------------------- bad input


def test_unknown_backend_lists_valid_names():
    with pytest.raises(Exception) as info:
        armature.compile(lambda x: x, backend="no_such_backend")
    msg = str(info.value)
    assert "no_such_backend" in msg
    assert "eager" in msg and "aot_eager" in msg and "inductor" in msg


def test_non_callable_backend():
    with pytest.raises(TypeError, match="backend"):
        armature.compile(lambda x: x, backend=3)


def test_fullgraph_must_be_bool():
    with pytest.raises(TypeError, match="fullgraph"):
        armature.compile(lambda x: x, fullgraph="yes")


def test_unknown_mode_lists_valid_modes():
    with pytest.raises(ValueError) as info:
        armature.compile(lambda x: x, mode="fast")
    msg = str(info.value)
    assert "fast" in msg and "reduce-overhead" in msg and "max-autotune" in msg


def test_bad_dynamic():
    with pytest.raises(TypeError, match="dynamic"):
        armature.compile(lambda x: x, dynamic="x")


def test_disable_runs_eagerly():
    calls = []

    def f(x):
        return x * 3

    cf = armature.compile(f, backend=graph_backend(calls), disable=True)
    x = torch.randn(3)
    check(cf(x), f(x))
    assert calls == []
    m = nn.Linear(3, 3)
    assert armature.compile(m, disable=True)(x).shape == (3,)


# ------------------------------------------------- unsupported, fallback


def with_print(x):
    y = x + 1
    print("armature-test-print")
    return y * 2


def with_item(x):
    return x * 2 if x.sum().item() > 0 else x   # (a branch on .item(): data-dependent)


def _line_of(fn, needle):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if needle in line:
            return start + i, line.strip()
    raise AssertionError(needle)


@pytest.mark.parametrize("fn, needle", [(with_print, "print(\"armature"), (with_item, ".item()")])
def test_fullgraph_unsupported_error_points_at_user_code(fn, needle, capsys):
    cf = armature.compile(fn, backend="eager", fullgraph=True)
    with pytest.raises(armature.Unsupported) as info:
        cf(torch.randn(3))
    msg = str(info.value)
    lineno, line = _line_of(fn, needle)
    assert THIS_FILE in msg
    assert f"line {lineno}" in msg
    assert line in msg
    assert "Hint" in msg
    assert "armature-test-print" not in capsys.readouterr().out  # nothing ran


@pytest.mark.parametrize("fn", [with_print, with_item])
def test_without_fullgraph_runs_unsupported_code_natively(fn, capsys):
    cf = armature.compile(fn, backend="eager")
    x = torch.randn(3)
    check(cf(x), fn(x))
    check(cf(x), fn(x))
    entries = armature.cache_entries(cf)
    assert len(entries) == 1
    # either the frame was split there (graph break) or it runs as plain Python
    assert entries[0].graph_break is not None or entries[0].fallback_reason
    if fn is with_print:  # the print ran exactly once per call
        assert capsys.readouterr().out.count("armature-test-print") == 4


# ---------------------------------------------- wrong number of arguments


def two_args(x, y):
    return x + y


def _type_error(fn, *args, **kwargs):
    with pytest.raises(TypeError) as info:
        fn(*args, **kwargs)
    return str(info.value)


BAD_CALLS = {
    "missing": ((torch.ones(1),), {}),
    "too_many": ((torch.ones(1), torch.ones(1), torch.ones(1)), {}),
    "unexpected_kw": ((torch.ones(1), torch.ones(1)), {"z": 1}),
    "duplicate": ((torch.ones(1),), {"x": torch.ones(1), "y": torch.ones(1)}),
}

@pytest.mark.parametrize("bad", [
    "missing", "too_many", "unexpected_kw", "duplicate"])
def test_wrong_arguments_same_type_error_as_eager(bad):
    args, kwargs = BAD_CALLS[bad]
    cf = armature.compile(two_args, backend="eager")
    cf(torch.ones(1), torch.ones(1))  # an entry exists: its guard sees the bad call first
    assert _type_error(cf, *args, **kwargs) == _type_error(two_args, *args, **kwargs)


@pytest.mark.parametrize("bad", ["missing", "too_many"])
def test_wrong_arguments_on_first_call(bad):
    args, kwargs = BAD_CALLS[bad]
    cf = armature.compile(two_args, backend="eager")
    assert _type_error(cf, *args, **kwargs) == _type_error(two_args, *args, **kwargs)


def test_wrong_arguments_on_first_call_fullgraph():
    cf = armature.compile(two_args, backend="eager", fullgraph=True)
    assert _type_error(cf, torch.ones(1)) == _type_error(two_args, torch.ones(1))


def test_bad_first_call_does_not_poison_cache():
    cf = armature.compile(two_args, backend="eager")
    with pytest.raises(TypeError):
        cf(torch.ones(1))
    x = torch.randn(3)
    check(cf(x, x), two_args(x, x))
    assert any(e.graph_module is not None for e in armature.cache_entries(cf))
