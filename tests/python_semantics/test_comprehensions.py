"""Comprehensions, generator expressions and generator functions inside
compiled frames (compiled vs eager): list/dict/set comprehensions (nested,
with conditions, over tensors and Python values), generator expressions
consumed by sum/any/all/min/max/tuple/dict/join, and generator functions
(``yield``, ``yield from``) consumed by for, list, sum, next, zip and
unpacking.
"""

import pytest
import torch

from helpers import CASE_ARGS, USING_TORCH, case, t
from python_semantics.support import run_case

# --------------------------------------------------------------------------
# generator functions (module level and nested)
# --------------------------------------------------------------------------


def count_up(n):
    for i in range(n):
        yield i


def scaled_tensors(x, n):
    for i in range(n):
        yield x * i


def pairs(xs):
    prev = None
    for v in xs:
        if prev is not None:
            yield prev, v
        prev = v


def delegating(n):
    yield "start"
    yield from count_up(n)
    yield "end"


def with_return_value():
    yield 1
    yield 2
    return "done"


def early_stop(xs):
    for v in xs:
        if v > 2:
            return
        yield v


def infinite():
    i = 0
    while True:
        yield i
        i += 1


# --------------------------------------------------------------------------
# list comprehensions
# --------------------------------------------------------------------------


def listcomp_basic(x):
    return [x * i for i in range(4)]


def listcomp_condition(x):
    return [x + i for i in range(6) if i % 2 == 0]


def listcomp_ifelse_expression(x):
    return [x if i % 2 else -x for i in range(3)]


def listcomp_nested_loops(x):
    return [(i, j) for i in range(3) for j in range(i)], x + 1


def listcomp_nested_comprehension(x):
    grid = [[i * j for j in range(3)] for i in range(3)]
    return x * grid[2][2], grid


def listcomp_over_tensors(xs):
    return [v.relu() + 1 for v in xs if v.shape[0] > 1]


def listcomp_over_dict_items(x):
    d = {"a": 1, "b": 2, "c": 3}
    return [k * v for k, v in d.items() if v != 2], x * 2


def listcomp_captures_frame_vars(x):
    scale = 3
    offsets = [1, 2]
    return [x * scale + o for o in offsets]


def listcomp_with_enumerate_zip(xs, ys):
    return [a * b + i for i, (a, b) in enumerate(zip(xs, ys))]


def listcomp_calls_function(x):
    def sq(v):
        return v * v

    return [sq(x + i) for i in range(3)]


def listcomp_variable_does_not_leak(x):
    i = 100
    _ = [i for i in range(3)]
    return x + i


def listcomp_walrus(x):
    vals = [y for i in range(5) if (y := i * i) > 3]
    return x * y, vals


def listcomp_string_ops(x):
    words = ["Conv", "bn", "RELU"]
    return x + 1, [w.lower() for w in words if len(w) > 2], [c for c in "abc"]


def listcomp_shape_dims(x):
    return [x.shape[d] for d in range(x.dim())], [x.sum(d) for d in range(x.dim())]


# --------------------------------------------------------------------------
# dict and set comprehensions
# --------------------------------------------------------------------------


def dictcomp_basic(x):
    return {f"k{i}": x * i for i in range(3)}


def dictcomp_condition_and_swap(x):
    d = {"a": 1, "b": 2, "c": 3}
    return {v: k for k, v in d.items() if v > 1}, x + 1


def dictcomp_from_zip(xs):
    names = ["first", "second"]
    return {n: v.sum() for n, v in zip(names, xs)}


def dictcomp_nested(x):
    return {i: {j: i * j for j in range(2)} for i in range(2)}, x * 2


def dictcomp_over_tensor_dict(d):
    return {k: v * 2 for k, v in d.items()}


def setcomp_basic(x):
    s = {i % 3 for i in range(10)}
    return x + len(s), sorted(s)


def setcomp_of_shapes(xs):
    shapes = {tuple(v.shape) for v in xs}
    return len(shapes), xs[0] + 1


# --------------------------------------------------------------------------
# generator expressions
# --------------------------------------------------------------------------


def genexp_sum(x):
    return sum(x * i for i in range(4))


def genexp_any_all(x):
    vals = [1, 3, 5]
    return x + 1, any(v > 4 for v in vals), all(v % 2 for v in vals), any(v > 9 for v in vals)


def genexp_min_max(x):
    words = ["aa", "b", "cccc"]
    return x * 2, min(len(w) for w in words), max(len(w) for w in words)


def genexp_tuple_dict_join(x):
    return x, tuple(i * 2 for i in range(3)), dict((str(i), i) for i in range(2)), "-".join(str(i) for i in range(3))


def genexp_over_tensors(xs):
    return sum(v.sum() for v in xs), torch.stack(tuple(v * 2 for v in xs))


def genexp_next(x):
    g = (i for i in range(10) if i > 3)
    return x * next(g), next(g), next(g, None)


