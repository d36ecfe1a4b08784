"""User functions inside compiled frames (compiled vs eager): inlining of
nested functions and lambdas created in the frame, closures over cells the
frame writes, bounded recursion (ints and tensors), decorators (with and
without functools.wraps) and argument binding (defaults, keywords, keyword-
only, positional-only, *args/**kwargs) including the TypeErrors eager raises.
"""

import functools
import sys
import types

import pytest
import torch

from helpers import CASE_ARGS, case, t
from python_semantics.support import run_case

# --------------------------------------------------------------------------
# module-level helpers
# --------------------------------------------------------------------------

SCALE = 3


def apply(f, v):
    return f(v)


def compose(f, g):
    return lambda v: f(g(v))


def factorial(n):
    return 1 if n <= 1 else n * factorial(n - 1)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def is_even(n):
    return True if n == 0 else is_odd(n - 1)


def is_odd(n):
    return False if n == 0 else is_even(n - 1)


def rsum(xs, i=0):
    if i == len(xs):
        return 0
    return xs[i] + rsum(xs, i + 1)


def flatten(obj):
    if isinstance(obj, (list, tuple)):
        out = []
        for o in obj:
            out.extend(flatten(o))
        return out
    return [obj]


def halve_until_one(x):
    if x.shape[0] == 1:
        return x
    return halve_until_one(x[: x.shape[0] // 2]) * 2


def power_rec(x, n):
    if n == 0:
        return torch.ones_like(x)
    half = power_rec(x, n // 2)
    return half * half * (x if n % 2 else 1)


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) + 1

    return wrapper


@logged
def decorated_helper(x, k=2):
    """Doubles then adds one."""
    return x * k


def repeat(n):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(v):
            for _ in range(n):
                v = fn(v)
            return v

        return wrapper

    return deco


@repeat(3)
def add_half(v):
    return v + 0.5


def plain_decorator(fn):
    def inner(v):
        return fn(v) * 2

    return inner


@plain_decorator
def plainly_decorated(v):
    return v - 1


def pos_only(a, b, /, c=1):
    return a * b + c


def kw_only(a, *, scale, shift=0):
    return a * scale + shift


def everything(a, b=2, /, c=3, *args, d, e=5, **kwargs):
    return a, b, c, args, d, e, kwargs


def kw_sink(**kw):
    return list(kw.items())


def varargs_sum(*xs):
    acc = 0
    for v in xs:
        acc = acc + v
    return acc


def forward_all(*args, **kwargs):
    return kw_only(*args, **kwargs)


def early_return(xs):
    for i, v in enumerate(xs):
        if i == 1:
            return v
    return None


def raise_at_depth(n):
    if n == 0:
        raise ValueError("bottom reached")
    return raise_at_depth(n - 1)


# --------------------------------------------------------------------------
# nested functions and lambdas created in the frame
# --------------------------------------------------------------------------


def nested_def_called(x):
    def g(v):
        return v * 2 + 1

    return g(x) + g(g(x))


def nested_calls_nested(x):
    def a(v):
        return v + 1

    def b(v):
        return a(v) * a(v)

    return b(x)


def lambda_immediate(x):
    return (lambda v: v * 2)(x)


def lambda_returning_lambda(x):
    adder = lambda k: lambda v: v + k  # noqa: E731
    add3 = adder(3)
    return add3(x), adder(1)(x)


def lambda_to_module_higher_order(x):
    return apply(lambda v: v.relu() * SCALE, x)


def lambda_compose(x):
    h = compose(lambda v: v + 1, lambda v: v * 2)
    return h(x)


def lambda_conditional(x):
    f = lambda v, flag: v * 2 if flag else v - 2  # noqa: E731
    return f(x, True), f(x, False)


def functions_in_dict(x):
    ops = {"relu": torch.relu, "double": lambda v: v * 2, "neg": torch.neg}
    return {k: fn(x) for k, fn in ops.items()}


def functions_in_list(x):
    fs = [torch.sin, lambda v: v + 1, nested_def_called]
    out = x
    for f in fs:
        out = f(out)
    return out


def function_selected_by_flag(x, use_relu):
    f = torch.relu if use_relu else torch.tanh
    return f(x)


def function_passed_in(x, fn):
    return fn(x) + fn(x * 2)


def nested_inner_mutates_outer_list(x):
    out = []

    def push(v):
        out.append(v * 2)

    for i in range(3):
        push(x + i)
    return out


def nested_closure_two_levels(x):
    a = 2

    def mid(v):
        b = 3

        def inner(w):
            return w * a + b

        return inner(v) + a

    return mid(x)


def nested_closure_over_param_and_loop(x):
    results = []
    for k in range(3):

        def scaled(v, k=k):
            return v * k + x

        results.append(scaled(x))
    return results


def nested_function_early_return(x):
    def find(xs, target):
        for i, v in enumerate(xs):
            if v == target:
                return i
        return -1

    return x * find([5, 6, 7], 6), find([1], 9)


def nested_with_docstring(x):
    def g(v):
        """A docstring is a constant the body skips."""
        return v + 1

    return g(x)


def nested_returns_many(x):
    def stats(v):
        return v.sum(), v.mean(), v.shape

    s, m, shape = stats(x)
    return s + m, shape


def nested_star_forwarding(x):
    def target(a, b=1, *, c=2):
        return a * b + c

    def wrapper(*args, **kwargs):
        return target(*args, **kwargs)

    return wrapper(x), wrapper(x, 3, c=0), wrapper(a=x, c=1)


def nested_kwargs_tensors(x, y):
    def combine(**parts):
        acc = 0
        for name in sorted(parts):
            acc = acc + parts[name]
        return acc

    return combine(b=x, a=y, c=x * y)


def map_filter_lambdas(x):
    vals = list(map(lambda v: v * 2, [1, 2, 3, 4]))
    evens = list(filter(lambda v: v % 4 == 0, vals))
    return x * sum(evens), vals, evens


def map_over_tensors(xs):
    return list(map(lambda v: v.sin(), xs)), sum(map(torch.sum, xs))


def global_store_and_read(x):
    global _LAST_N
    _LAST_N = x.shape[0]
    return x * _LAST_N


_LAST_N = 0


def module_attribute_sees_global_write(x):
    global _MARK
    _MARK = 1
    a = _THIS_MODULE._MARK      # the module's attribute is the global just written
    _MARK = 2
    return x * a + _THIS_MODULE._MARK


_MARK = 0
_THIS_MODULE = sys.modules[__name__]


# --------------------------------------------------------------------------
# closures over cells written by the frame
# --------------------------------------------------------------------------


def closure_counter_nonlocal(x):
    count = 0

    def bump(by=1):
        nonlocal count
        count += by
        return count

    bump()
    bump(5)
    return x * bump()


def closure_accumulates_tensor(x):
    total = torch.zeros_like(x)

    def add(v):
        nonlocal total
        total = total + v

    for k in range(3):
        add(x * k)
    return total


def closure_sees_later_write(x):
    factor = 1

    def scale(v):
        return v * factor

    first = scale(x)
    factor = 10
    return first, scale(x)


def closure_written_by_two(x):
    log = ""

    def a():
        nonlocal log
        log += "a"

    def b():
        nonlocal log
        log += "b"

    a()
    b()
    a()
    return x + len(log), log


def closure_self_recursive(x):
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    return x * fact(5)


def closure_memo_dict(x):
    cache = {}

    def get(k):
        if k not in cache:
            cache[k] = x * k
        return cache[k]

    return get(2) + get(2) + get(3), sorted(cache)


# --------------------------------------------------------------------------
# recursion
# --------------------------------------------------------------------------


def recursion_factorial_int(n):
    return factorial(n)


def recursion_factorial_tensor(x):
    return x * factorial(5)


def recursion_fib(x):
    return x + fib(7)


def recursion_mutual(x):
    return x * (2 if is_even(6) else 3), is_odd(5)


def recursion_tensor_accumulation(xs):
    return rsum(xs)


def recursion_flatten(x):
    items = flatten([1, [2, [3, (4, 5)]], [[6]]])
    return x * sum(items), items


def recursion_shape_driven(x):
    return halve_until_one(x)


def recursion_power(x):
    return power_rec(x, 5)


def recursion_raises(x):
    return raise_at_depth(3)


# --------------------------------------------------------------------------
# decorators
# --------------------------------------------------------------------------


def call_wraps_decorated(x):
    return decorated_helper(x), decorated_helper(x, k=3)


def wraps_metadata(x):
    return x + 1, decorated_helper.__name__, decorated_helper.__doc__


def call_wrapped_original(x):
    return decorated_helper.__wrapped__(x)


def call_decorator_with_args(x):
    return add_half(x)


def call_plain_decorated(x):
    return plainly_decorated(x)


def decorator_defined_in_frame(x):
    def twice(fn):
        def g(v):
            return fn(fn(v))

        return g

    @twice
    def inc(v):
        return v + 1

    return inc(x)


def wraps_in_frame_call(x):
    def deco(fn):
        @functools.wraps(fn)
        def g(v):
            return fn(v) * 3

        return g

    @deco
    def h(v):
        return v - 1

    return h(x)


# --------------------------------------------------------------------------
# argument binding
# --------------------------------------------------------------------------


def bind_pos_only(x):
    return pos_only(x, 2), pos_only(x, 2, c=0), pos_only(x, 3, 4)


def bind_kw_only(x):
    return kw_only(x, scale=2), kw_only(x, shift=1, scale=3)


def bind_everything(x):
    a, b, c, args, d, e, kwargs = everything(x, 1, 2, 3, 4, d=6, z=7)
    return a * b, c, args, d, e, kwargs


def bind_everything_defaults(x):
    a, b, c, args, d, e, kwargs = everything(x, d=0)
    return a + b, c, args, d, e, kwargs


def bind_kwargs_order(x):
    return x * 2, kw_sink(z=1, a=2, m=3), kw_sink(**{"q": 1, "b": 2})


def bind_varargs_tensors(x, y):
    return varargs_sum(x, y, x), varargs_sum(), varargs_sum(*[x, y])


def bind_keywords_reordered(x, y):
    def sub(a, b):
        return a - b

    return sub(b=x, a=y), sub(x, b=y)


def bind_forward_all(x):
    return forward_all(x, scale=2), forward_all(x, shift=1, scale=1)


def bind_early_return(xs):
    return early_return(xs) * 2


# raising binders


def bind_too_many_positional(x):
    return kw_only(x, 2)


def bind_missing_required(x):
    return kw_only(x)


def bind_pos_only_by_keyword(x):
    return pos_only(a=x, b=2)


def bind_multiple_values(x):
    return pos_only(x, 2, 3, c=4)


def bind_nested_unexpected_keyword(x):
    def g(a):
        return a

    return g(x, b=1)


# --------------------------------------------------------------------------
# attributes every function has (function.__getattribute__)
# --------------------------------------------------------------------------


def tagged_helper(v):
    """doc of tagged_helper"""
    return v * 2


tagged_helper.tag = 3


class WithMethods:
    def method(self, v):
        return v + 1

    method.tag = 4

    @staticmethod
    def static(v):
        return v - 1


def log_api_usage(obj):
    # torchvision.utils._log_api_usage_once, called in forward (Swin's stochastic depth)
    module = obj.__module__
    name = obj.__class__.__name__
    if isinstance(obj, types.FunctionType):
        name = obj.__name__
    return f"{module}.{name}"


def function_class_attr(x):
    return x + 1, tagged_helper.__class__ is types.FunctionType, tagged_helper.__class__.__name__


def function_api_usage_name(x):
    return x * 2, log_api_usage(tagged_helper), log_api_usage(WithMethods.static)


def function_generic_attrs(x):
    f = tagged_helper
    return (f(x), f.__module__, f.__qualname__, f.__doc__, f.__dict__["tag"], f.tag,
            f.__code__.co_name, f.__defaults__, f.__kwdefaults__)


def function_missing_attr(x):
    return x + getattr(tagged_helper, "missing", 5), hasattr(tagged_helper, "other")


def function_has_method_attr(x):
    # `__call__`, `__get__` exist on every function: never an AttributeError
    return x + 1 if hasattr(tagged_helper, "__call__") and hasattr(tagged_helper, "__get__") else x - 1


def function_closure_attr(x):
    k = 3

    def inner(v):
        return v * k

    return inner(x), inner.__closure__[0].cell_contents, len(apply_twice.__closure__ or ())


def _make_apply_twice():
    n = 2

    def apply_twice(v):
        return v * n

    return apply_twice


apply_twice = _make_apply_twice()


def empty_cell_contents(x):
    def inner():
        return later

    try:
        inner.__closure__[0].cell_contents
        found = True
    except ValueError as e:
        found = str(e)
    later = 1
    return x + inner(), found, inner.__closure__[0].cell_contents


def module_function_closure_attr(x):
    return apply_twice(x), apply_twice.__closure__[0].cell_contents


def nested_function_attrs(x):
    def inner(v, w=2):
        """inner doc"""
        return v * w

    lam = lambda v: v  # noqa: E731
    return (inner(x), inner.__class__ is types.FunctionType, inner.__module__, inner.__doc__,
            inner.__qualname__, lam.__doc__, lam.__name__, hasattr(inner, "missing"),
            getattr(inner, "missing", 7))


def bound_method_attrs(x):
    m = WithMethods().method
    return (m(x), m.__class__ is types.MethodType, m.__name__, m.__module__, m.tag,
            getattr(m, "missing", 6), m.__func__ is WithMethods.method, m.__doc__)


def static_function_attrs(x):
    return WithMethods.static(x), WithMethods.static.__name__, WithMethods.static.__class__.__name__


# --------------------------------------------------------------------------
# case table
# --------------------------------------------------------------------------

X = t(4)
Y = t(4)
XS = [t(3), t(3), t(3)]

CASES = [
    # nested functions and lambdas
    case(nested_def_called, X),
    case(nested_calls_nested, X),
    case(lambda_immediate, X),
    case(lambda_returning_lambda, X),
    case(lambda_to_module_higher_order, X),
    case(lambda_compose, X),
    case(lambda_conditional, X),
    case(functions_in_dict, X),
    case(functions_in_list, X),
    case(function_selected_by_flag, X, True),
    case(function_selected_by_flag, X, False, id="function_selected_by_flag_false"),
    case(function_passed_in, X, torch.cos),
    case(function_passed_in, X, nested_def_called, id="function_passed_in_user"),
    case(nested_inner_mutates_outer_list, X),
    case(nested_closure_two_levels, X),
    case(nested_closure_over_param_and_loop, X),
    case(nested_function_early_return, X),
    case(nested_with_docstring, X),
    case(nested_returns_many, t(2, 3)),
    case(nested_star_forwarding, X),
    case(nested_kwargs_tensors, X, Y),
    case(map_filter_lambdas, X),
    case(map_over_tensors, XS),
    case(global_store_and_read, X),
    case(module_attribute_sees_global_write, X),
    # closures over cells
    case(closure_counter_nonlocal, X),
    case(closure_accumulates_tensor, X),
    case(closure_sees_later_write, X),
    case(closure_written_by_two, X),
    case(closure_self_recursive, X),
    case(closure_memo_dict, X),
    # recursion
    case(recursion_factorial_int, 5, graphs=0),
    case(recursion_factorial_tensor, X),
    case(recursion_fib, X),
    case(recursion_mutual, X),
    case(recursion_tensor_accumulation, XS),
    case(recursion_flatten, X),
    case(recursion_shape_driven, t(8)),
    case(recursion_power, X),
    # decorators
    case(call_wraps_decorated, X),
    case(wraps_metadata, X),
    case(call_wrapped_original, X),
    case(call_decorator_with_args, X),
    case(call_plain_decorated, X),
    case(decorator_defined_in_frame, X),
    case(wraps_in_frame_call, X),
    # attributes of functions and bound methods
    case(function_class_attr, X),
    case(function_api_usage_name, X),
    case(function_generic_attrs, X),
    case(function_missing_attr, X),
    case(function_has_method_attr, X),
    case(function_closure_attr, X),
    case(module_function_closure_attr, X),
    case(empty_cell_contents, X),
    case(nested_function_attrs, X),
    case(bound_method_attrs, X),
    case(static_function_attrs, X),
    # binding
    case(bind_pos_only, X),
    case(bind_kw_only, X),
    case(bind_everything, X),
    case(bind_everything_defaults, X),
    case(bind_kwargs_order, X),
    case(bind_varargs_tensors, X, Y),
    case(bind_keywords_reordered, X, Y),
    case(bind_forward_all, X),
    case(bind_early_return, XS),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_functions(fn, args, opts):
    run_case(fn, args, opts, default_graphs=1)


RAISES = [
    case(recursion_raises, X),
    case(bind_too_many_positional, X),
    case(bind_missing_required, X),
    case(bind_pos_only_by_keyword, X),
    case(bind_multiple_values, X),
    case(bind_nested_unexpected_keyword, X),
]


@pytest.mark.parametrize(CASE_ARGS, RAISES)
def test_functions_raise_like_eager(fn, args, opts):
    run_case(fn, args, opts, raises=True)
