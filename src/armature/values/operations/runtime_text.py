"""Text that holds the address of an object made in the frame.

``object.__repr__`` (what ``repr()``, ``str()``, ``format()`` and f-strings
fall back to for a class without its own) prints the object's address,
which does not exist while tracing: the object is made for real only when
residual code rebuilds it.  Such text is a :class:`RuntimeTextValue`: a
sequence of constant parts and objects whose default repr goes there,
joined by residual code after the graph (or at a graph break), once the
object exists, so the address in the text is the address of the very
object the program goes on with.  The class name in it is read then too,
as ``object.__repr__`` reads it.

What the trace can do with the text without knowing it: keep it, return
it, store it, put it in a container, join it with other text (``+``, an
f-string, ``sep.join``, ``* n``).  An operation that needs its characters
(``len``, comparisons, a method) is a graph break there; the text is
rebuilt and the operation runs natively, as in eager.  Hashing it (a dict
or set key) happens inside instructions a break cannot split (BUILD_MAP...),
so that break goes back to where the text was made (``origin``): the text
is then made natively and hashed natively.
"""
from __future__ import annotations

from ...diagnostics.errors import Unsupported
from ..base import Value
from ..constant import ConstantValue


def _root_origin(tx) -> tuple[int, bool]:
    """(instruction index in the root frame, from an inlined callee)."""
    f, depth = tx, 0
    while f.parent is not None:
        f, depth = f.parent, depth + 1
    return f.ip - 1, depth > 0


class RuntimeTextValue(Value):
    """A ``str`` whose parts are constant strings and objects (their
    ``object.__repr__``), made at ``origin`` (see :func:`_root_origin`)."""

    def __init__(self, parts: list, origin: tuple[int, bool]):
        super().__init__()
        merged: list = []
        for p in parts:
            if isinstance(p, str) and merged and isinstance(merged[-1], str):
                merged[-1] += p
            elif not (isinstance(p, str) and not p):
                merged.append(p)
        self.parts = merged
        self.origin = origin

    @classmethod
    def of_repr(cls, tx, obj: Value) -> "RuntimeTextValue":
        return cls([obj], _root_origin(tx))

    def python_type(self):
        return str

    def is_python_constant(self):
        return False

    def truth(self, tx):
        return True   # (an object's repr is never empty)

    def unknown(self, what: str) -> Unsupported:
        return Unsupported(f"{what} of text that holds the address of an object made in the frame",
                           hint="the text is known only after the graph runs; the operation runs natively at "
                                "a graph break")

    def unknown_at_origin(self, what: str) -> Unsupported:
        """For a use a graph break cannot split: the break goes where the
        text was made."""
        e = self.unknown(what)
        e.root_index, e.from_callee = self.origin
        return e

    def length(self, tx):
        raise self.unknown("len()")

    def unpack(self, tx):
        raise self.unknown("iterating over the characters")

    def getattr(self, tx, name):
        if not hasattr(str, name):
            from ...diagnostics.errors import user_error
            raise user_error(AttributeError, f"'str' object has no attribute '{name}'")
        return _TextMethod(self, name)   # (the call breaks: a break at LOAD_ATTR is not always possible)

    def concat(self, other: Value, reflected: bool) -> "RuntimeTextValue | None":
        """``self + other`` (``other + self`` when reflected), where both are text."""
        if isinstance(other, RuntimeTextValue):
            theirs, origin = other.parts, min(self.origin, other.origin)
        elif other.is_python_constant() and isinstance(other.as_python_constant(), str):
            theirs, origin = [other.as_python_constant()], self.origin
        else:
            return None
        return RuntimeTextValue(theirs + self.parts if reflected else self.parts + theirs, origin)

    def repeat(self, n: Value) -> "RuntimeTextValue | None":
        """``self * n`` for an int ``n`` known while tracing."""
        if not n.is_python_constant() or type(n.as_python_constant()) is not int:
            return None
        if n.as_python_constant() <= 0:
            return ConstantValue("")
        return RuntimeTextValue(self.parts * n.as_python_constant(), self.origin)

    def reconstruct(self, out):
        for p in self.parts:
            if isinstance(p, str):
                out.load_const(p)
            else:
                out.instr("PUSH_NULL")
                out.load_const(object.__repr__)
                out.reconstruct(p)
                out.call(1)
        if len(self.parts) != 1 or isinstance(self.parts[0], str):
            out.instr("BUILD_STRING", len(self.parts))

    def __repr__(self):
        return f"<text {self.parts!r}>"


class _TextMethod(Value):
    """``text.name`` of runtime text: calling it is a graph break there."""

    def __init__(self, text: RuntimeTextValue, name: str):
        super().__init__()
        self.text, self.name = text, name

    def call(self, tx, args, kwargs):
        raise self.text.unknown(f"str.{self.name}()")

    def reconstruct(self, out):
        out.reconstruct(self.text)
        out.instr("LOAD_ATTR", self.name)


def join_text(tx, parts: list[Value]) -> Value:
    """The concatenation of constant strings and runtime text (BUILD_STRING,
    ``sep.join``)."""
    if all(p.is_python_constant() for p in parts):
        return ConstantValue("".join(p.as_python_constant() for p in parts))
    out: list = []
    origins = []
    for p in parts:
        if isinstance(p, RuntimeTextValue):
            out += p.parts
            origins.append(p.origin)
        elif p.is_python_constant() and isinstance(p.as_python_constant(), str):
            out.append(p.as_python_constant())
        else:
            raise Unsupported(f"building a string from {p}")
    return RuntimeTextValue(out, min(origins))


def join_with(tx, sep: str, items: list[Value]) -> Value | None:
    """``sep.join(items)`` where an item is runtime text (None: no item is)."""
    if not any(isinstance(i, RuntimeTextValue) for i in items):
        return None
    parts: list[Value] = []
    for k, item in enumerate(items):
        if k:
            parts.append(ConstantValue(sep))
        parts.append(item)
    return join_text(tx, parts)
