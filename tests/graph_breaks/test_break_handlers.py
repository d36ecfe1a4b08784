"""Graph breaks under exception handlers and inside iterator loops split
the frame instead of running it as plain Python.

Covered here (each program is compared with eager -- results, exceptions
with type and message, log lists / dicts mutated as side effects -- over
three calls, and checked to compile: no frame ran as plain Python, the
expected number of graphs, no recompilation on repeated calls):

* a break inside a ``try`` body with ``except`` / ``else`` / ``finally``:
  an exception raised by the natively run instruction (``int(t)`` of a
  3-element tensor, ``d["missing"]`` after a print, a call of an
  ``@armature.disable`` function that raises) reaches the user's handler;
  ``finally`` runs exactly once; an exception leaving through ``finally``
  keeps eager's type and message;
* a break inside an ``except`` body: ``sys.exc_info()`` still names the
  handled exception, a bare ``raise`` re-raises it, a native exception
  raised there is chained to it (``__context__``), and the caller's own
  handled exception is left alone;
* a break inside a ``with`` block whose native instruction raises:
  ``__exit__`` sees that exception and it propagates or is suppressed;
* ``raise ... from e`` / ``from None`` and implicit chaining made in the
  trace (``__cause__``, ``__context__``, ``__suppress_context__``), also
  across a break;
* loops over enumerate / zip / map / filter / itertools.count / starmap /
  filterfalse / compress with a break in the body, including one iterator
  object referenced from two places;
* loops whose body has a ``try/except`` with ``continue`` and a break.
"""
import contextlib
import itertools
import sys

import pytest
import torch

import armature
from helpers import CountingBackend, assert_equal, assert_same, t

from .util import FALLBACK_LOGGER, check_calls, collect_log, explain_fresh, graph_count, snap

# the resume machinery inside loops (torch.compile would run these frames as Python)
pytestmark = pytest.mark.usefixtures("split_loop_breaks")

X0 = torch.tensor([1.0, -2.0, 3.0])


def verify(fn, make, snapshot=None, *, graphs=None, min_graphs=2, raises=None):
    """Check ``fn`` compiled against eager and check that it really compiles.

    * check_calls: three successive calls on one state built by ``make``,
      compared with eager (results or exceptions with type and message, and
      ``snapshot(state)``, by default a snapshot of all the arguments); no
      frame ran as plain Python;
    * three calls on fresh states: the root has one compiled cache entry,
      the first call captured ``graphs`` graphs (or at least
      ``min_graphs``) and the next two captured none (no recompilation of
      the root or of a resume function), each raised ``raises`` if given;
    * explain (fresh, only when nothing escapes): no fallbacks, the same
      number of graphs.
    """
    if snapshot is None:
        def snapshot(s):
            return snap(list(s))
    armature.reset()
    check_calls(fn, make, snapshot, calls=3, min_graphs=0)

    armature.reset()
    counter = CountingBackend("eager")
    cf = armature.compile(fn, backend=counter)
    seen = []
    with collect_log(FALLBACK_LOGGER) as fallbacks:
        for _ in range(3):
            if raises is None:
                cf(*make())
            else:
                with pytest.raises(raises):
                    cf(*make())
            seen.append(counter.frame_count)
    assert not fallbacks, fallbacks
    entries = armature.cache_entries(cf)
    assert len(entries) == 1, [en.fallback_reason for en in entries]
    assert entries[0].fallback_reason is None, entries[0].fallback_reason
    assert seen[0] == seen[1] == seen[2], f"graphs captured after each call: {seen} (recompiled)"
    if graphs is not None:
        assert seen[0] == graphs, "\n".join(gm.code for gm in counter.graphs)
    else:
        assert seen[0] >= min_graphs, "\n".join(gm.code for gm in counter.graphs)

    if raises is None:
        e = explain_fresh(fn, *make())
        assert not e.fallbacks, str(e)
        assert e.graph_count == seen[0], str(e)
    return counter


class CM:
    def __init__(self, log, name="cm", swallow=()):
        self.log = log
        self.name = name
        self.swallow = swallow

    def __enter__(self):
        self.log.append(("enter", self.name))
        return self

    def __exit__(self, typ, val, tb):
        self.log.append(("exit", self.name, None if typ is None else typ.__name__))
        return typ is not None and issubclass(typ, self.swallow)


@armature.disable
def native_raise(v, kind="value"):
    if kind == "value":
        raise ValueError(f"native says no to {v}")
    raise KeyError(f"native key {v}")


@armature.disable
def native_ok(v):
    return v * 10


# ==========================================================================
# 1. a break inside a try body
# ==========================================================================


def try_int_of_tensor_caught(x, log):
    y = x.sin()
    try:
        y = y * 2
        v = int(y)          # 3 elements: raised by the native call
        log.append("unreached")
    except (ValueError, RuntimeError) as e:
        log.append(type(e).__name__)
        v = -len(str(e))
    return y.cos() + v


def try_missing_key_after_print(x, d, log):
    try:
        y = x + 1
        print("looking up")
        y = y + d["missing"]
        log.append("unreached")
    except KeyError as e:
        log.append(("caught", e.args))
        y = y * 2
    return y - 1


def try_disabled_raises_caught(x, log):
    y = x * 3
    try:
        y = y + 1
        native_raise(7)
        y = y * 100
    except ValueError as e:
        log.append(str(e))
        y = y - 1
    return y.exp()


def try_disabled_succeeds(x, log):
    try:
        y = x + 1
        v = native_ok(4)
        y = y * v
    except ValueError:
        log.append("except")
        y = x
    return y - 2


def try_except_wrong_type_propagates(x, log):
    try:
        y = x + 1
        log.append("try")
        native_raise(3, "key")
        y = y * 2
    except (ValueError, IndexError):
        log.append("wrong handler")
        y = x
    return y


