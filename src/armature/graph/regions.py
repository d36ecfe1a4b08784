"""Repeated blocks compiled once: ``invoke_subgraph`` regions.

A model of 24 identical transformer blocks gives a graph of 24 copies of the
same ops; inductor lowers and schedules every copy again, so compile time
grows with depth.  torch's answer is ``invoke_subgraph``: one subgraph (a
GraphModule on the root) that the backend compiles once and the graph calls
once per block, with the block's own parameters as operands.

How armature finds the blocks: nothing about tracing changes.  Every module
call (``ModuleValue.standard_call``) and every call of a marked function
(``armature.compile_region``, ``torch.compiler.nested_compile_region``) is
traced inline as before, inside :func:`region`, which only *records* which
graph nodes the call made (``OutputGraph.op_nodes`` before and after), under
a key (the module's class, or the function's code).  Guards, side effects,
resume functions and the graph's inputs and outputs are therefore exactly
those of the inlined trace.  When the trace is finished, :func:`merge`
rewrites the finished GraphModule: recorded calls with the same key whose
node sequences are *identical* -- the same ops on the same kinds of
operands, constants equal by type and value, their external operands
(activations, parameters as ``get_attr``, SymInts) of the same shape
(symbolically), stride, dtype, device and ``requires_grad`` -- become one
subgraph and one ``invoke_subgraph`` call per block.  Equality of the traced
nodes is the whole safety argument: a pure function of its operands, traced
identically, computes the same thing whichever instance traced it; what
differs between the blocks (their parameters) is an operand.

A call is not merged (it stays inlined) when it is not pure or not
self-contained: it wrote Python state (the side-effect log grew), it writes
in place a tensor it did not make (an operand or a view of one; writes to
its own intermediates, ``out += identity``, stay inside), draws random
numbers, has data-dependent (unbacked) sizes, returns a non-tensor that later code uses or a tensor aliasing one of
its operands or another of its outputs, its nodes are not contiguous in the
graph, or the graph switches global state anywhere (grad mode, autocast):
those are what ``invoke_subgraph`` cannot express or what aot_autograd would
treat differently from the inlined ops.  Outermost calls are merged first
(a block rather than its linears); calls with fewer than
:data:`MIN_OPS` ops are left inlined (no compile time to save, a fusion
boundary to lose); marked functions are merged at any size.  Convolutions
are the backend's to lay out (inductor's layout optimization, on by
default, runs them channels-last): where inductor always does so (CPU with
oneDNN), a merged block's conv2d weights are made channels-last in the outer
graph before each call (region_layouts.py: the copy inductor makes inside
a graph, moved to where its buffers are reused), and activations pass from
one merged block to the next channels-last, as inlined; under "auto", a module
call with any other convolution, or on a device where inductor decides
layouts per graph (CUDA), stays inlined (torchvision's ResNet at 12 blocks,
CPU, merged without the hoisting: 1.45x slower per call than inlined).

When: ``armature.config.regions`` -- "auto" (for the compiling backends,
inductor and aot_eager: the eager backend would gain nothing and pay
autograd.Function overhead per call), "always" (every backend, including a
user's callable), "off".  Export never uses regions.
"""
from __future__ import annotations

import contextlib
import logging
import operator
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

from ..diagnostics import logs
from .region_layouts import (ConvolutionLayouts, carried_val, channels_last, convert_inputs, convolution_layouts,
                             is_convolution, output_layouts, restore_layout, settle_layouts)

log = logs.artifact("regions")

#: a module call merged automatically has at least this many ops
MIN_OPS = 5
#: backends that compile a graph (and so gain from compiling a block once)
COMPILING_BACKENDS = ("inductor", "aot_eager")
#: substrings of the names of ops that draw random numbers
_RANDOM = ("rand", "dropout", "bernoulli", "normal", "multinomial", "uniform", "exponential", "geometric",
           "cauchy", "poisson", "rrelu", "seed")


