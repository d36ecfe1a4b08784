"""One rank of a multi-process test run (launch.py): joins the gloo group,
runs the named scenarios in order (every rank runs the same list, so their
collectives pair up) and writes ``{scenario: result}`` as JSON.  A scenario
that raises records its traceback and the rank goes on with the next one;
the test reports it."""
from __future__ import annotations

import json
import os
import sys
import traceback
from datetime import timedelta


def main() -> None:
    out_dir, names = sys.argv[1], [n for n in sys.argv[2].split(",") if n]
    import torch.distributed as dist
    # (launch.py stretches the bound for a busy or small machine: tests/machine.py)
    dist.init_process_group("gloo", timeout=timedelta(seconds=float(os.environ.get("ARMATURE_TEST_COLLECTIVE_TIMEOUT", 60))))
    rank = dist.get_rank()
    import importlib
    import scenarios
    # scenario modules of other suites (launch.run(modules=...)) register
    # themselves in scenarios.SCENARIOS when imported
    for mod in filter(None, os.environ.get("ARMATURE_DIST_MODULES", "").split(",")):
        importlib.import_module(mod)
    results = {}
    for name in names:
        try:
            results[name] = scenarios.SCENARIOS[name]()
        except Exception:
            results[name] = {"error": traceback.format_exc()}
        with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
            json.dump(results, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
