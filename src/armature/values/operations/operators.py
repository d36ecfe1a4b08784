"""Python operators on Values: one rule per operand kind, tried in order.

Tensors go to the graph, constants fold, containers follow CPython's
sequence/dict semantics; anything else is Unsupported.
"""
from __future__ import annotations

import operator
from typing import Callable

import torch

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Guard, Kind
from ..base import Value, concrete, realize
from ..constant import INPLACE_TO_BINARY, ConstantValue
from ..containers.containers import DictValue, ListValue, TupleValue, _Sequence, is_constant_tree
from ..numpy import ndarray as numpy_ops
from ..numpy import is_ndarray_value
from ..tensors.tensor import TensorValue, graph_call
from ..builder import wrap_constant_result
from .. import kinds
from .runtime_text import RuntimeTextValue

_INPLACE = frozenset(INPLACE_TO_BINARY)
_SET_OPS = (operator.or_, operator.and_, operator.sub, operator.xor)


def _fold(op: Callable, *args):
    try:
        return op(*args)
    except Exception as e:
        raise folded_exception(op, e) from None


def folded_exception(op, e: Exception) -> Exception:
    """What the trace raises when folding a pure builtin on constants raised
    ``e``: the same exception, as the program would see it (catchable by its
    own try/except), for builtin exception types; otherwise Unsupported."""
    from ...diagnostics.errors import UserException
    if type(e).__module__ == "builtins" and not isinstance(e, (RecursionError, MemoryError)):
        return UserException(type(e), *e.args)
    return Unsupported(f"{getattr(op, '__name__', op)} raised {type(e).__name__}: {e} while tracing",
                       hint="the original code will raise it; this frame runs eagerly")


_DUNDERS = {
    operator.add: ("__add__", "__radd__"), operator.sub: ("__sub__", "__rsub__"),
    operator.mul: ("__mul__", "__rmul__"), operator.truediv: ("__truediv__", "__rtruediv__"),
    operator.floordiv: ("__floordiv__", "__rfloordiv__"), operator.mod: ("__mod__", "__rmod__"),
    operator.pow: ("__pow__", "__rpow__"), operator.matmul: ("__matmul__", "__rmatmul__"),
    operator.and_: ("__and__", "__rand__"), operator.or_: ("__or__", "__ror__"),
    operator.xor: ("__xor__", "__rxor__"), operator.lshift: ("__lshift__", "__rlshift__"),
    operator.rshift: ("__rshift__", "__rrshift__"),
}
_SYMBOLS = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
            operator.floordiv: "//", operator.mod: "%", operator.pow: "** or pow()", operator.matmul: "@",
            operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<",
            operator.rshift: ">>"}
_COMPARE_DUNDERS = {operator.eq: ("__eq__", "__eq__"), operator.ne: ("__ne__", "__ne__"),
                    operator.lt: ("__lt__", "__gt__"), operator.le: ("__le__", "__ge__"),
                    operator.gt: ("__gt__", "__lt__"), operator.ge: ("__ge__", "__le__")}


def _not_implemented(v: Value) -> bool:
    return isinstance(v, ConstantValue) and v.value is NotImplemented


def _call_dunder(tx, obj, name, *args):
    if not isinstance(obj, kinds.ObjectValue):
        return None
    m = obj.dunder(tx, name)
    if m is None:
        return None
    res = m.call(tx, list(args), {})
    return None if _not_implemented(res) else res


def _object_binary(tx, op, a, b):
    """CPython's binary-operator protocol for user objects: the in-place
    method, then ``a.__op__(b)``, then ``b.__rop__(a)`` (the reflected one
    first when b's type is a subclass of a's that overrides it)."""
    base = INPLACE_TO_BINARY.get(op, op)
    if base not in _DUNDERS:
        raise Unsupported(f"operator {base.__name__} on user objects")
    name, rname = _DUNDERS[base]
    if op is not base:
        res = _call_dunder(tx, a, "__i" + name[2:], b)
        if res is not None:
            return res
    ta, tb = a.python_type(), b.python_type()
    order = [(a, name, b), (b, rname, a)]
    if tb is not ta and issubclass(tb, ta) and rname in tb.__dict__:
        order.reverse()
    for obj, meth, other in order:
        if obj is b and ta is tb and meth == rname:
            continue  # same type: the reflected method is not tried
        res = _call_dunder(tx, obj, meth, other)
        if res is not None:
            return res
    raise user_error(TypeError, f"unsupported operand type(s) for {_SYMBOLS[base]}: "
                                f"'{ta.__name__}' and '{tb.__name__}'")


