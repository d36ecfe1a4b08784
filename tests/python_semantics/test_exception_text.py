"""``str()``, ``repr()``, ``format()`` and f-strings of exceptions the trace
made (values/operations/exception_text.py): a user class's own ``__str__``/``__repr__``/
``__format__`` inlined (reading ``self.args`` and attributes its ``__init__``
set, calling ``super().__str__()``, with side effects), the builtin ones
following CPython's rules for 0, 1 and several arguments; compiled vs eager
(results and mutated inputs) and graph counts vs torch.compile."""
import pytest
import torch

from helpers import assert_equal, assert_same, compile_fn, compiled_stats, compiled_with_oracle, reset, t


class MyErr(ValueError):
    def __str__(self):
        return f"bad {self.args[0]}"


class Coded(Exception):
    def __init__(self, code, msg="failed"):
        super().__init__(msg)
        self.code = code

    def __str__(self):
        return f"[{self.code}] {self.args[0]}"

    def __repr__(self):
        return f"Coded(code={self.code!r})"


class Prefixed(RuntimeError):
    def __str__(self):
        return "prefixed: " + super().__str__()

    def __repr__(self):
        return "<" + Exception.__repr__(self) + ">"


class Formatted(Exception):
    def __format__(self, spec):
        return f"{spec or 'plain'}:{self.args}"


class Logged(Exception):
    """__str__ with a side effect on a list the caller passed in."""

    def __init__(self, log, n):
        super().__init__(n)
        self.log = log

    def __str__(self):
        self.log.append(self.args[0])
        return f"logged {len(self.log)}"


class SubKey(KeyError):
    pass


class Point:
    def __init__(self, a):
        self.a = a

    def __str__(self):
        return f"<{self.a}>"

    def __repr__(self):
        return f"Point({self.a})"


def caught_user_str(x):
    try:
        raise MyErr(3)
    except MyErr as e:
        msg = str(e)
        r = repr(e)
    return x + 1, msg, r


def init_attributes_and_args(x):
    try:
        raise Coded(7, "boom")
    except Exception as e:
        out = (str(e), repr(e), f"{e}", f"{e!r}", f"{e!s}", e.code, e.args)
    return x * 2, out


def super_str_and_explicit_base_repr(x):
    e = Prefixed("disk", 2)
    return x - 1, str(e), repr(e), f"{e}", e.__str__(), e.__repr__()


def user_format(x):
    e = Formatted(1, "two")
    return x + 1, f"{e:>4}", f"{e}", format(e, "q"), str(e), repr(e)


def str_with_side_effect(x, log):
    e = Logged(log, 5)
    a = str(e)
    b = f"{e}"
    return x + len(log), a, b


def message_on_tensor_shape(x):
    y = x.sin()
    try:
        raise MyErr(y.shape[0])
    except ValueError as e:
        return y.cos(), str(e)


def builtin_zero_one_many_args(x):
    out = []
    for e in (ValueError(), ValueError("one"), ValueError("a", 1, None), TypeError(3), RuntimeError(("t",)),
              Exception("")):
        out.append((str(e), repr(e), f"{e}", f"{e!r}", format(e, "")))
    return x + 1, out


def key_error_rules(x):
    out = []
    for e in (KeyError("k"), KeyError(), KeyError("k", 2), SubKey("s"), SubKey(1, 2)):
        out.append((str(e), repr(e), f"{e}"))
    try:
        {}["missing"]
    except KeyError as e:
        out.append((str(e), repr(e), f"{e!s}|{e!a}"))
    return x + 1, out


def builtin_args_are_formatted_by_their_own_rules(x):
    e1 = ValueError(Point(1))
    e2 = ValueError(Point(1), "é")
    e3 = ValueError(MyErr(2))
    return x + 1, str(e1), repr(e1), str(e2), repr(e2), f"{e2!a}", str(e3), repr(e3)


def user_class_with_builtin_text(x):
    class Local(LookupError):
        def __init__(self, n):
            super().__init__(n, "two")
            self.n = n
    e = Local(4)
    return x + 1, str(e), repr(e), e.n, e.args


def class_statement_in_frame_defines_str(x):
    class Local(RuntimeError):
        def __str__(self):
            return f"local {self.args[0] * 2}"
    try:
        raise Local(4)
    except RuntimeError as e:
        m = str(e)
    return x + 1, m


def args_reassigned(x):
    e = MyErr("first")
    e.args = ("second",)
    f = ValueError("a")
    f.args = ("b", "c")
    return x + 1, str(e), str(f), repr(f)


def os_error_text(x):
    e = OSError(2, "nope")
    f = OSError("plain")
    return x + 1, type(e).__name__, isinstance(e, FileNotFoundError), str(e), repr(e), str(f), repr(f)


def bad_format_spec(x):
    try:
        return f"{MyErr(1):>5}"
    except TypeError as e:
        return x + 1, str(e)


def escapes_after_str(x):
    e = Coded(1, "out")
    s = str(e)
    return x + 1, s, e


CASES = [caught_user_str, init_attributes_and_args, super_str_and_explicit_base_repr, user_format,
         message_on_tensor_shape, builtin_zero_one_many_args, key_error_rules,
         builtin_args_are_formatted_by_their_own_rules, user_class_with_builtin_text,
         class_statement_in_frame_defines_str, args_reassigned, os_error_text, bad_format_spec]


@pytest.mark.parametrize("fn", CASES)
def test_in_one_graph_like_eager(fn):
    reset()
    assert_same(fn, t(3), fullgraph=True, graphs=1)


def test_side_effect_of_user_str():
    """``__str__`` appends to the caller's list: the list is eager's after the call."""
    reset()
    assert_same(str_with_side_effect, t(3), [0], fullgraph=True)


def test_escaping_exception_is_rebuilt_with_its_attributes():
    """The exception leaves the frame: rebuilt with its args and the
    attributes its __init__ set, so its own __str__/__repr__ give eager's text."""
    reset()
    x = t(3)
    expected = escapes_after_str(x.clone())
    got = compile_fn(escapes_after_str, backend="eager", fullgraph=True)(x.clone())
    assert_equal(expected[:2], got[:2])
    e, g = expected[2], got[2]
    assert type(g) is type(e) and g.args == e.args and g.code == e.code
    assert (str(g), repr(g)) == (str(e), repr(e)) == ("[1] out", "Coded(code=1)")


def simple_builtin_text(x):
    e = ValueError("a")   # (str() of several arguments: an internal error in torch.compile 2.11)
    return x + 1, str(e), repr(e), str(ValueError()), repr(TypeError("one"))


@pytest.mark.parametrize("fn", [caught_user_str, init_attributes_and_args, super_str_and_explicit_base_repr,
                                key_error_rules, message_on_tensor_shape, simple_builtin_text])
def test_graph_count_vs_torch_compile(fn):
    """One graph; torch.compile makes one too, or none (it gives the frame up
    at the ``try`` and runs it as Python).  (``format(e)`` of an exception
    is an internal error in torch.compile 2.13 and 2.15, left out here.)"""
    theirs = compiled_with_oracle(fn, t(3)).graphs
    reset()
    ours = compiled_stats(fn, t(3), fullgraph=True).frame_count
    assert ours == 1 >= theirs, (ours, theirs)
