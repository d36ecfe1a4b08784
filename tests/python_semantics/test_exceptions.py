"""Exceptions and the exception-table machinery inside compiled frames
(compiled vs eager): try/except/else/finally where the raising path is known
while tracing (raise inside try, KeyError from a dict lookup, StopIteration
from next, IndexError, AttributeError, ZeroDivisionError), nested try,
finally on every exit path, ``except ... as e`` with ``e.args``, exception
hierarchies and tuples of types, re-raise and chaining, with blocks (user
context managers, torch.no_grad, suppressing __exit__), and exceptions that
escape the frame (same type and message as eager) including ``assert``.

PYTEST_DONT_REWRITE: the programs' own ``assert`` statements must stay
plain Python asserts (pytest's rewriting would change their messages).
"""

import contextlib

import pytest
import torch

from helpers import CASE_ARGS, case, t
from python_semantics.support import run_case, xfail


class AppError(Exception):
    pass


class ConfigError(AppError):
    def __init__(self, key, detail="bad"):
        super().__init__(key, detail)
        self.key = key


class Tracker:
    """A context manager recording enter/exit into a list."""

    def __init__(self, log, suppress=False):
        self.log = log
        self.suppress = suppress

    def __enter__(self):
        self.log.append("enter")
        return len(self.log)

    def __exit__(self, exc_type, exc, tb):
        self.log.append("exit" if exc_type is None else f"exit:{exc_type.__name__}")
        return self.suppress


@contextlib.contextmanager
def tagged(log, tag):
    log.append(f"<{tag}>")
    try:
        yield tag.upper()
    finally:
        log.append(f"</{tag}>")


def lookup(d, k):
    try:
        return d[k]
    except KeyError:
        return None


# --------------------------------------------------------------------------
# try / except / else / finally with the raising path known while tracing
# --------------------------------------------------------------------------


def raise_and_catch(x):
    try:
        raise ValueError("boom")
    except ValueError:
        x = x + 1
    return x


def catch_key_error(x):
    d = {"a": x}
    try:
        v = d["b"]
    except KeyError as e:
        v = x * 2
        key = e.args[0]
    return v, key


def catch_stop_iteration(x):
    it = iter([x])
    first = next(it)
    try:
        second = next(it)
    except StopIteration:
        second = first * 3
    return first + second


def catch_index_error(x):
    lst = [x]
    try:
        y = lst[5]
    except IndexError as e:
        y = x - 1
        msg = str(e)
    return y, msg


def catch_attribute_error(x):
    try:
        v = x.no_such_attribute
    except AttributeError:
        v = x.sum()
    return v


def catch_zero_division(x):
    n = 0
    try:
        r = 10 // n
    except ZeroDivisionError as e:
        r = -1
        msg = e.args[0]
    return x * r, msg


def catch_value_error_from_builtins(x):
    try:
        i = [1, 2].index(5)
    except ValueError:
        i = -1
    try:
        v = int("abc")
    except ValueError as e:
        v = len(e.args)
    return x * i + v


def try_else_runs(x):
    try:
        y = x + 1
    except ValueError:
        y = x - 100
    else:
        y = y * 2
    return y


def try_else_skipped_on_exception(x):
    log = []
    try:
        raise RuntimeError("r")
    except RuntimeError:
        log.append("except")
    else:
        log.append("else")
    return x, log


def finally_on_normal_path(x):
    log = []
    try:
        y = x * 2
    finally:
        log.append("finally")
    return y, log


def finally_on_exception_path(x):
    log = []
    try:
        try:
            raise KeyError("k")
        finally:
            log.append("inner-finally")
    except KeyError:
        log.append("caught")
    return x + len(log), log


def finally_on_return_path(x):
    log = []

    def inner(v):
        try:
            return v * 2
        finally:
            log.append("cleanup")

    return inner(x), log


def finally_on_break_and_continue(x):
    log = []
    for i in range(4):
        try:
            if i == 1:
                continue
            if i == 3:
                break
            x = x + i
        finally:
            log.append(i)
    return x, log


def finally_return_overrides(x):
    def f(v):
        try:
            return v
        finally:
            return v * 10  # noqa: B012 - the override is the point

    return f(x)


def finally_return_swallows_exception(x):
    def f(v):
        try:
            raise ValueError("lost")
        finally:
            return v + 1  # noqa: B012

    return f(x)


def nested_try(x):
    log = []
    try:
        try:
            raise TypeError("inner")
        except ValueError:
            log.append("wrong handler")
        finally:
            log.append("inner finally")
    except TypeError as e:
        log.append(("outer caught", e.args))
    return x * len(log), log


