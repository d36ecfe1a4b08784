"""A cache miss: trace the call, compile the graph, build guards and the
transformed function, and package them as a CacheEntry.

When the trace meets something it cannot model in the root frame (or in a
callee, which surfaces at the root frame's CALL), the frame is traced again
from the start with a break planned *before* that instruction: the graph so
far is compiled, the instruction runs natively, and a resume function
continues the rest.  Re-tracing rather than rolling back keeps every piece
of trace state (graph, guards, side effects, Values) consistent for free.
"""
from __future__ import annotations

import dataclasses
import dis
import functools
import inspect
import logging
import time
import types
from dataclasses import dataclass

import torch

from .. import config as config_mod
from .native_frames import break_in_loop, loop_over_modules
from ..codegen.breaks import BreakNotPossible, emit_break, is_breakable
from ..codegen.emitter import Emitter
from ..codegen.exit import emit_return
from ..codegen.transformed import build_transformed
from ..diagnostics import logs
from ..diagnostics.hints import hint_for
from ..diagnostics.errors import (ArmatureError, InternalError, Unsupported, UserException, UserLocation,
                                 strict_internal_errors)
from ..graph import regions
from ..graph.dynamic import log_dynamic_symbols, shape_guards
from ..guards.build import build_guard_function
from ..guards.matmul_precision import precision_guards
from ..guards.sources import ClosureSource, LocalSource
from ..trace import ops  # noqa: F401  (registers the opcode handlers)
from .. import pyversion, upcalls
from ..trace import speculation
from ..trace.context import TraceContext, compiling_state
from ..trace.frame import Frame
from ..values.tensors import inference, torch_function
from ..values.functions.generator_breaks import earlier_break, moved_reason
from ..values.base import LazyValue
from ..values.functions.functions import CellValue, RealCellValue
from . import backend_failures, explain, persistent_cache, specialize
from .backend_failures import BackendCompilerFailed
from ..runtime.cache import CacheEntry

log_graph = logs.artifact("graph")
log_guards = logs.artifact("guards")
log_bytecode = logs.artifact("bytecode")
log_fallbacks = logs.artifact("fallbacks")
log_breaks = logs.artifact("graph_breaks")


@dataclass
class GraphBreak:
    """Why and where a frame was split."""

    reason: str
    location: UserLocation | None
    user_stack: list
    #: a split of armature's own call of a compiled module (the module's
    #: forward, compiled on its own, reports the real break)
    internal: bool = False
    #: the raise site's own hint (diagnostics/hints.py has the last word)
    site_hint: str | None = None

    @property
    def hint(self):
        """What the user can do about it (a diagnostics.hints.Hint)."""
        return hint_for(self.reason, self.site_hint)

    def __str__(self):
        loc = f"\n  {self.location}".replace("\n", "\n  ") if self.location else ""
        return f"{self.reason}{loc}"


def _root_frame(ctx: TraceContext, fn: types.FunctionType, args, kwargs) -> Frame:
    sig = inspect.signature(fn, follow_wrapped=False)  # the code we trace, not __wrapped__
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    locals_ = {}
    for name, value in bound.arguments.items():
        locals_[name] = LazyValue(value, LocalSource(name), ctx)
    for p in sig.parameters.values():
        if p.name not in locals_:
            locals_[p.name] = LazyValue(() if p.kind is p.VAR_POSITIONAL else {}, LocalSource(p.name), ctx)
    code = fn.__code__
    cells = {}
    for i, (name, cell) in enumerate(zip(code.co_freevars, fn.__closure__ or ())):
        cells[name] = RealCellValue(cell, ClosureSource(i, name))
        ctx.value_cache[id(cell)] = (cell, cells[name])
    for name in code.co_cellvars:
        cells[name] = CellValue()
    return Frame(ctx, code, fn.__globals__, locals_, cells)




def _innermost_user_location(stack) -> UserLocation | None:
    """Where the break really comes from: the innermost frame that is not
    armature's own code (e.g. the helper a compiled module traces)."""
    import os
    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for loc in stack:
        if not os.path.abspath(loc.filename).startswith(own):
            return loc
    return stack[0] if stack else None


def _binds(fn, args, kwargs) -> bool:
    try:
        inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
        return True
    except TypeError:
        return False


