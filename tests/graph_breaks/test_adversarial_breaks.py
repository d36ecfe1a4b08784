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

import pytest
import torch

import armature
from helpers import assert_equal

from .util import FALLBACK_LOGGER, collect_log, dynamo_graph_count, explain_fresh, graph_count, snap

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
                shown = [("iterator",) if hasattr(v, "__next__") else v for v in args]
                rec.append((r, e, out, snap(shown), snap(extra(s))))
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
    diff(genexpr_loop_break, lambda: ([X.clone(), Y.clone(), X * 3], []))


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
    diff(consume_gen_fn, lambda: ([X.clone(), Y.clone()], []))


def gen_with_break_inside(xs, log):
    for a in xs:
        armature.graph_break()
        log.append(len(log))
        yield a * 2


def consume_gen_breaking(xs, log):
    return [v + 1 for v in gen_with_break_inside(xs, log)]


def test_generator_with_break_inside():
    # the frame is split where the generator is made (values/functions/generator_breaks.py),
    # not run as Python: the generator then runs natively
    diff(consume_gen_breaking, lambda: ([X.clone(), Y.clone()], []))


def partial_gen_consume(xs, log):
    g = (a * 3 for a in xs)
    first = next(g)
    armature.graph_break()
    second = next(g)
    log.append("mid")
    rest = list(g)
    return first, second, rest


def test_partially_consumed_genexpr_across_break():
    diff(partial_gen_consume, lambda: ([X.clone(), Y.clone(), X + Y, X - Y], []))


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
    diff(gen_send_across_break, lambda: (X.clone(),))


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


# ==========================================================================
# 9. many live locals of odd types across a break
# ==========================================================================


def many_live_locals(x, d, lst):
    none = None
    tup = (x, x * 2)
    sl = slice(1, None, 2)
    rng = range(2, 9, 3)
    it_zip = zip(lst, "abcdef")
    it_enum = enumerate(lst)
    it_items = iter(d.items())
    it_rev = reversed(lst)
    it_list = iter(lst)
    meth = lst.append
    lam = lambda v: v + 1  # noqa: E731
    k = 7

    def clo(v):
        return v * k

    next(it_zip)
    next(it_enum)
    next(it_items)
    next(it_rev)
    next(it_list)
    print("break with everything live")
    meth(99)
    rest = (list(it_zip), list(it_enum), list(it_items), list(it_rev), list(it_list))
    return none, tup[1] + tup[0], lst[sl], list(rng), rng[1], lam(x), clo(x), rest


def test_many_live_locals_across_break():
    diff(many_live_locals, lambda: (X.clone(), {"a": 1, "b": 2, "c": 3}, [1, 2, 3, 4]))


def iter_in_progress_two_breaks(x, lst):
    it = iter(lst)
    out = []
    for v in it:
        out.append(x * v)
        armature.graph_break()
        if v == 2:
            skipped = next(it)
            out.append(("skipped", skipped))
    return out


def test_iterator_advanced_manually_inside_loop():
    diff(iter_in_progress_two_breaks, lambda: (X.clone(), [1, 2, 3, 4, 5]))


def dict_items_loop_break(x, d):
    out = {}
    for k, v in d.items():
        print(k)
        out[k] = x * v
    for i, (k, v) in enumerate(reversed(list(d.items()))):
        armature.graph_break()
        out[f"r{i}"] = k
    return out


def test_dict_items_loop_changing_keys():
    keys = [{"a": 1, "b": 2}, {"b": 3, "c": 4, "d": 5}, {}, {"a": 1, "b": 2}]

    def setup():
        return [X.clone()]

    diff(dict_items_loop_break, setup, args_of=lambda s, i: (s[0], dict(keys[i])), calls=4)


def zip_strict_break(xs, ys):
    out = []
    try:
        for a, b in zip(xs, ys, strict=True):
            print("pair")
            out.append(a + b)
    except ValueError as e:
        out.append(str(e))
    return out


def test_zip_strict_mismatch_after_break():
    diff(zip_strict_break, lambda: ([X.clone(), Y.clone()], [Y.clone()]))


def bound_method_of_local_obj(x):
    b = Box()
    add = b.items.append
    setm = b.meta.__setitem__
    add(x)
    armature.graph_break()
    add(x * 2)
    setm("n", len(b.items))
    return b


def test_bound_methods_live_across_break():
    diff(bound_method_of_local_obj, lambda: (X.clone(),))


# ==========================================================================
# 10. *args / **kwargs callees that break, recursion
# ==========================================================================


def breaking_callee(*args, scale=1, **kw):
    s = args[0] * scale
    print("callee", len(args), sorted(kw))
    for k in sorted(kw):
        s = s + kw[k]
    return s, args[1:], kw


def caller_star(x, extra, opts):
    a = breaking_callee(x, *extra, scale=2, **opts)
    b = breaking_callee(*(x, x), **{"z": 1, **opts})
    return a, b


def test_star_args_kwargs_callee_breaks():
    variants = [([], {}), ([1, 2], {"p": 3}), ([X], {"q": -1, "p": 5})]
    diff(caller_star, lambda: [X.clone()],
         args_of=lambda s, i: (s[0], list(variants[i][0]), dict(variants[i][1])))


def rec(x, n, log):
    log.append(n)
    if n == 0:
        armature.graph_break()
        return x
    y = rec(x * 2, n - 1, log)
    log.append(-n)
    return y + n


def test_recursion_inner_break():
    diff(rec, lambda: [X.clone()], args_of=lambda s, i: (s[0], i + 1, []))


def rec_data_dep(x, depth):
    if depth > 3:
        return x
    if x.sum() > 0:
        return rec_data_dep(x - 3, depth + 1)
    return rec_data_dep(x + 1, depth + 1) * 2


