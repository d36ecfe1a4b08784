"""The base of all symbolic values.

A Value knows its Python type, its Source if it came from outside the frame,
how to answer the operations the interpreter asks of it, and how to rebuild
itself in residual bytecode.  Anything a subclass does not model raises
:class:`Unsupported`, so the frame falls back instead of guessing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..diagnostics.errors import Unsupported
from ..guards.sources import Source

if TYPE_CHECKING:
    from ..codegen.emitter import Emitter
    from ..trace.frame import Frame


class Value:
    source: Source | None = None

    def __init__(self, source: Source | None = None):
        self.source = source

    # --- what it is -----------------------------------------------------
    def python_type(self) -> type:
        raise Unsupported(f"the type of {self} is not known while tracing")

    def is_python_constant(self) -> bool:
        return False

    def as_python_constant(self) -> Any:
        raise Unsupported(f"{self} is not a constant known while tracing")

    # --- what can be asked of it ------------------------------------------
    def getattr(self, tx: "Frame", name: str) -> "Value":
        raise Unsupported(f"attribute {name!r} of {self}")

    def setattr(self, tx: "Frame", name: str, value: "Value") -> None:
        raise Unsupported(f"storing attribute {name!r} on {self}",
                          hint="mutating objects that exist outside the compiled frame is not supported yet")

    def call(self, tx: "Frame", args: list["Value"], kwargs: dict[str, "Value"]) -> "Value":
        raise Unsupported(f"calling {self}")

    def call_method(self, tx: "Frame", name: str, args, kwargs) -> "Value":
        return self.getattr(tx, name).call(tx, args, kwargs)

    def unpack(self, tx: "Frame") -> list["Value"]:
        raise Unsupported(f"iterating over {self}")

    def truth(self, tx: "Frame") -> bool:
        raise Unsupported(f"truth value of {self}")

    def length(self, tx: "Frame") -> int:
        return len(self.unpack(tx))

    # --- residual code ----------------------------------------------------
    def reconstruct(self, out: "Emitter") -> None:
        if self.source is not None:
            self.source.emit(out)
            return
        raise Unsupported(f"returning {self} from a compiled frame")

    def __repr__(self) -> str:
        src = f" {self.source}" if self.source is not None else ""
        return f"<{type(self).__name__}{src}>"


class _Null(Value):
    """The NULL that CPython 3.11 pushes below a callable."""

    def __repr__(self):
        return "NULL"


NULL = _Null()


class LazyValue(Value):
    """A real object not yet wrapped.  Frames hold arguments and defaults as
    LazyValues and realize them on first read, so values the traced code never
    touches install no guards."""

    def __init__(self, obj: Any, source: Source | None):
        super().__init__(source)
        self.obj = obj

    def realize(self, ctx) -> Value:
        from .builder import wrap
        return wrap(ctx, self.obj, self.source)
