"""Collects instructions for residual code and the graph outputs they read.

Values rebuild themselves through :meth:`Emitter.reconstruct`: a tensor with
a Source is loaded from it (same object as eager returns), any other tensor
is read from the graph's output tuple; containers and namedtuples are rebuilt
around those, constants are loaded as constants.  Objects whose identity
matters (lists, dicts, objects made in the frame) are built once and kept in
a temporary, so two references stay one object.

Instructions are written in 3.11's spelling and respelled for the running
interpreter by ``codegen/spelling.py``; ``native`` writes one as it is.
"""
from __future__ import annotations

from typing import Any

from bytecode import Instr

from ..diagnostics.errors import Unsupported
from ..values.base import Value
from ..names import GRAPH_OUT, temp_name
from .spelling import SPELLING

_UNSET = object()


class Emitter:
    def __init__(self):
        self.instrs: list[Any] = []
        self.graph_outputs: list[Any] = []   # fx Nodes, in output order
        self._out_index: dict[Any, int] = {}
        self.lineno: int | None = None
        self._temps: dict[int, str] = {}      # id(Value) -> temp local
        self._keep: list[Value] = []
        self._building: set[int] = set()
        self._ntemps = 0
        #: 3.13: for each call being built, whether its NULL was written
        #: below the callable (codegen/spelling.py)
        self.pending_calls: list[bool] = []

    def instr(self, name: str, arg: Any = _UNSET) -> None:
        """Append an instruction written in 3.11's spelling."""
        SPELLING.emit(self, name, arg)

    def native(self, name: str, arg: Any = _UNSET) -> None:
        """Append an instruction in the running interpreter's own spelling
        (a traced frame's stack or instruction re-run as it was)."""
        kw = {"lineno": self.lineno} if self.lineno is not None else {}
        self.instrs.append(Instr(name, **kw) if arg is _UNSET else Instr(name, arg, **kw))

    def append(self, item) -> None:
        """A raw bytecode item (Label, TryBegin...)."""
        self.instrs.append(item)

    def load_const(self, obj: Any) -> None:
        self.instr("LOAD_CONST", obj)

    def build_map(self, items: dict) -> None:
        """Push a new dict of the stored keys (values/containers/keys.py) and rebuilt values."""
        from ..values.containers.keys import emit_key
        for k, v in items.items():
            emit_key(self, k)
            self.reconstruct(v)
        self.instr("BUILD_MAP", len(items))

    def call(self, nargs: int) -> None:
        self.instr("PRECALL", nargs)
        self.instr("CALL", nargs)

    def call_helper(self, fn, *operands: str | Any, pop: bool = True) -> None:
        """``fn(*operands)`` where str operands are temp locals, others consts."""
        self.instr("PUSH_NULL")
        self.load_const(fn)
        for op in operands:
            if isinstance(op, _Temp):
                self.instr("LOAD_FAST", op.name)
            else:
                self.load_const(op)
        self.call(len(operands))
        if pop:
            self.instr("POP_TOP")

    def new_temp(self) -> "_Temp":
        self._ntemps += 1
        return _Temp(temp_name(self._ntemps))

    def graph_output_index(self, node) -> int:
        idx = self._out_index.get(node)
        if idx is None:
            idx = self._out_index[node] = len(self.graph_outputs)
            self.graph_outputs.append(node)
        return idx

    def materialize(self, value: Value) -> "_Temp":
        """Reconstruct ``value`` into a temporary (phase 1 of an exit)."""
        existing = self._temps.get(id(value))
        if existing is not None:
            return _Temp(existing)
        self.reconstruct(value)
        existing = self._temps.get(id(value))
        if existing is not None:  # reconstruct cached it itself
            self.instr("POP_TOP")
            return _Temp(existing)
        t = self.new_temp()
        self.instr("STORE_FAST", t.name)
        self._temps[id(value)] = t.name
        self._keep.append(value)
        return t

    def preset(self, value: Value, make) -> None:
        """Rebuild ``value`` as ``make()`` into a temporary that every later
        reconstruction of it loads: for a Value whose rebuilt object is made
        empty and filled by whoever receives it (3.14's ``__classdict__``
        cell of a class body, which type() fills)."""
        if id(value) in self._temps:
            return
        self.call_helper(make, pop=False)
        t = self.new_temp()
        self.instr("STORE_FAST", t.name)
        self._temps[id(value)] = t.name
        self._keep.append(value)

    def reconstruct(self, value: Value) -> None:
        from ..values.tensors.tensor import TensorValue
        existing = self._temps.get(id(value))
        if existing is not None:
            self.instr("LOAD_FAST", existing)
            return
        if isinstance(value, TensorValue):
            if value.source is not None:
                value.source.emit(self)
                return
            from ..values.tensors.tensor_attrs import needs_rebuild
            if needs_rebuild(value):
                self._rebuild_tensor_object(value)
                return
            idx = self.graph_output_index(value.node)
            self.instr("LOAD_FAST", GRAPH_OUT)
            self.load_const(idx)
            self.instr("BINARY_SUBSCR")
            return
        if _has_identity(value):
            if id(value) in self._building:
                raise Unsupported(f"rebuilding {value}, which contains itself")
            if _is_self_holding_dict(value):
                self._build_dict_in_place(value)
                return
            self._building.add(id(value))
            value.reconstruct(self)
            self._building.discard(id(value))
            t = self.new_temp()
            self.instr("COPY", 1)
            self.instr("STORE_FAST", t.name)
            self._temps[id(value)] = t.name
            self._keep.append(value)
            return
        value.reconstruct(self)


    def _build_dict_in_place(self, value) -> None:
        """A plain dict that holds itself (3.11's ``d = locals()`` at a
        later ``locals()``): an empty dict in its temporary first, then its
        items stored one by one, in order, so the inner reference loads it."""
        from ..values.containers.keys import emit_key
        self.instr("BUILD_MAP", 0)
        t = self.new_temp()
        self.instr("STORE_FAST", t.name)
        self._temps[id(value)] = t.name
        self._keep.append(value)
        for k, v in value.items.items():
            self.reconstruct(v)
            self.instr("LOAD_FAST", t.name)
            emit_key(self, k)
            self.instr("STORE_SUBSCR")
        self.instr("LOAD_FAST", t.name)

    def _rebuild_tensor_object(self, value) -> None:
        """A new tensor that is more than a graph output: ``as_subclass`` to
        the class the trace saw, then its Python attributes, once (it is an
        object with an identity: later uses load the same temporary)."""
        import torch
        from ..values.tensors.torch_function import rebuild_subclass
        idx = self.graph_output_index(value.node)
        self.instr("LOAD_FAST", GRAPH_OUT)
        self.load_const(idx)
        self.instr("BINARY_SUBSCR")
        t = self.new_temp()
        self.instr("STORE_FAST", t.name)
        if value.cls is not torch.Tensor:
            self.call_helper(rebuild_subclass, t, value.cls, pop=False)
            self.instr("STORE_FAST", t.name)
        self._temps[id(value)] = t.name
        self._keep.append(value)
        for name, v in value.attrs.items():
            self.reconstruct(v)
            self.instr("LOAD_FAST", t.name)
            self.instr("STORE_ATTR", name)
        self.instr("LOAD_FAST", t.name)


