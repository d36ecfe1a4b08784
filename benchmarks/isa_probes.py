"""Inductor's CPU vector-ISA probes: all, one after another (inductor, torch.compile) vs those the pick needs (armature).

Before its first C++ kernel in a process, inductor compiles and loads a probe
program for every vector ISA the CPU reports, and picks the first that
passes (backends/cpu_isa_probes.py).  This measures how long the pick takes
with a cold inductor cache, each round in two fresh processes (each with its
own empty cache): one where inductor probes alone (``pick_vec_isa()``, what
torch.compile waits for) and one where armature's ``probe_ahead`` runs
first.  Both must pick the same ISA and give the same whole list (read
after the timing); the script fails if they do not.

    python benchmarks/isa_probes.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os

# (this measures compiling: the persistent compile cache, on by default, would answer a second
# run from disk; benchmarks/warm_start.py measures that; child processes inherit it)
os.environ["ARMATURE_CACHE"] = "0"
import statistics
import subprocess
import sys
import tempfile

CHILD = """
import json, time
from torch._inductor import cpu_vec_isa as C
from armature.backends.cpu_isa_probes import probe_ahead
t0 = time.perf_counter()
if {ahead}:
    probe_ahead({{}})
picked = str(C.pick_vec_isa())
s = time.perf_counter() - t0
print(json.dumps({{"s": s, "isas": [str(i) for i in C.valid_vec_isa_list()], "picked": picked}}))
"""


def one(ahead: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="isa-probes-") as cache:
        p = subprocess.run([sys.executable, "-c", CHILD.format(ahead=ahead)], capture_output=True, text=True,
                           timeout=600, env=dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache))
    if p.returncode != 0:
        raise SystemExit(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    print(f"# {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}", flush=True)
    serial, ahead = [], []
    for _ in range(a.rounds):   # (alternated, so that load hits both alike)
        s, p = one(False), one(True)
        if (s["isas"], s["picked"]) != (p["isas"], p["picked"]):
            raise SystemExit(f"different answers: serial {s}, ahead {p}")
        serial.append(s["s"])
        ahead.append(p["s"])
        print(json.dumps({"serial_s": s["s"], "ahead_s": p["s"], "isas": s["isas"]}), flush=True)
    ms, mp = statistics.median(serial), statistics.median(ahead)
    print(f"| probes | inductor alone s | armature s | ratio |\n|---|---|---|---|\n"
          f"| {', '.join(s['isas'])} | {ms:.2f} | {mp:.2f} | {mp / ms:.2f} |")
    print(f"# load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
