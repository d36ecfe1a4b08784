"""Generators made in the frame and still running at a graph break (or at
the return): the frame is split where the generator is made, instead of
running entirely as Python (values/functions/generator_breaks.py).  The generator is
then a real one; each step of it is a graph break whose instruction runs
natively, and the code around it compiles.

Each case runs eagerly and compiled on independent states, several calls,
and compares the results, the printed output and the log the generator
body and the frame write into (so the order of the generator's side
effects against the frame's is eager's).  Graph counts are pinned, checked
not to grow with more calls, and compared with torch.compile's over the
same calls.  PEP 479 (StopIteration leaving a generator becomes a
RuntimeError) is modelled in the trace.
"""
from __future__ import annotations

import contextlib
import io
import sys
import types

import pytest
import torch

import armature
from helpers import USING_TORCH, CountingBackend, assert_equal

from .util import FALLBACK_LOGGER, collect_log

pytestmark = [pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself"),
              pytest.mark.usefixtures("split_loop_breaks")]

#: 3.11 runs a comprehension as a function of its own (3.12+ inlines it)
COMPREHENSION_FUNCTIONS = sys.version_info < (3, 12)
X = torch.tensor([1.0, -2.0, 3.0])
Y = torch.tensor([0.5, 4.0, -1.0])


# --- generators used by the cases -------------------------------------------


def gen_printing(xs):
    for a in xs:
        print("gen", a.shape)
        yield a * 2


def gen_logging(xs, log):
    for i, a in enumerate(xs):
        log.append(("yield", i))
        yield a + i
    log.append("gen done")


def make_gen(xs, log):
    log.append("make")
    return gen_logging(xs, log)


def bad_gen(n):
    for i in range(n):
        yield i
    raise StopIteration("stop")


def gen_with_finally(xs, log):
    try:
        for a in xs:
            yield a * 2
    finally:
        log.append("gen finally")


# --- the cases ----------------------------------------------------------------


def listcomp_over_printing_gen(xs, y):
    # (no closure in the comprehension: a function made per call that
    # closes over the frame's cells is guarded by identity in the resume
    # function, a recompile per call; that is not about generators)
    z = y.cos()
    return [v + 1 for v in gen_printing(xs)], z.sin()


def genexpr_partly_consumed(xs, log):
    y = xs[0].sin()
    g = (a * 3 for a in xs)
    first = next(g)
    print("break")
    second = next(g)
    log.append("mid")
    rest = list(g)
    return y + first, second, rest


def coroutine_send(x, log):
    def acc():
        total = x * 0
        while True:
            v = yield total
            log.append("got")
            if v is None:
                return
            total = total + v

    log.append("frame start")
    c = acc()
    next(c)
    a = c.send(x)
    print("between")
    log.append("frame mid")
    b = c.send(x * 2)
    return a.relu(), b.relu()


def generator_function_across_print(xs, log):
    y = xs[0] * 2
    g = gen_logging(xs, log)
    log.append("made")
    a = next(g)
    print("b")
    log.append("after print")
    b = next(g)
    return y + a + b


def returns_live_generator(xs, log):
    y = xs[0] * 2
    g = gen_logging(xs, log)
    log.append("made")
    next(g)
    return g, y.cos()


def helper_made_generator(xs, log):
    g = make_gen(xs, log)
    a = next(g)
    print("b")
    return a.exp() + next(g)


def generators_in_loop(xs, log):
    out = []
    for a in xs:
        g = (a * k for k in range(3))
        out.append(next(g).sin())
        print("it")
        out.append(next(g).cos())
    return out


def nested_generators(xs, log):
    inner = gen_logging(xs, log)
    outer = (v + 1 for v in inner)
    a = next(outer)
    print("x")
    b = next(outer)
    return a * b, list(inner)


def generator_stored_in_argument(xs, holder, log):
    holder.clear()
    holder.append(gen_logging(xs, log))
    print("x")
    return next(holder[0]).tanh()


def cell_written_after_creation(x, log):
    # the generator and the frame share k: writes on both sides, in eager's order
    k = 1

    def gen():
        nonlocal k
        yield x * k
        k = 10
        log.append(k)
        yield x + k

    g = gen()
    k = 2
    a = next(g)
    print("p")
    b = next(g)
    log.append(k)
    return a, b, k


def dict_written_after_creation(x, st):
    def gen():
        yield x * st["c"]
        st["c"] += 5
        yield x + st["c"]

    g = gen()
    st["c"] += 1
    a = next(g)
    print("p")
    st["c"] *= 2
    b = next(g)
    return a, b


def genexpr_over_list_grown(x, log):
    xs = [x, x * 2]
    g = (v * 3 for v in xs)
    xs.append(x * 4)
    a = next(g)
    print("p")
    xs.append(x * 5)
    return a, list(g), len(xs)


