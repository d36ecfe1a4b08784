"""``str()``, ``repr()``, ``format()`` and f-strings of user objects (and,
through values/operations/exception_text.py, of exceptions the trace made): the
class's own ``__str__``/``__repr__``/``__format__`` (Python functions) are
inlined, as CPython calls them; where the class inherits ``object``'s, its
rules are followed (``object.__str__`` calls ``repr``, ``object.__format__``
takes only an empty spec, ``object.__repr__`` names the class and the
object's address, known for an object that existed before the frame).  The
text is a constant of the trace; the dunders are guarded on the classes
that define them, and their absence on the classes before ``object``.
"""
from __future__ import annotations

import types

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Guard, Kind
from ..base import realize
from ..constant import ConstantValue
from ..builder import wrap
from .. import kinds

_DUNDER = {"str": "__str__", "repr": "__repr__"}


def lookup_on_class(tx, cls: type, name: str):
    """(raw, owner) of ``name`` on ``cls``; the absence of a Python-level one
    on the user classes before its owner is guarded (a builtin class's dict
    cannot change)."""
    from ..objects.objects import class_source, find_class_attr
    raw, owner = find_class_attr(cls, name)
    for klass in cls.__mro__:
        if klass is owner:
            break
        if klass.__module__ != "builtins":
            tx.ctx.guards.add(Guard(Kind.NOT_IN_DICT, class_source(klass, tx.ctx), name))
    return raw, owner


def _lookup(tx, value, name: str):
    """:func:`lookup_on_class` on the value's class."""
    return lookup_on_class(tx, value.python_type(), name)


def _recursion_guard_codes() -> frozenset:
    """Code objects of wrappers that only stop a repr from recursing into
    itself (dataclasses' generated __repr__, ``reprlib.recursive_repr``):
    they keep a set keyed by ``id()`` and the thread, which the repr of a
    non-recursive object never needs (a recursive one exceeds the inlining
    depth and breaks)."""
    import dataclasses
    import reprlib
    codes = {reprlib.recursive_repr()(lambda self: "").__code__}
    make = getattr(dataclasses, "_recursive_repr", None)
    if make is not None:
        codes.add(make(lambda self: "").__code__)
    return frozenset(codes)


_RECURSION_GUARDS = _recursion_guard_codes()


def _call_dunder(tx, value, name: str, raw, owner, args=()) -> str:
    fv = kinds.wrap_class_attr(tx, value.python_type(), name, raw, owner)
    inner = getattr(raw, "__wrapped__", None)
    if raw.__code__ in _RECURSION_GUARDS and isinstance(inner, types.FunctionType):
        from ...guards.sources import AttrSource
        fv = wrap(tx.ctx, inner, AttrSource(fv.source, "__wrapped__") if fv.source is not None else None)
    result = fv.call(tx, [value, *args], {})
    from .runtime_text import RuntimeTextValue
    if isinstance(result, RuntimeTextValue):   # (a __repr__ that formats an object made in the frame)
        raise AddressUnknown(result)
    if not result.is_python_constant() or type(result.as_python_constant()) is not str:
        raise Unsupported(f"{owner.__qualname__}.{name} returned {result}, not a string known while tracing")
    return result.as_python_constant()


def _is_user_object(value) -> bool:
    return isinstance(value, kinds.ObjectValue) and type(value.cls) is type and \
        not isinstance(getattr(value, "obj", None), BaseException)


def text_of(tx, value, kind: str) -> str | None:
    """``str(value)`` / ``repr(value)`` of a user object, or None when
    ``value`` is not one (the caller's own rules apply)."""
    if isinstance(value, kinds.ExceptionValue):   # (values/operations/exception_text.py)
        from .exception_text import exception_text
        return exception_text(tx, value, kind)
    if not _is_user_object(value):
        return None
    raw, owner = _lookup(tx, value, _DUNDER[kind])
    if isinstance(raw, types.FunctionType):
        return _call_dunder(tx, value, _DUNDER[kind], raw, owner)
    if owner is not object:
        raise Unsupported(f"{kind}() of {value.python_type().__qualname__}, whose {_DUNDER[kind]} is not "
                          "a Python function")
    if kind == "str":   # object.__str__ is repr()
        return text_of(tx, value, "repr")
    if value.is_new or value.source is None:
        from .runtime_text import RuntimeTextValue
        raise AddressUnknown(RuntimeTextValue.of_repr(tx, value))
    tx.ctx.guards.add(Guard(Kind.ID_MATCH, value.source, value.obj))
    return object.__repr__(value.obj)


