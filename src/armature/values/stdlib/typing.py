"""typing: ``typing.cast`` (returns its value) and unsubscripted aliases
(``typing.List``) as constants usable in isinstance/issubclass.
"""
from __future__ import annotations

import types
import typing

from ...diagnostics.errors import Unsupported, user_error

from ..base import Value
from .common import _TYPE_HANDLERS, _guard, _std_function, _wrap
from ...guards.guard import Kind


def _cast(tx, typ, val):
    return val


_std_function(typing.cast, _cast)


class TypingAliasValue(Value):
    """A ``typing`` object used as a value: an alias (``typing.List``,
    ``typing.Dict[str, int]``, ``list[int]``), a special form
    (``typing.Optional``, ``typing.Union[int, str]``).  Immutable, so a
    constant: subscripting it folds (typing's own cache is invisible to the
    program), its ``__origin__``/``__args__`` read as constants, and an
    unsubscripted alias is usable as the class argument of
    isinstance/issubclass."""

    def __init__(self, alias, source=None):
        super().__init__(source)
        self.alias = alias

    def python_type(self):
        return type(self.alias)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.alias

    def getitem(self, tx, key):
        return subscript_generic(tx, self.alias, key)

    def getattr(self, tx, name):
        if name in _FOLDED_ATTRS:
            try:
                real = getattr(self.alias, name)
            except AttributeError as e:
                raise user_error(AttributeError, str(e))
            from ...guards.sources import constant_source
            # (a source of its own: get_args(t) is t.__args__, the same tuple)
            return _wrap(tx.ctx, real, constant_source(real, f"{self.alias!r}.{name}"))
        return super().getattr(tx, name)

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.load_const(self.alias)

    def __repr__(self):
        return f"<typing {self.alias!r}>"


_FOLDED_ATTRS = frozenset({"__origin__", "__args__", "__parameters__", "_name", "__name__", "__qualname__",
                           "__module__"})


def subscript_generic(tx, obj, key) -> Value:
    """``obj[key]`` for a typing object or a builtin generic class
    (``list[int]``), with arguments known while tracing: folded."""
    if not key.is_python_constant():
        raise Unsupported(f"subscripting {obj!r} with {key}, not known while tracing")
    k = key.as_python_constant()
    try:
        result = obj[k]
    except TypeError as e:
        raise user_error(TypeError, str(e))
    except Exception as e:
        raise Unsupported(f"{obj!r}[...] raised {type(e).__name__}")
    return TypingAliasValue(result)


def _wrap_typing_alias(ctx, obj, source):
    _guard(ctx, Kind.ID_MATCH, source, obj)
    return TypingAliasValue(obj, source)


for _t in (type(typing.List), typing._GenericAlias, types.GenericAlias, typing._SpecialForm,
           typing._UnionGenericAlias, type(typing.Tuple), type(typing.Callable), typing._CallableGenericAlias,
           type(typing.Literal), typing._LiteralGenericAlias):
    _TYPE_HANDLERS[_t] = _wrap_typing_alias