def try_int_raises_through_finally(x, log):
    try:
        y = x * 2
        log.append("try")
        v = int(y)
        log.append("unreached")
    finally:
        log.append("finally")
    return v


def try_else_finally_native_raises(x, d, log):
    try:
        y = x + 1
        print("break")
        y = y * d["k"]
    except KeyError:
        log.append("except")
        y = y - 1
    else:
        log.append("else")
        y = y + 1
    finally:
        log.append("finally")
    return y * 2


def try_nested_outer_catches(x, log):
    y = x.sum()
    try:
        try:
            y = y + 1
            native_raise(1, "key")
        except ValueError:
            log.append("inner")
        finally:
            log.append("inner finally")
    except KeyError as e:
        log.append(("outer", str(e)))
        y = y * 3
    return y + x


def try_return_in_try_with_finally(x, log):
    try:
        y = x + 1
        armature.graph_break()
        return y * 2
    finally:
        log.append("finally")
        x.add_(1)


def try_handler_reads_locals(x, d):
    a = x * 2
    b = [a, a + 1]
    try:
        c = b[1] * 3
        print("break")
        c = c + d["nope"]
    except KeyError:
        c = b[0] + a
    return a, b, c


def try_two_breaks_in_try(x, d, log):
    try:
        y = x + 1
        armature.graph_break()
        y = y * 2
        log.append(len(log))
        print("second break")
        y = y + d["missing"]
    except KeyError:
        log.append("caught")
        y = y - 1
    return y


def try_break_then_explicit_raise_caught(x, log):
    try:
        y = x + 1
        armature.graph_break()
        y = y * 2
        if y.shape[0] == 3:
            raise IndexError("explicit")
    except IndexError as e:
        log.append(str(e))
        y = y + 10
    return y


def try_native_raise_with_live_stack(x):
    try:
        y = (x + 1) * int(x)    # x + 1 is on the value stack when int() raises
    except ValueError:
        y = x - 1
    return y


def try_native_raise_inside_list_display(x):
    try:
        y = [x, x * 2, native_raise(3), x]
    except ValueError as e:
        y = [x.cos(), str(e)]
    return y


def try_native_raise_pops_inner_loop(x, log):
    for i in range(3):
        try:
            for j, v in zip(range(5), [x] * 5):
                if j == i:
                    native_raise(j)
                log.append(j)
                x = x + v
        except ValueError as e:
            log.append(str(e))
    return x


def try_native_raise_through_two_with_blocks(x, log):
    try:
        with CM(log, "a"):
            with CM(log, "b"):
                y = x + 1
                v = int(y)
                log.append(v)
    except ValueError:
        log.append("caught")
        y = x * 3
    return y


def try_handler_types_from_argument(x, kinds):
    try:
        y = x + 1
        native_raise(1)
    except kinds:
        y = x * 2
    return y


def try_finally_return_swallows_native(x, log):
    try:
        y = x + 1
        print("break")
        y = y * int(y)
    finally:
        log.append("finally")
        return x * 2  # noqa: B012 - swallows the exception, as in eager


def try_traced_raise_escapes_other_handler(x, log):
    try:
        y = x + 1
        print("break")
        log.append(y)
        raise KeyError("escapes")
    except (ValueError, IndexError):
        log.append("wrong handler")
    return x


def try_traced_raise_through_finally(x, log):
    try:
        y = x + 1
        armature.graph_break()
        log.append(y * 2)
        raise LookupError("through finally")
    finally:
        log.append("finally")


def finally_break_while_propagating(x, log):
    try:
        log.append(x + 1)
        raise KeyError("k")
    finally:
        print("break in finally")
        log.append(sys.exc_info()[0])


def finally_exc_info_native(x, log):
    try:
        y = x + 1
        v = int(y)
    finally:
        log.append(sys.exc_info()[0])
        armature.graph_break()
        log.append(sys.exc_info()[0])
    return v


def raises_after_print(x, d):
    y = x + 1
    print("callee break")
    return y + d["missing"]


def try_inlined_callee_raises_natively(x, d, log):
    try:
        z = raises_after_print(x * 2, d)
    except KeyError as e:
        log.append(e.args)
        z = x * 7
    return z.sin()


TRY_CASES = [
    (try_int_of_tensor_caught, lambda: (X0.clone(), []), 2, None),
    (try_missing_key_after_print, lambda: (X0.clone(), {}, []), 2, None),
    (try_disabled_raises_caught, lambda: (X0.clone(), []), 2, None),
    (try_disabled_succeeds, lambda: (X0.clone(), []), 2, None),
    (try_except_wrong_type_propagates, lambda: (X0.clone(), []), None, KeyError),
    (try_int_raises_through_finally, lambda: (X0.clone(), []), None, ValueError),
    (try_else_finally_native_raises, lambda: (X0.clone(), {}, []), 2, None),
    (try_else_finally_native_raises, lambda: (X0.clone(), {"k": 3.0}, []), 2, None),
    (try_nested_outer_catches, lambda: (X0.clone(), []), 2, None),
    (try_return_in_try_with_finally, lambda: (X0.clone(), []), 2, None),
    (try_handler_reads_locals, lambda: (X0.clone(), {}), 2, None),
    (try_two_breaks_in_try, lambda: (X0.clone(), {}, []), 3, None),
    (try_break_then_explicit_raise_caught, lambda: (X0.clone(), []), None, None),
    (try_native_raise_with_live_stack, lambda: (X0.clone(),), 2, None),
    (try_native_raise_inside_list_display, lambda: (X0.clone(),), None, None),
    (try_native_raise_pops_inner_loop, lambda: (X0.clone(), []), None, None),
    (try_native_raise_through_two_with_blocks, lambda: (X0.clone(), []), 2, None),
    (try_handler_types_from_argument, lambda: (X0.clone(), (KeyError, ValueError)), 2, None),
    (try_finally_return_swallows_native, lambda: (X0.clone(), []), 2, None),
    (try_traced_raise_escapes_other_handler, lambda: (X0.clone(), []), None, KeyError),
    (try_traced_raise_through_finally, lambda: (X0.clone(), []), 2, LookupError),
    (finally_break_while_propagating, lambda: (X0.clone(), []), None, KeyError),
    (finally_exc_info_native, lambda: (X0.clone(), []), None, ValueError),
    (try_inlined_callee_raises_natively, lambda: (X0.clone(), {}, []), None, None),
]


