"""Classes that a ``class`` statement of a compiled frame makes anew on every
call, read by a later trace (a resume function after a graph break, or any
compiled function they are handed to).

Eager runs the class statement on every call, so every call has its own
class object.  Where such a class crosses a graph break (the statement was
traced and the class is rebuilt by residual code, values/objects/class_def.py
``rebuild_class``; or the statement itself ran natively at a break, because
its metaclass is not modelled: :func:`native_build_class`), the resume
function receives a different class on every call.  An identity guard on it
would fail on every call (a recompile per call, until the limit).

So a class made by a class statement is remembered at run time with the
statement that made it (the code object of its body) in a weak registry,
and a trace that meets one guards it by what the code relies on instead of
by identity (:func:`wrap_per_call_class`):

* the statement that made it (``statement_of(cls) is <body code>``);
* its metaclass (by identity), ``__name__``, ``__qualname__``, ``__module__``;
* the keys of its ``__dict__`` (so a name missing from the class is missing
  on every call: attribute lookups that fall through it stay right);
* its bases, each guarded the same way (by identity where it is not made
  per call), so its MRO is the same up to the per-call classes in it.

Everything else the trace reads of the class goes through sources rooted at
the class's own source (values/objects/objects.py ``class_source``), never through
a constant: a class attribute is guarded where it is read (a constant by
value, so a body that read a frame value recompiles only when that value
changes); a function of the class (new on every call) by its code and
globals, its closure cells and defaults read through it; a
``staticmethod``/``classmethod``/``property`` object by type, with its
function read through it.  An instance of such a class is guarded by its
``__class__`` the same way.  Two such classes of one statement seen as
different objects are guarded to stay different.  One compiled resume
function then serves every call.
"""
from __future__ import annotations

import builtins
import types
import weakref
from dataclasses import dataclass

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource, ItemSource, Source
from ..builder import wrap
from .. import kinds

#: classes made by a class statement of a compiled frame -> the code object
#: of that statement's body
_STATEMENT_OF: "weakref.WeakKeyDictionary[type, types.CodeType]" = weakref.WeakKeyDictionary()


def note_made(cls, body_code: types.CodeType):
    """Residual code: remember that ``cls`` was made by the class statement
    whose body is ``body_code`` (a new class on every call)."""
    if isinstance(cls, type):
        try:
            _STATEMENT_OF[cls] = body_code
        except TypeError:   # pragma: no cover - a metaclass without weak references
            pass
    return cls


def statement_of(obj) -> types.CodeType | None:
    """The body code of the class statement that made ``obj`` at run time
    (None for any other object).  Called by guard functions."""
    try:
        return _STATEMENT_OF.get(obj)
    except TypeError:   # unhashable
        return None


def native_build_class(func, name, *bases, **kwargs):
    """``builtins.__build_class__`` as residual code calls it where a class
    statement runs natively at a graph break (a metaclass the trace does not
    model): the class is eager's, remembered as made per call."""
    cls = builtins.__build_class__(func, name, *bases, **kwargs)
    if isinstance(func, types.FunctionType):
        note_made(cls, func.__code__)
    return cls


@dataclass(frozen=True)
class StatementSource(Source):
    """``statement_of(<base>)``: read by guards only."""

    parent: Source

    @property
    def base(self):
        return self.parent

    def expr(self, pool):
        return f"{pool.const(statement_of)}({pool.render(self.parent)})"

    def emit(self, out):  # pragma: no cover - guards only
        raise Unsupported("loading the class statement of a class")

    def __str__(self):
        return f"<class statement of {self.parent}>"


def _state(ctx) -> dict:
    """This trace's per-call classes: id(cls) -> (cls, its ClassValue)."""
    return ctx.__dict__.setdefault("per_call_classes", {})


def wrap_per_call_class(ctx, cls: type, source: Source | None):
    """The Value of ``cls``, a class made per call by a class statement, read
    from ``source``: guarded by what the trace relies on (module doc)."""
    if source is None:
        raise Unsupported(f"the class {cls.__qualname__}, made per call by a class statement, reached "
                          "without a source")
    body = statement_of(cls)
    add = ctx.guards.add
    add(Guard(Kind.ID_MATCH, StatementSource(source), body))
    add(Guard(Kind.ID_MATCH, AttrSource(source, "__class__"), type(cls)))
    for name in ("__name__", "__qualname__", "__module__"):
        if type(getattr(cls, name, None)) is str:
            add(Guard(Kind.CONSTANT_MATCH, AttrSource(source, name), getattr(cls, name)))
    add(Guard(Kind.DICT_KEYS, AttrSource(source, "__dict__"), list(cls.__dict__)))
    add(Guard(Kind.LEN_MATCH, AttrSource(source, "__bases__"), len(cls.__bases__)))
    value = kinds.ClassValue(cls, source)
    if issubclass(cls, tuple):
        from ..stdlib.namedtuple import NamedTupleClassValue, _is_namedtuple_class
        if _is_namedtuple_class(cls):   # (made per call by collections.namedtuple)
            value = NamedTupleClassValue(cls, source)
    state = _state(ctx)
    for other, other_value in state.values():
        if other is not cls and statement_of(other) is body:
            # seen as different classes of one statement: they stay different
            add(Guard(Kind.DISTINCT, None, [other_value.source, source]))
    state[id(cls)] = (cls, value)
    ctx.value_cache[id(cls)] = (cls, value)   # (before the bases: a base never reaches back)
    for i, b in enumerate(cls.__bases__):
        wrap(ctx, b, ItemSource(AttrSource(source, "__bases__"), i))
    return value


def per_call_class_value(ctx, cls):
    """The Value this trace made for ``cls`` if it is a class made per call
    (None otherwise)."""
    if ctx is None:
        return None
    hit = _state(ctx).get(id(cls))
    return hit[1] if hit is not None and hit[0] is cls else None


def reached_through_per_call_class(ctx, source) -> bool:
    """Whether ``source`` reads from inside a class made per call (its
    ``__dict__`` entries: functions and descriptors made per call too)."""
    state = ctx.__dict__.get("per_call_classes")
    if not state or source is None:
        return False
    roots = {v.source for _, v in state.values()}
    s = getattr(source, "base", None)
    while s is not None:
        if s in roots:
            return True
        s = getattr(s, "base", None)
    return False


def class_source_of(ctx, cls) -> Source | None:
    """The source the trace reads ``cls`` through, if it is a class made per
    call (None: the class is fixed, read as a constant).  A class made per
    call that this trace has no source for cannot be read soundly."""
    if statement_of(cls) is None:
        return None
    value = per_call_class_value(ctx, cls)
    if value is None:
        raise Unsupported(f"the class {cls.__qualname__}, made per call by a class statement, reached "
                          "without a source")
    return value.source


def emit_class(out, cls, cls_value) -> bool:
    """Residual code that loads ``cls`` for rebuilding an instance: through
    ``cls_value`` where the class is made per call.  False where the class
    is fixed (the caller loads it as a constant)."""
    if statement_of(cls) is None:
        return False
    if cls_value is None or cls_value.source is None:
        raise Unsupported(f"rebuilding an instance of {cls.__qualname__}, a class made per call")
    out.reconstruct(cls_value)
    return True
