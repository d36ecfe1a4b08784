"""Inductor's CPU ISA probes run side by side, behind the compile (backends/cpu_isa_probes.py).

The probes are process-wide and cached, so each check runs in a fresh
interpreter.  The C++ builds themselves are replaced by a stand-in that
records which thread asked and answers from a table, so the checks take
a second, not the seconds of real builds; one test does the real builds and
compares the answers with inductor's own serial ones.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest
import torch

from armature.backends.cpu_isa_probes import wants_cpu_probes

x86_only = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or sys.platform != "linux",
                              reason="inductor probes several ISAs only on x86 Linux")


def _run(body: str, tmp_path, **env) -> dict:
    script = textwrap.dedent("""
        import json, threading, time
        import torch
        from torch._inductor import cpu_vec_isa as C
        calls = []
        def fake_check_build(self, code):
            calls.append((str(self), threading.current_thread().name))
            time.sleep(0.2)
            return "vnni" not in str(self)   # (any fixed table of answers)
        C.VecISA.check_build = fake_check_build
        from armature.backends.cpu_isa_probes import probe_in_parallel, start_probes, wait_for_probes
    """) + textwrap.dedent(body)
    full_env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path), **env)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=full_env)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _candidates() -> int:
    from torch._inductor import cpu_vec_isa

    from armature.backends.cpu_isa_probes import _candidates as candidates
    return len(candidates(cpu_vec_isa))


@x86_only
def test_probes_run_on_several_threads_and_inductor_reuses_their_answers(tmp_path):
    if _candidates() < 2 or (os.cpu_count() or 1) < 2:
        pytest.skip("fewer than two ISAs to probe, or one core: nothing runs in parallel")
    out = _run("""
        probe_in_parallel({})
        before = len(calls)
        isas = [str(i) for i in C.valid_vec_isa_list()]   # inductor's own (serial) call
        print(json.dumps({"calls": calls, "before": before, "after": len(calls), "isas": isas}))
    """, tmp_path)
    threads = {t for _, t in out["calls"]}
    assert all(t.startswith("armature-isa-probe") for t in threads)
    assert len(threads) >= 2
    assert out["after"] == out["before"] > 0   # inductor asked nothing again
    # the answers are the stand-in's: every ISA the CPU has except the VNNI ones
    assert out["isas"] and not any("vnni" in isa for isa in out["isas"])


@x86_only
def test_probes_run_behind_the_caller_and_inductor_waits_for_them(tmp_path):
    """start_probes returns while the probes build; inductor's read of the
    list, from the compiling thread meanwhile, waits for them instead of
    probing the same ISAs again (a probe changes its ISA's flags for a
    moment), gets their answers, and the gate is gone afterwards."""
    if _candidates() < 2 or (os.cpu_count() or 1) < 2:
        pytest.skip("fewer than two ISAs to probe, or one core: nothing runs in parallel")
    out = _run("""
        release = threading.Event()          # (the stand-in builds finish only once released)
        finished = []
        def held_check_build(self, code):
            calls.append((str(self), threading.current_thread().name))
            release.wait(60)
            finished.append(str(self))
            return "vnni" not in str(self)
        C.VecISA.check_build = held_check_build
        inductors = C.valid_vec_isa_list
        start_probes({})
        finished_at_return = len(finished)   # (0: it returned while every build was held)
        gated = C.valid_vec_isa_list is not inductors
        start_probes({})                     # a second compile meanwhile: no second round
        read = []
        reader = threading.Thread(target=lambda: read.extend(
            str(i) for i in C.pick_vec_isa.__globals__["valid_vec_isa_list"]()))   # inductor's own lookup
        reader.start()
        reader.join(0.5)
        reader_waited = reader.is_alive()    # (held builds: nobody can have the list yet)
        release.set()
        reader.join(60)
        wait_for_probes()
        print(json.dumps({"finished_at_return": finished_at_return, "reader_waited": reader_waited,
                          "gated": gated, "restored": C.valid_vec_isa_list is inductors, "isas": read,
                          "threads": [t for _, t in calls], "picked": str(C.pick_vec_isa())}))
    """, tmp_path)
    assert out["finished_at_return"] == 0 and out["reader_waited"]
    assert out["gated"] and out["restored"]
    assert all(t.startswith("armature-isa-probe") for t in out["threads"])   # none on the caller's thread
    assert out["isas"] and not any("vnni" in isa for isa in out["isas"])
    assert out["picked"] == out["isas"][0]


@x86_only
def test_the_list_is_known_after_one_round_even_if_nothing_read_it(tmp_path):
    """A compile whose graph generated no C++ code never reads the list; the
    next compile must not start a second round of probes."""
    if _candidates() < 2 or (os.cpu_count() or 1) < 2:
        pytest.skip("fewer than two ISAs to probe, or one core: nothing runs in parallel")
    out = _run("""
        probe_in_parallel({})
        first = len(calls)
        known = C.valid_vec_isa_list.cache_info().currsize
        probe_in_parallel({})
        print(json.dumps({"first": first, "second": len(calls) - first, "known": known}))
    """, tmp_path)
    assert out["first"] > 0 and out["known"] == 1 and out["second"] == 0


@x86_only
def test_a_failing_probe_leaves_the_work_to_inductor(tmp_path):
    out = _run("""
        import armature.backends.cpu_isa_probes as P
        def broken(*args, **kwargs):
            raise OSError("no threads")
        P.ThreadPoolExecutor = broken
        inductors = C.valid_vec_isa_list
        start_probes({})
        wait_for_probes()
        assert C.valid_vec_isa_list is inductors
        isas = [str(i) for i in C.valid_vec_isa_list()]   # inductor probes by itself
        print(json.dumps({"isas": isas, "threads": sorted({t for _, t in calls})}))
    """, tmp_path)
    assert out["isas"] and not any("vnni" in isa for isa in out["isas"])
    assert out["threads"] == ["MainThread"]


@x86_only
@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork: POSIX only")
def test_a_process_forked_while_the_probes_run_does_not_wait_for_them(tmp_path):
    """The gate's probe threads do not exist in a forked child: there it is
    removed, and the child's own read of the list probes by itself."""
    out = _run("""
        import os, signal
        inductors = C.valid_vec_isa_list
        start_probes({})
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)   # (a child stuck at the gate dies instead of hanging the test)
            ok = C.valid_vec_isa_list is inductors and bool(C.valid_vec_isa_list())
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        wait_for_probes()
        print(json.dumps({"child": os.waitstatus_to_exitcode(status), "restored": C.valid_vec_isa_list is inductors}))
    """, tmp_path)
    assert out == {"child": 0, "restored": True}


