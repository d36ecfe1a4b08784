"""torch.distributed inside compiled code: collectives as graph nodes, rank
and world-size queries as guarded constants.

* Functional collectives (``torch.distributed._functional_collectives``:
  ``all_reduce``, ``all_gather_tensor`` / ``all_gather_single``,
  ``reduce_scatter_tensor`` / ``reduce_scatter_single``,
  ``broadcast``, ``wait_tensor``) become ``torch.ops._c10d_functional``
  nodes followed by their ``wait_tensor``, as torch.compile records them
  (their Python wrappers, which return an AsyncCollectiveTensor eagerly, are
  not traced).
* The in-place c10d calls (``dist.all_reduce(t)``,
  ``all_gather_into_tensor``, ``reduce_scatter_tensor``, ``broadcast``) are
  rewritten to a functional collective and a ``copy_`` into the tensor, as
  torch.compile rewrites them.  ``async_op=True`` (the caller wants the Work
  handle) and every other c10d call are graph breaks: they run as Python.
* ``dist.get_rank()`` and ``get_world_size()`` are answered while tracing
  and guarded (a process group destroyed and made again with another size
  recompiles); ``is_initialized()`` and ``is_available()`` are state
  queries of values/operations/builtins.py.
* Process groups, ``ReduceOp`` values and device meshes are constants of
  the trace, guarded by identity where they were read; ``dist.group.WORLD``
  is the default group, guarded to stay it.

Never a collective at compile time: fake tensors carry the shapes, group
names are read from existing groups (a list of ranks, which may need a new
group -- a collective -- is refused), so a trace on one rank cannot wait
for the others.  Ranks may compile differently (a rank-dependent branch,
a recompile limit reached on one rank only): the collectives still run in
program order on every rank, in a graph or as Python, as eagerly.
"""
from __future__ import annotations

import inspect
from typing import Any

import torch

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind
from ..base import CallableConstantValue, Value, realize
from ..constant import ConstantValue
from .. import kinds

#: id(function) -> (function, handler), per torch.distributed module already
#: imported (user code can only hold functions of modules that are)
_TABLES: dict[str, dict] = {}
_CONSTANT_TYPES: tuple | None = None


def _tables() -> list[dict]:
    import sys
    out = []
    for name in ("torch.distributed.distributed_c10d", "torch.distributed._functional_collectives"):
        table = _TABLES.get(name)
        if table is None and name in sys.modules:
            table = _TABLES[name] = {id(f): (f, h) for f, h in _table(name).items()}
        if table is not None:
            out.append(table)
    return out


def _table(module_name: str) -> dict:
    import torch.distributed as dist
    if module_name == "torch.distributed.distributed_c10d":
        return {dist.all_reduce: _all_reduce_inplace, dist.all_gather_into_tensor: _all_gather_inplace,
                dist.reduce_scatter_tensor: _reduce_scatter_inplace, dist.broadcast: _broadcast_inplace,
                dist.get_rank: _get_rank, dist.get_world_size: _get_world_size}
    import torch.distributed._functional_collectives as fc
    table = {fc.all_reduce: _all_reduce, fc.all_gather_tensor: _all_gather, fc.reduce_scatter_tensor: _reduce_scatter,
             fc.broadcast: _broadcast, fc.wait_tensor: _wait}
    for name, handler in (("all_gather_single", _all_gather), ("reduce_scatter_single", _reduce_scatter)):
        f = getattr(fc, name, None)
        if f is not None:
            table[f] = handler
    return table


def _constant_types() -> tuple:
    global _CONSTANT_TYPES
    if _CONSTANT_TYPES is None:
        import sys
        import torch.distributed as dist
        types_ = [dist.ProcessGroup, dist.ReduceOp, type(dist.ReduceOp.SUM)]
        mesh = sys.modules.get("torch.distributed.device_mesh")
        if mesh is not None:
            types_.append(mesh.DeviceMesh)
            _CONSTANT_TYPES = tuple(types_)   # (final once device_mesh is imported)
        return tuple(types_)
    return _CONSTANT_TYPES


def wrap_special(ctx, obj: Any, source) -> Value | None:
    """The Value of a torch.distributed object, or None for anything else."""
    import sys
    if "torch.distributed.distributed_c10d" not in sys.modules or not torch.distributed.is_available():
        return None
    if obj is torch.distributed.ReduceOp:   # (its metaclass makes it unhashable)
        _guard_id(ctx, source, obj)
        return ReduceOpClassValue(source)
    for table in _tables():
        hit = table.get(id(obj))
        if hit is not None and hit[0] is obj:
            _guard_id(ctx, source, obj)
            return CollectiveFunctionValue(obj, hit[1], source)
    if isinstance(obj, _constant_types()):
        _guard_id(ctx, source, obj)
        return ConstantValue(obj, source)
    if obj is torch.distributed.group:
        _guard_id(ctx, source, obj)
        return GroupNamespaceValue(source)
    return None


def _guard_id(ctx, source, obj) -> None:
    if source is not None:
        ctx.guards.add(Guard(Kind.ID_MATCH, source, obj))


