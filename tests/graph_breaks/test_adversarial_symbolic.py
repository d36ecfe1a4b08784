"""Adversarial differential tests for the symbolic-value features.

Attacks, always by calling one compiled function with a *sequence* of
inputs (so that guards fail, entries are reused and symbolic values get
introduced) and comparing every call -- result, raised exception, printed
output and mutated state -- with eager:

1. automatic-dynamic Python numbers: a number argument whose value guard
   failed once is symbolic on recompile; symbolic comparisons used as values,
   in containers, in boolean logic, chained, between two symbolic numbers,
   with nan/inf, bools, int/float mixing, as ints and indices, in range(),
   min/max/abs, formatting, torch calls and shapes, division by zero ...;
2. floats handed across a graph break (``.item()`` / ``float(t)``), which
   are symbolic from the first compile of the resume function;
3. ``len()`` of an outside list that grows between calls (symbolic length,
   lazily recorded appends) mixed with indexing, slicing, pop/insert,
   aliasing and clearing;
4. loops with a graph break (or print) inside whose counters are handed to
   resume functions;
5. instance ``__dict__`` reads, writes and replacement, ``vars()``, ``del``,
   descriptors shadowing dict entries, with and without a graph break.
"""
from __future__ import annotations

import contextlib
import io
import math
import types

import pytest
import torch

import armature
from helpers import assert_equal

from .util import snap

NAN = float("nan")
INF = float("inf")
X = torch.tensor([1.0, -2.0, 3.0, 0.5])
INTS = [0, 1, 2, 5, 3, 0, -1, 7, 4, 4]
MIXED = [0, 1, 2, 5, 3, 0, -1, 7.5, 2.5, 4]
FLOATS = [0.0, 1.0, 2.5, NAN, INF, -INF, 3.5, NAN, 0.0, -2.0]


def xfail(reason):
    return pytest.mark.xfail(strict=True, reason=f"armature: {reason}")


def _call(fn, args):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            r = fn(*args)
        return r, None, out.getvalue()
    except Exception as e:  # noqa: BLE001 - compared with eager
        return None, e, out.getvalue()


def _compare(label, eager, comp, e_state, c_state):
    er, ee, eo = eager
    cr, ce, co = comp
    if ee is not None:
        assert ce is not None, f"{label}: eager raised {ee!r}, compiled returned {cr!r}"
        assert type(ce) is type(ee), f"{label}: compiled raised {type(ce).__name__}({ce}), eager {ee!r}"
    elif ce is not None:
        raise AssertionError(f"{label}: compiled raised {ce!r}, eager returned {er!r}") from ce
    else:
        assert_equal(er, cr, f"{label} out")
    assert eo == co, f"{label}: printed {co!r}, eager printed {eo!r}"
    assert_equal(snap(e_state), snap(c_state), f"{label} state")


def seq(fn, values, make=None):
    """Compile once; for each value build fresh args (``make(v)``, default
    ``(X.clone(), v)``) for each side and compare.  Returns the compiled fn."""
    make = make or (lambda v: (X.clone(), v))
    cf = armature.compile(fn, backend="eager")
    for i, v in enumerate(values):
        ea, ca = make(v), make(v)
        e, c = _call(fn, ea), _call(cf, ca)
        _compare(f"call #{i + 1} ({v!r})", e, c, ea, ca)
    return cf


def persist(fn, make_state, steps, args_of=lambda s: s):
    """Like seq, but the state lives across calls: before call i, ``step(state,
    i)`` for each step function mutates the state (e.g. grows a list)."""
    cf = armature.compile(fn, backend="eager")
    es, cs = make_state(), make_state()
    for i, step in enumerate(steps):
        if step is not None:
            step(es, i)
            step(cs, i)
        e, c = _call(fn, args_of(es)), _call(cf, args_of(cs))
        _compare(f"call #{i + 1}", e, c, es, cs)
    return cf


def entries(cf):
    return len(armature.cache_entries(cf))


# ==========================================================================
# 1. automatic-dynamic numbers
# ==========================================================================


class Obj:
    kind = "class"

    def __init__(self, **kw):
        self.__dict__.update(kw)


def ret_cmp(x, n):
    return x + 1, n > 3, n <= 2, n == 5, n != 5, n >= 0, n < -1


def cmp_in_list_dict(x, n):
    return x * 2, [n > 3, n == 0], {"gt": n > 3, "ne": n != 1}, (n < 2,)


def cmp_and_or_not(x, n):
    a = n > 3 and n < 10
    b = n > 3 or n == 0
    c = not n > 3
    d = n and 5
    e = n or 7
    return x - 1, a, b, c, d, e


def cmp_chained(x, n):
    if 0 < n < 5:
        x = x + 1
    return x, 0 < n < 5, -1 <= n <= 3 < 10


def cmp_as_int(x, n):
    a = (n > 3) + 1
    b = (n > 3) * 2.5
    c = (n > 3) - (n < 0)
    d = -(n > 3)
    e = (n == 0) + (n == 0)
    return x * 1, a, b, c, d, e


def cmp_times_tensor(x, n):
    return x * (n > 3), x + (n <= 2), (n > 3) * x