@pytest.mark.parametrize("fn,make,graphs,raises", [
    pytest.param(*c, id=f"{c[0].__name__}-{i}") for i, c in enumerate(TRY_CASES)])
def test_break_in_try_body(fn, make, graphs, raises):
    verify(fn, make, graphs=graphs, min_graphs=1 if raises else 2, raises=raises)


def test_try_native_exception_assert_same():
    assert_same(try_int_of_tensor_caught, t(3), [], fullgraph=False, exc_match="exact")
    assert_same(try_missing_key_after_print, t(3), {}, [], fullgraph=False, exc_match="exact")
    assert_same(try_int_raises_through_finally, t(3), [], fullgraph=False, exc_match="exact")


def test_finally_runs_exactly_once_per_call():
    log = []
    cf = armature.compile(try_int_raises_through_finally, backend="eager")
    for i in range(1, 4):
        with pytest.raises(ValueError, match="only one element tensors"):
            cf(X0.clone(), log)
        assert log == ["try", "finally"] * i
    log.clear()
    cf = armature.compile(try_else_finally_native_raises, backend="eager")
    for i in range(1, 4):
        cf(X0.clone(), {}, log)
        assert log == ["except", "finally"] * i


def raise_given_through_finally(x, log, err):
    try:
        y = x + 1
        print("break")
        log.append(y)
        raise err
    finally:
        log.append("finally")


def test_exception_through_finally_keeps_traceback_and_identity():
    import inspect
    import traceback
    src, start = inspect.getsourcelines(raise_given_through_finally)
    raise_line = start + next(i for i, line in enumerate(src) if "raise err" in line)
    cf = armature.compile(raise_given_through_finally, backend="eager")
    for _ in range(3):
        log, err = [], LookupError("the very object")
        with pytest.raises(LookupError) as ei:
            cf(X0, log, err)
        assert ei.value is err
        assert log[1] == "finally" and len(log) == 2
        frames = traceback.extract_tb(ei.value.__traceback__)
        assert any(f.filename == __file__ and f.lineno == raise_line for f in frames), \
            "\n".join(f"{f.filename}:{f.lineno} {f.name}" for f in frames)
    entries = armature.cache_entries(cf)
    assert len(entries) == 1 and entries[0].fallback_reason is None


def test_try_print_output_matches(capsys):
    d = {}
    try_missing_key_after_print(X0, d, [])
    eager_out = capsys.readouterr().out
    cf = armature.compile(try_missing_key_after_print, backend="eager")
    for _ in range(3):
        cf(X0, d, [])
        assert capsys.readouterr().out == eager_out == "looking up\n"


# ==========================================================================
# 2. a break inside an except body
# ==========================================================================


def except_exc_info_after_break(x):
    try:
        raise KeyError("k")
    except KeyError as e:
        y = x + 1
        print("handling")
        same = sys.exc_info()[1] is e
        typ = sys.exc_info()[0]
        y = y * 2
    return y, same, typ.__name__


def except_bare_reraise(x, err, log):
    try:
        raise err
    except KeyError:
        y = x + 1
        armature.graph_break()
        log.append(y.sum())
        raise


def except_native_raise_after_break(x, err, d):
    try:
        raise err
    except KeyError:
        y = x + 1
        print("handling")
        return y * d["other"]


def except_e_usable_after_break(x):
    try:
        native_raise(5)
    except ValueError as e:
        y = x * 2
        armature.graph_break()
        msg = str(e)
        args = e.args
        y = y + len(msg)
    return y, msg, args


def except_nested_exc_info(x):
    info = []
    try:
        raise KeyError("outer")
    except KeyError:
        try:
            raise ValueError("inner")
        except ValueError:
            y = x + 1
            armature.graph_break()
            info.append(repr(sys.exc_info()[1]))
        info.append(repr(sys.exc_info()[1]))
        armature.graph_break()
        info.append(repr(sys.exc_info()[1]))
        y = y * 2
    info.append(sys.exc_info())
    return y, info


def except_exc_info_cleared_after_handler(x):
    try:
        raise KeyError("k")
    except KeyError:
        y = x + 1
        armature.graph_break()
        y = y * 2
    armature.graph_break()
    return y, sys.exc_info()


def except_name_unbound_after_handler(x):
    e = "before"
    try:
        raise KeyError("k")
    except KeyError as e:
        y = x + 1
        armature.graph_break()
        y = y + len(e.args)
    try:
        e
    except NameError as ne:
        y = y - 1
        kind = type(ne).__name__
    return y, kind


def except_raise_new_after_break(x, log):
    try:
        raise KeyError("first")
    except KeyError:
        y = x + 1
        armature.graph_break()
        log.append(y)
        raise ValueError("second")


def except_nested_try_in_handler(x, log):
    try:
        raise KeyError("a")
    except KeyError as a:
        y = x + 1
        print("break")
        try:
            int(y)
        except ValueError as b:
            log.append(sys.exc_info()[1] is b)
            log.append(b.__context__ is a)
        log.append(sys.exc_info()[1] is a)
        y = y * 2
    log.append(sys.exc_info())
    return y


