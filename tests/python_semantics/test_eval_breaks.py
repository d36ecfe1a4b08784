"""``eval``/``exec`` without namespaces that the trace cannot inline, vs
eager: a graph break whose native call passes the frame's globals and
``locals()`` dict (codegen/namespace_calls.py), never the whole frame run as
Python.  Outputs, printed output, writes to globals and to the argument
lists, and graph counts (two calls: the second hits the cache) are
compared.  torch.compile breaks there too but runs the call in its
transformed frame: a string that reads the function's variables raises
NameError under it, so it is the oracle only for strings that do not.

The 3.11/3.12 vs 3.13 difference (one locals() dict per frame vs a snapshot
per call, PEP 667) is exercised by the same functions on every version:
eager answers differently, armature must answer as eager does."""
import contextlib
import io
import sys

import pytest
import torch

import armature
from helpers import CountingBackend, assert_same, compiled_with_oracle, reset, t

G = 0
K = 3


@armature.disable
def _opaque_source(n):
    """A string the trace cannot know (a function it does not trace)."""
    return f"y * {n} + K"


def exec_that_prints(x):
    y = x * 2
    exec("print(y.shape, float(y.sum()))")
    return y + 1


def eval_of_a_runtime_string(x):
    y = x.sin()
    z = eval(_opaque_source(2))
    return z.cos()


def exec_of_a_runtime_string(x, out):
    y = x.sin()
    exec(_opaque_source(3).replace("y *", "out.append(y) or 0 *"))
    return y.cos()


def exec_stores_a_name(x):
    y = x * 2
    exec("z = y + 1")
    try:
        return z  # noqa: F821   (eager: a NameError, fast locals are unchanged)
    except NameError:
        return y - 1


def exec_stores_a_name_unhandled(x):
    y = x * 2
    exec("z = y + 1")
    return z + y  # noqa: F821


def exec_writes_over_a_local(x):
    y = x * 2
    exec("y = y * 100")
    return y + 1


def exec_defines_a_function(x, out):
    y = x * 2
    exec("def h(a):\n    return a * 3\nout.append(h(y))")
    return y + 1


def eval_of_a_lambda(x):
    y = x.sin()
    return eval("(lambda v: v * 2)")(y).cos()   # (a name in the lambda would be a global: eager's NameError)


def eval_that_breaks(x):
    y = x.sin()
    z = eval("print('inside eval') or y + 1")
    return z.cos()


def exec_that_raises(x):
    y = x * 2
    try:
        exec("raise ValueError(f'boom {y.shape}')")
    except ValueError as e:
        return y + len(str(e))
    return y


def exec_that_raises_unhandled(x):
    y = x * 2
    exec("raise KeyError('nope')")
    return y


def exec_writes_a_global(x):
    y = x * 2
    exec("global G; G = G + 5")
    return y + G


def exec_reads_free_and_cell_variables(x):
    c = x.cos()      # a cell variable (inner reads it)
    w = 2.0

    def inner(y):
        out = []
        w, c  # (free variables of inner: a name only the string reads is not one, eager's NameError)
        exec("out.append(y * w + c)")
        return out[0] + 1
    return inner(x.sin()) + c


def locals_after_exec(x):
    y = x * 2
    exec("w = 7")
    return y + locals().get("w", -1)


def locals_dict_taken_before_exec(x):
    d = locals()
    y = x * 2
    exec("w = 7")
    return y + d.get("w", -1) + ("y" in d)


def eval_after_exec(x):
    y = x * 2
    exec("w = 7")
    try:
        return y + eval("w")
    except NameError:
        return y - 1


def eval_after_exec_over_a_local(x):
    y = x * 2
    exec("y = 5")
    return eval("y") + 1


def exec_sees_a_locals_write(x):
    y = x * 2
    locals()["extra"] = 4
    out = []
    exec("out.append(extra)")
    return y + out[0]


def exec_then_break_then_locals(x):
    y = x * 2
    exec("w = 7")
    print("a break")
    z = y + 1
    return z + locals().get("w", -1)


def exec_of_only_globals(x):
    y = x * 2
    exec("print(K + 1)")
    return y + 1


def exec_in_a_loop(x, out):
    y = x * 2
    for i in range(3):
        y = y + i
        exec("out.append(i)")
    return y.cos()


def print_in_a_loop(x, out):
    """exec_in_a_loop with an ordinary graph break."""
    y = x * 2
    for i in range(3):
        y = y + i
        out.append(i)
        print(i)
    return y.cos()


