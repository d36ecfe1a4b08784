"""Exceptions raised natively after a break, or by user code inside the
frame, reach the caller with eager's type and message, and the side effects
before the raise are applied exactly as eager applies them."""
import traceback

import pytest
import torch

import armature
from helpers import assert_same, t

from .util import check_calls, snap

X0 = torch.tensor([1.0, -2.0, 3.0])
BRK = pytest.mark.parametrize("brk", [False, True], ids=["nobreak", "break"])


class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class MyError(Exception):
    def __init__(self, code, text):
        super().__init__(code, text)
        self.code = code


COUNT = 0


def _reset():
    global COUNT
    COUNT = 0


# --------------------------------------------------------------------------
# user raises, effects before it
# --------------------------------------------------------------------------


def append_then_raise(x, lst, brk):
    lst.append(1)
    y = x * 2
    if brk:
        armature.graph_break()
    lst.append(y.sum())
    raise ValueError("x")


def many_effects_then_raise(x, o, d, brk):
    global COUNT
    COUNT += 1
    o.n += 1
    o.new_attr = x + 1
    d["k"] = x * 3
    del d["gone"]
    if brk:
        armature.graph_break()
    o.n += 1
    raise KeyError("missing thing")


def raise_custom(x, lst, brk):
    lst.append("a")
    if brk:
        armature.graph_break()
    raise MyError(7, f"bad value {int(x.shape[0])}")


def raise_in_callee_helper(lst, x):
    lst.append("callee")
    if x.shape[0] == 3:
        raise RuntimeError("callee says no")
    return x


def raise_in_callee(x, lst, brk):
    lst.append("caller")
    if brk:
        armature.graph_break()
    return raise_in_callee_helper(lst, x * 2) + 1


def raise_from(x, lst, brk):
    try:
        lst.append(0)
        if brk:
            armature.graph_break()
        {}["nope"]
    except KeyError as e:
        lst.append(1)
        raise ValueError("converted") from e


def reraise(x, lst, brk):
    try:
        lst.append("try")
        raise IndexError("idx")
    except IndexError:
        lst.append("except")
        if brk:
            armature.graph_break()
        raise


def raise_in_loop(x, lst, brk):
    for i in range(5):
        lst.append(i)
        if brk:
            armature.graph_break()
        if i == 3:
            raise OverflowError(f"i={i}")
        x = x + i
    return x


@BRK
@pytest.mark.parametrize("fn", [append_then_raise, raise_custom, raise_in_callee, raise_from, reraise,
                                raise_in_loop], ids=lambda f: f.__name__)
def test_raise_after_effects(fn, brk):
    check_calls(fn, lambda: (X0.clone(), []), lambda s: snap(s[1]), kwargs={"brk": brk}, min_graphs=0)


@pytest.mark.parametrize("fn", [raise_from, reraise], ids=lambda f: f.__name__)
def test_raise_from_handler_compiles(fn):
    check_calls(fn, lambda: (X0.clone(), []), lambda s: snap(s[1]), kwargs={"brk": False}, min_graphs=0)


def test_append_then_raise_leaves_one_element():
    for brk in (False, True):
        lst = []
        cf = armature.compile(append_then_raise, backend="eager")
        with pytest.raises(ValueError, match="^x$"):
            cf(X0, lst, brk)
        assert len(lst) == 2 and lst[0] == 1
        with pytest.raises(ValueError, match="^x$"):
            cf(X0, lst, brk)
        assert len(lst) == 4
        armature.reset()


@BRK
def test_many_effects_then_raise(brk):
    def make():
        _reset()
        return (X0.clone(), Obj(n=0), {"gone": 1})
    check_calls(many_effects_then_raise, make, lambda s: snap((s, COUNT)), kwargs={"brk": brk}, min_graphs=0)
    assert COUNT == 3


def test_custom_exception_attributes_and_cause():
    for brk in (False, True):
        cf = armature.compile(raise_custom, backend="eager")
        with pytest.raises(MyError) as ei:
            cf(X0, [], brk)
        assert ei.value.code == 7 and ei.value.args == (7, "bad value 3")
        cf2 = armature.compile(raise_from, backend="eager")
        with pytest.raises(ValueError) as ei2:
            cf2(X0, [], brk)
        assert isinstance(ei2.value.__cause__, KeyError)
        assert str(ei2.value) == "converted"
        armature.reset()


