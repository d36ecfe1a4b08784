"""``python -m armature run``: run an unmodified script (or ``-m module``)
with every ``torch.compile`` routed to armature, as ``python script.py``
would run it (``sys.argv``, ``sys.path[0]``, ``__name__ == "__main__"``);
at exit print a summary to stderr (stdout stays the script's) and, with
``--report``, write the one-file HTML report."""
from __future__ import annotations

import os
import runpy
import sys

USAGE = """usage: python -m armature run [options] script.py [args ...]
       python -m armature run [options] -m module [args ...]

Runs the script with torch.compile, Dynamo's optimize() and the
torch.compiler / Dynamo helpers (disable, graph_break, mark_dynamic,
set_stance, ...) routed to armature, then prints a summary of what was
compiled to stderr.

options:
  --report PATH     also write a self-contained HTML report of the run to PATH
  --backend NAME    compile everything with this armature backend (eager,
                    aot_eager, inductor) instead of the script's choice
  --no-summary      do not print the summary at exit
  -h, --help        show this help
"""


def _parse(argv: list[str]):
    report = backend = None
    summary = True
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            return None
        if a == "--report" and i + 1 < len(argv):
            report, i = argv[i + 1], i + 2
        elif a.startswith("--report="):
            report, i = a.split("=", 1)[1], i + 1
        elif a == "--backend" and i + 1 < len(argv):
            backend, i = argv[i + 1], i + 2
        elif a.startswith("--backend="):
            backend, i = a.split("=", 1)[1], i + 1
        elif a == "--no-summary":
            summary, i = False, i + 1
        elif a == "-m" and i + 1 < len(argv):
            return report, backend, summary, ("module", argv[i + 1]), argv[i + 2:]
        elif a.startswith("-"):
            raise SystemExit(f"armature run: unknown option {a!r}\n\n{USAGE}")
        else:
            return report, backend, summary, ("path", a), argv[i + 1:]
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] != "run":
        print(USAGE, file=sys.stderr)
        return 2
    parsed = _parse(argv[1:])
    if parsed is None:
        print(USAGE, file=sys.stderr)
        return 0 if any(a in ("-h", "--help") for a in argv) else 2
    report_path, backend, show_summary, (kind, target), args = parsed
    if kind == "path" and not os.path.exists(target):
        print(f"armature run: no such script: {target}", file=sys.stderr)
        return 2
    from armature.backends import list_backends
    if backend is not None and backend not in list_backends():
        print(f"armature run: unknown backend {backend!r}; valid: {', '.join(list_backends())}",
              file=sys.stderr)
        return 2
    from .patch import patch_torch_compile
    patch = patch_torch_compile(backend=backend)
    code = 0
    patch.start()
    try:
        if kind == "path":
            sys.argv = [target, *args]
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
        else:
            sys.argv = [target, *args]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    finally:
        _finish(report_path, show_summary)
        patch.stop()
    return code


def _finish(report_path: str | None, show_summary: bool) -> None:
    """Summary and report; never hides the script's own outcome."""
    from armature.diagnostics import record, summary
    rec = record.current()
    if rec is None:
        return
    written = None
    if report_path:
        try:
            from armature.diagnostics import report
            written = report.write(report_path, rec)
        except Exception as e:   # the script's run matters more than its report
            print(f"[armature] could not write the report {report_path}: {type(e).__name__}: {e}",
                  file=sys.stderr)
    if show_summary:
        sys.stdout.flush()
        print(summary.text(rec, written), file=sys.stderr)