def exec_while_a_generator_is_live(x):
    y = x * 2
    gen = (v * 2 for v in (y, y + 1))
    first = next(gen)
    exec("first.add_(0)")
    return first + next(gen)


def _gen_with_eval(x, s):
    y = x * 3
    yield eval(s)
    yield y + 1


def generator_that_evals(x):
    total = x.sin()
    for v in _gen_with_eval(x, _opaque_source(4)):
        total = total + v
    return total


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        exec("print('forward', y.shape)")
        return self.helper(y)

    def helper(self, y):
        z = y * 2
        exec("print('helper', z.shape)")
        return z + 1


def method_that_execs(x):
    return Model()(x)


def eval_of_locals(x):
    y = x * 2
    d = eval("locals()")
    return y + len(d) + ("y" in d)


def nested_eval(x):
    y = x * 2
    return eval("eval('y + 1')").cos()


def eval_that_looks_above_its_frame(x):
    y = x * 2
    n = eval("sys._getframe(0).f_back.f_code.co_name")
    return y + len(n)


def exec_that_looks_above_its_frame(x, out):
    y = x * 2
    exec("import inspect\nout.append(inspect.stack()[1].function)")
    return y + 1


def eval_with_keywords_in_a_resume_function(x):
    y = x * 2
    c = x.sin()

    def inner():
        return c
    print("a break")
    return eval("y + c", globals=None) + inner()   # (3.11/3.12: eager's TypeError)


def _captured(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args)
    return result, out.getvalue()


# (fn, args, graphs over two calls: the second hits the cache)
CASES = [
    (exec_that_prints, (t(3),), 2),
    (eval_of_a_runtime_string, (t(3),), 2),
    (exec_of_a_runtime_string, (t(3), []), 2),
    (exec_stores_a_name, (t(3),), 2),
    (exec_writes_over_a_local, (t(3),), 2),
    (exec_defines_a_function, (t(3), []), 2),
    # (the lambda, a new function on every call, is live after the break: the
    # resume function guards it by identity and compiles again on each call)
    (eval_of_a_lambda, (t(3),), None),
    (eval_that_breaks, (t(3),), 2),
    (exec_that_raises, (t(3),), 2),
    (exec_reads_free_and_cell_variables, (t(3),), 3),   # (outer | inner after exec | outer after inner)
    (locals_after_exec, (t(3),), 2),
    # (3.11/3.12: after the break the resume function's dict holds itself,
    # which the trace does not wrap: what reads it runs as Python, more or
    # fewer graphs by version)
    (locals_dict_taken_before_exec, (t(3),), 2 if sys.version_info >= (3, 13) else None),
    (eval_after_exec, (t(3),), 2),
    (eval_after_exec_over_a_local, (t(3),), 2),
    # (3.13+: locals() is a snapshot, the string's NameError)
    (exec_sees_a_locals_write, (t(3),), 2 if sys.version_info < (3, 13) else None),
    (exec_then_break_then_locals, (t(3),), 2),
    (exec_of_only_globals, (t(3),), 2),
    (exec_in_a_loop, (t(3), []), None),
    (eval_of_locals, (t(3),), 2),
    (nested_eval, (t(3),), 2),
    (exec_while_a_generator_is_live, (t(3),), None),
    (generator_that_evals, (t(3),), None),
]


