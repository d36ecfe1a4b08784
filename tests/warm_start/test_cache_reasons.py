"""What the persistent cache did, said by explain(), ARMATURE_LOGS=cache and
the run's report (driver/cache_events.py): each entry loaded (and its
file), each reason stored entries were not used (key mismatch and which
part, source file changed, guard failed on this call, corrupt file), each
entry compiled and not stored and why; and a loaded entry's graph_module
(driver/loaded_graph.py).  Real processes, as tests/warm_start/test_warm_start.py.
"""
import json
import os
import subprocess
import sys

import pytest
import torch

from machine import generous
from test_warm_start import HELPER, MODEL, ROOT

pytestmark = pytest.mark.armature_only

DRIVER = '''
import json, os, sys
import torch
import armature
from armature.driver import persistent_cache
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model

backend = os.environ.get("WS_BACKEND", "eager")
what = sys.argv[1]
if "K" in os.environ:
    model.K = int(os.environ["K"])
torch.manual_seed(0)
x, y = torch.randn(4, 4), torch.randn(4, 4)
block = model.Block()
xb = torch.randn(2, 8)
calls = {"f": (model.f, (x, y)), "helper": (model.uses_helper, (torch.randn(4),)),
         "break": (model.with_break, (torch.ones(3),)), "block": (block, (xb,)),
         "check": (model.with_check, (torch.ones(3, 2),))}
fn, args = calls[os.environ.get("WS_FN", "f")]
res = {}
if what == "explain":
    out = armature.explain(fn, backend=backend)(*args)
    res["events"] = [[e.kind, e.function, e.filename, e.lineno, e.detail, e.path] for e in out.cache]
    res["not_used"] = [e.kind for e in out.cache_not_used]
    res["loaded_from"] = out.loaded_from
    res["graph_loaded_from"] = out.graph_loaded_from
    res["text"] = str(out)
    res["same"] = bool(torch.equal(out.out, fn(*args)))
elif what == "entries":
    cf = armature.compile(fn, backend=backend)
    result = cf(*args)
    res["same"] = bool(torch.equal(result, fn(*args)))
    e = armature.cache_entries(cf)[0]
    gm = e.graph_module
    res["loaded_from"] = e.loaded_from
    res["code"] = gm.code if gm is not None else None
    if gm is not None and fn is block:
        res["params_are_the_modules"] = sorted(
            n for n, p in gm.named_parameters() if any(p is q for q in block.parameters()))
        res["n_params"] = len(list(gm.parameters()))
        # (the rebuilt graph computes what the entry does: its inputs are the call's tensors)
        placeholders = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
        res["placeholders"] = placeholders
print("STATS " + json.dumps(persistent_cache.stats))
print("RESULT " + json.dumps(res))
'''


class Run:
    def __init__(self, done):
        self.stderr = done.stderr
        out = done.stdout.splitlines()
        self.stats = json.loads([ln for ln in out if ln.startswith("STATS ")][-1][6:])
        self.res = json.loads([ln for ln in out if ln.startswith("RESULT ")][-1][7:])