def enumerate_generator_with_print(xs, log):
    out = []
    for i, v in enumerate(gen_logging(xs, log)):
        print(i)
        out.append(v * i)
    return out


def zip_generator_with_print(xs, log):
    out = []
    for a, b in zip(gen_logging(xs, log), xs):
        print("z")
        out.append(a * b)
    return out


def yield_from_across_print(xs, log):
    def outer():
        yield from gen_logging(xs, log)

    g = outer()
    a = next(g)
    print("p")
    return a, list(g)


def send_to_generator_passed_in(g, x):
    y = x + 1
    a = next(g)
    y = y * a
    b = g.send(None)
    return y + b


def pep479_caught(x):
    try:
        for v in bad_gen(2):
            x = x + v
    except RuntimeError as e:
        return (x, str(e), type(e.__cause__).__name__, str(e.__cause__), e.__suppress_context__,
                e.__context__ is e.__cause__)
    return x


def pep479_genexpr(x):
    it = iter([x, x * 2])
    try:
        return list(next(it) for _ in range(3))
    except RuntimeError as e:
        return x.sum(), str(e), type(e.__cause__).__name__


def pep479_uncaught(x):
    return [v + x for v in bad_gen(1)]


def pep479_then_print(x, log):
    try:
        for v in bad_gen(2):
            log.append(v)
            x = x + v
    except RuntimeError as e:
        log.append(str(e))
    print("after")
    return x


def stop_async_iteration_not_converted(x):
    def g():
        yield 1
        raise StopAsyncIteration("async stop")

    try:
        return list(g())
    except StopAsyncIteration as e:   # (only async generators convert it)
        return x + 1, str(e)


def finally_generator_across_print(xs, log):
    g = gen_with_finally(xs, log)
    a = next(g)
    print("x")
    g = None
    log.append("after drop")
    return a


# --- the harness -------------------------------------------------------------


def _snap(v):
    if isinstance(v, types.GeneratorType):
        return ("generator", [_snap(i) for i in v])   # (consumed: its side effects are compared too)
    if isinstance(v, (list, tuple)):
        return type(v)(_snap(i) for i in v)
    if isinstance(v, torch.Tensor):
        return v.clone()
    return v


def _run(fn, make_args, calls):
    args = make_args()
    out = io.StringIO()
    results = []
    with contextlib.redirect_stdout(out):
        for _ in range(calls):
            try:
                results.append(("ok", _snap(fn(*args))))
            except Exception as e:  # noqa: BLE001 - compared with eager
                results.append(("raised", type(e), str(e)))
    shown = [a for a in args if not isinstance(a, types.GeneratorType)]
    return results, out.getvalue(), _snap(shown)


def differential(fn, make_args, *, graphs, calls=3, fallback=False, fullgraph=False):
    """Eager vs armature over ``calls`` calls: results, printed output and
    the arguments afterwards (the logs) equal; exactly ``graphs`` graphs;
    no frame run as Python unless ``fallback``.  Returns torch.compile's
    graph count over the same calls (the oracle)."""
    expected = _run(fn, make_args, calls)
    armature.reset()
    counter = CountingBackend("eager")
    with collect_log(FALLBACK_LOGGER) as fallbacks:
        got = _run(armature.compile(fn, backend=counter, fullgraph=fullgraph), make_args, calls)
    assert_equal(expected[0], got[0], "results")
    assert expected[1] == got[1], f"printed {got[1]!r}, eager printed {expected[1]!r}"
    assert_equal(expected[2], got[2], "arguments after the calls")
    if fallback:
        assert fallbacks, "expected the frame to run as Python"
    else:
        assert not fallbacks, f"a frame ran as Python: {fallbacks}"
    assert counter.frame_count == graphs, \
        f"captured {counter.frame_count} graphs, expected {graphs}:\n" + "\n".join(g.code for g in counter.graphs)
    tc = CountingBackend("eager")
    torch._dynamo.reset()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            _run(torch.compile(fn, backend=tc, fullgraph=fullgraph), make_args, calls)
    finally:
        torch._dynamo.reset()
    return tc.frame_count


def _xs():
    return [X.clone(), Y.clone(), X + Y]


