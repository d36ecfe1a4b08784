"""The warm start (driver/persistent_cache.py), in real processes: a cold
process compiles and stores, a warm one loads and runs its first call
without tracing (stats["traces"] counts every trace armature starts), and
every way an entry may have gone stale makes the warm process compile again
with the right answer.

Each process gets this test's own cache directory (ARMATURE_CACHE_DIR) and
ARMATURE_CACHE=1; the model lives in a file the test writes (so a test can
change its source between processes).  Results are saved with torch.save
and compared bit for bit with eager and with the cold process.
"""
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest
import torch

from armature.backends import inductor_warm

from machine import generous

pytestmark = pytest.mark.armature_only

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HELPER = '''
def scale(x):
    return x * 2
'''

MODEL = '''
import torch
import helper

K = 3


def uses_helper(x):
    return helper.scale(x.sin()) + 1


def f(x, y):
    return torch.relu(x @ y) * K + x.sin()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.scale = 0.5

    def forward(self, x):
        return self.norm(torch.relu(self.lin(x))) * self.scale + x


def g(x):
    return (x * 2).cos().sum(0)


def with_check(x):
    if (x != x).any():   # (a branch that only raises, assumed not taken: such entries are not stored)
        raise ValueError("nan in x")
    return (x * 2).cos().sum(0)


def pair(x, y):
    if x.size(0) == y.size(0):   # (sizes equal: a relation the entry's guards keep)
        return (x * y).sum(0)
    return x.sum(0) - y.sum(0)


def with_break(x):
    y = x.sin()
    if y.sum() > 0:   # (data-dependent: a graph break)
        return y.cos() + 1
    return y - 1
'''

DRIVER = '''
import json, os, sys
import torch
import armature
from armature.driver import persistent_cache
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model

backend = os.environ.get("WS_BACKEND", "eager")
what = sys.argv[1]
out = {}
steps = []   # (traces so far, after each call)
torch.manual_seed(0)
if "K" in os.environ:
    model.K = int(os.environ["K"])
if what == "basic":
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    out["f"] = armature.compile(model.f, backend=backend)(x, y)
    out["f_eager"] = model.f(x, y)
    block = model.Block()
    xb = torch.randn(2, 8)
    out["block"] = armature.compile(block, backend=backend)(xb)
    out["block_eager"] = block(xb)
elif what == "sizes":
    fn = getattr(model, os.environ.get("FN", "g"))
    cg = armature.compile(fn, backend=backend)
    for n in [int(s) for s in os.environ["SIZES"].split(",")]:
        x = torch.randn(n, 3)
        out[f"g{n}"] = cg(x)
        out[f"g{n}_eager"] = fn(x)
        steps.append(persistent_cache.stats["traces"])
elif what == "sizes_grad":
    cg = armature.compile(model.g, backend=backend)
    for n in [int(s) for s in os.environ["SIZES"].split(",")]:
        x = torch.randn(n, 3, requires_grad=True)
        out[f"g{n}"] = cg(x)
        out[f"g{n}"].sum().backward()
        out[f"gx{n}"], x.grad = x.grad, None
        out[f"g{n}_eager"] = model.g(x)
        out[f"g{n}_eager"].sum().backward()
        out[f"gx{n}_eager"] = x.grad
        steps.append(persistent_cache.stats["traces"])
elif what == "pairs":
    cp = armature.compile(model.pair, backend=backend)
    for n, m in [map(int, p.split(":")) for p in os.environ["PAIRS"].split(",")]:
        x, y = torch.randn(n, 3), torch.randn(m, 3)
        out[f"p{n}_{m}"] = cp(x, y)
        out[f"p{n}_{m}_eager"] = model.pair(x, y)
        steps.append(persistent_cache.stats["traces"])
elif what == "dtypes":
    cg = armature.compile(model.g, backend=backend)
    for dt in (torch.float32, torch.float64):
        x = torch.randn(5, 3, dtype=dt)
        out[str(dt)] = cg(x)
        out[str(dt) + "_eager"] = model.g(x)
elif what == "helper":
    x = torch.randn(4)
    out["h"] = armature.compile(model.uses_helper, backend=backend)(x)
    out["h_eager"] = model.uses_helper(x)
elif what == "grads":
    block = model.Block()
    xb = torch.randn(2, 8, requires_grad=True)
    out["y"] = armature.compile(block, backend=backend)(xb)
    out["y"].sum().backward()
    out["gx"], out["gw"] = xb.grad, block.lin.weight.grad
    xb.grad = None
    block.lin.weight.grad = None
    out["y_eager"] = block(xb)
    out["y_eager"].sum().backward()
    out["gx_eager"], out["gw_eager"] = xb.grad, block.lin.weight.grad
elif what == "nograd":
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    block = model.Block()
    xb = torch.randn(2, 8)
    with torch.no_grad():
        out["f"] = armature.compile(model.f, backend=backend)(x, y)
        out["block"] = armature.compile(block, backend=backend)(xb)
        out["f_eager"] = model.f(x, y)
        out["block_eager"] = block(xb)
elif what == "nograd_then_grads":   # (the first call, under no_grad, loads the entries of both modes)
    block = model.Block()
    xb = torch.randn(2, 8, requires_grad=True)
    cb = armature.compile(block, backend=backend)
    with torch.no_grad():
        out["n"] = cb(xb)
        out["n_eager"] = block(xb)
    out["y"] = cb(xb)
    out["y"].sum().backward()
    out["gx"], xb.grad = xb.grad, None
    out["y_eager"] = block(xb)
    out["y_eager"].sum().backward()
    out["gx_eager"] = xb.grad
elif what == "break":
    x = torch.randn(3)
    out["b"] = armature.compile(model.with_break, backend=backend)(x)
    out["b_eager"] = model.with_break(x)
torch.save(out, os.environ["WS_OUT"])
print("STATS " + json.dumps(persistent_cache.stats))
print("STEPS " + json.dumps(steps))
print("IMPORTED " + json.dumps(sorted(m for m in ("torch._inductor", "torch._dynamo") if m in sys.modules)))
'''