def nested_try_reraise(x):
    log = []
    try:
        try:
            raise ValueError("v")
        except ValueError:
            log.append("first")
            raise
    except ValueError as e:
        log.append(e.args)
    return x + 1, log


def exception_as_variable(x):
    try:
        raise ConfigError("lr", detail="negative")
    except AppError as e:
        info = (type(e).__name__, e.args, e.key, str(e), isinstance(e, ConfigError))
    return x, info


def exception_variable_unbound_after(x):
    try:
        raise ValueError(1)
    except ValueError as e:
        pass
    try:
        e  # noqa: B018
        bound = True
    except NameError:
        bound = False
    return x + 1, bound


def except_tuple_of_types(x):
    out = []
    for exc in (KeyError("k"), IndexError("i"), ValueError("v")):
        try:
            raise exc
        except (KeyError, IndexError) as e:
            out.append(("lookup", type(e).__name__))
        except Exception as e:
            out.append(("other", type(e).__name__))
    return x, out


def except_hierarchy_order(x):
    try:
        raise ConfigError("k")
    except ConfigError:
        which = "ConfigError"
    except AppError:
        which = "AppError"
    return x * 2, which


def except_base_catches_subclass(x):
    try:
        {}["missing"]
    except LookupError as e:
        name = type(e).__name__
    return x - 1, name


def raise_from_chaining(x):
    try:
        try:
            raise KeyError("inner")
        except KeyError as e:
            raise AppError("outer") from e
    except AppError as e:
        cause = type(e.__cause__).__name__
        ctx = type(e.__context__).__name__
    return x, cause, ctx


def raise_class_not_instance(x):
    try:
        raise ValueError
    except ValueError as e:
        args = e.args
    return x + 1, args


def exception_in_nested_function_caught(x):
    def risky(v):
        if v.shape[0] > 2:
            raise AppError("too big", v.shape[0])
        return v

    try:
        r = risky(x)
    except AppError as e:
        r = x[: e.args[1] - 2]
    return r


def lookup_helper_returns_none(x):
    d = {"a": 1}
    return x * lookup(d, "a"), lookup(d, "zz")


def exception_in_loop_continue(x):
    total = x
    for k in ["a", "b", "c"]:
        try:
            total = total + {"a": 1, "c": 3}[k]
        except KeyError:
            continue
    return total


def try_except_no_exception(x):
    try:
        y = x.relu()
    except Exception:
        y = x
    return y


def bare_except(x):
    try:
        raise OSError("io")
    except:  # noqa: E722 - bare except is the point
        ok = True
    return x, ok


def exception_args(x):
    e = ValueError("a", 1, None)
    return x * 2, e.args, len(e.args), KeyError("k").args, ValueError().args


def exception_str_repr(x):
    try:
        raise ValueError("only")
    except ValueError as e:
        s = str(e)
    return x * 2, s, str(KeyError("k")), repr(KeyError("k")), str(ValueError("a", 1))


def exception_user_class_simple(x):
    try:
        raise AppError("plain", 3)
    except Exception as e:
        info = (type(e).__name__, e.args, isinstance(e, AppError))
    return x + 1, info


# --------------------------------------------------------------------------
# with blocks
# --------------------------------------------------------------------------


def with_user_context_manager(x):
    log = []
    with Tracker(log) as n:
        y = x * n
    return y, log


def with_suppressing_exit(x):
    log = []
    with Tracker(log, suppress=True):
        raise ValueError("swallowed")
    return x + 1, log


def with_exit_sees_exception(x):
    log = []
    try:
        with Tracker(log):
            raise KeyError("k")
    except KeyError:
        log.append("caught")
    return x, log


def with_nested_managers(x):
    log = []
    with Tracker(log) as a, Tracker(log) as b:
        y = x + a + b
    return y, log


def with_contextmanager_decorator(x):
    log = []
    with tagged(log, "a") as tag:
        y = x * 2
    return y, tag, log


def with_no_grad(x):
    with torch.no_grad():
        y = x * 2
    return y, y.requires_grad


def with_return_inside(x):
    log = []

    def f(v):
        with Tracker(log):
            return v + 1

    return f(x), log


# --------------------------------------------------------------------------
# exceptions escaping the frame (same type and message as eager)
# --------------------------------------------------------------------------


def escape_value_error(x):
    y = x + 1
    raise ValueError(f"bad value {y.shape[0]}")


def escape_user_exception(x):
    raise ConfigError("lr", "must be positive")


def escape_key_error(x):
    return {"a": x}["b"]


def escape_type_error_from_op(x):
    return "a" + 1


def escape_from_nested_call(x):
    def inner():
        raise AppError("deep")

    return inner()


