"""Collects instructions for residual code and the graph outputs they read.

Values rebuild themselves through :meth:`Emitter.reconstruct`: a tensor with
a Source is loaded from it (same object as eager returns), any other tensor
is read from the graph's output tuple; containers and namedtuples are rebuilt
around those, constants are loaded as constants.
"""
from __future__ import annotations

from typing import Any

from bytecode import Instr

from ..values.base import Value

GRAPH_OUT = "___graph_out"
_UNSET = object()


class Emitter:
    def __init__(self):
        self.instrs: list[Instr] = []
        self.graph_outputs: list[Any] = []   # fx Nodes, in output order
        self._out_index: dict[Any, int] = {}
        self.lineno: int | None = None

    def instr(self, name: str, arg: Any = _UNSET) -> None:
        kw = {"lineno": self.lineno} if self.lineno is not None else {}
        self.instrs.append(Instr(name, **kw) if arg is _UNSET else Instr(name, arg, **kw))

    def load_const(self, obj: Any) -> None:
        self.instr("LOAD_CONST", obj)

    def call(self, nargs: int) -> None:
        self.instr("PRECALL", nargs)
        self.instr("CALL", nargs)

    def graph_output_index(self, node) -> int:
        idx = self._out_index.get(node)
        if idx is None:
            idx = self._out_index[node] = len(self.graph_outputs)
            self.graph_outputs.append(node)
        return idx

    def reconstruct(self, value: Value) -> None:
        from ..values.tensor import TensorValue
        if isinstance(value, TensorValue):
            if value.source is not None:
                value.source.emit(self)
                return
            idx = self.graph_output_index(value.node)
            self.instr("LOAD_FAST", GRAPH_OUT)
            self.load_const(idx)
            self.instr("BINARY_SUBSCR")
            return
        value.reconstruct(self)
