"""Tensors: an FX node plus its fake tensor.

Metadata (shape, dtype, device, ...) is read from the fake tensor and folded
to constants: sizes and strides are guarded on every graph input, so they are
static for the life of a cache entry.
"""
from __future__ import annotations

import operator
import sys
import types
from typing import Any

import torch
import torch.fx

from ...diagnostics.errors import Unsupported
from ..base import Value, LazyValue, concrete, realize
from ..constant import ConstantValue
from ..builder import wrap
from .. import kinds
from . import number_arguments, torch_function

# Attributes that are plain metadata of the (guarded) tensor.
META_ATTRS = frozenset({
    "shape", "dtype", "device", "layout", "ndim", "requires_grad", "is_cuda", "is_cpu",
    "is_sparse", "is_quantized", "is_meta", "is_mkldnn", "is_nested", "is_leaf", "itemsize",
    "is_mps", "is_xpu", "names",
})
# Attributes that are new tensors (views) computed from the tensor.
TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag"})
# Methods whose answer is metadata only (folded, no graph node).
META_METHODS = frozenset({
    "size", "stride", "dim", "ndimension", "numel", "nelement", "element_size",
    "is_contiguous", "is_floating_point", "is_complex", "get_device", "is_signed",
    "storage_offset", "is_inference", "__len__",
})
# Methods that need real data or change autograd state: never traced.
UNTRACEABLE_METHODS = {
    "item": "Tensor.item() reads a value out of the tensor",
    "tolist": "Tensor.tolist() reads values out of the tensor",
    "numpy": "Tensor.numpy() leaves torch",
    "__array__": "converting to numpy leaves torch",
    "data_ptr": "Tensor.data_ptr() depends on real memory",
    "backward": "Tensor.backward() runs autograd",
    "register_hook": "registering hooks inside compiled code",
    "retain_grad": "Tensor.retain_grad() changes autograd state",
    "requires_grad_": "Tensor.requires_grad_() changes autograd metadata",
    "storage": "storage access", "untyped_storage": "storage access",
    "__bool__": "bool() of a tensor depends on its data",
    "__int__": "int() of a tensor depends on its data",
    "__float__": "float() of a tensor depends on its data",
    "__index__": "using a tensor as an index depends on its data",
    "share_memory_": "Tensor.share_memory_()", "record_stream": "Tensor.record_stream()",
    "set_": "Tensor.set_() swaps storage", "resize_": "Tensor.resize_()",
}


