"""``str()``, ``repr()``, ``format()`` and f-strings of exceptions the trace
made (``except MyErr as e: msg = str(e)``, ``f"{e!r}"``).

An exception class's own ``__str__``/``__repr__``/``__format__`` (Python
functions) are inlined on the ExceptionValue, as CPython calls them, so
``self.args`` and the attributes a user ``__init__`` set are what eager
reads.  Where the class inherits the builtin ones, CPython's C rules are
followed on the traced arguments: ``BaseException.__str__`` is ``""`` for
no argument, ``str(arg)`` for one and ``str(args)`` for several;
``KeyError.__str__`` is ``repr(arg)`` for one argument; ``BaseException.__repr__``
is ``Name(repr(arg))`` for one argument and ``Name`` followed by
``repr(args)`` otherwise; ``object.__format__`` takes only an empty spec and
then is ``str()``.  Each argument is formatted by the trace's own ``str()``/
``repr()``, so a user object among them has its dunders inlined too.  The
other builtin classes that format themselves (OSError, ImportError,
SyntaxError...) fold on the real exception when its arguments are
constants.  The same rules answer ``super().__str__()``,
``Exception.__str__(self)`` and ``e.__str__()`` (registered as the rules of
those C slot functions).  The text is a constant of the trace; the dunders
are guarded on the classes that define them and their absence on the user
classes before (builtin classes cannot change).
"""
from __future__ import annotations

import builtins
import types

from ...diagnostics.errors import Unsupported, user_error
from ..base import realize
from ..constant import ConstantValue
from .. import kinds

_DUNDER = {"str": "__str__", "repr": "__repr__"}


def _text(tx, value, kind: str) -> str:
    """The trace's own ``str(value)``/``repr(value)`` as a constant string."""
    from .builtins import BuiltinValue
    fn = str if kind == "str" else repr
    if value.is_python_constant():
        return fn(value.as_python_constant())
    from ..base import concrete
    result = concrete(tx, BuiltinValue(fn).call(tx, [value], {}))   # (text formatted from a symbolic number)
    if not result.is_python_constant() or type(result.as_python_constant()) is not str:
        raise Unsupported(f"{kind}() of {value} is not a string known while tracing")
    return result.as_python_constant()


def _args_repr(tx, args) -> str:
    """``repr(tuple(args))``."""
    parts = [_text(tx, a, "repr") for a in args]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _type_name(cls: type) -> str:
    """``_PyType_Name``: the class's name after its last dot."""
    return cls.__name__.rpartition(".")[2]


def _builtin_text(tx, exc, kind: str, owner: type) -> str:
    """What the builtin ``owner.__str__``/``__repr__`` returns for ``exc``."""
    args = exc.args
    if kind == "str" and owner is KeyError and len(args) == 1:
        return _text(tx, args[0], "repr")
    if kind == "str" and owner in (BaseException, KeyError):
        if not args:
            return ""
        if len(args) == 1:
            return _text(tx, args[0], "str")
        return _args_repr(tx, args)
    if kind == "repr" and owner is BaseException:
        if len(args) == 1:
            return f"{_type_name(exc.cls)}({_text(tx, args[0], 'repr')})"
        return _type_name(exc.cls) + _args_repr(tx, args)
    # OSError, ImportError, SyntaxError, UnicodeError...: their own C rules
    real = exc.real()
    try:
        return (str if kind == "str" else repr)(real)
    except Exception:   # (whatever it raises, eager would raise it from its own object)
        raise Unsupported(f"{kind}() of a {exc.cls.__qualname__} with {owner.__name__}'s formatting")


def exception_text(tx, exc, kind: str) -> str:
    """``str(exc)`` / ``repr(exc)`` of an ExceptionValue."""
    from .formatting import _call_dunder, lookup_on_class
    name = _DUNDER[kind]
    raw, owner = lookup_on_class(tx, exc.cls, name)
    if isinstance(raw, types.FunctionType):
        return _call_dunder(tx, exc, name, raw, owner)
    if owner.__module__ != "builtins":
        raise Unsupported(f"{kind}() of {exc.cls.__qualname__}, whose {name} is not a Python function")
    return _builtin_text(tx, exc, kind, owner)


def deferred_str(tx, exc):
    """``str(exc)`` when it is the exception's one argument, a string
    formatted at run time (``raise ValueError(f"bad size {x.shape}")``
    caught in the frame): that string, so the size is not specialised; None
    otherwise."""
    if len(exc.args) != 1 or not isinstance(realize(tx.ctx, exc.args[0]), kinds.FormattedStringValue):
        return None
    from .formatting import lookup_on_class
    raw, owner = lookup_on_class(tx, exc.cls, "__str__")
    if owner is not BaseException:
        return None   # (a class's own __str__, KeyError's repr)
    return realize(tx.ctx, exc.args[0])


def exception_format(tx, exc, spec: str) -> str:
    """``format(exc, spec)`` of an ExceptionValue."""
    from .formatting import _call_dunder, lookup_on_class
    raw, owner = lookup_on_class(tx, exc.cls, "__format__")
    if isinstance(raw, types.FunctionType):
        return _call_dunder(tx, exc, "__format__", raw, owner, [ConstantValue(spec)])
    if owner is not object:
        raise Unsupported(f"format() of {exc.cls.__qualname__}, whose __format__ is not a Python function")
    if spec:
        raise user_error(TypeError, f"unsupported format string passed to {exc.cls.__name__}.__format__")
    return exception_text(tx, exc, "str")


def _slot_rule(owner: type, kind: str):
    """The rule of the C function ``owner.__str__``/``__repr__`` called on an
    exception the trace made (``super().__str__()``); other arguments fold."""
    slot = getattr(owner, _DUNDER[kind])

    def handler(tx, *args, **kwargs):
        from .builtins import fold_call
        if len(args) == 1 and not kwargs:
            exc = realize(tx.ctx, args[0])
            if isinstance(exc, kinds.ExceptionValue) and issubclass(exc.cls, owner):
                return ConstantValue(_builtin_text(tx, exc, kind, owner))
        return fold_call(slot, args, kwargs)
    return handler


def register(rules) -> None:
    """The rules of every builtin exception class's own ``__str__``/``__repr__``."""
    for cls in vars(builtins).values():
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            continue
        for kind, name in _DUNDER.items():
            slot = cls.__dict__.get(name)
            if slot is not None and slot not in rules:
                rules[slot] = _slot_rule(cls, kind)