def except_return_after_break(x, d):
    try:
        return x + d["m"]
    except KeyError:
        y = x + 1
        print("break")
        return y * 2


EXCEPT_CASES = [
    (except_exc_info_after_break, lambda: (X0.clone(),), 2, None),
    (except_bare_reraise, lambda: (X0.clone(), KeyError("orig"), []), None, KeyError),
    (except_native_raise_after_break, lambda: (X0.clone(), KeyError("orig"), {}), None, KeyError),
    (except_e_usable_after_break, lambda: (X0.clone(),), 2, None),
    (except_nested_exc_info, lambda: (X0.clone(),), 2, None),
    (except_exc_info_cleared_after_handler, lambda: (X0.clone(),), 2, None),
    (except_name_unbound_after_handler, lambda: (X0.clone(),), 2, None),
    (except_raise_new_after_break, lambda: (X0.clone(), []), None, ValueError),
    (except_nested_try_in_handler, lambda: (X0.clone(), []), 2, None),
    (except_return_after_break, lambda: (X0.clone(), {}), 2, None),
]


@pytest.mark.parametrize("fn,make,graphs,raises", [
    pytest.param(*c, id=c[0].__name__) for c in EXCEPT_CASES])
def test_break_in_except_body(fn, make, graphs, raises):
    # (exceptions compare by identity: leave the exception argument out of the snapshot)
    verify(fn, make, lambda s: snap([a for a in s if not isinstance(a, BaseException)]),
           graphs=graphs, min_graphs=1 if raises else 2, raises=raises)


def test_bare_reraise_is_same_object():
    cf = armature.compile(except_bare_reraise, backend="eager")
    for _ in range(3):
        err = KeyError("orig")
        with pytest.raises(KeyError) as ei:
            cf(X0, err, [])
        assert ei.value is err
        assert ei.value.__context__ is None


def test_native_exception_in_except_body_has_context():
    cf = armature.compile(except_native_raise_after_break, backend="eager")
    for _ in range(3):
        err = KeyError("orig")
        with pytest.raises(KeyError) as ei:
            cf(X0, err, {})
        assert ei.value.args == ("other",)
        assert ei.value.__context__ is err
        assert ei.value.__cause__ is None and not ei.value.__suppress_context__


def test_new_exception_in_except_body_has_context():
    cf = armature.compile(except_raise_new_after_break, backend="eager")
    for _ in range(3):
        with pytest.raises(ValueError, match="^second$") as ei:
            cf(X0, [])
        ctx = ei.value.__context__
        assert type(ctx) is KeyError and ctx.args == ("first",)
        assert ei.value.__cause__ is None and not ei.value.__suppress_context__


# -- called from inside the caller's except block ---------------------------


def plain_break(x):
    y = x + 1
    armature.graph_break()
    return y * 2


def break_then_raise(x, d):
    y = x + 1
    print("break")
    return y + d["missing"]


def break_in_try_then_catch(x, d):
    try:
        y = x + 1
        print("break")
        y = y + d["missing"]
    except KeyError:
        y = x - 1
    return y


def in_caller_handler(f, *args):
    """Call f inside an except block; report what the caller sees."""
    outer = RuntimeError("caller's")
    try:
        raise outer
    except RuntimeError:
        try:
            r = f(*args)
            raised = None
        except Exception as e:  # noqa: BLE001
            r = None
            raised = e
        after = sys.exc_info()[1]
    return outer, r, raised, after


@pytest.mark.parametrize("fn,args", [
    pytest.param(plain_break, (X0,), id="plain_break"),
    pytest.param(break_in_try_then_catch, (X0, {}), id="break_in_try_then_catch"),
    pytest.param(except_exc_info_after_break, (X0,), id="except_exc_info_after_break"),
])
def test_caller_exc_info_unchanged(fn, args):
    _, er, _, _ = in_caller_handler(fn, *args)
    cf = armature.compile(fn, backend="eager")
    for _ in range(3):
        outer, r, raised, after = in_caller_handler(cf, *args)
        assert raised is None
        assert after is outer
        assert_equal(er, r)
    assert armature.cache_entries(cf)[0].fallback_reason is None


@pytest.mark.parametrize("fn,make", [
    pytest.param(break_then_raise, lambda: (X0, {}), id="break_then_raise"),
    pytest.param(except_raise_new_after_break, lambda: (X0, []), id="except_raise_new_after_break"),
    pytest.param(except_bare_reraise, lambda: (X0, KeyError("orig"), []), id="except_bare_reraise"),
    pytest.param(try_int_raises_through_finally, lambda: (X0, []), id="try_int_raises_through_finally"),
])
def test_exception_in_caller_handler_chains_like_eager(fn, make):
    def describe(outer, raised):
        chain = []
        e = raised
        while e is not None and len(chain) < 5:
            chain.append((type(e).__name__, str(e), e is outer))
            e = e.__context__
        return chain

    e_outer, _, e_raised, e_after = in_caller_handler(fn, *make())
    expected = describe(e_outer, e_raised)
    assert e_after is e_outer
    cf = armature.compile(fn, backend="eager")
    for _ in range(3):
        outer, _, raised, after = in_caller_handler(cf, *make())
        assert after is outer
        assert describe(outer, raised) == expected


def context_of_native_caught(x, d):
    try:
        print("break")
        d["m"]
    except KeyError as e:
        ctx = e.__context__
    return x + 1, None if ctx is None else str(ctx)


def context_of_traced_caught_after_break(x, d):
    try:
        raise KeyError("m")
    except KeyError as e:
        y = x + 1
        print("break")
        ctx = e.__context__
    return y, None if ctx is None else str(ctx)


