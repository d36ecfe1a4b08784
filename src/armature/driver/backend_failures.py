"""What a backend's failure to compile a graph armature built costs.

The graph is armature's: where eager runs the code, a backend that cannot
compile the graph is never an error the user sees.  Two things follow.

Sizes the backend meets that the trace did not.  The trace runs each op on
fake tensors, so a graph's own outputs have sizes armature knows (or breaks
on, as ``capture_dynamic_output_shape_ops`` says).  A backend that traces
further (aot_autograd's joint forward-backward graph, decompositions) can
meet a data-dependent size inside an op whose output has none: the
backward of ``x[mask] = v`` indexes the gradient with the mask
(``nonzero``).  The graph's ShapeEnv therefore allows dynamic output sizes
while the backend compiles (and afterwards: inductor lowers a backward
lazily, at its first call), so such a size becomes an unbacked symbol the
backend handles, as it does when ``capture_dynamic_output_shape_ops`` is on.
The setting says which *graph outputs* may have data-dependent sizes; it is
not a promise that no backend decomposition has any.

Failures that remain cost the frame, not the user:

* the fake-tensor limits torch's compilers meet in a graph (an op with a
  data-dependent output size or value, an operator without a fake
  implementation, an aliasing mutation, a decomposition branching on a
  data-dependent number): the frame runs as Python, with a warning, for
  any backend (as torch.compile adds a graph break for the first four);
* any other failure of one of armature's own backends (eager, aot_eager,
  inductor, ...): a graph they cannot compile is armature's bug, so the
  frame runs as Python with a warning; under the test suite's strict switch
  it is an :class:`InternalError`;
* any other failure of a backend the user wrote (a callable), or of the
  ``*_TESTING_ONLY`` backends torch's minifier tests use (they fail on
  purpose), reaches the user as :class:`BackendCompilerFailed`, as under
  torch.compile.

With ``fullgraph=True`` the frame cannot run as Python: the first two raise
:class:`Unsupported` naming the backend, the frame and the cause.
"""
from __future__ import annotations

import dataclasses

from ..diagnostics import logs
from ..diagnostics.errors import ArmatureError, InternalError, Unsupported, UserLocation, strict_internal_errors

log_fallbacks = logs.artifact("fallbacks")


class BackendCompilerFailed(ArmatureError):
    """A backend raised while compiling a graph (``cause`` is what it raised)."""

    def __init__(self, message: str, cause: BaseException | None = None, backend=None):
        super().__init__(message)
        self.cause = cause
        self.backend = backend


def _fake_tensor_limits() -> tuple[type, ...]:
    from torch._subclasses import fake_tensor as ft
    from torch.fx.experimental import symbolic_shapes
    names = ("DataDependentOutputException", "DynamicOutputShapeException", "UnsupportedOperatorException",
             "UnsupportedFakeTensorException", "UnsupportedMutationAliasingException")
    limits = tuple(getattr(ft, n) for n in names if hasattr(ft, n))
    # (a decomposition branching on a number the graph reads from a tensor)
    return limits + (symbolic_shapes.GuardOnDataDependentSymNode,)


def allow_dynamic_sizes(shape_env) -> None:
    """Let the backend meet data-dependent sizes inside the graph's ops
    (unbacked symbols) rather than fail on them."""
    if shape_env is not None and not shape_env.allow_dynamic_output_shape_ops:
        # (the settings are part of fake-tensor cache keys: replaced whole)
        shape_env.settings = dataclasses.replace(shape_env.settings, allow_dynamic_output_shape_ops=True)


def is_fake_tensor_limit(error: BaseException | None) -> bool:
    """Whether ``error`` (or what caused it) is one of the fake-tensor limits
    torch's compilers meet in a graph."""
    limits = _fake_tensor_limits()
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, limits):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


def is_armatures_backend(backend) -> bool:
    """A backend armature ships (a registered name resolved to one of its own
    compiler functions), as opposed to a callable the user wrote."""
    from ..backends import _Backend
    if not isinstance(backend, _Backend) or backend.name.endswith("_TESTING_ONLY"):
        return False   # (the minifier's test backends fail on purpose: their error is the user's to see)
    module = getattr(backend.fn, "__module__", "") or ""
    return module == "armature" or module.startswith("armature.")


def frame_location(fn) -> UserLocation:
    code = fn.__code__
    return UserLocation(code.co_filename, code.co_firstlineno, code.co_name)


def handle(fn, error: BackendCompilerFailed, backend, fullgraph: bool) -> str:
    """Decide what a backend failure costs.  Returns the fallback reason when
    the frame should run as Python; raises when it reaches the user
    (the user's own backend failing, ``fullgraph=True``, the strict switch)."""
    fake_limit = is_fake_tensor_limit(error.cause)
    if not fake_limit and not is_armatures_backend(backend):
        raise error   # the user's own backend failed: their error, as under torch.compile
    reason = f"{error} (compiling the graph of {fn.__qualname__})"
    if not fake_limit and strict_internal_errors():
        raise InternalError(reason) from error
    if fullgraph:
        err = Unsupported(
            reason,
            hint=("eager runs this code, but the backend cannot compile the graph armature captured; "
                  "without fullgraph=True the frame runs as Python. "
                  + ("An op's size or value depends on tensor data: set armature.config."
                     "capture_dynamic_output_shape_ops / capture_scalar_outputs, or move the op out of the "
                     "compiled function" if fake_limit else
                     "This is a bug in armature; please report it with the output of ARMATURE_LOGS=fallbacks")))
        err.add_location(frame_location(fn))
        raise err from error
    log_fallbacks.warning("armature: %s; the frame runs as Python", reason)
    return reason
