"""armature.set_stance / get_stance (mirrors torch.compiler.set_stance):
each stance against eager results, compile counts (with torch.compile's own
stances as the oracle where it supports the same thing), the call, context
manager and decorator forms, stances across graph breaks, bad input, and
set_stance inside compiled code."""

import os

import pytest
import torch
import torch.nn as nn

import armature
from armature.runtime import stance as stance_mod

pytestmark = pytest.mark.skipif(
    os.environ.get("ARMATURE_TEST_IMPL", "armature").strip().lower() == "torch",
    reason="armature-specific API",
)


@pytest.fixture(autouse=True)
def _default_stance():
    """Every test starts and ends in the default stance."""
    armature.set_stance("default")
    yield
    armature.set_stance("default")
    torch.compiler.set_stance("default")
    torch._dynamo.reset()


class Counter:
    """A backend counting compiles (graphs) and runs of compiled graphs."""

    def __init__(self):
        self.compiles = 0
        self.runs = 0
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.compiles += 1
        self.graphs.append(gm)

        def run(*args):
            self.runs += 1
            return gm.forward(*args)
        return run


def torch_count(fn, stance, inputs):
    """torch.compile's compile count for calls of ``fn`` on ``inputs`` under ``stance``."""
    from torch._dynamo.testing import CompileCounter
    torch._dynamo.reset()
    cnt = CompileCounter()
    cfn = torch.compile(fn, backend=cnt)
    with torch.compiler.set_stance(stance):
        for args in inputs:
            cfn(*args)
    torch._dynamo.reset()
    return cnt.frame_count