@dataclass
class _Record:
    """One traced call: which of the graph's op nodes it made."""
    graph: Any            # the OutputGraph it was traced into (sandboxes share the list)
    key: Any
    marked: bool
    start: int            # op_nodes[start:end]
    end: int
    before: Any           # the graph's last node before the call (None: empty graph)
    after: Any            # and after it: the call's nodes lie between
    depth: int
    pure: bool            # no Python side effect was recorded during the call


def _records(graph) -> list:
    recs = graph.__dict__.get("region_records")
    if recs is None:
        recs = graph.region_records = []
        graph.region_depth = [0]
    return recs


@contextlib.contextmanager
def region(tx, key, marked: bool = False):
    """Trace a call as usual, remembering the nodes it made under ``key``."""
    ctx = tx.ctx
    graph = ctx.graph
    mode = ctx.config.regions
    if mode == "off" or graph.module_names is not None or getattr(graph, "is_sandbox", False):
        yield
        return
    recs = _records(graph)
    depth = graph.region_depth
    start, effects = len(graph.op_nodes), _writes(ctx)
    before = next(iter(reversed(graph.graph.nodes)), None)
    depth[0] += 1
    try:
        yield
    finally:
        depth[0] -= 1
    # (reached only when the call returned: a raise leaves nothing recorded)
    recs.append(_Record(graph, (key, ctx.grad_enabled), marked, start, len(graph.op_nodes),
                        before, next(iter(reversed(graph.graph.nodes)), None), depth[0],
                        _writes(ctx) == effects))


def _writes(ctx) -> int:
    return ctx.effects.writes + len(ctx.effects)


def module_key(mod: torch.nn.Module):
    return ("module", type(mod))


def function_key(code):
    return ("function", code)


def compile_region(fn):
    """Mark ``fn`` (a function or method) as a region: its identical calls
    in one compiled frame are compiled once (``armature.config.regions``),
    whatever their size.  Returns ``fn`` itself; eager calls are unchanged."""
    if not callable(fn):
        raise TypeError(f"armature.compile_region marks a function, got {type(fn).__name__}")
    target = getattr(fn, "__func__", fn)
    target.__armature_region__ = True
    return fn


def _placeholder_fn():
    try:
        from torch._higher_order_ops.invoke_subgraph import invoke_subgraph_placeholder
    except ImportError:   # a torch without nested_compile_region
        return None
    return invoke_subgraph_placeholder


def marked_call(fn, args):
    """``(key, callee, args)`` when inlining ``fn`` is a marked region's
    call: an ``armature.compile_region`` function, or torch's
    ``invoke_subgraph_placeholder(func, *args)`` (what a
    ``nested_compile_region`` function calls: ``func`` is traced inline,
    as a region, instead of the placeholder that eager would run)."""
    real = getattr(fn, "fn", None)
    if real is None:
        return None
    if getattr(real, "__armature_region__", False):
        return function_key(real.__code__), fn, args
    if real is _placeholder_fn() and args:
        callee = args[0]
        code = getattr(getattr(callee, "fn", None), "__code__", None)
        if code is None:
            return None
        return function_key(code), callee, list(args[1:])
    return None


def applies(config, backend) -> bool:
    mode = config.regions
    if mode == "off":
        return False
    if mode == "always":
        return True
    from ..backends import _REGISTRY
    name = getattr(backend, "name", None)
    entry = _REGISTRY.get(name) if isinstance(name, str) else None
    return name in COMPILING_BACKENDS and entry is not None and getattr(backend, "fn", None) is entry.fn


def backend_for(backend, gm=None):
    """The backend that compiles a graph with regions.  inductor (torch
    2.13, CPU) reuses a buffer that the backward of an ``invoke_subgraph``
    call still reads when the call's output feeds an op that saves it (a
    Linear after the last block: wrong gradients; torch.compile with
    ``nested_compile_region`` computes the same wrong gradients), so buffer
    reuse is off for those graphs (tests/test_regions.py checks the
    gradients against eager)."""
    from ..backends import _Backend
    if not isinstance(backend, _Backend) or backend.name != "inductor":
        return backend
    if gm is not None and not _differentiable(gm):
        return backend   # (no backward: inference keeps buffer reuse)
    kwargs = dict(backend.kwargs)
    options = dict(kwargs.get("options") or {})
    options.setdefault("allow_buffer_reuse", False)
    kwargs["options"] = options
    return _Backend(backend.name, backend.fn, backend.check_options, kwargs)


