"""The iteration order of sets holding objects hashed by identity.

CPython's set order follows the hashes, and an object hashed by identity
hashes by its address: the order of such a set is only known at run time,
and it depends on the whole history of the table (insertion order,
deletions, resizes, the operands of ``|``/``&``...), not only on the
members.  So a set of that kind made or changed in the frame is rebuilt in
residual code by *replaying its history natively* on the real objects:
the same operations, in the same order, on operands that are themselves
replayed as they were at the time.  The result is the very table eager
builds, so its order is eager's.

A SetValue's ``recipe`` is that history: a start (``("empty",)``, the real
set it stands for at frame entry, ``set(operand)``, ``a | b``,
``a.union(b)``...) and steps (``add``, ``discard``, ``clear``, ``update``,
``|=``...).  An operand is a snapshot: a copy of a frame set's recipe, a
real set not mutated in the frame, or the keys of an iterable in the order
the trace iterated them.  ``recipe`` None means the history is not
modelled: such a set, if it holds identity-hashed objects, is not rebuilt
(the frame runs as Python) -- never a set in a wrong order.  Before
replaying, the recipe is simulated on the stored keys and must give the
set's members: a path that changed the set without recording (a missed
hook) makes it Unsupported instead of wrong.
"""
from __future__ import annotations

import operator

from ...diagnostics.errors import Unsupported
from .. import kinds


class Recipe:
    __slots__ = ("start", "steps")

    def __init__(self, start: tuple, steps=()):
        self.start, self.steps = start, list(steps)

    def copy(self) -> "Recipe":
        return Recipe(self.start, self.steps)


def empty() -> Recipe:
    return Recipe(("empty",))


def of_real_set(setvalue) -> Recipe:
    """The real set a sourced SetValue stands for, as it was at frame entry."""
    return Recipe(("real", setvalue, frozenset(setvalue.items)))


def snapshot(tx, v):
    """The operand ``v`` as it is now (None: not modelled)."""
    from .containers import _key
    if isinstance(v, kinds.SetValue):
        if v.recipe is None:
            return None
        if v.source is not None:
            # the real set itself: only while the frame has not changed it
            return ("real", v, frozenset(v.items)) if not v.recipe.steps and v.recipe.start[0] == "real" else None
        return ("set", v.cls, v.recipe.copy())
    return ("keys", tuple(_key(i, tx) for i in tx.iterate(v)))


def record(setvalue, step) -> None:
    if setvalue.recipe is not None:
        if step is None:
            setvalue.recipe = None
        else:
            setvalue.recipe.steps.append(step)


def derived(start) -> Recipe | None:
    """A new set made from operands (None if one of them is not modelled)."""
    parts = list(start[2:]) if start[0] in ("binop", "method") else list(start[1:])
    flat = []
    for p in parts:
        flat.extend(p if isinstance(p, list) else [p])
    return None if any(p is None for p in flat) else Recipe(start)


# --- simulation on the stored keys (a consistency check) ---------------------------

def _sim_operand(snap):
    kind = snap[0]
    if kind == "keys":
        return list(snap[1])
    if kind == "real":
        return set(snap[2])
    return simulate(snap[2], snap[1])


def simulate(recipe: Recipe, cls=set):
    start = recipe.start
    kind = start[0]
    if kind == "empty":
        s = set()
    elif kind == "real":
        s = set(start[2])
    elif kind == "new_from":
        s = set(_sim_operand(start[1]))
    elif kind == "binop":
        s = set(getattr(operator, start[1])(set(_sim_operand(start[2])), set(_sim_operand(start[3]))))
    elif kind == "method":
        s = set(getattr(set(_sim_operand(start[2])), start[1])(*[_sim_operand(o) for o in start[3]]))
    else:
        raise Unsupported(f"the set recipe {kind}")
    for step in recipe.steps:
        op = step[0]
        if op == "add":
            s.add(step[1])
        elif op == "discard":
            s.discard(step[1])
        elif op == "clear":
            s.clear()
        elif op == "call":
            getattr(s, step[1])(*[_sim_operand(o) for o in step[2]])
        elif op == "iop":
            s = getattr(operator, step[1])(s, set(_sim_operand(step[2])))
    return s


# --- residual code -------------------------------------------------------------------

