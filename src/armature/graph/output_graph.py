"""The FX graph one trace builds.

Nodes are created directly on a ``torch.fx.Graph``.  Every node's example
value comes from running its op on fake tensors (a ``FakeTensorMode`` with a
``ShapeEnv``), so shapes, dtypes, devices and strides are known while tracing
and stored in ``node.meta['example_value']`` (and ``'val'``).  Graph inputs
are the real tensors the frame reads, each with the Source it came from.
"""
from __future__ import annotations

import operator
import re
from typing import Any, Callable

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode

from .. import torch_compat
from ..diagnostics.errors import Unsupported
from ..guards.sources import Source
from ..names import STATIC_INPUTS_META
from .dynamic import SizeSource, SourceNames



#: attribute set on a tensor by ``armature.mark_static_address`` (torch's
#: ``mark_static_address`` sets ``_dynamo_static_input_type``)
STATIC_ADDRESS_ATTR = "_armature_static_address"


def _is_static_input(real: torch.Tensor, source) -> bool:
    from ..guards.sources import ModuleMemberSource
    if isinstance(real, torch.nn.Parameter):
        return True
    if isinstance(source, ModuleMemberSource) and source.table in ("_parameters", "_buffers"):
        return True
    return bool(getattr(real, STATIC_ADDRESS_ATTR, False) or getattr(real, "_dynamo_static_input_type", None))


class GraphInput:
    """A placeholder of the graph: a tensor, or (dynamic shapes) a SymInt
    read at run time from its source (a size, an int argument)."""

    __slots__ = ("node", "real", "source")

    def __init__(self, node: torch.fx.Node, real: "torch.Tensor | int", source: Source):
        self.node, self.real, self.source = node, real, source


