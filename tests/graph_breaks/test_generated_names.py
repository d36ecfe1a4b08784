"""User names spelled like armature's generated names (names.py).

armature's generated code (transformed functions, resume functions, guard
functions) has variables of its own beside the user's: the hidden function
argument ``___f``, saved stack slots ``___stack0``, cells ``___cell_x``,
temporaries ``___tmp1``, the graph output, guard constants ``___c0``, hoisted
shape reads ``___sz0``...  A user local, argument, cell or global spelled
exactly like one of them must neither make the frame run as Python nor
change what it computes: every case here is compiled (no fallback), gives
eager's results and side effects on every call, and captures as many graphs
as torch.compile.
"""
from __future__ import annotations

import contextlib
import io

import pytest
import torch

import armature
from helpers import CountingBackend, armature_only

from .util import FALLBACK_LOGGER, check_calls, collect_log, dynamo_graph_count, graph_count

pytestmark = armature_only

X = torch.tensor([1.0, -2.0, 3.0])

#: a spelling of each family of generated names (old and new spellings),
#: and longer runs of underscores (the prefix a frame with ``___`` names gets)
GENERATED = ["___f", "___stack0", "___stack1", "___tmp1", "___graph_out", "___cell_x", "___c0", "___c1",
             "___v1", "___sz0", "___st0", "___sc0", "___arg0", "___make", "___guard",
             "___armature_new_module_0", "____f", "____stack0", "_____tmp1"]


def _make(src: str, **names) -> dict:
    g = {"torch": torch, "armature": armature, "brk": brk}
    exec(src.format(**names), g)
    return g


def brk(v=None):
    print("brk", v)
    return v


def same_as_eager_and_dynamo(fn, make_args, *, oracle, calls=3, kwargs=None, oracle_kwargs=None,
                             dynamo_skips_frame=False):
    """Compiled == eager on every call (no fallback); one call captures as
    many graphs as ``oracle`` (the same function spelled with ordinary
    names) under armature, and as under torch.compile (which itself trips
    over some ``___`` names: a local named ``___stack0`` makes it fail, so
    it runs the oracle).  ``dynamo_skips_frame``: torch.compile runs the
    frame as Python (a graph break in a loop): armature captures at least
    as many graphs."""
    check_calls(fn, make_args, calls=calls, kwargs=kwargs)
    args = make_args()
    args = args if isinstance(args, tuple) else (args,)
    plain_kwargs = oracle_kwargs if oracle_kwargs is not None else kwargs or {}
    ours = graph_count(fn, *args, **(kwargs or {}))
    plain = graph_count(oracle, *args, **plain_kwargs)
    assert ours == plain, f"armature captured {ours} graphs, {plain} for the ordinary spelling"
    theirs = dynamo_graph_count(oracle, *args, **plain_kwargs)
    if dynamo_skips_frame:
        assert ours >= max(theirs, 1), f"armature captured {ours} graphs, torch.compile {theirs}"
    else:
        assert ours == theirs, f"armature captured {ours} graphs, torch.compile {theirs}"


def _spelled(src: str, **names):
    """The function ``f`` of ``src`` with ``names``, and (the oracle) with
    every ``___`` name spelled ordinarily."""
    plain = {k: "plain_" + v.lstrip("_") for k, v in names.items()}
    ordinary = src.format(**plain).replace("___", "u3_")
    return _make(src, **names)["f"], _make(ordinary.replace("{", "{{").replace("}", "}}"))["f"]


LOCAL_SRC = """
def f(x):
    {name} = x * 3
    other = x + 1
    brk("local")
    return {name} + other
"""


@pytest.mark.parametrize("name", GENERATED)
def test_local_live_across_break(name):
    f, plain = _spelled(LOCAL_SRC, name=name)
    same_as_eager_and_dynamo(f, lambda: (X.clone(),), oracle=plain)


ARG_SRC = """
def f(x, {name}, y=2.0, *, k=1.0):
    t = x * {name}
    brk("arg")
    return t + {name} * y + k
"""


@pytest.mark.parametrize("name", GENERATED)
def test_argument_live_across_break(name):
    f, plain = _spelled(ARG_SRC, name=name)
    same_as_eager_and_dynamo(f, lambda: (X.clone(), 4.0), oracle=plain)


KWONLY_SRC = """
def f(x, *, {name}=3.0):
    t = x + {name}
    brk("kwonly")
    return t * {name}
"""


