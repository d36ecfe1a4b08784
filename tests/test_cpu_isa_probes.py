"""Inductor's CPU ISA probes: only those its pick needs, behind the compile (backends/cpu_isa_probes.py).

The probes are process-wide and cached, so each check runs in a fresh
interpreter.  The C++ builds themselves are replaced by a stand-in that
records which thread asked and answers from a table (every ISA with VNNI
fails, the others pass), so the checks take a second, not the seconds of
real builds; one test does the real builds and compares the answers with
inductor's own serial ones.

What is expected is read from the machine the test runs on: its candidates
(inductor's list filtered by the CPU's flags: AMX, AVX-512, AVX2 ...), the
stand-in's table, and inductor's own pick over its own serial list, which
also says how far the pick reads (``ATEN_CPU_CAPABILITY`` and
``cpp.simdlen`` make it read further).  ``ARMATURE_TEST_CPU_ISA=avx2`` or
``=amx`` runs them as on an AVX2-only or an AMX machine
(tests/machine_stubs/sitecustomize.py).
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
from machine import generous

_X86_LINUX = platform.machine() in ("x86_64", "AMD64") and sys.platform == "linux"


def _candidates() -> int:
    """How many ISAs inductor would probe on this machine."""
    from torch._inductor import cpu_vec_isa

    from armature.backends.cpu_isa_probes import _candidates as candidates
    return len(candidates(cpu_vec_isa))


x86_only = pytest.mark.skipif(not _X86_LINUX or not _candidates(),
                              reason="inductor probes several ISAs only on x86 Linux, where the CPU reports some"
                              if not _X86_LINUX else "this x86 CPU reports none of inductor's vector ISAs")


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
        from armature.backends.cpu_isa_probes import probe_ahead, start_probes, wait_for_probes
    """) + textwrap.dedent(body)
    full_env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path), **env)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=generous(120), env=full_env)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _serial_list() -> str:
    """Inductor's own list, computed serially in the same process (the
    ``bool`` answers are cached per ISA, so the stand-in is asked only about
    the candidates armature left alone); inductor's own pick over it
    (``inductor_pick``); how many of its items that pick read (``read``, None
    when it read the whole list); and the machine's candidates."""
    return """
        C.valid_vec_isa_list.cache_clear()
        serial_isas = C.valid_vec_isa_list()
        serial = [str(i) for i in serial_isas]

        class Recording(list):      # (inductor's serial list, noting how far a reader gets)
            read, whole, iterated, indexed = 0, False, False, False
            def _upto(self, n):
                self.read = max(self.read, min(n, list.__len__(self)))
            def __bool__(self):
                self._upto(1)
                return list.__len__(self) > 0
            def __iter__(self):
                self.iterated = True
                for i in range(list.__len__(self)):
                    self._upto(i + 1)
                    yield list.__getitem__(self, i)
                self.whole = True
            def __getitem__(self, i):
                self.indexed = True
                if isinstance(i, int) and i >= 0:
                    self._upto(i + 1)
                else:
                    self.whole = True
                return list.__getitem__(self, i)
            def __len__(self):
                self.whole = True
                return list.__len__(self)

        recording = Recording(serial_isas)
        inductors_function = C.valid_vec_isa_list
        C.valid_vec_isa_list = lambda: recording
        inductor_pick = str(C.pick_vec_isa())
        C.valid_vec_isa_list = inductors_function
        read = None if recording.whole else recording.read
        iterated, indexed = recording.iterated, recording.indexed
        from armature.backends.cpu_isa_probes import _candidates
        candidates = [str(i) for i in _candidates(C)]
    """


_REFERENCE = ("serial", "inductor_pick", "read", "candidates")


def _passes(isa: str) -> bool:
    """The stand-in's table."""
    return "vnni" not in isa


def _probes_the_pick_needs(out: dict) -> list[str]:
    """The candidates, in order, that a reader of ``out["read"]`` items of
    the list makes the lazy list probe: up to the last passing one read
    (all of them when the pick read the whole list)."""
    needed, passed, probed = out["read"], 0, []
    for isa in out["candidates"]:
        if needed is not None and passed >= max(needed, 1):
            break
        probed.append(isa)
        passed += _passes(isa)
    return probed


