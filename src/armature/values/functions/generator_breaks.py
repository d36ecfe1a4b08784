"""Generators live across a graph break: the break moves to where the
generator was made.

A generator the trace makes (values/functions/generators.py) is a paused symbolic
frame.  Residual code cannot rebuild a paused frame, so when a graph break
(or the end of the frame) needs one that is still running (on the stack, in
a local or a cell, in a container or a side effect that the residual code
writes back), the frame is split *earlier*: before the root frame's
instruction that made it (the call of the generator function, or of the
function that made it; the call of a generator expression's function).
That instruction then runs natively and makes a real generator, which the
resume function receives like any other value.  From there the generator is
a real one (``OutsideGeneratorValue``): each ``next()``, ``send()``,
``throw()``, ``close()`` or ``for`` step on it is a graph break whose
instruction runs natively (so the body runs as eager runs it, interleaved
with the frame in eager's order), and the code around them is compiled.

``GeneratorAcrossBreak`` is what ``GeneratorValue.reconstruct`` raises; it
carries the root instruction that made the generator.  The compile loop
(driver/compile_frame.py) re-traces with the break planned there.  Each
move goes strictly earlier in the trace (the generator existed before the
break that needed it), so the loop ends; the loop also refuses an
instruction it has already tried.

Not moved (the frame runs as Python, as before): a generator whose closing
may run code of the program (``closing_may_run_code``: a yield inside a
``try`` whose handler runs code, a ``with``, a ``yield from``).  Freeing it
runs that code, and the native generator is held by the TailCall chain
until the resume function returns, later than eager's frame may drop it.
"""
from __future__ import annotations

import types

from ...diagnostics.errors import Unsupported, UserLocation
from ..base import Value
from ..objects.objects import ObjectValue

#: the methods of a real generator that are a graph break to call
_NATIVE_METHODS = ("send", "throw", "close", "__next__")


class GeneratorAcrossBreak(Unsupported):
    """A generator made in the trace is still running where residual code
    would have to rebuild it."""

    def __init__(self, name: str, origin: tuple[int, bool] | None, made_at: UserLocation | None):
        super().__init__(f"the generator {name} is still running where the compiled code hands its values on "
                         "(a graph break or the return): a paused generator cannot be rebuilt",
                         hint="without fullgraph the frame is split where the generator is made, and the "
                              "generator runs natively; exhaust it before the break or the return to keep "
                              "it in the graph")
        self.name = name
        self.origin = origin
        self.made_at = made_at
        if made_at is not None:
            self.add_location(made_at)
        if origin is not None:
            # (the compile loop plans a break here when no break is planned yet)
            self.root_index, self.from_callee = origin
            self.handling_origin = None


def creation_origin(tx) -> tuple[int, bool] | None:
    """The root frame's instruction during which ``tx`` (the frame making a
    generator) runs, and whether that is inside a call: where the break
    goes.  None when ``tx`` is not under the trace's root frame (a class
    body, a speculative trace)."""
    f, depth = tx, 0
    while f.parent is not None:
        f, depth = f.parent, depth + 1
    if f.code is not getattr(f.ctx.fn, "__code__", None) or f.ip <= 0:
        return None
    return f.ip - 1, depth > 0


def closing_may_run_code(frame) -> bool:
    """Whether closing the generator of ``frame`` (which freeing it does)
    could run code of the program at one of its yields: one inside a
    ``try`` with a handler that runs code, a ``with`` block, or a ``yield
    from``/``await``.  Decided on the code, for every yield, so that it holds
    wherever the native generator is paused later."""
    from ...pyversion import handler_for
    from .generators import _closing_runs_code
    insts = frame.instructions
    for i, inst in enumerate(insts):
        if inst.opname != "YIELD_VALUE":
            continue
        nxt = insts[i + 1] if i + 1 < len(insts) else None
        if nxt is None or nxt.opname != "RESUME" or ((nxt.arg or 0) & 3) != 1:
            return True   # (delegating, or a layout not recognised)
        if _closing_runs_code(frame, handler_for(frame.code, inst.offset)):
            return True
    return False


def _causes(e: BaseException):
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def earlier_break(e: BaseException, can_split, tried: set) -> GeneratorAcrossBreak | None:
    """The GeneratorAcrossBreak behind ``e`` (raised directly, or the reason
    a planned break was not possible), if ``can_split`` accepts its origin
    (an instruction index of the root frame) and that was not tried yet;
    else None."""
    for cause in _causes(e):
        if isinstance(cause, GeneratorAcrossBreak):
            if cause.origin is None or cause.origin[0] in tried or not can_split(cause.origin[0]):
                return None
            return cause
    return None


def moved_reason(reason: str, moved: GeneratorAcrossBreak) -> str:
    where = f" ({moved.made_at.filename}:{moved.made_at.lineno})" if moved.made_at is not None else ""
    return (f"{reason}; split earlier, where the generator {moved.name} is made{where}: a paused generator "
            "cannot be handed to a resume function, so it is made natively")


# --- real generators in a trace --------------------------------------------------

class OutsideGeneratorValue(ObjectValue):
    """A real generator: made natively at a break (above) or passed in.
    Guarded by type only (a new generator every call does not recompile).
    Its frame is not the trace's to run: stepping it is a graph break."""

    def getattr(self, tx, name):
        if name in _NATIVE_METHODS:
            from ...guards.sources import AttrSource
            return NativeGeneratorMethod(self, name, AttrSource(self.source, name))
        return super().getattr(tx, name)


class NativeGeneratorMethod(Value):
    """``g.send`` of a real generator: calling it runs the generator's body,
    which only the native code can do."""

    def __init__(self, gen: OutsideGeneratorValue, name: str, source):
        super().__init__(source)
        self.gen, self.name = gen, name

    def python_type(self):
        return types.BuiltinMethodType

    def call(self, tx, args, kwargs):
        raise Unsupported(f"generator.{self.name}() on {self.gen.source}, a generator that runs natively "
                          "(made at a graph break or outside the compiled function)",
                          hint="the call runs natively (a graph break); the code around it is compiled")

    def __repr__(self):
        return f"<native generator method {self.gen.source}.{self.name}>"


def wrap_real_generator(ctx, obj, source) -> OutsideGeneratorValue | None:
    if type(obj) is not types.GeneratorType or source is None:
        return None
    from ...guards.guard import Guard, Kind
    ctx.guards.add(Guard(Kind.TYPE_MATCH, source, types.GeneratorType))
    return OutsideGeneratorValue(obj, source)
