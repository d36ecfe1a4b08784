"""What the layers below reach in the layers above them: the compiled
callables of ``api``, and the compile driver's entry point.

The per-call runtime makes compiled wrappers of the callees residual code
calls (``runtime/wrappers.py``), unwraps compiled callables handed to
``armature.disable`` and the marks (``runtime/markers.py``), compiles the
modules that DDP and FSDP wrap (``runtime/distributed.py``); the value layer
recognises compiled functions and modules met in traced code; diagnostics
recognise the code of a compiled module's call.  Each of these needs an
object defined above it.  Importing it would run against the layering
(``docs/architecture/layers.md``), so the module that defines it installs it
here when it is imported -- ``api`` its classes and functions, the driver
its ``compile_call`` -- and the layers below read the attribute at the time
of the call.  ``import armature`` imports both, so every attribute is set
before any compiled code runs; reading one earlier is a bug of armature's
own, and fails loudly as ``None`` would not: the names start unset.
"""
from __future__ import annotations

#: the names installed, by the module that installs them
INSTALLED_BY = {
    "CompiledFunction": "api", "CompiledModule": "api", "compile": "api", "reset": "api",
    "is_compiled_module_type": "api", "module_call_code": "api",
    "compile_call": "driver.compile_frame",
}


def install(**objects) -> None:
    """Set the named objects (each one of :data:`INSTALLED_BY`)."""
    unknown = set(objects) - set(INSTALLED_BY)
    if unknown:
        raise AttributeError(f"armature.upcalls: no such up-call {sorted(unknown)}")
    globals().update(objects)


def __getattr__(name: str):
    # reached only for a name not installed yet (installed ones are plain globals)
    if name in INSTALLED_BY:
        raise AttributeError(f"armature.upcalls.{name} is read before armature.{INSTALLED_BY[name]} installed it "
                             "(import armature first)")
    raise AttributeError(f"module 'armature.upcalls' has no attribute {name!r}")
