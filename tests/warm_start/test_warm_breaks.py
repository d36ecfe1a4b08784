"""The warm start of frames with graph breaks (driver/persist_callees.py),
in real processes: a cold process stores the split frame's entry, its
resume functions' entries and the entries of callees compiled through
their wrappers; a warm process runs its first call with no trace, the same
result and the same prints.  What makes a stored part stale (the source
after the break, a callee's source, a guard of the resume function only)
makes the warm process compile that part again, with the right answer.

As in test_warm_start.py: each process gets the test's own cache directory,
the model lives in a file the test writes, results are saved with
torch.save and compared with eager and with the cold process.  The driver
prints "== compiled" and "== eager" before the two calls, so the prints of
the compiled call can be compared with eager's.
"""
import json
import os
import subprocess
import sys

import pytest
import torch

from armature.backends import inductor_warm

from machine import generous

pytestmark = pytest.mark.armature_only

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HELPER = '''
def noisy(x):
    y = x * 2
    print("helper.noisy: between its graphs")
    return y + 1
'''

MODEL = '''
import torch
import armature
import helper

K = 3


def one_break(x):
    y = x.sin() * 2
    print("one_break: after the first graph")
    return y.cos() + 1


def three_breaks(x):
    y = x.sin() * 2
    print("three_breaks: first")
    z = y.cos() + x
    armature.graph_break()
    if z.sum() > 0:   # (data-dependent: a third break)
        return z * 3
    return z - 3


def reads_global_after_break(x):
    y = x.sin()
    print("reads_global_after_break: before K")
    return y * K   # (only the resume function's guards read K)


def calls_breaking_helper(x):
    return helper.noisy(x.sin()) * 2   # (helper's trace breaks: called through its compiled wrapper)


def loop(x):
    for i in range(3):
        x = x.sin() + i
        print("loop: iteration", i)
    return x * 2


def makes_a_closure(x):
    def inner(y):
        print("inner: between its graphs")
        return y + 1
    return inner(x.sin()) * 2


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = torch.relu(self.a(x))
        print("Net.forward: between the layers")
        return self.b(h) * 2


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x)) + x


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block() for _ in range(3)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
            print("Stack.forward: a block done")   # (a break inside a loop: the frame runs natively)
        return x
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
torch.manual_seed(0)
if "K" in os.environ:
    model.K = int(os.environ["K"])


def both(name, fn, make_args, grads=False):
    """The compiled call, then eager's, on equal fresh inputs."""
    for tag, f in (("compiled", armature.compile(fn, backend=backend)), ("eager", fn)):
        print("== " + tag, flush=True)
        torch.manual_seed(1)
        args = make_args()
        key = name if tag == "compiled" else name + "_eager"
        if grads:
            result = f(*args)
            result.sum().backward()
            out[key] = result.detach()
            out[key + ":x"] = args[0].grad
            for pname, p in fn.named_parameters():
                out[key + ":" + pname] = p.grad
                p.grad = None
        else:
            out[key] = f(*args)


if what in ("one_break", "three_breaks", "reads_global_after_break", "calls_breaking_helper",
            "makes_a_closure", "loop"):
    both(what, getattr(model, what), lambda: (torch.randn(4),))
elif what == "net":
    net = model.Net()
    with torch.no_grad():
        both("net", net, lambda: (torch.randn(2, 8),))
elif what == "net_grads":
    net = model.Net()
    both("net", net, lambda: (torch.randn(2, 8, requires_grad=True),), grads=True)
elif what == "stack":
    both("stack", model.Stack(), lambda: (torch.randn(2, 8),))
torch.save(out, os.environ["WS_OUT"])
print("STATS " + json.dumps(persistent_cache.stats))
print("IMPORTED " + json.dumps(sorted(m for m in ("torch._inductor", "torch._dynamo") if m in sys.modules)))
'''