class TensorValue(Value):
    def __init__(self, node: torch.fx.Node, fake: torch.Tensor, cls: type = torch.Tensor, source=None):
        super().__init__(source)
        self.node = node
        self.fake = fake
        self.cls = cls
        #: Python attributes the trace gave this tensor (``t.tag = ...``)
        self.attrs: dict[str, Value] = {}

    def python_type(self):
        return self.cls

    def getattr(self, tx, name):
        from .tensor_attrs import python_attribute
        found = python_attribute(tx, self, name)
        if found is not None:
            return found
        return self.tensor_attribute(tx, name)

    def setattr(self, tx, name, value):
        from .tensor_attrs import set_python_attribute
        set_python_attribute(tx, self, name, value)

    def tensor_attribute(self, tx, name):
        """An attribute torch.Tensor itself defines (a read of one of its
        properties is offered to a mode or overriding subclass first, as in
        eager)."""
        from . import torch_function
        if torch_function.possible(tx.ctx) and torch_function.is_tensor_property(name):
            handled = torch_function.dispatch(tx, "call_function", getattr, [self, ConstantValue(name)], {})
            if handled is not None:
                return handled
        fake = self.fake
        if name in META_ATTRS:
            if name == "requires_grad" and self.source is None:
                # Under no_grad results never require grad; fake propagation knows.
                return ConstantValue(fake.requires_grad)
            if name == "shape":
                return shape_value(tx.ctx, self)
            return ConstantValue(getattr(fake, name))
        if name in TENSOR_ATTRS:
            return graph_call(tx, "call_function", getattr, [self, ConstantValue(name)], {})
        if name == "grad":
            if self.source is None:
                return ConstantValue(None) if fake.grad is None else _unsupported_attr(name)
            from ...guards.sources import AttrSource
            real = _real_of(tx, self)
            return wrap(tx.ctx, real.grad, AttrSource(self.source, "grad"))
        if name in ("data",):
            return graph_call(tx, "call_method", "detach", [self], {})
        if name == "__class__":   # (the tensor's guards fix its class)
            return wrap(tx.ctx, self.cls, None)
        attr = getattr(torch.Tensor, name, None)
        if attr is None:
            if getattr(self.cls, "__getattr__", None):
                raise Unsupported(f"{self.cls.__name__} defines __getattr__ (reading {name!r})")
            if self.source is not None:
                from ...guards.guard import Guard, Kind
                tx.ctx.guards.add(Guard(Kind.NOT_IN_DICT, self.source, name))
            from ...diagnostics.errors import user_error
            raise user_error(AttributeError, f"'{self.cls.__name__}' object has no attribute '{name}'")
        if callable(attr):
            return TensorMethodValue(self, name)
        raise Unsupported(f"tensor attribute {name!r}")

    def call_method(self, tx, name, args, kwargs):
        return TensorMethodValue(self, name).call(tx, args, kwargs)

    def unpack(self, tx):
        if self.fake.dim() == 0:
            from ...diagnostics.errors import user_error
            raise user_error(TypeError, "iteration over a 0-d tensor")
        return [graph_call(tx, "call_function", operator.getitem, [self, ConstantValue(i)], {})
                for i in range(self.fake.shape[0])]

    def get_iter(self, tx):
        """``iter(t)``: Tensor.__iter__ returns ``iter(t.unbind(0))``, a
        tuple_iterator over the rows."""
        it = kinds.IteratorValue(self.unpack(tx))
        it.kind = type(iter(()))
        return it

    def length(self, tx):
        if self.fake.dim() == 0:
            raise Unsupported("len() of a 0-d tensor")
        return int(self.fake.shape[0])   # (specialises a dynamic size: len() itself uses size_value)

    def symbolic_length(self, tx) -> Value:
        """``len(t)``: the size of dim 0, dynamic if that size is."""
        if self.fake.dim() == 0:
            raise user_error_len()
        return size_value(tx.ctx, self, 0)

    # --- data-dependent scalars (config.capture_scalar_outputs) ----------------
    def scalar(self, tx, kind=None) -> Value:
        """``t.item()`` (``int(t)``/``float(t)`` with ``kind``) as an unbacked
        SymInt/SymFloat node of the graph."""
        conversion = {int: "__int__", float: "__float__"}.get(kind, "item")
        if not tx.ctx.capture_scalars:
            raise Unsupported(UNTRACEABLE_METHODS[conversion],
                              hint="set armature.config.capture_scalar_outputs = True to keep it in the graph "
                                   "(or use fullgraph=True); without it the frame is split here")
        hint = "without fullgraph the frame is split here (a graph break)"
        if self.fake.numel() != 1:
            raise Unsupported(f"{conversion}() of a tensor with {self.fake.numel()} elements", hint=hint)
        floating = self.fake.is_floating_point() or self.fake.is_complex()
        if kind is int and floating or kind is float and not floating or self.fake.is_complex():
            raise Unsupported(f"{conversion}() of a {self.fake.dtype} tensor inside the graph", hint=hint)
        return graph_call(tx, "call_method", "item", [self], {})

    def to_list(self, tx) -> Value:
        if self.fake.dim() == 0:
            return self.scalar(tx)
        n = self.fake.shape[0]
        if isinstance(n, torch.SymInt) or self.fake.numel() > 64:
            raise Unsupported("tolist() of a large or dynamically sized tensor inside the graph",
                              hint="without fullgraph the frame is split here (a graph break); keep the values "
                                   "in a tensor, or call tolist() outside the compiled function")
        rows = [graph_call(tx, "call_function", operator.getitem, [self, ConstantValue(i)], {}) for i in range(n)]
        return kinds.ListValue([r.to_list(tx) for r in rows])

    def truth(self, tx):
        raise Unsupported("the truth value of a tensor depends on its data (data-dependent control flow)",
                          hint="without fullgraph the frame is split here (a graph break); use torch.where or torch.cond, or move the branch "
                               "out of the compiled function")

    def __repr__(self):
        src = f" {self.source}" if self.source is not None else ""
        return f"<Tensor{src} {tuple(self.fake.shape)} {self.fake.dtype}>"


