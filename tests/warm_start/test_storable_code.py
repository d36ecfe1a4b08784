"""What real models' entries hold, stored and checked (driver/persist_codec.py):
code that comes from no file (a dataclass's generated ``__init__``: the
output classes of every HuggingFace model), functions behind decorators,
descriptors of a class, the import guards' ``sys.modules``, a module's
logger, a function only its source can name, Sources of derived values,
torch.device constants in the transformed code; and a code hash that does
not move while a process runs.  Each case runs a cold process that stores,
then a warm one that must load with no trace and give the same result --
and, where the case has something that can go stale, a changed file that
must make the warm process compile again.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from machine import generous

pytestmark = pytest.mark.armature_only

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

OUTPUTS = '''
import dataclasses
import torch


@dataclasses.dataclass
class Output:
    hidden: torch.Tensor = None
    scale: float = SCALE
'''

MODEL = '''
import functools
import logging
import os
import torch
from outputs import Output

logger = logging.getLogger("warm_model")


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


class Config:
    def __init__(self):
        self._width = 3

    @property
    def width(self):
        return self._width


CONFIG = Config()
ENCODE = os.environ.encodekey


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    @traced
    def forward(self, x):
        import math
        if logger.isEnabledFor(logging.DEBUG):
            pass
        n = CONFIG.width
        h = self.lin(x) * n + math.pi
        out = Output(h)
        return out.hidden * out.scale + torch.ones(4, device=x.device)


def with_keys(d, x):
    return x * len(dict.keys(d)) + len(list(d))
'''

DRIVER = '''
import json, os, sys
import torch
import armature
from armature.driver import persistent_cache
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model

if os.environ.get("FAKE_TORCH_VERSION"):   # (another torch, as far as the key can tell)
    torch.__version__ = os.environ["FAKE_TORCH_VERSION"]
if os.environ.get("FAKE_PYTHON_VERSION"):
    sys.version = os.environ["FAKE_PYTHON_VERSION"]
torch.manual_seed(0)
net = model.Net()
x = torch.randn(2, 4)
out = armature.compile(net, backend="eager")(x)
print("RESULT " + json.dumps({"stats": persistent_cache.stats, "out": out.tolist(),
                              "eager": net(x).tolist()}))
'''


def _run(tmp_path, **env):
    e = dict(os.environ, ARMATURE_CACHE="1", ARMATURE_CACHE_DIR=str(tmp_path / "cache"),
             PYTHONPATH=os.path.join(ROOT, "src"), PYTHONDONTWRITEBYTECODE="1", ARMATURE_LOGS="cache")
    e.update(env)
    done = subprocess.run([sys.executable, str(tmp_path / "driver.py")], env=e, capture_output=True, text=True,
                          timeout=generous(120))
    assert done.returncode == 0, done.stderr[-3000:]
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result = json.loads(line[len("RESULT "):])
    result["log"] = done.stderr
    return result


@pytest.fixture
def project(tmp_path):
    (tmp_path / "outputs.py").write_text(OUTPUTS.replace("SCALE", "2.0"))
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "driver.py").write_text(DRIVER)
    return tmp_path


def test_an_entry_of_generated_decorated_and_descriptor_code_is_stored_and_loaded(project):
    cold = _run(project)
    assert cold["stats"]["stored"] == 1, cold["log"][-3000:]
    assert cold["out"] == cold["eager"]
    warm = _run(project)
    assert warm["stats"]["traces"] == 0 and warm["stats"]["loaded"] == 1, warm["log"][-3000:]
    assert warm["out"] == cold["out"]


def test_a_changed_dataclass_default_recompiles(project):
    # (the generated __init__'s file is <string>: the file of the class that generated it vouches for it)
    cold = _run(project)
    assert cold["stats"]["stored"] == 1, cold["log"][-3000:]
    (project / "outputs.py").write_text(OUTPUTS.replace("SCALE", "5.0"))
    warm = _run(project)
    assert warm["stats"]["traces"] == 1 and warm["stats"]["loaded"] == 0
    assert warm["out"] == warm["eager"] and warm["out"] != cold["out"]


def test_a_changed_decorated_method_recompiles(project):
    cold = _run(project)
    assert cold["stats"]["stored"] == 1, cold["log"][-3000:]
    (project / "model.py").write_text(MODEL.replace("h = self.lin(x) * n", "h = self.lin(x) * (n + 1)"))
    warm = _run(project)
    assert warm["stats"]["traces"] == 1 and warm["stats"]["loaded"] == 0
    assert warm["out"] == warm["eager"] and warm["out"] != cold["out"]


EXEC_DRIVER = '''
import json, os, torch, armature
from armature.driver import persistent_cache
ns = {}
exec("def helper(x):\\n    return x * FACTOR\\n".replace("FACTOR", os.environ["FACTOR"]), ns)
helper = ns["helper"]
def f(x):
    return helper(x) + 1
x = torch.ones(3)
out = armature.compile(f, backend="eager")(x)
print("RESULT " + json.dumps({"stats": persistent_cache.stats, "out": out.tolist(), "eager": f(x).tolist()}))
'''


def test_a_function_made_by_exec_is_bound_by_its_code(tmp_path):
    """``helper`` comes from no file and no import path names it: its identity
    guard is bound on load to the function found at its source, only if that
    function's code hashes the same."""
    (tmp_path / "driver.py").write_text(EXEC_DRIVER)
    cold = _run(tmp_path, FACTOR="3")
    assert cold["stats"]["stored"] == 1, cold["log"][-3000:]
    warm = _run(tmp_path, FACTOR="3")
    assert warm["stats"]["traces"] == 0 and warm["out"] == cold["out"] == cold["eager"]
    changed = _run(tmp_path, FACTOR="4")
    assert changed["stats"]["loaded"] == 0 and changed["stats"]["traces"] == 1
    assert changed["out"] == changed["eager"] != cold["out"]
    assert "is not the function the entry was built with" in changed["log"]