def cmp_as_index(x, n):
    names = ("small", "big")
    lst = [x - 1, x + 1]
    return names[n > 3], lst[n > 3], lst[n <= 3] * 2


def cmp_is(x, n):
    a = (n > 3) is True
    b = (n > 3) is not False
    c = n is None
    return x + 1, a, b, c


def cmp_in_tuple(x, n):
    return x + 1, n in (1, 2, 3), n not in [0, 5]


def num_arith(x, n):
    return x + 1, n + 1, n - 3, n * 2, n / 4, n // 3, n % 3, n ** 2, -n, +n, abs(n)


def num_pow_neg(x, n):
    return x + 1, 2 ** n


def num_pow_neg_tensor(x, n):
    return x * (2 ** n)


def num_sqrt_tensor(x, n):
    return x * (n ** 0.5)


def num_truthiness(x, n):
    if n:
        return x + 1, bool(n)
    return x - 1, not n


def num_min_max_abs(x, n):
    lo = min(n, 3)
    hi = max(n, 0)
    return x * lo + hi, lo, hi, abs(n), max(n, -n), min(n, 2, 1)


def num_format(x, n):
    return x + 1, f"{n}", str(n), repr(n), f"n={n!r}", "%s" % (n,)


def num_format_spec(x, n):
    return x + 1, f"{n:05.1f}", format(n, ">6")


def num_print(x, n):
    print("n is", n, n > 3)
    return x + n


def num_mod_branch(x, n):
    if n % 2 == 0:
        return x * 2
    if n % 3 == 0:
        return x * 3
    return x


def num_range(x, n):
    for i in range(n):
        x = x + i
    return x, list(range(n)), len(range(n)), sum(range(n))


def num_range_step(x, n):
    return x + 1, list(range(0, 10, n)) if n > 0 else []


def torch_full(x, n):
    return torch.full((2,), n), torch.full((2,), n, dtype=torch.float32) + x[:2]


def torch_tensor_of(x, n):
    return torch.tensor(n), torch.tensor([n, n + 1]), x + 1


def torch_view(x, n):
    y = torch.arange(12.0)
    return y.view(n, -1), y.reshape(-1, n).sum(0)


def torch_shapes(x, n):
    return torch.ones(n), x.new_zeros(n, 2), torch.arange(n), x[:n], x.repeat(n)


def torch_scalar_args(x, n):
    return x.clamp(min=n), x.pow(n), torch.add(x, n), x.add(n, alpha=2), x.div(n + 1)


def torch_inplace(x, n):
    x.mul_(n)
    x += n
    x -= n / 2
    return x


def torch_int_tensor(x, n):
    xi = torch.tensor([1, 2, 3])
    return xi + n, xi * n, xi // (n + 10), x + n


def zero_d_tensor_mul(x, n):
    s = x.sum()
    return s * n, n * s, s + n, s / (n + 10)


def zero_d_literal(x, n):
    s = torch.tensor(2.0)
    return s * n


def half_tensor(x, n):
    h = x.to(torch.bfloat16)
    return h * n, h + n


def num_dead_division(x, n):
    y = 10 // n
    return x + 1


def num_division_used(x, n):
    return x + 1, 10 / n


def num_division_after_effect(x, n, log):
    log.append("before")
    y = 10 // n
    log.append(y)
    return x + y


def num_large(x, n):
    return x * n


def num_large_python(x, n):
    return x + 1, n * n, n + 1, n > 2 ** 62


def num_methods(x, n):
    return x + 1, int(n), float(n), round(n), divmod(n, 3), math.floor(n), hash(n)


def num_two_symbolic(x, n, m):
    r = x
    if n < m:
        r = r + 1
    return r, n < m, n == m, n + m, n * m, max(n, m), n - m > 0


def num_nan_compare(x, n):
    if n > 0:
        x = x + 1
    elif n <= 0:
        x = x - 1
    else:
        x = x * 0
    return x, n == n, n != n, n > 0, n <= 0, n == INF


def num_bools(x, n):
    return x + 1, n == 1, n == True, True == n, n + 1, n is True  # noqa: E712


def num_unused_then_used(x, n):
    k = n * 3
    armature.graph_break()
    return x + k, k


def num_symbolic_attr(x, n, o):
    o.flag = n > 3
    o.val = n * 2
    o.hist.append(n > 1)
    return x + 1


def num_in_dict_key(x, n):
    d = {n: "a", n + 1: "b"}
    return x + 1, d, {1: "one", 2: "two"}.get(n, "other")


def num_negative_index(x, n):
    lst = [10, 20, 30, 40, 50]
    return x + 1, lst[n], lst[n:], lst[-n:]


def num_in_comprehension(x, n):
    return x + 1, [i * n for i in range(3)], [i > n for i in range(3)]


def num_closure(x, n):
    def inner(k):
        return k + n
    return x + inner(1), inner(n)


def num_shift_bits(x, n):
    return x + 1, n << 2, n >> 1, n & 3, n | 8, n ^ 5, ~n


def num_isinstance(x, n):
    return x + 1, isinstance(n, int), isinstance(n, float), type(n).__name__, isinstance(n > 3, bool)


def num_cmp_float_int(x, n):
    return x + 1, n == 2.0, n < 2.5, 2.5 > n, n > True