def test_recursion_data_dependent():
    diff(rec_data_dep, lambda: (X.clone() * 2, 0))


def kwargs_only_callee(x, *, a, b=None, **rest):
    if b is None:
        print("no b")
        return x + a
    return x * b + a + len(rest)


def caller_kwonly(x, b):
    return kwargs_only_callee(x, a=1, b=b, c=2), kwargs_only_callee(x, **{"a": 3})


def test_kwonly_callee_none_vs_tensor():
    vals = [None, Y, None, 2.0]
    diff(caller_kwonly, lambda: [X.clone()], args_of=lambda s, i: (s[0], vals[i]), calls=4)


# ==========================================================================
# 11. __slots__ and dataclasses
# ==========================================================================


class Slotted:
    __slots__ = ("a", "b", "log")

    def __init__(self):
        self.a = 0
        self.log = []


def slots_around_break(x, s):
    s.a += 1
    s.log.append(s.a)
    armature.graph_break()
    s.b = x * s.a
    had = hasattr(s, "b")
    del s.a
    print("deleted")
    s.a = 10
    return had, s.b


def test_slots_mutated_around_break():
    diff(slots_around_break, lambda: (X.clone(), Slotted()), calls=2)


def slots_bad_attr(x, s):
    s.a = 3
    armature.graph_break()
    s.zzz = 1
    return x


def test_slots_bad_attribute_after_break():
    diff(slots_bad_attr, lambda: (X.clone(), Slotted()), calls=1)


@dataclasses.dataclass
class DC:
    t: torch.Tensor
    n: int = 0
    hist: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class FDC:
    t: torch.Tensor
    n: int = 0


def dataclass_mutation(x, dc, fdc):
    dc.n += 1
    dc.hist.append(dc.n)
    dc.t = dc.t + x
    print("dc", dc.n)
    new = dataclasses.replace(fdc, n=fdc.n + dc.n)
    try:
        new.n = 5
    except dataclasses.FrozenInstanceError as e:
        dc.hist.append(type(e).__name__)
    armature.graph_break()
    dc.t = dc.t * new.n
    return new, dc == DC(dc.t, dc.n, dc.hist)


def test_dataclass_and_frozen_around_break():
    diff(dataclass_mutation, lambda: (X.clone(), DC(Y.clone()), FDC(X.clone(), 2)))


def frozen_created_before_break(x):
    f = FDC(x, 3)
    armature.graph_break()
    g = FDC(f.t * 2, f.n + 1)
    return g.t, g.n, f == FDC(x, 3)


def test_frozen_dataclass_created_before_break():
    diff(frozen_created_before_break, lambda: (X.clone(),))


# ==========================================================================
# 12. nn.Module
# ==========================================================================


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.sub = Counter()
        self.drop = torch.nn.Dropout(0.0)
        self.errors = []
        self.stats = {}

    def forward(self, x, flag=None):
        y = self.sub(x)
        try:
            v = y.sum().item()
            print("v sign", v > 0)
            if flag is not None:
                y = y + flag
            if self.training:
                y = self.drop(y) * 2
            if y.mean() > 0:
                y = y.relu()
            else:
                y = y.tanh()
            _ = {}["nokey"] if v > 1e9 else None
            self.stats[self.sub.calls] = round(v, 3)
        except KeyError as e:
            self.errors.append(str(e))
        z = self.sub(y)
        return z, self.sub.calls


def test_module_forward_try_print_item_branch_train_eval():
    xs = [X.clone(), -X.clone(), Y.clone() * 3, -Y.clone()]
    flags = [None, Y.clone(), None, 1.5]

    records = []
    for mode in ("eager", "compiled"):
        armature.reset()
        m = Net()
        f = m if mode == "eager" else armature.compile(m, backend="eager")
        rec = []
        with collect_log(FALLBACK_LOGGER) as fb:
            for i in range(8):
                m.train(i % 3 != 2)
                r, e, out = _call(f, (xs[i % 4].clone(),), {"flag": flags[i % 4]})
                rec.append((r, e, out, snap(m)))
        records.append(rec)
        assert not fb
    for i, (ev, cv) in enumerate(zip(*records)):
        assert ev[1] is None and cv[1] is None, (ev[1], cv[1])
        assert_equal(ev[0], cv[0], f"out {i}", rtol=1e-5, atol=1e-5)
        assert ev[2] == cv[2], f"printed {i}"
        assert_equal(ev[3], cv[3], f"state {i}", rtol=1e-5, atol=1e-5)


class SubCounter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 0
        self.seen = []

    def forward(self, x):
        self.n += 1
        self.seen.append(self.training)
        armature.graph_break()
        self.n += 1
        return x * self.n


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = SubCounter()
        self.b = SubCounter()

    def forward(self, x):
        y = self.a(x)
        self.b.n = self.a.n * 10
        return self.b(y) + self.a.n


def test_submodule_counters_across_break_train_eval():
    records = []
    for mode in ("eager", "compiled"):
        armature.reset()
        m = Outer()
        f = m if mode == "eager" else armature.compile(m, backend="eager")
        rec = []
        for i in range(4):
            m.train(i % 2 == 0)
            rec.append((snap(f(X.clone())), snap(m)))
        records.append(rec)
    assert_equal(records[0], records[1])


# ==========================================================================
# 13. changing inputs across calls
# ==========================================================================


def list_len_varies(xs, log):
    acc = xs[0] * 0 if xs else None
    for i, v in enumerate(xs):
        if i % 2:
            print("odd", i)
        acc = acc + v
        log.append(i)
    return acc, len(xs)


def test_list_length_varies_between_calls():
    lens = [2, 3, 1, 0, 4, 3]
    diff(list_len_varies, lambda: [],
         args_of=lambda s, i: ([X * k for k in range(1, lens[i] + 1)], s), calls=6)


