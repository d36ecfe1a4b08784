"""typing: ``typing.cast`` (returns its value) and unsubscripted aliases
(``typing.List``) as constants usable in isinstance/issubclass.
"""
from __future__ import annotations

import typing

from ..base import Value
from .common import _TYPE_HANDLERS, _guard, _std_function
from ...guards.guard import Kind


def _cast(tx, typ, val):
    return val


_std_function(typing.cast, _cast)


class TypingAliasValue(Value):
    """An unsubscripted ``typing`` alias (``typing.List``, ``typing.Sequence``):
    usable as the class argument of isinstance/issubclass."""

    def __init__(self, alias, source=None):
        super().__init__(source)
        self.alias = alias

    def python_type(self):
        return type(self.alias)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.alias

    def reconstruct(self, out):
        out.load_const(self.alias)


def _wrap_typing_alias(ctx, obj, source):
    _guard(ctx, Kind.ID_MATCH, source, obj)
    return TypingAliasValue(obj, source)


_TYPE_HANDLERS[type(typing.List)] = _wrap_typing_alias
