"""``torch.no_grad()`` / ``enable_grad()`` / ``set_grad_enabled(b)`` /
``inference_mode(b)`` objects used as decorators on functions defined in
the compiled frame (values/tensors/grad_decorators.py): results, grad
requirements and the grad mode after the call as in eager (also when the
decorated function raises or breaks the graph, or escapes the frame), in no
more graphs than torch.compile makes (the oracle).

Before, calling the grad-mode object broke the graph at the decoration, and
the bare ``@torch.no_grad`` form (``torch.no_grad(fn)``) gave a wrong answer:
the trace made a plain no_grad object, dropped the function, and calling
"the function" decorated its argument instead of running it."""
from __future__ import annotations

import pytest
import torch

import armature
from helpers import USING_TORCH, CountingBackend, assert_same, dynamo_graph_count, reset, t

pytestmark = pytest.mark.skipif(USING_TORCH, reason="compares armature with torch.compile itself")


def oracle_graphs(fn, *args):
    """torch.compile's graph count (None where torch.compile itself fails:
    torch 2.13's Dynamo on ``bare_inference_mode``); the grad mode it leaves
    behind is reset (it leaves no_grad on after ``raises_inside``)."""
    mode = torch.is_grad_enabled()
    try:
        return dynamo_graph_count(fn, *args)
    except Exception:  # noqa: BLE001
        return None
    finally:
        torch.set_grad_enabled(mode)
        reset()


def check(fn, *args, graphs, check_grad=False, fullgraph=None):
    """Compiled vs eager (two calls, the second from the cache), ``graphs``
    captured, and no more graphs than torch.compile makes for one call."""
    oracle = oracle_graphs(fn, *args)
    assert oracle is None or graphs <= oracle, "more graphs than torch.compile"
    if fullgraph is None:
        fullgraph = graphs == 1
    assert_same(fn, *args, graphs=graphs, check_grad=check_grad, fullgraph=fullgraph)


def paren_no_grad(x):
    @torch.no_grad()
    def g(y):
        return y * 2

    return g(x), x + 1, torch.is_grad_enabled()


def annotated_no_closure(x):
    # (PyTorch's test_context_wrapping_nested_functions_no_closure)
    @torch.no_grad()
    def augment(x: torch.Tensor) -> torch.Tensor:
        return (x + 1) * 2

    return augment(x), x * 3


def bare_no_grad(x):
    @torch.no_grad
    def g(y):
        return y * 2

    return g(x), x.sin()


def bare_enable_grad_inside_no_grad(x):
    @torch.enable_grad
    def h(y):
        return y * 3, torch.is_grad_enabled()

    with torch.no_grad():
        return h(x), x * 2


def enable_grad_made_inside_no_grad(x):
    with torch.no_grad():
        @torch.enable_grad()
        def g(y):
            return y * 2

        return g(x), x + 1


def set_grad_enabled_decorator(x):
    dec = torch.set_grad_enabled(False)
    during = torch.is_grad_enabled()       # the constructor switched the mode

    @dec                                    # __call__ switches it back
    def g(y):
        return y * 2, torch.is_grad_enabled()

    after = torch.is_grad_enabled()
    return g(x), during, after, x * 3


def stacked(x):
    @torch.no_grad()
    @torch.enable_grad()
    def g(y):
        return y * 2, torch.is_grad_enabled()

    return g(x), x.cos()


def with_kwargs_and_attributes(x):
    @torch.no_grad()
    def scaled(y, *, k=3):
        """doc"""
        return y * k

    return scaled(x, k=4), scaled(x), scaled.__name__, scaled.__doc__, scaled.__wrapped__(x)


def mutates_a_list(x):
    out = []

    @torch.no_grad()
    def g(y):
        out.append(y * 2)
        return len(out)

    n = g(x) + g(x + 1)
    return out, n