def num_graph_input_then_break(x, n):
    y = x * n
    armature.graph_break()
    return y + n, n > 1


def num_compare_store_then_break(x, n):
    c = n > 3
    armature.graph_break()
    if c:
        return x + 1, c
    return x - 1, c


def num_reflected(x, n):
    return n - x, (n + 1) / x.abs().add(1), 1 - n * x, n * x / 2


def num_cmp_non_number(x, n):
    return x + 1, n == None, n != "a", n == [n]  # noqa: E711


def num_membership(x, n):
    return x + 1, n in {1: "a", 2: "b"}, n in range(5), n in {0, 3}


def num_try_zero_div(x, n):
    try:
        y = 10 // n
    except ZeroDivisionError:
        y = -1
    return x + y, y


def num_try_zero_div_unused(x, n):
    try:
        10 % n
        ok = True
    except ZeroDivisionError:
        ok = False
    return x + 1, ok


def num_shape_cmp(x, n):
    return x + 1, x.shape[0] == n, x.size(0) > n, len(x) - n


def num_inplace_ops(x, n):
    k = n
    k += 1
    k *= 3
    k -= n
    k //= 2
    return x + k, k


def num_bool_ops_in_graph(x, n):
    if n > 2 and n < 6 or n == -1:
        return x * 2
    return x


NUMBER_CASES = [
    (ret_cmp, INTS), (ret_cmp, MIXED), (ret_cmp, FLOATS),
    (cmp_in_list_dict, MIXED),
    (cmp_and_or_not, INTS), (cmp_and_or_not, FLOATS),
    (cmp_chained, MIXED),
    (cmp_as_int, MIXED),
    (cmp_times_tensor, MIXED),
    (cmp_as_index, MIXED),
    (cmp_is, INTS),
    (cmp_in_tuple, MIXED),
    (num_arith, [0, 1, 2, 5, -3, 7, 2.5, -1.5, 4]),
    (num_pow_neg, [0, 1, 2, -1, -2, 3]),
    (num_truthiness, [0, 1, 2, 0, -1, 0.0, 0.5]),
    (num_min_max_abs, [0, 1, -2, 5, 3, -7, 2.5]),
    (num_format, [0, 1, 2, -3, 2.5, NAN, True]),
    (num_format_spec, [0.0, 1.0, 2.5, -3.25, INF]),
    (num_print, MIXED),
    (num_mod_branch, [0, 1, 2, 3, 5, 9, -3, -4, 7]),
    (num_range, [0, 1, 2, 5, 3, 0, -1, 4]),
    (num_range_step, [0, 1, 2, 3, 1, 0, -1]),
    (torch_full, MIXED),
    (torch_tensor_of, MIXED),
    (torch_view, [1, 2, 3, 4, 6, 12, 5, 2]),
    (torch_shapes, [0, 1, 2, 3, 0, 2]),
    (torch_scalar_args, [0, 1, 2, 5, -1, 2.5, 0.5]),
    (torch_inplace, MIXED),
    (torch_int_tensor, INTS),
    (num_dead_division, [1, 2, 3, 0]),
    (num_division_used, [1, 2, 3, 0, 4]),
    (num_large_python, [0, 1, 2, 2 ** 62, 2 ** 64, -2 ** 70, 5]),
    (num_methods, [0, 1, 2, -3, 7, 2.5, -2.5]),
    (num_nan_compare, FLOATS),
    (num_bools, [0, 1, 2, True, False, 1, 0, 3]),
    (num_unused_then_used, MIXED),
    (num_in_dict_key, [0, 1, 2, 1, 5, 2]),
    (num_negative_index, [0, 1, 2, -1, -3, 4, 2]),
    (num_in_comprehension, MIXED),
    (num_closure, MIXED),
    (num_shift_bits, [0, 1, 2, 5, -3, 7]),
    (num_isinstance, MIXED),
    (num_cmp_float_int, [0, 1, 2, 2.0, 2.5, 3, True, 0.0]),
    (num_graph_input_then_break, MIXED),
    (num_compare_store_then_break, MIXED),
    (num_pow_neg_tensor, [0, 1, 2, -1, -2, 3]),
    (num_sqrt_tensor, [0, 1, 4, -4, 9]),
    (zero_d_tensor_mul, [0.5, 1.5, 2.5, -1.0]),
    (zero_d_literal, [0.5, 1.5, 2.5, 3]),
    (half_tensor, [0.5, 1.5, 1.001, 3.3333, 2]),
    (num_large, [0, 1, 2, 2 ** 62, 2 ** 63, 3]),
    (num_reflected, MIXED),
    (num_cmp_non_number, MIXED),
    (num_membership, INTS),
    (num_try_zero_div, [1, 2, 3, 0, 5]),
    (num_try_zero_div_unused, [1, 2, 3, 0, 5]),
    (num_shape_cmp, MIXED),
    (num_inplace_ops, MIXED),
    (num_bool_ops_in_graph, [0, 1, 3, 5, 6, -1, 2, 4]),
]


@pytest.mark.parametrize("fn,values", [pytest.param(f, v, id=f"{f.__name__}-{i}")
                                       for i, (f, v) in enumerate(NUMBER_CASES)])
