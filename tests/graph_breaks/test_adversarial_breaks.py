"""Adversarial tests for graph breaks interacting with closures, generators,
context managers, exception handling, loops, aliasing, globals and modules.

Every case runs one function eagerly and compiled (``armature.compile``,
eager backend) on independent states, calls it several times (often with
changing inputs), and compares after every call: the result (or the raised
exception, type and message), the printed output and a deep snapshot of
the state (arguments and any extra state such as globals).  It also checks
that no frame ran as plain Python unless the case says otherwise.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import sys

import pytest
import torch

import armature
from helpers import assert_equal

from .util import FALLBACK_LOGGER, collect_log, explain_fresh, snap

X = torch.tensor([1.0, -2.0, 3.0])
Y = torch.tensor([0.5, 4.0, -1.0])


def xfail(reason):
    return pytest.mark.xfail(strict=True, reason=f"armature: {reason}")


def _call(fn, args, kwargs):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            r = fn(*args, **kwargs)
        return snap(r), None, out.getvalue()
    except Exception as e:  # noqa: BLE001 - compared with eager
        return None, e, out.getvalue()


def diff(fn, setup, args_of=None, *, extra=None, calls=3, kwargs_of=None, allow_fallback=False,
         exc_match="exact"):
    """Run ``fn`` eagerly and compiled on independent states from ``setup()``.

    args_of(state, i) -> args of call i (default: the state tuple);
    kwargs_of(state, i) -> kwargs; extra(state) -> extra structure snapshotted
    after every call (e.g. globals).  Compares result / exception / printed
    output / snapshot of args and extra after each call.
    """
    if args_of is None:
        def args_of(s, i):
            return s if isinstance(s, tuple) else (s,)
    kwargs_of = kwargs_of or (lambda s, i: {})
    extra = extra or (lambda s: None)
    records = []
    for mode in ("eager", "compiled"):
        armature.reset()
        with collect_log(FALLBACK_LOGGER) as fallbacks:
            f = fn if mode == "eager" else armature.compile(fn, backend="eager")
            s = setup()
            rec = []
            for i in range(calls):
                args = args_of(s, i)
                kw = kwargs_of(s, i)
                r, e, out = _call(f, args, kw)
                rec.append((r, e, out, snap(list(args)), snap(extra(s))))
        records.append(rec)
    for i, (ev, cv) in enumerate(zip(*records), start=1):
        label = f"call #{i}"
        er, ee, eo, ea, ex = ev
        cr, ce, co, ca, cx = cv
        if ee is not None:
            assert ce is not None, f"{label}: eager raised {ee!r}, compiled returned {cr!r}"
            assert type(ce) is type(ee), f"{label}: compiled raised {type(ce).__name__}({ce}), eager {ee!r}"
            if exc_match == "exact":
                assert str(ce) == str(ee), f"{label}: message {str(ce)!r} != {str(ee)!r}"
        elif ce is not None:
            raise AssertionError(f"{label}: compiled raised {ce!r}, eager returned {er!r}") from ce
        else:
            assert_equal(er, cr, f"{label} out")
        assert co == eo, f"{label}: printed {co!r}, eager printed {eo!r}"
        assert_equal(ea, ca, f"{label} args")
        assert_equal(ex, cx, f"{label} extra")
    if not allow_fallback:
        assert not fallbacks, f"ran as plain Python: {fallbacks}"
    return records


# ==========================================================================
# 1. closures mutating nonlocal state across breaks
# ==========================================================================


def closure_counter(x, log):
    count = 0
    items = []

    def bump(v):
        nonlocal count
        count += 1
        items.append(v.sum())
        print("bump", count)
        return v * count

    y = bump(x)
    y = bump(y + 1)
    armature.graph_break()
    y = bump(y)
    log.append(count)
    return y, count, items


def test_closure_counter_nonlocal():
    diff(closure_counter, lambda: (X.clone(), []))


def closure_nested_two_levels(x):
    acc = []
    total = 0

    def outer(v):
        nonlocal total

        def inner(w):
            nonlocal total
            total += 1
            acc.append(w)
            armature.graph_break()
            total += 10
            return w + total

        r = inner(v * 2)
        total += 100
        return r

    a = outer(x)
    b = outer(a)
    return a, b, total, acc


def test_closure_nested_two_levels():
    diff(closure_nested_two_levels, lambda: (X.clone(),))


def make_accumulator():
    state = {"n": 0, "hist": []}

    def acc(x):
        state["n"] += 1
        state["hist"].append(x.sum().item())
        if x.sum() > 0:
            return x * state["n"]
        return x - state["n"]

    return acc, state


def test_closure_factory_escaping_state():
    def setup():
        fn, st = make_accumulator()
        return fn, st

    records = []
    for mode in ("eager", "compiled"):
        fn, st = make_accumulator()
        f = fn if mode == "eager" else armature.compile(fn, backend="eager")
        outs = []
        for x in (X, -X, Y, -Y * 3):
            outs.append(f(x.clone()))
        records.append((outs, snap(st)))
    assert_equal(records[0], records[1])


def closure_rebinds_after_break(x):
    val = x + 1

    def get():
        return val * 2

    first = get()
    print("rebind")
    val = x - 5
    second = get()
    armature.graph_break()
    val = None
    third = get() if val is not None else "none"
    return first, second, third


def test_closure_rebinds_cell_after_break():
    diff(closure_rebinds_after_break, lambda: (X.clone(),))


def closure_lambda_list(x):
    fns = [lambda v, k=k: v * k for k in range(3)]
    late = [lambda v: v * k for k in range(3)]
    out = []
    for f, g in zip(fns, late):
        out.append(f(x))
        armature.graph_break()
        out.append(g(x))
    return out


def test_lambdas_in_loop_with_break():
    diff(closure_lambda_list, lambda: (X.clone(),))


# ==========================================================================
# 2. generators
# ==========================================================================


def genexpr_loop_break(xs, log):
    total = 0
    for v in (a * 2 for a in xs):
        log.append(v.sum().item())
        total = total + v
    return total


def test_genexpr_loop_with_item():
    diff(genexpr_loop_break, lambda: ([X.clone(), Y.clone(), X * 3], []), allow_fallback=True)


def gen_fn(xs, log):
    for i, a in enumerate(xs):
        log.append(("yield", i))
        yield a + i
    log.append("done")


def consume_gen_fn(xs, log):
    out = []
    for v in gen_fn(xs, log):
        print("got", v.shape)
        out.append(v * 2)
    return out


def test_generator_function_consumed_with_print():
    diff(consume_gen_fn, lambda: ([X.clone(), Y.clone()], []), allow_fallback=True)


def gen_with_break_inside(xs, log):
    for a in xs:
        armature.graph_break()
        log.append(len(log))
        yield a * 2


def consume_gen_breaking(xs, log):
    return [v + 1 for v in gen_with_break_inside(xs, log)]


def test_generator_with_break_inside():
    diff(consume_gen_breaking, lambda: ([X.clone(), Y.clone()], []), allow_fallback=True)


def partial_gen_consume(xs, log):
    g = (a * 3 for a in xs)
    first = next(g)
    armature.graph_break()
    second = next(g)
    log.append("mid")
    rest = list(g)
    return first, second, rest


def test_partially_consumed_genexpr_across_break():
    diff(partial_gen_consume, lambda: ([X.clone(), Y.clone(), X + Y, X - Y], []), allow_fallback=True)


def gen_sum_data_dependent(xs):
    s = sum(a.sum() for a in xs)
    if s > 0:
        return s * 2
    return s - 1


def test_sum_of_genexpr_data_dependent():
    diff(gen_sum_data_dependent, lambda: ([X.clone(), Y.clone()],), calls=1)
    diff(gen_sum_data_dependent, lambda: ([-X.clone() * 5, Y.clone()],), calls=1)


def gen_send_across_break(x):
    def coro():
        total = x * 0
        while True:
            v = yield total
            if v is None:
                return
            total = total + v

    c = coro()
    next(c)
    a = c.send(x)
    armature.graph_break()
    b = c.send(x * 2)
    return a, b


def test_generator_send_across_break():
    diff(gen_send_across_break, lambda: (X.clone(),), allow_fallback=True)


# ==========================================================================
# 3. context managers
# ==========================================================================


class Recorder:
    def __init__(self, log, name="r", swallow=False):
        self.log = log
        self.name = name
        self.depth = 0
        self.swallow = swallow

    def __enter__(self):
        self.depth += 1
        self.log.append(("enter", self.name, self.depth))
        return self

    def __exit__(self, typ, val, tb):
        self.log.append(("exit", self.name, self.depth, None if typ is None else typ.__name__))
        self.depth -= 1
        return self.swallow


def with_break_try_finally(x, log):
    rec = Recorder(log, "outer")
    with rec as r:
        y = x + r.depth
        try:
            with Recorder(log, "inner") as r2:
                y = y * 2
                print("inside inner", r2.depth)
                y = y + r2.depth
        finally:
            log.append(("finally", rec.depth))
        armature.graph_break()
        y = y - 1
    log.append(("after", rec.depth))
    return y


def test_with_nested_try_finally_break():
    diff(with_break_try_finally, lambda: (X.clone(), []))


def with_swallow_native_error(x, log, d):
    y = x + 1
    with Recorder(log, "sw", swallow=True):
        y = y * 2
        print("before lookup")
        y = y + d["missing"]
        log.append("unreached")
    return y


def test_with_swallows_native_error_after_break():
    diff(with_swallow_native_error, lambda: (X.clone(), [], {}))


def with_return_inside(x, log):
    with Recorder(log, "ret"):
        y = x * 3
        armature.graph_break()
        if y.sum() > 0:
            return y
        log.append("neg")
    return -y


def test_with_return_inside_after_break():
    diff(with_return_inside, lambda: (X.clone(), []))
    diff(with_return_inside, lambda: (-X.clone() * 4, []))


@contextlib.contextmanager
def gen_cm(log, tag):
    log.append(("gen enter", tag))
    try:
        yield tag * 2
    except KeyError as e:
        log.append(("gen caught", str(e)))
    finally:
        log.append(("gen exit", tag))


def with_generator_cm_break(x, log, d):
    with gen_cm(log, 3) as v:
        y = x * v
        print("in gen cm")
        y = y + d["nokey"]
    return log


def test_contextmanager_decorator_break_and_error():
    diff(with_generator_cm_break, lambda: (X.clone(), [], {}), allow_fallback=True)


def with_multiple_items(x, log):
    with Recorder(log, "a") as a, Recorder(log, "b") as b:
        y = x + a.depth + b.depth
        armature.graph_break()
        y = y * 2
        with Recorder(log, "c"):
            print("deep")
            y = y - 1
    return y


def test_with_multiple_items_break():
    diff(with_multiple_items, lambda: (X.clone(), []))


class StateCM:
    def __init__(self, obj):
        self.obj = obj

    def __enter__(self):
        self.obj.active = True
        self.obj.entries = self.obj.entries + 1
        return self.obj

    def __exit__(self, *exc):
        self.obj.active = False
        return False


class Holder:
    def __init__(self):
        self.active = False
        self.entries = 0
        self.seen = []


def with_state_cm_read_inside(x, h):
    with StateCM(h) as o:
        o.seen.append(o.active)
        y = x * o.entries
        armature.graph_break()
        o.seen.append(h.active)
    h.seen.append(h.active)
    return y


def test_with_state_cm_attribute_visible_after_break():
    diff(with_state_cm_read_inside, lambda: (X.clone(), Holder()))


# ==========================================================================
# 4. except bodies, re-raise, raise from
# ==========================================================================


class MyErr(Exception):
    pass


def except_raise_from_after_break(x, log):
    try:
        try:
            y = x + 1
            int(y)
        except ValueError as e:
            log.append("inner")
            print("in handler")
            raise MyErr("wrapped") from e
    except MyErr as e2:
        log.append((type(e2.__cause__).__name__, e2.__suppress_context__))
        return x * 2


def test_except_raise_from_after_break():
    diff(except_raise_from_after_break, lambda: (X.clone(), []))


def except_reraise_nested(x, log):
    try:
        try:
            raise KeyError("a")
        except KeyError:
            log.append("k1")
            armature.graph_break()
            try:
                raise ValueError("b")
            except ValueError:
                log.append("v")
                print("inner handler")
            raise
    except KeyError as e:
        log.append(("outer", str(e), type(e.__context__).__name__ if e.__context__ else None))
    return x + len(log)


def test_except_bare_reraise_after_nested_handler():
    diff(except_reraise_nested, lambda: (X.clone(), []))


def except_raise_from_none(x, log):
    try:
        try:
            {}["x"]
        except KeyError:
            armature.graph_break()
            raise MyErr("clean") from None
    except MyErr as e:
        log.append((e.__cause__, e.__suppress_context__, type(e.__context__).__name__))
    return x


def test_except_raise_from_none_after_break():
    diff(except_raise_from_none, lambda: (X.clone(), []))


def except_escapes(x, log):
    try:
        y = x.sum().item()
        raise IndexError(f"bad {y:.1f}")
    except IndexError as e:
        log.append(str(e))
        armature.graph_break()
        raise RuntimeError("escaped") from e


def test_except_raise_escapes_frame():
    diff(except_escapes, lambda: (X.clone(), []))


def except_with_e_deleted(x):
    try:
        raise ValueError("v")
    except ValueError as e:
        armature.graph_break()
        msg = str(e)
    try:
        e  # noqa: B018
        alive = True
    except NameError:
        alive = False
    return x, msg, alive


def test_except_name_deleted_after_handler_with_break():
    diff(except_with_e_deleted, lambda: (X.clone(),))


# ==========================================================================
# 5. return in try with finally, break/continue in try/finally in loops
# ==========================================================================


def return_try_finally_mutates(x, st):
    try:
        y = x * 2
        print("in try")
        st["count"] = st.get("count", 0) + 1
        return y + st["count"]
    finally:
        st["count"] *= 10
        st.setdefault("log", []).append("fin")


def test_return_in_try_finally_mutates_state():
    diff(return_try_finally_mutates, lambda: (X.clone(), {}))


def return_overridden_in_finally(x, log):
    try:
        armature.graph_break()
        return x + 1
    finally:
        log.append("fin")
        if len(log) % 2 == 0:
            return x - 1  # noqa: B012


def test_return_overridden_in_finally_alternating():
    diff(return_overridden_in_finally, lambda: (X.clone(), []), calls=4)


def loop_break_continue_finally(xs, log):
    acc = xs[0] * 0
    for i, v in enumerate(xs):
        try:
            if i == 1:
                continue
            armature.graph_break()
            acc = acc + v
            if i == 3:
                break
        finally:
            log.append(("fin", i))
    else:
        log.append("else")
    return acc


def test_loop_break_continue_in_try_finally():
    diff(loop_break_continue_finally, lambda: ([X.clone(), Y.clone(), X * 2, Y * 2, X * 5], []))
    diff(loop_break_continue_finally, lambda: ([X.clone(), Y.clone(), X * 2], []))


def while_try_finally_break(x, log):
    i = 0
    while True:
        try:
            i += 1
            x = x * 2
            if x.sum() > 20:
                break
            print("iter", i)
        finally:
            log.append(i)
    return x, i


def test_while_try_finally_data_dependent_break():
    diff(while_try_finally_break, lambda: (X.clone(), []))


def nested_loops_finally(xs, log):
    out = []
    for i in range(3):
        for j, v in enumerate(xs):
            try:
                if j > i:
                    break
                print(i, j)
                out.append(v * i)
            finally:
                log.append((i, j))
    return out


def test_nested_loops_break_finally():
    diff(nested_loops_finally, lambda: ([X.clone(), Y.clone(), X * 3], []))


# ==========================================================================
# 6. aliasing / objects created before break mutated after
# ==========================================================================


class Box:
    def __init__(self):
        self.items = []
        self.meta = {}


def alias_across_break(x, registry):
    b = Box()
    registry["box"] = b
    lst = b.items
    lst.append(x)
    alias = registry["box"].items
    armature.graph_break()
    alias.append(x * 2)
    b.meta["n"] = len(lst)
    registry["items_is_alias"] = lst is registry["box"].items
    return len(b.items), b


def test_alias_list_attr_in_dict_across_break():
    diff(alias_across_break, lambda: (X.clone(), {}))


def alias_existing_obj(x, reg):
    b = reg["box"]
    items = b.items
    items.append(x.sum())
    print("p")
    b.items = [x]          # rebinding attribute; old alias still holds list
    items.append(x * 3)
    armature.graph_break()
    b.items.append(len(items))
    return items, b.items


def test_alias_attr_rebound_around_break():
    def setup():
        return X.clone(), {"box": Box()}
    diff(alias_existing_obj, setup)


def same_list_two_locals(x, lst):
    a = lst
    b = lst
    a.append(1)
    armature.graph_break()
    b.append(2)
    a += [3]
    armature.graph_break()
    b[:] = b[1:]
    return x * len(a), a is b


def test_list_aliased_in_two_locals():
    diff(same_list_two_locals, lambda: (X.clone(), [0]))


def dict_of_lists_alias(x, d):
    d.setdefault("a", []).append(x)
    d["b"] = d["a"]
    print("alias made")
    d["b"].append(x + 1)
    del d["a"]
    armature.graph_break()
    d["c"] = d["b"][-1] * 2
    return list(d)


def test_dict_of_lists_alias_delete():
    diff(dict_of_lists_alias, lambda: (X.clone(), {}))


# ==========================================================================
# 7. globals
# ==========================================================================

G_COUNTER = 0
G_LIST = []
G_SCALE = 1.0


def reset_globals():
    global G_COUNTER, G_LIST, G_SCALE
    G_COUNTER = 0
    G_LIST = []
    G_SCALE = 1.0


def globals_snapshot(_s):
    return (G_COUNTER, list(G_LIST), G_SCALE)


def global_before_break(x):
    global G_COUNTER, G_SCALE
    G_COUNTER += 1
    G_SCALE = G_SCALE * 2
    G_LIST.append(G_COUNTER)
    print("counter", G_COUNTER)
    y = x * G_SCALE
    G_COUNTER += 1
    return y + G_COUNTER


def test_global_mutation_before_break_read_after():
    def setup():
        reset_globals()
        return (X.clone(),)
    diff(global_before_break, setup, extra=globals_snapshot, calls=4)


def global_rebind_list(x):
    global G_LIST
    old = G_LIST
    G_LIST = [len(old)]
    armature.graph_break()
    old.append("stale")
    G_LIST.append(len(old))
    return x + len(G_LIST)


def test_global_list_rebound_old_alias_mutated():
    def setup():
        reset_globals()
        return (X.clone(),)
    diff(global_rebind_list, setup, extra=globals_snapshot)


def global_del_and_recreate(x):
    global G_TEMP
    G_TEMP = x * 2
    armature.graph_break()
    y = G_TEMP + 1
    del G_TEMP
    try:
        G_TEMP  # noqa: B018
        present = True
    except NameError:
        present = False
    return y, present


def test_global_created_and_deleted_around_break():
    diff(global_del_and_recreate, lambda: (X.clone(),))


# ==========================================================================
# 8. deleting locals / attributes
# ==========================================================================


def del_local_before_break(x):
    a = x + 1
    b = a * 2
    del a
    armature.graph_break()
    try:
        a  # noqa: F821,B018
        got = "a"
    except (NameError, UnboundLocalError) as e:
        got = type(e).__name__
    return b, got


def test_del_local_before_break():
    diff(del_local_before_break, lambda: (X.clone(),))


class Attrs:
    def __init__(self):
        self.a = 1
        self.b = [1]


def del_attr_before_break(x, o):
    del o.a
    o.c = x
    armature.graph_break()
    return hasattr(o, "a"), o.b, getattr(o, "c", None)


def test_del_attr_before_break():
    diff(del_attr_before_break, lambda: (X.clone(), Attrs()), calls=1)


def del_attr_twice(x, o):
    del o.a
    print("x")
    del o.a


def test_del_attr_twice_raises():
    diff(del_attr_twice, lambda: (X.clone(), Attrs()), calls=1)


def del_dict_item_and_list_slice(x, d, lst):
    del d["k"]
    del lst[1:3]
    armature.graph_break()
    d["j"] = len(lst)
    del lst[0]
    return x * len(d)


def test_del_dict_item_list_slice_across_break():
    diff(del_dict_item_and_list_slice, lambda: (X.clone(), {"k": 1, "m": 2}, [1, 2, 3, 4, 5, 6]), calls=2)
