"""Compiled callables that residual code calls: resume functions and the
compiled wrappers of callees whose trace broke."""
from __future__ import annotations

import types
from typing import Any


class TailCall:
    """Returned by a transformed function that hands the rest of its frame
    to a resume function; the dispatcher runs it (so loops that break on
    every iteration do not nest Python frames)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn, *args):
        self.fn = fn
        self.args = args

    def run(self) -> Any:
        result = self
        while type(result) is TailCall:
            result = result.fn.dispatch(result.args, {})
        return result


_RESUME: dict[tuple, Any] = {}
_WRAPPERS: dict[tuple, Any] = {}


def resume_function_for(fn, code, offset, null_mask, local_names, cell_names, backend):
    from ..api import CompiledFunction
    from ..codegen.resume import build_resume_code
    key = (code, offset, null_mask, local_names, cell_names, backend, id(fn.__globals__))
    cf = _RESUME.get(key)
    if cf is None:
        rcode = build_resume_code(code, offset, null_mask, local_names, cell_names)
        rfn = types.FunctionType(rcode, fn.__globals__, rcode.co_name)
        cf = CompiledFunction(rfn, backend, fullgraph=False)
        _RESUME[key] = cf
    return cf


def compiled_wrapper_for(fn, backend):
    from ..api import CompiledFunction
    key = (fn, backend)
    cf = _WRAPPERS.get(key)
    if cf is None:
        cf = _WRAPPERS[key] = CompiledFunction(fn, backend, fullgraph=False)
    return cf


def reset() -> None:
    _RESUME.clear()
    _WRAPPERS.clear()
