"""A graph break inside an inlined callee: the caller is split at the call
site, and the callee's own parts are still compiled (its graphs show up in
explain())."""
import pytest
import torch

import armature
from helpers import assert_same, t

from .util import dynamo_graph_count, explain_fresh


def callee_print(y):
    z = y.sin()
    print("inside callee")
    return z.cos()


def caller_simple(x):
    a = x + 1
    b = callee_print(a)
    return b * 2


def callee_level2(y):
    y = y * 3
    armature.graph_break()
    return y - 1


def callee_level1(y):
    y = y + 2
    y = callee_level2(y)
    return y.relu()


def caller_two_levels(x):
    return callee_level1(x.exp()).sum()


def callee_item(y):
    s = y.sum().item()
    return y / (abs(s) + 1)


def caller_item(x):
    return callee_item(x * 2) + 1


def callee_mutates(y, log):
    log.append(1)
    y = y * 2
    print("callee break")
    log.append(2)
    return y + 1


def caller_mutates(x, log):
    log.append(0)
    r = callee_mutates(x, log)
    log.append(3)
    return r


def callee_branch(y):
    if y.sum() > 0:
        return y * 2
    return y * -2


def caller_branch(x):
    return callee_branch(x.tanh()) + x


def callee_loop(y, n):
    for _ in range(n):
        y = y + 1
        armature.graph_break()
    return y


def caller_loop(x):
    return callee_loop(x * 2, 4) - 1


class Helper:
    def __init__(self, k):
        self.k = k

    def apply(self, y):
        y = y * self.k
        armature.graph_break()
        return y + self.k


def caller_method(x, h):
    return h.apply(x.sin()).cos()


def caller_twice(x):
    a = callee_print(x)
    b = callee_print(a)
    return a + b


def caller_kwargs(x):
    return callee_kw(x, scale=3.0, shift=x.mean())


def callee_kw(y, *, scale, shift):
    y = y * scale
    armature.graph_break()
    return y + shift


def caller_star_args(x):
    args = (x + 1,)
    return callee_print(*args) * 2


def caller_star_kwargs(x, **kw):
    return callee_print(x + 1, **kw) * 2


class Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        print("inner module forward")
        return h.relu()


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.out = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.out(self.inner(x * 2))


CASES = [
    # fn, args, graphs of one call
    pytest.param(caller_simple, (t(3),), 4, id="caller_simple"),
    pytest.param(caller_two_levels, (t(3),), 6, id="caller_two_levels"),
    pytest.param(caller_item, (t(3),), 4, id="caller_item"),
    pytest.param(caller_mutates, (t(3), []), 2, id="caller_mutates"),
    pytest.param(caller_branch, (t(3),), 4, id="caller_branch"),
    pytest.param(caller_loop, (t(3),), None, id="caller_loop"),
    pytest.param(caller_method, (t(3), Helper(3)), 4, id="caller_method"),
    pytest.param(caller_twice, (t(3),), None, id="caller_twice"),
    pytest.param(caller_kwargs, (t(3),), 3, id="caller_kwargs"),
    pytest.param(caller_star_args, (t(3),), 4, id="caller_star_args"),
    pytest.param(caller_star_kwargs, (t(3),), 4, id="caller_star_kwargs"),
]


@pytest.mark.parametrize("fn,args,graphs", CASES)
def test_break_in_callee(fn, args, graphs):
    assert_same(fn, *args, fullgraph=False)
    e = explain_fresh(fn, *args)
    assert not e.fallbacks, str(e)
    if graphs is not None:
        assert e.graph_count == graphs, str(e)


def test_callee_graphs_are_compiled():
    """explain() shows the callee's own parts as graphs: sin (before its
    print) and cos (after it), besides the caller's add and mul."""
    e = explain_fresh(caller_simple, t(3))
    codes = [gm.code for gm in e.graphs]
    assert any("sin" in c for c in codes), codes
    assert any("cos" in c for c in codes), codes
    assert any("add" in c or "+" in c for c in codes), codes
    assert any("mul" in c or "*" in c for c in codes), codes
    # the sin and the cos are not in the caller's graphs together with add/mul
    assert not any("sin" in c and "cos" in c for c in codes), codes
    (r,) = e.break_reasons[:1]
    assert "print" in r.reason
    assert r.user_stack, "the break keeps the user stack (caller -> callee)"


def test_callee_break_reason_names_the_callee_line():
    e = explain_fresh(caller_simple, t(3))
    lines = [(r.lineno, r.source_line) for r in e.break_reasons]
    assert any(src and "print(" in src for _, src in lines), lines
    assert all(r.filename == __file__ for r in e.break_reasons), e.break_reasons


@pytest.mark.parametrize("fn,args", [
    (caller_simple, (t(3),)),
    (caller_two_levels, (t(3),)),
    (caller_item, (t(3),)),
])
def test_callee_graph_count_matches_torch_compile(fn, args):
    import torch._dynamo
    saved = armature.graph_break
    try:
        # torch.compile does not know armature.graph_break; use its own
        globals()["armature"].graph_break = torch._dynamo.graph_break
        theirs = dynamo_graph_count(fn, *args)
    finally:
        globals()["armature"].graph_break = saved
    assert explain_fresh(fn, *args).graph_count == theirs


def test_side_effects_of_caller_and_callee_in_order():
    log = []
    x = t(3)
    cf = armature.compile(caller_mutates, backend="eager")
    for i in range(3):
        cf(x, log)
    assert log == [0, 1, 2, 3] * 3


def test_nested_module_with_print():
    m = Outer()
    assert_same(m, t(2, 4), fullgraph=False)
    e = explain_fresh(m, t(2, 4))
    assert not e.fallbacks, str(e)
    # caller: x*2 | inner: lin | print | relu | caller: out
    assert e.graph_count == 4, str(e)


# --------------------------------------------------------------------------
# callees made inside the frame (closures, lambdas)
# --------------------------------------------------------------------------


def caller_nested_def(x):
    def f(t):
        t = t.sin()
        print("nested")
        return t.cos()

    return f(x + 1) * 2


def caller_lambda(x):
    f = lambda t: t * t.sum().item()  # noqa: E731
    return f(x.exp()) + 1


@pytest.mark.parametrize("fn,args,graphs", [
    pytest.param(caller_nested_def, (t(3),), 4, id="caller_nested_def"),
    pytest.param(caller_lambda, (t(3),), 4, id="caller_lambda"),
])
def test_break_in_nested_function_callee(fn, args, graphs):
    assert_same(fn, *args, fullgraph=False)
    e = explain_fresh(fn, *args)
    assert not e.fallbacks, str(e)
    assert e.graph_count == graphs == dynamo_graph_count(fn, *args), str(e)


@pytest.mark.parametrize("fn,args", [(caller_nested_def, (t(3),)), (caller_lambda, (t(3),))],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_break_in_nested_function_callee_results(fn, args):
    assert_same(fn, *args, fullgraph=False)