# (case, make_args, armature's graphs over 3 calls and over 6).  torch.compile
# 2.13 runs most of these frames entirely as Python (a generator live at a
# break: 0 graphs); helper_made_generator and pep479_then_print it compiles
# once per call (3 graphs over 3 calls), send_to_generator_passed_in 3.
SPLIT_CASES = [
    # the generator's body (and, on 3.11, the comprehension: a function of
    # its own) runs natively; the frame's own work compiles
    # (3.12+: the comprehension is inlined, its `v + 1` compiles between the steps)
    pytest.param(listcomp_over_printing_gen, lambda: (_xs(), Y.clone()), 2 if COMPREHENSION_FUNCTIONS else 4,
                 id="listcomp_over_printing_gen"),
    pytest.param(genexpr_partly_consumed, lambda: (_xs(), []), 2, id="genexpr_partly_consumed"),
    pytest.param(coroutine_send, lambda: (X.clone(), []), 2, id="coroutine_send"),
    pytest.param(generator_function_across_print, lambda: (_xs(), []), 2, id="generator_function_across_print"),
    pytest.param(returns_live_generator, lambda: (_xs(), []), 2, id="returns_live_generator"),
    pytest.param(helper_made_generator, lambda: (_xs(), []), 2, id="helper_made_generator"),
    pytest.param(generators_in_loop, lambda: (_xs(), []), 2, id="generators_in_loop"),
    pytest.param(nested_generators, lambda: (_xs(), []), 1, id="nested_generators"),
    pytest.param(generator_stored_in_argument, lambda: (_xs(), [], []), 1, id="generator_stored_in_argument"),
    pytest.param(send_to_generator_passed_in, lambda: (gen_logging(_xs(), []), X.clone()), 3,
                 id="send_to_generator_passed_in"),
    pytest.param(pep479_then_print, lambda: (X.clone(), []), 1, id="pep479_then_print"),
    # state the frame and the generator's body both write (the body's work runs natively)
    pytest.param(cell_written_after_creation, lambda: (X.clone(), []), 0, id="cell_written_after_creation"),
    pytest.param(dict_written_after_creation, lambda: (X.clone(), {"c": 0}), 0, id="dict_written_after_creation"),
    pytest.param(genexpr_over_list_grown, lambda: (X.clone(), []), 3, id="genexpr_over_list_grown"),
    # a generator inside enumerate/zip made in the frame: their rebuild needs it
    pytest.param(enumerate_generator_with_print, lambda: (_xs(), []), 2, id="enumerate_generator_with_print"),
    pytest.param(zip_generator_with_print, lambda: (_xs(), []), 1, id="zip_generator_with_print"),
]


@pytest.mark.parametrize("fn,make_args,graphs", SPLIT_CASES)
def test_split_where_the_generator_is_made(fn, make_args, graphs):
    torch_graphs = differential(fn, make_args, graphs=graphs)
    if torch_graphs:
        assert graphs >= 1, f"torch.compile captured {torch_graphs} graphs, armature none"
    # more calls reuse the same graphs (a new generator on every call is
    # guarded by type, not identity)
    differential(fn, make_args, graphs=graphs, calls=6)


def test_pep479_modelled_fullgraph():
    """StopIteration leaving a generator is raised to the consumer as
    RuntimeError("generator raised StopIteration") from it; caught in the
    trace, the whole function is one graph."""
    differential(pep479_caught, lambda: (X.clone(),), graphs=1, fullgraph=True)
    differential(pep479_genexpr, lambda: (X.clone(),), graphs=1, fullgraph=True)
    differential(stop_async_iteration_not_converted, lambda: (X.clone(),), graphs=1, fullgraph=True)


def test_pep479_uncaught_raises_eagers_error():
    # (3.12+: the inlined comprehension's first `v + x` is a graph before the raise)
    differential(pep479_uncaught, lambda: (X.clone(),), graphs=0 if COMPREHENSION_FUNCTIONS else 1)


def test_generator_with_cleanup_across_break_runs_as_python():
    """Freeing a generator paused inside try/finally runs its finally; the
    resume functions would hold the native generator a little longer than
    eager's frame (after ``g = None``), so the frame runs as Python."""
    differential(finally_generator_across_print, lambda: (_xs(), []), graphs=0, fallback=True)
    # (closing a generator paused in `yield from` closes the inner one)
    differential(yield_from_across_print, lambda: (_xs(), []), graphs=0, fallback=True)


def test_break_log_names_the_move():
    armature.reset()
    with collect_log(FALLBACK_LOGGER) as fallbacks, contextlib.redirect_stdout(io.StringIO()):
        explained = armature.explain(generator_function_across_print)(_xs(), [])
    assert not fallbacks
    reasons = [str(b.reason) for b in explained.break_reasons]
    assert any("split earlier, where the generator gen_logging is made" in r and "print" in r for r in reasons), \
        reasons


def test_fullgraph_returned_generator_names_it():
    f = armature.compile(returns_live_generator, backend="eager", fullgraph=True)
    with pytest.raises(armature.Unsupported) as info:
        f(_xs(), [])
    text = str(info.value)
    assert "the generator gen_logging is still running" in text
    assert "test_generators_across_breaks.py" in text and "g = gen_logging(xs, log)" in text


def test_fullgraph_break_with_live_generator_names_the_break():
    f = armature.compile(generator_function_across_print, backend="eager", fullgraph=True)
    with pytest.raises(armature.Unsupported) as info, contextlib.redirect_stdout(io.StringIO()):
        f(_xs(), [])
    assert "print" in str(info.value)
