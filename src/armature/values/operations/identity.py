"""``id()`` of values whose identity the trace knows, without the number.

The number ``id(obj)`` is the object's address: for an object made in the
frame (or a tensor argument, a new one each call) it changes from call to
call, so it can never be a constant of the graph or of a guard.  What the
trace does know is *which* objects are the same: each real object is one
Value (builder.py), every object made in the trace is its own Value.  So
``id(v)`` is an IdValue that remembers ``v``, and the operations programs
use ids for -- ``id(a) == id(b)``, ``id(t) in seen``, ``seen.add(id(t))``,
dict keys -- are answered by identity of the Values.

Two distinct objects have distinct ids only while both are alive: CPython
reuses the address of a freed object (``id([1]) == id([1])`` is usually
True).  So when ``id(b)`` is taken, every object whose id was taken before
must still be alive: a pre-existing object (it has a Source) while the
trace has recorded no side effect that could have dropped it, an object
made in the frame while it is reachable from the frames' locals, cells and
stacks (through the containers modelled here).  An earlier one that may
be dead makes the pair ambiguous: comparing them, or using the newer id as
a key, is Unsupported.  Two pre-existing objects that the trace sees as
distinct are guarded to stay distinct (``Kind.DISTINCT``).

Objects fixed for the compiled entry anyway (functions, classes, modules,
builtins: identity-guarded where they were read) keep a real, guarded
number.  An IdValue that leaves the frame (returned, stored outside) is
Unsupported: its number exists only at run time.
"""
from __future__ import annotations

import operator
import weakref

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind
from ..base import LazyValue, Value, realize, CallableConstantValue
from ..constant import ConstantValue
from .. import kinds

_HINT = ("identity of objects made in the frame (or of tensors) is known while tracing only as "
         "'same object or not'; compare ids or use them as keys inside the compiled function, "
         "or compute the number outside it")


class _Registry:
    """Per trace: the Values whose id was taken, in order, the ambiguous
    pairs, and the one DISTINCT guard over the pre-existing ones."""

    def __init__(self):
        self.targets: list[Value] = []
        self.ambiguous: set[frozenset] = set()
        self.tainted: set[int] = set()
        self.distinct: Guard | None = None
        #: pre-existing objects used as identity-hashed dict/set keys
        self.keyed: list[Value] = []


_REGISTRIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _registry(ctx) -> _Registry:
    reg = _REGISTRIES.get(ctx)
    if reg is None:
        reg = _REGISTRIES[ctx] = _Registry()
    return reg


class IdValue(Value):
    """``id(target)`` for a target whose address is not a constant."""

    def __init__(self, target: Value):
        super().__init__()
        self.target = target

    def python_type(self):
        return int

    def truth(self, tx):
        return True   # (an address is never 0)

    def reconstruct(self, out):
        raise Unsupported(f"id() of {self.target} leaves the compiled frame (its number is known only at run "
                          "time)", hint=_HINT)

    def __repr__(self):
        return f"<id of {self.target!r}>"


class KnownId(ConstantValue):
    """The real, guarded ``id()`` of an object fixed for the compiled entry;
    it remembers the object's Value for comparisons with IdValues."""

    def __init__(self, value: int, target: Value):
        super().__init__(value)
        self.target = target


NOT_FIXED = object()


def _fixed_object(v: Value):
    """The real object behind a Value that is fixed for the entry: a
    function, class, module or builtin identity-guarded where it was read
    (it has a source), or a builtin/torch function or module the trace
    trusts without one (read from torch's or the builtins' namespace), or
    NOT_FIXED."""
    if isinstance(v, CallableConstantValue):
        return v.fn
    if isinstance(v, kinds.PythonModuleValue):
        return v.module
    if isinstance(v, ConstantValue) and not isinstance(v, KnownId) and _unique_constant(v.value):
        return v.value
    if v.source is None:
        return NOT_FIXED
    if isinstance(v, kinds.ClassValue):
        return v.cls
    if isinstance(v, kinds.UserFunctionValue):
        return v.fn
    return NOT_FIXED


def _unique_constant(value) -> bool:
    """Constants that are one object wherever they come from: singletons,
    dtypes and the like, enum members, code objects."""
    import enum
    import types
    import torch
    return value is None or value is Ellipsis or value is NotImplemented or type(value) is bool or \
        isinstance(value, (torch.dtype, torch.layout, torch.memory_format, enum.Enum, types.CodeType))