def _state_guard(tx, name: str, fn, expected, label: str) -> None:
    """A guard that ``fn()`` still returns ``expected`` (a number or a bool)."""
    tx.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text=f"{name}() == {expected!r}", consts={name: fn},
                            label=label))


class GroupNamespaceValue(Value):
    """``torch.distributed.group``: its ``WORLD`` is the default group."""

    def python_type(self):
        return type(torch.distributed.group)

    def getattr(self, tx, name):
        if name != "WORLD":
            raise Unsupported(f"torch.distributed.group.{name} in compiled code")
        return ConstantValue(_default_group(tx))


class ReduceOpClassValue(Value):
    """``torch.distributed.ReduceOp``: its members (``ReduceOp.MAX``) are
    constants (pybind enum values, fixed for the process)."""

    _NAMES = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")

    def python_type(self):
        return type(torch.distributed.ReduceOp)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return torch.distributed.ReduceOp

    def getattr(self, tx, name):
        if name not in self._NAMES:
            raise Unsupported(f"torch.distributed.ReduceOp.{name} in compiled code")
        return ConstantValue(getattr(torch.distributed.ReduceOp, name))


def _default_group(tx):
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d
    if not dist.is_initialized():
        raise Unsupported("a collective without an initialized default process group")
    pg = c10d._get_default_group()
    name = f"___dist_default_pg_{id(pg)}"
    tx.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text=f"{name}() is {name}_obj",
                            consts={name: _current_default_group, f"{name}_obj": pg},
                            label="the default process group is the one seen while compiling"))
    return pg


def _current_default_group():
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d
    return c10d._get_default_group() if dist.is_initialized() else None


class CollectiveFunctionValue(CallableConstantValue):
    """A torch.distributed function armature models (the module docstring)."""

    def __init__(self, fn, handler, source=None):
        super().__init__(fn, source)
        self.handler = handler

    def call(self, tx, args, kwargs):
        try:
            bound = inspect.signature(self.fn).bind(*args, **kwargs)
        except TypeError as e:
            raise Unsupported(f"{self.fn.__name__}() called with arguments it does not take: {e}")
        bound.apply_defaults()
        return self.handler(tx, bound.arguments)

    def __repr__(self):
        return f"<collective {self.fn.__module__}.{self.fn.__name__}>"


# --- argument helpers ------------------------------------------------------------------

def _const(tx, v, what: str):
    if not isinstance(v, Value):
        return v    # a default
    v = realize(tx.ctx, v)
    if not v.is_python_constant():
        raise Unsupported(f"{what} of a collective is not known while tracing")
    return v.as_python_constant()


def _tensor(tx, v, what: str):
    v = realize(tx.ctx, v) if isinstance(v, Value) else v
    if not isinstance(v, kinds.TensorValue):
        raise Unsupported(f"{what} of a collective is not a tensor of the trace")
    return v


