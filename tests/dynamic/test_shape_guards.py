"""One "compile, change the thing, call again" test per shape-guard kind,
and the recompile / dynamic logs."""
import logging

import torch

import armature

from .util import compiles, guards, run_over, same


def _dynamic(fn):
    return armature.compile(fn, backend="eager", dynamic=True)


def test_static_dim_of_a_dynamic_tensor():
    cf = _dynamic(lambda x: x.sum(0))
    for shape in [(4, 3), (5, 3), (6, 3)]:
        x = torch.randn(*shape)
        same(x.sum(0), cf(x))
    assert compiles(cf) == 1
    x = torch.randn(5, 1)       # dim 1 becomes 1: specialised, so a new entry
    same(x.sum(0), cf(x))
    assert compiles(cf) == 2


def test_range_guard():
    cf = _dynamic(lambda x: x * 2)
    for n in (3, 4, 9):
        same(torch.ones(n) * 2, cf(torch.ones(n)))
    assert compiles(cf) == 1
    assert "2 <= x.size()[0]" in guards(cf)
    same(torch.ones(1) * 2, cf(torch.ones(1)))   # outside [2, inf): size 1 specialises
    assert compiles(cf) == 2


def test_relation_guard_from_a_branch():
    def f(x, y):
        if x.shape[0] > y.shape[0]:
            return x[: y.shape[0]] + y
        return x + y[: x.shape[0]]
    cf = run_over(f, [(torch.randn(a), torch.randn(b)) for a, b in [(5, 3), (7, 4), (9, 2)]], dynamic=True)
    assert compiles(cf) == 1
    x, y = torch.randn(3), torch.randn(6)
    same(f(x, y), cf(x, y))
    assert compiles(cf) == 2


def test_duck_sizing_guard():
    cf = run_over(lambda x, y: x + y, [(torch.randn(n), torch.randn(n)) for n in (3, 4)], dynamic=True)
    assert compiles(cf) == 1
    assert any("x.size()[0] == y.size()[0]" in g or "y.size()[0] == x.size()[0]" in g for g in guards(cf))
    x, y = torch.randn(4), torch.randn(1)      # broadcasting: a new entry
    same(x + y, cf(x, y))
    assert compiles(cf) == 2


def test_stride_guard():
    cf = _dynamic(lambda x: x.contiguous() + 1)
    for n in (3, 4):
        x = torch.randn(n, 5)
        same(x + 1, cf(x))
    assert compiles(cf) == 1
    assert any("x.stride()[0] == x.size()[1]" in g for g in guards(cf))
    x = torch.randn(5, 3).t()                  # same shape kind, other strides
    same(x.contiguous() + 1, cf(x))
    assert compiles(cf) == 2


def test_specialised_int_guard():
    def f(x, n):
        return x.reshape(n, -1).sum(1) if n == 2 else x * n
    cf = run_over(f, [(torch.randn(8), n) for n in (2, 3, 4, 5)], dynamic=True)
    assert compiles(cf) == 2            # n == 2 and n != 2
    x = torch.randn(8)
    same(f(x, 2), cf(x, 2))
    assert compiles(cf) == 2


def test_recompile_log_names_the_failed_size_in_user_terms(caplog):
    cf = armature.compile(lambda x: x + 1, backend="eager")
    with caplog.at_level(logging.DEBUG, logger="armature.recompiles"):
        cf(torch.randn(8))
        cf(torch.randn(9))
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "x.size()[0] == 8 failed: got 9" in text
    assert "ARMATURE_DYNAMIC_SOURCES=x:0" in text


def test_recompile_log_names_a_failed_shape_relation(caplog):
    def f(x):
        return x * 2 if x.shape[0] > 4 else x
    cf = armature.compile(f, backend="eager", dynamic=True)
    with caplog.at_level(logging.DEBUG, logger="armature.recompiles"):
        cf(torch.randn(8))
        cf(torch.randn(3))
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "5 <= x.size()[0] failed" in text


def test_dynamic_log_prints_symbols_and_sources(caplog):
    def f(x, n):
        if x.shape[0] > 2:
            return x.view(n, -1)
        return x
    cf = armature.compile(f, backend="eager", dynamic=True)
    with caplog.at_level(logging.DEBUG, logger="armature.dynamic"):
        cf(torch.randn(6), 2)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "= x.size()[0]" in text and "= n" in text
    assert "test_shape_guards.py" in text and "if x.shape[0] > 2" in text


def test_guard_function_rejects_non_tensors_cleanly():
    cf = _dynamic(lambda x: x * 2)
    cf(torch.randn(3))
    assert cf([1, 2]) == [1, 2, 1, 2]


def specialised_late(x):
    y = x.view(x.shape[0], x.shape[1], 1)     # the size enters a node as a symbol ...
    if x.shape[1] == 3:                        # ... and is specialised afterwards
        return y * 2
    return y


def test_dim_specialised_after_use_is_guarded():
    cf = armature.compile(specialised_late, backend="eager", dynamic=True)
    x = torch.randn(2, 3)
    same(specialised_late(x), cf(x))
    assert "x.size()[1] == 3" in guards(cf)
    for shape in [(2, 4), (5, 3), (3, 6)]:
        x = torch.randn(*shape)
        same(specialised_late(x), cf(x))
    assert compiles(cf) == 2


def test_guards_that_call_torch_functions_evaluate():
    # the ShapeEnv writes some guards with torch.sym_max / sym_min: they must
    # evaluate in the guard function (not fail, which would recompile forever)
    def f(x, n):
        return x.view(max(1, x.shape[0] // n), -1), x[: max(x.shape[0] - n, 1)]
    cf = run_over(f, [(torch.randn(s), n) for s, n in [(12, 2), (16, 4), (20, 5), (24, 3), (30, 6)]],
                  dynamic=True)
    assert compiles(cf) <= 2


def test_concatenated_sizes_stay_symbolic():
    def f(x):
        return torch.zeros(x.shape[:1] + (2,)), x.view(x.size()[:-1] + (-1, 1))
    cf = run_over(f, [(torch.randn(n, 7),) for n in (3, 4, 5, 6)], dynamic=True)
    assert compiles(cf) == 1