def _unsupported_attr(name):
    raise Unsupported(f"tensor attribute {name!r} of an intermediate tensor")


def _real_of(tx, value: TensorValue) -> torch.Tensor:
    for gi in tx.ctx.graph.inputs:
        if gi.node is value.node:
            return gi.real
    if value.node.op == "get_attr":
        return tx.ctx.graph.attrs[value.node.target]
    raise Unsupported("reading real state of an intermediate tensor")


class TensorMethodValue(Value):
    def __init__(self, tensor: TensorValue, name: str):
        super().__init__()
        self.tensor, self.name = tensor, name

    def call(self, tx, args, kwargs):
        name, t = self.name, self.tensor
        if name in ("item", "tolist") and tx.ctx.capture_scalars and not args and not kwargs:
            return t.scalar(tx) if name == "item" else t.to_list(tx)
        if name in ("__iter__", "__reversed__") and not args and not kwargs:   # (Python methods of Tensor)
            if name == "__iter__":
                return t.get_iter(tx)
            return t if t.fake.dim() == 0 else graph_call(tx, "call_method", "flip", [t, ConstantValue(0)], {})
        if name == "numpy":
            from ..numpy import tensor_numpy
            return tensor_numpy(tx, t, args, kwargs)
        if name == "type" and len(args) == 1 and not kwargs and _legacy_type(args[0]) is not None:
            # x.type(torch.HalfTensor): x.to(device, dtype) of the legacy type (x itself when equal)
            legacy = _legacy_type(args[0])
            device = ConstantValue(torch.device("cuda" if legacy.is_cuda else "cpu"))
            return TensorMethodValue(t, "to").call(tx, [], {"device": device, "dtype": ConstantValue(legacy.dtype)})
        if name in UNTRACEABLE_METHODS:
            raise Unsupported(UNTRACEABLE_METHODS[name],
                              hint="without fullgraph the frame is split here (a graph break); keep the value a tensor to stay in one graph")
        if name == "is_inference" and not args and not kwargs:
            from .inference import is_inference
            return ConstantValue(is_inference(tx, t))
        if name in META_METHODS:
            from ..containers.containers import unwrap_constants
            a, k = unwrap_constants(args, kwargs, what=f"Tensor.{name}()")
            if name == "size" and not k:
                if not a:
                    return shape_value(tx.ctx, t)
                dim = a[0] + t.fake.dim() if isinstance(a[0], int) and a[0] < 0 else a[0]
                if isinstance(dim, int) and 0 <= dim < t.fake.dim():
                    return size_value(tx.ctx, t, dim)
            return meta_result(tx.ctx, t, name, a, getattr(t.fake, name)(*a, **k))
        result = graph_call(tx, "call_method", name, [t, *args], kwargs)
        if _is_inplace_method(name):
            return t
        return result

    def python_type(self):
        from ..functions.functions import tensor_method_type
        return tensor_method_type(self.tensor.python_type(), self.name)

    def getattr(self, tx, name):
        from ..functions.functions import tensor_method_attribute
        return tensor_method_attribute(tx, self, name)

    def reconstruct(self, out):
        out.reconstruct(self.tensor)
        out.instr("LOAD_ATTR", self.name)

    def __repr__(self):
        return f"<method Tensor.{self.name} of {self.tensor}>"


def _legacy_type(v: Value):
    """The legacy tensor type (``torch.HalfTensor``, ``torch.cuda.FloatTensor``)
    a Value holds, or None; sparse ones are not modelled."""
    cls = getattr(v, "cls", None)
    if cls is None or type(cls).__name__ != "tensortype" or getattr(cls, "is_sparse", True):
        return None
    return cls


def _is_inplace_method(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_") or name in (
        "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__", "__imod__",
        "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__imatmul__")


# --- conversions between Values and graph arguments ----------------------------