def method_of_a_local_class(x):
    class C:
        @torch.no_grad()
        def m(self, y):
            return y * 2

    return C().m(x), x + 1


def decorated_several_times(x):
    def g(y):
        return y * 2, torch.is_grad_enabled()

    a = torch.no_grad()(g)
    b = torch.enable_grad()(g)
    with torch.no_grad():
        return a(x), b(x), g(x)


def raises_inside(x):
    @torch.no_grad()
    def g(y):
        raise ValueError("boom")

    try:
        g(x)
    except ValueError as e:
        return x * 2, str(e), torch.is_grad_enabled()   # __exit__ restored the mode


def returned(x):
    @torch.no_grad()
    def g(y):
        return y * 2

    return g(x), g


def generator_function(x):
    @torch.no_grad()
    def gen(y):
        yield y * 2

    return list(gen(x)), x + 1


def inference_mode_decorator(x):
    @torch.inference_mode()
    def g(y):
        return y * 2

    z = g(x)
    return z, z.is_inference(), x + 1


def bare_inference_mode(x):
    @torch.inference_mode
    def g(y):
        return y * 2, torch.is_inference_mode_enabled()

    z, inside = g(x)
    return z + 1, inside, torch.is_inference_mode_enabled(), z.is_inference()


def inference_mode_false(x):
    @torch.inference_mode(False)
    def g(y):
        return y * 2

    return g(x), x - 1


ONE_GRAPH = [paren_no_grad, annotated_no_closure, bare_no_grad, bare_enable_grad_inside_no_grad, enable_grad_made_inside_no_grad,
             set_grad_enabled_decorator, stacked, with_kwargs_and_attributes, mutates_a_list,
             method_of_a_local_class, decorated_several_times, raises_inside, inference_mode_false]


@pytest.mark.parametrize("fn", ONE_GRAPH, ids=lambda f: f.__name__)
def test_decorated_in_the_frame_one_graph(fn):
    check(fn, t(3, requires_grad=True), graphs=1, check_grad=fn is not mutates_a_list)


@pytest.mark.parametrize("fn", [paren_no_grad, bare_no_grad, stacked, set_grad_enabled_decorator])
def test_called_under_no_grad(fn):
    with torch.no_grad():
        check(fn, t(3, requires_grad=True), graphs=1)


@pytest.mark.parametrize("fn", [inference_mode_decorator, bare_inference_mode])
def test_inference_mode_decorator(fn):
    check(fn, t(3), graphs=1)


def test_returned_decorated_function_is_the_real_one():
    # the escaping function is torch's decorated function: calling it
    # outside the frame runs under no_grad
    reset()
    x = t(3, requires_grad=True)
    out, g = armature.compile(returned, backend="eager", fullgraph=True)(x)
    assert not out.requires_grad
    assert g.__wrapped__.__name__ == "g" and g.__name__ == "g"
    assert not g(x).requires_grad and torch.is_grad_enabled()
    torch.testing.assert_close(g(x), x.detach() * 2)


def test_generator_function_decorated_natively():
    # torch wraps a generator function in a generator that switches the mode
    # around each step: not modelled, the decoration runs natively (a break)
    check_breaking(generator_function, t(3, requires_grad=True))


def breaks_inside(x):
    @torch.no_grad()
    def g(y):
        y = y * 2
        n = int(y.sum() > 0)                 # data-dependent: a graph break
        return y + n, torch.is_grad_enabled()

    a, en = g(x)
    return a, en, x * 3, torch.is_grad_enabled()


def check_breaking(fn, *args):
    oracle = oracle_graphs(fn, *args)
    assert_same(fn, *args, fullgraph=False)
    reset()
    counter = CountingBackend()
    armature.compile(fn, backend=counter)(*args)
    assert 1 <= counter.frame_count <= oracle


def test_graph_break_inside_the_decorated_function():
    # the call runs natively through the real decorated function
    check_breaking(breaks_inside, t(3, requires_grad=True))
