"""Output written by a cached function whose call is replayed natively.

transformers' ``logger.warning_once(msg)`` is ``Logger.warning`` wrapped in
``functools.lru_cache``: the first call with a message logs it, later ones
hit the cache and log nothing.  The tracer cannot log (logging looks at the
caller's frame) and cannot ask the cache whether a call will hit without
making it.  What it can do is prove that the cached function does nothing
the rest of the frame could observe except write output, and then replay
the call itself -- the real ``lru_cache`` wrapper, with the same arguments
-- in the residual code, in program order with the frame's other side
effects (values/stdlib/functools.py).  The cache then sees exactly one call
per call of the compiled function, as in eager, so the message is logged
once, from the wrapper's own frame (the record's caller is the one eager's
has); only its time moves, after the graph's tensor work, which nothing
that logging does can observe.

While such a function is speculated, its context carries a list
``deferred_output``; the rules here record each output call into it and
answer ``None`` instead of running it:

* ``logging.Logger._log`` -- every level method (``warning``, ``info``,
  ``log``, ``exception``...) goes through it once ``isEnabledFor`` said yes
  (``isEnabledFor`` itself is answered and guarded, values/operations/builtins.py);
* ``warnings.warn`` (its registry is per module and line, kept by the
  native call as well).

Anywhere else they are a graph break, as they were (logging's caller lookup
reads the frame; ``warnings.warn`` is C code with global state), with the
I/O hint.
"""
from __future__ import annotations

import dis
import logging
import types
import warnings

from ...diagnostics.errors import Unsupported
from ..constant import ConstantValue
from ..operations.builtins import RULES


def _output_rule(what: str, looks_at_caller: bool):
    def handler(tx, *args, **kwargs):
        sink = getattr(tx.ctx, "deferred_output", None)
        if sink is not None:
            sink.append(what)
            return ConstantValue(None)
        if looks_at_caller:
            # the record names its caller (funcName, lineno): the callee that
            # logs is called natively at the break, not through a compiled
            # wrapper whose frames the record would name instead
            from ..functions.frame_locals import FrameIntrospection
            raise FrameIntrospection(f"{what} writes output and looks at the calling frame")
        raise Unsupported(f"{what} writes output")
    return handler


RULES[logging.Logger._log] = _output_rule("logging.Logger._log", looks_at_caller=True)
RULES[warnings.warn] = _output_rule("warnings.warn", looks_at_caller=False)


def returns_only_none(fn: types.FunctionType) -> bool:
    """Every ``return`` of ``fn`` returns the constant None (so a cache hit,
    which hands back an earlier call's result, returns None too)."""
    code = fn.__code__
    if code.co_flags & (0x20 | 0x80 | 0x100 | 0x200):   # generator, coroutine, async generator
        return False
    prev = None
    for inst in dis.get_instructions(code):
        if inst.opname == "RETURN_CONST" and inst.argval is not None:
            return False
        if inst.opname == "RETURN_VALUE" and (inst.is_jump_target or not (
                prev is not None and prev.opname == "LOAD_CONST" and prev.argval is None)):
            return False   # (a jump onto the return brings another value: ``return a or None``)
        prev = inst
    return True