def escape_reraise(x):
    try:
        raise IndexError("first")
    except IndexError:
        raise


def escape_new_exception_in_handler(x):
    try:
        raise KeyError("k")
    except KeyError:
        raise RuntimeError("while handling")


def escape_after_finally(x):
    log = []
    try:
        raise ValueError("after finally")
    finally:
        log.append(1)


def escape_raise_from_none(x):
    try:
        raise KeyError("k")
    except KeyError:
        raise AppError("clean") from None


def assert_fails_with_message(x):
    assert x.shape[0] == 3, f"expected 3 rows, got {x.shape[0]}"
    return x


def assert_fails_without_message(x):
    assert x.dim() == 5
    return x


def assert_fails_on_constant(x):
    n = 2
    assert n > 3, ("tuple", "message")
    return x


# passing asserts (no exception)


def assert_passes(x):
    assert x.shape[0] == 4, "shape"
    assert isinstance(x, torch.Tensor)
    assert True
    return x * 2


def assert_in_helper(x):
    def check(v):
        assert v.dim() == 1, "1-d only"
        return v

    return check(x) + 1


# --------------------------------------------------------------------------
# case tables
# --------------------------------------------------------------------------

X = t(4)

CASES = [
    case(raise_and_catch, X),
    case(catch_key_error, X),
    case(catch_stop_iteration, X),
    case(catch_index_error, X),
    case(catch_attribute_error, X),
    case(catch_zero_division, X),
    case(catch_value_error_from_builtins, X),
    case(try_else_runs, X),
    case(try_else_skipped_on_exception, X, graphs=0),
    case(finally_on_normal_path, X),
    case(finally_on_exception_path, X),
    case(finally_on_return_path, X),
    case(finally_on_break_and_continue, X),
    case(finally_return_overrides, X),
    case(finally_return_swallows_exception, X),
    case(nested_try, X),
    case(nested_try_reraise, X),
    case(exception_as_variable, X, graphs=0),
    case(exception_variable_unbound_after, X),
    case(except_tuple_of_types, X, graphs=0),
    case(except_hierarchy_order, X),
    case(except_base_catches_subclass, X),
    case(raise_from_chaining, X, graphs=0),
    case(raise_class_not_instance, X),
    case(exception_in_nested_function_caught, X),
    case(exception_in_nested_function_caught, t(2), id="exception_in_nested_function_not_raised", graphs=0),
    case(lookup_helper_returns_none, X),
    case(exception_in_loop_continue, X),
    case(try_except_no_exception, X),
    case(bare_except, X, graphs=0),
    case(exception_args, X),
    case(exception_str_repr, X),
    case(exception_user_class_simple, X),
    # with
    case(with_user_context_manager, X),
    case(with_suppressing_exit, X),
    case(with_exit_sees_exception, X, graphs=0),
    case(with_nested_managers, X),
    case(with_contextmanager_decorator, X),
    case(with_no_grad, t(4, requires_grad=True)),
    case(with_return_inside, X),
    # passing asserts
    case(assert_passes, X),
    case(assert_in_helper, X),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_exceptions(fn, args, opts):
    run_case(fn, args, opts, default_graphs=1)


RAISES = [
    case(escape_value_error, X),
    case(escape_user_exception, X),
    case(escape_key_error, X),
    case(escape_type_error_from_op, X),
    case(escape_from_nested_call, X),
    case(escape_reraise, X),
    case(escape_new_exception_in_handler, X),
    case(escape_after_finally, X),
    case(escape_raise_from_none, X),
    case(assert_fails_with_message, X),
    case(assert_fails_without_message, X),
    case(assert_fails_on_constant, X),
    case(assert_passes, t(3), id="assert_passes_but_shape_differs"),
    case(assert_in_helper, t(2, 2), id="assert_in_helper_fails"),
]


@pytest.mark.parametrize(CASE_ARGS, RAISES)
def test_exceptions_escape_like_eager(fn, args, opts):
    run_case(fn, args, opts, raises=True)


def _chain_of(exc):
    out = []
    while exc is not None:
        out.append((type(exc).__name__, str(exc), exc.__suppress_context__))
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return out


@pytest.mark.parametrize("fn", [escape_new_exception_in_handler, escape_raise_from_none, escape_from_nested_call])
def test_escaping_exception_chain_matches_eager(fn):
    """__cause__/__context__/__suppress_context__ of an escaping exception."""
    from helpers import compile_fn

    with pytest.raises(Exception) as eager:
        fn(X.clone())
    compiled = compile_fn(fn, backend="eager")
    for _ in range(2):
        with pytest.raises(Exception) as got:
            compiled(X.clone())
        assert _chain_of(got.value) == _chain_of(eager.value)