def _differentiable(gm) -> bool:
    """Some invoke_subgraph call returns a tensor that requires grad."""
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is _invoke():
            if any(isinstance(v, torch.Tensor) and v.requires_grad for v in n.meta.get("val", ())):
                return True
    return False


def _invoke():
    from torch._higher_order_ops.invoke_subgraph import invoke_subgraph
    return invoke_subgraph


# --- the rewrite --------------------------------------------------------------

def merge(gm: torch.fx.GraphModule, graph, config, backend) -> "torch.fx.GraphModule | None":
    """A copy of ``gm`` in which repeated identical calls are
    ``invoke_subgraph`` calls of one subgraph each; None when nothing is
    merged (``gm`` itself is never changed, so the caller can fall back to
    it, as it does when this raises: an error of ours costs the regions,
    not the compiled frame)."""
    try:
        return _merge(gm, graph, config, backend)
    except Exception as e:
        from ..diagnostics.errors import strict_internal_errors
        if strict_internal_errors():
            raise
        log.debug("regions not merged: %s: %s", type(e).__name__, e)
        return None


def _merge(gm, graph, config, backend):
    recs = [r for r in graph.__dict__.get("region_records", ()) if r.graph is graph and r.pure]
    if not recs or not applies(config, backend):
        return None
    keys: dict = {}
    for r in recs:
        keys[r.key] = keys.get(r.key, 0) + 1
    recs = [r for r in recs if keys[r.key] > 1]
    if not recs or _switches_global_state(gm):
        return None
    g = torch.fx.Graph()
    val_map: dict = {}
    g.output(g.graph_copy(gm.graph, val_map))
    sym_nodes = {s: val_map[n] for s, n in graph.symbol_nodes.items() if n in val_map}
    out = torch.fx.GraphModule(gm, g, class_name=type(gm).__name__)
    layouts = convolution_layouts(backend)
    auto = config.regions == "auto"
    counter = [0]
    replaced = 0
    # outermost calls first: a merged block's inner calls are gone from the graph
    for depth in sorted({r.depth for r in recs}):
        level: dict = {}
        for r in recs:
            if r.depth == depth:
                level.setdefault(r.key, []).append(r)
        for rs in level.values():
            if len(rs) > 1:
                replaced += _merge_group(out, val_map, sym_nodes, rs, counter, layouts, auto)
    if not replaced:
        return None
    settle_layouts(out)
    out.graph.lint()
    out.recompile()
    return out


def _merge_group(gm, node_map, sym_nodes, rs, counter, layouts, auto: bool) -> int:
    alive = {n: i for i, n in enumerate(gm.graph.nodes)}
    nodes_in_order = list(gm.graph.nodes)
    clusters: dict = {}
    for r in rs:
        cand = _candidate(node_map, sym_nodes, r, alive, nodes_in_order, layouts, auto)
        if cand is not None:
            clusters.setdefault(cand.signature, []).append(cand)
    n = 0
    renamed: dict = {}   # a replaced call's output -> the getitem that stands for it now
    for sig, cands in clusters.items():
        if len(cands) < 2:
            continue
        name = f"repeated_subgraph{counter[0]}"
        counter[0] += 1
        for c in cands:   # (an earlier cluster's outputs are getitems now)
            c.inputs = [renamed.get(i, i) for i in c.inputs]
        gm.add_submodule(name, _subgraph(cands[0]))
        if log.isEnabledFor(logging.DEBUG):
            log.debug("merged %d calls of %s (%d nodes each) into %s", len(cands), _describe(rs[0].key[0]),
                      len(cands[0].nodes), name)
        for c in cands:
            c.inputs = [renamed.get(i, i) for i in c.inputs]
            renamed.update(_replace(gm, c, name))
            n += 1
    return n


