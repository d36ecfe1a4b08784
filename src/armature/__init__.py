"""armature: a just-in-time compiler frontend for PyTorch.

Public API only; see docs/ARCHITECTURE.md for how a call flows through.
"""
from . import config
from .api import CompiledFunction, CompiledModule, cache_entries, compile, reset
from .exporter import ExportError, export
from .backends import list_backends, register_backend
from .diagnostics.errors import ArmatureError, Unsupported
from .driver.compile_frame import BackendCompilerFailed
from .driver.explain import ExplainOutput, explain
from .graph.dynamic import DynamicDimSpecialized
from .graph.regions import compile_region
from .runtime.markers import allow_in_graph, disable, disallow_in_graph, dont_skip_tracing, graph_break
from .runtime.stance import RecompileError, Stance, get_stance, set_stance
from .runtime.marks import mark_dynamic, mark_static, mark_static_address, mark_unbacked, maybe_mark_dynamic
from .backends.cudagraphs import cudagraph_mark_step_begin
from .diagnostics.report import report


def patch_torch_compile(backend=None, record_run: bool = True):
    """Route ``torch.compile`` and torch's user-facing compiler helpers
    (``disable``, ``mark_dynamic``...) to armature: ``with armature.patch_torch_compile(): ...`` (or
    ``.start()``/``.stop()``), as ``python -m armature run`` does for a whole
    script.  See src/armature_runner/patch.py."""
    from armature_runner.patch import patch_torch_compile as _patch
    return _patch(backend=backend, record_run=record_run)

__all__ = [
    "compile", "export", "ExportError", "reset", "list_backends", "register_backend", "cache_entries", "config",
    "Unsupported", "ArmatureError", "BackendCompilerFailed", "CompiledFunction", "CompiledModule",
    "explain", "ExplainOutput", "graph_break", "disable",
    "allow_in_graph", "disallow_in_graph", "dont_skip_tracing",
    "set_stance", "get_stance", "Stance", "RecompileError",
    "mark_dynamic", "maybe_mark_dynamic", "mark_static", "mark_static_address", "mark_unbacked",
    "cudagraph_mark_step_begin", "DynamicDimSpecialized",
    "report", "patch_torch_compile", "compile_region",
]
from ._version import __version__  # noqa: E402


def _report_from_env() -> None:
    import os
    path = os.environ.get("ARMATURE_REPORT")
    if path:
        report(path)


_report_from_env()