@pytest.mark.parametrize("name", ["___f", "___stack0", "___graph_out", "___tmp1"])
def test_keyword_only_argument_passed_by_keyword(name):
    f, plain = _spelled(KWONLY_SRC, name=name)
    same_as_eager_and_dynamo(f, lambda: (X.clone(),), kwargs={name: 5.0}, oracle=plain,
                             oracle_kwargs={"plain_" + name.lstrip("_"): 5.0})
    same_as_eager_and_dynamo(f, lambda: (X.clone(),), oracle=plain)


def takes_any_keywords(x, **kw):
    t = x * len(kw)
    brk(sorted(kw))
    return t + sum(kw.values())


def test_keyword_spelled_like_the_hidden_function_argument():
    """``**kw`` receives ``___f=...`` like any keyword (the hidden argument
    is a keyword no call can spell)."""
    same_as_eager_and_dynamo(takes_any_keywords, lambda: (X.clone(),), kwargs={"___f": 2.0, "___stack0": 1.0},
                             oracle=takes_any_keywords, oracle_kwargs={"f": 2.0, "stack0": 1.0})


GLOBAL_SRC = """
{name} = 2.0

def f(x):
    global {name}
    t = x * {name}
    brk("global")
    {name} = {name} + 1.0
    return t + {name}
"""


@pytest.mark.parametrize("name", ["___f", "___stack0", "___c0", "___sc0", "___G", "___tmp1"])
def test_global_read_and_written_across_break(name):
    # the function reads and writes a global of its own module: eager and
    # compiled each run in a fresh module, compared after every call
    eager_g = _make(GLOBAL_SRC, name=name)
    comp_g = _make(GLOBAL_SRC, name=name)
    cf = armature.compile(comp_g["f"], backend="eager")
    for _ in range(3):
        assert torch.equal(eager_g["f"](X.clone()), cf(X.clone()))
        assert eager_g[name] == comp_g[name]
    f, plain = _spelled(GLOBAL_SRC, name=name)
    assert graph_count(f, X.clone()) == dynamo_graph_count(plain, X.clone())


CALLEE_SRC = """
def callee(v):
    {name} = v * 2
    ___stack0 = v + 1
    brk("in callee")
    return {name} + ___stack0

def f(x):
    {name} = x - 1
    y = callee(x)
    brk("after callee")
    return y * {name}
"""


@pytest.mark.parametrize("name", ["___f", "___tmp1", "___c0", "___cell_v", "___graph_out"])
def test_inlined_callee_locals_become_resume_locals(name):
    """A break inside an inlined callee: the callee's ``___`` locals are the
    locals of its resume function, beside its saved stack arguments."""
    f, plain = _spelled(CALLEE_SRC, name=name)
    same_as_eager_and_dynamo(f, lambda: (X.clone(),), oracle=plain)


LOOP_SRC = """
def f(x, n):
    {name} = x
    for ___i in range(n):
        {name} = {name} * 2 + ___i
        brk(___i)
        if ___i == 2:
            break
    ___j = 0
    while ___j < 2:
        ___j += 1
        {name} = {name} + ___j
    return {name}
"""


@pytest.mark.usefixtures("split_loop_breaks")   # (natively the names never meet armature's)
@pytest.mark.parametrize("name", ["___stack0", "___tmp1", "___f", "___v1"])
def test_loop_with_break_and_graph_breaks(name):
    f, plain = _spelled(LOOP_SRC, name=name)
    same_as_eager_and_dynamo(f, lambda: (X.clone(), 5), oracle=plain, dynamo_skips_frame=True)


CELL_SRC = """
def f(x):
    {name} = x * 2
    ___cell_x = x + 1
    def inner(v):
        nonlocal {name}
        {name} = {name} + v
        return {name} * ___cell_x
    a = inner(x)
    brk("cells")
    b = inner(a)
    return a, b, {name}
"""


@pytest.mark.parametrize("name", ["___c0", "___stack0", "___cell_inner", "x2"])
def test_cells_named_like_cell_arguments(name):
    """Closure variables travel to resume functions as ``<prefix>cell_NAME``
    arguments: a cell named ``___cell_x`` and one named ``x`` cannot meet."""
    f, plain = _spelled(CELL_SRC, name=name)
    same_as_eager_and_dynamo(f, lambda: (X.clone(),), oracle=plain)