def _numpy_scalar_meeting_a_tensor(tx, a: Value, b: Value) -> tuple[Value, Value]:
    """``t * s`` / ``s * t`` with ``s`` a NumPy scalar input and ``t`` a
    tensor: eager runs the tensor's operator (the scalar's defers to it), with
    ``s`` as a Python number (values/numpy.scalar_input_as_number)."""
    from ..numpy import scalar_input_as_number
    from ..tensors.tensor import TensorValue
    if isinstance(realize(tx.ctx, b), TensorValue):
        a = scalar_input_as_number(tx.ctx, a) or a
    elif isinstance(realize(tx.ctx, a), TensorValue):
        b = scalar_input_as_number(tx.ctx, b) or b
    return a, b


def _text_binary(op, a: Value, b: Value) -> Value:
    """``+`` and ``* n`` of text holding an object's address
    (values/operations/runtime_text.py); anything else needs its characters."""
    base = INPLACE_TO_BINARY.get(op, op)
    text, other = (a, b) if isinstance(a, RuntimeTextValue) else (b, a)
    out = None
    if base is operator.add:
        out = text.concat(other, text is b)
    elif base is operator.mul:
        out = text.repeat(other)
    if out is None:
        raise text.unknown(f"operator {getattr(base, '__name__', base)}")
    return out