class OutputGraph:
    def __init__(self, scalar_outputs: bool = False, dynamic_output_shapes: bool = False, name_prefix: str = "___"):
        from torch.fx.experimental.symbolic_shapes import ShapeEnv   # (not at import: sympy, graph/dynamic.py)
        self.shape_env = ShapeEnv(allow_scalar_outputs=scalar_outputs,
                                  allow_dynamic_output_shape_ops=dynamic_output_shapes)
        self.fake_mode = FakeTensorMode(shape_env=self.shape_env, allow_non_fake_inputs=False)
        self.graph = torch.fx.Graph()
        self.inputs: list[GraphInput] = []
        self.attrs: dict[str, torch.Tensor] = {}
        #: where each get_attr tensor came from (a loaded entry rebinds it: driver/persistent_cache.py)
        self.attr_sources: dict[str, Source] = {}
        self._last_placeholder: torch.fx.Node | None = None
        #: node names taken ("self" is the GraphModule's own forward parameter: an
        #: input named after a user's parameter called self becomes self_1)
        self._names: set[str] = {"self"}
        self.op_count = 0
        #: of those, grad-mode switches (``_set_grad_enabled``): a graph of
        #: nothing else computes nothing and is not compiled (the frame's
        #: exit sets the grad mode it leaves behind itself)
        self.switch_count = 0
        #: some node writes into a tensor in place (an input may be mutated)
        self.mutates = False
        #: names of sources as ShapeEnv sees them (graph/dynamic.py)
        self.source_names = SourceNames(name_prefix)
        #: every input that carries ShapeEnv symbols, with its ShapeEnv
        #: source: what ``shape_guards`` asks the ShapeEnv about
        self.symbolic_inputs: list[tuple[Any, Any]] = []
        self.symbolic_contexts: list = []     # (their symbolic contexts: mark_dynamic constraints)
        #: tensor placeholder -> its symbolic context (dynamic tensors only;
        #: driver/specialize.py reads the ``specialize_on`` predicates)
        self.input_contexts: dict[torch.fx.Node, Any] = {}
        #: ShapeEnv symbol -> its SymInt placeholder
        self.symbol_nodes: dict[Any, torch.fx.Node] = {}
        #: Source -> the dynamic-int Value read from it (one symbol per source)
        self.int_symbols: dict = {}
        #: id(ShapeEnv guard) -> (guard, user location that made it)
        self.guard_locations: dict[int, tuple] = {}
        #: the traced code is in inference mode: nodes made now are marked
        #: (``meta["inference"]``, read by values/tensors/inference.py)
        self.inference_mode = False
        #: every op node made, in order: the frame loop appends each new
        #: node's user line to ``meta["armature_stack"]`` (innermost frame
        #: first), which the run report shades (diagnostics/record.py)
        self.op_nodes: list[torch.fx.Node] = []
        #: export only (armature.export): id(module) -> its qualified name
        #: in the exported module; while set, every node records the module
        #: calls it is inside (``meta["nn_module_stack"]``, as torch.export's)
        self.module_names: dict[int, str] | None = None
        self._module_stack: dict[str, tuple[str, type]] = {}
        self._module_calls: dict[int, int] = {}
        #: the innermost frame being traced (trace/frame.py sets it)
        self.current_frame = None
        #: id(fake tensor) -> (fake, its TensorValue): see ``tensor_value_of``
        self.tensor_values: dict[int, tuple[torch.Tensor, Any]] = {}

    def note_op_lines(self, since: int, filename: str, lineno: int) -> None:
        """Nodes made since ``since`` came from this user line (one frame
        level; callers' frames add their own lines after)."""
        where = (filename, lineno)
        for node in self.op_nodes[since:]:
            stack = node.meta.get("armature_stack")
            if stack is None:
                node.meta["armature_stack"] = [where]
            else:
                stack.append(where)

    def _stack_trace(self) -> str | None:
        """The user's stack where a node is made, in traceback format."""
        lines = []
        f = self.current_frame
        while f is not None:
            loc = f.location()
            lines.append(f'  File "{loc.filename}", line {loc.lineno}, in {loc.func_name}\n    {loc.source_line}\n')
            f = f.parent
        return "".join(reversed(lines)) or None

    def module_call(self, mod: torch.nn.Module):
        """Context of one traced call of ``mod`` (values/nn/modules.py)."""
        if self.module_names is None or id(mod) not in self.module_names:
            return _nullcontext()
        return _ModuleCall(self, mod)

    def sandbox(self) -> "OutputGraph":
        """An empty graph over the same fake mode and ShapeEnv (for
        speculative tracing: TraceContext.sandbox)."""
        sub = OutputGraph.__new__(OutputGraph)
        sub.__dict__.update(self.__dict__)
        sub.graph = torch.fx.Graph()
        sub.inputs, sub.attrs, sub._names = [], {}, set()
        sub._last_placeholder = None
        sub.op_count, sub.switch_count, sub.mutates = 0, 0, False
        sub.op_nodes = []
        sub.symbolic_inputs, sub.symbolic_contexts = [], []
        sub.input_contexts, sub.symbol_nodes, sub.guard_locations = {}, {}, {}
        sub.tensor_values = {}
        sub.is_sandbox = True   # (no module is built for it: values/nn/fresh_modules.py)
        sub.parent_graph = self
        return sub

    # --- inputs -------------------------------------------------------------
    def _placeholder(self, name: str) -> torch.fx.Node:
        if self._last_placeholder is None:
            first = next(iter(self.graph.nodes), None)
            ctx = self.graph.inserting_before(first) if first is not None else _nullcontext()
        else:
            ctx = self.graph.inserting_after(self._last_placeholder)
        with ctx:
            node = self.graph.placeholder(self._unique(_identifier(name)))
        self._last_placeholder = node
        return node

    def add_input(self, real: torch.Tensor, source: Source,
                  symbolic_context=None) -> tuple[torch.fx.Node, torch.Tensor]:
        """A tensor input; with a symbolic context (graph/dynamic.py) its
        dynamic dims are ShapeEnv symbols, each bound by a SymInt
        placeholder ahead of the tensor's, as torch.compile does."""
        from ..tensor_classes import plain_alias
        seen = plain_alias(real)   # (a __torch_function__ subclass enters the graph as a plain tensor)
        if symbolic_context is None:
            fake = self.fake_mode.from_tensor(seen, static_shapes=True)
        else:
            env_source = self.source_names.shape_env_source(source)
            fake = self.fake_mode.from_tensor(seen, source=env_source, symbolic_context=symbolic_context)
            self.symbolic_inputs.append((fake, env_source))
            self.symbolic_contexts.append(symbolic_context)
            for d, size in enumerate(fake.size()):
                if isinstance(size, torch.SymInt):
                    self.bind_symbol(size, int(seen.size(d)), SizeSource(source, d))
        node = self._placeholder(str(source))
        node.meta["example_value"] = fake
        node.meta["val"] = fake
        if symbolic_context is not None:
            self.input_contexts[node] = symbolic_context
        self.inputs.append(GraphInput(node, real, source))
        return node, fake

    def bind_symbol(self, sym: torch.SymInt, real: int, source: Source) -> torch.fx.Node | None:
        """The SymInt placeholder of a plain symbol (made on first need);
        None when ``sym`` is an expression, not a symbol."""
        import sympy
        expr = sym.node.expr
        if not isinstance(expr, sympy.Symbol):
            return None
        node = self.symbol_nodes.get(expr)
        if node is None:
            node = self._placeholder(str(expr))
            node.meta["example_value"] = sym
            node.meta["val"] = sym
            self.symbol_nodes[expr] = node
            self.inputs.append(GraphInput(node, real, source))
        return node

    def note_shape_guards(self, start: int, location) -> None:
        """The user line that made the ShapeEnv guards from ``start`` on (a
        branch on a size, a specialisation): for ARMATURE_LOGS=dynamic and
        for errors about specialised ``mark_dynamic`` dims."""
        for g in self.shape_env.guards[start:]:
            self.guard_locations.setdefault(id(g), (g, location))

    def new_int_symbol(self, value: int, source: Source) -> torch.SymInt:
        """A Python int read from ``source`` as a ShapeEnv symbol (not
        assumed positive, 0 and 1 not specialised)."""
        from torch.fx.experimental.symbolic_shapes import DimDynamic
        env_source = self.source_names.shape_env_source(source)
        sym = self.shape_env.create_unspecified_symint_and_symbol(value, env_source, DimDynamic.DYNAMIC)
        # (in every enclosing graph too: a value read in a sandbox -- a module's constructor traced
        # for the frame's setup code -- is the very value the frame goes on using, and the ShapeEnv
        # they share may specialise it; the frame's guards must then say so, or an entry holding the
        # specialised value serves other values)
        graph = self
        while graph is not None:
            graph.symbolic_inputs.append((sym, env_source))
            graph.symbolic_contexts.append(None)
            graph = graph.__dict__.get("parent_graph")
        return sym

    def add_attr(self, real: torch.Tensor, source: Source) -> tuple[torch.fx.Node, torch.Tensor]:
        """A parameter or buffer of an identity-guarded module: a ``get_attr``
        of the GraphModule, which holds the very same tensor object, so
        backends may treat it as part of the graph (aot_autograd lifts it)."""
        name = self._unique(_identifier(str(source)))
        self.attrs[name] = real
        self.attr_sources[name] = source
        node = self.graph.get_attr(name)
        fake = self.fake_mode.from_tensor(real, static_shapes=True)
        node.meta["example_value"] = fake
        node.meta["val"] = fake
        return node, fake

    def _unique(self, base: str) -> str:
        name, i = base, 1
        while name in self._names:
            name = f"{base}_{i}"
            i += 1
        self._names.add(name)
        return name

    # --- tensor identity -----------------------------------------------------
    def note_tensor_value(self, value) -> None:
        """Remember ``value`` as THE Value of its fake tensor (the first one
        noted keeps it)."""
        self.tensor_values.setdefault(id(value.fake), (value.fake, value))

    def tensor_value_of(self, fake: Any):
        """The Value already standing for the fake tensor ``fake``, or None.

        Fake propagation keeps Python identity as eager does: an op that
        returns its input object in eager (``x.add_(1)``,
        ``torch.Tensor.add_(x, 1)``, ``torch.relu_(x)``, ``x.contiguous()``
        of a contiguous ``x``, ``vmap(Tensor.acos_)(x)``) returns the input's
        fake object.  Answering such a result with the input's own Value
        makes ``is``, ``id()`` and tensors as dict/set keys see one object,
        as eager does.  (The fake is held too, so its id is never reused.)"""
        known = self.tensor_values.get(id(fake))
        return known[1] if known is not None and known[0] is fake else None

    # --- ops ----------------------------------------------------------------
    def create_node(self, kind: str, target: Any, node_args: tuple, node_kwargs: dict,
                    fake_fn: Callable[[], Any]) -> tuple[torch.fx.Node, Any]:
        """Run ``fake_fn`` (the op on fake tensors) and add the node."""
        try:
            with self.fake_mode, torch_compat.fake_prop_state():
                example = fake_fn()
        except Unsupported:
            raise
        except Exception as e:  # a dynamic-output op, a bad call, a data-dependent op
            raise _fake_failure(target, e) from e
        node = self.graph.create_node(kind, target, node_args, node_kwargs)
        if _is_mutation(kind, target, node_kwargs):
            self.mutates = True
        node.meta["example_value"] = example
        node.meta["val"] = example
        if self.module_names is not None:
            node.meta["nn_module_stack"] = dict(self._module_stack)
            node.meta["stack_trace"] = self._stack_trace()
        if self.inference_mode:
            node.meta["inference"] = True
        if self.shape_env.pending_fresh_unbacked_symbols:
            # the node that makes a data-dependent symbol binds it (what
            # aot_autograd and inductor look for)
            from torch.fx.experimental.symbolic_shapes import compute_unbacked_bindings
            bindings = compute_unbacked_bindings(self.shape_env, example)
            if bindings:
                node.meta["unbacked_bindings"] = bindings
        self.op_count += 1
        self.op_nodes.append(node)
        return node, example

    def erase(self, node: torch.fx.Node) -> None:
        if not node.users:
            self.graph.erase_node(node)
            self.op_count -= 1

    # --- finish -------------------------------------------------------------
    def has_ops(self) -> bool:
        """Whether the graph computes anything (as torch.compile, which
        does not call the backend for a graph without calls)."""
        return self.op_count > self.switch_count

    def finish(self, outputs: list[torch.fx.Node]) -> torch.fx.GraphModule:
        self.graph.output(tuple(outputs))
        root = torch.nn.Module()
        for name, t in self.attrs.items():
            if isinstance(t, torch.nn.Parameter):
                root.register_parameter(name, t)
            else:
                root.register_buffer(name, t)
        gm = torch.fx.GraphModule(root, self.graph, class_name="ArmatureGraph")
        gm.meta[STATIC_INPUTS_META] = self.static_input_indices()
        return gm

    def static_input_indices(self) -> tuple[int, ...]:
        """Positions of the placeholders whose tensor keeps its address from
        call to call: parameters and buffers lifted as inputs, and tensors
        marked with ``mark_static_address`` (armature's or torch's).  The
        backends read it (``gm.meta[STATIC_INPUTS_META]``): CUDA graphs do
        not copy these into graph-owned memory on every replay; a
        ``get_attr`` parameter is static by nature and not listed."""
        by_node = {gi.node: gi for gi in self.inputs}
        out = []
        for i, node in enumerate(n for n in self.graph.nodes if n.op == "placeholder"):
            gi = by_node.get(node)
            if gi is not None and isinstance(gi.real, torch.Tensor) and _is_static_input(gi.real, gi.source):
                out.append(i)
        return tuple(out)

    def example_inputs(self) -> list:
        """What backends get: the real tensors, and for SymInt placeholders
        the SymInts themselves (as torch.compile passes them), so that
        aot_autograd and inductor reuse the trace's symbols instead of
        making new ones the entry's guards know nothing about."""
        from ..tensor_classes import plain_alias
        return [i.node.meta["val"] if not isinstance(i.real, torch.Tensor) else plain_alias(i.real)
                for i in self.inputs]

    def tensor_inputs(self) -> list[GraphInput]:
        return [i for i in self.inputs if isinstance(i.real, torch.Tensor)]


