"""The only place that knows which CPython version armature runs on.

Opcode handlers register with a version range (``since``/``until``,
inclusive; ``until=None`` means "and every later version we support").  At
import only those valid for the running interpreter are kept, and on a
supported version each name is checked against the interpreter's real
opcodes, so a handler registered for an opcode that does not exist there (a
wrong range) fails loudly at import.  An interpreter outside ``SUPPORTED``
makes tracing refuse (the original code runs, with ``unsupported_reason``)
instead of half-working; nothing is asserted about it, so importing
armature there never fails.

Handlers for 3.12 are written where 3.12 differs from both 3.11 and 3.13
(their ranges say so); 3.14's new opcodes live in ``trace/ops/py314.py`` and
the opcodes 3.14 removed stop at 3.13.  The unit suite runs on every
version in ``SUPPORTED`` (``./dev test --python 3.12|3.13|3.14``), which is
what puts a version there.  The code-generation counterpart of this module
is ``codegen/spelling.py``.
"""
from __future__ import annotations

import dis
import functools
import sys
import types
from typing import Callable

#: versions whose interpreter and code generation are tested
SUPPORTED = ((3, 11), (3, 12), (3, 13), (3, 14))
VERSION = sys.version_info[:2]


def is_supported() -> bool:
    return VERSION in SUPPORTED


def unsupported_reason() -> str:
    supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED)
    return (f"armature's tracer is written for CPython {supported}; this is "
            f"{VERSION[0]}.{VERSION[1]}, so compiled functions run as ordinary Python")


def _real_opcode(name: str) -> bool:
    """An opcode the interpreter executes (3.12+ list pseudo-instructions
    such as LOAD_METHOD in ``dis.opmap`` too, numbered 256 and up)."""
    return name in dis.opmap and dis.opmap[name] < 256


HANDLERS: dict[str, Callable] = {}
#: every registration, for every version: (names, since, until, handler)
REGISTRATIONS: list[tuple[tuple[str, ...], tuple[int, int], tuple[int, int] | None, Callable]] = []


def handlers_for(version: tuple[int, int]) -> dict[str, list[Callable]]:
    """The handlers each opcode would get on ``version`` (for checking the
    ranges of a version that is not running, tests/test_pyversion.py)."""
    out: dict[str, list[Callable]] = {}
    for names, since, until, fn in REGISTRATIONS:
        if since <= version and (until is None or version <= until):
            for name in names:
                out.setdefault(name, []).append(fn)
    return out


def opcode(*names: str, since: tuple[int, int] = (3, 11), until: tuple[int, int] | None = None):
    """Register a handler for the named opcodes on versions since..until (inclusive)."""
    def deco(fn: Callable) -> Callable:
        REGISTRATIONS.append((names, since, until, fn))
        if since <= VERSION and (until is None or VERSION <= until):
            for name in names:
                if not is_supported():
                    if not _real_opcode(name):
                        continue
                else:
                    assert _real_opcode(name), f"{name} is not an opcode of Python {VERSION}"
                assert name not in HANDLERS, f"two handlers for {name}"
                HANDLERS[name] = fn
        return fn
    return deco


def at_least(version: tuple[int, int]) -> bool:
    """For the few version facts that are data, not handlers (codegen/spelling.py)."""
    return VERSION >= version


#: 3.11/3.12: while a generator hands a throw()/close() to the iterator of its
#: ``yield from``, a throw()/close() of the generator itself (from that
#: iterator's method) is handed to the iterator again (``_PyGen_yf`` reads the
#: paused instruction, not the frame's state); 3.13+ find no delegate in a
#: running frame and raise "generator already executing".
REENTRANT_YIELD_FROM_THROW = VERSION < (3, 13)
#: 3.13+: eval() and exec() take ``globals``/``locals`` by keyword too
#: (3.11/3.12: a TypeError)
NAMESPACE_KEYWORDS = VERSION >= (3, 13)


def exception_table(code):
    """Entries (start, end, target, depth, lasti) of a 3.11+ code object."""
    return dis._parse_exception_table(code)


@functools.lru_cache(maxsize=4096)
def exception_table_of(code: types.CodeType) -> tuple:
    return tuple(exception_table(code))


def handler_for(code: types.CodeType, offset: int):
    """The innermost exception-table entry covering ``offset``, or None
    (the tracer routes exceptions by it; generators and breaks ask it too)."""
    for entry in exception_table_of(code):
        if entry.start <= offset < entry.end:
            return entry
    return None