NESTED_PREFIX_SRC = """
def f(x):
    ___a = x + 1
    ____stack0 = x * 2
    _____tmp1 = x * 3
    brk("prefixes")
    return ___a + ____stack0 + _____tmp1
"""


def test_names_with_every_run_of_underscores():
    """``___a`` and ``____stack0`` in one frame: the generated prefix is
    longer than any run of underscores its names start with."""
    f, plain = _spelled(NESTED_PREFIX_SRC)
    same_as_eager_and_dynamo(f, lambda: (X.clone(),), oracle=plain)


DYNAMIC_SRC = """
def f({name}, ___sc0):
    t = {name} * ___sc0.sum()
    brk("dyn")
    return t + {name}.shape[0] + ___sc0.shape[0]
"""


@pytest.mark.parametrize("name", ["___sz0", "___st0", "___v1", "___c0"])
def test_shape_guards_over_arguments_named_like_their_bindings(name):
    """Dynamic shapes: shape guards hoist ``x.size()`` into locals of the
    guard function; arguments spelled like those locals keep their own."""
    f, plain = _spelled(DYNAMIC_SRC, name=name)
    counts = []
    for fn in (f, plain):
        counter = CountingBackend("eager")
        cf = armature.compile(fn, backend=counter)
        with collect_log(FALLBACK_LOGGER) as fallbacks:
            for n in (3, 4, 5, 6, 4, 3):
                a, b = torch.arange(float(n)), torch.ones(n + 1)
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    got = cf(a, b)
                assert torch.equal(got, fn(a, b)), n
        assert not fallbacks, fallbacks
        counts.append((counter.frame_count, len(armature.explain(cf)(a, b).graphs)))
        armature.reset()
    # sizes 3 then 4: one static, then one dynamic entry serves every size
    assert counts[0] == counts[1], counts
    assert counts[0][0] <= 4, counts


DYNAMIC_GLOBAL_SRC = """
def f(x):
    t = x * {name}.sum()
    brk("dyn global")
    return t + {name}.shape[0]
"""


@pytest.mark.parametrize("name", ["___sc0", "___sz0", "___c0", "___G"])
def test_shape_guards_over_a_global_named_like_their_constants(name):
    """A global tensor whose size changes, named like the constants and
    reads of shape guards (in guard source it is a string key of the
    globals dict: ``___c0['___sc0']``)."""
    counts = []
    for spelling in (name, "plain_" + name.lstrip("_")):
        g = _make(DYNAMIC_GLOBAL_SRC, name=spelling)
        counter = CountingBackend("eager")
        cf = armature.compile(g["f"], backend=counter)
        with collect_log(FALLBACK_LOGGER) as fallbacks:
            for n in (3, 4, 5, 6, 4, 3):
                g[spelling] = torch.ones(n + 1)
                x = torch.arange(float(n))
                with contextlib.redirect_stdout(io.StringIO()):
                    assert torch.equal(cf(x), g["f"](x)), n
        assert not fallbacks, fallbacks
        counts.append(counter.frame_count)
        armature.reset()
    assert counts[0] == counts[1] <= 4, counts


def test_module_made_in_frame_beside_a_local_named_like_its_slot():
    def f(x):
        ___armature_new_module_0 = x + 1
        lin = torch.nn.Linear(3, 3)   # built by the transformed function's setup, in a local of its own
        y = lin(x)
        return y + ___armature_new_module_0, lin.weight

    def state():
        torch.manual_seed(1)
        return (X.clone(),)

    _, _, counter = check_calls(f, state)
    assert counter.frame_count == 1


STACK_SRC = """
def f(x):
    {name} = x - 1
    return x * 2 + brk({name})
"""


@pytest.mark.parametrize("name, stack_arg", [("a", "___stack"), ("___a", "____stack"), ("____a", "_____stack")])
def test_explain_spells_saved_stack_slots_with_the_frame_prefix(name, stack_arg):
    """explain prints a resume function's saved stack slots as ``___stack0``
    (or with the longer prefix of a frame whose names start with ``___``)."""
    f = _make(STACK_SRC, name=name)["f"]
    armature.reset()
    text = str(armature.explain(f)(X.clone()))
    guarded = {line.split("] ", 1)[1].split(":")[0] for line in text.splitlines() if "Tensor float32" in line}
    assert {f"{stack_arg}0", f"{stack_arg}1"} <= guarded, text
    assert {f"{stack_arg[1:]}0", f"{stack_arg}_0"}.isdisjoint(guarded), text
