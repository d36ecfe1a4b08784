"""``numpy.ndarray`` (and NumPy scalars) inside the graph.

An :class:`NdarrayValue` is a graph tensor that the program holds as an
ndarray: the graph computes on the tensor through ``torch._numpy``
(targets.py), the Value carries the ndarray-ness (its Python type, NumPy's
operator and attribute semantics) and a shadow array (shadow.py) that says
what NumPy itself returns.  At the graph boundary the tensor is converted
back (``t.numpy()``; ``[()]`` where eager returns a NumPy scalar), so the
caller gets a real ``numpy.ndarray`` with eager's dtype.
"""
from __future__ import annotations

import operator

import torch

from ...diagnostics.errors import Unsupported
from ..base import Value, realize, concrete
from ..constant import INPLACE_TO_BINARY, ConstantValue
from ..tensors.tensor import TensorValue
from . import shadow as sh
from . import targets
from .. import kinds

_BREAK = "without fullgraph the frame is split here (a graph break) and NumPy runs it as Python"

#: ndarray attributes that are arrays computed from the array
_ARRAY_ATTRS = frozenset({"T", "real", "imag", "mT"})
#: attributes that depend on memory layout or expose memory: not modelled
_MEMORY_ATTRS = {
    "base": "ndarray.base depends on which array owns the memory",
    "flags": "ndarray.flags describes memory, which the graph does not fix",
    "data": "ndarray.data exposes memory", "ctypes": "ndarray.ctypes exposes memory",
    "__array_interface__": "the array interface exposes memory",
    "flat": "ndarray.flat is a flatiter object, which is not modelled",
}
#: methods that read values out of the array, or leave NumPy
_DATA_METHODS = {
    "item": "ndarray.item() reads a value out of the array",
    "tolist": "ndarray.tolist() reads values out of the array",
    "tobytes": "ndarray.tobytes() reads memory", "tostring": "ndarray.tostring() reads memory",
    "tofile": "ndarray.tofile() does I/O", "dump": "ndarray.dump() does I/O", "dumps": "ndarray.dumps()",
    "__array__": "ndarray.__array__()", "view": "ndarray.view() reinterprets memory",
    "__bool__": "bool() of an array depends on its data", "__int__": "int() of an array depends on its data",
    "__float__": "float() of an array depends on its data", "__index__": "an array as an index",
    "__len__": None, "__iter__": None,
}