def to_graph_arg(v: Value) -> tuple[Any, Any]:
    """(node-side argument, fake-side argument) for a Value passed to an op."""
    if type(v) is LazyValue:
        v = v.realize()
    if isinstance(v, kinds.SymbolicNumberValue):
        if v.sym is not None:          # dynamic: a SymInt node of the graph
            return v.as_node(), v.sym
        v = v.specialize()             # lazily guarded: the graph is specialised on it
    if isinstance(v, TensorValue):
        return v.node, v.fake
    if isinstance(v, ConstantValue):
        c = _numpy_scalar_as_python(v.value)
        return c, c
    if isinstance(v, (kinds.TupleValue, kinds.ListValue)):
        pairs = [to_graph_arg(i) for i in v.items]
        kind = tuple if isinstance(v, kinds.TupleValue) and v.cls in (tuple, torch.Size) else list
        if isinstance(v, kinds.TupleValue) and v.cls not in (tuple, torch.Size):
            raise Unsupported(f"passing a {v.cls.__name__} to a torch op")
        return kind(p[0] for p in pairs), kind(p[1] for p in pairs)
    if isinstance(v, kinds.SliceValue):
        parts = [to_graph_arg(i) for i in (v.start, v.stop, v.step)]
        return slice(*(p[0] for p in parts)), slice(*(p[1] for p in parts))
    if isinstance(v, kinds.DictValue):
        pairs = {k: to_graph_arg(i) for k, i in v.items.items()}
        return {k: p[0] for k, p in pairs.items()}, {k: p[1] for k, p in pairs.items()}
    if isinstance(v, kinds.ModuleValue):
        raise Unsupported("passing an nn.Module to a torch function")
    raise Unsupported(f"passing {v} to a torch op")


def _numpy_scalar_as_python(c: Any) -> Any:
    """A NumPy scalar constant (``np.float32(2)``, ``np.finfo(dt).eps``)
    passed to a torch op.  torch parses it as a Scalar: a floating one as the
    Python float of its value, an integer one as the int, so that is what the
    graph holds (the graph's code could not even spell ``np.float32(...)``:
    it has no ``np`` global).  ``np.bool_`` (torch reads it as a double) and
    complex scalars (torch drops the imaginary part) have no Python
    equivalent: the op runs as Python."""
    np = sys.modules.get("numpy")
    if np is None or not isinstance(c, np.generic):
        return c
    if isinstance(c, (np.floating, np.integer)):
        return c.item()
    raise Unsupported(f"a NumPy {type(c).__name__} scalar passed to a torch op")


def _has_numpy_scalar(tx, v: Value) -> bool:
    """``v`` is or holds a NumPy scalar: a constant one, or one passed in
    (a scalar NdarrayValue)."""
    np = sys.modules.get("numpy")
    if np is None:
        return False
    v = realize(tx.ctx, v)
    if isinstance(v, ConstantValue):
        return isinstance(v.value, np.generic)
    if isinstance(v, (kinds.TupleValue, kinds.ListValue)):
        return any(_has_numpy_scalar(tx, i) for i in v.items)
    from ..numpy import is_ndarray_value
    return is_ndarray_value(v) and v.scalar


# torch functions that infer the dtype of their result from the data they are
# given: a NumPy scalar there keeps its own dtype (``torch.tensor(np.float64(2))``
# is float64), which a Python number would lose.
_DATA_CONSTRUCTORS = frozenset({"tensor", "as_tensor", "asarray", "new_tensor"})


_numpy_mod = None


def _load_numpy() -> None:
    """values/numpy, bound once (it imports this module); a function-level
    import costs an import-system round trip per argument of every op."""
    global _numpy_mod
    from .. import numpy as numpy_values
    _numpy_mod = numpy_values


def _specialized(tx, v: Value) -> Value:
    """Lazily guarded numbers inside an op's arguments take their (guarded)
    value: the graph is specialised on them.  Dynamic ones stay SymInts."""
    v = realize(tx.ctx, v)
    if not (isinstance(v, kinds.SymbolicNumberValue) and v.sym is not None):
        v = concrete(tx, v)
    if _numpy_mod is None:
        _load_numpy()
    if _numpy_mod.is_ndarray_value(v):      # a NumPy scalar input given to a torch op: its Python number
        v = _numpy_mod.scalar_input_as_number(tx.ctx, v) or v
    if isinstance(v, kinds.TupleValue):
        return kinds.TupleValue([_specialized(tx, i) for i in v.items], cls=v.cls)
    if type(v) is kinds.ListValue:
        return kinds.ListValue([_specialized(tx, i) for i in v.items])
    return v


