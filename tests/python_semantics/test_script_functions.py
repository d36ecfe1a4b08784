"""Functions compiled with ``torch.jit.script`` called from compiled code
(DeBERTa-v2's ``make_log_bucket_position``, ``c2p_dynamic_expand``...):
traced through their Python source into the caller's graph, as
torch.compile does (values/functions/script_functions.py).  A function made
by ``torch.jit.trace`` is a frozen recording and stays a break.  Compiled vs
eager (results, gradients), graphs vs torch.compile's."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import armature
from helpers import CountingBackend, USING_TORCH, assert_equal, dynamo_graph_count

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


@torch.jit.script
def scale_shift(x, n: int):
    return x * n + 1


@torch.jit.script
def bucket(relative_pos, bucket_size: int, max_position: int):
    # DeBERTa-v2's make_log_bucket_position, shortened
    sign = torch.sign(relative_pos)
    mid = bucket_size // 2
    abs_pos = torch.where((relative_pos < mid) & (relative_pos > -mid),
                          torch.tensor(mid - 1).type_as(relative_pos), torch.abs(relative_pos))
    log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid)) * (mid - 1)) + mid
    return torch.where(abs_pos <= mid, relative_pos.type_as(log_pos), log_pos * sign)


@torch.jit.script
def expand_like(pos, q, k):
    return pos.expand([q.size(0), q.size(1), k.size(-2), k.size(-2)])


@torch.jit.script
def branchy(x, k: int):
    if k > 2:
        return x.sum(-1)
    return x.mean(-1)


class Scripted(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, rel):
        h = scale_shift(self.lin(x), 3)
        b = bucket(rel, 4, 16)
        e = expand_like(rel[:1, :1].float(), h.unsqueeze(0), h)
        return h.relu() + b.sum() + e.sum() + branchy(h, 3).sum() + branchy(h, 1).sum()


def _inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 4, generator=g), torch.arange(-6, 6).reshape(3, 4)


def _graphs(fn, *args, backend="eager"):
    counter = CountingBackend(backend)
    out = armature.compile(fn, backend=counter)(*args)
    return counter.frame_count, out


def test_scripted_functions_join_the_callers_graph():
    torch.manual_seed(0)
    m = Scripted()
    x, rel = _inputs()
    graphs, out = _graphs(m, x, rel)
    assert_equal(m(x, rel), out)
    assert graphs == dynamo_graph_count(m, x, rel) == 1


def test_scripted_function_gradients_match_eager():
    torch.manual_seed(0)
    m = Scripted()
    x, rel = _inputs()
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    m(x1, rel).sum().backward()
    grads = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    armature.compile(m, backend="aot_eager", fullgraph=True)(x2, rel).sum().backward()
    assert_equal(x1.grad, x2.grad)
    assert_equal(grads, [p.grad for p in m.parameters()])


def test_scripted_function_fullgraph_and_cached_call():
    def f(x):
        return scale_shift(x, 2) - branchy(x, 5).unsqueeze(-1)
    counter = CountingBackend("eager")
    compiled = armature.compile(f, backend=counter, fullgraph=True)
    for x in (torch.randn(2, 3), torch.randn(2, 3)):
        assert_equal(f(x), compiled(x))
    assert counter.frame_count == 1


def test_scripted_function_swapped_for_another_recompiles():
    # the ScriptFunction's identity is guarded: a global rebound to another
    # scripted function is traced again
    global scale_shift
    def f(x):
        return scale_shift(x, 2)
    counter = CountingBackend("eager")
    compiled = armature.compile(f, backend=counter)
    x = torch.randn(3)
    assert_equal(f(x), compiled(x))
    saved = scale_shift
    try:
        scale_shift = torch.jit.script(_minus)
        assert_equal(f(x), compiled(x))
    finally:
        scale_shift = saved
    assert counter.frame_count == 2


def _minus(x, n: int):
    return x - n


def _frozen(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def test_traced_function_is_not_inlined():
    # torch.jit.trace froze the branch taken on its example (x * 2): the
    # Python source would take the other branch on a negative input
    traced = torch.jit.trace(_frozen, (torch.ones(3),))

    def f(x):
        return traced(x) + 1
    x = -torch.ones(3)
    expected = f(x)
    assert_equal(expected, x * 2 + 1)
    explained = armature.explain(f)(x)
    assert_equal(expected, explained.out)
    assert any("ScriptFunction" in str(r) for r in explained.break_reasons)
