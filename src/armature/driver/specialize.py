"""Specializations: one trace, several compiled graphs.

``mark_dynamic(x, 0, specialize_on=[lambda s: s == 8, lambda s: s % 16 == 0])``
keeps ``x.size()[0]`` a symbol in the trace (one cache entry, one generic
graph), and asks for extra compiled versions of that same graph for the
sizes each predicate accepts.

The compiled callable of such a graph is a :class:`SpecializingGraph`: the
transformed function calls it exactly as it calls any compiled graph, with
the graph's arguments (tensors, and the SymInt placeholders as plain ints).
Its ``__call__`` is the dispatcher: it tries the predicates in order on the
ints of their SymInt arguments; the first that holds (and whose compiled
graph's own assumptions hold, see below) runs that specialized graph, else
the generic graph runs.  Graphs without predicates are never wrapped, so they
pay nothing.

A specialization is compiled lazily, on the first call its predicate
accepts, then kept.  It is not a cache entry: it has no guards of the
frame's, and never counts against the recompile limit.

How a specialized graph is compiled.  The same GraphModule (a pristine copy
taken before the generic compile, as backends may rewrite the graph they get)
is handed to the backend again, with a ShapeEnv of its own that is told the
predicate holds:

* a fresh ShapeEnv and FakeTensorMode; the graph's inputs are fakeified from
  the matching call's real arguments with the trace's symbolic contexts
  (minus the ``mark_dynamic`` constraints, which the entry's guards already
  enforce), so every symbol of the trace has a counterpart whose hint is the
  call's value;
* the predicate is applied to the symbol and its outcome is guarded there
  (``bool(pred(s))``): ``s == 8`` makes the ShapeEnv replace ``s`` by 8, so
  inductor sees static sizes; ``s % 16 == 0`` becomes an axiom, so inductor
  can use the divisibility.  A predicate that cannot run on a SymInt
  (``s in {8, 16}`` hashes it) specialises the symbol to the call's value
  instead;
* fake tensor propagation refreshes the copied graph's metadata in the new
  ShapeEnv, and the backend compiles it under that fake mode (as the generic
  compile does under the trace's).

This is what torch.compile does, with one difference: torch patches the
trace's own ShapeEnv and ignores guards the specialized compile adds; here
the ShapeEnv is a fork, and what it learnt while compiling (the predicate,
relations of the inputs, any guard the backend took on a hint) becomes the
specialization's check, evaluated on the graph's arguments (``a[2].size()[0]
% 16 == 0``) after the predicate.  A call whose predicate holds but whose
check fails (the backend assumed more than the predicate) runs the next
matching specialization or the generic graph: never a wrong one.
"""
from __future__ import annotations

import inspect
import logging
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx

from ..diagnostics import logs
from ..diagnostics.errors import InternalError, strict_internal_errors

log_dynamic = logs.artifact("dynamic")
log_fallbacks = logs.artifact("fallbacks")


@dataclass(eq=False, repr=False)
class Specialization:
    """One predicate of one SymInt argument of a graph, and what it compiled.
    Listed by ``entry.specializations``."""

    #: what the predicate is applied to, as users read it (``x.size()[0]``)
    source: str
    #: the predicate itself
    fn: Callable[[int], Any] = field(repr=False)
    #: index of the SymInt argument in the graph's argument list
    position: int = field(repr=False)
    #: the compiled specialized graph; None until the first matching call
    compiled: Callable | None = field(default=None, repr=False)
    compile_time_s: float = 0.0
    #: the size (value of the symbol) of the call that compiled it
    compiled_for: int | None = None
    #: what the specialized compile assumed, checked on the graph's
    #: arguments ``a`` before it runs (the predicate as the ShapeEnv holds it,
    #: relations of the inputs, guards the backend took)
    guards: list[str] = field(default_factory=list)
    #: why it could not be compiled (then the generic graph serves it)
    failure: str | None = None
    _check: Callable | None = field(default=None, repr=False)
    _text: str | None = field(default=None, repr=False)

    @property
    def predicate(self) -> str:
        """The predicate's source text (``lambda s: s == 8``), else its repr."""
        if self._text is None:
            self._text = _predicate_text(self.fn)
        return self._text

    @property
    def is_compiled(self) -> bool:
        return self.compiled is not None

    def __str__(self):
        state = ("not compiled yet" if self.compiled is None and self.failure is None
                 else f"failed: {self.failure}" if self.failure is not None
                 else f"compiled for {self.compiled_for} in {self.compile_time_s:.3f} s")
        return f"{self.source}: {self.predicate}  ({state})"

    def __repr__(self):
        return f"<Specialization {self}>"