class _Temp:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


def _is_self_holding_dict(value: Value) -> bool:
    """A plain dict made in the frame with itself among its values (directly
    or through dicts and lists made in the frame)."""
    from ..values.containers.containers import DictValue, ListValue
    if type(value) is not DictValue or value.cls is not dict or value.source is not None:
        return False
    seen, todo = set(), list(value.items.values())
    while todo:
        v = todo.pop()
        if v is value:
            return True
        if id(v) in seen or v.source is not None:
            continue
        seen.add(id(v))
        if type(v) is DictValue:
            todo += list(v.items.values())
        elif type(v) is ListValue:
            todo += list(v.items)
    return False


def _has_identity(value: Value) -> bool:
    """Values whose reconstruction creates a new object whose identity the
    program can see (mutable, or compared with ``is``: a partial made in
    the frame)."""
    if value.source is not None:
        return False
    from ..values.objects.class_def import DecoratedFunctionValue, MadeClassValue
    from ..values.containers.containers import DictValue, IteratorValue, ListValue
    from ..values.functions.exceptions import ExceptionValue
    from ..values.functions.functions import CellValue, NestedFunctionValue
    from ..values.nn.modules import NewModuleValue
    from ..values.objects.objects import ObjectValue
    from ..values.stdlib.functools import PartialValue
    from ..values.stdlib.itertools import LazyIterator
    from ..values.stdlib.namedtuple import MadeNamedTupleClassValue
    from ..values.tensors.grad_decorators import GradModeDecoratedValue
    return isinstance(value, (ListValue, DictValue, ObjectValue, CellValue, NestedFunctionValue, ExceptionValue,
                              IteratorValue, LazyIterator, NewModuleValue, MadeClassValue,
                              DecoratedFunctionValue, PartialValue, MadeNamedTupleClassValue,
                              GradModeDecoratedValue))
