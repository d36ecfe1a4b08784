"""Guards: for each kind of assumption armature makes while tracing, compile,
call again unchanged (a cache hit: no new entry), change the one thing the
guard protects, call again (exactly one recompile: one new cache entry) and
check every result against eager.

Everything here exercises armature-specific API (cache_entries, config,
loggers), so it is not part of the ARMATURE_TEST_IMPL=torch corpus.
"""

import logging
import os
import subprocess
import sys
import textwrap
import types
import warnings

import pytest
import torch
import torch.nn as nn

import armature
from machine import generous

pytestmark = pytest.mark.skipif(
    os.environ.get("ARMATURE_TEST_IMPL", "armature").strip().lower() == "torch",
    reason="armature-specific API",
)


# ----------------------------------------------------------------- helpers


def compiled(fn):
    return armature.compile(fn, backend="eager", fullgraph=True)


def n_entries(cf) -> int:
    return len(armature.cache_entries(cf))


def check(actual, expected):
    """Same type and value; tensors: also dtype, shape, device, requires_grad."""
    assert type(actual) is type(expected)
    if isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)
        assert actual.requires_grad == expected.requires_grad
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            check(a, e)
    else:
        assert actual == expected


def run(cf, fn, *args, **kwargs):
    """Call compiled and eager with the same arguments; results must agree."""
    check(cf(*args, **kwargs), fn(*args, **kwargs))


def rand(*shape, dtype=torch.float32):
    return torch.randn(shape).to(dtype)


def make_module(source: str) -> types.ModuleType:
    """A throwaway module, so a test can rebind its globals (even shadow a
    builtin) without touching this test module or pytest."""
    mod = types.ModuleType("armature_guard_test_mod")
    exec(compile(textwrap.dedent(source), "<armature_guard_test_mod>", "exec"), mod.__dict__)
    return mod


# ---------------------------------------------------------- tensor metadata


def test_tensor_dtype():
    def f(x):
        return x * 2 + 1

    cf = compiled(f)
    run(cf, f, rand(3))
    run(cf, f, rand(3))
    assert n_entries(cf) == 1
    run(cf, f, rand(3, dtype=torch.float64))
    assert n_entries(cf) == 2


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_tensor_device():
    def f(x):
        return x * 2 + 1

    cf = compiled(f)
    run(cf, f, rand(3))
    run(cf, f, rand(3))
    assert n_entries(cf) == 1
    run(cf, f, rand(3).cuda())
    assert n_entries(cf) == 2


def test_tensor_sizes():
    def f(x):
        return x.sum(0) * x.shape[0]

    cf = compiled(f)
    run(cf, f, rand(3, 2))
    run(cf, f, rand(3, 2))
    assert n_entries(cf) == 1
    run(cf, f, rand(5, 2))
    assert n_entries(cf) == 2


def test_tensor_strides():
    def f(x):
        return x.view(-1) if x.is_contiguous() else x.reshape(-1) * 10

    cf = compiled(f)
    run(cf, f, rand(4, 4))
    run(cf, f, rand(4, 4))
    assert n_entries(cf) == 1
    run(cf, f, rand(4, 4).t())  # same size, transposed strides
    assert n_entries(cf) == 2


def test_tensor_requires_grad():
    def f(x):
        return x * 2

    cf = compiled(f)
    run(cf, f, rand(3))
    run(cf, f, rand(3))
    assert n_entries(cf) == 1
    xr = rand(3).requires_grad_()
    out = cf(xr)
    check(out, f(xr))
    out.sum().backward()
    check(xr.grad, torch.full((3,), 2.0))
    assert n_entries(cf) == 2


def test_tensor_class_parameter_vs_tensor():
    def f(x):
        return type(x) is nn.Parameter, x + 1

    cf = compiled(f)
    run(cf, f, rand(3))
    run(cf, f, rand(3))
    assert n_entries(cf) == 1
    run(cf, f, nn.Parameter(rand(3), requires_grad=False))
    assert n_entries(cf) == 2