class _Candidate:
    __slots__ = ("nodes", "inputs", "outputs", "signature", "hoist")


def _candidate(node_map, sym_nodes, r: _Record, alive: dict, nodes_in_order: list,
               layouts: ConvolutionLayouts, auto: bool) -> "_Candidate | None":
    ops = [n for n in map(node_map.get, r.graph.op_nodes[r.start:r.end]) if n is not None and n in alive]
    if not ops or (not r.marked and len(ops) < MIN_OPS):
        return None   # (too small to be worth a subgraph)
    before, after = node_map.get(r.before), node_map.get(r.after)
    if (r.before is not None and before not in alive) or after not in alive:
        return _no(r, "its first or last node is gone (an earlier merge)")
    lo = alive[before] + 1 if before is not None else 0
    # every node made between the call's start and end (the getitems of a
    # split, ...), but not its operands
    nodes = [n for n in nodes_in_order[lo:alive[after] + 1] if n.op not in ("placeholder", "get_attr")]
    members = set(nodes)
    if not members.issuperset(ops):
        return _no(r, "its nodes are not contiguous")
    nodes.sort(key=alive.__getitem__)
    index = {n: i for i, n in enumerate(nodes)}
    inputs: list = []
    slot: dict = {}

    def canon(a):
        if isinstance(a, torch.fx.Node):
            if a in index:
                return ("n", index[a])
            if a not in slot:
                slot[a] = len(inputs)
                inputs.append(a)
            return ("in", slot[a])
        if isinstance(a, (tuple, list)):
            return (type(a).__name__, tuple(canon(x) for x in a))
        if isinstance(a, dict):
            return ("dict", tuple((k, canon(v)) for k, v in a.items()))
        if isinstance(a, float):
            return ("float", repr(a))
        if a is None or isinstance(a, (bool, int, str, torch.dtype, torch.device, torch.layout,
                                       torch.memory_format)):
            return (type(a).__name__, a)
        if isinstance(a, slice):
            return ("slice", canon(a.start), canon(a.stop), canon(a.step))
        if a is Ellipsis:
            return ("...",)
        raise _NotPure(repr(a))

    body = []
    mutated = []   # tensors the call writes in place: each must be its own
    try:
        for n in nodes:
            if not _pure_node(n):
                return _no(r, f"not pure: {n.format_node()}")
            m = _mutated(n)
            if m is not None:
                if m not in index or not isinstance(m.meta.get("val"), torch.Tensor):
                    return _no(r, f"writes a tensor it did not make: {n.format_node()}")
                mutated.append(m)
            body.append((n.op, n.target, canon(n.args), canon(n.kwargs)))
    except _NotPure as e:
        return _no(r, f"an argument of another kind: {e}")
    outputs = [n for n in nodes if any(u not in members for u in n.users)]
    if not outputs:
        return _no(r, "no output is used")
    for o in outputs:
        if not isinstance(o.meta.get("val"), torch.Tensor):
            return _no(r, f"a non-tensor output: {o.format_node()}")
    in_meta = []
    for i in inputs:
        m = _meta(i.meta.get("val"))
        if m is None:
            return _no(r, f"an operand of another kind: {i.format_node()}")
        in_meta.append(m)
    if _aliases(inputs, outputs):
        return _no(r, "an output aliases an operand or another output")
    if mutated and _shares_storage(mutated, inputs):
        return _no(r, "writes in place a view of an operand")
    symbols = _free_symbols(sym_nodes, inputs)
    if symbols is None:
        return _no(r, "a size symbol that is not a graph input")
    c = _Candidate()
    c.nodes, c.outputs = nodes, outputs
    c.inputs = [sym_nodes[s] for s in symbols if sym_nodes[s] not in slot] + inputs
    c.hoist = layouts.inputs_to_convert(nodes, c.inputs, outputs)
    if c.hoist is None:
        if auto and not r.marked:
            conv = next(n for n in nodes if is_convolution(n))
            return _no(r, f"a convolution ({conv.format_node()}) whose layout inductor chooses per graph (not a "
                          "2-d convolution of a parameter on CPU): a subgraph's boundary would convert layouts at "
                          "every block, slower at run time (merged anyway with a marked block, regions='always', "
                          "or options={'layout_optimization': False})")
        c.hoist = []
    c.signature = (tuple(body), tuple(in_meta), tuple(index[o] for o in outputs), tuple(str(s) for s in symbols))
    return c