def graph_call(tx, kind: str, target: Any, args: list[Value], kwargs: dict[str, Value]) -> Value:
    """Add one op to the graph and wrap what it returns (after offering it
    to an active TorchFunctionMode or overriding tensor subclass)."""
    args = [realize(tx.ctx, a) for a in args]   # (wrapping an input may be what reveals a subclass)
    kwargs = {k: realize(tx.ctx, v) for k, v in kwargs.items()}
    if torch_function.possible(tx.ctx):
        handled = torch_function.dispatch(tx, kind, target, args, kwargs)
        if handled is not None:
            return handled
    if kind == "call_method" and target == "as_subclass" or target is torch.Tensor.as_subclass:
        return _as_subclass(tx, args, kwargs)
    if "requires_grad" in kwargs and not getattr(tx.ctx, "auditing_construction", False):
        # (a module's constructor audited in a sandbox: the module is built
        # for real by the transformed function, values/nn/user_module_construction.py)
        _check_no_new_leaf(target, kwargs["requires_grad"])
    if args and isinstance(args[0], TensorValue) and args[0].source is not None:
        _check_no_input_metadata_mutation(kind, target, args[0])
    if getattr(target, "__name__", target) in _DATA_CONSTRUCTORS and \
            any(_has_numpy_scalar(tx, a) for a in [*args, *kwargs.values()]):
        # (checked before _specialized turns a NumPy scalar input into a Python number)
        raise Unsupported(f"a NumPy scalar passed to torch.{getattr(target, '__name__', target)}() "
                          "(its dtype comes from NumPy)")
    args = [_specialized(tx, a) for a in args]
    kwargs = {k: _specialized(tx, v) for k, v in kwargs.items()}
    args, kwargs = number_arguments.explicit(tx, kind, target, args, kwargs)   # (a tensor where the op takes a number)
    state_fn = kind == "call_function" and _is_state_function(target, args, kwargs)
    if state_fn:
        _check_state_query(target)
    node_args, fake_args = zip(*[to_graph_arg(a) for a in args]) if args else ((), ())
    node_kwargs = {k: to_graph_arg(v)[0] for k, v in kwargs.items()}
    fake_kwargs = {k: to_graph_arg(v)[1] for k, v in kwargs.items()}
    if state_fn:
        return _call_state_query(tx, target, fake_args, fake_kwargs)
    if tx.ctx.inference_regions:
        from .inference import check_op
        check_op(tx, kind, target, args, kwargs)
    if kind == "call_method":
        def run():
            return getattr(fake_args[0], target)(*fake_args[1:], **fake_kwargs)
    else:
        def run():
            return target(*fake_args, **fake_kwargs)
    node, example = tx.ctx.graph.create_node(kind, target, tuple(node_args), node_kwargs, run)
    if kind == "call_function" and not _has_tensor((fake_args, fake_kwargs)) and \
            not _has_tensor(example):
        # A pure function without tensors (a Python helper of torch, an ATen
        # query such as torch.promote_types): its real answer, outside the
        # tracer's fake mode.
        tx.ctx.graph.erase(node)
        try:
            real = target(*fake_args, **fake_kwargs)
        except Exception as e:
            raise Unsupported(f"{getattr(target, '__name__', target)}() raised {type(e).__name__}: {e}")
        return _constant_or_fail(real, node)
    if isinstance(example, torch.Tensor):
        for a in (*args, *kwargs.values()):
            if isinstance(a, TensorValue) and a.fake is example:
                return a   # (the op returned this argument itself, as in eager: an in-place op)
    return wrap_example(tx, node, example)


def _check_no_new_leaf(target, flag: Value) -> None:
    """``torch.ones(3, requires_grad=True)`` (any op given
    ``requires_grad=True``) makes a new leaf of autograd.  A graph cannot make
    one mid-way: an autograd-aware backend (aot_eager, inductor) runs the
    graph inside one autograd function whose inputs are the graph's inputs,
    so results computed from the leaf would not reach it (no ``.grad``, a
    result that does not require grad).  As torch.compile does, the call runs
    as Python (a graph break): the leaf is then an input of the next graph."""
    if flag.is_python_constant() and not flag.as_python_constant():
        return
    name = getattr(target, "__name__", target)
    raise Unsupported(f"{name}(..., requires_grad=True) makes a new leaf tensor, which a graph cannot produce "
                      "mid-way (its gradient would not reach it)",
                      hint="the call runs as Python (a graph break, as torch.compile does); create the tensor "
                           "outside the compiled function, or without requires_grad")


