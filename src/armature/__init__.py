"""armature: a just-in-time compiler frontend for PyTorch.

Public API only; see docs/ARCHITECTURE.md for how a call flows through.
"""
from . import config
from .api import CompiledFunction, CompiledModule, cache_entries, compile, reset
from .backends import list_backends, register_backend
from .diagnostics.errors import ArmatureError, Unsupported
from .runtime.compile_frame import BackendCompilerFailed

__all__ = [
    "compile", "reset", "list_backends", "register_backend", "cache_entries", "config",
    "Unsupported", "ArmatureError", "BackendCompilerFailed", "CompiledFunction", "CompiledModule",
]
__version__ = "0.1.0"
