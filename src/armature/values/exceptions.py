"""Exception instances created while tracing (``raise ValueError("x")``)."""
from __future__ import annotations

from ..diagnostics.errors import Unsupported
from .base import Value
from .constant import ConstantValue


class ExceptionValue(Value):
    def __init__(self, cls: type, args: list[Value], source=None):
        super().__init__(source)
        self.cls = cls
        self.args = args

    def python_type(self):
        return self.cls

    def getattr(self, tx, name):
        from .containers import TupleValue
        if name == "args":
            return TupleValue(list(self.args))
        if name in ("__traceback__", "__cause__", "__context__"):
            return ConstantValue(None)
        raise Unsupported(f"attribute {name!r} of an exception")

    def real(self) -> BaseException:
        """The concrete exception (arguments must be constants)."""
        try:
            return self.cls(*[a.as_python_constant() for a in self.args])
        except Unsupported:
            raise Unsupported(f"{self.cls.__name__} with arguments not known while tracing")

    def reconstruct(self, out):
        out.instr("PUSH_NULL")
        out.load_const(self.cls)
        for a in self.args:
            out.reconstruct(a)
        out.call(len(self.args))

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
