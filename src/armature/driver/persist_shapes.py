"""Symbolic sizes of a stored graph's inputs: the warm start of a graph
traced with dynamic sizes, for a backend that compiles it again on load
(aot_eager, inductor; driver/persistent_cache.py).

Such a graph's inputs have sizes that are expressions over the trace's
ShapeEnv symbols (``x`` of size ``(s20, 3)``, stride ``(3, 1)``; a SymInt
input ``s93``), and the backend compiled it under that ShapeEnv.  Its
guards -- each symbol's range (``2 <= x.size()[0]``: sizes 0 and 1 are
never served), relations (``y.size()[0] == x.size()[0]``), specialisations,
and what the backend itself assumed -- are the entry's shape guards
(graph/dynamic.shape_guards runs after the backend's compile), stored
with the entry and checked on every call like any other guard.

``encode`` writes, besides each input's sizes and strides as expressions
(``encode_expr``: sympy trees of a known set of functions, symbols by
name): every symbol the inputs or the guards mention -- its name, its hint
(the value the trace saw), whether it is a size, its range once the
compile was done, the name of the source it was made for (its name
derives from that) -- the ShapeEnv's guards in the order they were made,
and its settings.

``Rebuilt`` makes them again in a fresh ShapeEnv: the symbols created from
the same source names and hints, their ranges narrowed to the stored
ones, the guards replayed (``evaluate_expr`` with the same hints: the same
replacements, the same axioms), and the inputs as fake tensors of those
symbolic sizes.  The backend then compiles the very graph under the very
assumptions; ``check`` verifies after the compile that it assumed nothing
else: every guard it added is one of the stored ones, no symbol's range or
replacement changed.  Otherwise that compile is not used (LookupError:
the entry runs its traced graph instead, persistent_cache._LoadedGraph).

Why a loaded dynamic entry is safe: what its compiled graph may assume is
what the replayed guards say, and the entry's guards check exactly those
on every call (they were produced from that ShapeEnv after the cold
compile); the loaded guards are the stored ones, not recomputed.  A size
the entry was not compiled for (1 where it had ``>= 2``, unequal sizes
where it had them equal) fails its guards and the call traces as usual.
"""
from __future__ import annotations

import dataclasses

import torch

from .persist_codec import NotStorable

#: the integers sympy's and torch's range arithmetic use for unbounded ends
_INF = ("+oo", "-oo")


def _classes() -> dict:
    """The expression classes an encoded expression may use, by module and
    name (torch's own Max/Min share their names with sympy's)."""
    global _CLASSES
    if _CLASSES is None:
        import sympy
        from torch.utils._sympy import functions as F
        found = [sympy.Add, sympy.Mul, sympy.Pow, sympy.Eq, sympy.Ne, sympy.Lt, sympy.Le, sympy.Gt, sympy.Ge,
                 sympy.And, sympy.Or, sympy.Not, sympy.Max, sympy.Min, sympy.Abs]
        found += [v for v in vars(F).values()
                  if isinstance(v, type) and issubclass(v, sympy.Basic) and v.__module__ == F.__name__]
        _CLASSES = {f"{c.__module__}.{c.__qualname__}": c for c in found}
    return _CLASSES


_CLASSES: dict | None = None


def encode_expr(e) -> tuple:
    """A sympy expression of symbols, integers and known functions as
    marshal-able data; NotStorable for anything else (a float, a rational,
    an unknown function)."""
    import sympy
    if isinstance(e, sympy.Symbol):
        return ("s", e.name)
    if isinstance(e, sympy.Integer):
        return ("i", int(e))
    if e is sympy.true or e is sympy.false:
        return ("b", bool(e))
    key = f"{type(e).__module__}.{type(e).__qualname__}"
    if _classes().get(key) is not type(e):
        raise NotStorable(f"a size expression uses {type(e).__name__} ({e})")
    return ("f", key, tuple(encode_expr(a) for a in e.args))


def decode_expr(d, symbols: dict):
    """``encode_expr``'s expression again, its symbols from ``symbols``
    (name -> Symbol of this process's ShapeEnv)."""
    import sympy
    tag = d[0]
    if tag == "s":
        sym = symbols.get(d[1])
        if sym is None:
            raise LookupError(f"size expression over an unknown symbol {d[1]}")
        return sym
    if tag == "i":
        return sympy.Integer(d[1])
    if tag == "b":
        return sympy.true if d[1] else sympy.false
    if tag == "f":
        cls = _classes().get(d[1])
        if cls is None:
            raise LookupError(f"unknown size function {d[1]}")
        return cls(*(decode_expr(a, symbols) for a in d[2]))
    raise LookupError(f"unknown size expression tag {tag!r}")


# --- the cold process ---------------------------------------------------------------

class Collected:
    """The symbols the graph's inputs are expressed in, while their
    example inputs are written (persistent_cache._example_input_meta)."""

    def __init__(self):
        self.env = None
        self.symbols: set = set()

    def item(self, v, what: str):
        """An int, or a SymInt as its encoded expression (the expression it
        was made with, before the ShapeEnv's replacements: they are
        replayed with the guards)."""
        if type(v) is int:
            return v
        if not isinstance(v, torch.SymInt):
            raise NotStorable(f"{what} is a {type(v).__name__}")
        node = v.node
        env = node.shape_env
        if self.env is None:
            self.env = env
        elif env is not self.env:
            raise NotStorable(f"{what} belongs to another ShapeEnv")
        expr = node._expr
        self.symbols |= expr.free_symbols
        return ("e", encode_expr(expr))


