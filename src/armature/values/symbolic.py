"""Python numbers that are not specialised: automatic dynamic for scalars.

A number read from a source whose value changed between calls (a step
counter on a module, a loop index handed to a resume function) becomes a
SymbolicNumberValue: its trace-time value is only an example.  Arithmetic
with constants and other symbolic numbers builds an expression (a Source
that renders as Python code), which residual bytecode evaluates at run time
-- so ``self.steps += 1`` or ``print(step)`` never guard on the value.  Only
when the traced code needs the concrete value (a branch, a tensor op
argument, an index) is it specialised: a guard on the expression, exactly
as a constant would have been guarded.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from bytecode import BinaryOp

from ..guards.guard import Guard, Kind
from ..guards.sources import Source
from .base import Value
from .constant import ConstantValue

_BINOPS = {
    operator.add: ("+", BinaryOp.ADD), operator.sub: ("-", BinaryOp.SUBTRACT),
    operator.mul: ("*", BinaryOp.MULTIPLY), operator.floordiv: ("//", BinaryOp.FLOOR_DIVIDE),
    operator.truediv: ("/", BinaryOp.TRUE_DIVIDE), operator.mod: ("%", BinaryOp.REMAINDER),
    operator.pow: ("**", BinaryOp.POWER),
}
_INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
            operator.ifloordiv: operator.floordiv, operator.itruediv: operator.truediv,
            operator.imod: operator.mod, operator.ipow: operator.pow}


@dataclass(frozen=True)
class BinOpSource(Source):
    """``left <op> right`` over sources and literal numbers."""

    op: Any
    left: Any
    right: Any

    def _operand(self, x, pool):
        return f"({pool.render(x)})" if isinstance(x, Source) else repr(x)

    def expr(self, pool):
        sym = _BINOPS[self.op][0]
        return f"{self._operand(self.left, pool)} {sym} {self._operand(self.right, pool)}"

    def emit(self, out):
        for x in (self.left, self.right):
            if isinstance(x, Source):
                x.emit(out)
            else:
                out.load_const(x)
        out.instr("BINARY_OP", _BINOPS[self.op][1])

    def __str__(self):
        return f"({self.left} {_BINOPS[self.op][0]} {self.right})"


@dataclass(frozen=True)
class LengthSource(Source):
    """``len(parent)`` as the frame found it: the length of an outside list
    that changes between calls (a log that grows every call), read at run
    time instead of guarded."""

    parent: Any

    @property
    def base(self):
        return self.parent

    def expr(self, pool):
        return f"len({pool.render(self.parent)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(len)
        self.parent.emit(out)
        out.call(1)

    def __str__(self):
        return f"len({self.parent})"


@dataclass(frozen=True)
class CallSource(Source):
    """``fn(*args)`` of a pure builtin over symbolic numbers and literals
    (``abs(n)``, ``-n``, ``min(n, 3)``)."""

    fn: Any
    args: tuple

    def expr(self, pool):
        parts = [pool.render(a) if isinstance(a, Source) else repr(a) for a in self.args]
        return f"{pool.const(self.fn)}({', '.join(parts)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(self.fn)
        for a in self.args:
            if isinstance(a, Source):
                a.emit(out)
            else:
                out.load_const(a)
        out.call(len(self.args))

    def __str__(self):
        return f"{getattr(self.fn, '__name__', self.fn)}({', '.join(map(str, self.args))})"


#: pure functions of numbers that stay symbolic (they cannot raise on an int
#: or float, and their result type follows their arguments')
_SYMBOLIC_CALLS = frozenset({abs, operator.neg, operator.pos, min, max})


def symbolic_call(ctx, fn, args: list) -> "SymbolicNumberValue | None":
    """``fn(*args)`` with at least one symbolic argument, kept symbolic."""
    if fn not in _SYMBOLIC_CALLS or not any(isinstance(a, SymbolicNumberValue) for a in args):
        return None
    ops = [_number_operand(a) for a in args]
    if any(o is None for o in ops):
        return None
    if fn in (min, max) and len(ops) < 2:
        return None
    if fn in (min, max) and len({type(o[1]) for o in ops}) > 1:
        return None   # min(1, 1.0) returns whichever comes first: its type depends on the order
    example = fn(*[o[1] for o in ops])
    return SymbolicNumberValue(example, CallSource(fn, tuple(o[0] for o in ops)), ctx)


_COMPARES = {
    operator.lt: ("<", "<"), operator.le: ("<=", "<="), operator.gt: (">", ">"),
    operator.ge: (">=", ">="), operator.eq: ("==", "=="), operator.ne: ("!=", "!="),
}


@dataclass(frozen=True)
class CompareSource(Source):
    """``left <cmp> right``: the outcome of comparing symbolic numbers, so a
    branch guards on which way it went (``(i + 1) < n``), not on the numbers
    (a loop counter would otherwise recompile every iteration)."""

    op: Any
    left: Any
    right: Any

    def _operand(self, x, pool):
        return f"({pool.render(x)})" if isinstance(x, Source) else repr(x)

    def expr(self, pool):
        return f"({self._operand(self.left, pool)} {_COMPARES[self.op][0]} {self._operand(self.right, pool)})"

    def emit(self, out):
        from bytecode import Compare
        for x in (self.left, self.right):
            if isinstance(x, Source):
                x.emit(out)
            else:
                out.load_const(x)
        out.instr("COMPARE_OP", getattr(Compare, {"<": "LT", "<=": "LE", ">": "GT", ">=": "GE", "==": "EQ",
                                                  "!=": "NE"}[_COMPARES[self.op][0]]))

    def __str__(self):
        return f"({self.left} {_COMPARES[self.op][0]} {self.right})"


def _number_operand(v: Value):
    """(expression, example) of a symbolic number or a literal int/float."""
    if isinstance(v, SymbolicNumberValue):
        return v.source, v.example
    if isinstance(v, ConstantValue) and type(v.value) in (int, float):
        return v.value, v.value
    return None


def symbolic_compare(ctx, op, a: Value, b: Value) -> "SymbolicNumberValue | None":
    """``a <op> b`` where one side is symbolic: a symbolic bool whose truth,
    when a branch needs it, is guarded as an outcome."""
    if op not in _COMPARES:
        return None
    left, right = _number_operand(a), _number_operand(b)
    if left is None or right is None:
        return None
    return SymbolicNumberValue(op(left[1], right[1]), CompareSource(op, left[0], right[0]), ctx)


@dataclass(frozen=True)
class ScalarTensorSource(Source):
    """A 0-d tensor made at run time from a symbolic number, so the number
    can be a graph input instead of a constant baked into the graph."""

    number: Any
    dtype: Any

    def expr(self, pool):
        return f"{pool.const(_scalar_tensor)}({pool.render(self.number)}, {pool.const(self.dtype)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(_scalar_tensor)
        self.number.emit(out)
        out.load_const(self.dtype)
        out.call(2)

    def __str__(self):
        return f"tensor({self.number})"


def _scalar_tensor(v, dtype):
    import torch
    return torch.tensor(v, dtype=dtype)


_ARITHMETIC = frozenset({operator.add, operator.sub, operator.mul, operator.truediv})


def as_graph_input(tx, number: "SymbolicNumberValue", other, op):
    """Where ``number`` meets a floating-point tensor in +,-,*,/ it enters the
    graph as a 0-d tensor input (int64 or float64): for a floating tensor
    such a 0-d operand never changes the result dtype, and its value is
    converted to the tensor's dtype exactly as a Python scalar is.  Returns
    None where that would not be exactly eager's arithmetic."""
    import torch
    from .tensor import TensorValue
    base = _INPLACE.get(op, op)
    if base not in _ARITHMETIC or not isinstance(other, TensorValue) or not other.fake.is_floating_point() \
            or other.fake.dim() == 0:
        return None   # (a 0-d tensor with a 0-d float64 operand would promote to float64)
    if type(number.example) is bool:
        return None
    if type(number.example) is int:
        if not -2 ** 63 <= number.example < 2 ** 63:
            return None   # not an int64: stays a constant
        # a later value outside int64 recompiles (and then specialises)
        for cmp, bound in ((operator.ge, -2 ** 63), (operator.lt, 2 ** 63)):
            tx.ctx.guards.add(Guard(Kind.CONSTANT_MATCH, CompareSource(cmp, number.source, bound), True))
    dtype = torch.int64 if type(number.example) is int else torch.float64
    src = ScalarTensorSource(number.source, dtype)
    real = torch.tensor(number.example, dtype=dtype)
    node, fake = tx.ctx.graph.add_input(real, src)
    return TensorValue(node, fake, source=None)


