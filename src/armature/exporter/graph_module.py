"""From a Capture to the torch-level GraphModule that torch.export lowers.

armature's graph has placeholders for what the frame *read* (tensors by
source, one SymInt per dynamic size or int); an exported program has one
input per leaf of ``(args, kwargs)``.  Here the graph is rebuilt over those
leaves:

* a tensor input becomes the leaf that is the same tensor object; a tensor
  that is no leaf (a global, a plain tensor attribute, a float made a 0-d
  tensor) becomes a constant attribute, as torch.export makes it;
* a SymInt placeholder of a size becomes ``aten.sym_size.int(leaf, d)``, one
  of an int argument becomes that argument's leaf (found by the source the
  trace read it from);
* parameters and buffers stay ``get_attr`` nodes of the same tensor objects
  (torch.export maps them back to their names by identity).

The outputs come from armature's own residual code: the transformed function
is run once on the fake inputs (SymInts for dynamic ints), with the graph
call answering the output nodes' fake values, so the result is built exactly
as a compiled call builds it (tuples, dicts, dataclasses, ModelOutputs...).
Its pytree leaves are then matched back to nodes: fake tensors by identity,
SymInts by their ShapeEnv expression, anything else is a constant.
"""
from __future__ import annotations

import dataclasses
import inspect
import operator
import re
from typing import Any

import torch
import torch.fx
import torch.utils._pytree as pytree

from ..names import FN_ARG
from ..codegen.transformed import build_transformed
from ..graph.dynamic import SizeSource
from ..values.tensors.symbolic import ScalarTensorSource
from .capture import Capture, ExportError


def orig_arg_names(fn, args: tuple, kwargs: dict) -> list[str]:
    """Names of the call's arguments in (args, kwargs) order, as the
    program's forward takes them."""
    names = []
    params = [p for p in inspect.signature(fn).parameters.values()]
    i = 0
    for p in params:
        if i >= len(args):
            break
        if p.kind is p.VAR_POSITIONAL:
            names += [f"{p.name}_{j}" for j in range(len(args) - i)]
            i = len(args)
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
            i += 1
    names += [f"arg{j}" for j in range(i, len(args))]
    return names + list(kwargs)


def call_leaf_sources(fn, call_args: tuple, args: tuple, kwargs: dict) -> list[list]:
    """For each leaf of ``(args, kwargs)``: the Sources the trace reads it by."""
    from ..guards.sources import ItemSource, LocalSource
    from .dims import _leaf_sources
    params = list(inspect.signature(fn).parameters.values())
    lead = len(call_args) - len(args)
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][lead:]
    varargs = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    varkw = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
    named = {p.name for p in params if p.kind is not p.VAR_POSITIONAL and p.kind is not p.VAR_KEYWORD}
    out = []
    for path, _ in pytree.tree_flatten_with_path((args, kwargs))[0]:
        top, key, rest = path[0].idx, path[1], path[2:]
        if top == 0:
            i = key.idx
            if i < len(positional):
                root = LocalSource(positional[i])
            elif varargs is not None:
                root = ItemSource(LocalSource(varargs), i - len(positional))
            else:
                root = None
        else:
            k = key.key
            root = LocalSource(k) if k in named else (ItemSource(LocalSource(varkw), k) if varkw else None)
        out.append(_leaf_sources([root], rest) if root is not None else [])
    return out