@pytest.mark.parametrize("fn", [context_of_native_caught, context_of_traced_caught_after_break],
                         ids=lambda f: f.__name__)
def test_exception_caught_inside_has_callers_context(fn):
    _, er, _, _ = in_caller_handler(fn, X0, {})
    assert er[1] == "caller's"
    cf = armature.compile(fn, backend="eager")
    for _ in range(3):
        _, r, raised, _ = in_caller_handler(cf, X0, {})
        assert raised is None
        assert_equal(er, r)
        assert cf(X0, {})[1] is None
    assert armature.cache_entries(cf)[0].fallback_reason is None


def exc_info_in_callee_after_break(x):
    y = x + 1
    armature.graph_break()
    info = sys.exc_info()
    return y, None if info[1] is None else str(info[1])


def test_exc_info_inside_compiled_sees_callers_exception():
    _, er, _, _ = in_caller_handler(exc_info_in_callee_after_break, X0)
    assert er[1] == "caller's"
    cf = armature.compile(exc_info_in_callee_after_break, backend="eager")
    for _ in range(3):
        _, r, raised, _ = in_caller_handler(cf, X0)
        assert raised is None
        assert_equal(er, r)
    # and outside any handler it sees nothing
    assert cf(X0)[1] is None


# ==========================================================================
# 3. a break inside a with block whose native instruction raises
# ==========================================================================


def with_int_of_tensor_raises(x, log):
    with CM(log):
        y = x * 2
        v = int(y)
        log.append("unreached")
    return v


def with_missing_key_swallowed(x, d, log):
    with CM(log, swallow=KeyError):
        y = x + 1
        print("break")
        y = y + d["missing"]
        log.append("unreached")
    log.append("after")
    return x * 3


def with_disabled_raises(x, log):
    with CM(log):
        y = x + 1
        native_raise(2)
    return y


def with_disabled_raises_swallowed(x, log):
    y = x - 1
    with CM(log, swallow=ValueError):
        y = x + 1
        native_raise(2)
        y = y * 100
    return y.sin()


def with_nested_inner_passes_outer_swallows(x, d, log):
    with CM(log, "outer", swallow=KeyError):
        with CM(log, "inner", swallow=ValueError):
            y = x + 1
            print("break")
            y = y + d["missing"]
        log.append("unreached")
    return x + 5


def with_inside_try_caught(x, log):
    try:
        with CM(log):
            y = x + 1
            native_raise(9)
    except ValueError as e:
        log.append(("caught", str(e)))
        y = x * 4
    return y


def with_no_exception_exit_none(x, log):
    with CM(log) as c:
        y = x + 1
        v = native_ok(2)
        y = y * v
        log.append(c.name)
    return y


def with_exit_after_partial_loop(x, log):
    for i in range(3):
        with CM(log, f"cm{i}", swallow=ValueError):
            x = x + 1
            if i == 1:
                native_raise(i)
            log.append(i)
    return x


WITH_CASES = [
    (with_int_of_tensor_raises, lambda: (X0.clone(), []), None, ValueError),
    (with_missing_key_swallowed, lambda: (X0.clone(), {}, []), 2, None),
    (with_disabled_raises, lambda: (X0.clone(), []), None, ValueError),
    (with_disabled_raises_swallowed, lambda: (X0.clone(), []), 2, None),
    (with_nested_inner_passes_outer_swallows, lambda: (X0.clone(), {}, []), 2, None),
    (with_inside_try_caught, lambda: (X0.clone(), []), 2, None),
    (with_no_exception_exit_none, lambda: (X0.clone(), []), 2, None),
    (with_exit_after_partial_loop, lambda: (X0.clone(), []), None, None),
]


@pytest.mark.parametrize("fn,make,graphs,raises", [
    pytest.param(*c, id=c[0].__name__) for c in WITH_CASES])
def test_break_in_with_native_raises(fn, make, graphs, raises):
    verify(fn, make, graphs=graphs, min_graphs=1 if raises else 2, raises=raises)


def test_with_exit_sees_exception_type():
    cf = armature.compile(with_int_of_tensor_raises, backend="eager")
    cf2 = armature.compile(with_nested_inner_passes_outer_swallows, backend="eager")
    for _ in range(3):
        log = []
        with pytest.raises(ValueError):
            cf(X0, log)
        assert log == [("enter", "cm"), ("exit", "cm", "ValueError")]
        log = []
        torch.testing.assert_close(cf2(X0, {}, log), X0 + 5)
        assert log == [("enter", "outer"), ("enter", "inner"),
                       ("exit", "inner", "KeyError"), ("exit", "outer", "KeyError")]
    assert len(armature.cache_entries(cf)) == len(armature.cache_entries(cf2)) == 1


class MessageCM(CM):
    def __exit__(self, typ, val, tb):
        self.log.append(("exit", typ.__name__, str(val)))   # str() of the exception
        return True


def with_exit_reads_exception(x, d, log):
    with MessageCM(log):
        y = x + 1
        print("break")
        y = y + d["missing"]
    return x * 2


def test_exit_that_breaks_while_unwinding_compiles():
    verify(with_exit_reads_exception, lambda: (X0.clone(), {}, []), min_graphs=1)


def test_exit_that_breaks_while_unwinding_semantics():
    check_calls(with_exit_reads_exception, lambda: (X0.clone(), {}, []), lambda s: snap(list(s)),
                allow_fallback=True, min_graphs=0)


@contextlib.contextmanager
def gen_cm(log):
    log.append("gen enter")
    try:
        yield
    except KeyError as e:
        log.append(("gen caught", str(e)))
    finally:
        log.append("gen finally")


def with_contextmanager_native_raises(x, d, log):
    with gen_cm(log):
        y = x + 1
        print("break")
        y = y + d["missing"]
    return x * 2