def id_of(tx, obj: Value) -> Value:
    """The ``id`` builtin."""
    obj = realize(tx.ctx, obj)
    if isinstance(obj, kinds.SymbolicNumberValue) or \
            isinstance(obj, ConstantValue) and not isinstance(obj, KnownId) and not _unique_constant(obj.value):
        # numbers, strings, tuples: whether two equal ones are one object
        # depends on CPython's caches and on how they were computed
        raise Unsupported(f"id() of the constant {obj}", hint=_HINT)
    _note_taken(tx, obj)
    real = _fixed_object(obj)
    if real is not NOT_FIXED:
        if obj.source is not None:
            tx.ctx.guards.add(Guard(Kind.ID_MATCH, obj.source, real))
        return KnownId(id(real), obj)
    return IdValue(obj)


# --- liveness -------------------------------------------------------------------


def _children(v: Value):
    """The Values ``v`` holds references to, as far as armature models them
    (an under-approximation: a holder not listed here only makes an object
    look dead, which makes a comparison Unsupported, never wrong)."""
    from ..containers.containers import _Sequence
    from ..containers.keys import key_value
    if isinstance(v, _Sequence):
        return list(v.items)
    if isinstance(v, kinds.DictValue):
        return [key_value(k) for k in v.items] + list(v.items.values())
    if isinstance(v, kinds.SetValue):
        return [key_value(k) for k in v.items]
    if isinstance(v, kinds.CellValue):
        return [] if v.contents is kinds.CellValue.EMPTY else [v.contents]
    if isinstance(v, kinds.RealCellValue):
        return [v.pending] if isinstance(v.pending, Value) else []
    if isinstance(v, kinds.NestedFunctionValue):
        out = list(v.closure) + [d for d in (v._defaults, v._kwdefaults, v.dict_value, v.annotations) if d is not None]
        return out + list(v.assigned.values())
    if isinstance(v, kinds.BoundMethodValue):
        return [v.func, v.obj]
    if isinstance(v, kinds.GeneratorValue):
        return [] if v.done else _frame_roots(v.frame)
    if isinstance(v, kinds.IteratorValue):
        return list(v.items[v.index:]) + ([v.seq] if getattr(v, "seq", None) is not None else [])
    if isinstance(v, kinds.ExceptionValue):
        return list(v.args)
    return []


def _frame_roots(f) -> list:
    return [*f.locals.values(), *f.stack, *f.cells.values()]


def _alive_now(tx) -> set[int]:
    """ids of the Values reachable from the running frames."""
    import inspect
    roots: list = []
    f = tx
    while f is not None:
        roots.extend(_frame_roots(f))
        if f.code.co_flags & inspect.CO_GENERATOR:
            break   # (its parent made it and may have returned since)
        f = f.parent
    seen: set[int] = set()
    while roots:
        v = roots.pop()
        if type(v) is LazyValue:
            v = v._realized
            if v is None:
                continue
        if not isinstance(v, Value) or id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, IdValue):
            continue   # (an int: it does not keep its object alive)
        roots.extend(_children(v))
    return seen


def _alive(tx, v: Value, alive_ids: set[int]) -> bool:
    if _fixed_object(v) is not NOT_FIXED and v.source is None:
        return True   # (a builtin or torch function, a singleton: held by their modules)
    if v.source is not None:
        return len(tx.ctx.effects) == 0
    return id(v) in alive_ids


def _note_taken(tx, target: Value) -> None:
    """Record ``id(target)`` being taken now; pairs with earlier targets
    that may have died are ambiguous."""
    reg = _registry(tx.ctx)
    if any(t is target for t in reg.targets):
        return
    if reg.targets:
        alive_ids = _alive_now(tx)
        for earlier in reg.targets:
            if not _alive(tx, earlier, alive_ids):
                reg.ambiguous.add(frozenset((id(earlier), id(target))))
                reg.tainted.add(id(target))
    reg.targets.append(target)


def _distinct(tx, a: Value, b: Value) -> bool:
    """Whether two different Values are two different objects (guarded
    for pre-existing ones)."""
    from .operators import is_same
    for fixed, other in ((a, b), (b, a)):
        real = _fixed_object(fixed)
        if real is not NOT_FIXED and _fixed_object(other) is NOT_FIXED:
            try:
                if other.python_type() is not type(real):
                    return True   # (objects of two types: a tensor is never torch.relu)
            except Unsupported:
                pass
    if is_same(tx, a, b):
        return False
    if a.source is not None and b.source is not None:
        _guard_distinct(tx, a, b)
    return True