@x86_only
def test_nothing_is_probed_when_the_answer_is_set_or_already_known(tmp_path):
    out = _run("""
        probe_in_parallel({"cpp.vec_isa_ok": False})   # the compile's options say it
        first = len(calls)
        from torch._inductor import config
        with config.patch({"cpp.vec_isa_ok": True}):
            probe_in_parallel({})                        # the global config says it
        second = len(calls)
        C.valid_vec_isa_list()
        third = len(calls)
        probe_in_parallel({})                            # inductor has its list already
        print(json.dumps({"counts": [first, second, third, len(calls)]}))
    """, tmp_path)
    first, second, third, last = out["counts"]
    assert first == second == 0
    assert last == third


@pytest.mark.inductor
@pytest.mark.slow
@x86_only
def test_real_probes_give_inductors_serial_answers(tmp_path):
    """The real C++ builds, side by side and read through the gate, against
    a second fresh process where inductor probes alone."""
    def answers(parallel: bool, cache) -> list[str]:
        code = textwrap.dedent(f"""
            import json
            from torch._inductor import cpu_vec_isa as C
            from armature.backends.cpu_isa_probes import start_probes
            if {parallel}:
                start_probes({{}})      # (and at once inductor's own read, as in a compile: it waits)
            isas = C.valid_vec_isa_list()
            print(json.dumps([str(i) for i in isas] + [str(C.pick_vec_isa())]
                             + [str(getattr(i, "_is_avx512_bf16_supported", None)) for i in isas]))
        """)
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache)))
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    assert answers(True, tmp_path / "parallel") == answers(False, tmp_path / "serial")


def test_which_graphs_want_cpu_probes():
    assert wants_cpu_probes([torch.ones(2)])
    assert wants_cpu_probes([3, 4.0])                       # no tensor input: factories make CPU tensors
    assert wants_cpu_probes([torch.ones(2, device="meta"), torch.ones(1)])
    assert not wants_cpu_probes([torch.ones(2, device="meta")])   # (a device other than the CPU)