@pytest.mark.parametrize("fn,args,graphs", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_graph_break_with_the_frames_namespaces(fn, args, graphs):
    reset()
    assert_same(fn, *args, fullgraph=False, graphs=graphs)


@pytest.mark.parametrize("fn", [exec_that_prints, eval_that_breaks, exec_of_only_globals, exec_in_a_loop])
def test_printed_output_is_eagers(fn):
    args = (t(3), []) if fn is exec_in_a_loop else (t(3),)
    reset()
    expected, printed = _captured(fn, *args)
    compiled = armature.compile(fn, backend="eager")
    for _ in range(2):
        got, got_printed = _captured(compiled, *args)
        torch.testing.assert_close(got, expected)
        assert got_printed == printed


@pytest.mark.parametrize("fn", [exec_stores_a_name_unhandled, exec_that_raises_unhandled])
def test_what_the_string_raises_reaches_the_caller(fn):
    reset()
    with pytest.raises(Exception) as eager:
        fn(t(3))
    with pytest.raises(type(eager.value)) as got:
        armature.compile(fn, backend="eager")(t(3))
    assert str(got.value) == str(eager.value)


def test_exec_writes_the_modules_globals():
    global G
    reset()
    G = 0
    x = t(3)
    expected = exec_writes_a_global(x)
    assert G == 5
    G = 0
    counter = CountingBackend()
    compiled = armature.compile(exec_writes_a_global, backend=counter)
    torch.testing.assert_close(compiled(x), expected)
    assert G == 5
    torch.testing.assert_close(compiled(x), expected + 5)   # (G is 10 now, read after the break)
    assert G == 10
    G = 0


def test_a_method_and_its_callee():
    torch.manual_seed(0)
    m = Model()
    x = t(2, 3)
    reset()
    expected, printed = _captured(m, x)
    counter = CountingBackend()
    compiled = armature.compile(m, backend=counter)
    got, got_printed = _captured(compiled, x)
    torch.testing.assert_close(got, expected)
    assert got_printed == printed
    assert counter.frame_count == 3   # (linear | y * 2 | + 1)


def test_a_break_in_a_loop_reuses_its_resume_function():
    """The same graphs as an ordinary break in the loop, none on later calls."""
    counts = []
    for fn in (exec_in_a_loop, print_in_a_loop):
        reset()
        counter = CountingBackend()
        compiled = armature.compile(fn, backend=counter)
        for n in range(3):
            x, out, expected_out = t(3), [], []
            with contextlib.redirect_stdout(io.StringIO()):
                torch.testing.assert_close(compiled(x, out), fn(x, expected_out))
            assert out == expected_out == [0, 1, 2]
            if n == 0:
                first = counter.frame_count
        assert counter.frame_count == first
        counts.append(first)
    assert counts[0] == counts[1]


def test_graph_counts_match_torch_compile_where_it_runs_the_string():
    """A string that reads only globals: torch.compile's native call is
    right there, and it splits the frame as armature does."""
    oracle = compiled_with_oracle(exec_of_only_globals, t(3))
    reset()
    counter = CountingBackend()
    armature.compile(exec_of_only_globals, backend=counter)(t(3))
    assert counter.frame_count == oracle.graphs == 2


@pytest.mark.parametrize("fn", [exec_that_prints, eval_that_breaks, exec_stores_a_name, eval_of_a_lambda])
def test_fullgraph_names_the_call(fn):
    reset()
    with pytest.raises(armature.Unsupported, match=r"(eval|exec)\(\).*graph break"):
        armature.compile(fn, backend="eager", fullgraph=True)(t(3))


def eval_with_keyword_namespaces(x):
    y = x * 2
    out = []
    exec("out.append(y + 1)", globals=None)
    return eval("y + 1", locals=None) + out[0]   # (a constant string that only reads: traced)


def exec_with_keyword_locals_that_stores(x):
    y = x * 2
    exec("z = y + 1\nprint(z.shape)", globals=None, locals=None)
    try:
        return z   # noqa: F821 - (the store went into the locals() dict: NameError, as in eager)
    except NameError:
        return y - 1


@pytest.mark.skipif(sys.version_info < (3, 13), reason="eval() and exec() take keywords from 3.13")
@pytest.mark.parametrize("fn", [eval_with_keyword_namespaces, exec_with_keyword_locals_that_stores])
def test_a_keyword_spelling_is_a_graph_break(fn):
    """3.13+: ``globals=None``/``locals=None`` by keyword read the frame as the
    positional spelling does: a graph break with the frame's namespaces
    (CALL_KW rewritten), graphs before and after it."""
    reset()
    with contextlib.redirect_stdout(io.StringIO()):
        assert_same(fn, t(3), fullgraph=False, graphs=2)


@pytest.mark.parametrize("fn,args", [(eval_that_looks_above_its_frame, (t(3),)),
                                     (exec_that_looks_above_its_frame, (t(3), []))])
def test_a_string_that_looks_above_its_frame_runs_the_frame_as_python(fn, args):
    """Natively at a break its caller would be armature's frame."""
    reset()
    assert_same(fn, *args, fullgraph=False, graphs=0)


def test_eval_in_a_resume_function_that_runs_as_python():
    """The resume function's eval is the runtime/frame_view stand-in: it
    reads the user's variables (a cell's contents), not the generated ones."""
    reset()
    with contextlib.redirect_stdout(io.StringIO()):
        assert_same(eval_with_keywords_in_a_resume_function, t(3), fullgraph=False)