@x86_only
@pytest.mark.parametrize("patches", [{}, {"cpp.simdlen": 256}], ids=["default", "simdlen256"])
def test_only_the_probes_the_pick_needs_run_and_the_answers_are_inductors(tmp_path, patches):
    """The background thread probes the candidates the compile's pick reads
    (with the stand-in's table on this machine's candidates) and no more;
    pick_vec_isa gives inductor's answer, and the whole list read through
    armature's function is inductor's list."""
    out = _run(f"""
        from torch._inductor import config
        probe_ahead({patches!r})
        background = list(calls)
        with config.patch({patches!r}):
            picked = str(C.pick_vec_isa())
        after_pick = len(calls)
        whole = [str(i) for i in C.valid_vec_isa_list()]
        import contextvars
        with config.patch({{"cpp.simdlen": 123}}):    # (does a thread started in a copy of this context see a patch?)
            patched_context = contextvars.copy_context()
        per_thread = patched_context.run(lambda: config.cpp.simdlen) == 123
        all_calls = list(calls)
    """ + _serial_list().replace("inductor_pick = str(C.pick_vec_isa())", f"""
        with config.patch({patches!r}):
            inductor_pick = str(C.pick_vec_isa())""") + """
        print(json.dumps({"background": background, "after_pick": after_pick, "picked": picked,
                          "whole": whole, "serial": serial, "inductor_pick": inductor_pick,
                          "read": read, "candidates": candidates, "per_thread": per_thread,
                          "all_calls": all_calls}))
    """, tmp_path)
    needed = _probes_the_pick_needs(out)
    if patches and not out["per_thread"]:
        # torch 2.11: the compile's config overrides are process-wide, invisible to a background
        # thread; the probes stay with the compiling thread's pick, still only those it reads
        assert out["background"] == []
        pick_calls = out["all_calls"][:out["after_pick"]]
        assert list(dict.fromkeys(isa for isa, _ in pick_calls)) == needed
        assert all(t == "MainThread" for _, t in pick_calls)
    else:
        # (in order, each once: AVX-512's probe also builds its bf16 check under the same name)
        assert list(dict.fromkeys(isa for isa, _ in out["background"])) == needed
        assert all(t == "armature-isa-probes" for _, t in out["background"])
        assert out["after_pick"] == len(out["background"])   # (the pick asked nothing more)
    assert out["picked"] == out["inductor_pick"]
    assert out["whole"] == out["serial"] == [i for i in out["candidates"] if _passes(i)]


@x86_only
def test_the_lazy_list_reads_like_inductors_list(tmp_path):
    """Every way of reading the list gives what inductor's list gives."""
    out = _run("""
        start_probes({})
        L = C.valid_vec_isa_list()
        reads = {"is_list": isinstance(L, list), "bool": bool(L), "first": str(L[0]),
                 "iter": [str(i) for i in L], "len": len(L), "last": str(L[-1]),
                 "slice": [str(i) for i in L[:2]], "repr": repr(L) == repr(list(L)), "eq": L == list(L),
                 "contains": L[0] in L, "copy": [str(i) for i in L.copy()]}
        print(json.dumps(reads))
    """, tmp_path)
    assert out["is_list"] and out["bool"] and out["repr"] and out["eq"] and out["contains"]
    assert out["iter"] == out["copy"] and out["len"] == len(out["iter"]) and out["first"] == out["iter"][0]
    assert out["last"] == out["iter"][-1] and out["slice"] == out["iter"][:2]


@x86_only
def test_probes_run_behind_the_caller_and_the_pick_waits_for_them(tmp_path):
    """start_probes returns while the probes build; the compiling thread's
    pick, meanwhile, waits for the probe it needs instead of probing the
    same ISA again (a probe changes its ISA's flags for a moment)."""
    out = _run("""
        release = threading.Event()          # (the stand-in builds finish only once released)
        finished = []
        def held_check_build(self, code):
            calls.append((str(self), threading.current_thread().name))
            release.wait(600)
            finished.append(str(self))
            return "vnni" not in str(self)
        C.VecISA.check_build = held_check_build
        inductors = C.valid_vec_isa_list
        start_probes({})
        finished_at_return = len(finished)   # (0: it returned while every build was held)
        ours = C.valid_vec_isa_list is not inductors
        start_probes({})                     # a second compile meanwhile: no second round
        picked = []
        reader = threading.Thread(target=lambda: picked.append(str(C.pick_vec_isa())))
        reader.start()
        reader.join(0.5)
        reader_waited = reader.is_alive()    # (held builds: nobody can have the answer yet)
        release.set()
        reader.join(600)
        wait_for_probes()
        threads = [t for _, t in calls]
    """ + _serial_list() + """
        print(json.dumps({"finished_at_return": finished_at_return, "reader_waited": reader_waited,
                          "ours": ours, "picked": picked, "threads": threads, "inductor_pick": inductor_pick}))
    """, tmp_path)
    assert out["finished_at_return"] == 0 and out["reader_waited"] and out["ours"]
    assert set(out["threads"]) == {"armature-isa-probes"}   # none on the caller's thread
    assert out["picked"] == [out["inductor_pick"]]