def check(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


def entries(cf):
    return len(armature.cache_entries(cf))


# ------------------------------------------------------------ the API forms


def test_default_stance():
    s = armature.get_stance()
    assert s.stance == "default" and not s.skip_guard_eval_unsafe and s.force_backend is None
    assert not stance_mod.special


def test_call_form_sets_until_changed():
    armature.set_stance("force_eager")
    assert armature.get_stance().stance == "force_eager"
    assert stance_mod.special
    armature.set_stance("default")
    assert armature.get_stance().stance == "default"
    assert not stance_mod.special


def test_context_manager_restores_and_nests():
    with armature.set_stance("eager_on_recompile"):
        assert armature.get_stance().stance == "eager_on_recompile"
        with armature.set_stance("force_eager"):
            assert armature.get_stance().stance == "force_eager"
        assert armature.get_stance().stance == "eager_on_recompile"
    assert armature.get_stance().stance == "default"


def test_context_manager_restores_on_exception():
    with pytest.raises(KeyError):
        with armature.set_stance("force_eager"):
            raise KeyError
    assert armature.get_stance().stance == "default"


def test_decorator_form():
    c = Counter()

    @armature.compile(backend=c)
    def f(x):
        return x.sin()

    @armature.set_stance("force_eager")
    def run_eagerly(x):
        assert armature.get_stance().stance == "force_eager"
        return f(x)

    # decorating does not leave the stance set
    assert armature.get_stance().stance == "default"
    x = torch.randn(3)
    check(run_eagerly(x), x.sin())
    assert c.compiles == 0 and armature.get_stance().stance == "default"
    check(f(x), x.sin())
    assert c.compiles == 1
    check(run_eagerly(x), x.sin())
    assert c.runs == 1   # the compiled graph did not run under the decorated call


def test_bad_input():
    with pytest.raises(ValueError, match="unknown stance 'eager'.*'force_eager'"):
        armature.set_stance("eager")
    with pytest.raises(TypeError, match="stance must be a str"):
        armature.set_stance(3)
    with pytest.raises(TypeError, match="skip_guard_eval_unsafe must be a bool"):
        armature.set_stance("default", skip_guard_eval_unsafe=1)
    with pytest.raises(RuntimeError, match="force_backend can only be given with the 'default' stance"):
        armature.set_stance("force_eager", force_backend="eager")
    with pytest.raises(ValueError, match="unknown backend"):
        armature.set_stance(force_backend="no-such-backend")
    assert armature.get_stance().stance == "default"
    with pytest.raises(TypeError, match="decorates a callable"):
        armature.set_stance("force_eager")(3)
    assert armature.get_stance().stance == "default"


# ------------------------------------------------------------ force_eager


def test_force_eager_runs_original_code():
    c = Counter()
    seen = []

    def f(x):
        seen.append(1)   # runs as Python every call when not compiled... and only at trace time when compiled
        return x.cos() + 1

    cf = armature.compile(f, backend=c)
    x = torch.randn(4)
    with armature.set_stance("force_eager"):
        check(cf(x), x.cos() + 1)
        check(cf(x), x.cos() + 1)
    assert c.compiles == 0 and entries(cf) == 0 and len(seen) == 2
    check(cf(x), x.cos() + 1)
    assert c.compiles == 1 and c.runs == 1
    with armature.set_stance("force_eager"):
        check(cf(x), x.cos() + 1)   # the existing entry is not used either
    assert c.runs == 1 and len(seen) == 4
    check(cf(x), x.cos() + 1)
    assert c.runs == 2 and c.compiles == 1


def test_force_eager_module():
    c = Counter()
    m = nn.Linear(3, 2)
    cm = armature.compile(m, backend=c)
    x = torch.randn(4, 3)
    with armature.set_stance("force_eager"):
        check(cm(x), m(x))
    assert c.compiles == 0
    check(cm(x), m(x))
    assert c.compiles == 1


def test_force_eager_matches_torch():
    def f(x):
        return x * 2
    inputs = [(torch.randn(3),), (torch.randn(4),)]
    c = Counter()
    cf = armature.compile(f, backend=c)
    with armature.set_stance("force_eager"):
        for args in inputs:
            cf(*args)
    assert c.compiles == torch_count(f, "force_eager", inputs) == 0


# ------------------------------------------------------------ eager_on_recompile


def test_eager_on_recompile():
    c = Counter()

    def f(x):
        return x.sin() * 2

    cf = armature.compile(f, backend=c)
    a, b = torch.randn(3), torch.randn(2, 2)
    check(cf(a), f(a))
    with armature.set_stance("eager_on_recompile"):
        check(cf(a), f(a))        # the entry is used
        assert c.runs == 2
        check(cf(b), f(b))        # would recompile: runs eagerly
        check(cf(b), f(b))
    assert c.compiles == 1 and entries(cf) == 1 and c.runs == 2
    assert cf._cache.recompiles == 0
    check(cf(b), f(b))            # back to default: compiles
    assert c.compiles == 2


def test_eager_on_recompile_never_compiled():
    c = Counter()
    cf = armature.compile(lambda x: x + 1, backend=c)
    inputs = [(torch.randn(3),), (torch.randn(3),)]
    with armature.set_stance("eager_on_recompile"):
        for args in inputs:
            check(cf(*args), args[0] + 1)
    assert c.compiles == 0 == torch_count(lambda x: x + 1, "eager_on_recompile", inputs)


# ------------------------------------------------------------ fail_on_recompile


def test_fail_on_recompile_names_the_guard():
    c = Counter()

    def f(x):
        return x.sin()

    cf = armature.compile(f, backend=c)
    x = torch.randn(3)
    cf(x)
    with armature.set_stance("fail_on_recompile"):
        y = torch.randn(3)
        check(cf(y), y.sin())   # a cached call is fine
        with pytest.raises(armature.RecompileError) as info:
            cf(torch.randn(4))
    text = str(info.value)
    assert "fail_on_recompile" in text
    assert "f (" in text and os.path.basename(__file__) in text
    assert "x.size()[0] == 3 failed: got 4" in text
    assert isinstance(info.value, RuntimeError)   # like torch's error
    assert c.compiles == 1 and entries(cf) == 1


def test_fail_on_recompile_lists_each_entry():
    def f(x):
        return x + 1

    cf = armature.compile(f, backend="eager", dynamic=False)
    cf(torch.randn(3))
    cf(torch.randn(2, 2))
    with armature.set_stance("fail_on_recompile"):
        with pytest.raises(armature.RecompileError) as info:
            cf(torch.randn(2, 2, 2))
    text = str(info.value)
    assert "entry 0: x.dim() == 2 failed: got 3" in text
    assert "entry 1: x.dim() == 1 failed: got 3" in text


def test_fail_on_recompile_first_compile_like_torch():
    def f(x):
        return x - 1

    cf = armature.compile(f, backend="eager")
    with armature.set_stance("fail_on_recompile"):
        with pytest.raises(armature.RecompileError, match="no compiled entry yet"):
            cf(torch.randn(3))
    torch._dynamo.reset()
    tf = torch.compile(f, backend="eager")
    with torch.compiler.set_stance("fail_on_recompile"):
        with pytest.raises(RuntimeError, match="fail_on_recompile"):
            tf(torch.randn(3))


def test_fail_on_recompile_int_argument():
    def f(x, n):
        return x * n

    cf = armature.compile(f, backend="eager")
    cf(torch.randn(3), 2)
    with armature.set_stance("fail_on_recompile"):
        with pytest.raises(armature.RecompileError, match="n == 2"):
            cf(torch.randn(3), 5)


# ------------------------------------------------------------ eager_then_compile


def test_eager_then_compile_varying_sizes_one_compile():
    c = Counter()

    def f(x):
        return x.sin() + x.shape[0]

    cf = armature.compile(f, backend=c)
    inputs = [(torch.randn(s),) for s in (3, 4, 5, 6)]
    counts = []
    with armature.set_stance("eager_then_compile"):
        for (x,) in inputs:
            check(cf(x), f(x))
            counts.append(c.compiles)
    assert counts == [0, 1, 1, 1]
    assert entries(cf) == 1
    assert c.compiles == torch_count(f, "eager_then_compile", inputs) == 1
    # the one graph is dynamic: a SymInt placeholder
    placeholders = [n for n in c.graphs[0].graph.nodes if n.op == "placeholder"]
    assert any(isinstance(n.meta.get("example_value"), torch.SymInt) for n in placeholders)


def test_eager_then_compile_ints():
    c = Counter()

    def f(x, n):
        return x * n + 1

    cf = armature.compile(f, backend=c)
    inputs = [(torch.randn(3), n) for n in (2, 3, 4, 5)]
    with armature.set_stance("eager_then_compile"):
        for args in inputs:
            check(cf(*args), f(*args))
    assert c.compiles == 1 == torch_count(f, "eager_then_compile", inputs)


def test_eager_then_compile_same_sizes_compile_static_like_torch():
    c = Counter()

    def f(x):
        return x.cos()

    cf = armature.compile(f, backend=c)
    inputs = [(torch.randn(s),) for s in (3, 3, 3, 4, 5)]
    counts = []
    with armature.set_stance("eager_then_compile"):
        for (x,) in inputs:
            check(cf(x), f(x))
            counts.append(c.compiles)
    # eager, static compile, hit, automatic-dynamic recompile, hit
    assert counts == [0, 1, 1, 2, 2]
    assert c.compiles == torch_count(f, "eager_then_compile", inputs)


def test_eager_then_compile_default_compiles_twice():
    """What the stance saves: the same calls in the default stance compile
    static first, then dynamic."""
    c = Counter()

    def f(x):
        return x.sin()

    cf = armature.compile(f, backend=c)
    for s in (3, 4, 5, 6):
        cf(torch.randn(s))
    assert c.compiles == 2


def test_eager_then_compile_nested_inputs_and_kwargs():
    c = Counter()

    def f(xs, scale=1.0):
        return xs[0] * xs[1].sum() * scale

    cf = armature.compile(f, backend=c)
    with armature.set_stance("eager_then_compile"):
        for s in (2, 3, 4, 5):
            args = ([torch.randn(s), torch.randn(s + 1, 2)],)
            check(cf(*args, scale=2.0), f(*args, scale=2.0))
    assert c.compiles == 1


def test_eager_then_compile_module():
    c = Counter()
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    cm = armature.compile(m, backend=c)
    with armature.set_stance("eager_then_compile"):
        for batch in (2, 3, 5, 7):
            x = torch.randn(batch, 4)
            check(cm(x), m(x))
    assert c.compiles == 1


def test_eager_then_compile_with_a_graph_break():
    c = Counter()

    def f(x):
        y = x.sin()
        armature.graph_break()
        return y.cos() + x.shape[0]

    def g(x):   # the same for torch.compile
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos() + x.shape[0]

    cf = armature.compile(f, backend=c)
    inputs = [(torch.randn(s),) for s in (3, 4, 5, 6, 7)]
    with armature.set_stance("eager_then_compile"):
        for (x,) in inputs:
            check(cf(x), f(x))
    # two graphs, both dynamic from their first compile (the resume function
    # inherits its caller's dynamism and compiles on its first call)
    assert c.compiles == 2
    assert torch_count(g, "eager_then_compile", inputs) == 2


def test_eager_then_compile_leave_and_reenter():
    c = Counter()

    def f(x):
        return x.exp()

    cf = armature.compile(f, backend=c)
    with armature.set_stance("eager_then_compile"):
        cf(torch.randn(3))
    assert c.compiles == 0
    with armature.set_stance("eager_then_compile"):
        cf(torch.randn(5))      # the first call is recorded: compiles, dynamic
        cf(torch.randn(6))
    assert c.compiles == 1
    cf(torch.randn(9))
    assert c.compiles == 1
    armature.reset()           # forgets the recorded call too
    with armature.set_stance("eager_then_compile"):
        cf(torch.randn(3))
    assert c.compiles == 1


def test_aot_eager_then_compile():
    c = Counter()

    def f(x):
        return x.sin() * 3

    cf = armature.compile(f, backend=c)
    inputs = [(torch.randn(s),) for s in (3, 3, 3, 4, 5)]
    counts = []
    with armature.set_stance("aot_eager_then_compile"):
        for (x,) in inputs:
            check(cf(x), f(x))
            counts.append(c.compiles)
    # first call: compiled and cached with aot_eager (not our backend), then
    # one dynamic compile with our backend once the size changes
    assert counts == [0, 0, 0, 1, 1]
    assert entries(cf) == 2
    assert counts[-1] == torch_count(f, "aot_eager_then_compile", inputs)


def test_aot_eager_then_compile_gradients():
    def f(x, w):
        return (x @ w).relu().sum()

    cf = armature.compile(f, backend="eager")
    w = torch.randn(4, 2, requires_grad=True)
    with armature.set_stance("aot_eager_then_compile"):
        for batch in (2, 3):
            x = torch.randn(batch, 4)
            w.grad = None
            cf(x, w).backward()
            got = w.grad.clone()
            w.grad = None
            f(x, w).backward()
            check(got, w.grad)


# ------------------------------------------------------------ skip_guard_eval_unsafe


def test_skip_guard_eval_unsafe_one_entry_runs_no_guard():
    def f(x, flag):
        return x + 1 if flag else x - 1

    cf = armature.compile(f, backend="eager")
    x = torch.randn(3)
    cf(x, True)
    entry = armature.cache_entries(cf)[0]

    def guard_must_not_run(*args, **kwargs):
        raise AssertionError("guard evaluated")

    entry.guard = guard_must_not_run
    with armature.set_stance(skip_guard_eval_unsafe=True):
        check(cf(x, True), x + 1)
        # the documented risk: the one entry runs whatever the arguments
        check(cf(x, False), x + 1)


def test_skip_guard_eval_unsafe_bad_call_raises_eagers_type_error():
    def f(x):
        return x + 1

    cf = armature.compile(f, backend="eager")
    cf(torch.randn(2))
    with pytest.raises(TypeError) as eager:
        f(torch.randn(2), 3)
    with armature.set_stance(skip_guard_eval_unsafe=True):
        with pytest.raises(TypeError) as compiled:
            cf(torch.randn(2), 3)
    assert str(compiled.value) == str(eager.value)


def test_skip_guard_eval_unsafe_tells_entries_apart():
    c = Counter()

    def f(x, flag):
        return x * 2 if flag else x * 3

    cf = armature.compile(f, backend=c)
    x = torch.randn(3)
    cf(x, True)
    cf(x, False)
    assert c.compiles == 2
    with armature.set_stance(skip_guard_eval_unsafe=True):
        for flag in (True, False, True, False):
            check(cf(x, flag), f(x, flag))
        # guards every entry shares (x's metadata) are not evaluated
        guards = [g for _, g in cf._cache.distinguishing_guards(cf._fn)]
        assert len(guards) == 2 and all("flag" in g.__armature_source__ and "size" not in g.__armature_source__ for g in guards)
        # no entry's distinguishing guards accept this call, nor do the full
        # guards: a recompile, which the flag forbids (as torch does)
        with pytest.raises(armature.RecompileError, match="skip_guard_eval_unsafe"):
            cf(x, 7)
    assert c.compiles == 2
    check(cf(x, 7), f(x, 7))


def test_skip_guard_eval_unsafe_first_compile_allowed():
    c = Counter()
    cf = armature.compile(lambda x: x.relu(), backend=c)
    x = torch.randn(5)
    with armature.set_stance(skip_guard_eval_unsafe=True):
        check(cf(x), x.relu())
        check(cf(x), x.relu())
    assert c.compiles == 1 and c.runs == 2
    assert not armature.get_stance().skip_guard_eval_unsafe


def test_skip_guard_eval_unsafe_with_graph_break():
    def f(x, k):
        y = x * k
        armature.graph_break()
        return y + k

    cf = armature.compile(f, backend="eager")
    x = torch.randn(3)
    cf(x, 2)
    with armature.set_stance(skip_guard_eval_unsafe=True):
        check(cf(x, 2), f(x, 2))


# ------------------------------------------------------------ force_backend


def test_force_backend():
    default, forced = Counter(), Counter()

    def f(x):
        return x.tanh()

    cf = armature.compile(f, backend=default)
    x = torch.randn(3)
    check(cf(x), f(x))
    with armature.set_stance(force_backend=forced):
        assert armature.get_stance().force_backend is not None
        check(cf(x), f(x))
        check(cf(x), f(x))
    assert default.compiles == 1 and default.runs == 1
    assert forced.compiles == 1 and forced.runs == 2
    check(cf(x), f(x))        # the default entry again
    assert default.runs == 2 and forced.runs == 2


def test_force_backend_by_name_and_with_a_break():
    def f(x):
        y = x + 1
        armature.graph_break()
        return y * 2

    c = Counter()
    cf = armature.compile(f, backend=c)
    x = torch.randn(3)
    with armature.set_stance(force_backend="eager"):
        check(cf(x), f(x))
    assert c.compiles == 0      # neither the frame nor its resume function used the own backend
    check(cf(x), f(x))
    assert c.compiles == 2


@pytest.mark.aot_eager
def test_force_backend_aot_eager_module():
    c = Counter()
    m = nn.Linear(3, 3)
    cm = armature.compile(m, backend=c)
    x = torch.randn(2, 3)
    with armature.set_stance(force_backend="aot_eager"):
        check(cm(x), m(x))
    assert c.compiles == 0


# ------------------------------------------------------------ stances across graph breaks


def _breaking(x):
    y = x.sin()
    armature.graph_break()
    return y * x.shape[0]


def test_force_eager_with_compiled_breaks():
    c = Counter()
    cf = armature.compile(_breaking, backend=c)
    x = torch.randn(3)
    cf(x)
    assert c.compiles == 2
    with armature.set_stance("force_eager"):
        check(cf(x), _breaking(x))
    assert c.runs == 2


def test_eager_on_recompile_resume_function_misses():
    c = Counter()

    def f(x, flag):
        y = x.sin()
        armature.graph_break()
        if flag:
            return y + 1
        return y - 1

    cf = armature.compile(f, backend=c)
    x = torch.randn(3)
    cf(x, True)
    compiled = c.compiles
    with armature.set_stance("eager_on_recompile"):
        check(cf(x, True), f(x, True))
        check(cf(x, False), f(x, False))   # the resume function's entry fails: eager
    assert c.compiles == compiled


def test_fail_on_recompile_in_a_resume_function():
    def f(x, n):
        y = x.sin()
        armature.graph_break()
        return y * n

    cf = armature.compile(f, backend="eager", dynamic=False)
    x = torch.randn(3)
    cf(x, 2)
    with armature.set_stance("fail_on_recompile"):
        check(cf(x, 2), f(x, 2))
        with pytest.raises(armature.RecompileError, match="fail_on_recompile"):
            cf(x, 3)


# ------------------------------------------------------------ set_stance inside compiled code


@pytest.mark.parametrize("fullgraph", [False, True])
def test_set_stance_inside_compiled_code_is_an_error(fullgraph):
    def f(x):
        armature.set_stance("force_eager")
        return x + 1

    cf = armature.compile(f, backend="eager", fullgraph=fullgraph)
    with pytest.raises(armature.Unsupported, match="armature.set_stance was called inside a compiled function"):
        cf(torch.randn(3))
    assert armature.get_stance().stance == "default"
    assert entries(cf) == 0

    # torch.compile: an error with and without fullgraph too
    def g(x):
        torch.compiler.set_stance("force_eager")
        return x + 1
    torch._dynamo.reset()
    with pytest.raises(Exception, match="set_stance"):
        torch.compile(g, backend="eager", fullgraph=fullgraph)(torch.randn(3))
    torch.compiler.set_stance("default")


def test_set_stance_context_manager_and_decorated_inside_compiled_code():
    @armature.set_stance("force_eager")
    def helper(x):
        return x * 2

    def f(x):
        with armature.set_stance("force_eager"):
            pass
        return x

    def g(x):
        return helper(x) + 1

    for fn in (f, g):
        cf = armature.compile(fn, backend="eager")
        with pytest.raises(armature.Unsupported, match="set_stance"):
            cf(torch.randn(3))
    assert armature.get_stance().stance == "default"


def test_set_stance_after_a_graph_break_is_an_error():
    def f(x):
        x = x + 1
        armature.graph_break()
        armature.set_stance("force_eager")
        return x

    cf = armature.compile(f, backend="eager")
    with pytest.raises(armature.Unsupported, match="set_stance"):
        cf(torch.randn(3))
    assert armature.get_stance().stance == "default"