def compile_call(fn: types.FunctionType, args, kwargs, backend, fullgraph: bool,
                 dynamic_sources=frozenset(), policy=None, module_parameters=None) -> CacheEntry | None:
    """Trace and compile one call; None when the call is to run as the
    original code without caching anything: the arguments do not bind
    (eager's TypeError), or with fullgraph the program raises an exception
    the trace does not catch (eager's exception).

    An error of armature's own (in tracing, code generation, guard building)
    never reaches the user: the code runs as Python from then on, logged
    under ``ARMATURE_LOGS=fallbacks``; ``fullgraph=True`` raises Unsupported
    naming it; the test suite's strict switch lets it propagate."""
    persistent_cache.stats["traces"] += 1
    try:
        with compiling_state():
            return _compile_call(fn, args, kwargs, backend, fullgraph, dynamic_sources, policy, module_parameters)
    except ArmatureError:   # Unsupported, a backend failure, a violated mark_dynamic, strict internal errors
        raise
    except Exception as e:
        what = f"{type(e).__name__} while compiling {fn.__qualname__}: {e}"
        if strict_internal_errors():
            raise InternalError(what) from e
        if fullgraph:
            raise Unsupported(f"internal error: {what}", hint="this is a bug in armature, not in your code") from e
        return _fallback(fn, [], f"internal error: {what}", 0.0)