def none_vs_tensor(x, bias, log):
    if bias is None:
        log.append("none")
        armature.graph_break()
        return x
    y = x + bias
    print("with bias")
    log.append(y.sum().item() > 0)
    return y


def test_none_vs_tensor_argument_alternating():
    bs = [None, Y, None, -Y * 10, Y]
    diff(none_vs_tensor, lambda: [],
         args_of=lambda s, i: (X.clone(), bs[i] if bs[i] is None else bs[i].clone(), s), calls=5)


def dict_keys_vary(x, d):
    out = x
    for k in sorted(d):
        if d[k] is None:
            continue
        armature.graph_break()
        out = out * d[k] if isinstance(d[k], (int, float)) else out + d[k]
    d["seen"] = len(d)
    return out


def test_dict_keys_vary_between_calls():
    ds = [{"a": 2}, {"a": 2, "b": None}, {"b": Y}, {"c": 1.5, "a": 3}, {}]
    diff(dict_keys_vary, lambda: None,
         args_of=lambda s, i: (X.clone(), {k: (v.clone() if isinstance(v, torch.Tensor) else v)
                                          for k, v in ds[i].items()}), calls=5)


# ==========================================================================
# 14. breaks with values live on the stack / in odd expression positions
# ==========================================================================


def brk(v=None):
    print("brk", v)
    return v


def stack_in_call_args(x, d):
    return (x + 1, brk(2), x * 3), [x, brk(), d.get("a", brk("d"))], {**d, "k": brk(5)}


def test_break_in_tuple_list_dict_displays():
    diff(stack_in_call_args, lambda: (X.clone(), {"z": 1}))


def stack_in_conditional_and_fstring(x, n):
    s = f"{n}:{brk(n)}:{x.shape}"
    y = x + (x * 2 if brk(n) else x - 2)
    z = 0 < brk(n) < 3
    return s, y, z


def test_break_in_fstring_ternary_chained_compare():
    diff(stack_in_conditional_and_fstring, lambda: [X.clone()], args_of=lambda s, i: (s[0], i))


def augassign_subscript(x, d, lst):
    d["k"] += brk(3)
    lst[brk(1)] *= 2
    d["t"] = d.get("t", x) + brk(x)
    return d, lst


def test_break_in_augassign_subscript():
    diff(augassign_subscript, lambda: (X.clone(), {"k": 1}, [1, 2, 3]))


def method_receiver_loaded_before_break(x, box):
    box.items.append(brk(len(box.items)))
    obj = box
    obj.meta.update(a=brk(1), b=x)
    return box


def test_break_in_method_args_receiver_live():
    diff(method_receiver_loaded_before_break, lambda: (X.clone(), Box()))


def star_unpack_break(x):
    a, *b, c = brk([x, x * 2, x * 3, x * 4])
    (p, q), r = brk((1, 2)), brk(3)
    return a, b, c, p + q + r


def test_break_in_star_unpack():
    diff(star_unpack_break, lambda: (X.clone(),))


def assert_msg_break(x, n):
    assert n < 2, brk(f"n is {n}")
    return x * n


def test_break_in_assert_message():
    # pytest's assertion rewriting adds locals named '@py_assert..' (not
    # identifiers) so the frame cannot be split: it runs as plain Python.
    diff(assert_msg_break, lambda: [X.clone()], args_of=lambda s, i: (s[0], i), allow_fallback=True)


def listcomp_with_print(xs):
    ys = [brk(i) or v * 2 for i, v in enumerate(xs)]
    zs = {i: v.sum().item() for i, v in enumerate(ys)}
    return ys, zs


def test_listcomp_and_dictcomp_with_breaks():
    diff(listcomp_with_print, lambda: ([X.clone(), Y.clone()],))


def walrus_break(x, lst):
    if (n := len(lst)) > 1 and (v := brk(lst[0])) is not None:
        return x * n + v
    return x


def test_walrus_with_break():
    diff(walrus_break, lambda: (X.clone(), [3, 4]))


# ==========================================================================
# 15. syntax oddities with breaks: match, except*, super(), cells in args
# ==========================================================================


def match_break(x, cmd):
    match cmd:
        case {"op": "add", "v": v}:
            print("add")
            return x + v
        case [first, *rest]:
            armature.graph_break()
            return x * first + len(rest)
        case str() as s if brk(s):
            return s
        case _:
            return None


def test_match_statement_break():
    cmds = [{"op": "add", "v": 2}, [3, 4, 5], "hello", 7]
    diff(match_break, lambda: [X.clone()], args_of=lambda s, i: (s[0], cmds[i]), calls=4)


def except_star_break(x, log):
    try:
        raise ExceptionGroup("g", [ValueError("a"), KeyError("b"), ValueError("c")])
    except* ValueError as eg:
        log.append(("val", len(eg.exceptions)))
        print("except* val")
        x = x + 1
    except* KeyError as eg:
        armature.graph_break()
        log.append(("key", len(eg.exceptions)))
        x = x * 2
    return x


def test_except_star_break():
    # CHECK_EG_MATCH is not modelled: the resume function runs as plain Python
    diff(except_star_break, lambda: (X.clone(), []), allow_fallback=True)


class Base:
    def go(self, x):
        return x + 1


class Child(Base):
    def go(self, x):
        y = super().go(x)
        print("child")
        z = super().go(y)
        return z * 2, __class__.__name__


def super_break(x):
    return Child().go(x)


def test_zero_arg_super_across_break():
    diff(super_break, lambda: (X.clone(),))


def method_super_direct(x):
    c = Child()
    return c.go(x)