def test_contextmanager_generator_sees_native_exception():
    # (a generator still running at the end of a compiled frame: the frame
    # cannot be split and runs as plain Python -- only semantics checked)
    check_calls(with_contextmanager_native_raises, lambda: (X0.clone(), {}, []), lambda s: snap(list(s)),
                allow_fallback=True, min_graphs=0)


# ==========================================================================
# 4. raise ... from, exception chaining in the trace
# ==========================================================================


def chain_info(e):
    def one(x):
        return None if x is None else (type(x).__name__, str(x))
    return one(e), one(e.__cause__), one(e.__context__), e.__suppress_context__


def raise_from_e(x, brk):
    try:
        raise KeyError("inner")
    except KeyError as e:
        y = x + 1
        if brk:
            armature.graph_break()
        raise ValueError(f"outer {y.shape[0]}") from e


def raise_from_none(x, brk):
    try:
        raise KeyError("inner")
    except KeyError:
        if brk:
            armature.graph_break()
        raise ValueError("no cause") from None


def raise_implicit_context(x, brk):
    try:
        {}["absent"]
    except KeyError:
        if brk:
            print("break")
        raise IndexError("implicit")


def raise_from_native_origin(x, d, brk):
    try:
        y = x + 1
        if brk:
            print("break")
        y = y + d["native"]
    except KeyError as e:
        raise TypeError("converted") from e
    return y


def raise_from_class(x, brk):
    if brk:
        armature.graph_break()
    raise ValueError("from a class") from KeyError


BRK = pytest.mark.parametrize("brk", [False, True], ids=["nobreak", "break"])


@BRK
@pytest.mark.parametrize("fn,args", [
    pytest.param(raise_from_e, (X0,), id="raise_from_e"),
    pytest.param(raise_from_none, (X0,), id="raise_from_none"),
    pytest.param(raise_implicit_context, (X0,), id="raise_implicit_context"),
    pytest.param(raise_from_native_origin, (X0, {}), id="raise_from_native_origin"),
    pytest.param(raise_from_class, (X0,), id="raise_from_class"),
])
def test_chained_exception_attributes_escape(fn, args, brk):
    with pytest.raises(Exception) as ei:
        fn(*args, brk)
    expected = chain_info(ei.value)
    cf = armature.compile(fn, backend="eager")
    for _ in range(3):
        with pytest.raises(Exception) as ci:
            cf(*args, brk)
        assert chain_info(ci.value) == expected
    entries = armature.cache_entries(cf)
    assert len(entries) == 1 and entries[0].fallback_reason is None


def read_chain_after_break(x):
    try:
        try:
            raise KeyError("k")
        except KeyError as e:
            raise ValueError("v") from e
    except ValueError as e2:
        y = x + 1
        armature.graph_break()
        cause = e2.__cause__
        info = (type(cause).__name__, cause.args, type(e2.__context__).__name__,
                e2.__suppress_context__, e2.__context__ is cause)
        y = y * 2
    return y, info


def read_from_none_after_break(x):
    try:
        try:
            raise KeyError("k")
        except KeyError:
            raise ValueError("v") from None
    except ValueError as e2:
        y = x + 1
        print("break")
        info = (e2.__cause__, type(e2.__context__).__name__, e2.__suppress_context__)
        y = y * 2
    return y, info


def read_implicit_chain_after_break(x, d):
    try:
        try:
            y = x + 1
            print("break")
            y = y + d["a"]
        except KeyError:
            armature.graph_break()
            raise IndexError("second")
    except IndexError as e2:
        info = (e2.__cause__, type(e2.__context__).__name__, e2.__context__.args, e2.__suppress_context__)
        y = x * 3
    return y, info


def raise_between_break_and_read(x):
    try:
        raise KeyError("k")
    except KeyError as e:
        err = ValueError("v")
        armature.graph_break()
        try:
            raise err from e
        except ValueError as got:
            info = (got is err, got.__cause__ is e, got.__context__ is e, got.__suppress_context__)
    return x + 1, info


def raise_from_native_read_after_break(x, d, log):
    try:
        try:
            print("break")
            d["m"]
        except KeyError as e:
            log.append(1)
            raise RuntimeError("wrapped") from e
    except RuntimeError as r:
        y = x + 1
        armature.graph_break()
        log.append((type(r.__cause__).__name__, r.__cause__.args, r.__context__ is r.__cause__,
                    r.__suppress_context__))
        y = y * 2
    return y


CHAIN_READ_CASES = [
    (read_chain_after_break, lambda: (X0.clone(),), 2),
    (read_from_none_after_break, lambda: (X0.clone(),), 2),
    (read_implicit_chain_after_break, lambda: (X0.clone(), {}), None),
    (raise_between_break_and_read, lambda: (X0.clone(),), None),
    (raise_from_native_read_after_break, lambda: (X0.clone(), {}, []), 2),
]


@pytest.mark.parametrize("fn,make,graphs", [pytest.param(*c, id=c[0].__name__) for c in CHAIN_READ_CASES])
def test_chain_read_inside_after_break(fn, make, graphs):
    verify(fn, make, graphs=graphs, min_graphs=1)


# ==========================================================================
# 5. iterator loops with a break in the body
# ==========================================================================


def loop_enumerate(xs):
    acc = xs[0] * 0
    idx = []
    for i, x in enumerate(xs):
        acc = acc + x * i
        print("step", i)
        idx.append(i)
    return acc, idx


def loop_enumerate_start(xs):
    acc = xs[0] * 0
    for i, x in enumerate(xs, 10):
        acc = acc + x * i
        armature.graph_break()
        acc = acc.sin()
    return acc


