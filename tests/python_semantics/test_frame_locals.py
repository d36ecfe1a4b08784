"""``locals()``, ``vars()`` and ``dir()`` without arguments: traced as the
user's variables (values/frame_locals.py), also in resume functions, where
they run natively through runtime/frame_view.py, so a frame that calls them
is split at a graph break like any other.

Each case runs eagerly and compiled on fresh inputs (three calls: the
second and third hit the caches), comparing results, printed output and
mutated inputs; no frame may run entirely as Python unless the case says
so; graph counts are compared with torch.compile's.
"""
from __future__ import annotations

import contextlib
import io

import pytest
import torch

import armature
from graph_breaks.util import FALLBACK_LOGGER, collect_log
from helpers import CountingBackend, assert_equal, dynamo_graph_count

X = torch.arange(3.0)


def _run(fn, make_args, *, fullgraph=False, calls=3):
    records, fallbacks = [], None
    counter = CountingBackend("eager")
    for mode in ("eager", "compiled"):
        armature.reset()
        f = fn if mode == "eager" else armature.compile(fn, backend=counter, fullgraph=fullgraph)
        rec = []
        with collect_log(FALLBACK_LOGGER) as logged:
            for _ in range(calls):
                args = make_args()
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    result = f(*args)
                rec.append((result, out.getvalue(), args))
        if mode == "compiled":
            fallbacks = logged
        records.append(rec)
    for i, (e, c) in enumerate(zip(*records), start=1):
        assert_equal(e[0], c[0], f"call #{i} result")
        assert e[1] == c[1], f"call #{i} printed {c[1]!r}, eager {e[1]!r}"
        assert_equal(e[2], c[2], f"call #{i} inputs")
    return counter, fallbacks


# --- cases ---------------------------------------------------------------

def plain(x):
    y = x + 1
    d = locals()
    return [k for k in d], d["y"] * 2, len(d)


def vars_and_dir(x):
    y = x * 3
    v = vars()
    names = dir()
    return [k for k in v], names, v["y"] + 1


def after_break(x):
    a = 1
    b = x * 2
    print("x")
    c = "c"
    return sorted(k for k in locals()), b + a, c


def after_graph_break(x):
    y = x + 1
    armature.graph_break()
    z = y * 2
    d = locals()
    return [k for k in d], d["z"] + d["y"]


def in_loop_with_break(x):
    out = []
    for i in range(3):
        x = x + i
        armature.graph_break()
        out.append([k for k in locals()])
    return x, out


def _callee(a):
    b = a * 2
    return locals()


def in_inlined_callee(x):
    d = _callee(x + 1)
    return [k for k in d], d["b"] - d["a"]


def in_comprehension(x):
    # 3.11: the comprehension's own locals (".0", "i"); 3.13: the function's too (PEP 709)
    y = x * 2
    names = [[k for k in locals()] for i in range(2)]
    return names, y


def with_cells(x):
    v = x + 1

    def g():
        return v * 2

    armature.graph_break()
    d = locals()
    return [k for k in d], d["v"] + 1, g()


def cell_unbound_then_bound(x):
    def g():
        return w

    before = [k for k in locals()]
    armature.graph_break()
    w = x * 5
    return before, [k for k in locals()], g()


def mutation_does_not_change_locals(x):
    y = x + 1
    d = locals()
    d["y"] = 100
    d["extra"] = 1
    again = locals()
    # 3.11: the same dict, updated (y back to the tensor, "extra" kept);
    # 3.13: a new snapshot
    return y, again["y"] + 0, "extra" in again, again is d


def mutation_across_break(x):
    y = x + 1
    d = locals()
    d["extra"] = 2
    armature.graph_break()
    z = y * 2
    e = locals()
    return "extra" in e, e is d, e["z"] + 0, [k for k in e if k not in ("d", "e")]


def native_rest_with_cells(x):
    v = x * 2

    def g():
        return v

    print("break")
    # (the generator keeps running over the rest of the frame: the resume
    # function runs natively and its locals() answers for the user's frame)
    return sorted(k for k in locals()), sorted(k for k in vars()), g() + 1


def pytest_assert_then_locals(x):
    # pytest rewrites this assert: its locals are named "@py_assert1"...
    assert x.sum() > -100, "never"
    print("break")
    return sorted(k for k in locals())


@pytest.mark.parametrize("fn", [plain, vars_and_dir, in_inlined_callee, in_comprehension,
                                mutation_does_not_change_locals], ids=lambda f: f.__name__)
def test_fullgraph(fn):
    counter, fallbacks = _run(fn, lambda: (X.clone(),), fullgraph=True)
    assert counter.frame_count == 1 and not fallbacks


@pytest.mark.parametrize("fn", [after_graph_break, in_loop_with_break, with_cells, cell_unbound_then_bound,
                                mutation_across_break], ids=lambda f: f.__name__)
def test_split_at_a_break(fn):
    counter, fallbacks = _run(fn, lambda: (X.clone(),))
    assert not fallbacks, fallbacks
    assert counter.frame_count >= 2


@pytest.mark.parametrize("fn", [after_break, native_rest_with_cells, pytest_assert_then_locals],
                         ids=lambda f: f.__name__)
def test_split_with_the_rest_native(fn):
    # the frame is split: a graph before the break; the resume function runs
    # natively (the generator), where locals()/vars() show the user's names
    counter, fallbacks = _run(fn, lambda: (X.clone(),))
    assert counter.frame_count >= 1
    assert all("<resume" in m.split(" as plain Python")[0] for m in fallbacks), fallbacks


@pytest.mark.parametrize("fn", [plain, vars_and_dir, after_break, after_graph_break, in_inlined_callee,
                                with_cells, native_rest_with_cells], ids=lambda f: f.__name__)
def test_graph_count_matches_torch_compile(fn):
    counter, _ = _run(fn, lambda: (X.clone(),), calls=1)
    oracle = dynamo_graph_count(fn, X.clone())
    if fn is vars_and_dir:
        # torch.compile breaks at dir() (2 graphs with 3.11) or runs the frame
        # as Python (3.13); armature traces it
        assert counter.frame_count == 1 and oracle != 1
    elif fn in (after_graph_break, with_cells):
        # torch.compile runs the rest after the break (which calls locals())
        # as Python; armature compiles its graph too
        assert (counter.frame_count, oracle) == (2, 1)
    else:
        assert counter.frame_count == oracle


def test_force_eager_resume_sees_user_names():
    # a resume function run as it is (the stance) answers for the user's frame
    def f(x):
        v = x + 1

        def g():
            return v

        armature.graph_break()
        return [k for k in locals()], g()

    compiled = armature.compile(f, backend="eager")
    armature.reset()
    compiled(X.clone())
    with armature.set_stance("force_eager") if hasattr(armature, "set_stance") else contextlib.nullcontext():
        got = compiled(X.clone())
    assert got[0] == f(X.clone())[0] == ["x", "g", "v"]