class AddressUnknown(Unsupported):
    """Text that holds the default repr of an object made in the frame,
    whose address exists only once residual code makes the object.  Callers
    that can hand the text on unread use it as runtime text
    (:func:`text_value`, values/operations/runtime_text.py); for the others
    it is a graph break."""

    def __init__(self, text):
        super().__init__("the default repr() of an object made in the frame (its address is not known "
                         "while tracing)")
        self.text = text


def text_value(tx, value, kind: str):
    """:func:`text_of` as a Value: a constant, or runtime text holding
    default reprs of objects made in the frame; for a list, tuple or dict
    that holds such objects, its text built as CPython's repr builds it.
    None when ``value`` is none of these."""
    try:
        text = text_of(tx, value, kind)
    except AddressUnknown as e:
        return e.text
    if text is None and isinstance(value, (kinds.ListValue, kinds.TupleValue, kinds.DictValue)) and \
            type(value) in (kinds.ListValue, kinds.TupleValue, kinds.DictValue) and \
            getattr(value, "cls", list) in (list, tuple, dict):
        return _container_text(tx, value)
    return None if text is None else ConstantValue(text)


def _element_text(tx, v):
    v = realize(tx.ctx, v)
    if v.is_python_constant():
        return ConstantValue(repr(v.as_python_constant()))
    text = text_value(tx, v, "repr")
    if text is None:
        raise Unsupported(f"repr() of {v}")
    return text


def _container_text(tx, value):
    """repr() of a list/tuple/dict with an element whose text is known only
    at run time: ``[a, b]``, ``(a,)``, ``{k: v}``, as list_repr, tuple_repr
    and dict_repr join their elements' reprs."""
    from .runtime_text import join_text
    from ..containers.keys import ValueKey
    parts = []
    if isinstance(value, kinds.DictValue):
        if any(isinstance(k, ValueKey) for k in value.items):
            raise Unsupported("repr() of a dict with object keys")
        for i, (k, v) in enumerate(value.items.items()):
            parts += ([ConstantValue(", ")] if i else []) + [ConstantValue(repr(k) + ": "), _element_text(tx, v)]
        return join_text(tx, [ConstantValue("{"), *parts, ConstantValue("}")])
    for i, v in enumerate(value.items):
        parts += ([ConstantValue(", ")] if i else []) + [_element_text(tx, v)]
    if isinstance(value, kinds.TupleValue):
        return join_text(tx, [ConstantValue("("), *parts, ConstantValue(",)" if len(value.items) == 1 else ")")])
    return join_text(tx, [ConstantValue("["), *parts, ConstantValue("]")])


def format_value(tx, value, spec: str):
    """:func:`format_of` as a Value (see :func:`text_value`)."""
    try:
        text = format_of(tx, value, spec)
    except AddressUnknown as e:
        return e.text
    return None if text is None else ConstantValue(text)


def format_of(tx, value, spec: str) -> str | None:
    """``format(value, spec)`` of a user object, or None."""
    if isinstance(value, kinds.ExceptionValue):
        from .exception_text import exception_format
        return exception_format(tx, value, spec)
    if not _is_user_object(value):
        return None
    raw, owner = _lookup(tx, value, "__format__")
    if isinstance(raw, types.FunctionType):
        return _call_dunder(tx, value, "__format__", raw, owner, [ConstantValue(spec)])
    if owner is not object:
        raise Unsupported(f"format() of {value.python_type().__qualname__}, whose __format__ is not a "
                          "Python function")
    if spec:
        raise user_error(TypeError, f"unsupported format string passed to "
                                    f"{value.python_type().__name__}.__format__")
    return text_of(tx, value, "str")


def format_rule(tx, *args, **kwargs):
    """The builtin ``format(value[, spec])`` of a user object or an exception
    the trace made (as an f-string formats it); anything else folds."""
    from .builtins import fold_call
    if 1 <= len(args) <= 2 and not kwargs and all(a.is_python_constant() for a in args[1:]):
        value = realize(tx.ctx, args[0])
        spec = args[1].as_python_constant() if len(args) == 2 else ""
        if type(spec) is str:
            from .deferred_text import format_field
            deferred = format_field(tx, value, None, spec)   # (a symbolic number, formatted at run time)
            if deferred is not None:
                return deferred
        if type(spec) is str and not value.is_python_constant():
            text = format_value(tx, value, spec)
            if text is not None:
                return text
    return fold_call(format, args, kwargs)
