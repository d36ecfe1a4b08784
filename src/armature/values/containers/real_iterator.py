"""Iterators from outside the frame: a loop's iterator handed to a resume
function, or an iterator passed in.

A graph break inside a ``for`` loop (LayerDrop's data-dependent branch in
Whisper's layer loop) hands the loop's real iterator to the resume function
on its stack.  Loops over modules (see ``wrap``) are unrolled from it:  Consuming it while tracing would change it, so armature reads
what it has left without consuming it, through the iterator's own
``__reduce__`` (which CPython's list, tuple, range, dict and enumerate
iterators implement by reporting their remaining items).  The trace then
walks that snapshot; each step it takes is a side effect replayed on the
real iterator after the graph (``next(it)``), so the iterator the caller or
the next resume function sees is advanced exactly as eager would have it.
Guards: the iterator's type, how many items it has left, and each item the
trace read (through ``RemainingSource``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind
from ...guards.sources import ItemSource, Source
from .containers import IteratorValue, UserIteratorValue
from ..base import realize
from .. import kinds

_LIST_LIKE = (type(iter([])), type(iter(())), type(iter(range(0))))
_DICT_ITERATORS = (type(iter({}.keys())), type(iter({}.values())), type(iter({}.items())))
#: (a range iterator is not unrolled: range loops are long and counted, and
#: breaking at their FOR_ITER keeps one resume function for every step)
SNAPSHOT_TYPES = frozenset((type(iter([])), type(iter(())), *_DICT_ITERATORS, enumerate))


def remaining(it) -> list:
    """What ``it`` has left, without consuming it."""
    t = type(it)
    if t is enumerate:
        _, (inner, count) = it.__reduce__()[:2]
        return [(count + i, v) for i, v in enumerate(remaining(inner))]
    reduced = it.__reduce__()
    if t in _DICT_ITERATORS:
        return list(reduced[1][0])
    if t in _LIST_LIKE:
        seq = reduced[1][0]
        index = reduced[2] if len(reduced) > 2 else 0
        return list(seq[index:])
    raise TypeError(f"no snapshot of a {t.__name__}")


@dataclass(frozen=True)
class RemainingSource(Source):
    """The items an outside iterator has left (a list made by ``remaining``)."""
    iterator: Source

    @property
    def base(self):
        return self.iterator

    def expr(self, pool):
        return f"{pool.const(remaining)}({pool.render(self.iterator)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(remaining)
        self.iterator.emit(out)
        out.call(1)

    def __str__(self):
        return f"remaining({self.iterator})"


def list_of(it) -> list:
    """The list a list iterator walks (the live object)."""
    return it.__reduce__()[1][0]


def position_of(it) -> int:
    reduced = it.__reduce__()
    return reduced[2] if len(reduced) > 2 else -1


@dataclass(frozen=True)
class IteratorPartSource(Source):
    """``list_of(it)`` / ``position_of(it)`` of a list iterator."""
    iterator: Source
    part: str

    @property
    def base(self):
        return self.iterator

    def _fn(self):
        return list_of if self.part == "list" else position_of

    def expr(self, pool):
        return f"{pool.const(self._fn())}({pool.render(self.iterator)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(self._fn())
        self.iterator.emit(out)
        out.call(1)

    def __str__(self):
        return f"{self.part}_of({self.iterator})"


class RealIteratorValue(IteratorValue):
    def __init__(self, ctx, obj, source: Source):
        from ..builder import wrap
        super().__init__([])
        self.source = source
        self.cls = type(obj)
        if RemainingSource(source) in ctx.dynamic_sources:
            # what this iterator holds changed between calls (a long loop: a
            # new length every iteration): its steps run as Python instead of
            # one compile per iteration
            raise Unsupported(f"iterating the {self.cls.__name__} {source}, whose contents changed between calls",
                              hint="the loop's next() runs as Python; the loop body is still compiled")
        ctx.guards.add(Guard(Kind.TYPE_MATCH, source, self.cls))
        if self.cls is type(iter([])) and position_of(obj) >= 0:
            # a list iterator walks the live list: appends made while the
            # loop runs are seen (one Value for the list, shared with the frame)
            seq = realize(ctx, wrap(ctx, list_of(obj), IteratorPartSource(source, "list")))
            if isinstance(seq, kinds.ListValue):
                pos = position_of(obj)
                ctx.guards.add(Guard(Kind.CONSTANT_MATCH, IteratorPartSource(source, "position"), pos))
                self.items, self.seq, self.index = seq.items, seq, pos
                return
        try:
            rest = remaining(obj)
        except Exception as e:
            raise Unsupported(f"reading what a {self.cls.__name__} has left: {e}")
        rem = RemainingSource(source)
        ctx.guards.add(Guard(Kind.LEN_MATCH, rem, len(rest)))
        self.items = [wrap(ctx, item, ItemSource(rem, i)) for i, item in enumerate(rest)]

    def python_type(self):
        return self.cls

    def next(self, tx):
        from ...effects import MethodCall
        if self.index >= len(self.items):
            return None
        v = self.items[self.index]
        self.index += 1
        tx.ctx.effects.record(MethodCall(self, "__next__", [], {}))
        return v

    unpack = UserIteratorValue.unpack   # (every step goes through next: each is replayed)

    def reconstruct(self, out):
        self.source.emit(out)   # the real iterator (advanced by the replayed steps)

    def __repr__(self):
        return f"<{self.cls.__name__} {self.source} ({len(self.items) - self.index} left)>"


def wrap(ctx, obj, source) -> RealIteratorValue | None:
    """Only loops over modules (a model's layers: short, and each step a
    large graph worth keeping whole) are unrolled from a snapshot; other
    outside iterators keep breaking at their FOR_ITER, which reuses one
    resume function for every step of a long loop."""
    if source is None or type(obj) not in SNAPSHOT_TYPES:
        return None
    try:
        rest = remaining(obj)
    except Exception:
        return None
    if rest and not all(_holds_module(item) for item in rest):
        return None
    return RealIteratorValue(ctx, obj, source)


def _holds_module(item) -> bool:
    import torch
    if isinstance(item, tuple):
        return any(isinstance(i, torch.nn.Module) for i in item)
    return isinstance(item, torch.nn.Module)


def note_changed_iterator(dynamic_sources: set, source) -> None:
    """A failed guard read through an outside iterator's snapshot: that
    iterator is not unrolled again (api's automatic-dynamic bookkeeping)."""
    s = source
    while s is not None:
        if isinstance(s, (RemainingSource, IteratorPartSource)):
            dynamic_sources.add(RemainingSource(s.iterator))
            return
        s = s.base
