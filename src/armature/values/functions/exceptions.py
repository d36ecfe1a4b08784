"""Exception instances created while tracing (``raise ValueError("x")``)."""
from __future__ import annotations

from ...diagnostics.errors import Unsupported
from ..base import Value
from ..constant import ConstantValue
from ..builder import wrap
from .. import kinds


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
        #: instance-dict writes (``self.key = key`` in a user ``__init__``)
        self.attrs: dict[str, Value] = {}
        #: made by a user ``__init__``: rebuilt without running it again
        self.custom_init = False
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
        if name in self.attrs:
            return self.attrs[name]
        if name == "args":
            return kinds.TupleValue(list(self.args))
        if name == "__class__":
            return wrap(tx.ctx, self.cls, None)
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
        from ..objects.objects import _MISSING, bind_attr, find_class_attr
        raw, owner = find_class_attr(self.cls, name)
        if raw is not _MISSING and (owner.__module__ != "builtins" or name in ("__str__", "__repr__")):
            # a method, property or constant of the user's exception class
            # (the builtin __str__/__repr__ have rules: values/operations/exception_text.py)
            return bind_attr(tx, raw, owner, name, self, wrap(tx.ctx, self.cls, None))
        if raw is _MISSING and not any(k.__module__ != "builtins" and "__getattr__" in k.__dict__
                                       for k in self.cls.__mro__):
            from ...diagnostics.errors import user_error
            raise user_error(AttributeError, f"{self.cls.__name__!r} object has no attribute {name!r}")
        raise Unsupported(f"attribute {name!r} of an exception")

    def setattr(self, tx, name, value):
        """``self.key = key`` (in a user ``__init__``) or ``e.args = ...``."""
        from ..objects.objects import _MISSING, _is_data_descriptor, find_class_attr
        if name == "args":
            self.args = list(tx.iterate(value))
            if not isinstance(value, kinds.TupleValue):
                self.custom_init = True   # (rebuilt through BaseException.__new__)
            return
        raw, owner = find_class_attr(self.cls, name)
        sa, _ = find_class_attr(self.cls, "__setattr__")
        if name.startswith("__") or sa is not object.__setattr__ and sa is not BaseException.__setattr__ \
                or raw is not _MISSING and _is_data_descriptor(raw):
            raise Unsupported(f"setting {name!r} on an exception")
        self.attrs[name] = value

    def real(self) -> BaseException:
        """The concrete exception (arguments must be constants)."""
        try:
            args = [a.as_python_constant() for a in self.args]
            if self.custom_init or self.attrs:
                return rebuild_exception(self.cls, tuple(args), tuple(self.attrs),
                                         tuple(v.as_python_constant() for v in self.attrs.values()))
            return self.cls(*args)
        except Unsupported:
            raise Unsupported(f"{self.cls.__name__} with arguments not known while tracing")

    def reconstruct(self, out):
        linked = self.has_cause or self.context is not None
        if linked:
            from ...runtime.replay import link_exception
            out.instr("PUSH_NULL")
            out.load_const(link_exception)
        out.instr("PUSH_NULL")
        if self.custom_init or self.attrs:
            out.load_const(rebuild_exception)
            self._emit_class(out)
            for a in self.args:
                out.reconstruct(a)
            out.instr("BUILD_TUPLE", len(self.args))
            out.load_const(tuple(self.attrs))
            for v in self.attrs.values():
                out.reconstruct(v)
            out.instr("BUILD_TUPLE", len(self.attrs))
            out.call(4)
        else:
            self._emit_class(out)
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

    def _emit_class(self, out):
        from ..objects.per_call_classes import emit_class
        made = kinds.made_class_value(self.cls)
        if made is not None:   # a class statement of the frame: the class rebuilt for this call
            out.reconstruct(made)
        elif not emit_class(out, self.cls, getattr(self, "cls_value", None)):
            out.load_const(self.cls)

    def __repr__(self):
        return f"<exception {self.cls.__name__}{tuple(self.args)!r}>"


