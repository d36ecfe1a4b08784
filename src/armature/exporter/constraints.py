"""Did the trace keep the promises ``dynamic_shapes`` made?

A named ``Dim`` (and ``Dim.DYNAMIC``) promises that the program works for
every value in its range.  The trace ran with those dims as ShapeEnv
symbols; the code may have specialised one (``if x.shape[0] == 8``),
narrowed its range (``assert x.shape[0] <= 512``), or tied it to another
dim (``x + y``).  After the trace each strict dim's symbol is read back from
the ShapeEnv: replaced by a number, by an expression the user's Dims do not
imply (two different Dims, a derived dim with another formula), or left
with a smaller range than asked.  Any of those is torch.export's constraint
violation, with the dims named, the user lines whose code made the guards,
and a suggested fix (the ``Dim`` that would have held).
"""
from __future__ import annotations

import sympy
import torch

from .capture import Capture
from .dims import _finite


def _symints(cap: Capture) -> list:
    """(SymInt, DimSpec) for every tensor dim the user made dynamic."""
    og = cap.ctx.graph
    fake_of = {id(gi.real): gi.node.meta["val"] for gi in og.inputs if isinstance(gi.real, torch.Tensor)}
    out = []
    for t, d, spec in cap.specs.tensor_dims:
        fake = fake_of.get(id(t))
        if fake is not None and isinstance(fake.size(d), torch.SymInt):
            out.append((fake.size(d), spec))
    return out


def declare_equalities(cap: Capture) -> None:
    """What the Dims say about each other: dims given the same Dim are
    equal, a derived dim is its formula of its root.  Stated to the
    ShapeEnv (each a guard the example inputs satisfy, so a replacement),
    so the program has one symbol per Dim, as torch.export's has."""
    first: dict[int, torch.SymInt] = {}
    derived = []
    for size, spec in _symints(cap):
        if spec.kind == "named":
            seen = first.setdefault(id(spec.dim), size)
            if seen is not size and int(seen.node.hint) == int(size.node.hint):
                bool(size == seen)
        elif spec.kind == "derived":
            derived.append((size, spec))
    for size, spec in derived:
        root = first.get(id(spec.dim.root))
        if root is not None:
            want = spec.dim.fn(root)
            if int(size.node.hint) == int(want.node.hint if isinstance(want, torch.SymInt) else want):
                bool(size == want)


def _symbols(cap: Capture) -> list:
    """(symbol, DimSpec) for every dim or int the user made dynamic."""
    og = cap.ctx.graph
    fake_of = {id(gi.real): gi.node.meta["val"] for gi in og.inputs if isinstance(gi.real, torch.Tensor)}
    out = []
    for t, d, spec in cap.specs.tensor_dims:
        fake = fake_of.get(id(t))
        if fake is None:
            continue
        size = fake.size(d)
        # (``_expr``: the symbol itself; ``expr`` applies the replacements)
        if isinstance(size, torch.SymInt) and isinstance(size.node._expr, sympy.Symbol):
            out.append((size.node._expr, spec))
    for sources, _, spec in cap.specs.ints:
        for s in sources:
            value = og.int_symbols.get(s)
            sym = getattr(value, "sym", None)
            if isinstance(sym, torch.SymInt) and isinstance(sym.node._expr, sympy.Symbol):
                out.append((sym.node._expr, spec))
                break
    return out


def _as_dims(expr, spec_of: dict):
    """``expr`` over symbols, written over the user's Dims (a derived dim
    is its formula of its root); None when a symbol has no named Dim."""
    subs = {}
    for s in expr.free_symbols:
        spec = spec_of.get(s)
        if spec is None or spec.dim is None:
            return None
        subs[s] = _dim_expr(spec)
    return expr.xreplace(subs)


def _dim_expr(spec):
    if spec.kind == "derived":
        root = spec.dim.root
        return spec.dim.fn(sympy.Symbol(root.__name__, integer=True))
    return sympy.Symbol(spec.dim.__name__, integer=True)


def _user(expr, names: dict) -> str:
    text = str(expr)
    for sym, name in sorted(names.items(), key=lambda kv: -len(str(kv[0]))):
        text = text.replace(str(sym), name)
    return text


def check(cap: Capture) -> None:
    env = cap.ctx.graph.shape_env
    declare_equalities(cap)
    pairs = _symbols(cap)
    spec_of = dict(pairs)
    names = {sym: spec.text for sym, spec in pairs}
    problems, fixes, dims = [], [], []
    for sym, spec in pairs:
        if not spec.strict:
            continue
        now = env.replace(sym)
        where = _lines(cap, sym, names)
        if now.is_number:
            dims.append(spec.name)
            problems.append(f"You marked {spec.name} ({spec.text}) as dynamic but your code specialized it to "
                            f"be a constant ({int(now)}).{where}")
            fixes.append(f"{spec.name} = {int(now)}   # or Dim.AUTO / Dim.STATIC for {spec.text}")
            continue
        if now != sym:
            mine, theirs = (_as_dims(sym, spec_of), _as_dims(now, spec_of))
            if spec.kind == "dynamic" or (mine is not None and theirs is not None
                                          and sympy.simplify(mine - theirs) == 0):
                continue
            dims.append(spec.name)
            problems.append(f"The values of {spec.name} = {spec.text} must always be equal to "
                            f"{_user(now, names)}, which the dynamic shapes do not say.{where}")
            rhs = _user(theirs, {}) if theirs is not None else _user(now, names)
            fixes.append(f"{spec.name} = {rhs}")
            continue
        if spec.kind != "named":
            continue
        vr = env.var_to_range.get(sym)
        lo = max(spec.min if spec.min is not None else 0, 2)
        hi = spec.max
        lo_now, hi_now = (_finite(vr.lower), _finite(vr.upper)) if vr is not None else (None, None)
        if (lo_now is not None and lo_now > lo) or (hi_now is not None and (hi is None or hi_now < hi)):
            dims.append(spec.name)
            asked = f"{lo} <= {spec.name}" + (f" <= {hi}" if hi is not None else "")
            problems.append(f"Not all values of {spec.name} = {spec.text} in the specified range {asked} "
                            f"satisfy the guards the code needs.{where}")
            new_hi = f", max={hi_now}" if hi_now is not None else ""
            fixes.append(f"{spec.name} = Dim({spec.name!r}, min={lo_now if lo_now is not None else lo}{new_hi})")
    if problems:
        from ..backends.export_program import constraint_violation
        text = "\n".join(f"  - {p}" for p in problems)
        fix = "\n".join(f"  {f}" for f in dict.fromkeys(fixes))
        raise constraint_violation(
            f"Constraints violated ({', '.join(dict.fromkeys(dims))})! For more information, run with "
            f"ARMATURE_LOGS=dynamic.\n{text}\nSuggested fixes:\n{fix}")


def _lines(cap: Capture, sym, names: dict) -> str:
    """The user lines whose code made guards on ``sym``."""
    out = []
    for g, loc in cap.ctx.graph.guard_locations.values():
        if sym in g.expr.free_symbols and loc is not None:
            out.append(f"\n      {_user(g.expr, names)}  made by File \"{loc.filename}\", line {loc.lineno}: "
                       f"{loc.source_line}")
    return "".join(dict.fromkeys(out))
