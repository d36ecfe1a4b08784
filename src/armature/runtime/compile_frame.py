"""A cache miss: trace the call, compile the graph, build guards and the
transformed function, and package them as a CacheEntry."""
from __future__ import annotations

import dis
import logging
import time
import types

import torch

from .. import config as config_mod
from ..codegen.emitter import Emitter
from ..codegen.transformed import build_transformed
from ..diagnostics import logs
from ..diagnostics.errors import ArmatureError, Unsupported
from ..guards.build import build_guard_function
from ..guards.sources import ClosureSource, LocalSource
from ..trace import ops  # noqa: F401  (registers the opcode handlers)
from ..trace import pyversion
from ..trace.context import TraceContext
from ..trace.frame import Frame
from ..values.base import LazyValue
from ..values.functions import RealCellValue
from .cache import CacheEntry

log_graph = logs.artifact("graph")
log_guards = logs.artifact("guards")
log_bytecode = logs.artifact("bytecode")
log_fallbacks = logs.artifact("fallbacks")


class BackendCompilerFailed(ArmatureError):
    pass


def _root_frame(ctx: TraceContext, fn: types.FunctionType, args, kwargs) -> Frame:
    import inspect
    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    locals_ = {}
    for name, value in bound.arguments.items():
        locals_[name] = LazyValue(value, LocalSource(name))
    for p in sig.parameters.values():
        if p.name not in locals_:
            locals_[p.name] = LazyValue(() if p.kind is p.VAR_POSITIONAL else {}, LocalSource(p.name))
    code = fn.__code__
    cells = {}
    for i, (name, cell) in enumerate(zip(code.co_freevars, fn.__closure__ or ())):
        cells[name] = RealCellValue(cell, ClosureSource(i, name))
    from ..values.functions import CellValue
    for name in code.co_cellvars:
        cells[name] = CellValue()
    return Frame(ctx, code, fn.__globals__, locals_, cells)


def compile_call(fn: types.FunctionType, args, kwargs, backend, fullgraph: bool) -> CacheEntry:
    if not pyversion.is_supported():
        raise Unsupported(pyversion.unsupported_reason())
    t0 = time.perf_counter()
    ctx = TraceContext(fn, config_mod.config)
    try:
        try:
            frame = _root_frame(ctx, fn, args, kwargs)
        except TypeError:
            raise Unsupported("the call's arguments do not bind to the function's signature")
        result = frame.run()
        body = Emitter()
        body.lineno = fn.__code__.co_firstlineno
        body.reconstruct(result)
    except Unsupported as e:
        ctx.restore_global_state()
        if fullgraph:
            raise
        reason = str(e)
        log_fallbacks.debug("running %s as plain Python: %s", fn.__qualname__, reason)
        guards = ctx.guards.as_list()
        return CacheEntry(guard=build_guard_function(fn, guards), run=_run_original, guards=guards,
                          fallback_reason=reason, trace_time_s=time.perf_counter() - t0)
    ctx.restore_global_state()
    graph = ctx.graph
    gm = None
    compiled = None
    input_sources = [gi.source for gi in graph.inputs]
    t1 = time.perf_counter()
    if graph.has_ops():
        gm = graph.finish(body.graph_outputs)
        if log_graph.isEnabledFor(logging.DEBUG):
            log_graph.debug("graph of %s:\n%s", fn.__qualname__, gm.print_readable(print_output=False))
        compiled = _compile_graph(gm, graph, backend)
    elif body.graph_outputs:
        raise AssertionError("graph outputs without ops")
    t2 = time.perf_counter()
    guards = ctx.guards.as_list()
    guard_fn = build_guard_function(fn, guards)
    run = build_transformed(fn, compiled, input_sources if compiled is not None else [], body)
    if log_guards.isEnabledFor(logging.DEBUG):
        log_guards.debug("guards of %s:\n  %s", fn.__qualname__,
                         "\n  ".join(g.describe() for g in sorted(guards, key=lambda g: g.kind)))
    if log_bytecode.isEnabledFor(logging.DEBUG):
        import io
        buf = io.StringIO()
        dis.dis(run.__code__, file=buf)
        log_bytecode.debug("transformed bytecode of %s:\n%s", fn.__qualname__, buf.getvalue())
    return CacheEntry(guard=guard_fn, run=run, guards=guards, graph_module=gm, compiled_graph=compiled,
                      transformed_code=run.__code__, trace_time_s=(t1 - t0) + (time.perf_counter() - t2),
                      backend_time_s=t2 - t1, op_count=graph.op_count)


def _compile_graph(gm, graph, backend):
    from torch._guards import TracingContext, tracing
    example_inputs = graph.example_inputs()
    try:
        with tracing(TracingContext(graph.fake_mode)):
            compiled = backend(gm, example_inputs)
    except Exception as e:
        raise BackendCompilerFailed(
            f"backend {getattr(backend, '__name__', backend)!r} failed to compile the captured graph: "
            f"{type(e).__name__}: {e}") from e
    if not callable(compiled):
        raise BackendCompilerFailed(f"backend {backend!r} returned {compiled!r}, which is not callable")
    return compiled


def _run_original(___f, *args, **kwargs):
    return ___f(*args, **kwargs)