class _Builder:
    def __init__(self, cap: Capture, args: tuple, kwargs: dict, arg_names: list[str]):
        self.cap = cap
        self.og = cap.ctx.graph
        self.env = self.og.shape_env
        self.graph = torch.fx.Graph()
        self.root = torch.nn.Module()
        self.flat, self.in_spec = pytree.tree_flatten((args, kwargs))
        self.arg_names = arg_names
        #: leaf index -> placeholder node
        self.leaf_nodes: list[torch.fx.Node] = []
        self.leaf_vals: list[Any] = []
        self.env_nodes: dict[torch.fx.Node, Any] = {}
        self.attr_by_id: dict[int, str] = {}
        self.attr_nodes: dict[str, torch.fx.Node] = {}
        self.sym_nodes: dict = {}          # sympy Symbol -> node (or a factory)
        self._n_consts = 0
        self.leaf_sources = call_leaf_sources(cap.fn, cap.call_args, args, kwargs)

    # --- inputs ---------------------------------------------------------------
    def _leaf_index_of_tensor(self, t) -> int | None:
        for i, leaf in enumerate(self.flat):
            if leaf is t:
                return i
        return None

    def _int_leaf(self, source) -> int | None:
        for i, sources in enumerate(self.leaf_sources):
            if type(self.flat[i]) is int and source in sources:
                return i
        return None

    def make_placeholders(self) -> None:
        fake_of = {id(gi.real): gi.node.meta["val"] for gi in self.og.inputs if isinstance(gi.real, torch.Tensor)}
        int_syms = {}
        for source, value in self.og.int_symbols.items():
            sym = getattr(value, "sym", None)
            if isinstance(sym, torch.SymInt):
                int_syms[source] = sym
        for i, leaf in enumerate(self.flat):
            node = self.graph.placeholder(f"arg_{i}")
            if isinstance(leaf, torch.Tensor):
                val = fake_of.get(id(leaf))
                if val is None:
                    val = self.og.fake_mode.from_tensor(leaf, static_shapes=True)
                for d, size in enumerate(val.size()):
                    if isinstance(size, torch.SymInt):
                        self.sym_nodes.setdefault(size.node.expr, (node, d, size))
            elif type(leaf) is int:
                val = leaf
                for s in self.leaf_sources[i]:
                    if s in int_syms:
                        val = int_syms[s]
                        break
                if isinstance(val, torch.SymInt):
                    self.sym_nodes.setdefault(val.node.expr, node)
            else:
                val = leaf
            node.meta["val"] = val
            node.meta["example_value"] = val
            self.leaf_nodes.append(node)
            self.leaf_vals.append(val)

    def _sym_size(self, node, d, size):
        n = self.graph.call_function(torch.ops.aten.sym_size.int, (node, d))
        n.meta["val"] = n.meta["example_value"] = size
        return n

    def symbol_node(self, sym):
        entry = self.sym_nodes.get(sym)
        if isinstance(entry, tuple):
            entry = self.sym_nodes[sym] = self._sym_size(*entry)
        return entry

    def _constant(self, t: torch.Tensor, hint: str) -> torch.fx.Node:
        name = self.attr_by_id.get(id(t))
        if name is None:
            name = f"_tensor_constant{self._n_consts}"
            self._n_consts += 1
            self.root.register_buffer(name, t)
            self.attr_by_id[id(t)] = name
        return self._get_attr(name, t)

    def _get_attr(self, name: str, t) -> torch.fx.Node:
        node = self.attr_nodes.get(name)
        if node is None:
            node = self.graph.get_attr(name)
            node.meta["val"] = node.meta["example_value"] = self.og.fake_mode.from_tensor(t, static_shapes=True)
            self.attr_nodes[name] = node
        return node

    def map_input(self, gi) -> Any:
        real, source = gi.real, gi.source
        if isinstance(source, ScalarTensorSource) and isinstance(real, torch.Tensor):
            # a Python float the graph takes as a 0-d tensor (values/tensors/symbolic.py):
            # torch.export specialises floats, so the program holds the number
            return real.item()
        if isinstance(real, torch.Tensor):
            i = self._leaf_index_of_tensor(real)
            if i is not None:
                return self.leaf_nodes[i]
            return self._constant(real, str(source))
        val = gi.node.meta["val"]
        if isinstance(source, SizeSource):
            parent = next((g for g in self.og.inputs if g.source == source.parent), None)
            i = self._leaf_index_of_tensor(parent.real) if parent is not None else None
            if i is None:
                raise ExportError(f"armature.export: the size {source} is not a size of an input")
            return self._sym_size(self.leaf_nodes[i], source.dim, val)
        i = self._int_leaf(source)
        if i is None:
            raise ExportError(f"armature.export: the dynamic number {source} is not an input of the program",
                              hint="only int arguments (and sizes of tensor arguments) can be dynamic")
        return self.leaf_nodes[i]

    # --- body -------------------------------------------------------------------
    def _attr_names(self) -> dict[str, str]:
        """armature's attribute names -> the names Dynamo would give
        (``L__self___`` + the qualified name), from which torch.export
        derives the program's placeholder names (``p_a_lin_weight``)."""
        lead = self.cap.call_args[0] if self.cap.call_args else None
        fqn: dict[int, str] = {}
        if isinstance(lead, torch.nn.Module):
            for name, t in [*lead.named_parameters(remove_duplicate=False),
                            *lead.named_buffers(remove_duplicate=False)]:
                fqn.setdefault(id(t), name)
        out, used = {}, set()
        for name, t in self.og.attrs.items():
            new = name
            if id(t) in fqn:
                new = "L__self___" + re.sub(r"[^a-zA-Z0-9_]", "_", fqn[id(t)])
            base, k = new, 1
            while new in used:
                new = f"{base}_{k}"
                k += 1
            used.add(new)
            out[name] = new
        return out

    def copy_body(self) -> None:
        renamed = self._attr_names()
        for name, t in self.og.attrs.items():
            if isinstance(t, torch.nn.Parameter):
                self.root.register_parameter(renamed[name], t)
            else:
                self.root.register_buffer(renamed[name], t)
            self.attr_by_id.setdefault(id(t), renamed[name])
        inputs = {gi.node: gi for gi in self.og.inputs}
        for node in self.og.graph.nodes:
            if node.op == "placeholder":
                self.env_nodes[node] = self.map_input(inputs[node])
            elif node.op == "output":
                continue
            else:
                new = self.graph.node_copy(node, lambda n: self.env_nodes[n])
                if node.op == "get_attr":
                    new.target = renamed.get(node.target, node.target)
                    self.attr_nodes.setdefault(new.target, new)
                self.env_nodes[node] = new

    # --- outputs ----------------------------------------------------------------
    def outputs(self) -> tuple[list, Any]:
        cap = self.cap
        out_nodes = list(cap.body.graph_outputs)
        probe = _Probe(tuple(n.meta["val"] for n in out_nodes))
        sources = [gi.source for gi in self.og.inputs]
        run = build_transformed(cap.fn, probe if out_nodes or sources else None, sources, cap.body)
        pargs, pkwargs = pytree.tree_unflatten(self.leaf_vals, self.in_spec)
        lead = cap.call_args[:len(cap.call_args) - len(pargs)]
        grad = torch.is_grad_enabled()
        try:
            result = run(*lead, *pargs, **{FN_ARG: cap.fn}, **pkwargs)
        finally:
            torch._C._set_grad_enabled(grad)
        by_id = {id(n.meta["val"]): self.env_nodes[n] for n in out_nodes}
        leaves, out_spec = pytree.tree_flatten(result)
        mapped = []
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                node = by_id.get(id(leaf))
                if node is None:
                    i = next((k for k, v in enumerate(self.leaf_vals) if v is leaf), None)
                    node = self.leaf_nodes[i] if i is not None else None
                if node is None and id(leaf) in self.attr_by_id:
                    node = self._get_attr(self.attr_by_id[id(leaf)], leaf)
                if node is None:
                    raise ExportError("armature.export: the function returns a tensor the program does not "
                                      "compute or receive (a global tensor?)",
                                      hint="return tensors computed from the inputs or parameters")
                mapped.append(node)
            elif isinstance(leaf, torch.SymInt):
                mapped.append(self.sym_expr_node(leaf))
            elif leaf is None or isinstance(leaf, (int, float, bool, str)):
                mapped.append(leaf)
            else:
                raise ExportError(
                    f"armature.export: the function returns a {type(leaf).__name__}, which is not a tensor, "
                    "a number or a container torch's pytree knows",
                    hint="return tensors in tuples/lists/dicts, or register the type "
                         "(torch.export.register_dataclass / torch.utils._pytree.register_pytree_node)")
        return mapped, out_spec

    def sym_expr_node(self, value: torch.SymInt):
        import sympy
        from torch.utils._sympy.functions import FloorDiv, Mod, PythonMod
        expr = self.env.replace(value.node.expr)

        def build(e):
            if e.is_Integer:
                return int(e)
            if e.is_Symbol:
                n = self.symbol_node(e)
                if n is None:
                    raise ExportError(f"armature.export: the returned number depends on {e}, which is no input")
                return n
            if isinstance(e, sympy.Add):
                op = operator.add
            elif isinstance(e, sympy.Mul):
                op = operator.mul
            elif isinstance(e, FloorDiv):
                op = operator.floordiv
            elif isinstance(e, (Mod, PythonMod)):
                op = operator.mod
            else:
                raise ExportError(f"armature.export: cannot express the returned number {e} in the program")
            parts = [build(a) for a in e.args]
            acc = parts[0]
            for p in parts[1:]:
                val = op(_val(acc), _val(p))
                node = self.graph.call_function(op, (acc, p))
                node.meta["val"] = node.meta["example_value"] = val
                acc = node
            return acc

        return build(expr)

    def rename_sources(self) -> None:
        """Name the ShapeEnv's symbols after the program's flat inputs
        (``L['flat_args'][i]``, ``L['flat_args'][i].size()[d]``), as
        torch.export's capture does: the guards the trace assumed become
        the exported module's input checks (``ep.module()``), which torch
        rewrites from those names to the user's argument paths."""
        from ..graph.dynamic import ShapeEnvSource
        leaf_of = {}
        for gi in self.og.inputs:
            if isinstance(gi.real, torch.Tensor):
                i = self._leaf_index_of_tensor(gi.real)
                if i is not None:
                    leaf_of[gi.source] = i
        for i, sources in enumerate(self.leaf_sources):
            if type(self.flat[i]) is int:
                for s in sources:
                    leaf_of.setdefault(s, i)

        def renamed(src):
            if isinstance(src, ShapeEnvSource):
                i = leaf_of.get(src.source)
                return ShapeEnvSource(src.source, f"L['flat_args'][{i}]") if i is not None else src
            base = getattr(src, "base", None)
            if isinstance(base, ShapeEnvSource) and dataclasses.is_dataclass(src):
                return dataclasses.replace(src, base=renamed(base))
            return src

        for sym, sources in list(self.env.var_to_sources.items()):
            self.env.var_to_sources[sym] = [renamed(s) for s in sources]

    def finish(self) -> torch.fx.GraphModule:
        from torch.fx.graph import _PyTreeCodeGen, _PyTreeInfo
        self.make_placeholders()
        self.copy_body()
        mapped, out_spec = self.outputs()
        self.graph.output(tuple(mapped))
        self.graph._codegen = _PyTreeCodeGen(_PyTreeInfo(self.arg_names, self.in_spec, out_spec))
        gm = torch.fx.GraphModule(self.root, self.graph)
        gm.meta["module_call_specs"] = {}
        self.rename_sources()
        return gm


def _val(x):
    return x.meta["val"] if isinstance(x, torch.fx.Node) else x


class _Probe:
    """Stands for the compiled graph in the one run that builds the output:
    answers the output nodes' fake values."""

    def __init__(self, values: tuple):
        self.values = values

    def __call__(self, *args):
        return self.values


def build_graph_module(cap: Capture, args: tuple, kwargs: dict, arg_names: list[str]) -> torch.fx.GraphModule:
    return _Builder(cap, args, kwargs, arg_names).finish()