class SymbolicNumberValue(Value):
    def __init__(self, example: int | float, expr: Source, ctx):
        super().__init__(expr)
        self.example = example
        self.ctx = ctx

    def python_type(self):
        return type(self.example)

    # Anything that needs the value specialises it.
    def specialize(self, tx=None) -> ConstantValue:
        self.ctx.guards.add(Guard(Kind.CONSTANT_MATCH, self.source, self.example))
        return ConstantValue(self.example)

    def is_python_constant(self):
        return False  # folding paths leave it alone ...

    def as_python_constant(self):
        return self.specialize().value  # ... but whoever needs the value gets it, guarded

    def truth(self, tx):
        # ``if n:`` guards the outcome (n != 0), not the number
        outcome = bool(self.example)
        self.ctx.guards.add(Guard(Kind.CONSTANT_MATCH, CompareSource(operator.ne, self.source, 0), outcome))
        return outcome

    def binary(self, tx, op, other: Value, reflected: bool) -> Value | None:
        base = _INPLACE.get(op, op)
        if base not in _BINOPS:
            return None
        operand = _number_operand(other)
        if operand is None:
            return None
        o_expr, o_ex = operand
        left, right = (o_expr, self.source) if reflected else (self.source, o_expr)
        lx, rx = (o_ex, self.example) if reflected else (self.example, o_ex)
        try:
            example = base(lx, rx)
        except Exception:
            return None  # e.g. division by zero: let the constant path raise
        if type(example) not in (int, float):
            return None  # a complex power of a negative base: the constant path specialises it
        self._guard_cannot_raise(base, left, right, lx, rx)
        return SymbolicNumberValue(example, BinOpSource(base, left, right), self.ctx)

    def _guard_cannot_raise(self, op, left, right, lx, rx) -> None:
        """The expression is evaluated only if its value is used, but eager
        evaluates it (and may raise) right here: guard what keeps it from
        raising (a non-zero divisor; the sign of an exponent, which also
        decides int or float), so a value that would raise recompiles and
        the constant path raises eager's exception."""
        def holds(src, cmp, bound, expected=True):
            if isinstance(src, Source):
                self.ctx.guards.add(Guard(Kind.CONSTANT_MATCH, CompareSource(cmp, src, bound), expected))
        if op in (operator.floordiv, operator.truediv, operator.mod):
            holds(right, operator.ne, 0)
        elif op is operator.pow:
            holds(right, operator.ge, 0, rx >= 0)
            if rx < 0:
                holds(left, operator.ne, 0)
            if type(rx) is float or isinstance(right, Source):
                holds(left, operator.ge, 0, lx >= 0)   # a negative base to a fraction is complex

    def reconstruct(self, out):
        self.source.emit(out)

    def __repr__(self):
        return f"<symbolic {type(self.example).__name__} {self.source} (e.g. {self.example})>"