def loop_zip(xs, ys):
    acc = xs[0] * 0
    for a, b in zip(xs, ys):
        acc = acc + a * b
        armature.graph_break()
    return acc


def loop_zip_uneven_three(xs, ys, names):
    out = {}
    for a, b, n in zip(xs, ys, names):
        armature.graph_break()
        out[n] = a - b
    return out


def _scale(v):
    return v * 2 + 1


def loop_map(xs):
    acc = xs[0] * 0
    for v in map(_scale, xs):
        acc = acc + v
        print("mapped")
    return acc


def loop_map_two_iterables(xs, ws):
    acc = xs[0] * 0
    for v in map(lambda a, w: a * w, xs, ws):
        armature.graph_break()
        acc = acc + v
    return acc


def loop_map_builtin(x, xs):
    total = 0
    for n in map(len, xs):
        x = x + n
        armature.graph_break()
        total += n
    return x, total


def loop_filter(xs, ks):
    acc = xs[0] * 0
    for k in filter(lambda k: k % 2 == 0, ks):
        acc = acc + xs[k]
        armature.graph_break()
    return acc


def loop_filter_none(xs, ks):
    acc = xs[0] * 0
    seen = []
    for k in filter(None, ks):
        seen.append(k)
        print("truthy", k)
        acc = acc + xs[k]
    return acc, seen


def loop_count(x):
    for i in itertools.count(2, 3):
        x = x + i
        armature.graph_break()
        if i > 10:
            break
    return x, i


def loop_zip_count(xs):
    acc = xs[0] * 0
    for i, x in zip(itertools.count(), xs):
        armature.graph_break()
        acc = acc + i * x
    return acc


def loop_starmap(xs, ys):
    acc = xs[0] * 0
    for v in itertools.starmap(torch.mul, zip(xs, ys)):
        acc = acc + v
        armature.graph_break()
    return acc


def loop_starmap_pairs(x, pairs):
    out = []
    for v in itertools.starmap(lambda a, b: a * 10 + b, pairs):
        print("pair", v)
        out.append(x * v)
    return out


def loop_filterfalse(xs, ks):
    acc = xs[0] * 0
    for k in itertools.filterfalse(lambda k: k > 2, ks):
        armature.graph_break()
        acc = acc + xs[k]
    return acc


def loop_compress(xs, sel):
    acc = xs[0] * 0
    n = 0
    for x in itertools.compress(xs, sel):
        acc = acc + x
        armature.graph_break()
        n += 1
    return acc, n


def loop_enumerate_zip(xs, ys):
    acc = xs[0] * 0
    for i, (a, b) in enumerate(zip(xs, ys)):
        armature.graph_break()
        acc = acc + (a - b) * i
    return acc


def loop_break_then_consume_rest(xs):
    it = enumerate(xs)
    acc = xs[0] * 0
    for i, x in it:
        acc = acc + x
        armature.graph_break()
        if i == 1:
            break
    rest = list(it)
    return acc, rest


LIST4 = lambda: [X0 * k for k in range(1, 5)]  # noqa: E731

ITER_CASES = [
    (loop_enumerate, lambda: (LIST4(),)),
    (loop_enumerate_start, lambda: (LIST4(),)),
    (loop_zip, lambda: (LIST4(), [X0 + k for k in range(4)])),
    (loop_zip_uneven_three, lambda: (LIST4(), [X0] * 3, ["a", "b", "c", "d", "e"])),
    (loop_map, lambda: (LIST4(),)),
    (loop_map_two_iterables, lambda: (LIST4(), [X0 * 0.5] * 3)),
    (loop_map_builtin, lambda: (X0.clone(), [[1], [1, 2], [], [1, 2, 3]])),
    (loop_filter, lambda: (LIST4(), [0, 1, 2, 3, 2])),
    (loop_filter_none, lambda: (LIST4(), [0, 1, 0, 3, 2])),
    (loop_count, lambda: (X0.clone(),)),
    (loop_zip_count, lambda: (LIST4(),)),
    (loop_starmap, lambda: (LIST4(), LIST4())),
    (loop_starmap_pairs, lambda: (X0.clone(), [(1, 2), (3, 4), (5, 6)])),
    (loop_filterfalse, lambda: (LIST4(), [0, 3, 1, 4, 2])),
    (loop_compress, lambda: (LIST4(), [1, 0, 1, 1])),
    (loop_enumerate_zip, lambda: (LIST4(), LIST4()[::-1])),
    (loop_break_then_consume_rest, lambda: (LIST4(),)),
]


@pytest.mark.parametrize("fn,make", [pytest.param(*c, id=c[0].__name__) for c in ITER_CASES])
def test_break_in_iterator_loop(fn, make):
    verify(fn, make, min_graphs=2)


def shared_iterator_next_inside(xs, log):
    it = enumerate(xs)
    acc = xs[0] * 0
    for i, x in it:
        acc = acc + x * (i + 1)
        print("at", i)
        if i == 1:
            j, skipped = next(it)
            log.append(("skipped", j))
        log.append(i)
    log.append(next(it, "done"))
    return acc


def shared_zip_iterator(xs, ys, log):
    it = zip(xs, ys)
    acc = xs[0] * 0
    for a, b in it:
        armature.graph_break()
        acc = acc + a * b
        nxt = next(it, None)
        log.append(nxt is None)
    return acc


def shared_map_iterator_identity(xs):
    it = map(_scale, xs)
    alias = it
    out = []
    for v in it:
        armature.graph_break()
        out.append(v)
        out.append(next(alias, None))
    return out, alias is it


