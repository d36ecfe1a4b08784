"""Calls to user functions (inlined: positional, keyword, defaults,
*args/**kwargs) and closures reading enclosing variables."""

import pytest
import torch

from helpers import CASE_ARGS, assert_equal, assert_raises_same, assert_same, assert_same_calls, case, compile_fn, t

SCALE = 3
OFFSET_T = torch.arange(3.0)


def helper(x):
    return x * 2 + 1


def helper_kw(x, y, alpha=1.0, beta=0.0):
    return alpha * x + y + beta


def helper_multi_return(x):
    return x.sin(), x.cos()


def helper_varargs(*xs):
    acc = xs[0]
    for v in xs[1:]:
        acc = acc + v
    return acc


def helper_kwargs(x, **kw):
    for k, v in kw.items():
        x = x * v if k == "mul" else x + v
    return x


def helper_kwonly(x, *, scale, shift=0):
    return x * scale + shift


def helper_mutates(x):
    x.mul_(2)


def level3(x):
    return x - 1


def level2(x):
    return level3(x) * 2


def level1(x):
    return level2(x) + level3(x)


def countdown(x, n):
    if n == 0:
        return x
    return countdown(x * 2, n - 1)


def call_helper(x):
    return helper(x) + helper(x * 3)


def call_positional_and_keyword(x, y):
    return helper_kw(x, y), helper_kw(x, y=y, alpha=2.0), helper_kw(y=x, x=y, beta=1.0)


def call_defaults(x, y):
    return helper_kw(x, y)


def call_multi_return(x):
    s, c = helper_multi_return(x)
    return s * s + c * c


def call_varargs(x, y, z):
    return helper_varargs(x, y, z), helper_varargs(x)


def call_star_unpack(xs):
    return helper_varargs(*xs)


def call_kwargs(x):
    return helper_kwargs(x, mul=2, add=3)


def call_double_star(x, cfg):
    return helper_kw(x, **cfg)


def call_kwonly(x):
    return helper_kwonly(x, scale=3), helper_kwonly(x, shift=1, scale=2)


def call_mutating_helper(x):
    helper_mutates(x)
    return x + 1


def call_nested_levels(x):
    return level1(x)


def call_recursive(x):
    return countdown(x, 3)


def closure_reads_local(x):
    k = 5

    def inner(y):
        return y * k

    return inner(x) + inner(1)


def closure_reads_tensor(x, y):
    def inner(z):
        return z + y

    return inner(x) * inner(x)


def closure_nested_two_levels(x):
    a = 2

    def middle(y):
        b = 3

        def inner(z):
            return z * a + b

        return inner(y) - a

    return middle(x)


def closure_reads_later_binding(x):
    def inner():
        return x * factor

    factor = 4
    return inner()


def lambda_local(x):
    double = lambda v: v * 2  # noqa: E731
    return double(x) + double(x + 1)


def lambda_with_default(x):
    f = lambda v, s=3: v * s  # noqa: E731
    return f(x), f(x, 2)


def function_as_argument(x, fn):
    return fn(x) + 1


def global_constant(x):
    return x * SCALE


def global_tensor(x):
    return x + OFFSET_T


def make_scaler(s):
    def scaler(x):
        return x * s

    return scaler


def make_affine(w, b):
    def affine(x):
        return x @ w + b

    return affine


scale_by_3 = make_scaler(3)
affine_fn = make_affine(torch.arange(6.0).view(2, 3), torch.ones(3))


def call_made_closure(x):
    return scale_by_3(x) + make_scaler(2)(x)


def helper_returning_dict(x):
    return {"y": x + 1, "z": x * 2}


def call_helper_dict(x):
    out = helper_returning_dict(x)
    return out["y"] * out["z"]


def apply_twice(fn, x):
    return fn(fn(x))


def call_higher_order(x):
    return apply_twice(helper, x)