def genexp_nested(x):
    return sum(i * j for i in range(3) for j in range(3) if i != j) * x


def genexp_sorted(x):
    return x + 1, sorted((v for v in [3, 1, 2]), reverse=True)


def genexp_to_list(x):
    g = (x + i for i in range(2))
    return list(g)


# --------------------------------------------------------------------------
# generator functions consumed in the frame
# --------------------------------------------------------------------------


def gen_for_loop(x):
    out = x
    for i in count_up(4):
        out = out + i
    return out


def gen_list_and_sum(x):
    return x * sum(count_up(5)), list(count_up(3))


def gen_yielding_tensors(x):
    return list(scaled_tensors(x, 3)), sum(scaled_tensors(x, 4))


def gen_next_manual(x):
    g = count_up(3)
    a = next(g)
    b = next(g)
    c = next(g)
    d = next(g, "exhausted")
    return x + a + b + c, d


def gen_stop_iteration_caught(x):
    g = count_up(1)
    next(g)
    try:
        next(g)
        ok = False
    except StopIteration:
        ok = True
    return x, ok


def gen_pairs(xs):
    return [a - b for a, b in pairs(xs)]


def gen_nested_in_frame(x):
    def evens(n):
        for i in range(n):
            if i % 2 == 0:
                yield x * i

    return list(evens(5))


def gen_closure_state(x):
    log = []

    def gen():
        for i in range(3):
            log.append(i)
            yield i

    total = sum(gen())
    return x * total, log


def gen_yield_from(x):
    return list(delegating(3)), x + 1


def gen_return_value_stops(x):
    return list(with_return_value()), x * 2


def gen_early_return(x):
    return list(early_stop([1, 2, 3, 1])), x + 1


def gen_infinite_with_zip(x):
    return [v * i for v, i in zip([x, x, x], infinite())]


def gen_infinite_break(x):
    for i in infinite():
        if i == 3:
            break
        x = x + i
    return x


def gen_unpacking(x):
    a, b, c = count_up(3)
    first, *rest = count_up(4)
    return x * (a + b + c), first, rest


def gen_enumerate_generator(x):
    return [(i, v) for i, v in enumerate(count_up(3), start=1)], x - 1


def gen_send_value(x):
    def accumulator():
        total = 0
        while True:
            v = yield total
            total += v

    g = accumulator()
    next(g)
    g.send(2)
    r = g.send(5)
    return x * r


def gen_expression_in_genfunc(x):
    def gen():
        yield from (x * i for i in range(3))

    return list(gen())


def gen_send_yield_from(x):
    # send() through `yield from` reaches the inner generator
    def inner():
        a = yield 1
        b = yield a * 2
        return a + b

    def outer():
        r = yield from inner()
        yield r

    g = outer()
    first = next(g)
    s1 = g.send(3)
    s2 = g.send(4)
    return x * s2, first, s1


def gen_send_stop_value(x):
    def gen():
        v = yield 1
        return v * 2

    g = gen()
    next(g)
    try:
        g.send(5)
        out = None
    except StopIteration as e:
        out = e.value
    try:
        g.send(1)
        again = "no"
    except StopIteration as e:
        again = e.value
    return x + out, again


def gen_send_tensor(x):
    def running_sum():
        acc = x * 0
        while True:
            v = yield acc
            acc = acc + v

    g = running_sum()
    next(g)
    g.send(x)
    return g.send(x * 2)


def gen_send_not_started(x):
    def gen():
        yield 1

    try:
        gen().send(1)
        msg = None
    except TypeError as e:
        msg = str(e)
    return x + 1, msg


def gen_throw_handled(x):
    def gen():
        try:
            yield 1
        except ValueError as e:
            yield len(str(e)) * 10

    g = gen()
    next(g)
    return x + g.throw(ValueError("abc")), next(g, "finished")


def gen_throw_unhandled(x):
    def gen():
        yield 1
        yield 2

    g = gen()
    next(g)
    try:
        g.throw(KeyError("k"))
        msg = None
    except KeyError as e:
        msg = str(e)
    return x + 1, msg, next(g, "finished")


def gen_throw_class_runs_finally(x):
    log = []

    def gen():
        try:
            yield 1
        finally:
            log.append("cleanup")

    g = gen()
    next(g)
    try:
        g.throw(ValueError)
    except ValueError:
        log.append("caught")
    return x + len(log), log


def gen_close_runs_finally(x):
    log = []

    def gen():
        try:
            yield 1
            yield 2
        finally:
            log.append("closed")

    g = gen()
    next(g)
    r = g.close()
    g.close()
    unstarted = gen()
    unstarted.close()
    return x + 1, log, r, next(g, "done"), next(unstarted, "never ran")