def as_exception(tx, v) -> ExceptionValue:
    """What ``raise v`` (or ``throw(v)``) raises: ``v`` itself, or an
    instance made by calling ``v``, a BaseException class."""
    if isinstance(v, ExceptionValue):
        return v
    if isinstance(v, kinds.ClassValue) and issubclass(v.cls, BaseException):
        exc = v.call(tx, [], {})
        if isinstance(exc, ExceptionValue):
            return exc
    raise Unsupported(f"raising {v}")


def rebuild_exception(cls, args, names, values):
    """Residual code: an exception a user ``__init__`` made in the trace, with
    its final ``args`` and attributes, without running ``__init__`` again
    (``BaseException.__new__`` stores the arguments, as for any exception)."""
    exc = BaseException.__new__(cls, *args)
    exc.args = args
    for k, v in zip(names, values):
        setattr(exc, k, v)
    return exc


#: builtin exception classes whose ``__init__`` only stores ``args``
#: (BaseException_init); others parse their arguments (OSError, StopIteration...)
_GENERIC_INIT = frozenset({BaseException, Exception, ValueError, TypeError, RuntimeError, KeyError, IndexError,
                           LookupError, ArithmeticError, ZeroDivisionError, NotImplementedError, AssertionError,
                           OverflowError, RecursionError, EOFError, BufferError, MemoryError, Warning,
                           UserWarning, DeprecationWarning, RuntimeWarning})


def make_exception(tx, cls_value, args, kwargs) -> ExceptionValue:
    """``cls(*args, **kwargs)``: ``BaseException.__new__`` stores the
    arguments, then ``__init__`` runs (a user's inlined, on this Value)."""
    from ..objects.objects import _MISSING, bind_attr, find_class_attr
    cls = cls_value.cls
    new_raw, new_owner = find_class_attr(cls, "__new__")
    if new_owner.__module__ != "builtins":
        raise Unsupported(f"creating {cls.__qualname__}, which defines __new__")
    init_raw, owner = find_class_attr(cls, "__init__")
    if cls is OSError and args:   # OSError(errno, ...) makes the subclass of that errno
        from ..containers.containers import unwrap_constants
        a, _ = unwrap_constants(args, {}, what="OSError()")
        cls = type(OSError(*a))
    exc = ExceptionValue(cls, list(args))
    exc.cls_value = cls_value if cls is cls_value.cls else None   # (a class made per call is rebuilt through it)
    if owner.__module__ == "builtins":
        if kwargs:
            if owner in _GENERIC_INIT:
                from ...diagnostics.errors import user_error
                raise user_error(TypeError, f"{cls.__name__}() takes no keyword arguments")
            raise Unsupported(f"{cls.__name__}(...) with keyword arguments")
        return exc
    import types
    if not isinstance(init_raw, types.FunctionType) or init_raw is _MISSING:
        raise Unsupported(f"creating {cls.__qualname__}, whose __init__ is not a Python function")
    exc.custom_init = True
    result = bind_attr(tx, init_raw, owner, "__init__", exc, cls_value).call(tx, list(args), dict(kwargs))
    if not (result.is_python_constant() and result.as_python_constant() is None):
        from ...diagnostics.errors import user_error
        raise user_error(TypeError, f"__init__() should return None, not '{result.python_type().__name__}'")
    return exc


class BuiltinExceptionInit(Value):
    """``BaseException.__init__`` (and the builtin classes' that only store
    ``args``), reached by ``super().__init__(...)`` in a user exception's
    ``__init__`` (``bound``: the exception) or as ``Exception.__init__``."""

    def __init__(self, owner: type, bound: ExceptionValue | None = None):
        super().__init__()
        self.owner, self.bound = owner, bound

    def call(self, tx, args, kwargs):
        if self.bound is None:
            if not args or not isinstance(args[0], ExceptionValue):
                raise Unsupported(f"{self.owner.__name__}.__init__ called on something else than an exception")
            exc, args = args[0], list(args[1:])
        else:
            exc = self.bound
        if kwargs:
            from ...diagnostics.errors import user_error
            raise user_error(TypeError, f"{exc.cls.__name__}() takes no keyword arguments")
        exc.args = list(args)
        return ConstantValue(None)


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
