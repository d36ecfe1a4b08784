"""Errors users see.

Every error that reaches a user says what failed, where in *their* code
(file:line and the source line), why, and what to do about it.  The tracer
raises :class:`Unsupported` deep inside; the interpreter attaches the user
location of the instruction it was executing as the error travels out.
"""
from __future__ import annotations

import linecache
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class UserLocation:
    """A place in user code: the frame the tracer was executing."""

    filename: str
    lineno: int
    func_name: str

    @property
    def source_line(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        line = self.source_line
        text = f'File "{self.filename}", line {self.lineno}, in {self.func_name}'
        return f"{text}\n    {line}" if line else text


class ArmatureError(Exception):
    """Base class of armature's own errors."""


class Unsupported(ArmatureError):
    """The tracer met something it cannot model.

    Without ``fullgraph=True`` this never reaches the user: the frame runs as
    the original Python instead.  With ``fullgraph=True`` it is raised from
    the compiled call with the construct, the user's stack and a hint.
    """

    def __init__(self, what: str, hint: str | None = None):
        super().__init__(what)
        self.what = what
        self.hint = hint
        self.user_stack: list[UserLocation] = []

    def add_location(self, loc: UserLocation) -> None:
        # Innermost frame is added first while the error unwinds inline calls.
        self.user_stack.append(loc)

    @property
    def location(self) -> UserLocation | None:
        return self.user_stack[0] if self.user_stack else None

    def __str__(self) -> str:
        parts = [self.what]
        if self.user_stack:
            parts.append("User code (innermost last):")
            for loc in reversed(self.user_stack):
                parts.append("  " + str(loc).replace("\n", "\n  "))
        if self.hint:
            parts.append(f"Hint: {self.hint}")
        return "\n".join(parts)


class UserException(Unsupported):
    """An exception the traced program itself raises (a ``raise`` statement,
    or a builtin operation failing as it would in eager).  The interpreter
    routes it to the frame's exception table; if nothing in the trace
    catches it, it behaves like any Unsupported (the instruction runs
    natively and raises the real exception)."""

    def __init__(self, exc_type: type, *args, value=None):
        message = ", ".join(str(a) for a in args)
        super().__init__(f"{exc_type.__name__}: {message}" if message else exc_type.__name__)
        self.exc_type = exc_type
        self.exc_args = args
        self.value = value  # an ExceptionValue, when the program built one


def user_error(exc_type: type, *args) -> UserException:
    return UserException(exc_type, *args)


class InternalError(ArmatureError):
    """A bug in armature itself (never the user's fault).

    Users never see it: the frame runs as Python instead (logged under
    ``ARMATURE_LOGS=fallbacks``; with ``fullgraph=True`` an
    :class:`Unsupported` names it).  The test suite sets
    ``ARMATURE_STRICT_INTERNAL_ERRORS=1`` so that it propagates and fails the
    test: an internal error is a bug to fix, not a break reason."""


def data_dependent(e: Exception) -> Unsupported:
    """A branch, index or specialisation that needs the value of an unbacked
    (data-dependent) symbol: a graph break there, as for any data-dependent
    control flow."""
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    return Unsupported(f"the value of a data-dependent size or scalar is needed here ({first})",
                       hint="without fullgraph the frame is split here (a graph break); torch._check(...) "
                            "can tell armature a fact about the value, e.g. torch._check(n >= 0)")


def strict_internal_errors() -> bool:
    """The test-only switch: internal errors propagate instead of falling back."""
    return os.environ.get("ARMATURE_STRICT_INTERNAL_ERRORS") == "1"


def internal_error(what: str) -> ArmatureError:
    """An error of armature's own machinery found while tracing: an
    :class:`InternalError` under the strict switch, else an
    :class:`Unsupported` marked ``internal`` (the frame runs as Python, it is
    never a graph break)."""
    if strict_internal_errors():
        return InternalError(what)
    err = Unsupported(f"internal error: {what}",
                      hint="this is a bug in armature, not in your code; the frame runs as Python. "
                           "Please report it with ARMATURE_LOGS=fallbacks output")
    err.internal = True
    return err