class _Encoder:
    """The recipe as nested constant tuples; the Values it needs (keys,
    real sets) are pushed in order and referred to by index."""

    def __init__(self, out):
        self.out, self.n = out, 0

    def value(self, push) -> int:
        push()
        self.n += 1
        return self.n - 1

    def key(self, k) -> int:
        from .keys import emit_key
        return self.value(lambda: emit_key(self.out, k))

    def operand(self, snap):
        kind = snap[0]
        if kind == "keys":
            return ("keys", tuple(self.key(k) for k in snap[1]))
        if kind == "real":
            sv = snap[1]
            if sv.recipe is None or sv.recipe.steps:
                raise Unsupported("a set operand passed in that the frame changed afterwards")
            return ("real", self.value(lambda: sv.source.emit(self.out)))
        return ("set", snap[1], self.recipe(snap[2]))

    def recipe(self, r: Recipe):
        start = r.start
        kind = start[0]
        if kind == "empty":
            enc_start = ("empty",)
        elif kind == "real":
            sv = start[1]
            enc_start = ("real", self.value(lambda: sv.source.emit(self.out)))
        elif kind == "new_from":
            enc_start = ("new_from", self.operand(start[1]))
        elif kind == "binop":
            enc_start = ("binop", start[1], self.operand(start[2]), self.operand(start[3]))
        else:
            enc_start = ("method", start[1], self.operand(start[2]), tuple(self.operand(o) for o in start[3]))
        steps = []
        for step in r.steps:
            op = step[0]
            if op in ("add", "discard"):
                steps.append((op, self.key(step[1])))
            elif op == "clear":
                steps.append(("clear",))
            elif op == "call":
                steps.append(("call", step[1], tuple(self.operand(o) for o in step[2])))
            else:
                steps.append(("iop", step[1], self.operand(step[2])))
        return enc_start, tuple(steps)


def check(setvalue) -> None:
    if setvalue.recipe is None:
        raise Unsupported(f"rebuilding a {setvalue.cls.__name__} of objects hashed by identity whose history is "
                          "not modelled (its order would not be eager's)")
    if simulate(setvalue.recipe) != setvalue.items:
        raise Unsupported(f"rebuilding a {setvalue.cls.__name__} of objects hashed by identity: its recorded "
                          "history does not give its members")


def emit_rebuild(out, setvalue) -> None:
    """Push the set, rebuilt by replaying its history."""
    check(setvalue)
    out.instr("PUSH_NULL")
    out.load_const(replay_set)
    enc = _Encoder(out)
    encoded = enc.recipe(setvalue.recipe)
    out.instr("BUILD_TUPLE", enc.n)
    out.load_const(setvalue.cls)
    out.load_const(encoded)
    out.call(3)


def emit_steps_operand(out, setvalue):
    """For writing back a real set the frame changed: (encoded steps, values
    tuple temp): ``replay_into(real_set, values, steps)`` applies them."""
    check(setvalue)
    if setvalue.recipe.start[0] != "real" or setvalue.recipe.start[1] is not setvalue:
        raise Unsupported("a set passed in whose history does not start from itself")
    enc = _Encoder(out)
    encoded = enc.recipe(setvalue.recipe)
    out.instr("BUILD_TUPLE", enc.n)
    t = out.new_temp()
    out.instr("STORE_FAST", t.name)
    return t, encoded[1]


# --- runtime (residual code calls these) -----------------------------------------

def _operand(vals, enc):
    kind = enc[0]
    if kind == "keys":
        return [vals[i] for i in enc[1]]
    if kind == "real":
        return vals[enc[1]]
    return _build(vals, enc[1], enc[2])


def _apply(s, vals, steps):
    for step in steps:
        op = step[0]
        if op == "add":
            s.add(vals[step[1]])
        elif op == "discard":
            s.discard(vals[step[1]])
        elif op == "clear":
            s.clear()
        elif op == "call":
            getattr(s, step[1])(*[_operand(vals, o) for o in step[2]])
        else:
            s = getattr(operator, step[1])(s, _operand(vals, step[2]))
    return s


def _build(vals, cls, encoded):
    start, steps = encoded
    kind = start[0]
    if kind == "empty":
        s = cls()
    elif kind == "real":
        s = vals[start[1]]
    elif kind == "new_from":
        s = cls(_operand(vals, start[1]))
    elif kind == "binop":
        s = getattr(operator, start[1])(_operand(vals, start[2]), _operand(vals, start[3]))
    else:
        s = getattr(_operand(vals, start[2]), start[1])(*[_operand(vals, o) for o in start[3]])
    return _apply(s, vals, steps)


def replay_set(vals, cls, encoded):
    """A set (frozenset) made in the traced frame, built by the same
    operations eager ran, so that its table (and order) is eager's."""
    return _build(vals, cls, encoded)


def replay_into(s, vals, steps):
    """The frame's operations on a real set, applied to it in order."""
    _apply(s, vals, steps)