def _compile_call(fn, args, kwargs, backend, fullgraph: bool, dynamic_sources, policy,
                  module_parameters=None) -> CacheEntry | None:
    if not _binds(fn, args, kwargs):
        return None
    if not pyversion.is_supported():
        if fullgraph:
            raise Unsupported(pyversion.unsupported_reason())
        return _fallback(fn, [], pyversion.unsupported_reason(), 0.0)
    code = fn.__code__
    nargs = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) \
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    if not all(n.isidentifier() for n in code.co_varnames[:nargs]):
        reason = f"{fn.__qualname__} has parameters that are not identifiers"
        if fullgraph:
            raise Unsupported(reason)
        return _fallback(fn, [], reason, 0.0)
    if fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        reason = f"{fn.__qualname__} is a generator or coroutine function; calling it runs Python"
        if fullgraph:
            raise Unsupported(reason)
        return _fallback(fn, [], reason, 0.0)
    t0 = time.perf_counter()
    prepare = getattr(backend, "prepare", None)
    if prepare is not None:
        prepare()   # (inductor's compile workers start while the frame is traced)
    plan: int | None = None
    brk: GraphBreak | None = None
    from_callee = False
    wrap_callee = False   # the call at the break goes through a compiled wrapper of the callee
    speculate = True
    refused: str | None = None   # why a trace with assumed branches was not kept
    tried: set = set()   # breaks planned so far (a generator live at one moves it earlier)
    while True:
        cfg = config_mod.config
        if module_parameters is not None and module_parameters != cfg.module_parameters:
            cfg = dataclasses.replace(cfg, module_parameters=module_parameters)
        ctx = TraceContext(fn, cfg, fullgraph=fullgraph)
        ctx.speculate = speculate
        ctx.module_parameters_override = module_parameters
        ctx.dynamic_sources = dynamic_sources
        if policy is not None:
            ctx.policy = policy
        frame = _root_frame(ctx, fn, args, kwargs)
        frame.break_at = plan
        body = Emitter()
        body.lineno = fn.__code__.co_firstlineno
        try:
            try:
                result = frame.run()
                from ..values.functions.generators import check_left_suspended
                check_left_suspended(ctx)   # (their cleanup would run when eager frees them)
                speculation.validate(ctx)
                if frame.stopped_at_break:
                    emit_break(ctx, frame, body, from_callee=wrap_callee, backend=backend)
                else:
                    emit_return(ctx, body, result)
            finally:
                ctx.restore_global_state()
        except Unsupported as e:
            if getattr(e, "fatal", False):   # e.g. set_stance in compiled code: never a break
                raise
            if getattr(e, "internal", False):  # armature's own error: never a break reason
                if fullgraph:
                    raise
                return _fallback(fn, ctx.guards.as_list(), str(e), time.perf_counter() - t0)
            if not fullgraph:
                moved = earlier_break(e, functools.partial(is_breakable, frame), tried | {plan})
                if moved is not None:   # a generator made in the trace is live at the break or the return
                    tried.add(plan)
                    plan, from_callee = moved.origin
                    wrap_callee = from_callee
                    brk = _moved_break(fn, brk, moved)
                    continue
            if fullgraph:
                if isinstance(e, UserException):
                    # the program itself raises here (an uncaught `raise`, a
                    # builtin failing): nothing to capture; running it raises
                    # eager's exception (nothing is cached)
                    return None
                if refused is not None:
                    e.what = f"{e.what} (a branch that only raises was not assumed here: {refused})"
                    e.args = (e.what,)
                raise
            index = getattr(e, "root_index", None)
            from_callee = bool(getattr(e, "from_callee", False))
            alternative = getattr(e, "handling_origin", None)
            if index is not None and not is_breakable(frame, index) and alternative is not None:
                index, from_callee = alternative
            if getattr(e, "frame_introspection", False) and not from_callee:
                index = None   # natively it would see the transformed function's frame
            if plan is None and index is not None and is_breakable(frame, index) \
                    and (loop_over_modules(frame) or (cfg.loop_breaks == "native" and break_in_loop(frame, index))):
                # a break inside a loop: the frame runs natively, what it
                # calls compiled on its own (native_frames.py)
                return _native_frame(fn, ctx, e, backend, time.perf_counter() - t0,
                                     _IN_MODULE_LOOP if loop_over_modules(frame) else _IN_LOOP)
            if plan is None and index is not None and is_breakable(frame, index) \
                    and getattr(e, "native_rest", False) and not (e.entering and ctx.graph.has_ops()):
                # saved-tensor hooks: the region runs as Python (values/tensors/saved_tensor_hooks.py)
                return _native_frame(fn, ctx, e, backend, time.perf_counter() - t0, _AS_PYTHON)
            if plan is None and index is not None and is_breakable(frame, index):
                plan = index
                # a callee that looks at its caller's frame (logging's record
                # of who logged) is called natively: a compiled wrapper's
                # frames would stand between it and the user's
                wrap_callee = from_callee and not getattr(e, "frame_introspection", False)
                what = e.what
                if from_callee and len(e.user_stack) > 1:
                    callee = e.user_stack[-2].func_name
                    what = f"{callee}() could not be inlined: {e.what}"
                brk = GraphBreak(what, _innermost_user_location(e.user_stack), list(e.user_stack),
                                 internal=fn.__code__ is upcalls.module_call_code, site_hint=e.hint)
                if log_breaks.isEnabledFor(logging.DEBUG):
                    loc = e.location
                    where = f"{loc.filename}:{loc.lineno}: {loc.source_line}" if loc else "?"
                    log_breaks.debug("graph break in %s at %s\n  reason: %s\n  hint: %s", fn.__qualname__,
                                     where, e.what, hint_for(e.what, e.hint))
                continue
            return _fallback(fn, ctx.guards.as_list(), str(e), time.perf_counter() - t0)
        except speculation.SpeculationRefused as e:
            log_breaks.debug("tracing %s again without assumed branches: %s", fn.__qualname__, e)
            speculate = False
            refused = str(e)
            continue
        except BreakNotPossible as e:
            moved = earlier_break(e, functools.partial(is_breakable, frame), tried | {plan})
            if moved is not None:   # a generator made in the trace is live at the break
                tried.add(plan)
                plan, from_callee = moved.origin
                wrap_callee = from_callee
                brk = _moved_break(fn, brk, moved)
                continue
            return _fallback(fn, ctx.guards.as_list(), f"{brk}; the frame cannot be split there: {e}",
                             time.perf_counter() - t0)
        break
    return _finish(fn, ctx, body, backend, t0, brk)


def _moved_break(fn, brk: GraphBreak | None, moved) -> GraphBreak:
    """The break, moved to where a generator live at it was made
    (values/functions/generator_breaks.py)."""
    reason = moved_reason(brk.reason if brk is not None else moved.what, moved)
    location = moved.made_at or (brk.location if brk is not None else None)
    if log_breaks.isEnabledFor(logging.DEBUG):
        where = f"{location.filename}:{location.lineno}: {location.source_line}" if location else "?"
        log_breaks.debug("graph break in %s moved to %s\n  reason: %s", fn.__qualname__, where, reason)
    return GraphBreak(reason, location, list(brk.user_stack) if brk is not None else list(moved.user_stack),
                      internal=brk.internal if brk is not None else fn.__code__ is upcalls.module_call_code,
                      site_hint=brk.site_hint if brk is not None else moved.hint)