class SpecializationPlan:
    """What a graph needs to compile specializations later: a pristine copy
    of it, the symbolic context of each tensor argument, and the
    predicates.  Made before the generic compile (``plan``)."""

    def __init__(self, gm: torch.fx.GraphModule, arg_info: list, specs: list[Specialization]):
        self.gm = gm
        #: per graph argument: ("tensor", its symbolic context or None, its
        #: fake in the trace) or ("symint", None, its SymInt in the trace)
        self.arg_info = arg_info
        self.specs = specs


def plan(gm: torch.fx.GraphModule, graph) -> SpecializationPlan | None:
    """The specializations a graph asks for (``mark_dynamic(...,
    specialize_on=...)`` on one of its inputs), or None: then the compiled
    graph is used as it is."""
    specs = []
    for gi in graph.inputs:
        ctx = graph.input_contexts.get(gi.node)
        predicates = getattr(ctx, "specialize_on", None)
        if not predicates or not any(predicates):
            continue
        fake = gi.node.meta["val"]
        for d, preds in enumerate(predicates):
            if not preds:
                continue
            size = fake.size(d)
            if not isinstance(size, torch.SymInt):
                continue
            node = graph.symbol_nodes.get(size.node._expr)
            position = next((i for i, other in enumerate(graph.inputs) if other.node is node), None)
            if position is None:
                continue
            for p in preds:
                specs.append(Specialization(source=f"{gi.source}.size()[{d}]", fn=p, position=position))
    if not specs:
        return None
    arg_info = []
    for gi in graph.inputs:
        val = gi.node.meta["val"]
        if isinstance(gi.real, torch.Tensor):
            arg_info.append(("tensor", graph.input_contexts.get(gi.node), val))
        else:
            arg_info.append(("symint", None, val))
    return SpecializationPlan(_copy(gm), arg_info, specs)


class SpecializingGraph:
    """The compiled callable of a graph with specializations: the
    dispatcher (see the module docstring)."""

    #: what the cache entry asks (runtime/cache.py may not import the driver)
    is_specializing_graph = True

    def __init__(self, generic: Callable, plan: SpecializationPlan, backend: Callable):
        self.generic = generic
        self.plan = plan
        self.backend = backend
        self.specializations: list[Specialization] = plan.specs
        self._checks = [(s.position, s.fn, s) for s in plan.specs]

    def __call__(self, *args):
        for position, pred, spec in self._checks:
            if pred(args[position]):
                compiled = spec.compiled
                if compiled is None:
                    if spec.failure is not None:
                        continue
                    compiled = self._compile(spec, args)
                    if compiled is None:
                        continue
                check = spec._check
                if check is not None and not check(args):
                    continue
                return compiled(*args)
        return self.generic(*args)

    # --- lazy compile -----------------------------------------------------
    def _compile(self, spec: Specialization, args) -> Callable | None:
        """Compile ``spec`` for this call; None (and ``spec.failure`` set)
        when it cannot be: its sizes then run the generic graph."""
        from torch._guards import TracingContext, tracing
        t0 = time.perf_counter()
        from ..trace.context import compiling_state
        try:
            with compiling_state():
                gm, example_inputs, fakes, mode = _prepare(self.plan, spec, args)
        except Exception as e:
            return self._failed(spec, f"{type(e).__name__} while preparing it: {e}", internal=e)
        try:
            with tracing(TracingContext(mode)), compiling_state():
                compiled = self.backend(gm, example_inputs)
        except Exception as e:
            return self._failed(spec, f"the backend failed: {type(e).__name__}: {e}")
        if not callable(compiled):
            return self._failed(spec, f"the backend returned {compiled!r}, which is not callable")
        try:
            texts = _guard_texts(self.plan, mode.shape_env, fakes)
            check = _build_check(texts)
        except Exception as e:
            return self._failed(spec, f"{type(e).__name__} while building its check: {e}", internal=e)
        spec.compiled = compiled
        spec.guards = texts
        spec._check = check
        spec.compiled_for = int(args[spec.position])
        spec.compile_time_s = time.perf_counter() - t0
        if log_dynamic.isEnabledFor(logging.DEBUG):
            log_dynamic.debug("compiled specialization %s; it checks: %s", spec,
                              " and ".join(texts) or "nothing more")
        return compiled

    @staticmethod
    def _failed(spec: Specialization, why: str, internal: Exception | None = None) -> None:
        """A specialization that cannot be compiled: its sizes run the generic
        graph (a correct result, only not the specialized one).  Armature's
        own errors fail under the test suite's strict switch."""
        if internal is not None and strict_internal_errors():
            raise InternalError(f"specialization {spec.source}: {spec.predicate}: {why}") from internal
        spec.failure = why
        log_fallbacks.debug("specialization %s: %s runs the generic graph: %s", spec.source, spec.predicate, why)
        warnings.warn(f"armature: could not compile the specialization {spec.source}: {spec.predicate} "
                      f"({why}); those sizes run the generic graph", RuntimeWarning, stacklevel=4)
        return None

    def __repr__(self):
        return f"<armature specializing graph: {len(self.specializations)} specializations>"


