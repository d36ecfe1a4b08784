"""User control over graph breaks: armature.graph_break(), armature.disable,
explain() and the graph_breaks log."""
import inspect
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import armature
from helpers import assert_same, t

from .util import check_calls, explain_fresh
from machine import generous


def _line_of(fn, needle):
    src, start = inspect.getsourcelines(fn)
    for i, line in enumerate(src):
        if needle in line:
            return start + i
    raise AssertionError(needle)


# --------------------------------------------------------------------------
# armature.graph_break()
# --------------------------------------------------------------------------


def forced(x):
    y = x.sin()
    armature.graph_break()
    return y.cos()


def forced_twice(x):
    y = x.sin()
    armature.graph_break()
    y = y.cos()
    armature.graph_break()
    return y.exp()


def test_graph_break_forces_a_break():
    assert_same(forced, t(4), fullgraph=False, graphs=2)
    e = explain_fresh(forced, t(4))
    assert e.graph_count == 2 and e.graph_break_count == 1, str(e)
    assert e.ops_per_graph == [1, 1], str(e)
    e2 = explain_fresh(forced_twice, t(4))
    assert e2.graph_count == 3 and e2.graph_break_count == 2, str(e2)


def test_graph_break_outside_compiled_code_is_a_noop():
    assert armature.graph_break() is None
    x = t(3)
    torch.testing.assert_close(forced(x), x.sin().cos())


def test_graph_break_with_fullgraph_raises():
    with pytest.raises(armature.Unsupported) as ei:
        armature.compile(forced, backend="eager", fullgraph=True)(t(3))
    msg = str(ei.value)
    assert "graph_break" in msg
    assert f"{os.path.basename(__file__)}" in msg or __file__ in msg


# --------------------------------------------------------------------------
# armature.disable
# --------------------------------------------------------------------------


@armature.disable
def np_helper(x):
    a = x.detach().numpy()
    return torch.from_numpy(np.tanh(a) * 2)


def plain_np_helper(x):
    a = x.detach().numpy()
    return torch.from_numpy(np.cumsum(a))


np_helper_by_call = armature.disable(plain_np_helper)


def uses_disabled_decorator(x):
    y = x + 1
    z = np_helper(y)
    return z * y


def uses_disabled_call(x):
    y = x * 3
    z = np_helper_by_call(y)
    return z - y


CALLS_IN_DISABLED = []


@armature.disable
def disabled_with_torch_ops(x):
    CALLS_IN_DISABLED.append(type(x))
    return torch.special.erf(x) + 100


def uses_disabled_torch(x):
    return disabled_with_torch_ops(x.sin()).cos()


@pytest.mark.parametrize("fn", [uses_disabled_decorator, uses_disabled_call, uses_disabled_torch])
def test_disable_runs_natively_and_breaks_around(fn):
    assert_same(fn, t(4), fullgraph=False, graphs=2)
    e = explain_fresh(fn, t(4))
    assert not e.fallbacks
    assert e.graph_count == 2 and e.graph_break_count == 1, str(e)
    r = e.break_reasons[0]
    assert "disable" in r.reason.lower() or "np_helper" in r.reason or "disabled" in r.reason, r.reason
    assert r.filename == __file__


def test_disabled_function_ops_are_not_in_graphs():
    CALLS_IN_DISABLED.clear()
    e = explain_fresh(uses_disabled_torch, t(4))
    code = "\n".join(gm.code for gm in e.graphs)
    assert "erf" not in code, code
    assert "sin" in code and "cos" in code, code
    # it really ran, on a real tensor
    assert CALLS_IN_DISABLED == [torch.Tensor]


def test_disable_keeps_metadata_and_behaviour():
    assert np_helper.__name__ == "np_helper"
    assert np_helper_by_call.__name__ == "plain_np_helper"
    x = t(3)
    torch.testing.assert_close(np_helper_by_call(x), plain_np_helper(x))


def test_disable_on_a_compiled_function_runs_it_natively():
    cf = armature.compile(uses_disabled_decorator, backend="eager")
    d = armature.disable(cf)
    x = t(3)
    torch.testing.assert_close(d(x), uses_disabled_decorator(x))

    def outer(x):
        return d(x * 2) + 1

    e = explain_fresh(outer, x)
    assert e.graph_count == 2, str(e)
    torch.testing.assert_close(e.out, outer(x))


def test_disable_rejects_non_callables():
    with pytest.raises(TypeError):
        armature.disable(3)