class _ModuleCall:
    """One entry of the nn_module_stack while a module's forward is traced:
    keyed like torch's (the module's id, ``@n`` for its n-th later call)."""

    def __init__(self, graph: OutputGraph, mod: torch.nn.Module):
        self.graph, self.mod = graph, mod

    def __enter__(self):
        g, mod = self.graph, self.mod
        n = g._module_calls.get(id(mod), 0)
        g._module_calls[id(mod)] = n + 1
        self.key = f"{id(mod)}@{n}" if n else str(id(mod))
        self.saved = dict(g._module_stack)
        g._module_stack[self.key] = (g.module_names[id(mod)], type(mod))
        return self

    def __exit__(self, *exc):
        self.graph._module_stack = self.saved
        return False


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _identifier(text: str) -> str:
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_") or "input"
    if name[0].isdigit():
        name = "_" + name
    return name


def _fake_failure(target: Any, e: Exception) -> Unsupported:
    from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException
    name = getattr(target, "__name__", None) or str(target)
    if isinstance(e, (DataDependentOutputException, DynamicOutputShapeException)) or \
            "data-dependent" in str(e) or "DataDependent" in type(e).__name__:
        return Unsupported(f"{name}() depends on tensor data, which is not known while tracing",
                           hint="without fullgraph the frame is split here (a graph break); to stay in one graph, keep the value a tensor")
    return Unsupported(f"{name}() failed on fake tensors: {type(e).__name__}: {e}")



def _is_mutation(kind: str, target: Any, kwargs: dict) -> bool:
    if "out" in kwargs:
        return True
    if kind == "call_method":
        return target.endswith("_") and not target.startswith("_") or target.startswith("__i")
    name = getattr(target, "__name__", "")
    return target is operator.setitem or name.startswith("i") and hasattr(operator, name) and \
        getattr(operator, name) is target or name.endswith("_") and not name.startswith("_")
