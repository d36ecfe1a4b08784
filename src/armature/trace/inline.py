"""Inlining calls to Python functions: bind arguments, make a child frame
that shares the trace context, run it, return its return value."""
from __future__ import annotations

import inspect

from ..diagnostics.errors import Unsupported
from ..values.base import Value
from ..values.functions.functions import CellValue, _Function
from .frame import Frame

_UNSUPPORTED_FLAGS = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


def make_frame(ctx, fn: _Function, bound: dict[str, Value], parent: Frame | None) -> Frame:
    code = fn.code
    if code.co_flags & _UNSUPPORTED_FLAGS:
        raise Unsupported(f"calling the coroutine function {code.co_qualname}",
                          hint="async code is not traced; call it outside the compiled function")
    cells: dict[str, Value] = {}
    for name in code.co_cellvars:
        cells[name] = CellValue()
    closure = fn.closure_cells(ctx)
    for name, cell in zip(code.co_freevars, closure):
        cells[name] = cell
    return Frame(ctx, code, fn.f_globals, dict(bound), cells, parent)


def inline_function(tx: Frame, fn: _Function, args: list[Value], kwargs: dict[str, Value]) -> Value:
    if tx.depth + 1 > tx.ctx.config.inline_depth_limit:
        raise Unsupported(f"inlining {fn.code.co_qualname} exceeds the depth limit "
                          f"({tx.ctx.config.inline_depth_limit}); unbounded recursion?")
    from ..graph import regions
    marked = regions.marked_call(fn, args)
    if marked is not None:   # a compile region: its nodes recorded (graph/regions.py)
        key, callee, args = marked
        with regions.region(tx, key, marked=True):
            if callee is not fn:
                return callee.call(tx, args, kwargs)
            return _run(tx, fn, args, kwargs)
    return _run(tx, fn, args, kwargs)


def _run(tx: Frame, fn: _Function, args: list[Value], kwargs: dict[str, Value]) -> Value:
    bound = fn.bind(args, kwargs, ctx=tx.ctx)
    frame = make_frame(tx.ctx, fn, bound, tx)
    if fn.code.co_flags & inspect.CO_GENERATOR:
        from ..values.functions.generators import GeneratorValue
        return GeneratorValue(frame)
    return frame.run()
