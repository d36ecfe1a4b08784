"""Issue 4's "done when": a model with a print() in forward and a branch on
a tensor value runs compiled with the expected number of graphs and the
same results and effects as eager."""
import copy

import torch

import armature
from helpers import CountingBackend, assert_equal

from .util import dynamo_graph_count


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin1 = torch.nn.Linear(4, 8)
        self.lin2 = torch.nn.Linear(8, 3)
        self.steps = 0
        self.log = []

    def forward(self, x):
        z = self.lin1(x)
        h = z.relu()
        print("Net.forward: step", self.steps)
        self.steps += 1
        if z.sum() < 0:
            out = self.lin2(h)
            self.log.append("big")
        else:
            out = -self.lin2(h)
            self.log.append("small")
        return out.softmax(-1)


def make_net():
    torch.manual_seed(0)
    return Net()


X_BIG = torch.full((2, 4), 3.0)
X_SMALL = torch.full((2, 4), -3.0)


def _check_model(compiled_call, m_c, m_e, inputs):
    for i, x in enumerate(inputs):
        assert_equal(m_e(x), compiled_call(x), f"out (call {i})")
        assert m_c.steps == m_e.steps == i + 1
        assert m_c.log == m_e.log
        assert_equal(m_e.state_dict(), m_c.state_dict(), "state")


def test_branches_of_net_are_both_taken():
    m = make_net()
    m(X_BIG)
    m(X_SMALL)
    assert m.log == ["big", "small"]


def test_model_through_a_compiled_function(capsys):
    """The module called from a compiled function: its forward is inlined,
    its print splits the caller, and forward's own parts are compiled."""
    m_e, m_c = make_net(), make_net()

    def step(model, x):
        return model(x) * 1.0

    counter = CountingBackend()
    cf = armature.compile(step, backend=counter)
    inputs = [X_BIG, X_SMALL, X_BIG * 2, X_SMALL * 2]
    for i, x in enumerate(inputs):
        assert_equal(step(m_e, x), cf(m_c, x), f"out (call {i})")
        assert m_c.steps == m_e.steps == i + 1
        assert m_c.log == m_e.log
    out = capsys.readouterr().out
    assert out.count("Net.forward: step") == 2 * len(inputs)
    # lin1+relu | print | sum<0 | big branch: lin2, softmax | small branch:
    # lin2, neg, softmax | caller's "* 1.0" (after the forward); and
    # ``self.steps``, an int attribute of the module, is static at first and
    # a symbol once it has changed (config.allow_unspec_int_on_nn_module):
    # one recompile of the parts that read it (torch.compile, static: 13
    # graphs over these calls)
    assert counter.frame_count == 7, [gm.code for gm in counter.graphs]
    assert counter.frame_count <= _torch_graphs(lambda m, x: step(m, x), inputs)


def test_compiled_model_with_print_and_branch(capsys):
    m_e, m_c = make_net(), make_net()
    counter = CountingBackend()
    cm = armature.compile(m_c, backend=counter)
    inputs = [X_BIG, X_SMALL, X_BIG * 2, X_SMALL * 2]
    _check_model(cm, m_c, m_e, inputs)
    out = capsys.readouterr().out
    assert out.count("Net.forward: step") == 2 * len(inputs)

    # graphs: lin1+relu | (print) | z.sum() < 0 | one graph per branch, and
    # again once ``self.steps`` has changed (a symbol from then on) where it
    # is read (torch.compile, which keeps it static: 12)
    assert counter.frame_count == 6, [gm.code for gm in counter.graphs]
    assert counter.frame_count <= _torch_graphs(lambda m, x: m(x), inputs)

    e = armature.explain(make_net())(X_BIG)
    print(e)
    assert e.graph_count == 3, str(e)
    assert e.graph_break_count == 2, str(e)
    reasons = " / ".join(r.reason for r in e.break_reasons)
    assert "print" in reasons and "data" in reasons.lower(), reasons
    assert all(r.filename == __file__ for r in e.break_reasons), [str(r) for r in e.break_reasons]
    assert not e.fallbacks


def _torch_graphs(call, inputs) -> int:
    """torch.compile's graphs over ``inputs`` (a fresh Net)."""
    import torch._dynamo
    counter = CountingBackend()
    torch._dynamo.reset()
    try:
        cf = torch.compile(call, backend=counter)
        m = make_net()
        for x in inputs:
            cf(m, x)
    finally:
        torch._dynamo.reset()
    return counter.frame_count


def test_compiled_model_results_and_effects():
    """Results, parameters and the module's plain attributes match eager
    (whatever is or is not captured)."""
    m_e, m_c = make_net(), make_net()
    cm = armature.compile(m_c, backend="eager")
    _check_model(cm, m_c, m_e, [X_BIG, X_SMALL, X_BIG * 2])


def test_model_explain_report_printed():
    e = armature.explain(make_net())(X_BIG)
    report = str(e)
    print(report)
    assert "Graph count:" in report and "Break reasons:" in report


def test_model_graph_count_vs_torch_compile():
    m = make_net()

    def step(model, x):
        return model(x)

    armature.reset()
    ours = armature.explain(step)(m, X_BIG).graph_count
    theirs = dynamo_graph_count(step, make_net(), X_BIG)
    assert ours == theirs, (ours, theirs)


def test_model_grads_match():
    m = make_net()

    def loss_fn(model, x):
        return model(x).pow(2).sum()

    m_e, m_c = copy.deepcopy(m), copy.deepcopy(m)
    cf = armature.compile(loss_fn, backend="aot_eager")
    for x in (X_BIG, X_SMALL):
        loss_fn(m_e, x).backward()
        cf(m_c, x).backward()
    for (n, pe), (_, pc) in zip(m_e.named_parameters(), m_c.named_parameters()):
        torch.testing.assert_close(pc.grad, pe.grad, msg=n)