# --- helpers ------------------------------------------------------------------

def _predicate_text(p) -> str:
    """The predicate as written (``lambda s: s % 16 == 0``), else its repr."""
    code = getattr(p, "__code__", None)
    if code is None:
        return repr(p)
    try:
        import ast
        import linecache
        text = "".join(linecache.getlines(code.co_filename))
        tree = ast.parse(text)
    except (SyntaxError, ValueError, OSError):
        return repr(p)
    if getattr(p, "__name__", "") != "<lambda>":
        return p.__qualname__
    # the lambda on its line whose body starts where the code's first position does
    cols = [c for (line, _, c, end) in code.co_positions()
            if line == code.co_firstlineno and c is not None and end is not None and end > c]
    body_col = min(cols) if cols else None
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno:
            if found is None or node.body.col_offset == body_col:
                found = node
    if found is None:
        return repr(p)
    return ast.get_source_segment(text, found) or repr(p)


def _copy(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of ``gm`` sharing its parameters and buffers (node metadata is
    copied shallowly: the trace's fake values)."""
    graph = torch.fx.Graph()
    out = graph.graph_copy(gm.graph, {})
    graph.output(out)
    out = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    out.meta.update(gm.meta)   # (the static inputs: backends/cudagraphs.py)
    return out


class _ArgSource:
    """Factory of the ShapeEnv sources of the specialized compile: graph
    argument ``i`` is ``a[i]`` (the name the check function reads)."""

    @staticmethod
    def of(i: int):
        from ..graph.dynamic import ShapeEnvSource
        return ShapeEnvSource(None, f"a[{i}]")


def _prepare(plan: SpecializationPlan, spec: Specialization, args):
    """The specialized compile's inputs: a fresh copy of the graph whose
    metadata lives in a forked ShapeEnv told the predicate holds, the
    example inputs, and the fake mode."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext
    env = ShapeEnv(allow_scalar_outputs=False, allow_dynamic_output_shape_ops=False)
    mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=False)
    fakes: list[Any] = [None] * len(args)
    symbols = {}    # the trace's symbol -> its counterpart here
    for i, ((kind, ctx, old), a) in enumerate(zip(plan.arg_info, args)):
        if kind != "tensor":
            continue
        if ctx is None:
            fakes[i] = mode.from_tensor(a, static_shapes=True)
            continue
        fresh_ctx = StatelessSymbolicContext(dynamic_sizes=list(ctx.dynamic_sizes),
                                             dynamic_strides=list(ctx.dynamic_strides))
        fakes[i] = mode.from_tensor(a, source=_ArgSource.of(i), symbolic_context=fresh_ctx)
        for o, n in zip(old.size(), fakes[i].size()):
            if isinstance(o, torch.SymInt) and isinstance(n, torch.SymInt):
                symbols.setdefault(o.node._expr, n)
    for i, ((kind, _, old), a) in enumerate(zip(plan.arg_info, args)):
        if kind == "tensor":
            continue
        if not isinstance(old, torch.SymInt) or type(a) is not int:
            raise TypeError(f"graph argument {i} is {type(old).__name__} (only SymInt arguments are supported)")
        n = symbols.get(old.node._expr)
        if n is None:
            n = symbols[old.node._expr] = env.create_unspecified_symint_and_symbol(
                a, _ArgSource.of(i), DimDynamic.DYNAMIC)
        fakes[i] = n
    # tell the ShapeEnv the predicate holds
    sym = fakes[spec.position]
    try:
        holds = spec.fn(sym)
        holds = bool(holds)          # (a SymBool: guarded here, with its hint: the call's value)
    except Exception:
        holds = bool(sym == int(args[spec.position]))    # a predicate of ints only: this value
    if not holds:
        raise RuntimeError(f"the predicate does not hold for {int(args[spec.position])} on a symbolic size")
    gm = _copy(plan.gm)
    gm.meta["specialization"] = f"{spec.source}: {spec.predicate}"   # (keys backend caches apart)
    _propagate(gm, mode, fakes)
    example_inputs = [a if isinstance(a, torch.Tensor) else f for a, f in zip(args, fakes)]
    return gm, example_inputs, fakes, mode


def _propagate(gm: torch.fx.GraphModule, mode, fakes) -> None:
    """Node metadata of the copy recomputed on the forked ShapeEnv's fakes
    (backends read ``meta['val']``/``['example_value']``)."""
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    class _Prop(FakeTensorProp):
        def get_attr(self, target, args, kwargs):
            real = super().get_attr(target, args, kwargs)
            return mode.from_tensor(real, static_shapes=True) if isinstance(real, torch.Tensor) else real

    _Prop(gm, mode).propagate_dont_convert_inputs(*fakes)
    for node in gm.graph.nodes:
        if "val" in node.meta and "example_value" in node.meta:
            node.meta["example_value"] = node.meta["val"]


def _guard_texts(plan: SpecializationPlan, env, fakes) -> list[str]:
    """What the forked ShapeEnv assumed, as Python over the arguments ``a``:
    its guards, less facts about tensor properties that are static in the
    generic graph too (the entry's tensor guards check those)."""
    values, sources = [], []
    for i, ((kind, ctx, _), fake) in enumerate(zip(plan.arg_info, fakes)):
        if kind == "tensor" and ctx is None:
            continue
        values.append(fake)
        sources.append(_ArgSource.of(i))
    texts = env.produce_guards(values, sources, ignore_static=False)
    static = set()
    for i, (kind, ctx, old) in enumerate(plan.arg_info):
        if kind != "tensor" or ctx is None:
            continue
        for d, s in enumerate(old.size()):
            if not isinstance(s, torch.SymInt):
                static.add(f"a[{i}].size()[{d}] == ")
        for d, s in enumerate(old.stride()):
            if not isinstance(s, torch.SymInt):
                static.add(f"a[{i}].stride()[{d}] == ")
        if not isinstance(old.storage_offset(), torch.SymInt):
            static.add(f"a[{i}].storage_offset() == ")
    return [t for t in texts if not any(t.startswith(p) for p in static)]


def _build_check(texts: list[str]) -> Callable | None:
    if not texts:
        return None
    body = " and ".join(f"({t})" for t in texts)
    src = (f"def ___specialization_check(a):\n"
           f"    try:\n"
           f"        return {body}\n"
           f"    except Exception:\n"
           f"        return False\n")
    ns: dict[str, Any] = {}
    exec(compile(src, "<armature specialization check>", "exec"), ns)
    return ns["___specialization_check"]