_IN_MODULE_LOOP = (", inside a loop over modules: the loop runs as Python and each module or function it calls "
                   "is compiled as a frame of its own (one graph for every layer of a class)")
_IN_LOOP = (", inside a loop: the frame runs as Python (as torch.compile gives it up) and each module or function "
            "it calls is compiled as a frame of its own")
_AS_PYTHON = ": the frame runs as Python from there, what it calls is compiled as frames of their own"


def _native_frame(fn, ctx: TraceContext, e: Unsupported, backend, trace_time: float, why: str) -> CacheEntry:
    """The entry of a frame that breaks inside a loop, or enters a region
    that must not compile: its own code runs as Python, what it calls is
    compiled (driver/native_frames.py)."""
    from .native_frames import routed_runner
    what = f"{e.what}{why}"
    brk = GraphBreak(what, _innermost_user_location(e.user_stack), list(e.user_stack),
                     internal=fn.__code__ is upcalls.module_call_code, site_hint=e.hint)
    log_breaks.debug("graph break in %s: %s", fn.__qualname__, what)
    guards = ctx.guards.as_list()
    entry = CacheEntry(guard=build_guard_function(fn, guards),
                       run=routed_runner(fn.__code__, backend, ctx.policy.mode), guards=guards,
                       graph_break=brk, trace_time_s=trace_time)
    if persistent_cache.enabled():   # (stored as its guards and the runner's settings)
        from .persist_codec import PersistInfo
        entry.persist = PersistInfo(fn=fn, guards=guards, graph_module=None, compiled=None, backend=backend,
                                    attr_sources={}, input_sources=[], traced_files=frozenset(ctx.traced_files),
                                    unstorable=None, has_setup=False, routed=(ctx.policy.mode,))
    explain.record(entry)
    return entry


def _fallback(fn, guards, reason: str, trace_time: float) -> CacheEntry:
    log_fallbacks.debug("running %s as plain Python: %s\n  hint: %s", fn.__qualname__, reason, hint_for(reason))
    entry = CacheEntry(guard=build_guard_function(fn, guards), run=_run_original, guards=guards,
                       fallback_reason=reason, trace_time_s=trace_time)
    explain.record(entry)
    return entry