# --------------------------------------------------------------------------
# exceptions raised natively after a break
# --------------------------------------------------------------------------


def item_of_many_elements(x, lst):
    lst.append("before")
    y = x * 2
    return y.item()     # the break's native instruction raises


def missing_key_after_break(x, d, lst):
    lst.append(1)
    print("break")
    return x * d["absent"]


@armature.disable
def native_fails(v):
    raise ZeroDivisionError(f"native failure on {v}")


def disabled_raises(x, lst):
    lst.append("pre")
    y = x + 1
    native_fails(3)
    lst.append("post")
    return y


def int_of_string_after_break(x, lst, s):
    lst.append(s)
    armature.graph_break()
    return x * int(s)


def shape_mismatch_after_break(x, lst):
    lst.append(len(lst))
    armature.graph_break()
    return x @ torch.ones(5, 2)


def index_error_in_graph(x, lst):
    lst.append(0)
    return x[10]


@pytest.mark.parametrize(
    "fn,args",
    [
        (item_of_many_elements, (t(3), [])),
        (missing_key_after_break, (t(3), {}, [])),
        (disabled_raises, (t(3), [])),
        (int_of_string_after_break, (t(3), [], "12a")),
        (shape_mismatch_after_break, (t(2, 3), [])),
        (index_error_in_graph, (t(3), [])),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_native_exception_same_type_and_message(fn, args):
    assert_same(fn, *args, fullgraph=False, exc_match="exact")


def test_exception_traceback_has_user_function():
    cf = armature.compile(append_then_raise, backend="eager")
    for brk in (False, True):
        with pytest.raises(ValueError) as ei:
            cf(X0, [], brk)
        frames = traceback.extract_tb(ei.value.__traceback__)
        assert any(f.filename == __file__ and "append_then_raise" in f.name for f in frames)


@BRK
def test_exception_traceback_has_user_line(brk):
    import inspect
    cf = armature.compile(append_then_raise, backend="eager")
    src, start = inspect.getsourcelines(append_then_raise)
    raise_line = start + next(i for i, line in enumerate(src) if 'raise ValueError("x")' in line)
    with pytest.raises(ValueError) as ei:
        cf(X0, [], brk)
    frames = traceback.extract_tb(ei.value.__traceback__)
    assert any(f.filename == __file__ and f.lineno == raise_line for f in frames), \
        "\n".join(f"{f.filename}:{f.lineno} {f.name}" for f in frames)


def test_exception_then_success_keeps_cache_usable():
    def fn(x, d):
        d["calls"] = d.get("calls", 0) + 1
        armature.graph_break()
        if "fail" in d:
            raise LookupError("asked to fail")
        return x + d["calls"]

    d_e, d_c = {}, {}
    cf = armature.compile(fn, backend="eager")
    for step in range(4):
        if step == 2:
            d_e["fail"] = d_c["fail"] = True
        if step == 3:
            del d_e["fail"], d_c["fail"]
        try:
            exp = fn(X0, d_e)
        except LookupError as e:
            with pytest.raises(LookupError, match=str(e)):
                cf(X0, d_c)
        else:
            torch.testing.assert_close(cf(X0, d_c), exp)
        assert d_c == d_e


def checked_div(x, n):
    if n == 0:
        raise ValueError("n must not be zero")
    return x / n, 10 // n


def test_fullgraph_program_raising_raises_eagers_exception():
    """With fullgraph=True a program that raises is not a capture failure:
    the user's exception comes out (as eager's), nothing is cached, and a
    later good call compiles one graph."""
    from helpers import CountingBackend
    counter = CountingBackend()
    cf = armature.compile(checked_div, backend=counter, fullgraph=True)
    with pytest.raises(ValueError, match="^n must not be zero$"):
        cf(X0, 0)
    assert armature.cache_entries(cf) == []
    got = cf(X0, 4)
    torch.testing.assert_close(got[0], X0 / 4)
    assert got[1] == 2 and counter.frame_count == 1


def test_fullgraph_builtin_failure_raises_eagers_exception():
    def f(x, d):
        return x + d["missing"] + 1 // 0

    with pytest.raises(KeyError, match="missing"):
        armature.compile(f, backend="eager", fullgraph=True)(X0, {})