@x86_only
def test_a_probe_failing_in_the_background_is_asked_again_by_the_reader(tmp_path):
    out = _run("""
        failed = []
        def flaky_check_build(self, code):
            calls.append((str(self), threading.current_thread().name))
            if not failed:
                failed.append(str(self))
                raise OSError("no space left on device")
            return "vnni" not in str(self)
        C.VecISA.check_build = flaky_check_build
        start_probes({})
        wait_for_probes()
        picked = str(C.pick_vec_isa())
    """ + _serial_list() + """
        print(json.dumps({"picked": picked, "inductor_pick": inductor_pick, "threads": [t for _, t in calls]}))
    """, tmp_path)
    assert out["threads"][0] == "armature-isa-probes" and "MainThread" in out["threads"]
    assert out["picked"] == out["inductor_pick"]


@x86_only
@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork: POSIX only")
def test_a_process_forked_while_the_probes_run_does_not_wait_for_them(tmp_path):
    """The probe thread does not exist in a forked child: there inductor's
    function is put back, and the child's own read of the list probes by
    itself."""
    out = _run("""
        import os, signal
        release, inside = threading.Event(), threading.Event()
        def held_check_build(self, code):
            calls.append((str(self), threading.current_thread().name))
            inside.set()
            release.wait(600)
            return "vnni" not in str(self)
        C.VecISA.check_build = held_check_build
        inductors = C.valid_vec_isa_list
        start_probes({})
        assert inside.wait(600)               # (the probe thread is inside its first, held, build)
        pid = os.fork()
        if pid == 0:
            release.set()
            signal.alarm(600)   # (a child stuck waiting dies instead of hanging the test)
            ok = C.valid_vec_isa_list is inductors and bool(C.valid_vec_isa_list())
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        release.set()
        wait_for_probes()
        print(json.dumps({"child": os.waitstatus_to_exitcode(status), "ours": C.valid_vec_isa_list is not inductors}))
    """, tmp_path)
    assert out == {"child": 0, "ours": True}


@x86_only
def test_nothing_is_probed_when_the_answer_is_set_or_already_known(tmp_path):
    out = _run("""
        probe_ahead({"cpp.vec_isa_ok": False})   # the compile's options say it
        first = len(calls)
        from torch._inductor import config
        with config.patch({"cpp.vec_isa_ok": True}):
            probe_ahead({})                        # the global config says it
        second = len(calls)
        C.valid_vec_isa_list()
        third = len(calls)
        probe_ahead({})                            # inductor has its list already
        print(json.dumps({"counts": [first, second, third, len(calls)]}))
    """, tmp_path)
    first, second, third, last = out["counts"]
    assert first == second == 0
    assert last == third


@pytest.mark.inductor
@pytest.mark.slow
@x86_only
def test_real_probes_give_inductors_serial_answers(tmp_path):
    """The real C++ builds, behind the caller and read through armature's
    list, against a second fresh process where inductor probes alone."""
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
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=generous(300),
                           env=dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache)))
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    assert answers(True, tmp_path / "parallel") == answers(False, tmp_path / "serial")


def test_which_graphs_want_cpu_probes():
    assert wants_cpu_probes([torch.ones(2)])
    assert wants_cpu_probes([3, 4.0])                       # no tensor input: factories make CPU tensors
    assert wants_cpu_probes([torch.ones(2, device="meta"), torch.ones(1)])
    assert not wants_cpu_probes([torch.ones(2, device="meta")])   # (a device other than the CPU)


@x86_only
@pytest.mark.skipif(torch.cuda.is_available(), reason="with a GPU the probes wait for a graph with CPU tensors")
def test_a_compile_without_a_gpu_starts_the_probes_before_tracing(tmp_path):
    """The inductor backend's ``prepare`` (called at a cache miss, before
    the frame is traced) starts the probes in a process without a GPU,
    under the compile's options."""
    out = _run("""
        from armature.backends import lookup_backend
        lookup_backend("inductor", options={"cpp.vec_isa_ok": True}).prepare()   # (the answer is set: nothing)
        set_by_options = len(calls)
        lookup_backend("inductor").prepare()
        wait_for_probes()
        print(json.dumps({"set_by_options": set_by_options, "threads": sorted({t for _, t in calls})}))
    """, tmp_path)
    assert out == {"set_by_options": 0, "threads": ["armature-isa-probes"]}