def test_method_compiled_directly_with_super():
    c = Child()
    records = []
    for mode in ("eager", "compiled"):
        armature.reset()
        f = c.go if mode == "eager" else armature.compile(c.go, backend="eager")
        records.append([snap(f(X.clone())) for _ in range(2)])
    assert_equal(records[0], records[1])


def arg_is_cell(x, n):
    def g():
        return x * n

    a = g()
    print("cell arg")
    x = x + 100
    n = n + 1
    b = g()
    return a, b


def test_argument_that_is_a_cell_rebound_after_break():
    diff(arg_is_cell, lambda: (X.clone(), 2))


def loop_cells(x):
    fns = []
    for i in range(3):
        j = i * 10

        def f(v):
            return v + i + j

        fns.append(f)
        armature.graph_break()
    return [f(x) for f in fns]


def test_closures_over_loop_cells_break():
    diff(loop_cells, lambda: (X.clone(),))


def mutable_default(x, acc=[]):  # noqa: B006
    acc.append(len(acc))
    armature.graph_break()
    return x * len(acc), list(acc)


def test_mutable_default_argument_across_break():
    records = []
    for mode in ("eager", "compiled"):
        armature.reset()
        mutable_default.__defaults__[0].clear()
        f = mutable_default if mode == "eager" else armature.compile(mutable_default, backend="eager")
        records.append([snap(f(X.clone())) for _ in range(3)])
    mutable_default.__defaults__[0].clear()
    assert_equal(records[0], records[1])


def locals_after_break(x):
    a = 1
    b = x * 2
    print("x")
    c = "c"
    return sorted(k for k in locals())


def test_locals_call_after_break():
    # the frame is split at print(); the rest (a generator over locals())
    # runs natively in the resume function, whose locals() shows the user's names
    diff(locals_after_break, lambda: (X.clone(),), allow_fallback=True)
    e = explain_fresh(locals_after_break, X.clone())
    assert e.graph_count == dynamo_graph_count(locals_after_break, X.clone()) == 1
    assert e.break_reasons and "print" in str(e.break_reasons[0]), e


def del_cell_var(x):
    v = x + 1

    def g():
        return v  # noqa: F821 - deleted below on purpose

    first = g()
    del v
    armature.graph_break()
    try:
        g()
        ok = True
    except NameError as e:
        ok = str(e)
    return first, ok


def test_deleted_cell_variable_across_break():
    diff(del_cell_var, lambda: (X.clone(),))


# ==========================================================================
# 16. more context manager / exit interplay
# ==========================================================================


class PrintingCM:
    def __init__(self, log, swallow=False):
        self.log = log
        self.swallow = swallow

    def __enter__(self):
        print("enter")
        self.log.append("enter")
        return len(self.log)

    def __exit__(self, typ, val, tb):
        print("exit", typ)
        self.log.append(("exit", typ and typ.__name__))
        return self.swallow


def cm_enter_exit_break(x, log):
    with PrintingCM(log) as n:
        y = x * n
    with PrintingCM(log, swallow=True):
        y = y + 1
        raise KeyError("swallowed")
    return y


def test_cm_enter_exit_break_themselves():
    # print() in __exit__ of a with block entered in a resume function: runs as plain Python
    diff(cm_enter_exit_break, lambda: (X.clone(), []), allow_fallback=True)


def cm_in_loop_continue(xs, log):
    out = []
    for i, v in enumerate(xs):
        with Recorder(log, f"l{i}", swallow=True):
            if i == 1:
                continue
            armature.graph_break()
            if i == 2:
                raise ValueError("swallowed in loop")
            out.append(v)
            if i == 3:
                break
    return out


def test_cm_in_loop_continue_break_swallow():
    diff(cm_in_loop_continue, lambda: ([X, Y, X, Y, X], []))


class RaisingExit:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        return self

    def __exit__(self, typ, val, tb):
        self.log.append(typ and typ.__name__)
        raise RuntimeError("from exit")


def cm_exit_raises(x, log, d):
    try:
        with RaisingExit(log):
            print("in")
            y = d["missing"]
    except RuntimeError as e:
        log.append((str(e), type(e.__context__).__name__))
        y = x
    return y


def test_cm_exit_raises_during_native_exception():
    # 'truth value of <class KeyError>' in __exit__: the resume function runs as plain Python
    diff(cm_exit_raises, lambda: (X.clone(), [], {}), allow_fallback=True)


def no_grad_nested_break(x):
    with torch.no_grad():
        a = x * 2
        armature.graph_break()
        with torch.enable_grad():
            b = x * 3
            print("grad", torch.is_grad_enabled())
        c = x * 4
    d = x * 5
    return a.requires_grad, b.requires_grad, c.requires_grad, d.requires_grad, torch.is_grad_enabled()


def test_no_grad_enable_grad_nested_breaks():
    diff(no_grad_nested_break, lambda: (X.clone().requires_grad_(),))


# ==========================================================================
# 17. descriptors, __setattr__, class attributes, sets
# ==========================================================================


class Tracked:
    count = 0

    def __init__(self):
        object.__setattr__(self, "writes", [])

    def __setattr__(self, k, v):
        self.writes.append(k)
        print("setattr", k)
        object.__setattr__(self, k, v)

    @property
    def doubled(self):
        return self._v * 2

    @doubled.setter
    def doubled(self, v):
        print("prop set")
        self._v = v / 2


def setattr_property_class_attr(x, o):
    o.a = x
    o.doubled = x * 4
    Tracked.count += 1
    armature.graph_break()
    o.b = o.doubled + Tracked.count
    return o.b


def test_custom_setattr_property_and_class_counter():
    def setup():
        Tracked.count = 0
        return X.clone(), Tracked()
    diff(setattr_property_class_attr, setup, extra=lambda s: Tracked.count)
    Tracked.count = 0