def _group(tx, group, tag: str = "") -> tuple[str, int]:
    """(group name, group size) of a group argument: None (the default
    group), a ProcessGroup, a 1-d DeviceMesh or (mesh, dim), a group name."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d
    g = _const(tx, group, "the group")
    if g is None:
        g = _default_group(tx)
    try:
        from torch.distributed.device_mesh import DeviceMesh
    except ImportError:   # pragma: no cover
        DeviceMesh = ()
    if isinstance(g, tuple) and len(g) == 2 and isinstance(g[0], DeviceMesh) and isinstance(g[1], int):
        g = g[0].get_group(g[1])
    elif isinstance(g, DeviceMesh):
        if g.ndim != 1:
            raise Unsupported("a collective over a multi-dimensional DeviceMesh without a dim")
        g = g.get_group()
    if isinstance(g, str):
        g = c10d._resolve_process_group(g)
    if not isinstance(g, dist.ProcessGroup):
        raise Unsupported(f"a collective over {type(g).__name__} (a list of ranks may make a new group, "
                          "which is a collective itself); pass a ProcessGroup or DeviceMesh")
    return g.group_name, g.size()


def _reduce_op(tx, op) -> str:
    op = _const(tx, op, "the reduce op")
    if isinstance(op, str):
        return op.lower()
    name = getattr(op, "name", None)
    if isinstance(name, str) and name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
        return name.lower()
    raise Unsupported(f"the reduce op {op!r} in compiled code")


def _ops():
    return torch.ops._c10d_functional


def _call(tx, target, args: list) -> Value:
    return kinds.graph_call(tx, "call_function", target,
                      [a if isinstance(a, Value) else ConstantValue(a) for a in args], {})


def _waited(tx, out) -> Value:
    return _call(tx, _ops().wait_tensor.default, [out])


def _chunk_cat(tx, t, chunks: int, chunk_dim: int, cat_dim: int) -> Value:
    parts = kinds.graph_call(tx, "call_function", torch.chunk, [t, ConstantValue(chunks)], {"dim": ConstantValue(chunk_dim)})
    return kinds.graph_call(tx, "call_function", torch.cat, [parts], {"dim": ConstantValue(cat_dim)})


# --- functional collectives -----------------------------------------------------------

def _all_reduce(tx, a) -> Value:
    name, _ = _group(tx, a["group"], a.get("tag", ""))
    return _waited(tx, _call(tx, _ops().all_reduce.default,
                             [_tensor(tx, a["self"], "the input"), _reduce_op(tx, a["reduceOp"]), name]))


def _gathered(tx, t, group) -> tuple[Value, int]:
    name, size = _group(tx, group)
    return _waited(tx, _call(tx, _ops().all_gather_into_tensor.default, [t, size, name])), size


def _all_gather(tx, a) -> Value:
    out, size = _gathered(tx, _tensor(tx, a["self"], "the input"), a["group"])
    dim = _const(tx, a["gather_dim"], "gather_dim")
    return out if dim == 0 else _chunk_cat(tx, out, size, 0, dim)


def _scattered(tx, t, op, group, dim: int = 0) -> Value:
    name, size = _group(tx, group)
    if dim != 0:
        t = _chunk_cat(tx, t, size, dim, 0)
    return _waited(tx, _call(tx, _ops().reduce_scatter_tensor.default, [t, _reduce_op(tx, op), size, name]))


def _reduce_scatter(tx, a) -> Value:
    return _scattered(tx, _tensor(tx, a["self"], "the input"), a["reduceOp"], a["group"],
                      _const(tx, a["scatter_dim"], "scatter_dim"))


def _broadcast(tx, a) -> Value:
    name, _ = _group(tx, a["group"])
    return _waited(tx, _call(tx, _ops().broadcast.default,
                             [_tensor(tx, a["self"], "the input"), _const(tx, a["src"], "src"), name]))


def _wait(tx, a) -> Value:
    return _waited(tx, _tensor(tx, a["tensor"], "the tensor"))


# --- in-place c10d calls, rewritten -----------------------------------------------------

def _sync_only(tx, a, what: str) -> None:
    if _const(tx, a.get("async_op", False), "async_op"):
        raise Unsupported(f"torch.distributed.{what}(..., async_op=True) in compiled code",
                          hint="the Work handle it returns runs as Python; "
                               "functional collectives (torch.distributed._functional_collectives) stay in the graph")


def _copy_into(tx, target, value) -> Value:
    target.getattr(tx, "copy_").call(tx, [value], {})
    return ConstantValue(None)


def _all_reduce_inplace(tx, a) -> Value:
    _sync_only(tx, a, "all_reduce")
    t = _tensor(tx, a["tensor"], "the tensor")
    name, _ = _group(tx, a["group"])
    out = _waited(tx, _call(tx, _ops().all_reduce.default, [t, _reduce_op(tx, a["op"]), name]))
    return _copy_into(tx, t, out)


def _all_gather_inplace(tx, a) -> Value:
    _sync_only(tx, a, "all_gather_into_tensor")
    out, _ = _gathered(tx, _tensor(tx, a["input_tensor"], "the input"), a["group"])
    return _copy_into(tx, _tensor(tx, a["output_tensor"], "the output"), out)


def _reduce_scatter_inplace(tx, a) -> Value:
    _sync_only(tx, a, "reduce_scatter_tensor")
    out = _scattered(tx, _tensor(tx, a["input"], "the input"), a["op"], a["group"])
    return _copy_into(tx, _tensor(tx, a["output"], "the output"), out)


def _broadcast_inplace(tx, a) -> Value:
    import torch.distributed as dist
    _sync_only(tx, a, "broadcast")
    t = _tensor(tx, a["tensor"], "the tensor")
    group = _const(tx, a["group"], "the group")
    group_src = _const(tx, a.get("group_src"), "group_src")
    src = _const(tx, a["src"], "src")
    if group_src is None:
        if src is None:
            raise Unsupported("torch.distributed.broadcast without src")
        pg = group if isinstance(group, dist.ProcessGroup) else None
        group_src = src if pg is None else dist.get_group_rank(pg, src)
    name, _ = _group(tx, a["group"])
    out = _waited(tx, _call(tx, _ops().broadcast.default, [t, group_src, name]))
    return _copy_into(tx, t, out)


# --- queries -------------------------------------------------------------------------

def _query_group(tx, a):
    import torch.distributed as dist
    g = _const(tx, a.get("group"), "the group")
    if g is None:
        return _default_group(tx)
    if not isinstance(g, dist.ProcessGroup):
        raise Unsupported(f"a rank query on {type(g).__name__} in compiled code")
    return g


def _get_rank(tx, a) -> Value:
    import torch.distributed as dist
    pg = _query_group(tx, a)
    r = dist.get_rank(pg)
    # (the group is the same object: the default group or an ID-guarded argument)
    _state_guard(tx, f"___dist_rank_{id(pg)}", lambda pg=pg: dist.get_rank(pg), r, f"torch.distributed rank is {r}")
    return ConstantValue(r)


def _get_world_size(tx, a) -> Value:
    import torch.distributed as dist
    pg = _query_group(tx, a)
    n = dist.get_world_size(pg)
    _state_guard(tx, f"___dist_world_{id(pg)}", lambda pg=pg: dist.get_world_size(pg), n,
                 f"torch.distributed world size is {n}")
    return ConstantValue(n)