@pytest.fixture
def wr(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "helper.py").write_text(HELPER)
    (tmp_path / "driver.py").write_text(DRIVER)

    def run(what, fn="f", **env):
        e = dict(os.environ, ARMATURE_CACHE="1", ARMATURE_CACHE_DIR=str(tmp_path / "cache"),
                 ARMATURE_LOGS="cache", WS_FN=fn, PYTHONPATH=os.path.join(ROOT, "src"),
                 PYTHONDONTWRITEBYTECODE="1", TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
        e.update({k: str(v) for k, v in env.items()})
        done = subprocess.run([sys.executable, str(tmp_path / "driver.py"), what], env=e, capture_output=True,
                              text=True, timeout=generous(120))
        assert done.returncode == 0, done.stderr[-3000:]
        return Run(done)

    run.dir = tmp_path
    run.cache = tmp_path / "cache"
    return run


def _line_of(text: str, src: str) -> int:
    return next(i for i, ln in enumerate(src.splitlines(), 1) if ln.startswith(text))


def _where(wr, fn_def: str) -> str:
    return f"({wr.dir / 'model.py'}:{_line_of(fn_def, MODEL)})"


def _kinds(run: Run) -> list[str]:
    return [e[0] for e in run.res["events"]]


def test_explain_lists_the_loaded_entry_and_its_file(wr):
    cold = wr("explain")
    assert _kinds(cold) == ["miss", "stored"], cold.res["events"]   # (explain looks up and stores as `eager`)
    stored = cold.res["events"][1][5]
    assert os.path.exists(stored)
    assert cold.res["loaded_from"] == [None]
    warm = wr("explain")
    assert warm.stats["traces"] == 0 and warm.res["same"], warm.stderr
    assert _kinds(warm) == ["loaded"]
    assert warm.res["loaded_from"] == [stored] and warm.res["graph_loaded_from"] == [stored]
    assert f"loaded from disk: {stored}" in warm.res["text"]
    assert "def forward" in warm.res["text"]   # (the loaded entry's graph, rebuilt)
    # (what explain stored is the entry a compile with its backend makes and loads)
    compiled = wr("entries")
    assert compiled.stats["traces"] == 0 and compiled.res["loaded_from"] == stored and compiled.res["same"]
    import marshal
    payload = marshal.loads(open(stored, "rb").read()[8 + 32:])
    assert payload["graph"][3] is None   # (stored as an eager graph: its code runs, no compile on load)


def test_key_mismatch_names_the_part(wr):
    wr("explain")
    warm = wr("explain", ARMATURE_RECOMPILE_LIMIT=3)
    assert warm.res["not_used"] == ["key_mismatch"], warm.res["events"]
    ev = warm.res["events"][0]
    assert ev[1] == "f" and "config changed" in ev[4]
    line = f"not used (key mismatch): f {_where(wr, 'def f(')}: stored under another key: config changed"
    assert line in warm.stderr, warm.stderr


def test_source_file_changed_names_the_file(wr):
    wr("explain", fn="helper")
    (wr.dir / "helper.py").write_text(HELPER.replace("x * 2", "x * 3"))
    warm = wr("explain", fn="helper")
    assert warm.res["same"]
    assert warm.res["not_used"] == ["source_changed"], warm.res["events"]
    ev = warm.res["events"][0]
    assert ev[4] == f"source file changed: {wr.dir / 'helper.py'}" and ev[5].endswith(".entry")
    assert f"not used (source file changed): uses_helper {_where(wr, 'def uses_helper(')}: source file changed: " \
           f"{wr.dir / 'helper.py'}" in warm.stderr, warm.stderr


def test_guard_failed_on_this_call_names_the_guard(wr):
    wr("explain")
    warm = wr("explain", K=5)
    assert warm.res["same"] and warm.stats["loaded"] == 1 and warm.stats["traces"] == 1
    assert _kinds(warm) == ["loaded", "guard_failed", "stored"], warm.res["events"]
    ev = warm.res["events"][1]
    assert ev[4].startswith("K == 3") and "5" in ev[4]
    assert f"not used (guard failed on this call): f {_where(wr, 'def f(')}: K == 3" in warm.stderr, warm.stderr


def test_corrupt_file_is_a_reason(wr):
    wr("explain")
    (path,) = wr.cache.rglob("*.entry")
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    warm = wr("explain")
    assert warm.res["not_used"] == ["corrupt"], warm.res["events"]
    ev = warm.res["events"][0]
    assert ev[4] == "its checksum does not match" and ev[5] == str(path)
    assert f"not used (corrupt file): f {_where(wr, 'def f(')}: its checksum does not match [{path}]" in warm.stderr
    assert warm.stderr.count("ignoring a corrupt compile cache file") == 1


def test_not_stored_names_the_reason(wr):
    cold = wr("explain", fn="check")   # (a frame that assumes a check does not raise: not stored)
    assert "not_stored" in _kinds(cold), cold.res["events"]
    ev = next(e for e in cold.res["events"] if e[0] == "not_stored")
    assert ev[1] == "with_check" and "speculation checks" in ev[4]
    assert "not stored" in cold.res["text"]
    assert f"not stored: an entry of with_check: " in cold.stderr and _where(wr, "def with_check(") in cold.stderr


def test_report_lists_the_reasons_not_used(wr):
    wr("entries")
    report = wr.dir / "warm.html"
    warm = wr("entries", K=5, ARMATURE_REPORT=report)
    assert warm.res["same"]
    html = report.read_text()
    assert "not used: guard failed on this call" in html, html[-3000:]
    assert "K == 3" in html
    assert "<b>Loaded from disk</b>" in html


def test_cache_entries_of_a_loaded_entry_have_its_graph(wr):
    cold = wr("entries")
    assert cold.res["loaded_from"] is None and cold.res["code"]
    warm = wr("entries")
    assert warm.stats["traces"] == 0 and warm.res["same"]
    assert warm.res["loaded_from"] is not None
    assert warm.res["code"] == cold.res["code"]   # (before: None, a loaded eager entry had no graph_module)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_loaded_modules_graph_holds_the_modules_parameters(wr, backend):
    cold = wr("entries", fn="block", WS_BACKEND=backend)
    warm = wr("entries", fn="block", WS_BACKEND=backend)
    assert warm.stats["traces"] == 0 and warm.res["same"] and warm.res["loaded_from"] is not None
    assert warm.res["code"] == cold.res["code"]
    # (the graph's parameters are the warm process's module's own objects, or the
    # module's parameters are graph inputs: either way none is a copy)
    assert warm.res["n_params"] == len(warm.res["params_are_the_modules"]) == cold.res["n_params"] == 4
    assert warm.res["placeholders"] == cold.res["placeholders"]