class Proc:
    def __init__(self, completed, out):
        self.completed = completed
        self.out = out
        self.stderr = completed.stderr
        line = [ln for ln in completed.stdout.splitlines() if ln.startswith("STATS ")][-1]
        self.stats = json.loads(line[len("STATS "):])
        line = [ln for ln in completed.stdout.splitlines() if ln.startswith("IMPORTED ")][-1]
        self.imported = json.loads(line[len("IMPORTED "):])
        line = [ln for ln in completed.stdout.splitlines() if ln.startswith("STEPS ")][-1]
        self.steps = json.loads(line[len("STEPS "):])


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "helper.py").write_text(HELPER)
    (tmp_path / "driver.py").write_text(DRIVER)
    cache = tmp_path / "cache"
    counter = [0]

    def run(what, *, logs=True, wait=True, **env):
        counter[0] += 1
        out = tmp_path / f"out{counter[0]}.pt"
        e = dict(os.environ, ARMATURE_CACHE="1", ARMATURE_CACHE_DIR=str(cache), WS_OUT=str(out),
                 PYTHONPATH=os.path.join(ROOT, "src"), PYTHONDONTWRITEBYTECODE="1",
                 TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))   # (this test's inductor caches too)
        if logs:
            e["ARMATURE_LOGS"] = "cache"
        e.update({k: str(v) for k, v in env.items()})
        cmd = [sys.executable, str(tmp_path / "driver.py"), what]
        if not wait:
            return subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), out
        done = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=generous(120))
        assert done.returncode == 0, done.stderr[-3000:]
        return Proc(done, torch.load(out))

    run.dir = tmp_path
    run.cache = cache
    return run


def _same_as_eager(p: Proc):
    for k, v in p.out.items():
        if not k.endswith("_eager"):
            assert torch.equal(v, p.out[k + "_eager"]), k