def binary_op(tx, op: Callable, a: Value, b: Value) -> Value:
    a, b = realize(tx.ctx, a), realize(tx.ctx, b)
    if is_ndarray_value(a) or is_ndarray_value(b):
        a, b = _numpy_scalar_meeting_a_tensor(tx, a, b)
    if is_ndarray_value(a) or is_ndarray_value(b):
        return numpy_ops.binary(tx, op, a, b)
    if isinstance(a, RuntimeTextValue) or isinstance(b, RuntimeTextValue):
        return _text_binary(op, a, b)
    if isinstance(a, kinds.DictViewValue):
        return a.binary(tx, INPLACE_TO_BINARY.get(op, op), b, False)
    if isinstance(b, kinds.DictViewValue):
        return b.binary(tx, op, a, True)
    if isinstance(a, kinds.SetValue) and isinstance(b, kinds.SetValue) and not (a.is_python_constant() and b.is_python_constant()):
        return a.binary(tx, op, b)
    if isinstance(a, kinds.ObjectValue) or isinstance(b, kinds.ObjectValue):
        return _object_binary(tx, op, a, b)
    if INPLACE_TO_BINARY.get(op, op) is operator.mod and isinstance(a, ConstantValue) and type(a.value) is str:
        from .deferred_text import percent   # ("%d" % n, n symbolic: formatted at run time)
        formatted = percent(tx, a, b)
        if formatted is not None:
            return formatted
    if isinstance(a, kinds.SymbolicNumberValue) or isinstance(b, kinds.SymbolicNumberValue):
        out = a.binary(tx, op, b, False) if isinstance(a, kinds.SymbolicNumberValue) else None
        if out is None and isinstance(b, kinds.SymbolicNumberValue) and not isinstance(a, TensorValue):
            out = b.binary(tx, op, a, True)
        if out is not None:
            return out
        from ..tensors.symbolic import as_graph_input
        if isinstance(a, kinds.SymbolicNumberValue):
            t = as_graph_input(tx, a, b, op)
            if t is not None:
                return graph_call(tx, "call_function", INPLACE_TO_BINARY.get(op, op), [t, b], {})
        if isinstance(b, kinds.SymbolicNumberValue):
            t = as_graph_input(tx, b, a, op)
            if t is not None:
                if op in _INPLACE and isinstance(a, TensorValue):
                    graph_call(tx, "call_function", op, [a, t], {})
                    return a
                return graph_call(tx, "call_function", INPLACE_TO_BINARY.get(op, op), [a, t], {})
        dynamic = [v for v in (a, b) if isinstance(v, kinds.SymbolicNumberValue) and v.sym is not None]
        if not (dynamic and (isinstance(a, TensorValue) or isinstance(b, TensorValue))):
            a, b = concrete(tx, a), concrete(tx, b)   # (a dynamic int meets a tensor as a SymInt)
    if isinstance(a, TensorValue) or isinstance(b, TensorValue):
        if op in _INPLACE and isinstance(a, TensorValue):
            graph_call(tx, "call_function", op, [a, b], {})
            return a
        return graph_call(tx, "call_function", INPLACE_TO_BINARY.get(op, op), [a, b], {})
    if isinstance(a, ConstantValue) and isinstance(b, ConstantValue):
        return wrap_constant_result(_fold(op, a.value, b.value))
    base = INPLACE_TO_BINARY.get(op, op)
    if isinstance(a, _Sequence) and isinstance(b, _Sequence) and base is operator.add:
        if isinstance(a, ListValue) and isinstance(b, ListValue):
            if op is operator.iadd:
                a.method(tx, "extend", [b], {})
                return a
            return ListValue(a.items + b.items)
        if isinstance(a, TupleValue) and isinstance(b, TupleValue) and a.cls is tuple and b.cls is tuple:
            return TupleValue(a.items + b.items)
    if base is operator.add:
        joined = _concat_sizes(a, b)
        if joined is not None:
            return joined
    if isinstance(a, ListValue) and op is operator.iadd:
        a.method(tx, "extend", [b], {})
        return a
    if base is operator.mul:
        seq, n = (a, b) if isinstance(a, _Sequence) else (b, a)
        if isinstance(seq, _Sequence) and isinstance(n, ConstantValue) and isinstance(n.value, int):
            if isinstance(seq, ListValue) and op is operator.imul and seq is a:
                seq._check_mutable(tx)
                seq.items[:] = seq.items * n.value
                return seq
            if isinstance(seq, ListValue):
                return ListValue(seq.items * n.value)
            size = isinstance(seq, TupleValue) and seq.cls is torch.Size   # (torch.Size * n is a torch.Size)
            return TupleValue(seq.items * n.value, cls=torch.Size if size else tuple)
    if base is operator.or_ and type(a) is DictValue and type(b) is DictValue and a.cls is dict and b.cls is dict:
        if op is operator.ior:
            a.method(tx, "update", [b], {})
            return a
        return DictValue({**a.items, **b.items})
    if isinstance(a, kinds.SetValue) and base in _SET_OPS:
        other = b.as_python_constant()
        if not isinstance(other, (set, frozenset)):
            raise user_error(TypeError, f"unsupported operand type(s) for {base.__name__}: 'set' and "
                                        f"'{type(other).__name__}'")
        if op is not base:  # |= &= -= ^= mutate the set
            a._check_mutable(tx)
            op(a.items, other)
            a.recipe = None   # (a constant operand's own table is not modelled)
            return a
        return kinds.SetValue(base(a.items, other))
    if is_constant_tree(a) and is_constant_tree(b):
        return wrap_constant_result(_fold(op, a.as_python_constant(), b.as_python_constant()))
    if base is operator.mod:
        from .strings import percent_format   # ("%(k)s" % {"k": v})
        formatted = percent_format(tx, a, b)
        if formatted is not None:
            return formatted
    ca, cb = _specialize_tree(tx, a), _specialize_tree(tx, b)
    if (ca is not a or cb is not b) and is_constant_tree(ca) and is_constant_tree(cb):
        # symbolic numbers inside (``size[:-1] + (self.nf,)``): use their values
        return wrap_constant_result(_fold(op, ca.as_python_constant(), cb.as_python_constant()))
    raise Unsupported(f"operator {getattr(base, '__name__', base)} on {a} and {b}")


