"""Run the test suite, or its machine-facts part, as on machines unlike this one.

``./dev conditions`` (CI runs it) and ``./dev conditions --full`` (the whole
unit suite under each condition; about as long as ``./dev test`` each).

A test that reads a fact of one machine (its CPU's vector ISAs, its core
count, its speed) passes where it was written and fails on a user's.  The
suite reads those facts from the machine it runs on (tests/machine.py,
tests/test_cpu_isa_probes.py); this runs it under conditions that differ
from the development machine and that can be made on it:

* ``avx2``: inductor sees an AVX2-only CPU (tests/machine_stubs) and ATen
  dispatches its AVX2 kernels (``ATEN_CPU_CAPABILITY=avx2``);
* ``amx``: inductor sees AVX-512 with VNNI and AMX tiles (Sapphire Rapids
  and later); a CPU without AMX fails the AMX probe as inductor expects;
* ``aten-default``: ATen without vector kernels (``ATEN_CPU_CAPABILITY=default``,
  which also makes inductor generate scalar C++);
* ``one-core``: ``taskset -c 0`` (one worker, bounds stretched: tests/machine.py);
* ``loaded``: a second copy of the same tests running beside it.

Each condition's result is printed as a line of a table; the exit status is
non-zero if any condition failed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The tests whose expectations depend on the CPU, the core count or the
#: machine's speed: inductor's ISA pick and C++ builds, the compile workers,
#: threads calling compiled code, merged regions' layouts.
MACHINE_FACTS = ["tests/test_cpu_isa_probes.py", "tests/test_backends.py", "tests/test_cpp_kernel_batches.py",
                 "tests/test_concurrent_calls.py", "tests/test_regions.py"]

CONDITIONS = {
    "as-is": {},
    "avx2": {"ARMATURE_TEST_CPU_ISA": "avx2", "ATEN_CPU_CAPABILITY": "avx2"},
    "amx": {"ARMATURE_TEST_CPU_ISA": "amx"},
    "aten-default": {"ATEN_CPU_CAPABILITY": "default"},
    "one-core": {},
    "loaded": {},
}


def _pytest(paths: list[str], workers: str, extra: list[str], one_core: bool = False) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ignore=tests/models",
           *(["-n", workers] if workers != "0" else []), *paths, *extra]
    if one_core:
        if not shutil.which("taskset"):
            raise SystemExit("one-core needs taskset (util-linux)")
        cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0))), *cmd]
    return cmd


def _summary(output: str) -> str:
    lines = [ln for ln in output.strip().splitlines() if ln.strip()]
    return lines[-1].strip("= ") if lines else "(no output)"


def run(name: str, paths: list[str], extra: list[str], workers: str) -> tuple[int, str, float]:
    env = dict(os.environ, **CONDITIONS[name])
    # (each condition its own inductor cache, as another machine would have: torch's own cache
    # key leaves the vector ISA out, so torch.compile -- the tests' oracle -- would read kernels
    # written for this CPU's width; armature's compiles key on it: backends/inductor_cache_key.py)
    own_cache = None
    if "TORCHINDUCTOR_CACHE_DIR" not in env:
        own_cache = env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix=f"armature-conditions-{name}-")
    try:
        return _run(name, env, paths, extra, workers)
    finally:
        if own_cache:
            shutil.rmtree(own_cache, ignore_errors=True)


def _run(name: str, env: dict, paths: list[str], extra: list[str], workers: str) -> tuple[int, str, float]:
    start = time.monotonic()
    one_core = name == "one-core"
    cmd = _pytest(paths, "0" if one_core else workers, extra, one_core)
    beside = None
    if name == "loaded":   # (the same tests at once, in the same number of workers: twice the work per core)
        beside = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rc, out = p.returncode, p.stdout
    if beside is not None:
        beside_out, _ = beside.communicate()
        if beside.returncode:
            rc, out = rc or beside.returncode, out + "\n--- the copy running beside it:\n" + beside_out
    if rc:
        sys.stdout.write(out[-8000:] + "\n")
    return rc, _summary(out), time.monotonic() - start


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="the whole unit suite (tests/) under each condition")
    ap.add_argument("--tests", default=None,
                    help="comma-separated test paths instead of the machine-facts tests (CI: the ISA tests)")
    ap.add_argument("--only", default=",".join(CONDITIONS), help="conditions to run, comma-separated")
    ap.add_argument("--workers", default="auto", help="pytest-xdist workers (0: none); one-core always runs one")
    args, extra = ap.parse_known_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in CONDITIONS]
    if unknown:
        ap.error(f"unknown condition(s) {unknown}; known: {', '.join(CONDITIONS)}")
    paths = ["tests"] if args.full else args.tests.split(",") if args.tests else MACHINE_FACTS
    rows, failed = [], 0
    for name in names:
        rc, summary, seconds = run(name, paths, extra, args.workers)
        failed += rc != 0
        row = f"| {name} | {' '.join(f'{k}={v}' for k, v in CONDITIONS[name].items()) or '-'} | {summary} | {seconds:.0f} s |"
        rows.append(row)
        print(row, flush=True)
    print("\n| condition | environment | result | time |\n| --- | --- | --- | --- |\n" + "\n".join(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
