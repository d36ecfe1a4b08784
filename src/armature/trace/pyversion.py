"""The only place that knows which CPython version armature runs on.

Opcode handlers register with a version range; at import only those valid
for the running interpreter are kept, and each name is checked against
``dis.opmap``.  An interpreter version outside ``SUPPORTED`` makes tracing
refuse (the original code runs) instead of half-working.
"""
from __future__ import annotations

import dis
import sys
from typing import Callable

SUPPORTED = ((3, 11),)
VERSION = sys.version_info[:2]


def is_supported() -> bool:
    return VERSION in SUPPORTED


def unsupported_reason() -> str:
    supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED)
    return (f"armature's tracer is written for CPython {supported}; this is "
            f"{VERSION[0]}.{VERSION[1]}, so compiled functions run as ordinary Python")


HANDLERS: dict[str, Callable] = {}


def opcode(*names: str, since: tuple[int, int] = (3, 11), until: tuple[int, int] = (3, 11)):
    """Register a handler for the named opcodes on versions since..until (inclusive)."""
    def deco(fn: Callable) -> Callable:
        if since <= VERSION <= until:
            for name in names:
                assert name in dis.opmap, f"{name} is not an opcode of Python {VERSION}"
                assert name not in HANDLERS, f"two handlers for {name}"
                HANDLERS[name] = fn
        return fn
    return deco


def exception_table(code):
    """Entries (start, end, target, depth, lasti) of a 3.11+ code object."""
    return dis._parse_exception_table(code)