def _close_to_eager(p: Proc, atol=1e-6):
    for k, v in p.out.items():
        if not k.endswith("_eager"):
            assert torch.allclose(v, p.out[k + "_eager"], atol=atol), k


def _entry_files(cache):
    return sorted(str(p) for p in cache.rglob("*.entry"))


def test_warm_process_runs_first_call_without_tracing(ws):
    cold = ws("basic")
    _same_as_eager(cold)
    assert cold.stats["traces"] >= 2 and cold.stats["stored"] == 2, cold.stderr
    warm = ws("basic")
    assert warm.stats["traces"] == 0, warm.stderr   # (fails without the cache: 2 traces)
    assert warm.stats["loaded"] == 2
    assert "loaded an entry of f" in warm.stderr
    for k in cold.out:
        assert torch.equal(cold.out[k], warm.out[k]), k
    _same_as_eager(warm)


def test_report_marks_loaded_entries(ws):
    """The run's HTML report (ARMATURE_REPORT) lists the entries a warm
    process loaded, each marked loaded from disk with its file; a cold
    run's entries are not marked."""
    cold_report, warm_report = ws.dir / "cold.html", ws.dir / "warm.html"
    ws("basic", ARMATURE_REPORT=cold_report)
    warm = ws("basic", ARMATURE_REPORT=warm_report)
    assert warm.stats["loaded"] == 2
    cold_html, warm_html = cold_report.read_text(), warm_report.read_text()
    assert "loaded from disk" not in cold_html
    assert warm_html.count("<b>Loaded from disk</b>") == 2, warm_html[-3000:]   # (without: not listed at all)
    for path in _entry_files(ws.cache):
        assert path in warm_html
    assert "Block" in warm_html and "def f(" in warm_html


def test_changed_source_recompiles_with_the_new_code(ws):
    ws("basic")
    (ws.dir / "model.py").write_text(MODEL.replace("* K + x.sin()", "* K + x.cos()"))
    warm = ws("basic")
    _same_as_eager(warm)   # (an entry loaded for the old source would give x.sin())
    assert warm.stats["loaded"] == 0 and warm.stats["traces"] >= 2, warm.stderr
    assert "source file changed" in warm.stderr


def test_changed_inlined_function_in_another_file_recompiles(ws):
    cold = ws("helper")
    assert cold.stats["stored"] == 1
    (ws.dir / "helper.py").write_text(HELPER.replace("x * 2", "x * 3"))
    warm = ws("helper")
    _same_as_eager(warm)   # (the stored entry multiplies by 2)
    assert warm.stats["loaded"] == 0 and warm.stats["traces"] == 1, warm.stderr
    assert "helper.py" in warm.stderr


def test_changed_global_fails_the_loaded_guard(ws):
    ws("basic")
    warm = ws("basic", K=5)
    _same_as_eager(warm)   # (the loaded entry multiplies by 3)
    assert warm.stats["loaded"] == 2
    assert warm.stats["traces"] == 1, warm.stderr   # f again; the block's entry is used


def test_another_backend_is_a_miss(ws):
    ws("basic")
    warm = ws("basic", WS_BACKEND="aot_eager")
    _same_as_eager(warm)
    assert warm.stats["loaded"] == 0 and warm.stats["traces"] >= 2
    assert "backend changed" in warm.stderr, warm.stderr


def test_another_config_is_a_miss(ws):
    ws("basic")
    warm = ws("basic", ARMATURE_RECOMPILE_LIMIT=3)
    assert warm.stats["loaded"] == 0 and warm.stats["traces"] >= 2
    assert "config changed" in warm.stderr, warm.stderr