# ------------------------------------------------------ python constants


def test_int_constant():
    def f(x, n):
        return x * n

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x, 2)
    run(cf, f, x, 2)
    assert n_entries(cf) == 1
    run(cf, f, x, 3)
    assert n_entries(cf) == 2
    run(cf, f, x, 2)  # the first entry still serves n=2
    assert n_entries(cf) == 2


def test_int_vs_equal_float_constant():
    # 2 == 2.0, but the result dtype differs for an integer tensor
    def f(x, n):
        return x * n

    cf = compiled(f)
    x = torch.arange(3)
    run(cf, f, x, 2)
    assert n_entries(cf) == 1
    run(cf, f, x, 2.0)
    assert n_entries(cf) == 2


def test_float_constant():
    def f(x, s):
        return x * s

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x, 0.5)
    run(cf, f, x, 0.5)
    assert n_entries(cf) == 1
    run(cf, f, x, 1.5)
    assert n_entries(cf) == 2


def test_bool_constant():
    def f(x, flag):
        return x + 1 if flag else x - 1

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x, True)
    run(cf, f, x, True)
    assert n_entries(cf) == 1
    run(cf, f, x, False)
    assert n_entries(cf) == 2


def test_str_constant_selects_branch():
    def f(x, mode):
        if mode == "relu":
            return torch.relu(x)
        return torch.sigmoid(x)

    cf = compiled(f)
    x = rand(4)
    run(cf, f, x, "relu")
    run(cf, f, x, "relu")
    assert n_entries(cf) == 1
    run(cf, f, x, "sigmoid")
    assert n_entries(cf) == 2


def test_none_vs_tensor_argument():
    def f(x, bias=None):
        if bias is None:
            return x * 2
        return x * 2 + bias

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x, None)
    run(cf, f, x)
    assert n_entries(cf) == 1
    run(cf, f, x, rand(3))
    assert n_entries(cf) == 2


# ---------------------------------------------------------------- globals


def test_global_tensor_replaced():
    mod = make_module("""
        import torch
        W = torch.ones(3)
        def f(x):
            return x * W
    """)
    cf = compiled(mod.f)
    x = rand(3)
    run(cf, mod.f, x)
    # Global tensors are graph inputs read on each call: a replacement with
    # the same metadata needs no recompile but must be seen.
    mod.W = torch.full((3,), 5.0)
    run(cf, mod.f, x)
    assert n_entries(cf) == 1
    mod.W = torch.full((3,), 5.0, dtype=torch.float64)
    run(cf, mod.f, x)
    assert n_entries(cf) == 2


def test_global_int_changed():
    mod = make_module("""
        SCALE = 2
        def f(x):
            return x * SCALE
    """)
    cf = compiled(mod.f)
    x = rand(3)
    run(cf, mod.f, x)
    run(cf, mod.f, x)
    assert n_entries(cf) == 1
    mod.SCALE = 7
    run(cf, mod.f, x)
    assert n_entries(cf) == 2


def test_global_function_replaced():
    mod = make_module("""
        def helper(x):
            return x + 1
        def f(x):
            return helper(x) * 2
    """)
    cf = compiled(mod.f)
    x = rand(3)
    run(cf, mod.f, x)
    run(cf, mod.f, x)
    assert n_entries(cf) == 1
    mod.helper = lambda x: x - 100
    run(cf, mod.f, x)
    assert n_entries(cf) == 2


def test_builtin_shadowed_by_module_global():
    mod = make_module("""
        def f(x):
            return x * len(x.shape)
    """)
    cf = compiled(mod.f)
    x = rand(2, 3)
    run(cf, mod.f, x)
    run(cf, mod.f, x)
    assert n_entries(cf) == 1
    mod.len = lambda s: 10  # shadows builtins.len for mod.f only
    run(cf, mod.f, x)
    assert n_entries(cf) == 2