@x86_only
def test_a_speculating_compile_reads_the_first_candidate_ahead_and_is_checked_against_its_probe(tmp_path):
    """Inside ``speculating`` a pick that reads item 0 answers the first
    candidate while its probe is still building (a stand-in, true on that
    thread); a pick that iterates (``ATEN_CPU_CAPABILITY`` naming an ISA)
    waits, as before.  The speculation's ``confirmed`` waits for the probe
    and says whether it passed; afterwards reads get inductor's answers."""
    out = _run("""
        release = threading.Event()
        def held_check_build(self, code):
            calls.append((str(self), threading.current_thread().name))
            release.wait(600)
            return "vnni" not in str(self)
        C.VecISA.check_build = held_check_build
        from armature.backends.cpu_isa_probes import ahead_candidate, speculating
        from armature.backends.inductor import _WhileProbing
        start_probes({})
        ahead = str(ahead_candidate())
        seen = {}
        def read():
            with speculating() as spec:
                seen["spec"] = spec
                picked = C.pick_vec_isa()
                seen["picked"], seen["truth"] = str(picked), bool(picked)
        import sys
        reader = threading.Thread(target=read)
        reader.start()
        def blocked_on_the_probe():          # (the reader waits in the lazy list for the held probe)
            frame = sys._current_frames().get(reader.ident)
            while frame is not None:
                if frame.f_code.co_name == "_fill":
                    return True
                frame = frame.f_back
            return False
        deadline = time.monotonic() + 300
        while reader.is_alive() and not blocked_on_the_probe() and time.monotonic() < deadline:
            time.sleep(0.01)
        waited = reader.is_alive()           # (every build is held: only a read ahead can answer now)
        backward_with_forward = [bool(_WhileProbing())]
        release.set()
        reader.join(600)
        confirmed = seen["spec"].confirmed()
        backward_with_forward.append(bool(_WhileProbing()))
        after = str(C.pick_vec_isa())
        ahead_after = ahead_candidate()
    """ + _serial_list() + """
        print(json.dumps({"ahead": ahead, "waited": waited, "picked": seen["picked"], "truth": seen["truth"],
                          "confirmed": confirmed, "after": after, "inductor_pick": inductor_pick,
                          "candidates": candidates, "serial": serial, "iterated": iterated,
                          "indexed": indexed, "ahead_after": ahead_after is None,
                          "backward_with_forward": backward_with_forward}))
    """, tmp_path)
    first = out["candidates"][0]
    assert out["ahead"] == first
    if out["iterated"]:     # (ATEN_CPU_CAPABILITY names an ISA: the pick looks through the list, and waits)
        assert out["waited"] and out["picked"] == out["inductor_pick"]
    elif out["indexed"]:    # (the plain pick: item 0, read ahead)
        assert not out["waited"] and out["picked"] == first and out["truth"]
    else:                   # (ATEN_CPU_CAPABILITY=default: no vector ISA, whatever the list holds)
        assert not out["waited"] and out["picked"] == out["inductor_pick"]
    # (the pick reads the list's truth first: ahead of the probe, so the probe is waited for)
    assert out["confirmed"] == (out["serial"][:1] == [first])
    assert out["after"] == out["inductor_pick"]
    assert out["ahead_after"]   # (decided: no later compile speculates)
    # (AOTAutograd compiles the backward with the forward only while the probe runs)
    assert out["backward_with_forward"] == [True, False]