def test_number_sequence(fn, values):
    seq(fn, values)


def test_two_symbolic_numbers():
    pairs = [(0, 0), (1, 2), (2, 1), (3, 3), (5, 9), (9, 5), (-1, -1), (2.5, 2), (4, 4.0)]
    seq(num_two_symbolic, pairs, make=lambda p: (X.clone(), *p))


def test_symbolic_values_stored_on_object():
    def make(n):
        return X.clone(), n, types.SimpleNamespace(hist=[])
    seq(num_symbolic_attr, MIXED, make=make)


def test_division_by_zero_after_a_side_effect():
    def make(n):
        return X.clone(), n, []
    seq(num_division_after_effect, [1, 2, 3, 0, 5], make=make)


def attr_num_then_reset(x, o):
    k = o.n * 2
    o.n = 100
    armature.graph_break()
    return x + k, k, o.n


def attr_num_counter(x, o):
    o.n += 1
    y = x * o.n
    armature.graph_break()
    o.n += 10
    return y + o.n, o.n > 15


def list_item_num(x, lst):
    n = lst[0]
    lst[0] = n + 1
    return x + n, n, lst[0] > 3


def test_attribute_numbers_across_break():
    for fn in (attr_num_then_reset, attr_num_counter):
        persist(fn, lambda: (X.clone(), Obj(n=0)), [None, lambda s, i: setattr(s[1], "n", 3), None, None,
                                                     lambda s, i: setattr(s[1], "n", -5), None])


def test_list_item_number():
    persist(list_item_num, lambda: (X.clone(), [0]), [None, None, None, lambda s, i: s[1].append(9), None])


def test_comparison_recompiles_once_per_outcome():
    def f(x, n):
        if n > 3:
            return x + 1
        return x - 1
    cf = seq(f, [0, 1, 2, 3, 5, 6, 9, 1])
    assert entries(cf) <= 3, entries(cf)


# ==========================================================================
# 2. floats across a graph break
# ==========================================================================


def f_basic(x):
    s = x.sum().item()
    return x * s, s > 0, int(s) if s == s and abs(s) != INF else -1, round(s, 2), s == s


def f_float_of_tensor(x):
    s = float(x.sum())
    if s > 1:
        return x + s, s
    return x - s, -s


def f_dict_key(x):
    s = x.sum().item()
    d = {s: "v", "k": s}
    return x + 1, sorted(map(str, d)), d["k"], {True: "pos", False: "neg"}[s > 0]


def f_nan_identity(x):
    s = x.sum().item()
    d = {s: 1}
    lst = [s, s]
    return x + 1, d.get(s), s in lst, lst.count(s), lst[0] is lst[1]


def f_int_of_special(x):
    s = x.sum().item()
    return x + 1, int(s)


def f_try_zero_div(x):
    s = x.sum().item()
    try:
        r = 1.0 / s
    except ZeroDivisionError:
        r = -1.0
    return x + 1, r


def f_log_append(x, log):
    s = x.sum().item()
    log.append(s)
    log.append(s > 0)
    return x * 2


def f_format(x):
    s = x.sum().item()
    return x + 1, f"{s:.3f}", str(s), "%.2f" % s, f"{s!r}"


def f_math(x):
    s = x.sum().item()
    return x + 1, math.sqrt(abs(s)), math.isnan(s), math.floor(s), math.exp(min(s, 5.0)), math.copysign(1.0, s)


def f_index(x):
    s = x.sum().item()
    lst = ["a", "b", "c"]
    return x + 1, lst[int(s) % 3], lst[int(abs(s)) % 3]


def f_nan_compare(x):
    s = x.sum().item()
    if s > 0:
        k = 1
    elif s <= 0:
        k = 2
    else:
        k = 3
    return x * k, k, s != s, s == NAN


def f_arith(x):
    s = x.sum().item()
    return x + 1, s // 1, s % 1, divmod(s, 2), s ** 2, s.is_integer(), -s, abs(s)


def f_zero_div(x):
    s = x.sum().item()
    return x + 1, 1 / s


def f_zero_d(x):
    s = x.sum().item()
    return x.sum() * s, x.mean() + s


def f_torch_calls(x):
    s = x.sum().item()
    return torch.full((2,), s), torch.tensor(s), x.clamp(max=s), x.new_full((2,), s)


def f_print(x):
    s = x.sum().item()
    print("s =", s, s > 0)
    return x + s


def f_int_item(x):
    k = int(x.sum().item())
    return x.new_zeros(k).shape, x + k


def f_int_tensor_item(x):
    k = x.long().sum().item()
    return torch.ones(abs(k) + 1), k * 2, k > 2, x * k


def f_item_twice(x):
    a = x[0].item()
    b = x[1].item()
    return x + 1, a < b, a == b, max(a, b), a + b, x * a - b


def f_item_round_and_cmp_chain(x):
    s = x.sum().item()
    return x + 1, 0 < s < 3, round(s), round(s, 1), int(s) == s


