"""armature.allow_in_graph / disallow_in_graph (and undoing them),
armature.disable called or created inside compiled code, and
armature.dont_skip_tracing.  Graph counts are compared with torch.compile's
where it supports the same thing."""

import os

import pytest
import torch
import torch.nn as nn

import armature
from armature.runtime import markers

pytestmark = pytest.mark.skipif(
    os.environ.get("ARMATURE_TEST_IMPL", "armature").strip().lower() == "torch",
    reason="armature-specific API",
)


@pytest.fixture(autouse=True)
def _clean_marks():
    yield
    markers.IN_GRAPH.clear()
    torch._dynamo.reset()


class Counter:
    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    @property
    def compiles(self):
        return len(self.graphs)


def check(actual, expected):
    torch.testing.assert_close(actual, expected)


def torch_frames(fn, *args):
    from torch._dynamo.testing import CompileCounter
    torch._dynamo.reset()
    cnt = CompileCounter()
    torch.compile(fn, backend=cnt)(*args)
    torch._dynamo.reset()
    return cnt.frame_count


def nodes_calling(gm, target):
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target is target]


# ------------------------------------------------------------ allow_in_graph


def _opaque(x, y, k=2):
    armature.graph_break()      # traced, this would split the graph
    torch._dynamo.graph_break()
    return x * k + y, (x - y).sum(0, keepdim=True)


def _uses_opaque(x, y):
    a, b = _opaque(x.sin(), y, k=3)
    return (a + b).cos()


def test_allow_in_graph_one_node():
    assert armature.allow_in_graph(_opaque) is _opaque
    c = Counter()
    cf = armature.compile(_uses_opaque, backend=c)
    x, y = torch.randn(4), torch.randn(4)
    check(cf(x, y), _uses_opaque(x, y))
    check(cf(x, y), _uses_opaque(x, y))
    assert c.compiles == 1
    (node,) = nodes_calling(c.graphs[0], _opaque)
    assert node.kwargs == {"k": 3}
    # the same with torch.compile
    torch.compiler.allow_in_graph(_opaque)
    assert torch_frames(_uses_opaque, x, y) == 1


def test_allow_in_graph_fullgraph_and_dynamic_sizes():
    armature.allow_in_graph(_opaque)
    c = Counter()
    cf = armature.compile(_uses_opaque, backend=c, fullgraph=True)
    for n in (3, 4, 5, 6):
        x, y = torch.randn(n), torch.randn(n)
        check(cf(x, y), _uses_opaque(x, y))
    assert c.compiles == 2      # static, then dynamic: the node's metadata is symbolic


@pytest.mark.aot_eager
def test_allow_in_graph_aot_eager_gradients():
    armature.allow_in_graph(_opaque)
    cf = armature.compile(_uses_opaque, backend="aot_eager", fullgraph=True)
    x = torch.randn(5, requires_grad=True)
    y = torch.randn(5, requires_grad=True)
    cf(x, y).sum().backward()
    got = x.grad.clone(), y.grad.clone()
    x.grad = y.grad = None
    _uses_opaque(x, y).sum().backward()
    check(got, (x.grad, y.grad))


def test_allow_in_graph_undo():
    armature.allow_in_graph(_opaque)
    c = Counter()
    cf = armature.compile(_uses_opaque, backend=c)
    x, y = torch.randn(3), torch.randn(3)
    cf(x, y)
    assert c.compiles == 1
    assert armature.allow_in_graph(_opaque, False) is _opaque
    assert id(_opaque) not in markers.IN_GRAPH
    # the mark changed: compiled entries were dropped, the call is traced again
    assert armature.cache_entries(cf) == []
    check(cf(x, y), _uses_opaque(x, y))
    assert c.compiles == 1 + 3      # two graph breaks inside _opaque
    assert not any(nodes_calling(g, _opaque) for g in c.graphs[1:])


def test_allow_in_graph_list_and_nested_call():
    def scale(t):
        return t * 2

    def shift(t):
        return t + 1

    def inner(x):
        return shift(scale(x))

    def f(x):
        return inner(x).relu()

    assert armature.allow_in_graph([scale, shift]) == [scale, shift]
    c = Counter()
    cf = armature.compile(f, backend=c, fullgraph=True)
    x = torch.randn(3)
    check(cf(x), f(x))
    assert len(nodes_calling(c.graphs[0], scale)) == 1 and len(nodes_calling(c.graphs[0], shift)) == 1