def _size_items(v: Value):
    """(items, is_size) of a tuple or torch.Size, symbolic items included."""
    if isinstance(v, TupleValue) and v.cls in (tuple, torch.Size):
        return v.items, v.cls is torch.Size
    if isinstance(v, ConstantValue) and type(v.value) in (tuple, torch.Size):
        return [ConstantValue(i) for i in v.value], type(v.value) is torch.Size
    return None


def _concat_sizes(a: Value, b: Value) -> Value | None:
    """``size[:-1] + (self.nf,)``, ``(-1,) + shape[1:]``: concatenating
    tuples and torch.Sizes keeps dynamic sizes symbolic.  A torch.Size on
    either side makes a torch.Size (its ``__add__`` and ``__radd__``)."""
    left, right = _size_items(a), _size_items(b)
    if left is None or right is None:
        return None
    return TupleValue(left[0] + right[0], cls=torch.Size if left[1] or right[1] else tuple)


def _specialize_tree(tx, v: Value) -> Value:
    """``v`` with lazy values realized and symbolic numbers specialised,
    inside tuples and lists too (a new container only if something changed)."""
    v = concrete(tx, v)
    if isinstance(v, TupleValue) or type(v) is ListValue:
        items = [_specialize_tree(tx, i) for i in v.items]
        if any(a is not b for a, b in zip(items, v.items)):
            return TupleValue(items, cls=v.cls) if isinstance(v, TupleValue) else ListValue(items)
    return v


def unary_op(tx, op: Callable, a: Value) -> Value:
    from ..tensors.symbolic import symbolic_call
    sym = symbolic_call(tx.ctx, op, [realize(tx.ctx, a)])
    if sym is not None:
        return sym
    a = concrete(tx, a)
    if is_ndarray_value(a):
        return numpy_ops.unary(tx, op, a)
    if isinstance(a, kinds.ObjectValue) and op is not operator.not_:
        name = {operator.neg: "__neg__", operator.pos: "__pos__", operator.invert: "__invert__"}[op]
        res = _call_dunder(tx, a, name)
        if res is None:
            raise user_error(TypeError, f"bad operand type for unary {name}: '{a.python_type().__name__}'")
        return res
    if op is operator.not_:
        if isinstance(a, kinds.DeferredTruth):
            return a.negate()
        return ConstantValue(not a.truth(tx))
    if isinstance(a, TensorValue):
        return graph_call(tx, "call_function", op, [a], {})
    if isinstance(a, ConstantValue):
        return ConstantValue(_fold(op, a.value))
    raise Unsupported(f"operator {op.__name__} on {a}")


def compare_op(tx, op: Callable, a: Value, b: Value) -> Value:
    from ..tensors.symbolic import symbolic_compare
    ra, rb = realize(tx.ctx, a), realize(tx.ctx, b)
    if isinstance(ra, kinds.SymbolicNumberValue) or isinstance(rb, kinds.SymbolicNumberValue):
        res = symbolic_compare(tx.ctx, op, ra, rb)
        if res is not None:
            return res
    a, b = concrete(tx, a), concrete(tx, b)
    if is_ndarray_value(a) or is_ndarray_value(b):
        a, b = _numpy_scalar_meeting_a_tensor(tx, a, b)
    if is_ndarray_value(a) or is_ndarray_value(b):
        return numpy_ops.compare(tx, op, a, b)
    from .identity import compare as compare_ids
    ids = compare_ids(tx, op, a, b)   # (id(a) == id(b))
    if ids is not None:
        return ids
    if isinstance(a, kinds.ObjectValue) or isinstance(b, kinds.ObjectValue):
        name, rname = _COMPARE_DUNDERS[op]
        res = _call_dunder(tx, a, name, b)
        if res is None:
            res = _call_dunder(tx, b, rname, a)
        if res is not None:
            return res
        # object's __eq__: identity (two inputs that are one object on another
        # call are guarded apart: is_same)
        if op is operator.eq:
            return ConstantValue(is_same(tx, a, b))
        if op is operator.ne:
            return ConstantValue(not is_same(tx, a, b))
        raise user_error(TypeError, f"'{op.__name__}' not supported between instances of "
                                    f"'{a.python_type().__name__}' and '{b.python_type().__name__}'")
    if isinstance(a, TensorValue) or isinstance(b, TensorValue):
        return graph_call(tx, "call_function", op, [a, b], {})
    if op in (operator.eq, operator.ne) and not (a.is_python_constant() and b.is_python_constant()):
        from .sequence_compare import equality
        seq = equality(tx, op, a, b)
        if seq is not None:
            return seq
        eq = values_equal(tx, a, b)
        return ConstantValue(eq if op is operator.eq else not eq)
    if a.is_python_constant() and b.is_python_constant():
        return ConstantValue(_fold(op, a.as_python_constant(), b.as_python_constant()))
    from .sequence_compare import compare_sequences
    ordered = compare_sequences(tx, op, a, b)   # (x.size() < (n, 4) with symbolic items)
    if ordered is not None:
        return ordered
    raise Unsupported(f"comparison {op.__name__} of {a} and {b}")