def _inplace_view_name(kind: str, target: Any) -> str | None:
    """The name of the op if it changes its first argument's sizes, strides
    or storage in place (aten's ``inplace_view`` tag: ``unsqueeze_``,
    ``squeeze_``, ``t_``, ``transpose_``, ``swapdims_``, ``as_strided_``,
    ``resize_``, ``resize_as_``, ``set_``, ``detach_``), else None.  Method
    calls, ``torch.Tensor.<op>_``, ``torch.<op>_`` and ``torch.ops.aten``
    spellings all count."""
    if kind == "call_method":
        name = target if isinstance(target, str) else None
    else:
        packet = getattr(target, "_overloadpacket", None)   # (an aten OpOverload)
        name = getattr(packet if packet is not None else target, "__name__", None)
    if not isinstance(name, str) or not name.endswith("_") or name.startswith("_"):
        return None
    return name if name in _inplace_view_ops() else None


_INPLACE_VIEW_OPS: frozenset | None = None


def _inplace_view_ops() -> frozenset:
    global _INPLACE_VIEW_OPS
    if _INPLACE_VIEW_OPS is None:
        names = set()
        for name in ("squeeze_", "unsqueeze_", "swapdims_", "swapaxes_", "resize_", "resize_as_", "detach_",
                     "t_", "transpose_", "as_strided_", "set_", "sparse_resize_", "sparse_resize_and_clear_"):
            packet = getattr(torch.ops.aten, name, None)
            tagged = packet is None or any(torch.Tag.inplace_view in getattr(packet, o).tags
                                           for o in packet.overloads())
            if tagged:   # (every one of them on the torch versions armature supports; unknown ones count)
                names.add(name)
        _INPLACE_VIEW_OPS = frozenset(names)
    return _INPLACE_VIEW_OPS


def _check_no_input_metadata_mutation(kind: str, target: Any, t: "TensorValue") -> None:
    """``x.unsqueeze_(0)`` on a tensor from outside the frame changes the
    caller's tensor object itself (its sizes and strides), not only its data.
    A graph hands its inputs to the backend as they are at compile time and
    an autograd-aware backend replays metadata changes of inputs only in part
    (``squeeze_``, ``as_strided_`` come back unchanged under aot_eager), so
    the op runs as Python, as torch.compile does (a graph break): the next
    graph gets the tensor with its new shape, and the caller sees it.  On a
    tensor made in the frame the op stays in the graph."""
    name = _inplace_view_name(kind, target)
    if name is None:
        return
    raise Unsupported(f"Tensor.{name}() changes the shape or strides of {t.source}, a tensor from outside the "
                      "compiled function, in place",
                      hint="the call runs as Python (a graph break, as torch.compile does); to keep one graph, "
                           f"use the out-of-place form (x = x.{name[:-1]}(...)) instead")


# --- ``xs[torch.tensor(1)]``: a tensor the trace knows the value of, as an index -----

def known_value(v: Value) -> "int | float | bool | None":
    """What ``.item()`` reads from a 0-d real tensor whose value the trace
    knows: one made in the frame from known numbers (``torch.tensor(1)``,
    ``torch.div(h.size(1), 2 * w, rounding_mode="trunc")`` with static
    sizes), whose fake tensor carries its value (``FakeTensor.constant``:
    FakeTensorMode computes it for small tensors made from Python data and
    keeps it through the ops it runs on them, an in-place write through a
    view included, dropping it where it cannot).  Its inputs are constants
    of the trace, guarded as such, so it is eager's value on every call the
    entry serves.  None otherwise (a graph input, a value it lost)."""
    if not isinstance(v, TensorValue):
        return None
    c = getattr(v.fake, "constant", None)
    if not isinstance(c, torch.Tensor) or c.dim() != 0 or c.is_complex():
        return None
    return c.item()


def known_index(v: Value) -> int | None:
    """``operator.index(v)`` as eager computes it, for a 0-d integer tensor
    whose value the trace knows (:func:`known_value`); None otherwise: the
    indexing then runs natively at a graph break."""
    n = known_value(v)
    return int(n) if type(n) in (int, bool) else None   # (a bool tensor indexes as 0 or 1)


