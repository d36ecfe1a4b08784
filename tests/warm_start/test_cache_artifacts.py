"""armature's entries travel with ``torch.compiler.save_cache_artifacts()``
under the drop-in runner (driver/cache_artifacts.py, armature_runner/patch.py),
and a cache directory copied elsewhere warms a process that uses it.

Real processes: one saves (its own cache directory), another, with another
empty cache directory, loads the bytes and must run its first compiled call
with no trace and the same result.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from machine import generous
from test_warm_start import HELPER, MODEL, ROOT

pytestmark = pytest.mark.armature_only

SCRIPT = '''
import json, os, sys, warnings
import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model
from armature.driver import persistent_cache

backend = os.environ.get("WS_BACKEND", "eager")
what = sys.argv[1]
art = os.environ["WS_ART"]
res = {}
torch.manual_seed(0)
x, y = torch.randn(4, 4), torch.randn(4, 4)
block = model.Block()
xb = torch.randn(2, 8)
if what == "load":
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        info = torch.compiler.load_cache_artifacts(open(art, "rb").read())
    res["warnings"] = [str(w.message) for w in caught if "armature" in str(w.message)]
    res["info"] = {k: len(v) for k, v in info.artifacts.items()} if info is not None else None
with torch.no_grad():
    out_f = torch.compile(model.f, backend=backend)(x, y)
    out_b = torch.compile(block, backend=backend)(xb)
    same = torch.equal if backend != "inductor" else (lambda a, b: torch.allclose(a, b, atol=1e-5, rtol=1e-5))
    res["same"] = bool(same(out_f, model.f(x, y)) and same(out_b, block(xb)))
torch.save((out_f, out_b), os.environ["WS_OUT"])
if what == "save":
    saved = torch.compiler.save_cache_artifacts()
    res["info"] = {k: len(v) for k, v in saved[1].artifacts.items()} if saved is not None else None
    if saved is not None:
        open(art, "wb").write(saved[0])
print("STATS " + json.dumps(persistent_cache.stats))
print("RESULT " + json.dumps(res))
'''


class Run:
    def __init__(self, done, out):
        self.stderr = done.stderr
        lines = done.stdout.splitlines()
        self.stats = json.loads([ln for ln in lines if ln.startswith("STATS ")][-1][6:])
        self.res = json.loads([ln for ln in lines if ln.startswith("RESULT ")][-1][7:])
        self.out = torch.load(out)


@pytest.fixture
def ca(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "helper.py").write_text(HELPER)
    (tmp_path / "script.py").write_text(SCRIPT)
    counter = [0]

    def run(what, cache, **env):
        counter[0] += 1
        out = tmp_path / f"out{counter[0]}.pt"
        e = dict(os.environ, ARMATURE_CACHE="1", ARMATURE_CACHE_DIR=str(cache), WS_ART=str(tmp_path / "art.bin"),
                 WS_OUT=str(out), ARMATURE_LOGS="cache", PYTHONPATH=os.path.join(ROOT, "src"),
                 PYTHONDONTWRITEBYTECODE="1",
                 TORCHINDUCTOR_CACHE_DIR=str(tmp_path / f"inductor-{os.path.basename(str(cache))}"))
        e.update({k: str(v) for k, v in env.items()})
        cmd = [sys.executable, "-m", "armature", "run", "--no-summary", str(tmp_path / "script.py"), what]
        done = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=generous(180))
        assert done.returncode == 0, done.stderr[-3000:]
        return Run(done, out)

    run.dir = tmp_path
    return run


def _same(a: Run, b: Run):
    for u, v in zip(a.out, b.out):
        assert torch.equal(u, v)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_saved_artifacts_warm_another_process(ca, backend):
    cold = ca("save", ca.dir / "cache-a", WS_BACKEND=backend)
    assert cold.res["same"] and cold.stats["stored"] == 2, cold.stderr
    assert cold.res["info"]["armature"] == 2, cold.res   # (before: None, torch had no artifact of armature's)
    warm = ca("load", ca.dir / "cache-b", WS_BACKEND=backend)   # (another, empty cache directory)
    assert warm.res["warnings"] == [] and warm.res["info"]["armature"] == 2, warm.res
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 2, warm.stderr
    assert warm.res["same"]
    _same(cold, warm)
    assert "cache artifacts: installed an entry of f" in warm.stderr


def test_saved_inductor_artifacts_carry_both_caches(ca):
    cold = ca("save", ca.dir / "cache-a", WS_BACKEND="inductor")
    assert cold.res["same"] and cold.stats["stored"] == 2, cold.stderr
    assert cold.res["info"].get("armature") == 2 and cold.res["info"].get("inductor"), cold.res
    warm = ca("load", ca.dir / "cache-b", WS_BACKEND="inductor")   # (and an empty inductor cache)
    assert warm.res["warnings"] == [] and warm.res["info"].get("inductor") == cold.res["info"]["inductor"]
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 2, warm.stderr
    assert warm.res["same"]
    _same(cold, warm)


def test_corrupt_artifacts_are_one_warning_and_a_compile(ca):
    ca("save", ca.dir / "cache-a")
    art = ca.dir / "art.bin"
    data = bytearray(art.read_bytes())
    data[100] ^= 0xFF   # (inside armature's part)
    art.write_bytes(bytes(data))
    warm = ca("load", ca.dir / "cache-b")
    assert len(warm.res["warnings"]) == 1 and "checksum" in warm.res["warnings"][0], warm.res
    assert warm.stats["traces"] == 2 and warm.stats["loaded"] == 0 and warm.res["same"]


def test_truncated_artifacts_are_one_warning_and_a_compile(ca):
    ca("save", ca.dir / "cache-a")
    art = ca.dir / "art.bin"
    art.write_bytes(art.read_bytes()[:-40])
    warm = ca("load", ca.dir / "cache-b")
    assert len(warm.res["warnings"]) == 1, warm.res
    assert warm.stats["traces"] == 2 and warm.res["same"]


def test_artifacts_without_armatures_part_are_torchs(ca):
    """The cache off while saving: the bytes are torch's alone, and loading
    them with the cache on is torch's loader's business (nothing installed)."""
    cold = ca("save", ca.dir / "cache-a", WS_BACKEND="inductor", ARMATURE_CACHE=0)
    assert cold.res["info"] and "armature" not in cold.res["info"] and cold.res["info"].get("inductor")
    warm = ca("load", ca.dir / "cache-b", WS_BACKEND="inductor")
    assert warm.res["warnings"] == [] and warm.res["info"] == cold.res["info"], warm.res
    assert warm.stats["traces"] == 2 and warm.res["same"]


def test_artifacts_loaded_with_the_cache_off_say_so(ca):
    ca("save", ca.dir / "cache-a")
    warm = ca("load", ca.dir / "cache-b", ARMATURE_CACHE=0)
    assert len(warm.res["warnings"]) == 1 and "ARMATURE_CACHE=1" in warm.res["warnings"][0], warm.res
    assert warm.res["same"]


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_copied_cache_directory_warms_a_process(ca, backend):
    """A cache directory copied elsewhere (another machine with the same
    versions, the same source paths): nothing in an entry names the
    directory it was written to (inductor: nor its kernels' libraries)."""
    cold = ca("run", ca.dir / "cache-a", WS_BACKEND=backend)
    assert cold.stats["stored"] == 2
    shutil.copytree(ca.dir / "cache-a", ca.dir / "cache-copy")
    shutil.rmtree(ca.dir / "cache-a")
    warm = ca("run", ca.dir / "cache-copy", WS_BACKEND=backend)
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 2, warm.stderr
    assert warm.res["same"]
    _same(cold, warm)
    assert str(ca.dir / "cache-a") not in warm.stderr