CASES = [
    case(call_helper, t(3)),
    case(call_positional_and_keyword, t(3), t(3)),
    case(call_defaults, t(3), t(3)),
    case(call_multi_return, t(3)),
    case(call_varargs, t(3), t(3), t(3)),
    case(call_star_unpack, [t(3), t(3), t(3)]),
    case(call_kwargs, t(3)),
    case(call_double_star, t(3), {"y": t(3), "alpha": 0.5}),
    case(call_kwonly, t(3)),
    case(call_mutating_helper, t(3)),
    case(call_nested_levels, t(3)),
    case(call_recursive, t(3), ops=3),
    case(closure_reads_local, t(3)),
    case(closure_reads_tensor, t(3), t(3)),
    case(closure_nested_two_levels, t(3)),
    case(closure_reads_later_binding, t(3)),
    case(lambda_local, t(3)),
    case(lambda_with_default, t(3)),
    case(function_as_argument, t(3), helper, id="function_as_argument_user"),
    case(function_as_argument, t(3), torch.relu, id="function_as_argument_torch"),
    case(global_constant, t(3), ops=1),
    case(global_tensor, t(3)),
    case(scale_by_3, t(3), id="compile_closure_scalar_cell"),
    case(affine_fn, t(4, 2), id="compile_closure_tensor_cells"),
    case(call_made_closure, t(3)),
    case(call_helper_dict, t(3)),
    case(call_higher_order, t(3), ops=4),
    case(helper_kw, t(3), y=t(3), alpha=2.0, id="top_level_keyword_args"),
    case(helper_kwonly, t(3), scale=3, id="top_level_keyword_only"),
    case(helper_varargs, t(3), t(3), t(3), id="top_level_varargs"),
    case(helper_kwargs, t(3), mul=2, add=3, id="top_level_var_kwargs"),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_inlining_closures(fn, args, opts):
    assert_same(fn, *args, **{"graphs": 1, **opts})


AOT_CASES = [
    case(call_positional_and_keyword, t(3), t(3)),
    case(closure_nested_two_levels, t(3)),
    case(affine_fn, t(4, 2), id="compile_closure_tensor_cells"),
]


@pytest.mark.aot_eager
@pytest.mark.parametrize(CASE_ARGS, AOT_CASES)
def test_inlining_closures_aot_eager(fn, args, opts):
    assert_same(fn, *args, backend="aot_eager", graphs=1, **opts)


def test_inlined_helper_op_count():
    # helper(x) + helper(3x): 2 * (mul, add) + mul + add
    assert_same(call_helper, t(3), graphs=1, ops=6)


def call_with_missing_arg(x):
    return helper_kw(x)


def test_inlined_call_type_error_raises():
    assert_raises_same(call_with_missing_arg, t(3), exc_match="type")


# ------------------------------------------- values that change between calls

MUTABLE_SCALE = 2


def uses_mutable_global(x):
    return x * MUTABLE_SCALE


def make_dict_closure():
    state = {"k": 2}

    def scaled(x):
        return x * state["k"]

    return scaled, state


def make_rebindable_closure():
    k = 2

    def scaled(x):
        return x * k

    def set_k(v):
        nonlocal k
        k = v

    return scaled, set_k


def test_global_rebound_between_calls(monkeypatch):
    import sys

    cf = compile_fn(uses_mutable_global, backend="eager", fullgraph=True)
    x = t(3)
    assert_equal(uses_mutable_global(x), cf(x))
    monkeypatch.setattr(sys.modules[__name__], "MUTABLE_SCALE", 7)
    assert_equal(x * 7, cf(x))


def test_closure_dict_contents_change_between_calls():
    fn, state = make_dict_closure()
    cf = compile_fn(fn, backend="eager", fullgraph=True)
    x = t(3)
    assert_equal(fn(x), cf(x))
    state["k"] = 5
    assert_equal(x * 5, cf(x))


def test_closure_cell_rebound_between_calls():
    fn, set_k = make_rebindable_closure()
    cf = compile_fn(fn, backend="eager", fullgraph=True)
    x = t(3)
    assert_equal(fn(x), cf(x))
    set_k(9)
    assert_equal(x * 9, cf(x))


def test_function_argument_changes_between_calls():
    x = t(3)
    assert_same_calls(function_as_argument, [(x, helper), (x, torch.relu), (x, helper)])