def gen_close_ignored(x):
    def gen():
        try:
            yield 1
        except GeneratorExit:
            yield 2
        yield 3

    g = gen()
    next(g)
    try:
        g.close()
        msg = None
    except RuntimeError as e:
        msg = str(e)
    return x + 1, msg, next(g), next(g, "end")


def gen_left_paused_in_finally(x):
    # freeing g (as the frame returns) closes it: its finally runs then
    log = []

    def gen():
        try:
            yield 1
        finally:
            log.append("finally")

    g = gen()
    next(g)
    return x + 1, log


def gen_left_paused_outside_try(x):
    log = []

    def gen():
        log.append("start")
        yield 1
        log.append("never")

    g = gen()
    next(g)
    return x + 1, log


# --------------------------------------------------------------------------
# case table
# --------------------------------------------------------------------------

X = t(4)
XS = [t(3), t(3), t(3)]
#: torch.compile (2.13) gives up on these frames or answers differently from
#: eager (the exception messages of send/throw/close): the corpus is checked
#: against eager, so they run for armature only
TORCH_DIFFERS = pytest.mark.skipif(USING_TORCH, reason="torch.compile differs from eager on generator.send/throw/close here")

CASES = [
    # list comprehensions
    case(listcomp_basic, X),
    case(listcomp_condition, X),
    case(listcomp_ifelse_expression, X),
    case(listcomp_nested_loops, X),
    case(listcomp_nested_comprehension, X),
    case(listcomp_over_tensors, [t(3), t(1), t(2)]),
    case(listcomp_over_dict_items, X),
    case(listcomp_captures_frame_vars, X),
    case(listcomp_with_enumerate_zip, XS, [t(3), t(3), t(3)]),
    case(listcomp_calls_function, X),
    case(listcomp_variable_does_not_leak, X),
    case(listcomp_walrus, X),
    case(listcomp_string_ops, X),
    case(listcomp_shape_dims, t(2, 3)),
    # dict / set comprehensions
    case(dictcomp_basic, X),
    case(dictcomp_condition_and_swap, X),
    case(dictcomp_from_zip, [t(2), t(2)]),
    case(dictcomp_nested, X),
    case(dictcomp_over_tensor_dict, {"a": t(2), "b": t(3)}),
    case(setcomp_basic, X),
    case(setcomp_of_shapes, [t(2), t(3), t(2)]),
    # generator expressions
    case(genexp_sum, X),
    case(genexp_any_all, X),
    case(genexp_min_max, X),
    case(genexp_tuple_dict_join, X, graphs=0),
    case(genexp_over_tensors, XS),
    case(genexp_next, X),
    case(genexp_nested, X),
    case(genexp_sorted, X),
    case(genexp_to_list, X),
    # generator functions
    case(gen_for_loop, X),
    case(gen_list_and_sum, X),
    case(gen_yielding_tensors, X),
    case(gen_next_manual, X),
    case(gen_stop_iteration_caught, X, graphs=0),
    case(gen_pairs, XS),
    case(gen_nested_in_frame, X),
    case(gen_closure_state, X),
    case(gen_yield_from, X),
    case(gen_return_value_stops, X),
    case(gen_early_return, X),
    case(gen_infinite_with_zip, X),
    case(gen_infinite_break, X),
    case(gen_unpacking, X),
    case(gen_enumerate_generator, X),
    case(gen_send_value, X),
    case(gen_expression_in_genfunc, X),
    case(gen_send_yield_from, X, marks=TORCH_DIFFERS),
    case(gen_send_stop_value, X, marks=TORCH_DIFFERS),
    case(gen_send_tensor, X),
    case(gen_send_not_started, X, marks=TORCH_DIFFERS),
    case(gen_throw_handled, X, marks=TORCH_DIFFERS),
    case(gen_throw_unhandled, X, marks=TORCH_DIFFERS),
    case(gen_throw_class_runs_finally, X),
    case(gen_close_runs_finally, X),
    case(gen_close_ignored, X, marks=TORCH_DIFFERS),
    # (the frame runs as Python: where eager frees g is not modelled)
    case(gen_left_paused_in_finally, X, fullgraph=False, graphs=0, marks=TORCH_DIFFERS),
    case(gen_left_paused_outside_try, X),
]


@pytest.mark.parametrize(CASE_ARGS, CASES)
def test_comprehensions_and_generators(fn, args, opts):
    run_case(fn, args, opts, default_graphs=1)


def gen_raises_inside(x):
    def gen():
        yield 1
        raise KeyError("from generator")

    return list(gen())


def genexp_raises(x):
    return [10 // v for v in (1, 0)]


def gen_next_exhausted(x):
    g = count_up(0)
    return next(g)


RAISES = [
    case(gen_raises_inside, X),
    case(genexp_raises, X),
    case(gen_next_exhausted, X),
]


@pytest.mark.parametrize(CASE_ARGS, RAISES)
def test_comprehensions_raise_like_eager(fn, args, opts):
    run_case(fn, args, opts, raises=True)