class _NotPure(Exception):
    pass


def _no(r: _Record, why: str) -> None:
    if log.isEnabledFor(logging.DEBUG):
        log.debug("not merged: a call of %s: %s", _describe(r.key[0]), why)
    return None


def _describe(key) -> str:
    kind, what = key
    return what.__qualname__ if kind == "module" else f"{what.co_qualname} ({what.co_filename}:{what.co_firstlineno})"


def _pure_node(n: torch.fx.Node) -> bool:
    if n.op not in ("call_function", "call_method"):
        return False
    if n.meta.get("unbacked_bindings") or n.meta.get("inference"):
        return False
    t = n.target
    if isinstance(t, torch._ops.HigherOrderOperator):
        return False
    name = t if isinstance(t, str) else getattr(t, "__name__", "") or str(t)
    if any(s in name for s in _RANDOM):
        return False
    if _mutated(n) is False:
        return False
    v = n.meta.get("val")
    return v is not None or t is operator.getitem or _mutated(n) is not None


def _mutated(n: torch.fx.Node):
    """What ``n`` writes in place: None (nothing), the node of the one
    tensor it writes (``x.add_(y)``, ``x += y``, ``x[i] = v``,
    ``F.relu(x, inplace=True)``: its first argument), or False when it
    writes something else (an ``out=`` argument, a mutable aten overload)."""
    from .output_graph import _is_mutation
    t = n.target
    if "out" in n.kwargs or (isinstance(t, torch._ops.OpOverload) and t._schema.is_mutable):
        return False
    if _is_mutation(n.op, t, n.kwargs) or (n.op == "call_function" and _inplace_flag(t, n.args, n.kwargs)):
        first = n.args[0] if n.args else None
        return first if isinstance(first, torch.fx.Node) else False
    name = t if isinstance(t, str) else getattr(t, "__name__", "")
    if name.endswith("_") and not name.endswith("__"):
        return False   # (``torch._foreach_add_``: a writer of unknown operands)
    return None


def _inplace_flag(fn, args, kwargs) -> bool:
    """A call such as ``F.relu(x, True)`` or ``F.hardtanh(x, inplace=True)``:
    the function has an ``inplace`` parameter and this call sets it."""
    if "inplace" in kwargs:
        return bool(kwargs["inplace"])
    pos = _inplace_position(fn)
    return pos is not None and len(args) > pos and bool(args[pos])


_INPLACE_POS: dict = {}


def _inplace_position(fn):
    try:
        return _INPLACE_POS[fn]
    except (KeyError, TypeError):
        pass
    import inspect
    try:
        names = list(inspect.signature(fn).parameters)
        pos = names.index("inplace") if "inplace" in names else None
    except (TypeError, ValueError):
        pos = None
    try:
        _INPLACE_POS[fn] = pos
    except TypeError:
        pass
    return pos


def _shares_storage(written, inputs) -> bool:
    from torch.multiprocessing.reductions import StorageWeakRef
    seen = {StorageWeakRef(v.untyped_storage()) for v in (i.meta.get("val") for i in inputs)
            if isinstance(v, torch.Tensor)}
    return any(StorageWeakRef(w.meta["val"].untyped_storage()) in seen for w in written)