# --------------------------------------------------------------- closures


def test_closure_cell_int_rebound():
    def make():
        scale = 2

        def f(x):
            return x * scale

        def set_scale(v):
            nonlocal scale
            scale = v

        return f, set_scale

    f, set_scale = make()
    cf = compiled(f)
    x = rand(3)
    run(cf, f, x)
    run(cf, f, x)
    assert n_entries(cf) == 1
    set_scale(5)
    run(cf, f, x)
    assert n_entries(cf) == 2


def test_closure_cell_tensor_replaced():
    def make():
        bias = torch.ones(3)

        def f(x):
            return x + bias

        def set_bias(v):
            nonlocal bias
            bias = v

        return f, set_bias

    f, set_bias = make()
    cf = compiled(f)
    x = rand(3)
    run(cf, f, x)
    set_bias(torch.full((3,), 4.0))  # same metadata: read afresh, no recompile
    run(cf, f, x)
    assert n_entries(cf) == 1
    set_bias(torch.full((2, 3), 4.0))
    run(cf, f, x)
    assert n_entries(cf) == 2


# ------------------------------------------------------------- containers


def test_list_length():
    def f(xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out

    cf = compiled(f)
    run(cf, f, [rand(3), rand(3)])
    run(cf, f, [rand(3), rand(3)])
    assert n_entries(cf) == 1
    run(cf, f, [rand(3), rand(3), rand(3)])
    assert n_entries(cf) == 2


def test_tuple_length():
    def f(xs):
        return len(xs) * xs[0]

    cf = compiled(f)
    run(cf, f, (rand(3), rand(3)))
    run(cf, f, (rand(3), rand(3)))
    assert n_entries(cf) == 1
    run(cf, f, (rand(3), rand(3), rand(3)))  # xs[2] is never read
    assert n_entries(cf) == 2


def test_container_type_list_vs_tuple():
    def f(xs):
        return xs[0] + (1 if isinstance(xs, list) else 2)

    cf = compiled(f)
    run(cf, f, [rand(3)])
    run(cf, f, [rand(3)])
    assert n_entries(cf) == 1
    run(cf, f, (rand(3),))
    assert n_entries(cf) == 2


def test_dict_keys():
    def f(d):
        out = 0
        for k in d:
            out = out + d[k] * len(k)
        return out

    cf = compiled(f)
    run(cf, f, {"a": rand(3), "bb": rand(3)})
    run(cf, f, {"a": rand(3), "bb": rand(3)})
    assert n_entries(cf) == 1
    run(cf, f, {"a": rand(3), "bb": rand(3), "ccc": rand(3)})  # a key added
    assert n_entries(cf) == 2


class ReversedDict(dict):
    """A dict subclass that iterates its keys in reverse: read through dict's
    own storage (``dict(d)``), its tensors' guards share one parent read."""

    def __iter__(self):
        return iter(list(dict.keys(self))[::-1])


def test_dict_subclass_read_through_its_storage_hits_the_cache():
    # the tensors' guards hoist their shared parent ``dict(d)`` (an earlier
    # bug bound the parent where the tensor was meant, failing every call),
    # and the keys guard reads dict's own keys, not the __iter__ override
    def f(d):
        return dict.__getitem__(d, "a") + dict.__getitem__(d, "b")

    cf = compiled(f)
    d = ReversedDict(a=rand(3), b=rand(3))
    run(cf, f, d)
    run(cf, f, d)
    assert n_entries(cf) == 1
    run(cf, f, ReversedDict(a=rand(3), b=rand(3), c=rand(3)))  # a key added
    assert n_entries(cf) == 2


# ---------------------------------------------------------------- modules


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(3, 3)
        self.k = 2

    def forward(self, x):
        y = self.l1(x) * self.k
        return y + 1 if self.training else y - 1


def test_module_training_flag():
    m = Branchy()
    cm = compiled(m)
    x = rand(2, 3)
    run(cm, m, x)
    run(cm, m, x)
    assert n_entries(cm) == 1
    m.eval()
    run(cm, m, x)
    assert n_entries(cm) == 2
    cm.train()  # through the wrapper
    run(cm, m, x)
    assert n_entries(cm) == 2  # the training entry serves again


def test_module_int_attribute():
    # An int stored on a module is a constant of the graph, guarded by value
    # (as torch.compile keeps it static): a new value recompiles, right answer.
    m = Branchy()
    cm = compiled(m)
    x = rand(2, 3)
    run(cm, m, x)
    run(cm, m, x)
    assert n_entries(cm) == 1
    m.k = 5
    run(cm, m, x)
    assert n_entries(cm) == 2
    m.k = 2
    run(cm, m, x)
    assert n_entries(cm) == 2   # the first entry serves again


def test_module_float_attribute():
    # A float stored on a module and used in tensor arithmetic enters the
    # graph as an input (values/tensors/symbolic.py): a new value is just
    # read, no recompile, right answer.
    m = Branchy()
    m.k = 2.0
    cm = compiled(m)
    x = rand(2, 3)
    run(cm, m, x)
    m.k = 5.5
    run(cm, m, x)
    assert n_entries(cm) == 1


def test_module_int_attribute_needed_as_a_value():
    # ... but one whose value the code needs (here: a slice bound) is guarded.
    class Slicer(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = 2

        def forward(self, x):
            return x[: self.k] * 2

    m = Slicer()
    cm = compiled(m)
    x = rand(6)
    run(cm, m, x)
    run(cm, m, x)
    assert n_entries(cm) == 1
    m.k = 5
    run(cm, m, x)
    assert n_entries(cm) == 2


def test_submodule_replaced():
    m = Branchy()
    cm = compiled(m)
    x = rand(2, 3)
    run(cm, m, x)
    run(cm, m, x)
    assert n_entries(cm) == 1
    m.l1 = nn.Linear(3, 3)
    run(cm, m, x)
    assert n_entries(cm) == 2


@pytest.mark.parametrize("mode", ["attributes", "inputs"])
def test_parameter_replaced(mode):
    with armature.config.patch(module_parameters=mode):
        m = Branchy()
        cm = compiled(m)
        x = rand(2, 3)
        run(cm, m, x)
        m.l1.weight = nn.Parameter(torch.ones(3, 3))
        run(cm, m, x)
        # attributes: the graph holds the parameter object itself, so a new one
        # recompiles; inputs: a parameter with the same metadata is just read.
        assert n_entries(cm) == (2 if mode == "attributes" else 1)
        before = n_entries(cm)
        m.l1.weight = nn.Parameter(torch.ones(3, 3), requires_grad=False)
        m.l1.bias.requires_grad_(False)
        run(cm, m, x)  # the output no longer requires grad, as in eager
        assert n_entries(cm) == before + 1


class WithHelper(nn.Module):
    def helper(self, x):
        return x + 1

    def forward(self, x):
        return self.helper(x) * 2


def test_module_method_shadowed_by_instance_attribute():
    m = WithHelper()
    cm = compiled(m)
    x = rand(3)
    run(cm, m, x)
    run(cm, m, x)
    assert n_entries(cm) == 1
    m.helper = lambda x: x - 100  # the instance dict now shadows the class's method
    run(cm, m, x)
    assert n_entries(cm) == 2


def test_module_hook_added():
    def f(m, x):
        return m(x)

    lin = nn.Linear(3, 3)
    cf = armature.compile(f, backend="eager")  # hooks are not traced: no fullgraph
    x = rand(3)
    run(cf, f, lin, x)
    run(cf, f, lin, x)
    assert n_entries(cf) == 1
    handle = lin.register_forward_hook(lambda mod, inp, out: out * 0 + 7)
    run(cf, f, lin, x)
    assert n_entries(cf) == 2
    handle.remove()
    run(cf, f, lin, x)  # the hook-free entry serves again
    assert n_entries(cf) == 2


# ----------------------------------------------------------- global state


def test_grad_mode():
    def f(x):
        return x * 2

    cf = compiled(f)
    x = rand(3).requires_grad_()
    run(cf, f, x)
    run(cf, f, x)
    assert n_entries(cf) == 1
    with torch.no_grad():
        out = cf(x)
        expected = f(x)
    check(out, expected)
    assert not out.requires_grad
    assert n_entries(cf) == 2


def test_default_dtype():
    def f(x):
        return x + torch.ones(3)

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x)
    run(cf, f, x)
    assert n_entries(cf) == 1
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        run(cf, f, x)
        assert cf(x).dtype == torch.float64
    finally:
        torch.set_default_dtype(old)
    assert n_entries(cf) == 2


# -------------------------------------------------- signature and binding


def test_function_defaults_changed():
    def f(x, n=2):
        return x * n

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x)
    run(cf, f, x)
    assert n_entries(cf) == 1
    f.__defaults__ = (5,)
    run(cf, f, x)
    assert n_entries(cf) == 2