def test_sources_of_derived_values_are_stored(tmp_path):
    (tmp_path / "driver.py").write_text(textwrap.dedent('''
        import json, torch, armature
        from armature.driver import persistent_cache
        class Registry(dict):
            pass
        REG = Registry(a=1, b=2)
        def f(x):
            return x * len(dict.keys(REG)) + len(list(REG))
        x = torch.ones(3)
        out = armature.compile(f, backend="eager")(x)
        print("RESULT " + json.dumps({"stats": persistent_cache.stats, "out": out.tolist(), "eager": f(x).tolist()}))
    '''))
    cold = _run(tmp_path)
    assert cold["out"] == cold["eager"]
    assert cold["stats"]["stored"] == 1, cold["log"][-2000:]
    warm = _run(tmp_path)
    assert warm["stats"]["traces"] == 0 and warm["out"] == cold["out"]


def test_code_hash_is_stable_while_references_come_and_go():
    """marshal.dumps(code) flags objects by their reference count at that
    moment; the cache's code hash must not depend on it, nor on the hash seed."""
    from armature.driver.persist_codec import code_hash

    def f(x, y="a constant string of its own"):
        return x in {"p", "q", "r"} and y.upper() and 1.5

    before = code_hash(f.__code__)
    held = list(f.__code__.co_consts) + [f.__code__.co_names, f.__code__.co_varnames]
    assert code_hash(f.__code__) == before
    del held
    src = "def f(x):\n    return x in {'p', 'q', 'r', 's'} and 2.5\n"
    hashes = set()
    for seed in ("0", "1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from armature.driver.persist_codec import code_hash; "
             f"ns = {{}}; exec(compile({src!r}, 'm.py', 'exec'), ns); print(code_hash(ns['f'].__code__))"],
            env=dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.path.join(ROOT, "src")),
            capture_output=True, text=True, timeout=generous(60))
        assert done.returncode == 0, done.stderr
        hashes.add(done.stdout.strip())
    assert len(hashes) == 1


def test_each_module_class_has_a_key_of_its_own():
    """Every compiled module runs one code (api._module_call): without the
    module's class in the key, every model's entries would share a folder."""
    import armature
    from armature.driver import persistent_cache

    a = armature.compile(torch.nn.Linear(2, 2), backend="eager")
    b = armature.compile(torch.nn.ReLU(), backend="eager")
    keys = []
    for m in (a, b):
        cf = m._compiled_call()
        keys.append(persistent_cache.key_parts(cf._fn, cf._backend, cf._fullgraph, cf._dynamic,
                                               cf._module_parameters, cf._module_of_call()))
    assert keys[0]["code"] == keys[1]["code"]
    assert keys[0]["module"] != keys[1]["module"]


VIEW_DRIVER = '''
import json, os, torch, armature
from armature.driver import persistent_cache
def f(x, w):
    return torch.relu(x @ w).sum(1)
torch.manual_seed(0)
batch, w = torch.randn(4, 64, 8), torch.randn(8, 3, requires_grad=True)
x = batch[:, :32]   # (a view of a tensor outside the graph, as a model(batch[:, :T]) call passes)
out = armature.compile(f, backend=os.environ["BACKEND"])(x, w)
out.sum().backward()
print("RESULT " + json.dumps({"stats": persistent_cache.stats, "out": out.tolist(), "eager": f(x, w).tolist(),
                              "grad": w.grad.tolist()}))
'''


@pytest.mark.parametrize("backend", ["aot_eager"])
def test_a_view_input_is_stored_and_loaded(tmp_path, backend):
    (tmp_path / "driver.py").write_text(VIEW_DRIVER)
    cold = _run(tmp_path, BACKEND=backend)
    assert cold["stats"]["stored"] == 1, cold["log"][-3000:]
    torch.testing.assert_close(torch.tensor(cold["out"]), torch.tensor(cold["eager"]))
    warm = _run(tmp_path, BACKEND=backend)
    assert warm["stats"]["traces"] == 0 and warm["stats"]["loaded"] == 1, warm["log"][-3000:]
    assert warm["out"] == cold["out"] and warm["grad"] == cold["grad"]


@pytest.mark.parametrize("env,part", [({"FAKE_TORCH_VERSION": "9.9.9"}, "torch"),
                                      ({"FAKE_PYTHON_VERSION": "3.99.0 (another build)"}, "python")])
def test_another_torch_or_python_recompiles(project, env, part):
    cold = _run(project)
    assert cold["stats"]["stored"] == 1, cold["log"][-3000:]
    other = _run(project, **env)
    assert other["stats"]["loaded"] == 0 and other["stats"]["traces"] == 1
    assert other["out"] == other["eager"]
    assert f"stored under another key: {part} changed" in other["log"], other["log"][-3000:]
