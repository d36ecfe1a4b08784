"""Python numbers that are not constants: one model for sizes and ints.

A SymbolicNumberValue is a number whose trace-time value is only an example.
It always has a residual expression (its Source) that run-time code
evaluates -- ``self.steps += 1`` or ``print(step)`` never guard on the value.

Two kinds, told apart by ``sym``:

* **dynamic** (``sym`` is a ShapeEnv SymInt/SymBool): a tensor size, or an
  int the dynamic policy made a symbol (graph/dynamic.py).  Arithmetic and
  comparisons are done on the SymInt, so the ShapeEnv knows every relation;
  a branch on one records a ShapeEnv guard on the outcome; used in a tensor
  op it is a SymInt node of the graph (a placeholder for a symbol, arithmetic
  nodes or ``sym_size`` for expressions), so ``x.view(n, -1)``, ``x[:k]``
  and ``torch.arange(n)`` stay symbolic whether ``n`` is a size or an int.
* **lazily guarded** (``sym`` is None): a number on a module or one that
  crossed a graph break as data (a float from ``.item()``).  Only code that
  needs its value guards it (a guard on the expression); a branch guards the
  outcome (``CompareSource``); a float meeting a floating tensor in
  arithmetic enters the graph as a 0-d float64 tensor input instead (a
  SymFloat placeholder would change the dtype rules of some ops and is not
  supported by every backend).
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Any

import torch

from bytecode import BinaryOp

from ...guards.guard import Guard, Kind
from ...guards.sources import LengthSource, Source  # noqa: F401  (LengthSource: made here, defined there)
from ..base import Value
from ..constant import ConstantValue
from .. import kinds

_BINOPS = {
    operator.add: ("+", BinaryOp.ADD), operator.sub: ("-", BinaryOp.SUBTRACT),
    operator.mul: ("*", BinaryOp.MULTIPLY), operator.floordiv: ("//", BinaryOp.FLOOR_DIVIDE),
    operator.truediv: ("/", BinaryOp.TRUE_DIVIDE), operator.mod: ("%", BinaryOp.REMAINDER),
    operator.pow: ("**", BinaryOp.POWER),
}
_INPLACE = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
            operator.ifloordiv: operator.floordiv, operator.itruediv: operator.truediv,
            operator.imod: operator.mod, operator.ipow: operator.pow}


def _literal(x, pool) -> str:
    """A literal operand in guard text: its repr, or a bound constant where
    the repr is no Python expression (``inf``, ``nan``)."""
    if isinstance(x, float) and x != x or x in (float("inf"), float("-inf")):
        return pool.const(x)
    return repr(x)


@dataclass(frozen=True)
class BinOpSource(Source):
    """``left <op> right`` over sources and literal numbers."""

    op: Any
    left: Any
    right: Any

    def _operand(self, x, pool):
        return f"({pool.render(x)})" if isinstance(x, Source) else _literal(x, pool)

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
class CallSource(Source):
    """``fn(*args)`` of a pure builtin over symbolic numbers and literals
    (``abs(n)``, ``-n``, ``min(n, 3)``)."""

    fn: Any
    args: tuple

    def expr(self, pool):
        parts = [pool.render(a) if isinstance(a, Source) else _literal(a, pool) for a in self.args]
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
    source = CallSource(fn, tuple(o[0] for o in ops))
    syms = [_sym_operand(a) for a in args]
    if all(x is not None for x in syms) and type(example) is int:
        sym_fn = {min: torch.sym_min, max: torch.sym_max}.get(fn, fn)
        if sym_fn in (torch.sym_min, torch.sym_max) and len(syms) != 2:
            return None
        result = sym_fn(*syms)
        if not isinstance(result, torch.SymInt):
            return ConstantValue(int(result))

        def node():
            return ctx.graph.create_node("call_function", sym_fn, tuple(_node_arg(a) for a in args), {},
                                         lambda: result)[0]
        return SymbolicNumberValue(example, source, ctx, sym=result, node_fn=node)
    if any(isinstance(a, SymbolicNumberValue) and a.sym is not None for a in args):
        return None   # (mixed with floats or bools: the caller specialises and folds)
    return SymbolicNumberValue(example, source, ctx)


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
        return f"({pool.render(x)})" if isinstance(x, Source) else _literal(x, pool)

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


def symbolic_compare(ctx, op, a: Value, b: Value) -> "Value | None":
    """``a <op> b`` where one side is symbolic: a symbolic bool whose truth,
    when a branch needs it, is guarded as an outcome (by the ShapeEnv for
    dynamic numbers, as a ``CompareSource`` for lazily guarded ones)."""
    if op not in _COMPARES:
        return None
    left, right = _number_operand(a), _number_operand(b)
    if left is None or right is None:
        return None
    sa, sb = _sym_operand(a), _sym_operand(b)
    if sa is not None and sb is not None and (isinstance(sa, (torch.SymInt, torch.SymFloat))
                                              or isinstance(sb, (torch.SymInt, torch.SymFloat))):
        result = op(sa, sb)
        if not isinstance(result, torch.SymBool):
            return ConstantValue(bool(result))

        def node():
            return ctx.graph.create_node("call_function", op, (_node_arg(a), _node_arg(b)), {},
                                         lambda: result)[0]
        if _unbacked_source(a, b):
            return unbacked_value(ctx, result, node)
        return SymbolicNumberValue(op(left[1], right[1]), CompareSource(op, left[0], right[0]), ctx,
                                   sym=result, node_fn=node)
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
    if number.sym is not None:
        return None   # a dynamic int is a SymInt argument of the op itself
    base = _INPLACE.get(op, op)
    if base not in _ARITHMETIC or not isinstance(other, kinds.TensorValue) or not other.fake.is_floating_point() \
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
    return kinds.TensorValue(node, fake, source=None)


def _sym_operand(v: Value):
    """The SymInt (or int) a dynamic operation can take: a dynamic number or
    an int literal; None otherwise."""
    if isinstance(v, SymbolicNumberValue) and isinstance(v.sym, (torch.SymInt, torch.SymFloat)):
        return v.sym
    if isinstance(v, ConstantValue) and type(v.value) in (int, float):
        return v.value
    return None


def _unbacked_source(*values) -> bool:
    return any(isinstance(v, SymbolicNumberValue) and v.unbacked for v in values)


def _node_arg(v: Value):
    return v.as_node() if isinstance(v, SymbolicNumberValue) else v.value


def _holds(cond) -> None:
    """Guard that a symbolic condition is true now (recorded by the ShapeEnv)."""
    _evaluate(lambda: bool(cond))


def _evaluate(fn):
    """Ask the ShapeEnv for a value; one that depends on data (an unbacked
    symbol nothing was checked about) is a graph break."""
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode
    try:
        return fn()
    except GuardOnDataDependentSymNode as e:
        from ...diagnostics.errors import data_dependent
        raise data_dependent(e) from None


def int_symbol(ctx, value: int, source: Source) -> "SymbolicNumberValue":
    """An int read from ``source`` that the dynamic policy made a symbol
    (one symbol per source, however often the trace reads it)."""
    known = ctx.graph.int_symbols.get(source)
    if known is not None:
        return known
    sym = ctx.graph.new_int_symbol(value, source)
    v = ctx.graph.int_symbols[source] = SymbolicNumberValue(value, source, ctx, sym=sym)
    return v


def size_value(ctx, tensor, dim: int) -> Value:
    """``tensor.size(dim)``: a constant, or a dynamic number whose residual
    expression reads it at run time."""
    size = tensor.fake.size(dim)
    if not isinstance(size, torch.SymInt):
        return ConstantValue(int(size))
    return sym_value(ctx, size, lambda: ctx.graph.create_node(
        "call_function", torch.ops.aten.sym_size.int, (tensor.node, dim), {}, lambda: size)[0])


def sym_value(ctx, sym, node_fn=None) -> Value:
    """A SymInt that came out of fake propagation (a size, numel, an op's
    int result) as a Value; its residual expression is computed from the
    sources of the symbols in it."""
    if not isinstance(sym, (torch.SymInt, torch.SymBool, torch.SymFloat)):
        return ConstantValue(sym)
    from torch.fx.experimental.symbolic_shapes import guard_scalar
    expr = sym.node.expr
    if getattr(expr, "is_number", False):
        return ConstantValue(guard_scalar(sym))
    hint = sym.node.hint
    if hint is None or _has_unbacked(ctx, expr):
        return unbacked_value(ctx, sym, node_fn)
    if isinstance(sym, torch.SymFloat):
        return unbacked_value(ctx, sym, node_fn)   # (backed floats are never made symbolic)
    example = bool(hint) if isinstance(sym, torch.SymBool) else int(hint)
    return SymbolicNumberValue(example, SymExprSource.of(ctx, expr), ctx, sym=sym, node_fn=node_fn)


def _has_unbacked(ctx, expr) -> bool:
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    return bool(free_unbacked_symbols(expr))


def unbacked_value(ctx, sym, node_fn) -> "SymbolicNumberValue":
    """A data-dependent number (``.item()``, the size of ``nonzero()``): only
    the graph knows it, so run-time code reads it from the graph's outputs;
    a branch on it is a graph break unless torch._check told enough."""
    kind = bool if isinstance(sym, torch.SymBool) else float if isinstance(sym, torch.SymFloat) else int
    return SymbolicNumberValue(kind(1), None, ctx, sym=sym, node_fn=node_fn)


@dataclass(frozen=True)
class SymExprSource(Source):
    """A ShapeEnv expression over symbols (``2*s0 + s1``), computed at run
    time from each symbol's own source (``x.size()[0]``, ``n``)."""

    text: str
    names: tuple
    sources: tuple

    @classmethod
    def of(cls, ctx, expr) -> Source:
        import sympy
        from torch.utils._sympy.printers import PythonPrinter
        from ...graph.dynamic import armature_source_of
        env = ctx.graph.shape_env
        syms = sorted(expr.free_symbols, key=str)
        sources = []
        for sym in syms:
            src = None
            for s in env.var_to_sources.get(sym, ()):
                src = armature_source_of(s)
                if src is not None:
                    break
            if src is None:
                from ...diagnostics.errors import Unsupported
                raise Unsupported(f"the size symbol {sym} has no source armature can read")
            sources.append(src)
        if isinstance(expr, sympy.Symbol):
            return sources[0]
        return cls(PythonPrinter().doprint(expr), tuple(str(s) for s in syms), tuple(sources))

    def _fn(self):
        fn = _EXPR_FUNCTIONS.get((self.text, self.names))
        if fn is None:
            import math   # (the printer writes math.floor, torch.sym_max, and float infinity as ``inf``)
            fn = eval(f"lambda {', '.join(self.names)}: {self.text}",
                      {"math": math, "torch": torch, "inf": math.inf, "nan": math.nan})
            _EXPR_FUNCTIONS[(self.text, self.names)] = fn
        return fn

    def expr(self, pool):
        return f"{pool.const(self._fn())}({', '.join(pool.render(s) for s in self.sources)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(self._fn())
        for s in self.sources:
            s.emit(out)
        out.call(len(self.sources))

    def __str__(self):
        text = self.text
        for name, src in zip(self.names, self.sources):
            text = re.sub(rf"\b{name}\b", str(src), text)
        return text