def set_mutation(x, s):
    s.add(1)
    s.discard(2)
    armature.graph_break()
    s |= {5, 6}
    s -= {1}
    return x * len(s)


def test_set_mutation_across_break():
    diff(set_mutation, lambda: (X.clone(), {2, 3}))


def dict_changed_during_iteration(x, d):
    for k in d:
        print(k)
        d[k + "x"] = 1
    return x


def test_dict_changed_size_during_iteration():
    diff(dict_changed_during_iteration, lambda: (X.clone(), {"a": 1}), calls=1)


def list_grown_during_iteration(x, lst):
    for v in lst:
        armature.graph_break()
        if len(lst) < 5:
            lst.append(v + 1)
        x = x + v
    return x


def test_list_grown_during_iteration():
    diff(list_grown_during_iteration, lambda: (X.clone(), [1]))


def sorted_key_break(x, lst):
    return sorted(lst, key=lambda v: brk(-v)), x


def test_sorted_key_with_print():
    diff(sorted_key_break, lambda: (X.clone(), [3, 1, 2]), allow_fallback=True)


def map_lambda_break(x, lst):
    return list(map(lambda v: x * brk(v), lst))


def test_map_lambda_with_print():
    diff(map_lambda_break, lambda: (X.clone(), [3, 1, 2]), allow_fallback=True)


# ==========================================================================
# 18. native code observing state recorded during tracing
# ==========================================================================


@armature.disable
def native_observe(obj, lst, d):
    snapshot = (list(lst), dict(d), getattr(obj, "v", None) is not None, len(obj.items))
    lst.append("native")
    d["native"] = len(lst)
    obj.items.append("n")
    return snapshot


def native_sees_pending_effects(x, lst, d):
    b = Box()
    b.v = x * 2
    b.items.append(1)
    lst.append(x.sum())
    d["t"] = 1
    d.pop("gone", None)
    seen = native_observe(b, lst, d)
    lst.append(len(lst))
    d["after"] = d["native"] + 1
    return seen, b.items, b.v


def test_native_call_sees_pending_mutations():
    diff(native_sees_pending_effects, lambda: (X.clone(), [0], {"gone": 1, "keep": 2}))


class Reprs:
    def __init__(self):
        self.n = 0

    def __repr__(self):
        return f"Reprs(n={self.n})"


def print_reads_mutated(x, r):
    r.n += 1
    print(r, [r], {"r": r})
    r.n += 1
    print(f"{r!r}")
    return x * r.n


def test_print_repr_sees_attribute_writes():
    diff(print_reads_mutated, lambda: (X.clone(), Reprs()))


def list_sort_reverse_then_native(x, lst):
    lst.sort()
    lst.reverse()
    lst.insert(1, 100)
    print(lst)
    lst.pop(0)
    return x + lst[0]


def test_list_sort_reverse_then_print():
    diff(list_sort_reverse_then_native, lambda: (X.clone(), [3, 1, 2, 5]))


def dict_reorder_across_break(x, d):
    v = d.pop("a")
    d["a"] = v + 1
    d.update({"b": 9})
    print(list(d))
    d.setdefault("c", 0)
    del d["b"]
    d["b"] = 3
    return list(d.items()), x


def test_dict_order_pop_reinsert_across_break():
    diff(dict_reorder_across_break, lambda: (X.clone(), {"a": 1, "b": 2, "z": 0}))


# ==========================================================================
# 19. tensors mutated in place / views around breaks
# ==========================================================================


def inplace_view_break(x, buf):
    v = x[1:]
    v.mul_(2)
    buf.append(v)
    print("break")
    x[0] = 7
    v.add_(1)
    armature.graph_break()
    return x.clone(), v.sum(), buf[0] is v


def test_inplace_on_view_across_breaks():
    diff(inplace_view_break, lambda: (X.clone(), []))


def item_value_used_as_index_and_key(x, lst, d):
    n = int(x.abs().argmax())
    k = round(x.max().item(), 2)
    d[k] = lst[n]
    lst[n] = x[n] * 2
    for i in range(n + 1):
        lst.append(i)
    return n, k


def test_item_values_as_index_key_and_range():
    xs = [X, Y, -X, torch.tensor([9.0, 0.0, 1.0])]
    diff(item_value_used_as_index_and_key, lambda: ([0, 1, 2], {}),
         args_of=lambda s, i: (xs[i].clone(), s[0], s[1]), calls=4)


def tolist_loop(x):
    out = []
    for v in x.tolist():
        if v > 0:
            print("pos", v)
            out.append(x * v)
        else:
            out.append(v)
    return out


def test_tolist_loop_with_print():
    diff(tolist_loop, lambda: [], args_of=lambda s, i: ((X * (i - 1)).clone(),))


def iterate_tensor_rows_break(m):
    acc = m[0] * 0
    for row in m:
        if row.sum() > 0:
            acc = acc + row
        else:
            armature.graph_break()
            acc = acc - row
    return acc


def test_iterate_tensor_rows_break():
    diff(iterate_tensor_rows_break, lambda: (torch.stack([X, Y, -X, -Y]),))


def module_buffer_inplace(m, x):
    m.running.add_(x)
    m.steps += 1
    print("step")
    m.running.mul_(0.5)
    return m.running.clone() * m.steps


class BufMod(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(3))
        self.steps = 0


def test_module_buffer_inplace_across_break():
    diff(module_buffer_inplace, lambda: (BufMod(), X.clone()))


# ==========================================================================
# 20. more loop / control flow shapes
# ==========================================================================


def while_cond_break(x):
    i = 0
    while brk(i) < 3:
        x = x + i
        i += 1
    return x, i


def test_break_in_while_condition():
    diff(while_cond_break, lambda: (X.clone(),))


