"""``torch.vmap`` (also ``torch.func.vmap``) traced into the graph.

transformers builds its attention masks with nested ``torch.vmap`` over small
Python mask functions; running those as Python splits a model into several
graphs.  armature traces a vmapped call the way functorch runs it, with the
functorch steps as nodes of the graph:

    level = _vmap_increment_nesting(batch_size, randomness)
    xb    = _add_batch_dim(x, in_dim, level)       # per batched input
    ...   the function, traced as usual on batched fake tensors ...
    out   = _remove_batch_dim(yb, level, batch_size, out_dim)
    _vmap_decrement_nesting()

The steps also run for real while tracing (fake tensors become batched fake
tensors, so every op in the body gets its per-example metadata from
functorch itself); an aborted trace undoes the nesting it entered.  The
graph uses ``torch._functorch.predispatch``'s versions of the steps, which
AOTAutograd can trace through.  A graph break inside the body cannot split
the graph (the nesting is live there): it moves to the call of the vmapped
function, which then runs as Python.  ``chunk_size`` and randomness other
than ``"error"`` run as Python too.
"""
from __future__ import annotations

import types

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from ...diagnostics.errors import Unsupported, user_error
from ..base import CallableConstantValue, Value, realize
from ..constant import ConstantValue
from .. import kinds

try:
    from torch._functorch import predispatch as _steps
except ImportError:   # pragma: no cover (every supported torch has it)
    _steps = None

_VMAP_FUNCTIONS = tuple(f for f in (getattr(torch, "vmap", None), getattr(torch.func, "vmap", None)) if f)


def is_vmap(obj) -> bool:
    return any(obj is f for f in _VMAP_FUNCTIONS)


class VmapFactoryValue(CallableConstantValue):
    """``torch.vmap`` itself: calling it makes a vmapped function."""

    def call(self, tx, args, kwargs):
        names = ("func", "in_dims", "out_dims", "randomness")
        bound = dict(zip(names, args))
        bound.update(kwargs)
        if "func" not in bound:
            raise Unsupported("torch.vmap() without a function")
        opts = {}
        for name, default in (("in_dims", 0), ("out_dims", 0), ("randomness", "error"), ("chunk_size", None)):
            v = realize(tx.ctx, bound[name]) if name in bound else ConstantValue(default)
            if not v.is_python_constant():
                raise Unsupported(f"torch.vmap({name}=...) that is not a constant")
            opts[name] = v.as_python_constant()
        extra = set(bound) - set(names) - {"chunk_size"}
        if extra:
            raise Unsupported(f"torch.vmap() with {sorted(extra)}")
        return VmapValue(bound["func"], **opts)


class VmapValue(Value):
    """A function made by ``torch.vmap(func, ...)`` in the traced code."""

    def __init__(self, func: Value, in_dims, out_dims, randomness, chunk_size):
        super().__init__()
        self.func = func
        self.in_dims, self.out_dims = in_dims, out_dims
        self.randomness, self.chunk_size = randomness, chunk_size

    def python_type(self):
        return types.FunctionType

    def reconstruct(self, out):
        out.instr("PUSH_NULL")
        out.load_const(_make_vmap)
        out.reconstruct(self.func)
        for v in (self.in_dims, self.out_dims, self.randomness, self.chunk_size):
            out.load_const(v)
        out.call(5)

    def call(self, tx, args, kwargs):
        if self.chunk_size is not None or self.randomness != "error":
            raise Unsupported("torch.vmap with chunk_size or randomness other than 'error'",
                              hint="the vmapped call runs as Python (a graph break)")
        if _steps is None:
            raise Unsupported("torch.vmap on a torch without torch._functorch.predispatch")
        if not args:
            raise user_error(ValueError, "vmap(<fn>)(<inputs>): got no inputs.")
        from . import torch_function
        tree = tuple(_to_tree(tx, a) for a in args)
        leaves, spec = tree_flatten(tree)
        flat_dims = _broadcast_in_dims(self.in_dims, spec)
        batch = None
        for i, (leaf, d) in enumerate(zip(leaves, flat_dims)):
            if d is None:
                continue
            if not isinstance(leaf, kinds.TensorValue):
                raise user_error(ValueError, f"vmap: Got in_dim={d} for an input but the input is of type "
                                             f"{leaf.python_type().__name__}. We cannot vmap over non-Tensor "
                                             "arguments, please use None as the respective in_dim")
            ndim = leaf.fake.dim()
            if not -ndim <= d < ndim:
                raise user_error(ValueError, f"vmap: Got in_dim={d} for some input, but that input is a Tensor "
                                             f"of dimensionality {ndim}")
            flat_dims[i] = d % ndim
            size = leaf.fake.size(flat_dims[i])
            if batch is not None and not _same_size(size, batch[1]):
                raise user_error(ValueError, "vmap: Expected all tensors to have the same size in the mapped "
                                             f"dimension, got sizes {batch[1]} and {size} for the mapped dimension")
            if batch is None:
                # a dynamic size stays symbolic: (graph argument, fake-side value)
                batch = _size_arg(tx, leaf, flat_dims[i])
        if batch is None:
            raise user_error(ValueError, "vmap: at least one input must be a Tensor with a mapped dimension "
                                         "(in_dims not None)")
        batch_node, batch = batch
        ctx = tx.ctx
        graph = ctx.graph
        _steps.lazy_load_decompositions()
        origin = torch_function._root_origin(tx)
        level = torch._C._functorch._vmap_increment_nesting(batch, self.randomness)
        try:
            level_node = graph.graph.create_node("call_function", _steps._vmap_increment_nesting,
                                                 (batch_node, self.randomness), {})
            level_node.meta["example_value"] = level
            graph.op_count += 1
            batched = []
            for leaf, d in zip(leaves, flat_dims):
                if d is None:
                    batched.append(leaf)
                    continue
                node, fake = graph.create_node("call_function", _steps._add_batch_dim, (leaf.node, d, level_node),
                                               {}, lambda leaf=leaf, d=d: torch._C._functorch._add_batch_dim(
                                                   leaf.fake, d, level))
                batched.append(kinds.TensorValue(node, fake))
            inputs = [_from_tree(x) for x in tree_unflatten(batched, spec)]
            result = realize(ctx, self.func.call(tx, inputs, kwargs))
            out = self._unbatch(tx, result, level, level_node, batch, batch_node)
            graph.graph.create_node("call_function", _steps._vmap_decrement_nesting, (), {})
            graph.op_count += 1
        except Unsupported as e:
            if getattr(e, "root_index", None) is None:
                # (the nesting is live inside the body: the call runs as Python instead)
                e.root_index, e.from_callee = origin
                e.handling_origin = None
            raise
        finally:
            torch._C._functorch._vmap_decrement_nesting()
        return out

    def _unbatch(self, tx, result: Value, level: int, level_node, batch, batch_node) -> Value:
        from .tensor import tensor_result
        graph = tx.ctx.graph
        leaves, spec = tree_flatten(_to_tree(tx, result))
        dims = _broadcast_out_dims(self.out_dims, spec)
        outs = []
        for leaf, d in zip(leaves, dims):
            if d is None:
                if isinstance(leaf, kinds.TensorValue) and torch._C._functorch.is_batchedtensor(leaf.fake):
                    raise user_error(ValueError, "vmap: the function can not return a BatchedTensor when "
                                                 "out_dim is None")
                outs.append(leaf)
                continue
            if not isinstance(leaf, kinds.TensorValue):
                raise user_error(ValueError, "vmap: the function must only return Tensors, got type "
                                             f"{leaf.python_type().__name__}. Did you mean to set out_dims= to "
                                             "None for output?")
            node, fake = graph.create_node("call_function", _steps._remove_batch_dim,
                                           (leaf.node, level_node, batch_node, d), {},
                                           lambda leaf=leaf, d=d: torch._C._functorch._remove_batch_dim(
                                               leaf.fake, level, batch, d))
            # (an in-place body gives back the input itself, as eager's vmap does)
            outs.append(tensor_result(tx.ctx, node, fake))
        return _from_tree(tree_unflatten(outs, spec))