class NdarrayValue(Value):
    """An ndarray (``scalar`` False) or a NumPy scalar (``scalar`` True: eager
    has ``np.float64``... where the graph has a 0-d tensor)."""

    def __init__(self, tensor: TensorValue, shadow, scalar: bool = False, source=None, layout_known=True):
        super().__init__(source)
        self.tensor = tensor
        self.shadow = shadow
        self.scalar = scalar
        #: whether the shadow's memory layout is eager's (False downstream
        #: of ``t.numpy()`` of a tensor with symbolic strides)
        self.layout_known = layout_known

    @property
    def fake(self) -> torch.Tensor:
        return self.tensor.fake

    def python_type(self):
        return type(self.shadow)

    # --- attributes -------------------------------------------------------
    def getattr(self, tx, name):
        if name in ("shape", "ndim", "size", "dtype", "itemsize", "nbytes"):
            return self._meta(name)
        if name == "strides":
            return self._strides()
        if name in _ARRAY_ATTRS and not self.scalar or name in ("real", "imag"):
            return node_call(tx, f"ndarray.{name}", targets.attr_target(name), [self], {},
                             lambda s: getattr(s, name))
        if name in _MEMORY_ATTRS:
            raise Unsupported(_MEMORY_ATTRS[name], hint=_BREAK)
        cls = type(self.shadow)
        attr = getattr(cls, name, None)
        if attr is None:
            from ...diagnostics.errors import user_error
            raise user_error(AttributeError, f"'{cls.__name__}' object has no attribute '{name}'")
        if callable(attr):
            return NdarrayMethodValue(self, name)
        raise Unsupported(f"attribute {name!r} of a {'NumPy scalar' if self.scalar else 'numpy.ndarray'}",
                          hint=_BREAK)

    def _meta(self, name):
        fake = self.fake
        if any(isinstance(s, torch.SymInt) for s in fake.shape) and name in ("shape", "size", "nbytes"):
            raise Unsupported(f"ndarray.{name} of an array with dynamic sizes", hint=_BREAK)
        if name == "shape":
            return ConstantValue(tuple(int(s) for s in fake.shape))
        if name == "dtype":
            return ConstantValue(self.shadow.dtype)
        return ConstantValue(getattr(self.shadow, name))

    def _strides(self):
        """NumPy's strides (bytes): the shadow's.  Shadows are laid out as
        what they stand for (inputs: the array's guarded strides; ``t.numpy()``:
        the tensor's) and NumPy itself computed every later one, so its
        layout is eager's, which torch._numpy's (the graph's) need not be."""
        if self.scalar:
            return ConstantValue(())
        if not (self.layout_known and sh.layout_known(self.fake)):
            raise Unsupported("ndarray.strides of an array with dynamic sizes", hint=_BREAK)
        return ConstantValue(tuple(self.shadow.strides))

    def call_method(self, tx, name, args, kwargs):
        return NdarrayMethodValue(self, name).call(tx, args, kwargs)

    # --- protocols ---------------------------------------------------------
    def getitem(self, tx, index):
        if self.scalar:
            raise Unsupported("indexing a NumPy scalar", hint=_BREAK)
        return node_call(tx, "ndarray indexing", targets.operator_target(operator.getitem), [self, index], {},
                         operator.getitem)

    def setitem(self, tx, index, value):
        if self.scalar:
            from ...diagnostics.errors import user_error
            raise user_error(TypeError, f"'{type(self.shadow).__name__}' object does not support item assignment")
        node_call(tx, "ndarray item assignment", targets.operator_target(operator.setitem),
                  [self, index, value], {}, operator.setitem)

    def length(self, tx):
        if self.fake.dim() == 0:
            from ...diagnostics.errors import user_error
            raise user_error(TypeError, "len() of unsized object")
        n = self.fake.shape[0]
        if isinstance(n, torch.SymInt):
            raise Unsupported("len() of an array with a dynamic size", hint=_BREAK)
        return int(n)

    def unpack(self, tx):
        return [self.getitem(tx, ConstantValue(i)) for i in range(self.length(tx))]

    def truth(self, tx):
        raise Unsupported("the truth value of a NumPy array depends on its data (data-dependent control flow)",
                          hint=_BREAK)

    def contains(self, tx, item):
        raise Unsupported("`in` on a NumPy array depends on its data", hint=_BREAK)

    # --- residual code -----------------------------------------------------
    def reconstruct(self, out):
        if self.source is not None:
            self.source.emit(out)
            return
        out.instr("PUSH_NULL")
        out.load_const(targets.tensor_to_numpy_scalar if self.scalar else targets.tensor_to_ndarray)
        out.reconstruct(self.tensor)
        out.call(1)
        if not self.scalar:
            # one object however often it is rebuilt (``return a, a``)
            t = out.new_temp()
            out.instr("COPY", 1)
            out.instr("STORE_FAST", t.name)
            out._temps[id(self)] = t.name
            out._keep.append(self)

    def __repr__(self):
        kind = "numpy scalar" if self.scalar else "ndarray"
        src = f" {self.source}" if self.source is not None else ""
        return f"<{kind}{src} {tuple(self.fake.shape)} {self.shadow.dtype}>"


class NdarrayMethodValue(Value):
    def __init__(self, arr: NdarrayValue, name: str):
        super().__init__()
        self.arr, self.name = arr, name

    def call(self, tx, args, kwargs):
        name, arr = self.name, self.arr
        if name in _DATA_METHODS:
            reason = _DATA_METHODS[name]
            if reason is None:   # __len__ / __iter__ called by name
                return ConstantValue(arr.length(tx)) if name == "__len__" else _unsupported_iter()
            raise Unsupported(reason, hint=_BREAK)
        if name == "astype":
            dt = realize(tx.ctx, args[0] if args else kwargs.get("dtype", ConstantValue(None)))
            if not dt.is_python_constant() or sh.dtype_name(dt.as_python_constant()) is None:
                raise Unsupported(f"ndarray.astype({dt}): only NumPy numeric dtypes are modelled", hint=_BREAK)
        from torch._numpy import ndarray as tnp_ndarray
        if not hasattr(tnp_ndarray, name):
            raise Unsupported(f"ndarray.{name}() has no counterpart in torch._numpy", hint=_BREAK)
        return node_call(tx, f"ndarray.{name}()", targets.method_target(name), [arr, *args], kwargs,
                         lambda s, *a, **k: getattr(s, name)(*a, **k))

    def reconstruct(self, out):
        # a break at the call (``a.sum().item()``): the array, then its method
        out.reconstruct(self.arr)
        out.instr("LOAD_ATTR", self.name)

    def __repr__(self):
        return f"<method ndarray.{self.name} of {self.arr}>"