def is_same(tx, a: Value, b: Value) -> bool:
    """``a is b``.  The builder wraps each real object once per trace, so two
    distinct non-constant Values are two distinct objects."""
    a, b = realize(tx.ctx, a), realize(tx.ctx, b)
    if a is b:
        return True
    from ..nn.modules import is_generic_module_source
    if any(isinstance(v, kinds.ModuleValue) and v.source is not None and is_generic_module_source(tx.ctx, v.source)
           for v in (a, b)):
        # a module guarded by type only (one entry for every instance): that
        # it is not the other object must be guarded
        if a.source is None or b.source is None:
            raise Unsupported("`is` between a module passed in as any instance of its class and an object "
                              "made in the frame")
        tx.ctx.guards.add(Guard(Kind.DISTINCT, None, [a.source, b.source]))
        return False
    for x, y in ((a, b), (b, a)):
        if isinstance(x, kinds.InstanceDictValue):
            # ``obj.__dict__`` is not wrapped once like other real objects
            if isinstance(y, kinds.InstanceDictValue):
                return x._live() is y._live()
            if issubclass(y.python_type(), dict):
                raise Unsupported("`is` between an instance __dict__ and another dict")
            return False
    ca, cb = a.is_python_constant(), b.is_python_constant()
    if ca and cb and isinstance(a, ConstantValue) and isinstance(b, ConstantValue):
        return a.value is b.value
    if isinstance(a, (kinds.ListValue, DictValue, kinds.SetValue, kinds.ObjectValue)) or \
            isinstance(b, (kinds.ListValue, DictValue, kinds.SetValue, kinds.ObjectValue)):
        _guard_distinct_inputs(tx, a, b)
        return False  # distinct Values of mutable objects are distinct objects
    if ca and cb:
        return a.as_python_constant() is b.as_python_constant()
    if ca != cb and (ca and a.as_python_constant() is None or cb and b.as_python_constant() is None):
        return False
    if ca != cb:
        # a constant str/bytes/number is never an object of another type
        c, other = (a, b) if ca else (b, a)
        if isinstance(c, ConstantValue) and type(c.value) in (int, float, bool, str, bytes, complex) \
                and not isinstance(other, kinds.SymbolicNumberValue) and other.python_type() is not type(c.value):
            return False
    if not ca and not cb:
        _guard_distinct_inputs(tx, a, b)
        return False
    raise Unsupported(f"identity comparison of {a} and {b}")


def _guard_distinct_inputs(tx, a: Value, b: Value) -> None:
    """Two objects from outside the frame that the trace saw as two Values
    (so as distinct objects) must stay distinct on later calls: ``x is y``
    was False because they were, not by construction."""
    from .identity import made_per_call
    if a.source is not None and b.source is not None and not made_per_call(a.source) \
            and not made_per_call(b.source):
        from ...guards.guard import Guard, Kind
        tx.ctx.guards.add(Guard(Kind.DISTINCT, None, [a.source, b.source]))