def made_per_call(source) -> bool:
    """A source that builds a new object on every call (a 0-d tensor over a
    symbolic number, a tensor over an ndarray): never the same object as
    anything else, so there is nothing to guard."""
    from ..tensors.symbolic import ScalarTensorSource
    return isinstance(source, ScalarTensorSource) or getattr(source, "fresh_per_call", False)


def made_in_frame(source) -> bool:
    """A source rooted at an object the transformed function builds itself
    (values/nn/fresh_modules.py): distinct from everything passed in by
    construction, and out of a guard function's reach."""
    root = source.root() if hasattr(source, "root") else None
    return bool(getattr(root, "made_in_frame", False))


def _guard_distinct(tx, *values: Value) -> None:
    _guard_distinct_in(tx.ctx, *values)


def _guard_distinct_in(ctx, *values: Value) -> None:
    reg = _registry(ctx)
    sources = [v.source for v in values if not made_per_call(v.source) and not made_in_frame(v.source)]
    if len(sources) < 2 and reg.distinct is None:
        return
    if reg.distinct is None:
        reg.distinct = Guard(Kind.DISTINCT, None, [])
        ctx.guards.add(reg.distinct)
    for s in sources:
        if all(s != e for e in reg.distinct.expected):
            reg.distinct.expected.append(s)


def _same_object(tx, a: Value, b: Value) -> bool:
    if a is b:
        return True
    reg = _registry(tx.ctx)
    if frozenset((id(a), id(b))) in reg.ambiguous:
        raise Unsupported(f"comparing id() of {a} and of {b}: the first may have been freed before the second "
                          "was made (CPython may reuse its address)", hint=_HINT)
    return not _distinct(tx, a, b)


def compare(tx, op, a: Value, b: Value) -> Value | None:
    """``a == b`` / ``a != b`` with an IdValue on either side, or None when
    neither is one."""
    if not (isinstance(a, IdValue) or isinstance(b, IdValue)):
        return None
    if op not in (operator.eq, operator.ne):
        raise Unsupported(f"ordering id() values ({op.__name__})", hint=_HINT)
    ta, tb = (getattr(v, "target", None) for v in (a, b))
    if ta is None or tb is None:
        other = a if ta is None else b
        if isinstance(other, ConstantValue) and not isinstance(other.value, (int, float, complex)):
            return ConstantValue(op is operator.ne)   # (an id is an int: never equal to a str, None...)
        raise Unsupported(f"comparing id() of {ta if ta is not None else tb} with the number {a if ta is None else b}",
                          hint=_HINT)
    same = _same_object(tx, ta, tb)
    return ConstantValue(same if op is operator.eq else not same)


class _IdKey:
    """The dict/set key stand-in of an IdValue: hashed and compared by the
    identity of its object."""

    __slots__ = ("target",)

    def __init__(self, target: Value):
        self.target = target

    def __hash__(self):
        return hash(("id", id(self.target)))

    def __eq__(self, other):
        if type(other) is _IdKey:
            return other.target is self.target
        raise Unsupported("an id() key meets an int key with the same hash")

    def __repr__(self):
        return f"id({self.target!r})"


def key_of(tx, v: IdValue):
    """The dict/set key for an IdValue (see keys.make_key)."""
    from ..containers.keys import ValueKey
    reg = _registry(tx.ctx)
    target = v.target
    if id(target) in reg.tainted:
        raise Unsupported(f"id() of {target} as a key: an object whose id was taken before may have been freed "
                          "(CPython may reuse its address)", hint=_HINT)
    if target.source is not None:
        others = [t for t in reg.targets if t is not target and t.source is not None]
        if others:
            _guard_distinct(tx, target, *others)
    return ValueKey(v, _IdKey(target))


def guard_identity_key(ctx, v: Value) -> None:
    """``v``, an object from outside the frame hashed by identity (a tensor
    argument, a parameter), becomes a dict or set key.  The trace answers
    lookups by the identity of Values: two keys from two Values never meet.
    That holds on a later call only while those objects stay distinct
    (``f(x, y)`` traced, then ``f(x, x)``: ``a in {b}`` must become True),
    so every such key is guarded distinct from the earlier ones; an aliased
    call fails the guard and is traced apart (where the builder gives both
    sources one Value)."""
    if ctx is None or v.source is None or made_per_call(v.source) or made_in_frame(v.source):
        return
    reg = _registry(ctx)
    if any(k is v for k in reg.keyed):
        return
    reg.keyed.append(v)
    if len(reg.keyed) >= 2:
        _guard_distinct_in(ctx, *reg.keyed)