def test_disabled_method_on_module():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        @armature.disable
        def stats(self, h):
            return float(np.abs(h.detach().numpy()).mean())

        def forward(self, x):
            h = self.lin(x)
            s = self.stats(h)
            return h / (s + 1)

    assert_same(M(), t(2, 3), fullgraph=False, graphs=2)


# --------------------------------------------------------------------------
# explain()
# --------------------------------------------------------------------------


def explained(x, n):
    y = x * n
    print("explained: break here")
    z = y.relu() + 1
    return z.sum()


def test_explain_fields():
    x = t(4)
    e = explain_fresh(explained, x, 3)
    assert e.graph_count == 2
    assert e.graph_break_count == 1
    assert len(e.graphs) == 2 and all(isinstance(g, torch.fx.GraphModule) for g in e.graphs)
    assert e.ops_per_graph == [1, 3], e.ops_per_graph
    assert len(e.guards) >= 2 and all(isinstance(g, list) for g in e.guards)
    assert not e.fallbacks
    torch.testing.assert_close(e.out, explained(x, 3))
    (r,) = e.break_reasons
    assert "print" in r.reason
    assert r.filename == __file__
    assert r.lineno == _line_of(explained, 'print("explained')
    assert r.source_line.strip() == 'print("explained: break here")'


def test_explain_report_mentions_reason_and_location():
    e = explain_fresh(explained, t(4), 3)
    report = str(e)
    print(report)
    line = _line_of(explained, 'print("explained')
    assert "Graph count: 2" in report
    assert "Graph break count: 1" in report
    assert "print" in report
    assert f"{__file__}:{line}" in report, report
    assert 'print("explained: break here")' in report


def test_explain_of_compiled_function():
    cf = armature.compile(explained, backend="eager")
    armature.reset()
    e = armature.explain(cf)(t(4), 2)
    assert e.graph_count == 2, str(e)


def test_explain_no_break():
    def fn(x):
        return x.sin() + 1

    e = explain_fresh(fn, t(3))
    assert e.graph_count == 1 and e.graph_break_count == 0 and e.break_reasons == []
    assert "Graph break count: 0" in str(e)


def test_explain_after_earlier_compile_reports_every_graph():
    x = t(4)
    armature.compile(explained, backend="eager")(x, 3)
    e = armature.explain(explained)(x, 3)
    assert e.graph_count == 2, str(e)


# --------------------------------------------------------------------------
# the graph_breaks log
# --------------------------------------------------------------------------


def logged(x):
    y = x + 1
    armature.graph_break()
    return y * 2


def test_graph_breaks_log_with_caplog(caplog):
    lg = logging.getLogger("armature.graph_breaks")
    lg.addHandler(caplog.handler)  # also when ARMATURE_LOGS disabled propagation
    try:
        with caplog.at_level(logging.DEBUG, logger="armature.graph_breaks"):
            armature.compile(logged, backend="eager")(t(3))
    finally:
        lg.removeHandler(caplog.handler)
    recs = [r for r in caplog.records if r.name == "armature.graph_breaks"]
    assert recs, caplog.text
    msg = "\n".join(r.getMessage() for r in recs)
    line = _line_of(logged, "armature.graph_break()")
    assert f"{__file__}:{line}" in msg, msg
    assert "graph_break" in msg
    assert "logged" in msg


def test_graph_breaks_log_silent_without_break(caplog):
    def fn(x):
        return x + 1

    with caplog.at_level(logging.DEBUG, logger="armature.graph_breaks"):
        armature.compile(fn, backend="eager")(t(3))
    assert not [r for r in caplog.records if r.name == "armature.graph_breaks"]


def test_armature_logs_env_var(tmp_path):
    script = tmp_path / "user_code.py"
    script.write_text(textwrap.dedent("""
        import torch, armature

        def f(x):
            y = x.sin()
            print("hello from user code")
            return y.cos()

        armature.compile(f, backend="eager")(torch.ones(3))
    """))
    env = dict(os.environ, ARMATURE_LOGS="graph_breaks")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=generous(120))
    assert p.returncode == 0, p.stderr
    assert "hello from user code" in p.stdout
    assert f"{script}:6" in p.stderr, p.stderr
    assert "print" in p.stderr and "graph_breaks" in p.stderr, p.stderr


def test_fallback_when_frame_cannot_be_split_keeps_results():
    """A frame that cannot be split still runs, as plain Python."""
    def fn(x, d):
        try:
            y = x + 1
            print("in try")
            return y + d["k"]
        except KeyError:
            return x

    check_calls(fn, lambda: (torch.ones(2), {"k": 1.0}), calls=2, allow_fallback=True, min_graphs=0)