FLOAT_TENSORS = [
    torch.tensor([1.0, 2.0]), torch.tensor([-1.0, 0.5]), torch.tensor([0.0, 0.0]),
    torch.tensor([NAN, 1.0]), torch.tensor([INF, 1.0]), torch.tensor([-INF, 1.0]),
    torch.tensor([2.5, 0.25]), torch.tensor([1.0, 2.0]), torch.tensor([3.0, -3.0]),
]
FINITE_TENSORS = [x for x in FLOAT_TENSORS if torch.isfinite(x).all()]

FLOAT_BREAK_CASES = [
    (f_basic, FLOAT_TENSORS), (f_float_of_tensor, FLOAT_TENSORS), (f_dict_key, FLOAT_TENSORS),
    (f_format, FLOAT_TENSORS), (f_math, FINITE_TENSORS), (f_index, FINITE_TENSORS),
    (f_nan_compare, FLOAT_TENSORS), (f_arith, FINITE_TENSORS), (f_zero_div, FLOAT_TENSORS),
    (f_zero_d, FLOAT_TENSORS), (f_torch_calls, FLOAT_TENSORS), (f_print, FLOAT_TENSORS),
    (f_int_item, [x.abs() for x in FINITE_TENSORS]), (f_int_tensor_item, FINITE_TENSORS),
    (f_item_twice, FLOAT_TENSORS), (f_item_round_and_cmp_chain, FINITE_TENSORS),
    (f_nan_identity, FLOAT_TENSORS), (f_int_of_special, FLOAT_TENSORS), (f_try_zero_div, FLOAT_TENSORS),
]


@pytest.mark.parametrize("fn,xs", [pytest.param(f, v, id=f.__name__) for f, v in FLOAT_BREAK_CASES])
def test_float_across_break(fn, xs):
    seq(fn, xs, make=lambda x: (x.clone(),))


# ==========================================================================
# 3. len() of outside lists that grow
# ==========================================================================


def grow(lst_index=1, k=1):
    def step(state, i):
        for j in range(k):
            state[lst_index].append(i * 10 + j)
    return step


def l_last(x, lst):
    lst.append(len(lst))
    return x + lst[-1], len(lst)


def l_len_minus_one(x, lst):
    lst.append(7)
    return x * lst[len(lst) - 1], len(lst) - 1


def l_len_before_after(x, lst):
    a = len(lst)
    lst.append(0)
    b = len(lst)
    lst.append(1)
    return x + a, a, b, len(lst)


def l_pop(x, lst):
    lst.append(1)
    lst.append(2)
    v = lst.pop()
    return x + v, len(lst)


def l_insert(x, lst):
    lst.insert(0, 5)
    return x + len(lst), lst[0], len(lst)


def l_slice_iter_in(x, lst):
    lst.append(3)
    s = 0
    for v in lst:
        s += v
    return x + s, lst[1:], 3 in lst, len(lst[-2:]), len(lst)


def l_extend_iadd(x, lst):
    lst.extend([1, 2])
    lst += [3]
    return x + len(lst), len(lst)


def l_branch_len(x, lst):
    lst.append(1)
    if len(lst) > 3:
        return x + 1, len(lst)
    return x - 1, len(lst)


def l_range_len(x, lst):
    lst.append(1)
    for i in range(len(lst)):
        x = x + i
    return x


def l_break_between(x, lst):
    lst.append(len(lst))
    armature.graph_break()
    lst.append(len(lst))
    return x * len(lst), len(lst)


def l_clear_in_frame(x, lst):
    n = len(lst)
    lst.clear()
    lst.append(n)
    return x + n, len(lst)


def l_del_item(x, lst):
    lst.append(9)
    lst.append(8)
    del lst[0]
    return x + len(lst), len(lst)


def l_tensor_shape(x, lst):
    lst.append(0)
    return x.new_zeros(len(lst)), x * len(lst)


def l_len_times_zero_d(x, lst):
    lst.append(0)
    return x.sum() * len(lst), len(lst) / 2


def l_print_len(x, lst):
    lst.append(1)
    print("len", len(lst))
    return x + 1


def l_reverse(x, lst):
    lst.append(len(lst))
    lst.reverse()
    return x + 1, len(lst)


def l_len_after_setitem(x, lst):
    lst.append(1)
    lst[0] = 100
    return x + len(lst), len(lst)


LIST_CASES = [
    l_last, l_len_minus_one, l_len_before_after, l_pop, l_insert, l_slice_iter_in, l_extend_iadd,
    l_branch_len, l_range_len, l_break_between, l_clear_in_frame, l_del_item, l_tensor_shape,
    l_len_times_zero_d, l_print_len, l_reverse, l_len_after_setitem,
]


@pytest.mark.parametrize("fn", LIST_CASES, ids=lambda f: f.__name__)
def test_growing_list(fn):
    persist(fn, lambda: (X.clone(), []), [None, grow(), None, grow(k=2), None, None, grow(), None])


def _clear(state, i):
    state[1].clear()


@pytest.mark.parametrize("fn", [l_last, l_len_before_after, l_branch_len, l_extend_iadd, l_break_between],
                         ids=lambda f: f.__name__)
def test_list_cleared_between_calls(fn):
    persist(fn, lambda: (X.clone(), []), [None, None, _clear, None, None, _clear, grow(k=5), None])


def l_aliased(x, a, b):
    a.append(1)
    n = len(b)
    b.append(2)
    return x + n, len(a), len(b), n