_EXPR_FUNCTIONS: dict = {}


class SymbolicNumberValue(Value):
    def __init__(self, example: int | float, expr: Source, ctx, sym=None, node_fn=None):
        super().__init__(expr)
        self.example = example
        self.ctx = ctx
        #: the ShapeEnv expression (dynamic kind), or None (lazily guarded kind)
        self.sym = sym
        self._node = None
        #: builds this value's FX node when a graph op needs it
        self._node_fn = node_fn

    def python_type(self):
        return type(self.example)

    # Anything that needs the value specialises it.
    def specialize(self, tx=None) -> ConstantValue:
        if self.sym is not None:
            # the ShapeEnv records the specialisation (a guard on the symbol)
            kind = bool if type(self.example) is bool else float if isinstance(self.sym, torch.SymFloat) else int
            return ConstantValue(_evaluate(lambda: kind(self.sym)))
        self.ctx.guards.add(Guard(Kind.CONSTANT_MATCH, self.source, self.example))
        return ConstantValue(self.example)

    def getattr(self, tx, name):
        """``s.is_integer()``, ``n.bit_length()``, ``s.real``: what the number's
        type offers, read on its value (specialised and guarded, as any use
        that needs the value)."""
        return self.specialize(tx).getattr(tx, name)

    def as_node(self):
        """The FX node of a dynamic number (a SymInt placeholder for a plain
        symbol, else the nodes computing it), made on first use."""
        if self._node is None:
            expr = self.sym.node.expr
            if expr.is_number:   # the ShapeEnv specialised it since (a guard holds it there)
                return bool(expr) if type(self.example) is bool else int(expr)
            if self.source is not None:   # (an unbacked symbol is made by its node, never an input)
                self._node = self.ctx.graph.bind_symbol(self.sym, self.example, self.source)
            if self._node is None:
                self._node = self._node_fn()
        return self._node

    def is_python_constant(self):
        return False  # folding paths leave it alone ...

    def as_python_constant(self):
        return self.specialize().value  # ... but whoever needs the value gets it, guarded

    def truth(self, tx):
        if self.sym is not None:
            return _evaluate(lambda: bool(self.sym))   # a ShapeEnv guard on the outcome
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
        other_sym = _sym_operand(other)
        unbacked = self.unbacked or (isinstance(other, SymbolicNumberValue) and other.unbacked)
        if self.sym is not None and other_sym is not None and (
                unbacked or type(example) is int and base is not operator.truediv
                and not isinstance(other_sym, (float, torch.SymFloat))):
            return self._sym_binary(base, other, other_sym, reflected, example, left, right)
        if unbacked:
            return None
        self._guard_cannot_raise(base, left, right, lx, rx)
        return SymbolicNumberValue(example, BinOpSource(base, left, right), self.ctx)

    def _sym_binary(self, op, other, other_sym, reflected, example, left, right):
        """Integer arithmetic of a dynamic number: on the SymInt, so the
        ShapeEnv knows the result's relation to every size."""
        a, b = (other_sym, self.sym) if reflected else (self.sym, other_sym)
        va, vb = (other, self) if reflected else (self, other)
        if op in (operator.floordiv, operator.mod):
            _holds(b != 0)   # eager raises ZeroDivisionError here: a guard keeps it from happening
        elif op is operator.pow:
            _holds(b >= 0)   # (a negative exponent makes a float)
        result = op(a, b)
        if not isinstance(result, (torch.SymInt, torch.SymFloat)):
            return ConstantValue(result)
        ctx = self.ctx

        def node():
            return ctx.graph.create_node("call_function", op, (_node_arg(va), _node_arg(vb)), {},
                                         lambda: result)[0]
        if _unbacked_source(va, vb):
            return unbacked_value(ctx, result, node)
        return SymbolicNumberValue(example, BinOpSource(op, left, right), ctx, sym=result, node_fn=node)

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

    @property
    def unbacked(self) -> bool:
        return self.source is None

    def reconstruct(self, out):
        if self.source is None:   # unbacked: an output of the graph
            from ...names import GRAPH_OUT
            idx = out.graph_output_index(self.as_node())
            out.instr("LOAD_FAST", GRAPH_OUT)
            out.load_const(idx)
            out.instr("BINARY_SUBSCR")
            return
        self.source.emit(out)

    def __repr__(self):
        return f"<symbolic {type(self.example).__name__} {self.source} (e.g. {self.example})>"