def _meta(v):
    if isinstance(v, torch.Tensor):
        return ("t", tuple(str(s) for s in v.shape), tuple(str(s) for s in v.stride()), str(v.storage_offset()),
                v.dtype, v.device, v.requires_grad, v.layout)
    if isinstance(v, torch.SymInt):
        return ("s", str(v.node.expr))
    if isinstance(v, int) and not isinstance(v, bool):
        return ("i", v)
    return None


def _aliases(inputs, outputs) -> bool:
    """An output sharing storage with an operand or another output (what
    invoke_subgraph cannot return: aot_autograd does not desugar it)."""
    from torch.multiprocessing.reductions import StorageWeakRef
    seen = set()
    for i in inputs:
        v = i.meta.get("val")
        if isinstance(v, torch.Tensor):
            seen.add(StorageWeakRef(v.untyped_storage()))
    for o in outputs:
        ref = StorageWeakRef(o.meta["val"].untyped_storage())
        if ref in seen:
            return True
        seen.add(ref)
    return False


def _free_symbols(sym_nodes, inputs):
    """The ShapeEnv symbols in the operands' shapes, each of which must be a
    SymInt placeholder of the graph (lifted as an operand, as Dynamo does);
    None when one is not (an unbacked or derived symbol)."""
    from torch.fx.experimental.symbolic_shapes import free_symbols
    syms: set = set()
    for i in inputs:
        v = i.meta.get("val")
        if isinstance(v, (torch.Tensor, torch.SymInt)):
            syms |= free_symbols(v)
    if any(s not in sym_nodes for s in syms):
        return None
    return sorted(syms, key=str)


def _subgraph(c: _Candidate) -> torch.fx.GraphModule:
    g = torch.fx.Graph()
    env: dict = {}
    for k, i in enumerate(c.inputs):
        p = g.placeholder(f"arg{k}")
        p.meta.update({key: i.meta[key] for key in ("val", "example_value") if key in i.meta})
        if k in c.hoist:   # (it receives the channels-last copy: region_layouts.py)
            p.meta["val"] = p.meta["example_value"] = channels_last(i.meta["val"])
        env[i] = p
    for n in c.nodes:
        env[n] = g.node_copy(n, env.__getitem__)
    results = [env[o] for o in c.outputs]
    if c.hoist:
        results = output_layouts(g, results, [o.meta["val"] for o in c.outputs])
    g.output(tuple(results))
    return torch.fx.GraphModule(torch.nn.Module(), g, class_name="RepeatedBlock")


def _replace(gm, c: _Candidate, name: str) -> dict:
    from torch._higher_order_ops.invoke_subgraph import invoke_subgraph
    g = gm.graph
    last = c.nodes[-1]
    with g.inserting_after(last):
        attr = g.get_attr(name)
    inputs, prev = convert_inputs(gm, attr, c.inputs, c.hoist)
    with g.inserting_after(prev):
        call = g.call_function(invoke_subgraph, (attr, name, *inputs))
    vals = tuple(carried_val(o.meta["val"]) if c.hoist else o.meta["val"] for o in c.outputs)
    call.meta["val"] = call.meta["example_value"] = vals
    prev = call
    renamed = {}
    for k, o in enumerate(c.outputs):
        with g.inserting_after(prev):
            item = g.call_function(operator.getitem, (call, k))
        item.meta.update({key: o.meta[key] for key in ("val", "example_value") if key in o.meta})
        prev = item
        if c.hoist:   # (a channels-last result: later code gets it in its traced strides)
            item = prev = restore_layout(gm, item)
        o.replace_all_uses_with(item, delete_user_cb=lambda u, members=set(c.nodes): u not in members)
        renamed[o] = item
    for n in reversed(c.nodes):
        g.erase_node(n)
    return renamed


def _switches_global_state(gm) -> bool:
    for n in gm.graph.nodes:
        if n.op == "call_function" and "val" not in n.meta and n.target is not operator.getitem:
            return True
        if n.op == "call_function" and (n.target is torch._C._set_grad_enabled or
                                        "autocast" in getattr(n.target, "__name__", "")):
            return True
    return False