def test_list_passed_twice():
    def make():
        lst = []
        return (X.clone(), lst, lst)
    persist(l_aliased, make, [None, None, grow(), None, grow(2, 3), None])


def test_list_aliased_then_not():
    cf = armature.compile(l_aliased, backend="eager")
    shared_e, shared_c = [], []
    for i in range(6):
        if i % 2:
            ea, ca = (X.clone(), shared_e, shared_e), (X.clone(), shared_c, shared_c)
        else:
            ea, ca = (X.clone(), shared_e, [0] * i), (X.clone(), shared_c, [0] * i)
        _compare(f"call {i}", _call(l_aliased, ea), _call(cf, ca), ea, ca)


def l_nested(x, outer):
    outer[0].append(len(outer[1]))
    outer[1].append(1)
    return x + len(outer[0]), len(outer[0]), len(outer[1])


def test_nested_lists():
    def step(state, i):
        state[1][0].append(-1)
    persist(l_nested, lambda: (X.clone(), [[], []]), [None, None, step, None, step, None])


def l_tensors(x, lst):
    lst.append(x * len(lst))
    return torch.stack(lst).sum(0), len(lst)


def test_list_of_tensors():
    persist(l_tensors, lambda: (X.clone(), []), [None] * 6)


def l_global_log(x):
    LOG.append(len(LOG))
    return x * len(LOG)


LOG: list = []


def l_global_alias(x, lst):
    lst.append(1)
    return x + len(LOG), len(LOG), len(lst)


def test_list_aliased_with_global():
    cf = armature.compile(l_global_alias, backend="eager")
    LOG.clear()
    eager = [l_global_alias(X, LOG if i % 2 else []) for i in range(6)]
    elog = list(LOG)
    LOG.clear()
    got = [cf(X, LOG if i % 2 else []) for i in range(6)]
    for i, (e, g) in enumerate(zip(eager, got)):
        assert_equal(e, g, f"call {i}")
    assert LOG == elog


def l_attr_list(x, o):
    o.items.append(len(o.items))
    return x * len(o.items), len(o.items)


def test_list_on_object():
    persist(l_attr_list, lambda: (X.clone(), Obj(items=[])),
            [None, None, lambda s, i: s[1].items.append(-1), None, lambda s, i: s[1].items.clear(), None])


def test_global_list_len():
    cf = armature.compile(l_global_log, backend="eager")
    LOG.clear()
    eager = [l_global_log(X) for _ in range(5)]
    elog = list(LOG)
    LOG.clear()
    got = [cf(X) for _ in range(5)]
    for e, g in zip(eager, got):
        torch.testing.assert_close(g, e)
    assert LOG == elog


# ==========================================================================
# 4. loops with a break inside
# ==========================================================================


def loop_step2(x, n):
    i = 0
    while i < n:
        x = x + i
        armature.graph_break()
        i += 2
    return x, i


def loop_down(x, n):
    i = n
    while i > 0:
        x = x * 1.5
        armature.graph_break()
        i -= 1
    return x, i


def loop_double(x, n):
    i = 1
    while i < n:
        x = x + 1
        armature.graph_break()
        i = i * 2
    return x, i


def loop_early_break(x, n):
    i = 0
    while i < n:
        x = x + 1
        armature.graph_break()
        if i == 3:
            break
        i += 1
    return x, i


def loop_continue(x, n):
    i = 0
    total = 0
    while i < n:
        i += 1
        if i % 2 == 0:
            continue
        armature.graph_break()
        total += i
    return x + total, total, i


def loop_nested(x, n):
    i = 0
    acc = 0
    while i < n:
        j = 0
        while j < i:
            armature.graph_break()
            acc += j
            j += 1
        i += 1
    return x + acc, acc, i


def loop_for_range_break(x, n):
    last = -1
    for i in range(n):
        x = x + i
        armature.graph_break()
        if i >= 2:
            last = i
            break
    return x, last


def loop_print(x, n):
    i = 0
    while i < n:
        print("step", i, i < n - 1)
        x = x + i
        i += 1
    return x, i


def loop_float_counter(x, n):
    i = 0.0
    while i < n:
        x = x + i
        armature.graph_break()
        i += 0.5
    return x, i


def loop_counter_tensor(x, n):
    i = 0
    while i < n:
        x = x * i + 1.0
        armature.graph_break()
        i += 1
    return x, i


def loop_item_accumulate(x, n):
    i = 0
    total = 0.0
    while i < n:
        total += x[i % 4].item()
        i += 1
    return x * total, total


LOOP_CASES = [loop_step2, loop_down, loop_double, loop_early_break, loop_continue, loop_nested,
              loop_for_range_break, loop_print, loop_float_counter, loop_counter_tensor,
              loop_item_accumulate]


@pytest.mark.parametrize("fn", LOOP_CASES, ids=lambda f: f.__name__)
def test_loop(fn):
    seq(fn, [0, 1, 3, 5, 2, 0, 4, 1])


def test_loop_compile_count():
    cf = seq(loop_counter_tensor, [6, 6, 7, 6])
    # root + resume specialised + resume (true) + resume (false): a few entries
    assert entries(cf) <= 3, entries(cf)


