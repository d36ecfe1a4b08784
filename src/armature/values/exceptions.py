"""Exception instances created while tracing (``raise ValueError("x")``)."""
from __future__ import annotations

from ..diagnostics.errors import Unsupported
from .base import Value
from .constant import ConstantValue


#: ExceptionValue.context when the exception was raised while the traced
#: frame itself handled nothing: its __context__ is whatever the *caller*
#: is handling, known only when the code runs
RUNTIME_CONTEXT = object()


class ExceptionValue(Value):
    """An exception instance made by the traced program.  Besides its class
    and arguments it carries what raising it did: ``__cause__`` (``raise ...
    from``) and ``__context__`` (the exception being handled at the raise),
    so that reading them while tracing, and the real object rebuilt after a
    graph break, are what eager has."""

    def __init__(self, cls: type, args: list[Value], source=None):
        super().__init__(source)
        self.cls = cls
        self.args = args
        self.cause: Value | None = None       # set by ``raise ... from cause``
        self.has_cause = False
        self.context = None                   # a Value, RUNTIME_CONTEXT or None

    def python_type(self):
        return self.cls

    def raised(self, handled) -> None:
        """Record a raise while ``handled`` (a Value, or None: the caller's
        exception) is being handled, as _PyErr_SetObject does."""
        if handled is self:
            return
        self.context = RUNTIME_CONTEXT if handled is None else handled

    def getattr(self, tx, name):
        from .containers import TupleValue
        if name == "args":
            return TupleValue(list(self.args))
        if name == "__cause__":
            return self.cause if self.has_cause else ConstantValue(None)
        if name == "__suppress_context__":
            return ConstantValue(self.has_cause)
        if name == "__context__":
            if self.context is RUNTIME_CONTEXT:
                raise Unsupported("the __context__ of an exception raised while the caller handles one")
            return self.context if self.context is not None else ConstantValue(None)
        if name == "value" and issubclass(self.cls, StopIteration) and \
                all("value" not in vars(k) for k in self.cls.__mro__ if k is not StopIteration):
            # StopIteration.value: its first argument (what a generator returned)
            return self.args[0] if self.args else ConstantValue(None)
        if name == "__traceback__":
            raise Unsupported("the traceback of an exception raised while tracing")
        raise Unsupported(f"attribute {name!r} of an exception")

    def real(self) -> BaseException:
        """The concrete exception (arguments must be constants)."""
        try:
            return self.cls(*[a.as_python_constant() for a in self.args])
        except Unsupported:
            raise Unsupported(f"{self.cls.__name__} with arguments not known while tracing")

    def reconstruct(self, out):
        linked = self.has_cause or self.context is not None
        if linked:
            from ..runtime.replay import link_exception
            out.instr("PUSH_NULL")
            out.load_const(link_exception)
        out.instr("PUSH_NULL")
        out.load_const(self.cls)
        for a in self.args:
            out.reconstruct(a)
        out.call(len(self.args))
        if not linked:
            return
        if self.has_cause:
            out.reconstruct(self.cause)
        else:
            out.load_const(None)
        out.load_const(self.has_cause)
        if isinstance(self.context, Value):
            out.reconstruct(self.context)
        else:
            out.load_const(None)
        out.load_const(self.context is RUNTIME_CONTEXT)
        out.call(5)

    def __repr__(self):
        return f"<exception {self.cls.__name__}{tuple(self.args)!r}>"


def make_exception(tx, cls_value, args, kwargs) -> ExceptionValue:
    cls = cls_value.cls
    if kwargs:
        raise Unsupported(f"{cls.__name__}(...) with keyword arguments")
    for klass in cls.__mro__:
        if "__init__" in klass.__dict__ or "__new__" in klass.__dict__:
            if klass.__module__ != "builtins":
                raise Unsupported(f"creating {cls.__qualname__}, which defines __init__/__new__")
            break
    return ExceptionValue(cls, list(args))


class ExcInfoSlot(Value):
    """The stack slot PUSH_EXC_INFO fills with the previously handled
    exception.  Its real content is whatever the thread was handling when
    the handler was entered, which a trace cannot know; so a graph break
    inside an ``except`` body does not rebuild it as a value: the resume
    function re-enters the handler with PUSH_EXC_INFO on ``handled`` (the
    exception being handled), which pushes the real previous one and makes
    ``handled`` current again, exactly as the original frame had it."""

    def __init__(self, prev: Value, handled: Value):
        super().__init__()
        self.prev, self.handled = prev, handled

    def reconstruct(self, out):
        out.reconstruct(self.handled)

    def __repr__(self):
        return f"<exc_info slot, handling {self.handled!r}>"