def test_function_kwonly_defaults_changed():
    def f(x, *, n=2):
        return x * n

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x)
    assert n_entries(cf) == 1
    f.__kwdefaults__ = {"n": 5}
    run(cf, f, x)
    assert n_entries(cf) == 2


def test_inlined_function_defaults_changed():
    def helper(x, n=2):
        return x * n

    def f(x):
        return helper(x) + 1

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x)
    assert n_entries(cf) == 1
    helper.__defaults__ = (5,)
    run(cf, f, x)
    assert n_entries(cf) == 2


def test_function_attribute_added_later():
    # getattr(fn, name, default) on a function without the attribute: guarded absent
    def helper(x):
        return x

    def f(x):
        return helper(x) * getattr(helper, "scale", 2)

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x)
    run(cf, f, x)
    assert n_entries(cf) == 1
    helper.scale = 5
    run(cf, f, x)
    assert n_entries(cf) == 2
    helper.scale = 7
    run(cf, f, x)
    assert n_entries(cf) == 3


def test_function_name_changed():
    def helper(x):
        return x

    def f(x):
        return x + len(helper.__name__)

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x)
    run(cf, f, x)
    assert n_entries(cf) == 1
    helper.__name__ = "a_longer_name"
    run(cf, f, x)
    assert n_entries(cf) == 2