# ==========================================================================
# 5. instance __dict__
# ==========================================================================


class WithProp:
    def __init__(self):
        self.a = 1

    @property
    def p(self):
        return "prop"

    def meth(self):
        return "method"


def make_obj():
    return (X.clone(), Obj(a=1, b=X.clone()))


BRK = pytest.mark.parametrize("brk", [False, True], ids=["nobreak", "break"])


def d_reads(x, o, brk):
    d = o.__dict__
    a = "a" in d
    n = len(d)
    keys = list(d)
    if brk:
        armature.graph_break()
    return x + n, a, keys, list(d.keys()), [k for k, _ in d.items()], len(list(d.values())), "zz" in d


def d_writes(x, o, brk):
    o.__dict__["c"] = x + 1
    o.__dict__["a"] = o.a + 1
    if brk:
        armature.graph_break()
    return o.c * o.a, sorted(o.__dict__), len(vars(o))


def d_replace(x, o, brk):
    d = {"q": 1}
    o.__dict__ = d
    d["r"] = 2
    if brk:
        armature.graph_break()
    o.s = 3
    d["q"] = d["q"] + 10
    return x + o.q, dict(d), dict(vars(o)), o.r, "s" in d


def d_del_readd(x, o, brk):
    del o.a
    has = hasattr(o, "a")
    if brk:
        armature.graph_break()
    o.a = 5
    return x + o.a, has, list(o.__dict__), list(vars(o).items())[-1][0]


def d_vars_write(x, o, brk):
    v = vars(o)
    v["z"] = 9
    if brk:
        armature.graph_break()
    return x + o.z, v is o.__dict__, len(v)


def d_new_obj(x, o, brk):
    p = Obj()
    p.__dict__["z"] = x * 2
    if brk:
        armature.graph_break()
    p.w = 1
    return p.z, list(vars(p)), p.__dict__.get("w"), snap(p)


def d_methods(x, o, brk):
    d = o.__dict__
    d.update({"u": 1, "v": 2})
    popped = d.pop("a")
    if brk:
        armature.graph_break()
    sd = d.setdefault("u", 100)
    g = d.get("missing", -1)
    return x + popped, sd, g, list(d), hasattr(o, "a")


def d_clear(x, o, brk):
    o.__dict__.clear()
    if brk:
        armature.graph_break()
    o.k = 1
    return x + o.k, list(vars(o))


def d_old_dict_after_replace(x, o, brk):
    old = o.__dict__
    o.__dict__ = {"fresh": 1}
    if brk:
        armature.graph_break()
    old["late"] = 2
    return x + 1, "late" in vars(o), sorted(old), o.fresh, sorted(vars(o))


def d_setattr_then_dict(x, o, brk):
    setattr(o, "dyn", 4)
    o.a += 1
    if brk:
        armature.graph_break()
    return x * o.__dict__["dyn"], o.__dict__["a"], list(o.__dict__.items())[0][0]


def d_equality(x, o, brk):
    o.__dict__["b"] = 0
    if brk:
        armature.graph_break()
    return x + 1, o.__dict__ == {"a": 1, "b": 0}, vars(o) == {"a": 2}


def d_iter_mutate(x, o, brk):
    out = []
    for k in o.__dict__:
        out.append(k)
    if brk:
        armature.graph_break()
    for k, v in list(vars(o).items()):
        if isinstance(v, int):
            o.__dict__[k + "_2"] = v * 2
    return x + 1, out, sorted(vars(o))


def d_nonstr_key(x, o, brk):
    o.__dict__[1] = "one"
    if brk:
        armature.graph_break()
    return x + 1, len(o.__dict__), 1 in vars(o)


def d_class_shadow(x, o, brk):
    o.__dict__["kind"] = "inst"
    a = o.kind
    if brk:
        armature.graph_break()
    del o.__dict__["kind"]
    return x + 1, a, o.kind, "kind" in vars(o)


def d_pop_then_hasattr(x, o, brk):
    v = o.__dict__.pop("a", None)
    if brk:
        armature.graph_break()
    return x + 1, v, hasattr(o, "a"), getattr(o, "a", "gone"), "a" in o.__dict__


def d_copy(x, o, brk):
    c = dict(o.__dict__)
    c2 = o.__dict__.copy()
    o.extra = 1
    if brk:
        armature.graph_break()
    return x + 1, sorted(c), sorted(c2), len(c) == len(o.__dict__), o.__dict__ is o.__dict__


def d_mutate_while_iterating(x, o, brk):
    if brk:
        armature.graph_break()
    for k in o.__dict__:
        o.__dict__[k + "_x"] = 1
    return x + 1


def d_replace_then_clear(x, o, brk):
    d = {"a": 5}
    o.__dict__ = d
    if brk:
        armature.graph_break()
    d.clear()
    return x + 1, hasattr(o, "a"), len(vars(o))


def d_keys_setops(x, o, brk):
    if brk:
        armature.graph_break()
    k = o.__dict__.keys()
    return x + 1, sorted(k & {"a", "z"}), sorted(k | {"c"}), k == {"a", "b"}


