"""Build the transformed function of a cache entry.

It has the original function's signature followed by the hidden keyword-only
``FN_ARG`` (names.py: the called function object, closures and
defaults are read from it), and
does only this: load the graph inputs from their sources, call the compiled
graph once, rebuild the return value, return.
"""
from __future__ import annotations

import inspect
import types
from typing import Callable

from bytecode import Bytecode, CompilerFlags, Instr

from ..guards.sources import Source
from .emitter import Emitter
from ..names import FN_ARG, GRAPH_OUT


def _arg_names(code: types.CodeType) -> list[str]:
    """The original parameters with FN_ARG appended to the keyword-only ones."""
    names = code.co_varnames
    n = code.co_argcount + code.co_kwonlyargcount
    out = list(names[:n]) + [FN_ARG]
    out += list(names[n:n + bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)])
    return out


def build_transformed(fn: types.FunctionType, compiled: Callable | None, input_sources: list[Source],
                      body: Emitter, setup: Emitter | None = None) -> types.FunctionType:
    """``setup``: code run before the graph inputs are loaded (the modules
    made in the frame are built there: values/nn/fresh_modules.py)."""
    code = fn.__code__
    lineno = code.co_firstlineno
    bc = Bytecode()
    bc.name = code.co_name
    bc.qualname = code.co_qualname
    bc.filename = code.co_filename
    bc.first_lineno = lineno
    bc.argcount = code.co_argcount
    bc.posonlyargcount = code.co_posonlyargcount
    bc.kwonlyargcount = code.co_kwonlyargcount + 1
    bc.argnames = _arg_names(code)
    flags = CompilerFlags.OPTIMIZED | CompilerFlags.NEWLOCALS
    if code.co_flags & inspect.CO_VARARGS:
        flags |= CompilerFlags.VARARGS
    if code.co_flags & inspect.CO_VARKEYWORDS:
        flags |= CompilerFlags.VARKEYWORDS
    bc.flags = flags

    pro = Emitter()
    pro.lineno = lineno
    pro.instr("RESUME", 0)
    if setup is not None:
        for ins in setup.instrs:
            if isinstance(ins, Instr) and ins.lineno is None:
                ins.lineno = lineno
        pro.instrs.extend(setup.instrs)
    if compiled is not None:
        pro.instr("PUSH_NULL")
        pro.load_const(compiled)
        for src in input_sources:
            src.emit(pro)
        pro.call(len(input_sources))
        pro.instr("STORE_FAST", GRAPH_OUT)
    for ins in body.instrs:
        if isinstance(ins, Instr) and ins.lineno is None:
            ins.lineno = lineno
    bc.extend(pro.instrs)
    bc.extend(body.instrs)  # ends in RETURN_VALUE (or a tail call)
    new_code = bc.to_code()
    out = types.FunctionType(new_code, fn.__globals__, code.co_name, fn.__defaults__)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out