def for_else_with_break(xs, target):
    for i, v in enumerate(xs):
        armature.graph_break()
        if (v == target).all():
            res = i
            break
    else:
        res = -1
    return res, i


def test_for_else_break_found_and_not_found():
    xs = [X, Y, X + Y]
    tg = [Y, X - Y, X + Y]
    diff(for_else_with_break, lambda: None, args_of=lambda s, i: ([v.clone() for v in xs], tg[i].clone()))


def continue_in_finally(xs, log):
    out = 0
    for i, v in enumerate(xs):
        try:
            if i == 1:
                raise ValueError("dropped by continue")
            out = out + v
        finally:
            print("fin", i)
            log.append(i)
            continue  # noqa: B012
    return out


def test_continue_in_finally_swallows():
    diff(continue_in_finally, lambda: ([X, Y, X], []))


def raise_in_loop_caught_outside(xs, log):
    try:
        for i, v in enumerate(xs):
            armature.graph_break()
            if i == 2:
                raise StopIteration("manual")
            log.append(i)
    except StopIteration as e:
        log.append(("stop", str(e)))
    return log


def test_stopiteration_raised_in_loop_after_break():
    diff(raise_in_loop_caught_outside, lambda: ([X, Y, X, Y], []))


def gen_raises_stopiteration(n):
    for i in range(n):
        yield i
    raise StopIteration


def consume_bad_gen(x, log):
    try:
        for v in gen_raises_stopiteration(2):
            log.append(v)
            x = x + v
    except RuntimeError as e:
        log.append(str(e))
    print("after")
    return x


def test_generator_raising_stopiteration_becomes_runtimeerror():
    # PEP 479 conversion inside a consumed generator: modelled in the trace
    diff(consume_bad_gen, lambda: (X.clone(), []))


def else_return_after_break(x, log):
    try:
        y = x + 1
        armature.graph_break()
    except ValueError:
        return "except"
    else:
        log.append("else")
        return y * 2
    finally:
        log.append("fin")


def test_try_else_return_with_finally():
    diff(else_return_after_break, lambda: (X.clone(), []))


def class_stmt_in_frame(x):
    class Local:
        k = 3

        def f(self, v):
            return v * self.k

    o = Local()
    armature.graph_break()
    Local.k = 5
    return o.f(x), type(o).__name__


def test_class_statement_inside_frame_break():
    # a class made in the frame live at a break: rebuilt per call and handed
    # to the resume function, which guards it by its class statement (not by
    # identity): no fallback, one entry for every call
    from armature.runtime.wrappers import _RESUME
    diff(class_stmt_in_frame, lambda: (X.clone(),), calls=5)
    resumes = [r for k, r in _RESUME.items() if k[0] is class_stmt_in_frame.__code__]
    assert len(resumes) == 1 and len(armature.cache_entries(resumes[0])) == 1


def exception_made_before_break(x, log):
    err = KeyError("pre-made")
    err.extra = x.sum()
    armature.graph_break()
    try:
        raise err
    except KeyError as e:
        log.append(e is err)
        return e.extra


def test_exception_object_made_before_break_raised_after():
    diff(exception_made_before_break, lambda: (X.clone(), []))


# ==========================================================================
# 21. re-entrancy: native code calling compiled code
# ==========================================================================


def inner_compiled_target(x, log):
    log.append("inner")
    armature.graph_break()
    return x + 1


INNER_C = None


@armature.disable
def native_calls_back(x, log):
    return INNER_C(x, log) if INNER_C is not None else inner_compiled_target(x, log)


def outer_reentrant(x, log):
    log.append("outer")
    y = native_calls_back(x * 2, log)
    log.append("back")
    return y * 3


def test_native_calls_compiled_function_reentrant():
    global INNER_C
    INNER_C = armature.compile(inner_compiled_target, backend="eager")
    try:
        diff(outer_reentrant, lambda: (X.clone(), []))
    finally:
        INNER_C = None


# ==========================================================================
# 22. pending side effects when an exception escapes / is raised late
# ==========================================================================


def effects_then_native_error_escapes(x, lst, o):
    lst.append(x.sum())
    o.items.append("before")
    o.flag = True
    print("p")
    lst.append(2)
    return {}["missing"]


def test_effects_applied_before_native_error_escapes():
    diff(effects_then_native_error_escapes, lambda: (X.clone(), [], Box()))


def effects_then_shape_error(x, z, log):
    log.append("a")
    armature.graph_break()
    log.append("b")
    y = x + z
    log.append("c")
    return y


def test_effects_then_runtime_shape_error_on_later_call():
    zs = [Y, Y * 2, torch.ones(4), Y]
    diff(effects_then_shape_error, lambda: [],
         args_of=lambda s, i: (X.clone(), zs[i].clone(), s), calls=4, exc_match="type")


class Picky:
    def __init__(self):
        object.__setattr__(self, "log", [])

    def __setattr__(self, k, v):
        if isinstance(v, int) and v < 0:
            raise ValueError(f"negative {k}")
        self.log.append((k, v))
        object.__setattr__(self, k, v)


def setattr_raises_conditionally(x, p, n):
    p.a = 1
    try:
        p.b = n
        armature.graph_break()
        p.c = n * 2
    except ValueError as e:
        p.log.append(str(e))
    return x * len(p.log)


def test_custom_setattr_raising_depending_on_input():
    ns = [1, -1, 2, -5]
    diff(setattr_raises_conditionally, lambda: Picky(),
         args_of=lambda s, i: (X.clone(), s, ns[i]), calls=4)


class BadProp:
    def __init__(self):
        self._v = 0
        self.log = []

    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, val):
        self.log.append(val)
        if val > 2:
            raise OverflowError("too big")
        self._v = val