DICT_CASES = [d_class_shadow, d_pop_then_hasattr, d_copy, d_mutate_while_iterating, d_replace_then_clear,
              d_keys_setops, d_reads, d_writes, d_replace, d_del_readd, d_vars_write, d_new_obj, d_methods, d_clear,
              d_old_dict_after_replace, d_setattr_then_dict, d_iter_mutate,
              d_equality, d_nonstr_key]


@BRK
@pytest.mark.parametrize("fn", DICT_CASES, ids=lambda f: getattr(f, "__name__", None))
def test_instance_dict(fn, brk):
    persist(lambda x, o: fn(x, o, brk), make_obj, [None, None, None])


def _instance_meth():
    return "instance-meth"


def p_shadow(x, o, brk):
    o.__dict__["p"] = "instance"
    o.__dict__["meth"] = _instance_meth
    if brk:
        armature.graph_break()
    return x + 1, o.p, o.meth(), o.__dict__["p"], sorted(vars(o))


@BRK
def test_descriptors_shadow_dict(brk):
    persist(lambda x, o: p_shadow(x, o, brk), lambda: (X.clone(), WithProp()), [None, None])


def d_dict_replace_then_alias(x, o, d, brk):
    o.__dict__ = d
    o.a = x + 1
    if brk:
        armature.graph_break()
    d["b"] = 2
    return o.a, o.b, d is vars(o)


@BRK
def test_dict_replaced_by_argument(brk):
    persist(lambda x, o, d: d_dict_replace_then_alias(x, o, d, brk),
            lambda: (X.clone(), Obj(a=0), {"z": 0}), [None, None])


def d_counter_in_dict(x, o):
    o.__dict__["count"] = o.__dict__.get("count", 0) + 1
    return x * o.count, len(o.__dict__)


def test_dict_counter_across_calls():
    cf = persist(d_counter_in_dict, lambda: (X.clone(), Obj()), [None] * 6)
    assert entries(cf) <= 3, entries(cf)


def plain_dict_views(x, d):
    return x + 1, d.keys() == {"a", "b"}, d.items() == {("a", 1), ("b", 2)}, {"a", "b"} == d.keys()


def test_dict_keys_view_equals_set():
    seq(plain_dict_views, [{"a": 1, "b": 2}, {"a": 1}], make=lambda d: (X.clone(), dict(d)))


def plain_dict_keys_and(x, d):
    return x + 1, sorted(d.keys() & {"a"}), sorted(d.keys() - {"a"})


def test_dict_keys_view_set_operators():
    seq(plain_dict_keys_and, [{"a": 1, "b": 2}], make=lambda d: (X.clone(), dict(d)))


def d_share_other_dict(x, o, p):
    p.__dict__ = o.__dict__
    p.z = 7
    o.w = 8
    return x + 1, p.__dict__ is o.__dict__, hasattr(o, "z"), hasattr(p, "w")


def test_instance_dict_shared_between_objects():
    persist(d_share_other_dict, lambda: (X.clone(), Obj(a=1), Obj(b=2)), [None, None])


# ==========================================================================
# signed zero: -0.0 == 0.0, but they print, divide and copysign differently
# ==========================================================================


def z_arg(x, n):
    return x / n, str(n), math.copysign(1.0, n)


def test_negative_zero_argument():
    seq(z_arg, [0.0, -0.0, 0.0, -0.0])


def z_item(x):
    s = x[0].item()
    return x + 1, str(s), math.copysign(1.0, s)


def test_negative_zero_across_break():
    seq(z_item, [torch.tensor([0.0, 1.0]), torch.tensor([-0.0, 1.0])], make=lambda x: (x.clone(),))


def test_negative_zero_symbolic():
    # 0.5 then 1.5 makes n symbolic; the str() / copysign on a symbolic value
    seq(z_arg, [0.5, 1.5, 0.0, -0.0, 2.0, -0.0])


# ==========================================================================
# dict item views: (key, value) membership
# ==========================================================================


def items_membership(x, d):
    return x + 1, ("a", 1) in d.items(), ("a", 2) in d.items(), ("a", 1) not in d.items()


def test_items_view_membership():
    seq(items_membership, [{"a": 1}, {"a": 2}, {"b": 1}], make=lambda d: (X.clone(), dict(d)))


def items_membership_symbolic(x, n):
    d = {"a": n}
    return x + 1, ("a", 1) in d.items(), n in d.values()


def test_items_view_membership_symbolic_value():
    seq(items_membership_symbolic, [0, 1, 2, 1, 3])


def d_items_live(x, o, brk):
    items = o.__dict__.items()
    o.a = 42
    if brk:
        armature.graph_break()
    return x + 1, ("a", 42) in items, ("a", 1) in vars(o).items()


@pytest.mark.parametrize("brk", [False, True], ids=["nobreak", "break"])
def test_instance_dict_items_membership(brk):
    persist(lambda x, o: d_items_live(x, o, brk), make_obj, [None, None])


def test_nan_repeated_stays_correct():
    # the same nan over and over: a guard `n == nan` can never hold, so each call
    # recompiles (until the recompile limit); the results must stay eager's
    seq(num_format, [NAN] * 10)
    seq(f_format, [torch.tensor([NAN, 1.0])] * 10, make=lambda x: (x.clone(),))