@pytest.mark.inductor
@pytest.mark.slow
@x86_only
@pytest.mark.parametrize("first_passes", [True, False], ids=["probe_passes", "probe_fails"])
def test_a_compile_that_read_the_isa_ahead_runs_only_what_the_probe_confirms(tmp_path, first_passes):
    """The inductor backend's first compile in a process generates and
    builds its kernels, the backward's too, while the first candidate's
    probe runs (here a stand-in held until the compile asks for its
    answer); it returns only once the probe has answered.  If the probe passes, that compile is kept; if it
    fails, the graph is
    compiled again for inductor's real pick (codegen runs again, the
    speculative kernels are neither reused nor served from inductor's FX
    graph cache), and the results are right either way."""
    out = _run(f"""
        FIRST_PASSES = {first_passes}
        from armature.backends.cpu_isa_probes import _candidates
        first = str(_candidates(C)[0])
        release, probe_ends = threading.Event(), []
        def slow_check_build(self, code):
            calls.append((str(self), threading.current_thread().name))
            if str(self) == first:
                release.wait(120)     # (held until the compile asks whether its ISA is confirmed)
                probe_ends.append(time.perf_counter())
                return FIRST_PASSES
            return True
        C.VecISA.check_build = slow_check_build
        import torch._inductor.graph as G
        from torch._inductor import cpp_builder
        codegens, built_for = [], []
        codegen = G.GraphLowering.codegen
        def counting_codegen(self, *a, **k):
            codegens.append(time.perf_counter())
            return codegen(self, *a, **k)
        from armature.backends import cpu_isa_probes as P
        confirmed = P.Speculation.confirmed
        def releasing_confirmed(self):
            release.set()
            return confirmed(self)
        P.Speculation.confirmed = releasing_confirmed
        G.GraphLowering.codegen = counting_codegen
        chosen = cpp_builder._get_build_args_of_chosen_isa
        def recording(vec_isa):
            built_for.append(str(vec_isa))
            return chosen(vec_isa)
        cpp_builder._get_build_args_of_chosen_isa = recording
        import armature
        def f(x, y):
            return (x.sin() * y + 1).relu().sum(1)
        x, y = torch.randn(64, 33, requires_grad=True), torch.randn(64, 33)
        x_ref = x.detach().clone().requires_grad_()
        compiled = armature.compile(f, backend="inductor")
        t0 = time.perf_counter()
        got = compiled(x, y)
        returned = time.perf_counter()
        after_forward = len(codegens)
        got.sum().backward()
        expected = f(x_ref, y)
        expected.sum().backward()
        ok = torch.allclose(got, expected, atol=1e-5) and torch.allclose(x.grad, x_ref.grad, atol=1e-5)
        again = torch.allclose(compiled(x * 2, y), f(x * 2, y), atol=1e-5)
        picked = str(C.pick_vec_isa())
        # (the same graph compiled again, now knowing the answer: inductor's FX-graph cache
        # serves what the compile that read ahead saved, if the probe confirmed it)
        before = len(codegens)
        other = armature.compile(lambda x, y: f(x, y), backend="inductor")
        x2 = x.detach().clone().requires_grad_()
        other(x2, y).sum().backward()
        ok = ok and torch.allclose(x2.grad, x_ref.grad, atol=1e-5)
        codegens_again = len(codegens) - before
    """ + _serial_list() + """
        print(json.dumps({"first": first, "after_forward": after_forward, "after_backward": len(codegens),
                          "ok": ok, "again": again, "picked": picked, "built_for": built_for,
                          "probe_before_return": max(probe_ends) <= returned, "serial": serial,
                          "codegens_again": codegens_again,
                          "inductor_pick": inductor_pick}))
    """, tmp_path, ARMATURE_CACHE="0", ATEN_CPU_CAPABILITY="")   # (the plain pick: item 0)
    assert out["ok"] and out["again"]
    assert out["probe_before_return"]   # (nothing ran before the probe answered)
    assert out["picked"] == out["inductor_pick"]
    # (whether the first candidate passed: the stand-in's answer, and, for AMX, whether the
    # kernel grants AMX to the process, which the stand-in cannot know)
    confirmed = out["serial"][:1] == [out["first"]]
    assert confirmed == (first_passes and ("amx" not in out["first"] or out["inductor_pick"] == out["first"]))
    # (the probe still ran when the forward was compiled: the backward was compiled with it)
    if confirmed:
        assert (out["after_forward"], out["after_backward"]) == (2, 2)
        assert out["codegens_again"] == 0   # (one key for both: a restart reads ahead where a cold start did not)
        assert set(out["built_for"]) <= {out["first"], "INVALID_VEC_ISA", ""}
    else:
        # (forward and backward in the window, then again for the real pick: the probe has
        # answered, so that backward waits for the first backward call)
        assert (out["after_forward"], out["after_backward"]) == (3, 4)
        assert out["codegens_again"] == 0   # (served what the compile made again for the real pick saved)
        # (the kernels that ran were built for the real pick, after every build for the ISA read
        # ahead; kernels that need no vector ISA are built for none)
        built = out["built_for"]
        last_ahead = max(i for i, isa in enumerate(built) if isa == out["first"])
        assert out["inductor_pick"] in built[last_ahead + 1:]