def property_setter_raises(x, o):
    for i in range(5):
        try:
            o.v = i
        except OverflowError as e:
            o.log.append(str(e))
            print("overflow", i)
    return x + o.v


def test_property_setter_raising_in_loop_with_print():
    diff(property_setter_raises, lambda: (X.clone(), BadProp()))


# ==========================================================================
# 23. code-object oddities in resume functions
# ==========================================================================


def posonly_kwonly_varargs(x, /, y=2, *args, k=3, **kw):
    a = x * y
    print("split", len(args), sorted(kw))
    return a + k + sum(args) + sum(kw.values())


def test_posonly_kwonly_varargs_root_frame():
    variants = [((), {}), ((1, 2), {"k": 5}), ((3,), {"z": 4, "k": 1}), ((), {"q": 1})]
    diff(posonly_kwonly_varargs, lambda: None,
         args_of=lambda s, i: (X.clone(), 3) + variants[i][0], kwargs_of=lambda s, i: dict(variants[i][1]),
         calls=4)


def shadow_builtins(x):
    len = lambda v: 42  # noqa: E731, A001
    print = brk  # noqa: A001
    print("shadowed")
    return x + len(x)


def test_shadowed_builtins_across_break():
    diff(shadow_builtins, lambda: (X.clone(),))


INTERNAL_NAME_SRC = """
def f(x):
    {name} = x * 3
    print("names")
    return {name} + 1
"""


@pytest.mark.parametrize("name", ["___f", "___stack0", "___tmp1"])
def test_locals_named_like_armature_internals(name):
    # armature's generated names never meet the user's (names.py;
    # more cases in test_generated_names.py): the frame compiles, split at
    # the print like the same function spelled ordinarily under torch.compile
    # (which itself fails on a local named ___stack0)
    g, plain = {}, {}
    exec(INTERNAL_NAME_SRC.format(name=name), g)
    exec(INTERNAL_NAME_SRC.format(name="plain"), plain)
    diff(g["f"], lambda: (X.clone(),))
    assert graph_count(g["f"], X.clone()) == dynamo_graph_count(plain["f"], X.clone()) == 2


class Mangled:
    def __init__(self):
        self.__secret = 1

    def go(self, x):
        self.__secret += 1
        print("mangled")
        self.__secret *= 2
        return x * self.__secret


def mangled_caller(x, m):
    return m.go(x)


def test_name_mangling_across_break():
    diff(mangled_caller, lambda: (X.clone(), Mangled()))


EXEC_SRC = '''
def exec_fn(x):
    global EG
    EG = EG + 1
    print("exec break")
    EG = EG * 10
    return x + EG
'''


def test_function_with_custom_globals_dict():
    records = []
    for mode in ("eager", "compiled"):
        armature.reset()
        g = {"EG": 1, "armature": armature}
        exec(EXEC_SRC, g)
        fn = g["exec_fn"]
        f = fn if mode == "eager" else armature.compile(fn, backend="eager")
        rec = []
        for _ in range(3):
            r, e, out = _call(f, (X.clone(),), {})
            rec.append((r, e, out, g["EG"]))
        records.append(rec)
    assert_equal([r[:1] + r[2:] for r in records[0]], [r[:1] + r[2:] for r in records[1]])


def long_body_src(n):
    lines = ["def long_fn(x, log):", "    acc = x", "    for i in range(3):"]
    for k in range(n):
        lines.append(f"        acc = acc + {k} * i")
        if k == n // 2:
            lines.append("        print('mid', i)")
            lines.append("        log.append(i)")
    lines.append("    return acc")
    return "\n".join(lines)


def test_long_loop_body_extended_arg_jumps():
    g = {}
    exec(long_body_src(300), g)
    diff(g["long_fn"], lambda: (X.clone(), []), calls=2)


def many_locals_src(n):
    lines = ["def many_fn(x):"]
    for k in range(n):
        lines.append(f"    v{k} = x + {k}" if k % 3 == 0 else f"    v{k} = {k}")
    lines.append("    print('break')")
    lines.append("    return " + " + ".join(f"v{k}" for k in range(n)))
    return "\n".join(lines)


def test_many_locals_over_256_across_break():
    g = {}
    exec(many_locals_src(300), g)
    diff(g["many_fn"], lambda: (X.clone(),), calls=2)


def deep_nesting_src(depth):
    lines = ["def deep_fn(x, log):"]
    ind = "    "
    for k in range(depth):
        if k % 2:
            lines.append(f"{ind}try:")
        else:
            lines.append(f"{ind}with Recorder(log, 'd{k}'):")
        ind += "    "
    lines.append(f"{ind}x = x + 1")
    lines.append(f"{ind}print('deep')")
    lines.append(f"{ind}x = x * 2")
    for k in reversed(range(depth)):
        ind = ind[:-4]
        if k % 2:
            lines.append(f"{ind}finally:")
            lines.append(f"{ind}    log.append('f{k}')")
    lines.append("    return x")
    return "\n".join(lines)


def test_deeply_nested_with_try_finally_break():
    g = {"Recorder": Recorder}
    exec(deep_nesting_src(18), g)
    diff(g["deep_fn"], lambda: (X.clone(), []), calls=2)


def root_closure_factory():
    n = 0
    hist = []

    def step(x):
        nonlocal n
        n += 1
        hist.append(n)
        armature.graph_break()
        n += 10
        return x * n

    return step, hist, lambda: n


def test_root_compiled_closure_writes_nonlocal_across_break():
    records = []
    for mode in ("eager", "compiled"):
        armature.reset()
        step, hist, get = root_closure_factory()
        f = step if mode == "eager" else armature.compile(step, backend="eager")
        records.append([(snap(f(X.clone())), list(hist), get()) for _ in range(3)])
    assert_equal(records[0], records[1])


