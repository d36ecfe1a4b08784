"""The base of all symbolic values.

A Value knows its Python type, its Source if it came from outside the frame,
how to answer the operations the interpreter asks of it, and how to rebuild
itself in residual bytecode.  Anything a subclass does not model raises
:class:`Unsupported`, so the frame falls back instead of guessing.
"""
from __future__ import annotations

from typing import Any

from ..diagnostics.errors import Unsupported, UserException, internal_error
from ..guards.sources import Source
from . import kinds

# ``Frame`` (trace/frame.py) and ``Emitter`` (codegen/emitter.py) in the
# annotations below are named, not imported: the tracer and the code
# generator sit above this layer and hand their objects in.


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

    def has_attr(self, tx: "Frame", name: str) -> bool:
        """``hasattr``: getattr, with a modelled AttributeError meaning False."""
        from ..diagnostics.errors import UserException
        try:
            get_attribute(tx, self, name)
            return True
        except UserException as e:
            if issubclass(e.exc_type, AttributeError):
                return False
            raise

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
        if self.is_python_constant():  # classes, builtins, modules, torch functions
            out.load_const(self.as_python_constant())
            return
        raise Unsupported(f"returning {self} from a compiled frame")

    def __repr__(self) -> str:
        src = f" {self.source}" if self.source is not None else ""
        return f"<{type(self).__name__}{src}>"


class CallableConstantValue(Value):
    """A fixed callable object (a builtin, a torch function, a marked
    function): a constant of the trace, guarded by identity where it was
    read; subclasses say what calling it does."""

    def __init__(self, fn, source: Source | None = None):
        super().__init__(source)
        self.fn = fn

    def python_type(self):
        return type(self.fn)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.fn

    def getattr(self, tx, name):
        # (``func.__name__`` in a __torch_function__, ``fn.__wrapped__``...)
        from .functions.functions import callable_constant_attribute
        return callable_constant_attribute(tx, self, name)


class _Null(Value):
    """The NULL that CPython 3.11 pushes below a callable."""

    def __repr__(self):
        return "NULL"


NULL = _Null()


class LazyValue(Value):
    """A real object not yet wrapped.  Arguments, defaults and values handed
    to resume functions start as LazyValues: moving them around (locals,
    the stack, containers, calls) keeps them lazy, and only an operation
    that needs to know what they are realizes them -- and installs their
    guards.  Values the traced code only passes along are never guarded."""

    def __init__(self, obj: Any, source: Source | None, ctx=None):
        super().__init__(source)
        self.obj = obj
        self._realized: Value | None = None
        self._ctx = ctx

    def realize(self, ctx=None) -> Value:
        if self._realized is None:
            from .builder import wrap
            self._realized = wrap(ctx or self._ctx, self.obj, self.source)
        return self._realized

    def reconstruct(self, out):
        if self._realized is not None:
            out.reconstruct(self._realized)
        else:
            self.source.emit(out)

    def __repr__(self):
        return f"<lazy {self.source}>"


_Py_TPFLAGS_HEAPTYPE = 1 << 9


def type_name(cls: type) -> str:
    """A class's ``tp_name``, as CPython's messages print it: the name of a
    class made by a class statement or of a builtin, ``module.qualname``
    of another static type."""
    if cls.__flags__ & _Py_TPFLAGS_HEAPTYPE or cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def realize(ctx, v: Value) -> Value:
    """The realized Value of ``v`` (``v`` itself unless it is lazy)."""
    return v.realize(ctx) if type(v) is LazyValue else v


def concrete(tx, v: Value) -> Value:
    """``v`` with symbolic numbers (and strings formatted from them)
    specialised (guarded), for operations that need the actual value."""
    v = realize(tx.ctx, v)
    if isinstance(v, kinds.SymbolicNumberValue) or isinstance(v, kinds.FormattedStringValue):
        return v.specialize(tx)
    return v


def get_attribute(tx, v: Value, name: str) -> Value:
    """``v.name`` as the trace models it.  A modelled AttributeError for an
    attribute the real object has (a function's ``__class__``) is a gap in
    armature's object model: raising it would send the program down its
    ``except AttributeError`` path, so it is an internal error instead."""
    try:
        return v.getattr(tx, name)
    except UserException as e:
        if issubclass(e.exc_type, AttributeError):
            real = _real_object(v)
            if real is not _UNKNOWN and _has_real_attribute(real, name):
                raise internal_error(f"armature's model of {v} has no attribute {name!r}, "
                                     f"but the {type(real).__name__} object has one") from None
        raise


_UNKNOWN = object()


def _real_object(v: Value):
    """The real object behind an immutable-in-practice Value (a constant, a
    function), or _UNKNOWN: objects with pending writes are not compared."""
    if type(v) is LazyValue:
        return v.obj
    import types
    fn = getattr(v, "fn", None)
    if isinstance(fn, (types.FunctionType, types.BuiltinFunctionType)):
        return fn
    try:
        if v.is_python_constant():
            return v.as_python_constant()
    except Exception:
        pass
    return _UNKNOWN


def _has_real_attribute(obj, name: str) -> bool:
    try:
        return hasattr(obj, name)
    except Exception:  # a property of the real object that raises something else
        return False


def _delegate(name):
    def method(self, *args, **kwargs):
        return getattr(self.realize(), name)(*args, **kwargs)
    method.__name__ = name
    return method


# Everything a caller may ask of a Value realizes a lazy one first.
for _name in ("python_type", "is_python_constant", "as_python_constant", "getattr", "setattr",
              "call", "call_method", "unpack", "truth", "length"):
    setattr(LazyValue, _name, _delegate(_name))
