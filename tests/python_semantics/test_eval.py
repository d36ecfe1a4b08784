"""``eval(constant string)`` inside a compiled function, vs eager (and
torch.compile's graph counts where it is right): the string is traced
inline with the frame's variables (values/operations/eval_builtin.py), so it joins the
graph.  Where the string cannot be traced, the call is a graph break whose
native call gets the frame's globals and locals() as namespaces (never the
call as written, which would read the transformed frame's variables:
torch.compile raises NameError there): test_eval_breaks.py."""
import pytest
import torch

import armature
from helpers import assert_same, compiled_stats, reset, t

K = 3


def eval_of_locals_and_globals(x):
    y = x.sin()
    z = eval("y + 1 + K + len([1, 2])")
    return z.cos()


def eval_of_a_closure_variable(x):
    w = 2.0

    def inner(y):
        w     # (a name only the string reads is no closure variable: eager's NameError)
        return eval("y * w")
    return inner(x) + 1


def eval_with_an_argument_string(x, s):
    y = x.sin()
    return eval(s).cos()


def eval_after_a_break(x):
    y = x.sin()
    print("a break")
    z = eval("y + 1")
    return z.cos()


def eval_of_builtins_and_methods(x):
    y = x + 1
    return eval("abs(-2) * y.sum() + len(y) + y.mean()")


def eval_with_explicit_namespaces(x):
    y = x.sin()
    return eval("a + 1", {}, {"a": y}).cos()


def eval_that_raises(x):
    y = x.sin()
    try:
        return eval("undefined_name + y")
    except NameError:
        return y.cos()


def eval_of_a_lambda(x):
    y = x.sin()
    return eval("(lambda v: v + y)")(x).cos()


def exec_of_the_frame(x):
    y = x.sin()
    out = []
    exec("out.append(y.shape)")
    return y.cos(), out


@pytest.mark.parametrize("fn,args,graphs", [
    (eval_of_locals_and_globals, (t(3),), 1),
    (eval_of_a_closure_variable, (t(3),), 1),
    (eval_with_an_argument_string, (t(3), "y * 3"), 1),
    (eval_of_builtins_and_methods, (t(3),), 1),
    (eval_that_raises, (t(3),), 1),
])
def test_eval_joins_the_graph(fn, args, graphs):
    reset()
    assert_same(fn, *args, fullgraph=True, graphs=graphs)


@pytest.mark.parametrize("fn,graphs", [(eval_after_a_break, 2), (eval_with_explicit_namespaces, 2)])
def test_eval_around_a_break(fn, graphs):
    """eval in a resume function is traced there; eval with its own
    namespaces does not read the frame: an ordinary break."""
    reset()
    assert_same(fn, t(3), fullgraph=False, graphs=graphs)
    reset()
    assert compiled_stats(fn, t(3), fullgraph=False).frame_count == graphs


@pytest.mark.parametrize("fn,graphs", [(eval_of_a_lambda, None), (exec_of_the_frame, 2)])
def test_what_is_not_traced_is_a_graph_break(fn, graphs):
    """A lambda made by eval (its ``y`` is a global there: eager's
    NameError), exec of the frame's variables: a break with the frame's
    namespaces; fullgraph names it."""
    reset()
    assert_same(fn, t(3), fullgraph=False, graphs=graphs)
    reset()
    with pytest.raises(armature.Unsupported, match="graph break"):
        armature.compile(fn, backend="eager", fullgraph=True)(t(3))
