"""armature.config.patch(...) inside compiled code: the region is traced with
the option on, compiles into the same graph as its surroundings, and the
option is off again after it (also after an exception)."""
import pytest
import torch

import armature
from armature import config


def region(x):
    y = x * 2
    with armature.config.patch(capture_scalar_outputs=True):
        n = y.sum().item()            # in the graph only inside the region
    return y * n


def outside(x):
    y = x * 2
    with armature.config.patch(capture_scalar_outputs=True):
        z = y + 1
    return z * y.sum().item()        # after the region: a graph break again


def _report(fn, *args, **kw):
    return armature.explain(armature.compile(fn, backend="eager", **kw))(*args)


def test_region_is_traced_with_the_option_and_stays_one_graph():
    x = torch.randn(4)
    report = _report(region, x)
    assert report.graph_count == 1 and report.graph_break_count == 0
    cf = armature.compile(region, backend="eager")
    for _ in range(3):
        x = torch.randn(4)
        torch.testing.assert_close(cf(x), region(x))
    assert config.capture_scalar_outputs is False


def test_option_is_scoped_to_the_region():
    report = _report(outside, torch.randn(4))
    assert report.graph_break_count >= 1
    assert config.capture_scalar_outputs is False


@config.patch(capture_scalar_outputs=True)
def scalar_of(t):
    return t.max().item()


def decorated_caller(x):
    return x * scalar_of(x)


def test_decorated_function_called_from_compiled_code():
    report = _report(decorated_caller, torch.randn(5))
    assert report.graph_count == 1 and report.graph_break_count == 0
    x = torch.randn(5)
    torch.testing.assert_close(armature.compile(decorated_caller, backend="eager")(x), decorated_caller(x))


def raises_in_region(x):
    with armature.config.patch(capture_scalar_outputs=True):
        raise ValueError("boom")


def test_option_restored_after_an_exception_in_the_region():
    cf = armature.compile(raises_in_region, backend="eager")
    with pytest.raises(ValueError, match="boom"):
        cf(torch.ones(2))
    assert config.capture_scalar_outputs is False


def test_non_tracing_option_inside_compiled_code_is_a_clear_error():
    def f(x):
        with armature.config.patch(recompile_limit=3):
            return x + 1
    with pytest.raises(armature.Unsupported, match="recompile_limit"):
        armature.compile(f, backend="eager", fullgraph=True)(torch.ones(2))
    assert config.recompile_limit == 8


def test_bad_value_inside_compiled_code_is_a_clear_error():
    def f(x):
        with armature.config.patch(capture_scalar_outputs="yes"):
            return x + 1
    with pytest.raises(armature.Unsupported, match="capture_scalar_outputs"):
        armature.compile(f, backend="eager", fullgraph=True)(torch.ones(2))


def break_in_region(x):
    with armature.config.patch(capture_scalar_outputs=True):
        print("inside")
        y = x + 1
    return y


def test_graph_break_inside_a_region_runs_correctly(capsys):
    cf = armature.compile(break_in_region, backend="eager")
    torch.testing.assert_close(cf(torch.ones(2)), break_in_region(torch.ones(2)))
    assert config.capture_scalar_outputs is False
