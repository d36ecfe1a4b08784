"""Cells of closures guarded by their code, not their identity.

A function defined inside another one and handed to a compiled function
(``apply(x, lambda y: y * k)``, ``apply(x, make(k))``) is a new object on
every call.  Guarding it by identity recompiles per call; torch.compile
guards it by code and compiles once.  armature does the same
(values/builder.py: ``__code__`` and ``__globals__`` are guarded, defaults
and cell contents are read, and guarded, through the function's source).

What a code guard alone does not pin is *which cell objects* the closure
holds.  The trace models each real cell as one Value (so a write through one
closure is seen through every other that shares the cell), and that sharing
is a fact about the objects of one call:

- a cell of a per-call closure that is, while tracing, the very cell of
  another function the trace reached (the compiled frame's own closure, a
  sibling closure): the trace reads both through one Value, so the two
  cell sources are guarded to stay the same object (``Kind.SAME_OBJECT``);
- cells the trace saw as distinct, when the trace writes one of them
  (``nonlocal``, ``cell_contents =``): they must stay distinct, or the
  write would land in a cell the graph read as unchanged
  (``Kind.DISTINCT`` over all cells the trace holds, added once at the end
  by ``add_cell_alias_guards``).

Cells of identity-guarded functions are fixed objects: none of this is
needed for them, so a trace with no per-call closure gets no new guard.
"""
from __future__ import annotations

import types
import weakref

from ...guards.guard import Guard, Kind
from .. import kinds

#: ctx -> set of id(RealCellValue) read through a code-guarded function
_VARYING: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def cells_bound(fn) -> bool:
    """Every cell of ``fn`` holds a value.  A closure with an empty cell is
    guarded by identity instead: the trace would raise NameError reading
    it, and no code guard says the cell is still empty next call."""
    for cell in fn.__closure__ or ():
        try:
            cell.cell_contents
        except ValueError:
            return False
    return True


def cell_value(ctx, cell: types.CellType, contents_source, varying: bool):
    """The one Value for ``cell`` in this trace; ``contents_source`` reads
    its contents; ``varying``: read through a function guarded by code (its
    cells may be other objects next call)."""
    if ctx is None:
        return kinds.RealCellValue(cell, contents_source)
    cached = ctx.value_cache.get(id(cell))
    if cached is not None and cached[0] is cell:
        value = cached[1]
        marks = _VARYING.get(ctx, ())
        if (varying or id(value) in marks) and contents_source is not None:
            mine = contents_source.parent
            theirs = value.cell_source()
            if mine != theirs:
                ctx.guards.add(Guard(Kind.SAME_OBJECT, mine, theirs))
        return value
    value = kinds.RealCellValue(cell, contents_source)
    ctx.value_cache[id(cell)] = (cell, value)
    if varying:
        _VARYING.setdefault(ctx, set()).add(id(value))
    return value


def object_source(value):
    """The source of the object ``value`` stands for: a cell's Value reads
    its contents through its source, the cell itself is its parent."""
    if isinstance(value, kinds.RealCellValue) and value.source is not None:
        return value.cell_source()
    return value.source


def add_cell_alias_guards(ctx) -> None:
    """At the end of a trace with a per-call closure whose cells it wrote
    (or that wrote cells a per-call closure may share): every cell it holds
    stays a distinct object, as it was while tracing."""
    marks = _VARYING.get(ctx)
    if not marks:
        return
    cells = [v for _, v in ctx.value_cache.values() if isinstance(v, kinds.RealCellValue) and v.source is not None]
    if len(cells) < 2 or all(v.pending is kinds.CellValue.EMPTY for v in cells):
        return
    sources = []
    for v in cells:
        s = v.cell_source()
        if all(s != o for o in sources):
            sources.append(s)
    if len(sources) >= 2:
        ctx.guards.add(Guard(Kind.DISTINCT, None, sources))