def _unsupported_iter():
    raise Unsupported("calling ndarray.__iter__() by name", hint=_BREAK)


# --- arguments -------------------------------------------------------------------

def graph_args(tx, v: Value):
    """(node argument, fake argument, shadow argument) of a Value passed to
    NumPy code.  Tensors reach the graph as ndarrays only; a torch.Tensor
    passed to NumPy is not modelled (eager converts it through __array__)."""
    v = concrete(tx, v)
    np = sh.np()
    if isinstance(v, NdarrayValue):
        return v.tensor.node, v.fake, v.shadow
    if isinstance(v, TensorValue):
        raise Unsupported("a torch.Tensor passed to NumPy code (eager converts it with __array__, leaving torch)",
                          hint="convert it explicitly with t.numpy(), or " + _BREAK)
    if isinstance(v, (kinds.TupleValue, kinds.ListValue)):
        if isinstance(v, kinds.TupleValue) and v.cls is not tuple:
            raise Unsupported(f"a {v.cls.__name__} passed to NumPy code", hint=_BREAK)
        parts = [graph_args(tx, i) for i in v.items]
        kind = tuple if isinstance(v, kinds.TupleValue) else list
        return tuple(kind(p[i] for p in parts) for i in range(3))
    if isinstance(v, kinds.SliceValue):
        parts = [graph_args(tx, i) for i in (v.start, v.stop, v.step)]
        return tuple(slice(*(p[i] for p in parts)) for i in range(3))
    if v.is_python_constant():
        c = v.as_python_constant()
        name = sh.dtype_name(c)
        if name is not None:
            return name, name, c
        if isinstance(c, np.generic):
            s = constant_scalar(tx, c)
            return s.tensor.node, s.fake, s.shadow
        if isinstance(c, (tuple, list)):
            return graph_args(tx, _constant_tree(c))
        if c is None or c is Ellipsis or type(c) in (int, float, bool, complex, str, slice):
            return c, c, c
        raise Unsupported(f"a {type(c).__name__} passed to NumPy code", hint=_BREAK)
    raise Unsupported(f"{v} passed to NumPy code", hint=_BREAK)


def _constant_tree(c):
    items = [_constant_tree(i) if isinstance(i, (tuple, list)) else ConstantValue(i) for i in c]
    return kinds.TupleValue(items) if type(c) is tuple else kinds.ListValue(items)


def constant_scalar(tx, c) -> NdarrayValue:
    """A NumPy scalar constant (``np.float32(2)``, ``np.finfo(...).eps``) met
    by NumPy code: a 0-d tensor of its dtype in the graph."""
    td = sh.torch_dtype_of(c.dtype)
    if td is None:
        raise Unsupported(f"a NumPy scalar of dtype {c.dtype} in NumPy code", hint=_BREAK)
    value = c.item()
    node, fake = tx.ctx.graph.create_node("call_function", torch.tensor, (value,), {"dtype": td},
                                          lambda: torch.tensor(value, dtype=td))
    return NdarrayValue(TensorValue(node, fake), c, scalar=True)


# --- nodes -----------------------------------------------------------------------

def _fake_tensors(obj, out):
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _fake_tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _fake_tensors(o, out)
    elif isinstance(obj, slice):
        _fake_tensors([obj.start, obj.stop, obj.step], out)
    return out


