"""armature.config set the ways users set it: assignment, set(), patch()
and ARMATURE_<NAME> environment variables, one checked mechanism.

An assignment ``armature.config.recompile_limit = 2`` used to add a module
attribute that nothing read (the option kept its old value, silently).
"""
import os
import subprocess
import sys

import pytest
import torch

import armature
from helpers import armature_only
from machine import generous

pytestmark = armature_only

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def restore_config():
    saved = {name: getattr(armature.config.config, name) for name in armature.config._FIELDS}
    yield
    for name, value in saved.items():
        setattr(armature.config.config, name, value)


def _entries(cf):
    return len(armature.cache_entries(cf))


def test_assignment_takes_effect(restore_config):
    """The recompile limit set by assignment stops compiling at 2 entries."""
    def f(x, n):
        return x[:n] * 2

    armature.config.recompile_limit = 2
    assert armature.config.config.recompile_limit == 2
    assert "recompile_limit" not in vars(armature.config)
    cf = armature.compile(f, backend="eager", dynamic=False)
    x = torch.randn(6)
    with pytest.warns(RuntimeWarning, match="recompile limit"):
        for n in (1, 2, 3, 4):
            torch.testing.assert_close(cf(x, n), f(x, n))
    assert _entries(cf) == 2


def test_assignment_of_a_tracing_option(restore_config):
    """capture_scalar_outputs set by assignment keeps .item() in the graph."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(x):
        return x * x.sum().item()

    x = torch.randn(4)
    armature.compile(f, backend=backend)(x)
    broken = len(graphs)
    armature.reset()
    graphs.clear()
    armature.config.capture_scalar_outputs = True
    torch.testing.assert_close(armature.compile(f, backend=backend)(x), f(x))
    assert (broken, len(graphs)) == (2, 1)


@pytest.mark.parametrize("name,value,error", [
    ("recompile_limt", 2, AttributeError),          # a misspelt option
    ("recompile_limit", "2", TypeError),
    ("recompile_limit", True, TypeError),
    ("recompile_limit", 0, ValueError),
    ("capture_scalar_outputs", 1, TypeError),
    ("module_parameters", "params", ValueError),
    ("dynamic_sources", ["n"], TypeError),
])
def test_assignment_is_checked_like_patch(restore_config, name, value, error):
    before = {n: getattr(armature.config, n) for n in armature.config._FIELDS}
    with pytest.raises(error):
        setattr(armature.config, name, value)
    with pytest.raises(error):
        armature.config.set(**{name: value})
    with pytest.raises(error):
        armature.config.patch(**{name: value})
    with pytest.raises(error):
        setattr(armature.config.config, name, value)
    assert {n: getattr(armature.config, n) for n in armature.config._FIELDS} == before
    assert name not in vars(armature.config)


def test_patch_restores_an_assigned_value(restore_config):
    armature.config.dynamic_sources = "n"
    with armature.config.patch(dynamic_sources="m"):
        assert armature.config.dynamic_sources == "m"
    assert armature.config.dynamic_sources == "n"
    assert armature.config.dynamic_sources_list() == ["n"]


def test_options_cannot_be_deleted():
    with pytest.raises(AttributeError, match="cannot be deleted"):
        del armature.config.recompile_limit
    assert armature.config.recompile_limit >= 1


def _run(code, **env):
    full = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "src"),
                                                                    os.environ.get("PYTHONPATH")])), **env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=generous(120))


def test_environment_variables():
    done = _run("import armature; c = armature.config; "
                "print(c.recompile_limit, c.capture_scalar_outputs, c.module_parameters)",
                ARMATURE_RECOMPILE_LIMIT="3", ARMATURE_CAPTURE_SCALAR_OUTPUTS="on",
                ARMATURE_MODULE_PARAMETERS="inputs")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "True", "inputs"]


@pytest.mark.parametrize("var,value,message", [
    ("ARMATURE_RECOMPILE_LIMIT", "many", "expected an integer"),
    ("ARMATURE_RECOMPILE_LIMIT", "0", ">= 1"),
    ("ARMATURE_CAPTURE_SCALAR_OUTPUTS", "maybe", "expected 1/0"),
])
def test_bad_environment_variable_raises(var, value, message):
    done = _run("import armature", **{var: value})
    assert done.returncode != 0
    assert var in done.stderr and message in done.stderr
