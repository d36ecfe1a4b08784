"""Zero-argument ``super()`` run outside the user's frame.

CPython's zero-argument ``super()`` finds its class in the frame's
``__class__`` cell and its object in the frame's first local.  Generated code
(a resume function, the native instruction of a graph break) is not that
frame, so it passes both explicitly: ``super(__class__, first)``.

That is only right while ``super`` is the builtin.  A module (or a class
body's enclosing scope) may shadow it, and then CPython calls whatever
``super`` names with no arguments at all: 3.11-3.12's ``LOAD_GLOBAL super;
CALL 0``, and 3.12+'s LOAD_SUPER_ATTR without its two-argument bit, whose
generic path calls the global with ``oparg & 2`` (zero) arguments.  So the
generated code first passes the ``super`` it loaded through ``adapt``: the
builtin comes back unchanged (and is called with the class and object), any
other callable comes back wrapped so that the two arguments are dropped
(``adapt`` runs with the generated code: runtime/super_adapter.py).
"""
from __future__ import annotations

from bytecode import Instr

from ..runtime.super_adapter import adapt


def adapt_below_two(location=None) -> list:
    """Instructions turning ``[super, cls, obj]`` into ``[adapt(super), cls,
    obj]`` (before a LOAD_SUPER_ATTR given the two-argument bit).  The call
    is ``[adapt, super] CALL 0``, a method-style call that is
    ``adapt(super)`` in both 3.12's and 3.13's call layouts."""
    return [Instr("SWAP", 3, location=location), Instr("LOAD_CONST", adapt, location=location),
            Instr("SWAP", 2, location=location), Instr("CALL", 0, location=location),
            Instr("SWAP", 3, location=location)]


def adapted_global(call_prefix: list, null_above: bool, location=None) -> list:
    """Instructions for ``LOAD_GLOBAL (True, "super")`` of a bare
    ``super()`` call that generated code will call with two arguments:
    the callable is ``adapt(super)``, its NULL where the version puts it
    (``call_prefix``: 3.11's ``PRECALL 0``, else nothing)."""
    load = [Instr("LOAD_CONST", adapt, location=location),
            Instr("LOAD_GLOBAL", (False, "super"), location=location),
            *call_prefix, Instr("CALL", 0, location=location)]
    null = [Instr("PUSH_NULL", location=location)]
    return load + null if null_above else null + load