def _finish(fn, ctx: TraceContext, body: Emitter, backend, t0: float, brk: GraphBreak | None) -> CacheEntry:
    graph = ctx.graph
    gm = None
    compiled = None
    #: why the entry cannot be stored on disk (driver/persist_codec.py), None: it may be
    unstorable = None   # (a split frame's resume functions and callees: driver/persist_callees.py)
    t1 = time.perf_counter()
    checks = speculation.plan_checks(ctx, body)   # (adds the assumed conditions to the outputs)
    if graph.has_ops():
        gm = graph.finish(body.graph_outputs)
        merged = regions.merge(gm, graph, ctx.config, backend)   # (repeated blocks compiled once)
        if log_graph.isEnabledFor(logging.DEBUG):
            log_graph.debug("graph of %s:\n%s", fn.__qualname__, gm.print_readable(print_output=False))
        specializations = specialize.plan(gm, graph)   # (before the backend may rewrite gm)
        from ..backends.ddp_split import split_backend
        graph_backend = split_backend(backend, [i.source for i in graph.inputs], ctx.config.optimize_ddp)
        compiled = None
        # (a graph DDP splits at its gradient buckets keeps its blocks inlined:
        # DDPOptimizer partitions by parameters, which regions would hide)
        regions_backend = None
        if merged is not None and graph_backend is backend:
            try:
                regions_backend = regions.backend_for(backend, merged)
                compiled = _compile_graph(merged, graph, regions_backend)
                gm = merged
            except BackendCompilerFailed as e:   # (the inlined graph is what the user wrote)
                log_fallbacks.debug("compiling %s with invoke_subgraph regions failed, inlined instead: %s",
                                    fn.__qualname__, e)
        if compiled is None:
            try:
                compiled = _compile_graph(gm, graph, graph_backend)
            except BackendCompilerFailed as e:   # (never the user's error where eager works)
                reason = backend_failures.handle(fn, e, backend, ctx.fullgraph)
                return _fallback(fn, ctx.guards.as_list(), reason, time.perf_counter() - t0)
        raw_compiled = compiled
        if graph_backend is not backend:
            unstorable = unstorable or "the graph is split at DDP's gradient buckets"
        if specializations is not None:
            compiled = specialize.SpecializingGraph(compiled, specializations, backend)
        compiled = inference.wrap_outputs(ctx, compiled, body.graph_outputs)
        compiled = torch_function.wrap_compiled(ctx, compiled, graph)
        if compiled is not raw_compiled:
            unstorable = unstorable or "the compiled graph is wrapped (specializations, inference or torch function)"

    elif body.graph_outputs:
        raise AssertionError("graph outputs without ops")
    t2 = time.perf_counter()
    ctx.add_alias_guards()
    for g in shape_guards(graph):
        ctx.guards.add(g)
    if compiled is not None:
        for g in precision_guards(graph):
            ctx.guards.add(g)
    log_dynamic_symbols(fn, graph)
    guards = ctx.guards.as_list()
    guard_fn = build_guard_function(fn, guards)
    input_sources = [gi.source for gi in graph.inputs] if compiled is not None else []
    from ..values.nn.fresh_modules import emit_setup
    called = compiled
    if checks is not None and compiled is not None:
        called = speculation.CheckedGraph(compiled, checks, getattr(ctx, "speculation_restores_rng", False))
    run = build_transformed(fn, called, input_sources, body, setup=emit_setup(ctx, Emitter))
    if log_guards.isEnabledFor(logging.DEBUG):
        log_guards.debug("guards of %s:\n  %s", fn.__qualname__,
                         "\n  ".join(g.describe() for g in sorted(guards, key=lambda g: g.kind)))
    if log_bytecode.isEnabledFor(logging.DEBUG):
        import io
        buf = io.StringIO()
        dis.dis(run.__code__, file=buf)
        log_bytecode.debug("transformed bytecode of %s:\n%s", fn.__qualname__, buf.getvalue())
    transformed_code = run.__code__
    if checks is not None:
        unstorable = unstorable or "the frame assumes branches do not raise (speculation checks)"
        run = speculation.speculating_run(run)
    entry = CacheEntry(guard=guard_fn, run=run, guards=guards, graph_module=gm, compiled_graph=compiled,
                       transformed_code=transformed_code, assumptions=[a.describe() for a in ctx.assumptions], trace_time_s=(t1 - t0) + (time.perf_counter() - t2),
                       backend_time_s=t2 - t1, op_count=graph.op_count, graph_break=brk,
                       side_effects=ctx.effects.describe())
    if persistent_cache.enabled():   # (what storing the entry needs; nothing kept when the cache is off)
        from .persist_codec import PersistInfo
        entry.persist = PersistInfo(fn=fn, guards=guards, graph_module=gm, compiled=called, backend=backend,
                                    attr_sources=dict(graph.attr_sources), input_sources=input_sources,
                                    traced_files=frozenset(ctx.traced_files), unstorable=unstorable,
                                    unfiled_code=tuple(ctx.unfiled_code),
                                    has_setup=bool(ctx.__dict__.get("new_modules")),
                                    regions_backend=compiled is not None and gm is merged and regions_backend is not backend)
    explain.record(entry)
    return entry


def _compile_graph(gm, graph, backend):
    from torch._guards import TracingContext, tracing

    from .. import torch_compat
    example_inputs = graph.example_inputs()
    backend_failures.allow_dynamic_sizes(graph.shape_env)   # (sizes inside an op: the backward of x[mask] = v)
    try:
        with tracing(TracingContext(graph.fake_mode)), torch_compat.backend_compile_state():
            compiled = backend(gm, example_inputs)
    except Exception as e:
        raise BackendCompilerFailed(
            f"backend {getattr(backend, '__name__', backend)!r} failed to compile the captured graph: "
            f"{type(e).__name__}: {e}", e, backend) from e
    if not callable(compiled):
        raise BackendCompilerFailed(f"backend {backend!r} returned {compiled!r}, which is not callable",
                                    None, backend)
    return compiled


def _run_original(*args, **kwargs):
    from ..names import FN_ARG
    return kwargs.pop(FN_ARG)(*args, **kwargs)


# the per-call runtime compiles the callees residual code calls through this
# (runtime/wrappers.py), and may not import the driver
upcalls.install(compile_call=compile_call)