def encode(collected: Collected) -> tuple | None:
    """The ShapeEnv the inputs' symbols live in, as data (module
    docstring); None when every input is static."""
    env = collected.env
    if env is None:
        return None
    guards = []
    needed = set(collected.symbols)
    for g in env.guards:
        guards.append((encode_expr(g.expr), bool(getattr(g, "size_oblivious", False))))
        needed |= g.expr.free_symbols
    if getattr(env, "deferred_runtime_asserts", None) and any(
            ra.expr.free_symbols & needed for ras in env.deferred_runtime_asserts.values() for ra in ras):
        raise NotStorable("runtime assertions on the inputs' sizes")
    hints = _hints(env)
    order = {s: i for i, s in enumerate(env.var_to_sources)}
    table = []
    for sym in sorted(needed, key=lambda s: (order.get(s, len(order)), s.name)):
        hint = hints.get(sym)
        sources = env.var_to_sources.get(sym)
        if hint is None or not sources:
            raise NotStorable(f"a size guard or input uses {sym}, which is not a size or number of an input "
                              f"(an unbacked symbol)")
        r = env.var_to_range.get(sym)
        if r is None:
            raise NotStorable(f"the symbol {sym} has no range")
        table.append((sym.name, int(hint), sym.is_positive is True, _bound(r.lower), _bound(r.upper),
                      _source_name(sources[0])))
    settings = tuple((f.name, getattr(env.settings, f.name)) for f in dataclasses.fields(env.settings))
    if any(type(v) not in (bool, int, str, type(None)) for _, v in settings):
        raise NotStorable("a ShapeEnv setting that is not a plain value")
    return (tuple(table), tuple(guards), settings)


def _hints(env) -> dict:
    vals = getattr(env, "backed_var_to_val", None)   # (torch 2.13; before: var_to_val)
    return vals if vals is not None else env.var_to_val


def _bound(b):
    import sympy
    from torch.utils._sympy.numbers import int_oo
    if isinstance(b, sympy.Integer):
        return int(b)
    if b in (int_oo, sympy.oo):
        return _INF[0]
    if b in (-int_oo, -sympy.oo):
        return _INF[1]
    raise NotStorable(f"a symbol's range has the bound {b}")


def _source_name(src) -> str:
    name = src.name
    return str(name() if callable(name) else name)


# --- the warm process -----------------------------------------------------------------

class Rebuilt:
    """A fresh ShapeEnv and fake mode holding the stored symbols, ranges and
    guards (module docstring)."""

    def __init__(self, data):
        import sympy
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv
        from torch.utils._sympy.numbers import int_oo
        from torch.utils._sympy.value_ranges import ValueRanges

        from ..graph.dynamic import ShapeEnvSource
        table, guards, settings = data
        env = ShapeEnv()
        known = {f.name for f in dataclasses.fields(env.settings)}
        stored = dict(settings)
        if set(stored) != known:
            raise LookupError("the ShapeEnv's settings are not those of the compiling process")
        env.settings = dataclasses.replace(env.settings, **stored)
        self.env = env
        self.fake_mode = FakeTensorMode(shape_env=env)
        self.symbols: dict = {}
        self.hints: dict = {}
        bound = {_INF[0]: int_oo, _INF[1]: -int_oo}
        for name, hint, positive, lo, hi, source in table:
            sym = env.create_symbol(hint, ShapeEnvSource(None, source), DimDynamic.DYNAMIC,
                                    positive=True if positive else None, do_not_specialize_zero_one=True)
            if not isinstance(sym, sympy.Symbol):
                raise LookupError(f"the symbol {name} came back as {sym}")
            env._update_var_to_range(sym, ValueRanges(bound.get(lo, lo), bound.get(hi, hi)))
            self.symbols[name] = sym
            self.hints[sym] = hint
        self.assumed = []
        for enc, oblivious in guards:
            expr = decode_expr(enc, self.symbols)
            if env.evaluate_expr(expr, size_oblivious=oblivious) is not sympy.true:
                raise LookupError(f"the stored size guard {expr} does not hold for its own hints")
            self.assumed.append(expr)
        self._known = set(self.assumed)
        self._start = len(env.guards)
        self._state = self._assumptions()

    def _assumptions(self) -> tuple:
        env = self.env
        syms = list(self.symbols.values())
        return (tuple(env.var_to_range.get(s) for s in syms), tuple(env.replacements.get(s) for s in syms))

    def value(self, item):
        """An input's size or stride: an int, or a SymInt of these symbols."""
        if type(item) is int:
            return item
        expr = decode_expr(item[1], self.symbols)
        if expr.is_number:
            return int(expr)
        return self.env.create_symintnode(expr, hint=int(expr.xreplace(self.hints)))

    def tensor(self, size, stride, dtype, device, requires_grad):
        with self.fake_mode:
            t = torch.empty_strided([self.value(s) for s in size], [self.value(s) for s in stride],
                                    dtype=dtype, device=device)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def check(self) -> None:
        """After the backend's compile: it assumed nothing the stored guards
        (which the entry checks) do not say."""
        for g in self.env.guards[self._start:]:
            if g.expr not in self._known:
                raise LookupError(f"compiling the loaded graph assumed {g.expr}, which its guards do not check")
        if self._assumptions() != self._state:
            raise LookupError("compiling the loaded graph narrowed a size's range or equated sizes")