def test_allow_in_graph_constant_result_and_in_place():
    def rows(t):
        return t.shape[0] * 2

    def bump(t):
        t.add_(1)

    def f(x):
        bump(x)
        return x * rows(x)

    armature.allow_in_graph([rows, bump])
    cf = armature.compile(f, backend="eager")
    x = torch.randn(3)
    x2 = x.clone()
    check(cf(x), f(x2))
    check(x, x2)


def test_allow_in_graph_rejects_other_arguments():
    class Box:
        def __init__(self, t):
            self.t = t

    def unbox(b):
        return b.t * 2

    def f(x):
        return unbox(Box(x)) + 1

    armature.allow_in_graph(unbox)
    with pytest.raises(armature.Unsupported, match="allow_in_graph.*only tensors"):
        armature.compile(f, backend="eager", fullgraph=True)(torch.randn(3))
    x = torch.randn(3)
    check(armature.compile(f, backend="eager")(x), f(x))   # a graph break without fullgraph


def test_allow_in_graph_bad_input():
    with pytest.raises(TypeError, match="expects a callable"):
        armature.allow_in_graph(3)
    with pytest.raises(TypeError, match="enable must be a bool"):
        armature.allow_in_graph(_opaque, 1)
    with pytest.raises(TypeError, match="not an armature-compiled one"):
        armature.allow_in_graph(armature.compile(_opaque, backend="eager"))
    with pytest.raises(TypeError, match="expects a callable"):
        armature.disallow_in_graph("torch.sin")


# ------------------------------------------------------------ disallow_in_graph


def _sin_then_cos(x):
    return torch.sin(x).cos() + 1


def test_disallow_in_graph_torch_function():
    assert armature.disallow_in_graph(torch.sin) is torch.sin
    c = Counter()
    cf = armature.compile(_sin_then_cos, backend=c)
    x = torch.randn(3)
    check(cf(x), _sin_then_cos(x))
    check(cf(x), _sin_then_cos(x))
    assert c.compiles == 1                       # cos + 1, after the break
    assert not any(nodes_calling(g, torch.sin) for g in c.graphs)
    (entry,) = armature.cache_entries(cf)
    assert "disallow_in_graph" in str(entry.graph_break)
    with pytest.raises(armature.Unsupported, match="torch.sin|sin, which is marked armature.disallow_in_graph"):
        armature.compile(_sin_then_cos, backend="eager", fullgraph=True)(x)
    # undo: one graph again
    armature.disallow_in_graph(torch.sin, False)
    c2 = Counter()
    cf2 = armature.compile(_sin_then_cos, backend=c2, fullgraph=True)
    check(cf2(x), _sin_then_cos(x))
    assert c2.compiles == 1 and len(nodes_calling(c2.graphs[0], torch.sin)) == 1


def test_disallow_in_graph_user_function():
    def helper(t):
        return t * 3

    def f(x):
        return helper(x.sin()).cos()

    armature.disallow_in_graph(helper)
    c = Counter()
    cf = armature.compile(f, backend=c)
    x = torch.randn(3)
    check(cf(x), f(x))
    assert c.compiles == 2       # sin | helper as Python | cos
    armature.disallow_in_graph(helper, False)
    check(cf(x), f(x))
    assert c.compiles == 3


def test_allow_and_disallow_replace_each_other():
    def helper(t):
        return t + 2

    def f(x):
        return helper(x) * 2

    armature.allow_in_graph(helper)
    armature.disallow_in_graph(helper)
    assert markers.IN_GRAPH[id(helper)] == (helper, False)
    armature.allow_in_graph(helper, False)      # not allowed now: nothing to undo
    assert markers.IN_GRAPH[id(helper)] == (helper, False)
    c = Counter()
    x = torch.randn(3)
    check(armature.compile(f, backend=c)(x), f(x))
    assert c.compiles == 1 and not nodes_calling(c.graphs[0], helper)


# ------------------------------------------------------------ disable inside compiled code


def _double(x):
    return x * 2


def _disable_inside(x):
    y = x.sin()
    z = armature.disable(_double)(y)
    return z.cos()


def _disable_inside_torch(x):
    y = x.sin()
    z = torch._dynamo.disable(_double)(y)
    return z.cos()


def test_disable_created_inside_compiled_code():
    c = Counter()
    cf = armature.compile(_disable_inside, backend=c)
    x = torch.randn(3)
    check(cf(x), _disable_inside(x))
    check(cf(x), _disable_inside(x))
    assert c.compiles == 2 == torch_frames(_disable_inside_torch, x)
    (entry,) = armature.cache_entries(cf)
    assert "armature.disable" in str(entry.graph_break)


class _WithDisabledHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def helper(self, h):
        return h.tolist() and h * 2     # plain Python

    def forward(self, x):
        h = self.lin(x).relu()
        h = armature.disable(self.helper)(h)
        return h.sum(1)