def test_staticmethod_function_attribute_changed():
    # a function reached through a class dict (no source of its own): its
    # attributes are guarded on the function object itself
    class A:
        @staticmethod
        def helper(x):
            return x

    A.helper.scale = 2

    def f(x):
        return A.helper(x) * A.helper.scale

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x)
    run(cf, f, x)
    assert n_entries(cf) == 1
    A.helper.scale = 3
    run(cf, f, x)
    assert n_entries(cf) == 2


def test_kwargs_keys():
    def f(x, **kw):
        return x * kw.get("scale", 1) + kw.get("shift", 0)

    cf = compiled(f)
    x = rand(3)
    run(cf, f, x, scale=2)
    run(cf, f, x, scale=2)
    assert n_entries(cf) == 1
    run(cf, f, x, scale=2, shift=3)
    assert n_entries(cf) == 2


def test_varargs_length():
    def f(*xs):
        out = xs[0]
        for x in xs[1:]:
            out = out * x
        return out

    cf = compiled(f)
    run(cf, f, rand(3), rand(3))
    run(cf, f, rand(3), rand(3))
    assert n_entries(cf) == 1
    run(cf, f, rand(3), rand(3), rand(3))
    assert n_entries(cf) == 2


def test_same_tensor_passed_twice():
    def f(a, b):
        a.add_(1)
        return b * 2  # sees the update iff b is a

    cf = compiled(f)
    x = rand(3)
    x_ref = x.clone()
    check(cf(x, x), f(x_ref, x_ref))
    x2 = rand(3)
    x2_ref = x2.clone()
    check(cf(x2, x2), f(x2_ref, x2_ref))
    assert n_entries(cf) == 1
    x, y = rand(3), rand(3)
    x_ref, y_ref = x.clone(), y.clone()
    check(cf(x, y), f(x_ref, y_ref))
    check(x, x_ref)
    assert n_entries(cf) == 2