def values_equal(tx, a: Value, b: Value) -> bool:
    """``a == b`` as ``PyObject_RichCompareBool`` answers it (identity
    first): for containers' equality, ``in`` and ``==`` of containers."""
    a, b = realize(tx.ctx, a), realize(tx.ctx, b)
    if a is b:  # PyObject_RichCompareBool's identity shortcut (tensors included)
        return True
    if isinstance(a, kinds.SymbolicNumberValue) or isinstance(b, kinds.SymbolicNumberValue):
        # two numbers: the outcome is guarded, the numbers stay symbolic
        from ..tensors.symbolic import symbolic_compare
        res = symbolic_compare(tx.ctx, operator.eq, a, b)
        if res is not None:
            return res.truth(tx)
    a, b = concrete(tx, a), concrete(tx, b)
    from .identity import compare as compare_ids
    ids = compare_ids(tx, operator.eq, a, b)   # (id(a) in [id(b), ...])
    if ids is not None:
        return ids.value
    if isinstance(a, kinds.ObjectValue) or isinstance(b, kinds.ObjectValue):
        # a user object's own __eq__ (reflected too), inside `in` and sequence equality as well
        return compare_op(tx, operator.eq, a, b).truth(tx)
    if isinstance(a, (kinds.DictViewValue, kinds.InstanceDictValue)):
        return a.equals(tx, b)
    if isinstance(b, (kinds.DictViewValue, kinds.InstanceDictValue)):
        return b.equals(tx, a)
    if a.is_python_constant() and b.is_python_constant():
        return bool(_fold(operator.eq, a.as_python_constant(), b.as_python_constant()))
    if isinstance(a, TensorValue) or isinstance(b, TensorValue):
        if a.is_python_constant() and a.as_python_constant() is None or \
                b.is_python_constant() and b.as_python_constant() is None:
            return False
        raise Unsupported("== between tensors inside a container comparison depends on tensor data")
    from .sequence_compare import sequences_equal
    seq = sequences_equal(tx, a, b)   # (a constant sequence too, item by item)
    if seq is not None:
        return seq
    if a.is_python_constant() != b.is_python_constant():
        return False
    raise Unsupported(f"equality of {a} and {b}")


def contains(tx, item: Value, container: Value) -> bool:
    item, container = concrete(tx, item), realize(tx.ctx, container)
    if isinstance(container, (DictValue, kinds.SetValue)):
        return container.method(tx, "__contains__", [item], {}).value
    if isinstance(container, _Sequence):
        return any(values_equal(tx, item, x) for x in container.items)
    if hasattr(container, "contains"):
        return container.contains(tx, item)
    if isinstance(container, kinds.ObjectValue):
        m = container.dunder(tx, "__contains__")
        if m is not None:
            return m.call(tx, [item], {}).truth(tx)
        return any(values_equal(tx, item, v) for v in tx.iterate(container))
    if isinstance(container, ConstantValue):
        if type(container.value) in (tuple, list) and not item.is_python_constant():
            return any(values_equal(tx, item, ConstantValue(v)) for v in container.value)   # (a user __eq__)
        return bool(_fold(operator.contains, container.value, item.as_python_constant()))
    if isinstance(container, TensorValue):
        raise Unsupported("`in` on a tensor depends on its data")
    if isinstance(container, kinds.ModuleValue):
        return container.contains(tx, item)
    raise Unsupported(f"`in` on {container}")


def getitem(tx, obj: Value, index: Value) -> Value:
    obj = realize(tx.ctx, obj)
    if isinstance(obj, TensorValue):
        index = realize(tx.ctx, index)
        if isinstance(index, kinds.SymbolicNumberValue) and index.python_type() is int:
            # ``x[n]`` with n a dynamic size: the index's __index__ would
            # specialize it; torch.select keeps it symbolic (as torch.compile)
            return graph_call(tx, "call_function", torch.select, [obj, ConstantValue(0), index], {})
        index = concrete(tx, index)
        return graph_call(tx, "call_function", operator.getitem, [obj, index], {})
    index = concrete(tx, index)
    from ..tensors.tensor import known_index
    n = known_index(index)
    if n is not None:   # ``xs[torch.tensor(1)]``: eager's ``__index__``
        index = ConstantValue(n)
    if hasattr(obj, "getitem"):
        return obj.getitem(tx, index)
    if isinstance(obj, ConstantValue):
        return wrap_constant_result(_fold(operator.getitem, obj.value, index.as_python_constant()))
    raise Unsupported(f"indexing {obj}")