def _as_subclass(tx, args, kwargs) -> Value:
    from . import torch_function
    t = realize(tx.ctx, args[0])
    cls = args[1] if len(args) > 1 else kwargs.get("cls")
    if not isinstance(t, TensorValue) or cls is None or not realize(tx.ctx, cls).is_python_constant():
        raise Unsupported("Tensor.as_subclass() with these arguments")
    return torch_function.as_subclass(tx, t, realize(tx.ctx, cls).as_python_constant())


def _is_state_function(target, args: list[Value], kwargs: dict[str, Value]) -> bool:
    """A C function of torch outside ATen called without tensors: it reads or
    changes global state (ATen factories such as torch.zeros are not)."""
    from .torch_ops import is_aten_function
    if not isinstance(target, types.BuiltinFunctionType) or is_aten_function(target):
        return False
    return not any(_holds_tensor(v) for v in (*args, *kwargs.values()))


def _holds_tensor(v: Value) -> bool:
    if isinstance(v, TensorValue):
        return True
    return isinstance(v, (kinds.ListValue, kinds.TupleValue)) and any(_holds_tensor(i) for i in v.items)


def _check_state_query(target) -> None:
    """Only a query of global state runs while tracing; anything else may
    change it (``_push_on_torch_function_stack``, ``_vmap_increment_nesting``)
    and must run for real, at run time: a graph break."""
    from .torch_ops import is_state_query
    from . import saved_tensor_hooks
    saved_tensor_hooks.check(target)
    if not is_state_query(target):
        name = getattr(target, "__qualname__", None) or getattr(target, "__name__", str(target))
        raise Unsupported(f"torch function {name}() may change global state; armature does not run it "
                          "while tracing",
                          hint="without fullgraph the frame is split here (a graph break) and the call runs "
                               "as Python")


def _call_state_query(tx, target, args, kwargs) -> Value:
    """A query of global state (``torch._C._is_any_autocast_enabled()``,
    ``_len_torch_dispatch_stack()``): its real answer, outside the tracer's
    fake mode, guarded on every call."""
    from .torch_ops import IGNORED_STATE_FUNCTIONS
    if getattr(target, "__name__", "") in IGNORED_STATE_FUNCTIONS:
        return ConstantValue(None)
    try:
        real = target(*args, **kwargs)
    except Exception as e:
        raise Unsupported(f"{getattr(target, '__name__', target)}() raised {type(e).__name__}: {e}")
    value = _constant_or_fail(real, target)
    _guard_global_query(tx, target, args, kwargs, real)
    return value


def _has_tensor(obj) -> bool:
    if isinstance(obj, torch.Tensor):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_has_tensor(o) for o in obj)
    if isinstance(obj, dict):
        return any(_has_tensor(o) for o in obj.values())
    return False


def _guard_global_query(tx, fn, args, kwargs, result) -> None:
    from ...guards.guard import Guard, Kind
    consts = {"___q": fn, "___r": result}
    text_args = []
    for i, a in enumerate(args):
        consts[f"___a{i}"] = a
        text_args.append(f"___a{i}")
    for k, v in kwargs.items():
        consts[f"___k_{k}"] = v
        text_args.append(f"{k}=___k_{k}")
    name = getattr(fn, "__name__", str(fn))
    tx.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text=f"___q({', '.join(text_args)}) == ___r",
                            consts=consts, label=f"{name}() == {result!r}"))


def wrap_example(tx, node: torch.fx.Node, example: Any) -> Value:
    if isinstance(example, torch.Tensor):
        return tensor_result(tx.ctx, node, example)
    if isinstance(example, (torch.SymInt, torch.SymBool, torch.SymFloat)):
        return kinds.sym_value(tx.ctx, example, lambda: node)
    if isinstance(example, (tuple, list)) and any(isinstance(e, torch.SymInt) for e in example) and \
            not any(isinstance(e, torch.Tensor) for e in example):
        items = [kinds.sym_value(tx.ctx, e, _getitem_node(tx, node, i, e)) for i, e in enumerate(example)]
        cls = type(example)
        return kinds.ListValue(items) if cls is list else kinds.TupleValue(items, cls=cls)
    if isinstance(example, (tuple, list)) and any(isinstance(e, torch.Tensor) for e in example):
        items = []
        graph = tx.ctx.graph
        for i, e in enumerate(example):
            if isinstance(e, torch.Tensor):
                known = graph.tensor_value_of(e)
                if known is not None:
                    items.append(known)   # (an input returned as it is: ``torch.Tensor.add_`` in a tuple)
                    continue
                sub = graph.graph.create_node("call_function", operator.getitem, (node, i), {})
                sub.meta["example_value"] = e
                sub.meta["val"] = e
                items.append(_noted(graph, TensorValue(sub, e)))
            else:
                items.append(_constant_or_fail(e, node))
        if isinstance(example, list):
            return kinds.ListValue(items)
        return kinds.TupleValue(items, cls=type(example))  # tuple, namedtuple or torch.return_types
    # A non-tensor result (e.g. a torch.Size, a bool from torch.is_floating_point):
    # it is fully determined by guarded metadata, so fold it.  A None result
    # may be a mutation (setitem, an out= op): that node stays.
    if example is not None:
        tx.ctx.graph.erase(node)
    return _constant_or_fail(example, node)