def test_corrupt_entry_warns_once_and_recompiles(ws):
    ws("basic")
    files = _entry_files(ws.cache)
    assert len(files) == 2
    for path in files:
        data = open(path, "rb").read()
        open(path, "wb").write(data[: len(data) // 2])   # truncated
    warm = ws("basic", logs=False)
    _same_as_eager(warm)
    assert warm.stats["corrupt"] == 2 and warm.stats["traces"] >= 2
    assert warm.stderr.count("ignoring a corrupt compile cache file") == 2, warm.stderr
    again = ws("basic")   # the recompiled entries were stored again
    assert again.stats["traces"] == 0, again.stderr


def test_flipped_byte_is_corrupt(ws):
    ws("sizes", SIZES="4")
    [path] = _entry_files(ws.cache)
    data = bytearray(open(path, "rb").read())
    data[-5] ^= 0xFF
    open(path, "wb").write(bytes(data))
    warm = ws("sizes", SIZES="4", logs=False)
    _same_as_eager(warm)
    assert warm.stats["corrupt"] == 1 and warm.stats["traces"] == 1
    assert warm.stderr.count("ignoring a corrupt compile cache file") == 1


def test_concurrent_writers_leave_a_valid_cache(ws):
    procs = [ws("basic", wait=False) for _ in range(3)]
    for p, _ in procs:
        _, err = p.communicate(timeout=generous(180))
        assert p.returncode == 0, err[-3000:]
    from armature.driver import persistent_cache
    files = _entry_files(ws.cache)
    assert len(files) == 2   # (the same entries, written under the same names)
    for path in files:
        assert persistent_cache._read(path) is not None
    warm = ws("basic")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 2


def test_dynamic_sizes_load_and_serve_a_new_size(ws):
    cold = ws("sizes", SIZES="3,4,5")
    _same_as_eager(cold)
    assert cold.stats["stored"] == 2, cold.stderr   # static for 3, dynamic from 4
    warm = ws("sizes", SIZES="7,9")
    _same_as_eager(warm)
    assert warm.stats["traces"] == 0, warm.stderr   # the dynamic entry serves 7 and 9


def test_dynamic_decision_is_remembered(ws):
    ws("sizes", SIZES="3,4")
    warm = ws("sizes", SIZES="3,4")
    assert warm.stats["traces"] == 0


def test_several_entries_of_one_function(ws):
    cold = ws("dtypes")
    assert cold.stats["stored"] == 2
    warm = ws("dtypes")
    _same_as_eager(warm)
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 2


@pytest.mark.aot_eager
def test_aot_eager_entry_loads_with_gradients(ws):
    cold = ws("grads", WS_BACKEND="aot_eager")
    assert cold.stats["stored"] == 1, cold.stderr
    warm = ws("grads", WS_BACKEND="aot_eager")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 1, warm.stderr
    for k in cold.out:
        assert torch.allclose(cold.out[k], warm.out[k]), k
        if not k.endswith("_eager"):
            assert torch.allclose(warm.out[k], warm.out[k + "_eager"], atol=1e-6), k


@pytest.mark.inductor
def test_inductor_entry_loads(ws):
    cold = ws("basic", WS_BACKEND="inductor")
    assert cold.stats["stored"] == 2, cold.stderr
    warm = ws("basic", WS_BACKEND="inductor")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 2, warm.stderr
    for k in cold.out:
        assert torch.equal(cold.out[k], warm.out[k]), k


#: inductor's module is kept on torch 2.13+ only (backends/inductor_warm.py SUPPORTED); on 2.11-2.12 the
#: stored graph compiles again through inductor's caches, which the other inductor tests cover
KEEPS_INDUCTOR_MODULE = pytest.mark.skipif(not inductor_warm.SUPPORTED,
                                           reason=f"torch {torch.__version__}: inductor's module is not kept before 2.13")


@pytest.mark.inductor
@KEEPS_INDUCTOR_MODULE
def test_inductor_entry_runs_without_importing_inductor(ws):
    """A warm process runs inductor's stored module and kernels
    (backends/inductor_warm.py): neither inductor nor dynamo is imported,
    and the results are the cold process's, bit for bit."""
    cold = ws("nograd", WS_BACKEND="inductor")
    assert cold.stats["stored"] == 2, cold.stderr
    assert "artifact" not in cold.stderr, cold.stderr   # (kept for both graphs)
    warm = ws("nograd", WS_BACKEND="inductor")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 2, warm.stderr
    assert warm.imported == [], warm.stderr   # (without the stored module: inductor compiles from its caches)
    for k in cold.out:
        assert torch.equal(cold.out[k], warm.out[k]), k
        if not k.endswith("_eager"):
            assert torch.allclose(warm.out[k], warm.out[k + "_eager"], atol=1e-5), k


@pytest.mark.inductor
@KEEPS_INDUCTOR_MODULE
def test_inductor_module_kept_when_inductors_caches_are_warm(ws):
    """A cold armature process (its cache emptied) whose inductor caches
    already hold the graphs still keeps inductor's modules (AOTAutograd's
    cache would answer without inductor's inner compile: it is skipped for
    inference graphs), and the next process runs them without inductor."""
    import shutil
    ws("nograd", WS_BACKEND="inductor")
    shutil.rmtree(ws.cache)
    cold = ws("nograd", WS_BACKEND="inductor")
    assert cold.stats["traces"] >= 2 and cold.stats["stored"] == 2, cold.stderr
    assert "artifact" not in cold.stderr, cold.stderr   # (without the skip: "inductor compiled no graph")
    warm = ws("nograd", WS_BACKEND="inductor")
    assert warm.stats["loaded"] == 2 and warm.imported == [], warm.stderr
    for k in cold.out:
        assert torch.equal(cold.out[k], warm.out[k]), k


@pytest.mark.inductor
@KEEPS_INDUCTOR_MODULE
def test_inductor_module_not_used_under_other_settings(ws):
    """Another thread count (inductor builds its kernels for one) or
    another inductor setting: the stored module is not used; the graph is
    compiled again through inductor, with the right result."""
    cold = ws("nograd", WS_BACKEND="inductor")
    for env in ({"OMP_NUM_THREADS": "1"}, {"TORCHINDUCTOR_SIZE_ASSERTS": "0"}):
        warm = ws("nograd", WS_BACKEND="inductor", **env)
        assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 2, warm.stderr
        assert "inductor's settings differ from the compiling process's" in warm.stderr, warm.stderr
        assert "torch._inductor" in warm.imported
        for k in cold.out:
            assert torch.allclose(cold.out[k], warm.out[k], atol=1e-6), k


@pytest.mark.inductor
def test_inductor_training_graph_is_compiled_again_and_right(ws):
    """A graph with a backward keeps AOTAutograd's autograd function: no
    stored module; the warm process compiles through inductor's caches."""
    cold = ws("grads", WS_BACKEND="inductor")
    if inductor_warm.SUPPORTED:   # (before 2.13 no module is kept for any graph)
        assert "not an inference graph" in cold.stderr, cold.stderr
    warm = ws("grads", WS_BACKEND="inductor")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 1, warm.stderr
    for k in cold.out:
        assert torch.allclose(cold.out[k], warm.out[k], atol=1e-6), k


@pytest.mark.aot_eager
def test_aot_eager_dynamic_entry_loads_and_serves_new_sizes_with_gradients(ws):
    """A graph traced with a dynamic size is stored for a backend that
    compiles it again (driver/persist_shapes.py: its symbols, ranges and
    guards in a fresh ShapeEnv): a warm process calling new sizes traces
    nothing, with eager's values and gradients."""
    cold = ws("sizes_grad", SIZES="4,8", WS_BACKEND="aot_eager")
    _close_to_eager(cold)
    assert cold.stats["stored"] == 2, cold.stderr   # static for 4, dynamic from 8 (before: 1, "not stored")
    warm = ws("sizes_grad", SIZES="16,32", WS_BACKEND="aot_eager")
    assert warm.steps == [0, 0] and warm.stats["loaded"] == 2, warm.stderr
    _close_to_eager(warm)


@pytest.mark.aot_eager
def test_loaded_graph_is_compiled_under_its_own_grad_mode(ws):
    """A warm process's first call, under no_grad, loads the entries stored
    for both grad modes; the one traced with grad mode on is compiled on
    its own first call, with grad mode on, so it has a backward (compiled
    on load, under no_grad, AOTAutograd made it an inference graph: no
    gradient)."""
    cold = ws("nograd_then_grads", WS_BACKEND="aot_eager")
    assert cold.stats["stored"] == 2, cold.stderr
    warm = ws("nograd_then_grads", WS_BACKEND="aot_eager")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 2, warm.stderr
    _close_to_eager(warm)


@pytest.mark.aot_eager
def test_loaded_dynamic_entry_keeps_its_size_guards(ws):
    """The guards a loaded dynamic entry was compiled under still decide
    what it serves: equal sizes (the relation its trace saw) are served,
    unequal sizes and size 1 (it was compiled for sizes >= 2) are traced
    afresh, with eager's results."""
    cold = ws("pairs", PAIRS="3:3,4:4", WS_BACKEND="aot_eager")
    _close_to_eager(cold)
    assert cold.stats["stored"] == 2, cold.stderr
    warm = ws("pairs", PAIRS="5:5,6:7,1:1", WS_BACKEND="aot_eager")
    _close_to_eager(warm)
    assert warm.stats["loaded"] == 2, warm.stderr
    assert warm.steps == [0, 1, 2], warm.stderr   # (5:5 loaded; 6:7 and 1:1 fail its guards)


@pytest.mark.inductor
def test_inductor_dynamic_entry_loads_and_serves_new_sizes(ws):
    """An inductor graph of dynamic sizes: its compiled module (whose
    wrapper takes the sizes as arguments) runs in the warm process without
    inductor; under other inductor settings the graph is compiled again
    from its stored symbols through inductor.  New sizes, no trace."""
    cold = ws("sizes", SIZES="3,4", WS_BACKEND="inductor")
    _close_to_eager(cold, atol=1e-5)
    assert cold.stats["stored"] == 2, cold.stderr
    if inductor_warm.SUPPORTED:
        assert "artifact" not in cold.stderr, cold.stderr   # (kept for the dynamic graph too)
    warm = ws("sizes", SIZES="16,32", WS_BACKEND="inductor")
    assert warm.steps == [0, 0] and warm.stats["loaded"] == 2, warm.stderr
    if inductor_warm.SUPPORTED:
        assert warm.imported == [], warm.stderr
    _close_to_eager(warm, atol=1e-5)
    other = ws("sizes", SIZES="16,32", WS_BACKEND="inductor", OMP_NUM_THREADS=1)
    assert other.steps == [0, 0] and other.stats["loaded"] == 2, other.stderr
    _close_to_eager(other, atol=1e-5)


def test_dynamic_decisions_persist_for_an_unstorable_frame(ws):
    """A frame whose entries cannot be stored (it assumes a check does not raise)
    still leaves its dynamic-shape decisions beside where they would be:
    the next process compiles the dim dynamic on its first call, and does
    not recompile for the next size."""
    cold = ws("sizes", FN="with_check", SIZES="4,8")
    _same_as_eager(cold)
    assert cold.stats["stored"] == 0 and cold.steps == [1, 2], cold.stderr
    warm = ws("sizes", FN="with_check", SIZES="16,32")
    _same_as_eager(warm)
    assert warm.steps == [1, 1], warm.stderr   # (without the hints: [1, 2], static for 16, dynamic for 32)
    assert [p.name for p in ws.cache.rglob("dynamic.hints")] == ["dynamic.hints"]


def test_frame_with_a_graph_break_is_stored_and_stays_right(ws):
    """The frame and the resume function of the branch taken are stored
    (driver/persist_callees.py; more in test_warm_breaks.py)."""
    cold = ws("break")
    _same_as_eager(cold)
    assert cold.stats["stored"] == 2 and cold.stats["traces"] == 2, cold.stderr
    warm = ws("break")
    _same_as_eager(warm)
    assert warm.stats["loaded"] == 2 and warm.stats["traces"] == 0, warm.stderr
    for k in cold.out:
        assert torch.equal(cold.out[k], warm.out[k]), k


def test_unwritable_directory_turns_the_cache_off_with_one_warning(ws, tmp_path):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the cache directory should be")
    p = ws("basic", logs=False, ARMATURE_CACHE_DIR=blocker / "cache")
    _same_as_eager(p)
    assert p.stderr.count("the compile cache is off for this process") == 1, p.stderr
    assert p.stats["stored"] == 0


def test_cache_command_lists_and_clears(ws):
    ws("dtypes")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    listed = subprocess.run([sys.executable, "-m", "armature", "cache", "list", "--dir", str(ws.cache)],
                            env=env, capture_output=True, text=True, timeout=generous(60))
    assert listed.returncode == 0 and "2 entries" in listed.stdout and " g " in listed.stdout, listed.stdout
    cleared = subprocess.run([sys.executable, "-m", "armature", "cache", "clear", "--dir", str(ws.cache)],
                             env=env, capture_output=True, text=True, timeout=generous(60))
    assert cleared.returncode == 0 and "removed 2 entries" in cleared.stdout
    assert _entry_files(ws.cache) == []


def test_tests_do_not_use_the_users_cache():
    """tests/conftest.py: the cache is off in the test processes and its
    directory is a temporary one."""
    import armature
    from armature.driver import persistent_cache
    assert armature.config.cache is False
    assert os.path.expanduser("~/.cache") not in persistent_cache.cache_root()
    assert persistent_cache.cache_root().startswith(tempfile.gettempdir())


def test_reset_clears_memory_only(tmp_path):
    """In one process: after armature.reset() the next call loads the
    entry again from disk instead of tracing."""
    code = textwrap.dedent('''
        import torch, armature
        from armature.driver import persistent_cache as pc
        def h(x):
            return x.exp() + 1
        c = armature.compile(h, backend="eager")
        x = torch.randn(3)
        a = c(x)
        armature.reset()
        b = c(x)
        assert torch.equal(a, b)
        print(pc.stats["traces"], pc.stats["loaded"], pc.stats["stored"])
    ''')
    (tmp_path / "r.py").write_text(code)
    env = dict(os.environ, ARMATURE_CACHE="1", ARMATURE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.path.join(ROOT, "src"))
    done = subprocess.run([sys.executable, str(tmp_path / "r.py")], env=env, capture_output=True, text=True,
                          timeout=generous(120))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1", "1"]


def test_callable_backend_is_not_stored(tmp_path):
    """A callable backend's behaviour is named by nothing a key holds: its
    entries are not stored (a registered name of armature's is)."""
    code = textwrap.dedent('''
        import torch, armature
        from armature.driver import persistent_cache as pc
        def h(x):
            return x.exp() + 1
        c = armature.compile(h, backend=lambda gm, ex: gm.forward)
        c(torch.randn(3))
        print(pc.stats["stored"], pc.stats["not_stored"])
    ''')
    (tmp_path / "r.py").write_text(code)
    env = dict(os.environ, ARMATURE_CACHE="1", ARMATURE_CACHE_DIR=str(tmp_path / "cache"),
               ARMATURE_LOGS="cache", PYTHONPATH=os.path.join(ROOT, "src"))
    done = subprocess.run([sys.executable, str(tmp_path / "r.py")], env=env, capture_output=True, text=True,
                          timeout=generous(120))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "1"]
    assert "not a registered backend's name" in done.stderr


def test_size_bound_evicts_least_recently_used(tmp_path):
    """Over cache_size_mb, the files used longest ago go first (a load
    touches its file), down to 90% of the bound."""
    import armature
    from armature.driver import persistent_cache
    root = tmp_path / "v1"
    folder = root / "somekey"
    folder.mkdir(parents=True)
    paths = []
    for i in range(3):
        p = folder / f"e{i}.entry"
        p.write_bytes(b"x" * 400 * 1024)
        os.utime(p, (1000 + i, 1000 + i))
        paths.append(p)
    os.utime(paths[0], (5000, 5000))   # e0: used most recently
    with armature.config.patch(cache_size_mb=1):
        persistent_cache._evict(str(root))
    assert [p.exists() for p in paths] == [True, False, True]   # (without eviction: all three)