class Proc:
    def __init__(self, completed, out):
        self.out = out
        self.stderr = completed.stderr
        lines = completed.stdout.splitlines()
        self.stats = json.loads([ln for ln in lines if ln.startswith("STATS ")][-1][len("STATS "):])
        self.imported = json.loads([ln for ln in lines if ln.startswith("IMPORTED ")][-1][len("IMPORTED "):])
        #: what the program printed: the compiled call's lines and eager's
        printed = [ln for ln in lines if not ln.startswith(("STATS ", "IMPORTED "))]
        cut = printed.index("== eager")
        self.compiled_prints, self.eager_prints = printed[:cut], printed[cut + 1:]


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "helper.py").write_text(HELPER)
    (tmp_path / "driver.py").write_text(DRIVER)
    cache = tmp_path / "cache"
    counter = [0]

    def run(what, **env):
        counter[0] += 1
        out = tmp_path / f"out{counter[0]}.pt"
        e = dict(os.environ, ARMATURE_CACHE="1", ARMATURE_CACHE_DIR=str(cache), WS_OUT=str(out),
                 PYTHONPATH=os.path.join(ROOT, "src"), PYTHONDONTWRITEBYTECODE="1", ARMATURE_LOGS="cache",
                 TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
        e.update({k: str(v) for k, v in env.items()})
        done = subprocess.run([sys.executable, str(tmp_path / "driver.py"), what], env=e, capture_output=True,
                              text=True, timeout=generous(180))
        assert done.returncode == 0, done.stderr[-3000:]
        return Proc(done, torch.load(out))

    run.dir = tmp_path
    return run


def _same_as_eager(p: Proc, exact=True):
    assert p.compiled_prints[0] == "== compiled"
    assert p.compiled_prints[1:] == p.eager_prints, (p.compiled_prints, p.eager_prints)
    for k in p.out:
        name, colon, grad = k.partition(":")
        if name.endswith("_eager"):
            continue
        twin = f"{name}_eager{colon}{grad}"
        if exact:
            assert torch.equal(p.out[k], p.out[twin]), k
        else:
            assert torch.allclose(p.out[k], p.out[twin], atol=1e-5), k


def _same_as(cold: Proc, warm: Proc, exact=True):
    assert warm.compiled_prints == cold.compiled_prints and warm.eager_prints == cold.eager_prints
    assert set(cold.out) == set(warm.out)
    for k in cold.out:
        assert (torch.equal if exact else torch.allclose)(cold.out[k], warm.out[k]), k


def test_split_frame_runs_warm_without_tracing(ws):
    cold = ws("one_break")
    _same_as_eager(cold)
    assert cold.stats["traces"] == 2 and cold.stats["stored"] == 2, cold.stderr   # the frame, its resume function
    warm = ws("one_break")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 2, warm.stderr   # (before: 2 traces, 0 loaded)
    assert "loaded an entry of one_break.<resume at" in warm.stderr
    _same_as_eager(warm)
    _same_as(cold, warm)


def test_several_breaks_in_one_frame(ws):
    cold = ws("three_breaks")
    _same_as_eager(cold)
    assert cold.stats["traces"] == 4 and cold.stats["stored"] == 4, cold.stderr
    warm = ws("three_breaks")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == 4, warm.stderr
    _same_as_eager(warm)
    _same_as(cold, warm)


def test_changed_source_after_the_break_recompiles(ws):
    cold = ws("one_break")
    assert cold.stats["stored"] == 2, cold.stderr
    (ws.dir / "model.py").write_text(MODEL.replace("return y.cos() + 1", "return y.cos() + 5"))
    warm = ws("one_break")
    _same_as_eager(warm)   # (the stored resume function's graph adds 1)
    assert warm.stats["loaded"] == 0 and warm.stats["traces"] == 2, warm.stderr
    assert "not used (key mismatch): one_break (" in warm.stderr, warm.stderr
    assert "stored under another key: code changed" in warm.stderr, warm.stderr


def test_resume_function_whose_guards_fail_recompiles(ws):
    """K is read after the break: the frame's entry loads and runs, the
    resume function's loaded entry fails its guard on K and compiles again."""
    cold = ws("reads_global_after_break")
    assert cold.stats["stored"] == 2, cold.stderr
    warm = ws("reads_global_after_break", K=5)
    _same_as_eager(warm)   # (the stored resume function multiplies by 3)
    assert warm.stats["loaded"] == 2 and warm.stats["traces"] == 1, warm.stderr
    assert not torch.equal(warm.out["reads_global_after_break"], cold.out["reads_global_after_break"])
    again = ws("reads_global_after_break", K=5)   # (the new entry was stored beside the old one)
    assert again.stats["traces"] == 0, again.stderr
    _same_as_eager(again)


def test_callee_that_breaks_is_stored_with_the_caller(ws):
    cold = ws("calls_breaking_helper")
    _same_as_eager(cold)
    assert cold.stats["stored"] == cold.stats["traces"] >= 3, cold.stderr   # caller, helper's wrapper, resumes
    warm = ws("calls_breaking_helper")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == cold.stats["stored"], warm.stderr
    _same_as_eager(warm)
    _same_as(cold, warm)
    # a changed callee: the caller's entry names it by its code, the wrapper's entry by its file
    (ws.dir / "helper.py").write_text(HELPER.replace("y + 1", "y + 7"))
    changed = ws("calls_breaking_helper")
    _same_as_eager(changed)   # (the stored resume function of helper adds 1)
    assert changed.stats["traces"] >= 2, changed.stderr
    assert "helper.py" in changed.stderr


def test_function_made_in_the_frame_is_not_stored_and_stays_right(ws):
    cold = ws("makes_a_closure")
    _same_as_eager(cold)
    assert "not stored: an entry of makes_a_closure: it calls a function made inside the frame" in cold.stderr
    warm = ws("makes_a_closure")
    _same_as_eager(warm)
    _same_as(cold, warm)


def test_break_inside_a_loop_runs_natively_warm_without_tracing(ws):
    """The frame runs as Python with its calls compiled (native_frames.py):
    its entry (guards, the runner's settings) and the compiled blocks'
    entries are stored."""
    cold = ws("stack")
    _same_as_eager(cold)
    assert cold.stats["stored"] == cold.stats["traces"] >= 2, cold.stderr
    warm = ws("stack")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == cold.stats["stored"], warm.stderr
    _same_as_eager(warm)
    _same_as(cold, warm)


@pytest.mark.parametrize("loop_breaks", ["native", "split"])
def test_break_inside_a_loop_of_a_function(ws, loop_breaks):
    """native: the frame's entry runs it as Python (one entry); split: the
    resume function inside the loop calls itself, an entry per iteration's
    trace (its entries refer to their own resume function)."""
    cold = ws("loop", ARMATURE_LOOP_BREAKS=loop_breaks)
    _same_as_eager(cold)
    assert cold.stats["stored"] == cold.stats["traces"] >= (1 if loop_breaks == "native" else 3), cold.stderr
    warm = ws("loop", ARMATURE_LOOP_BREAKS=loop_breaks)
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == cold.stats["stored"], warm.stderr
    _same_as_eager(warm)
    _same_as(cold, warm)


@pytest.mark.aot_eager
def test_aot_eager_gradients_through_a_split_frame(ws):
    cold = ws("net_grads", WS_BACKEND="aot_eager")
    _same_as_eager(cold, exact=False)
    assert cold.stats["stored"] == cold.stats["traces"] >= 3, cold.stderr
    warm = ws("net_grads", WS_BACKEND="aot_eager")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == cold.stats["stored"], warm.stderr
    assert warm.out["net:b.weight"] is not None and warm.out["net:x"] is not None
    _same_as_eager(warm, exact=False)
    _same_as(cold, warm)


@pytest.mark.inductor
def test_inductor_split_frame(ws):
    cold = ws("net", WS_BACKEND="inductor")
    _same_as_eager(cold, exact=False)
    assert cold.stats["stored"] == cold.stats["traces"] >= 3, cold.stderr
    warm = ws("net", WS_BACKEND="inductor")
    assert warm.stats["traces"] == 0 and warm.stats["loaded"] == cold.stats["stored"], warm.stderr
    if inductor_warm.SUPPORTED:   # (each graph's module kept: inductor is not even imported)
        assert warm.imported == [], warm.stderr
    _same_as(cold, warm)


def test_code_hash_is_the_same_after_a_trace():
    """persist_codec.code_hash names a function's code in keys and
    references: a trace holding its constants must not change it (the
    hash of marshal's bytes did: marshal marks shared objects by their
    reference count), or a warm process rejects every entry naming a
    function the cold one had traced."""
    import armature
    from armature.driver.persist_codec import code_hash

    def fn(x):
        print("fn: a constant the trace holds on to")
        return x.sin() + 2.5
    before = code_hash(fn.__code__)
    armature.compile(fn, backend="eager")(torch.randn(3))
    assert code_hash(fn.__code__) == before