def tensor_result(ctx, node: torch.fx.Node, fake: torch.Tensor) -> Value:
    """The Value of an op's tensor result: the Value that already stands for
    the same fake object when the op returned one of its inputs as it is (an
    in-place op, eager's identity: OutputGraph.tensor_value_of), else a new
    one.  The op's node stays in the graph (it may be the mutation); later
    uses read the input's node, which at run time is that same object."""
    known = ctx.graph.tensor_value_of(fake)
    if known is not None:
        return known
    return _noted(ctx.graph, TensorValue(node, fake))


def _noted(graph, value: "TensorValue") -> "TensorValue":
    graph.note_tensor_value(value)
    return value


def _getitem_node(tx, node, i, example):
    def make():
        sub = tx.ctx.graph.graph.create_node("call_function", operator.getitem, (node, i), {})
        sub.meta["example_value"] = example
        sub.meta["val"] = example
        return sub
    return make


def shape_value(ctx, t: TensorValue) -> Value:
    """``t.shape`` / ``t.size()``: a constant torch.Size, or a torch.Size of
    dynamic numbers where sizes are symbolic."""
    sizes = t.fake.size()
    if not any(isinstance(s, torch.SymInt) for s in sizes):
        return ConstantValue(torch.Size([int(s) for s in sizes]))
    from .symbolic import size_value
    return kinds.TupleValue([size_value(ctx, t, d) for d in range(len(sizes))], cls=torch.Size)


def size_value(ctx, t: TensorValue, dim: int) -> Value:
    from .symbolic import size_value as _size
    return _size(ctx, t, dim)


def meta_result(ctx, t: TensorValue, name: str, args, result) -> Value:
    """The answer of a metadata method (``numel()``, ``stride()``...): a
    constant, or dynamic numbers computed by a ``call_method`` node."""
    if isinstance(result, (torch.SymInt, torch.SymBool)):
        return kinds.sym_value(ctx, result, lambda: ctx.graph.create_node(
            "call_method", name, (t.node, *args), {}, lambda: result)[0])
    if isinstance(result, tuple) and any(isinstance(r, torch.SymInt) for r in result):
        items = []
        for i, r in enumerate(result):
            items.append(kinds.sym_value(ctx, r, _meta_item_node(ctx, t, name, args, i, r)))
        return kinds.TupleValue(items, cls=type(result))
    if isinstance(result, torch.Size):
        return ConstantValue(torch.Size([int(r) for r in result]))
    return ConstantValue(result)


def _meta_item_node(ctx, t, name, args, i, r):
    def make():
        whole = ctx.graph.create_node("call_method", name, (t.node, *args), {}, lambda: getattr(t.fake, name)(*args))[0]
        return ctx.graph.create_node("call_function", operator.getitem, (whole, i), {}, lambda: r)[0]
    return make


def user_error_len():
    from ...diagnostics.errors import user_error
    return user_error(TypeError, "len() of a 0-d tensor")


def _constant_or_fail(e: Any, node) -> Value:
    if isinstance(e, (int, float, bool, type(None), str, torch.dtype, torch.device, torch.Size,
                      torch.layout, torch.memory_format)) and not isinstance(e, torch.SymInt):
        return ConstantValue(e)
    if isinstance(e, (tuple, list)) and all(isinstance(i, (int, float, bool, type(None))) for i in e):
        return ConstantValue(e)
    what = getattr(node, "target", node)
    raise Unsupported(f"{getattr(what, '__name__', what)} returned {type(e).__name__}, which armature cannot "
                      "model yet")
