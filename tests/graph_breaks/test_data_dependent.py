"""Data-dependent control flow: branches and loops on tensor values, and
values read out of tensors used in Python."""
import sys

import pytest
import torch

import armature
from helpers import CountingBackend, assert_same, assert_same_calls, t, tpos

from .util import dynamo_graph_count, explain_fresh


def if_sum_positive(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def if_else_assign(x, w):
    h = x @ w
    if h.mean() > 0:
        out = h.relu()
    else:
        out = h.sigmoid()
    return out * 2


def if_any_all(x):
    if (x > 0).all():
        return x.log()
    elif (x > 0).any():
        return x.clamp(min=1e-3).log()
    return x.abs()


def ternary(x):
    return x * 2 if x.max() > 0.5 else x / 2


def short_circuit(x, y):
    if x.sum() > 0 and y.sum() > 0:
        return x + y
    if x.sum() > 0 or y.sum() > 0:
        return x - y
    return x * y


def while_max_halve(t_):
    while t_.max() > 1:
        t_ = t_ / 2
    return t_


def while_count_steps(t_):
    steps = 0
    while t_.abs().sum() > 0.1:
        t_ = t_ * 0.5
        steps += 1
    return t_, steps


def item_arithmetic(x):
    m = x.mean().item()
    s = x.std().item()
    k = int(m * 10) % 3
    return (x - m) / (s + 1e-5) * (k + 1), k, round(m, 3)


def tolist_python(x):
    vals = x.tolist()
    best = max(range(len(vals)), key=lambda i: vals[i])
    return x[best] * 2, best


def numpy_roundtrip(x):
    a = (x * 2).numpy()
    b = a.clip(-1, 1)
    return torch.from_numpy(b.copy()) + x


def bool_tensor(x):
    flag = bool(x.sum() > 0)
    if flag:
        return x + 1, flag
    return x - 1, flag


def assert_on_tensor(x):
    # (pytest rewrites this assert, adding locals named "@py_assert1"...)
    assert x.abs().sum() >= 0, "never"
    return x + 1


# the same function, compiled from source so that pytest does not rewrite it
_ns = {}
exec(compile("def assert_on_tensor_plain(x):\n"
             "    assert x.abs().sum() >= 0, 'never'\n"
             "    return x + 1\n", __file__, "exec"), _ns)
assert_on_tensor_plain = _ns["assert_on_tensor_plain"]


def if_in_loop(xs):
    acc = xs[0] * 0
    for x in xs:
        if x.sum() > 0:
            acc = acc + x
        else:
            acc = acc - x
    return acc


def nonzero_len(x):
    idx = (x > 0).nonzero()
    return x * len(idx)


POS = torch.tensor([0.5, 1.0, 2.0])
NEG = torch.tensor([-0.5, -1.0, -2.0])
MIX = torch.tensor([-0.5, 1.0, 2.0])


@pytest.mark.parametrize(
    "fn,calls",
    [
        (if_sum_positive, [(POS,), (NEG,), (POS * 3,), (NEG * 3,)]),
        (if_else_assign, [(POS.view(1, 3), torch.eye(3)), (NEG.view(1, 3), torch.eye(3))]),
        (if_any_all, [(POS,), (MIX,), (NEG,), (POS + 1,)]),
        (ternary, [(POS,), (NEG,)]),
        (short_circuit, [(POS, POS), (POS, NEG), (NEG, POS), (NEG, NEG)]),
        (while_max_halve, [(POS * 10,), (POS,), (POS * 1000,), (NEG,)]),
        (while_count_steps, [(POS,), (POS * 100,), (POS * 0.01,)]),
        (bool_tensor, [(POS,), (NEG,)]),
        (if_in_loop, [([POS, NEG, MIX],), ([NEG, NEG, POS],)]),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_branches_both_ways(fn, calls):
    assert_same_calls(fn, calls, fullgraph=False)


@pytest.mark.parametrize(
    "fn,args",
    [
        (if_sum_positive, (t(4),)),
        (if_else_assign, (t(2, 3), t(3, 3))),
        (if_any_all, (t(4),)),
        (ternary, (t(4),)),
        (short_circuit, (t(3), t(3))),
        (while_max_halve, (tpos(4) * 20,)),
        (while_count_steps, (t(4),)),
        (item_arithmetic, (t(6),)),
        (tolist_python, (t(5),)),
        (numpy_roundtrip, (t(4),)),
        (bool_tensor, (t(4),)),
        pytest.param(assert_on_tensor, (t(4),)),
        (assert_on_tensor_plain, (t(4),)),
        (if_in_loop, ([t(3) for _ in range(6)],)),
        (nonzero_len, (t(6),)),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_data_dependent_differential(fn, args):
    assert_same(fn, *args, fullgraph=False)


@pytest.mark.parametrize(
    "fn,args",
    [
        (if_sum_positive, (POS,)),
        (if_sum_positive, (NEG,)),
        (if_else_assign, (POS.view(1, 3), torch.eye(3))),
        (ternary, (POS,)),
        (bool_tensor, (POS,)),
        (item_arithmetic, (t(6),)),
        (tolist_python, (t(5),)),
        (assert_on_tensor, (POS,)),
        (assert_on_tensor_plain, (POS,)),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_graph_count_matches_torch_compile(fn, args):
    e = explain_fresh(fn, *args)
    assert not e.fallbacks, str(e)
    assert e.graph_count == dynamo_graph_count(fn, *args), str(e)


def test_pytest_rewritten_assert_is_split_not_given_up():
    # pytest's rewrite adds locals named "@py_assert1" (not identifiers: the
    # resume function calls them ___local<i>) and calls @py_builtins.locals()
    # on failure (routed to the user's view): the frame breaks at the check.
    # (The plain assert stays in the graph as an assumed branch,
    # trace/speculation.py: its failing side goes straight to the raise,
    # while pytest's builds a message first.  Each matches torch.compile's
    # graph count: test_graph_count_matches_torch_compile.)
    e = explain_fresh(assert_on_tensor, POS)
    assert not e.fallbacks, str(e)
    assert (e.graph_count, e.graph_break_count) == (2, 1), str(e)
    assert e.break_reasons[0].source_line.strip() == 'assert x.abs().sum() >= 0, "never"'


def test_if_break_reason():
    e = explain_fresh(if_sum_positive, POS)
    assert e.graph_break_count == 1, str(e)
    r = e.break_reasons[0]
    assert "data" in r.reason.lower(), r.reason
    assert r.source_line.strip() == "if y.sum() > 0:"
    assert r.filename == __file__


def test_both_branches_cached_after_first_use():
    """Each branch target is compiled on first use and then reused."""
    counter = CountingBackend()
    cf = armature.compile(if_sum_positive, backend=counter)
    for x in (POS, NEG):
        torch.testing.assert_close(cf(x), if_sum_positive(x))
    n = counter.frame_count
    assert n == 3, n  # the condition's graph, then one graph per branch
    for x in (POS * 2, NEG * 2, POS, NEG):
        torch.testing.assert_close(cf(x), if_sum_positive(x))
    assert counter.frame_count == n


def test_while_data_dependent_graph_count():
    # torch.compile's count, by its loop rule (driver/native_frames.break_in_loop):
    # on Python 3.11 the condition's graph, then one graph for "body +
    # condition" that every later iteration reuses (2); on 3.12 and 3.13 the
    # loop's test is a forward jump inside the loop, so the frame runs the
    # loop as Python after the first graph (1); on 3.14 the first test is
    # inside the loop too (0)
    x = POS * 10
    dynamo = {(3, 11): 2, (3, 12): 1, (3, 13): 1, (3, 14): 0}[sys.version_info[:2]]
    e = explain_fresh(while_max_halve, x)
    assert not e.fallbacks, str(e)
    assert e.graph_count == dynamo, str(e)
    assert dynamo_graph_count(while_max_halve, x) == dynamo
    with armature.config.patch(loop_breaks="split"):
        # (split inside the loop: the condition's graph and "body + condition")
        e = explain_fresh(while_max_halve, x)
    assert not e.fallbacks and e.graph_count == 2, str(e)


def test_while_data_dependent_graphs_do_not_grow():
    e_few = explain_fresh(while_max_halve, POS * 4)        # 2 halvings
    e_many = explain_fresh(while_max_halve, POS * 2 ** 20)  # 21 halvings
    assert not e_few.fallbacks and not e_many.fallbacks
    assert e_many.graph_count <= e_few.graph_count + 1, f"{e_few}\n\n{e_many}"