def _mutate_first_read_second(a, b):
    a.add_(1)
    return b * 2


@pytest.mark.aot_eager
def test_distinct_tensors_then_same_tensor_twice():
    f = _mutate_first_read_second
    cf = armature.compile(f, backend="aot_eager", fullgraph=True)
    x, y = torch.zeros(3), torch.zeros(3)
    check(cf(x, y), f(torch.zeros(3), torch.zeros(3)))
    assert n_entries(cf) == 1
    z, z_ref = torch.zeros(3), torch.zeros(3)
    check(cf(z, z), f(z_ref, z_ref))  # eager: tensor([2., 2., 2.])
    check(z, z_ref)
    assert n_entries(cf) == 2


# ------------------------------------------------------- recompile limit


def test_recompile_limit():
    def f(x, n):
        return x[:n] * 2  # with dynamic=False the value of n shapes the graph: every n is a new entry

    cf = armature.compile(f, backend="eager", dynamic=False)
    x = rand(6)
    with armature.config.patch(recompile_limit=2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for n in (1, 2, 3, 4):
                run(cf, f, x, n)
            for n in (1, 2, 3, 4):  # both compiled and limited cases keep working
                run(cf, f, x, n)
    limit_warnings = [w for w in caught if issubclass(w.category, RuntimeWarning)
                      and "recompile limit" in str(w.message)]
    assert len(limit_warnings) == 1
    assert n_entries(cf) <= 2


# ---------------------------------------------------------------- logging


def test_recompiles_log_names_guard_and_values(caplog):
    caplog.set_level(logging.DEBUG, logger="armature.recompiles")

    def f(x, count):
        return x * count

    cf = compiled(f)
    x = rand(3)
    cf(x, 7)
    assert "recompil" not in caplog.text
    cf(x, 11)
    records = [r for r in caplog.records if r.name == "armature.recompiles"]
    assert len(records) == 1
    text = records[0].getMessage()
    assert "count" in text and "7" in text and "11" in text


@pytest.mark.parametrize("artifact", ["guards", "graph", "bytecode"])
def test_artifact_loggers_emit_on_compile(caplog, artifact):
    caplog.set_level(logging.DEBUG, logger=f"armature.{artifact}")

    def f(x):
        return torch.sin(x) + 1

    compiled(f)(rand(3))
    assert [r for r in caplog.records if r.name == f"armature.{artifact}"]


def test_guards_log_lists_the_guards(caplog):
    caplog.set_level(logging.DEBUG, logger="armature.guards")

    def f(x, n):
        return x * n

    compiled(f)(rand(3), 3)
    text = caplog.text
    assert "n == 3" in text and "x:" in text and "float32" in text


def test_armature_logs_env_var():
    code = textwrap.dedent("""
        import torch, armature
        def f(x, n):
            return x * n
        cf = armature.compile(f, backend="eager", fullgraph=True)
        cf(torch.ones(2), 2)
        cf(torch.ones(2), 3)
    """)
    env = dict(os.environ, ARMATURE_LOGS="recompiles")
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(os.path.dirname(__file__), "..", "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=generous(120))
    assert proc.returncode == 0, proc.stderr
    assert "armature.recompiles" in proc.stderr
    assert "n == 2" in proc.stderr and "3" in proc.stderr