@pytest.mark.parametrize("fn,make", [
    pytest.param(shared_iterator_next_inside, lambda: (LIST4() + [X0 * 9], []), id="enumerate_next_inside"),
    pytest.param(shared_zip_iterator, lambda: (LIST4(), LIST4(), []), id="zip_next_inside"),
    pytest.param(shared_map_iterator_identity, lambda: (LIST4() + [X0],), id="map_alias"),
])
def test_shared_iterator_stays_one_object(fn, make):
    # (after the first break the map object is a real one: _scale runs natively)
    verify(fn, make, min_graphs=1 if fn is shared_map_iterator_identity else 2)


def iterator_made_before_break(xs):
    it = enumerate(xs)
    acc = xs[0] * 0
    armature.graph_break()
    for i, x in it:
        acc = acc + x * i
    return acc


def test_iterator_made_before_break_semantics():
    verify(iterator_made_before_break, lambda: (LIST4(),), min_graphs=2)


def test_iterator_made_before_break_graph_count_does_not_grow():
    small = explain_fresh(iterator_made_before_break, LIST4()).graph_count
    big = explain_fresh(iterator_made_before_break, LIST4() * 3).graph_count
    assert small == big, (small, big)


def comprehension_over_iterator_after_break(xs):
    it = enumerate(xs)
    acc = xs[0] * 0
    for i, x in it:
        acc = acc + x
        armature.graph_break()
        if i == 1:
            break
    rest = [j for j, _ in it]
    return acc * len(rest), rest


def test_comprehension_over_iterator_after_break_semantics():
    check_calls(comprehension_over_iterator_after_break, lambda: (LIST4(),), allow_fallback=True, min_graphs=0)


def test_comprehension_over_iterator_after_break_compiles():
    verify(comprehension_over_iterator_after_break, lambda: (LIST4(),), min_graphs=2)


def test_iterator_loop_graph_count_does_not_grow():
    small = explain_fresh(loop_enumerate_start, LIST4()).graph_count
    big = explain_fresh(loop_enumerate_start, LIST4() * 4).graph_count
    assert small == big, (small, big)


# ==========================================================================
# 6. loops with try/except + continue and a break
# ==========================================================================


def loop_try_continue_odd(xs):
    acc = xs[0] * 0
    for i, x in enumerate(xs):
        try:
            armature.graph_break()
            if i % 2:
                raise KeyError(i)
            acc = acc + x
        except KeyError:
            continue
        acc = acc * 1.5
    return acc


def loop_try_native_keyerror(xs, d, log):
    acc = xs[0] * 0
    for i in range(len(xs)):
        try:
            y = xs[i] + 1
            print("lookup", i)
            y = y * d[i]
        except KeyError as e:
            log.append(("missing", e.args[0]))
            continue
        acc = acc + y
        log.append(i)
    return acc


def loop_try_finally_continue(xs, log):
    acc = xs[0] * 0
    for i, x in enumerate(xs):
        try:
            armature.graph_break()
            if i == 2:
                continue
            acc = acc + x
        finally:
            log.append(("finally", i))
    return acc


def loop_try_except_break_statement(xs, d, log):
    acc = xs[0] * 0
    for x in xs:
        try:
            acc = acc + x
            print("break")
            acc = acc * d[len(log)]
        except KeyError:
            log.append("stop")
            break
        log.append("ok")
    return acc, len(log)


def loop_while_try_continue(x, d):
    i = 0
    hits = []
    while i < 6:
        i += 1
        try:
            armature.graph_break()
            x = x + d[i]
        except KeyError:
            continue
        hits.append(i)
    return x, hits


def loop_zip_try_disabled(xs, ks, log):
    acc = xs[0] * 0
    for x, k in zip(xs, ks):
        try:
            native_raise(k) if k < 0 else None
            acc = acc + x * k
        except ValueError as e:
            log.append(str(e))
            continue
    return acc


def loop_with_in_try_native(x, log):
    for i in range(3):
        try:
            with CM(log, f"cm{i}"):
                x = x + 1
                if i == 1:
                    int(x)
                print("break")
        except ValueError:
            log.append("caught")
            continue
        log.append(i)
    return x


def loop_reraise_chain(x, log):
    for i in range(3):
        try:
            try:
                raise KeyError(i)
            except KeyError:
                x = x + i
                print("break")
                raise ValueError(i)
        except ValueError as v:
            log.append((v.args, type(v.__context__).__name__, v.__context__.args))
            continue
    return x


LOOP_TRY_CASES = [
    (loop_try_continue_odd, lambda: (LIST4() + [X0],)),
    (loop_try_native_keyerror, lambda: (LIST4(), {0: 1.0, 2: 3.0}, [])),
    (loop_try_finally_continue, lambda: (LIST4(), [])),
    (loop_try_except_break_statement, lambda: (LIST4(), {0: 2.0, 1: 3.0}, [])),
    (loop_while_try_continue, lambda: (X0.clone(), {1: 1.0, 3: 3.0, 4: 4.0})),
    (loop_zip_try_disabled, lambda: (LIST4(), [1, -2, 3, -4], [])),
    (loop_with_in_try_native, lambda: (X0.clone(), [])),
    (loop_reraise_chain, lambda: (X0.clone(), [])),
]


@pytest.mark.parametrize("fn,make", [pytest.param(*c, id=c[0].__name__) for c in LOOP_TRY_CASES])
def test_loop_try_continue_with_break(fn, make):
    verify(fn, make, min_graphs=2)


def test_loop_native_raise_caught_many_iterations():
    """A native exception caught on every other iteration of a long loop:
    no recursion-limit trouble, and the graph count does not grow."""
    def make(n):
        return lambda: ([X0 * i for i in range(n)], [1, -1] * (n // 2), [])

    verify(loop_zip_try_disabled, make(1500), min_graphs=1)
    assert graph_count(loop_zip_try_disabled, *make(8)()) == graph_count(loop_zip_try_disabled, *make(40)())
