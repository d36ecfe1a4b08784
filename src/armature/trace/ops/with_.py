"""``with`` blocks: BEFORE_WITH pushes ``__exit__`` and ``__enter__()``'s
result; the normal exit path calls ``__exit__(None, None, None)`` as an
ordinary CALL.  The exceptional path is never taken while tracing."""
from __future__ import annotations

from ...diagnostics.errors import Unsupported
from ..pyversion import opcode


@opcode("BEFORE_WITH")
def before_with(f, inst):
    mgr = f.pop()
    enter = mgr.getattr(f, "__enter__")
    exit_ = mgr.getattr(f, "__exit__")
    f.push(exit_)
    f.push(enter.call(f, [], {}))


@opcode("PUSH_EXC_INFO", "POP_EXCEPT", "WITH_EXCEPT_START", "CHECK_EXC_MATCH", "RERAISE",
        "RAISE_VARARGS")
def exceptions(f, inst):
    raise Unsupported(f"exception handling ({inst.opname})",
                      hint="raising or catching exceptions inside compiled code is modelled in a later milestone")