class _WithDisabledHelperTorch(_WithDisabledHelper):
    def forward(self, x):
        h = self.lin(x).relu()
        h = torch._dynamo.disable(self.helper)(h)
        return h.sum(1)


def test_module_forward_with_disable_of_a_method_compiles():
    m = _WithDisabledHelper()
    c = Counter()
    cm = armature.compile(m, backend=c)
    x = torch.randn(2, 4)
    check(cm(x), m(x))
    check(cm(x), m(x))
    assert c.compiles == 2
    mt = _WithDisabledHelperTorch()
    mt.load_state_dict(m.state_dict())
    assert torch_frames(mt, x) == 2


def test_disable_inside_compiled_code_escapes_and_is_called_twice():
    def f(x):
        d = armature.disable(_double)
        y = d(x) + 1
        z = d(y) + 1
        return z, d

    c = Counter()
    cf = armature.compile(f, backend=c)
    x = torch.randn(3)
    out, d = cf(x)
    check(out, f(x)[0])
    assert getattr(d, "__armature_disabled__", False) and d(x).equal(x * 2)
    assert c.compiles == 2      # (nothing before the first call) | d | + 1 | d | + 1


def test_disable_inside_compiled_code_fullgraph_is_an_error():
    with pytest.raises(armature.Unsupported, match="armature.disable"):
        armature.compile(_disable_inside, backend="eager", fullgraph=True)(torch.randn(3))


def test_disable_of_a_disabled_function_inside():
    inner = armature.disable(_double)

    def f(x):
        return armature.disable(inner)(x.sin()).cos()

    c = Counter()
    cf = armature.compile(f, backend=c)
    x = torch.randn(3)
    check(cf(x), f(x))
    assert c.compiles == 2


# ------------------------------------------------------------ dont_skip_tracing


@armature.disable
def _disabled_helper(x):
    return x * 2 + 1


def _calls_disabled(x):
    return _disabled_helper(x.sin()).cos()


def test_dont_skip_tracing_context_manager_around_the_call():
    c = Counter()
    cf = armature.compile(_calls_disabled, backend=c)
    x = torch.randn(3)
    with armature.dont_skip_tracing():
        check(cf(x), _calls_disabled(x))
    assert c.compiles == 1 and markers.dont_skip_depth == 0
    # outside the region the same call breaks around the disabled helper
    check(cf(x), _calls_disabled(x))
    assert c.compiles == 3 and len(armature.cache_entries(cf)) == 2
    # and inside again the traced entry is used
    with armature.dont_skip_tracing():
        check(cf(x), _calls_disabled(x))
    assert c.compiles == 3


def test_dont_skip_tracing_decorator_on_the_compiled_function():
    c = Counter()
    cf = armature.compile(armature.dont_skip_tracing(_calls_disabled), backend=c, fullgraph=True)
    x = torch.randn(3)
    check(cf(x), _calls_disabled(x))
    assert c.compiles == 1 and markers.dont_skip_depth == 0


def test_dont_skip_tracing_inside_compiled_code():
    @armature.dont_skip_tracing
    def traced_helper(x):
        return _disabled_helper(x) - 1

    def f(x):
        with armature.dont_skip_tracing():
            y = _disabled_helper(x.sin())
        z = traced_helper(y)
        return z.cos()

    c = Counter()
    cf = armature.compile(f, backend=c, fullgraph=True)
    x = torch.randn(3)
    check(cf(x), f(x))
    assert c.compiles == 1 and markers.dont_skip_depth == 0


def test_dont_skip_tracing_applies_to_disable_made_inside():
    def f(x):
        with armature.dont_skip_tracing():
            y = armature.disable(_double)(x.sin())
        return y.cos()

    c = Counter()
    cf = armature.compile(f, backend=c, fullgraph=True)
    x = torch.randn(3)
    check(cf(x), f(x))
    assert c.compiles == 1


def test_dont_skip_tracing_region_split_by_a_graph_break():
    def f(x):
        with armature.dont_skip_tracing():
            y = _disabled_helper(x.sin())
            armature.graph_break()
            y = _disabled_helper(y)          # the resume function traces it too
        return y.cos(), markers.dont_skip_depth

    c = Counter()
    cf = armature.compile(f, backend=c)
    x = torch.randn(3)
    for _ in range(2):
        out, depth = cf(x)
        check(out, f(x)[0])
        assert depth == 0 and markers.dont_skip_depth == 0
    assert c.compiles == 2


def test_dont_skip_tracing_bad_input():
    with pytest.raises(TypeError, match="expects a callable"):
        armature.dont_skip_tracing(3)