# ==========================================================================
# 24. iterators / generators passed in as arguments, consumed across calls
# ==========================================================================


def consume_arg_iterator(x, it, log):
    a = next(it)
    log.append(a)
    print("got", a)
    b = next(it, None)
    log.append(b)
    return x * a + (0 if b is None else b)


def test_list_iterator_argument_consumed_across_calls():
    diff(consume_arg_iterator, lambda: (iter([1, 2, 3, 4, 5]), []),
         args_of=lambda s, i: (X.clone(), s[0], s[1]), calls=3)


def test_zip_enumerate_argument_consumed_across_calls():
    diff(consume_arg_iterator, lambda: (map(lambda p: p[0] * p[1], enumerate(zip(range(7), range(7)))), []),
         args_of=lambda s, i: (X.clone(), s[0], s[1]), calls=3)


def gen_source(log):
    for i in range(4):
        log.append(("gen", i))
        yield i + 1


def test_generator_argument_consumed_across_calls():
    def setup():
        log = []
        return gen_source(log), log
    diff(consume_arg_iterator, setup, args_of=lambda s, i: (X.clone(), s[0], s[1]), calls=3)


def consume_dict_iter(x, it):
    k, v = next(it)
    armature.graph_break()
    k2, v2 = next(it)
    return x * v + v2, k + k2


def test_dict_items_iterator_argument():
    diff(consume_dict_iter, lambda: iter({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6}.items()),
         args_of=lambda s, i: (X.clone(), s), calls=3)


# ==========================================================================
# 25. more exception / closure interplay
# ==========================================================================


def exc_var_captured_by_closure(x):
    try:
        raise ValueError("captured")
    except ValueError as e:
        def g():
            return str(e)  # noqa: F821 - e is unbound after the handler
        armature.graph_break()
        msg = g()
    try:
        g()
        still = True
    except NameError:
        still = False
    return x, msg, still


def test_exception_target_captured_by_closure():
    diff(exc_var_captured_by_closure, lambda: (X.clone(),))


def callee_with_cm_breaks(x, log, d):
    with Recorder(log, "callee"):
        y = x + 1
        print("callee")
        return y * d["k"]


def caller_catches_callee_error(x, log, d):
    try:
        y = callee_with_cm_breaks(x, log, d)
    except KeyError as e:
        log.append(("caller caught", str(e)))
        y = x
    return y


def test_inlined_callee_with_cm_raises_to_caller_handler():
    ds = [{}, {"k": 2}, {}]
    diff(caller_catches_callee_error, lambda: [],
         args_of=lambda s, i: (X.clone(), s, dict(ds[i])), calls=3)


@armature.compile(backend="eager")
def compiled_fact(x, n):
    if n <= 1:
        print("base")
        return x
    return compiled_fact(x, n - 1) * n


def eager_fact(x, n):
    if n <= 1:
        print("base")
        return x
    return eager_fact(x, n - 1) * n


def test_decorated_recursive_function_with_print():
    for n in (1, 3, 5):
        e = _call(eager_fact, (X.clone(), n), {})
        c = _call(compiled_fact, (X.clone(), n), {})
        assert_equal(e[0], c[0])
        assert e[2] == c[2]


class Lazy:
    def __init__(self):
        self.loaded = 0

    def __getattr__(self, name):
        if name.startswith("w"):
            self.loaded += 1
            print("lazy", name)
            val = torch.full((3,), float(len(name)))
            setattr(self, name, val)
            return val
        raise AttributeError(name)


def getattr_fallback_break(x, o):
    a = x + o.w1
    b = a * o.weight
    c = b + o.w1
    try:
        o.missing
    except AttributeError as e:
        c = c - len(str(e))
    return c, o.loaded


def test_getattr_fallback_with_print_caches_attr():
    diff(getattr_fallback_break, lambda: (X.clone(), Lazy()))


def arg_types_change(x, c):
    total = x * 0
    for v in c:
        armature.graph_break()
        total = total + (c[v] if isinstance(c, dict) else v)
    return total, type(c).__name__


def test_argument_container_type_changes_between_calls():
    cs = [[1, 2], (3, 4, 5), {"a": 1.5}, [X], (), {}]
    diff(arg_types_change, lambda: None,
         args_of=lambda s, i: (X.clone(), cs[i]), calls=6)


def compiled_generator_fn(x, n):
    for i in range(n):
        print("yield", i)
        yield x * i


def test_compiling_a_generator_function():
    records = []
    for mode in ("eager", "compiled"):
        armature.reset()
        f = compiled_generator_fn if mode == "eager" else armature.compile(compiled_generator_fn, backend="eager")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            vals = list(f(X.clone(), 3))
        records.append((snap(vals), out.getvalue()))
    assert_equal(records[0], records[1])


# ==========================================================================
# 26. iterators over frame-local containers mutated after the break
# ==========================================================================


def local_list_iter_mutated_after_break(x):
    lst = [1, 2, 3]
    it = iter(lst)
    next(it)
    print("break")
    lst.append(9)
    return list(it), x


def test_iterator_over_local_list_sees_append_after_break():
    diff(local_list_iter_mutated_after_break, lambda: (X.clone(),))


def arg_list_iter_mutated_after_break(x, lst):
    it = iter(lst)
    next(it)
    print("break")
    lst.append(9)
    return list(it), x


def test_iterator_over_argument_list_sees_append_after_break():
    diff(arg_list_iter_mutated_after_break, lambda: (X.clone(), [1, 2, 3]))


def unbound_local_message(x, flag):
    if flag:
        a = x + 1
    print("break")
    try:
        return a * 2
    except UnboundLocalError as e:
        return str(e)


def test_unbound_local_error_message():
    diff(unbound_local_message, lambda: None, args_of=lambda s, i: (X.clone(), i == 1))