def node_call(tx, what: str, target, args: list[Value], kwargs: dict[str, Value], numpy_fn) -> Value:
    """One NumPy operation: a graph node computing it through torch._numpy,
    checked against NumPy run on the shadows (``numpy_fn`` takes shadows)."""
    conv = [graph_args(tx, a) for a in args]
    kconv = {k: graph_args(tx, v) for k, v in kwargs.items()}
    node_args = tuple(c[0] for c in conv)
    fake_args = tuple(c[1] for c in conv)
    shadow_args = tuple(c[2] for c in conv)
    node_kwargs = {k: c[0] for k, c in kconv.items()}
    fake_kwargs = {k: c[1] for k, c in kconv.items()}
    shadow_kwargs = {k: c[2] for k, c in kconv.items()}
    fakes = _fake_tensors((fake_args, fake_kwargs), [])
    layout_known = all(_layouts_known(tx, a) for a in [*args, *kwargs.values()])
    result = sh.run(what, numpy_fn, *shadow_args, **shadow_kwargs)
    if not fakes and _is_constant_result(result):
        # NumPy on constants only (``np.sum([1, 2, 3])``, ``np.sqrt(2.0)``):
        # the shadow run was the real computation, and its answer is immutable
        return ConstantValue(result)
    versions = [f._version for f in fakes]
    graph = tx.ctx.graph
    node, example = graph.create_node("call_function", target, node_args, node_kwargs,
                                      lambda: target(*fake_args, **fake_kwargs))
    if any(f._version != v for f, v in zip(fakes, versions)):
        graph.mutates = True   # an in-place write (a[i] = v, a += 1, out=, ndarray.fill...)
    return wrap_result(tx, what, node, example, result, layout_known)


def _layouts_known(tx, v) -> bool:
    v = realize(tx.ctx, v)
    if isinstance(v, NdarrayValue):
        return v.layout_known
    if isinstance(v, (kinds.TupleValue, kinds.ListValue)):
        return all(_layouts_known(tx, i) for i in v.items)
    return True


def _is_constant_result(r) -> bool:
    np = sh.np()
    if isinstance(r, np.generic):
        return sh.torch_dtype_of(r.dtype) is not None
    if type(r) in (int, float, bool, complex, type(None)):
        return True
    return type(r) is tuple and all(_is_constant_result(i) for i in r)


def wrap_result(tx, what, node, example, shadow, layout_known=True) -> Value:
    if isinstance(example, torch.Tensor):
        scalar = sh.check(what, example, shadow)
        return NdarrayValue(TensorValue(node, example), shadow, scalar, layout_known=layout_known)
    if isinstance(example, (tuple, list)) and any(isinstance(e, torch.Tensor) for e in example):
        if type(shadow) not in (tuple, list) or len(shadow) != len(example):
            raise Unsupported(f"{what} returns a {type(shadow).__name__} in NumPy and a "
                              f"{type(example).__name__} in torch._numpy", hint=_BREAK)
        items = []
        for i, (e, s) in enumerate(zip(example, shadow)):
            if isinstance(e, torch.Tensor):
                sub = tx.ctx.graph.graph.create_node("call_function", operator.getitem, (node, i), {})
                sub.meta["example_value"] = e
                sub.meta["val"] = e
                items.append(wrap_result(tx, what, sub, e, s, layout_known))
            else:
                items.append(_constant_result(what, e, s))
        return kinds.ListValue(items) if type(shadow) is list else kinds.TupleValue(items)
    if example is None:   # (an in-place operator: a[i] = v)
        return ConstantValue(None)
    tx.ctx.graph.erase(node)
    return _constant_result(what, example, shadow)


def _constant_result(what, example, shadow) -> Value:
    if isinstance(example, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        raise Unsupported(f"{what} returns a dynamic number", hint=_BREAK)
    if not (type(example) is type(shadow) and example == shadow):
        raise Unsupported(f"{what} returns {shadow!r} in NumPy and {example!r} in torch._numpy", hint=_BREAK)
    return ConstantValue(example)


# --- operators (values/operations/operators.py asks these first) ------------------------------

def is_numpy_operand(v) -> bool:
    return isinstance(v, NdarrayValue)


def binary(tx, op, a: Value, b: Value) -> Value:
    base = INPLACE_TO_BINARY.get(op, op)
    if op is not base and isinstance(a, NdarrayValue) and not a.scalar:
        node_call(tx, f"operator {op.__name__}", targets.operator_target(op), [a, b], {},
                  lambda x, y: op(x, y))
        return a
    return node_call(tx, f"operator {base.__name__}", targets.operator_target(base), [a, b], {}, base)


def unary(tx, op, a: Value) -> Value:
    if op is operator.not_:
        return ConstantValue(not a.truth(tx))
    return node_call(tx, f"operator {op.__name__}", targets.operator_target(op), [a], {}, op)


def compare(tx, op, a: Value, b: Value) -> Value:
    return node_call(tx, f"comparison {op.__name__}", targets.operator_target(op), [a, b], {}, op)