def _same_size(a, b) -> bool:
    if isinstance(a, torch.SymInt) or isinstance(b, torch.SymInt):
        return bool(a == b)   # (decided by the ShapeEnv, guarded)
    return a == b


def _size_arg(tx, t, dim: int):
    """(graph argument, fake-side value) of ``t``'s size along ``dim``: a
    SymInt node where the size is dynamic, else the int."""
    size = t.fake.size(dim)
    if not isinstance(size, torch.SymInt):
        return int(size), int(size)
    from .tensor import size_value, to_graph_arg
    return to_graph_arg(size_value(tx.ctx, t, dim))


def _make_vmap(func, in_dims, out_dims, randomness, chunk_size):
    """A vmapped function handed out of the graph (rebuilt by generated code)."""
    return torch.vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


def _to_tree(tx, v: Value):
    """A Value as a pytree whose leaves are Values (tuples, lists and
    string-keyed dicts are looked into)."""
    v = realize(tx.ctx, v)
    if isinstance(v, kinds.TupleValue) and v.cls is tuple:
        return tuple(_to_tree(tx, i) for i in v.items)
    if type(v) is kinds.ListValue:
        return [_to_tree(tx, i) for i in v.items]
    if type(v) is kinds.DictValue and all(isinstance(k, str) for k in v.items):
        return {k: _to_tree(tx, i) for k, i in v.items.items()}
    return v


def _from_tree(x) -> Value:
    if isinstance(x, tuple):
        return kinds.TupleValue([_from_tree(i) for i in x])
    if isinstance(x, list):
        return kinds.ListValue([_from_tree(i) for i in x])
    if isinstance(x, dict):
        return kinds.DictValue({k: _from_tree(i) for k, i in x.items()})
    return x


def _broadcast_in_dims(in_dims, spec) -> list:
    from torch.utils._pytree import _broadcast_to_and_flatten
    if not isinstance(in_dims, (int, tuple)):
        raise user_error(ValueError, f"vmap: expected `in_dims` to be int or a (potentially nested) tuple "
                                     f"matching the structure of inputs, got: {type(in_dims)}.")
    flat = _broadcast_to_and_flatten(in_dims, spec)
    if flat is None:
        raise user_error(ValueError, "vmap: in_dims is not compatible with the structure of `inputs`.")
    for d in flat:
        if d is not None and not isinstance(d, int):
            raise user_error(ValueError, f"vmap: Got in_dim={d} for an input but in_dim must be either an "
                                         "integer dimension or None.")
    return list(flat)


def _broadcast_out_dims(out_dims, spec) -> list:
    from torch.utils._pytree import _broadcast_to_and_flatten
    flat = _broadcast_to_and_flatten(out_dims, spec)
    if flat is None:
        raise user_error(ValueError, "vmap: out_dims is not compatible with the structure of the outputs")
    return list(flat)


def wrap_special(ctx, obj) -> Value | None:
    if is_vmap(obj):
        return VmapFactoryValue(obj)
    return None
