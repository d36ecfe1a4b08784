"""Structural pattern matching (``match``/``case``): MATCH_CLASS,
MATCH_MAPPING, MATCH_SEQUENCE, MATCH_KEYS and GET_LEN, with CPython 3.11's
semantics (Python/ceval.c: match_class, match_keys).

Literal and value patterns compile to COMPARE_OP/IS_OP, sequence patterns to
GET_LEN + UNPACK_SEQUENCE/UNPACK_EX/BINARY_SUBSCR, ``**rest`` to BUILD_MAP +
DICT_UPDATE + DELETE_SUBSCR: those are handled with the other opcodes.
3.11 has no COPY_DICT_WITHOUT_KEYS.
"""
from __future__ import annotations

from ...diagnostics.errors import Unsupported
from ...values.base import type_name as _type_name
from ...values.constant import ConstantValue
from ...values.containers.containers import DictValue, TupleValue, _key
from ...pyversion import opcode

from ...diagnostics.errors import UserException, user_error

Py_TPFLAGS_SEQUENCE = 1 << 5
Py_TPFLAGS_MAPPING = 1 << 6
Py_TPFLAGS_MATCH_SELF = 1 << 22


def _flags(v) -> int:
    return v.python_type().__flags__


@opcode("GET_LEN")
def get_len(f, inst):
    """Push len(TOS); TOS stays."""
    subject = f.pop()
    f.push(subject)
    f.push(ConstantValue(subject.length(f)))


@opcode("MATCH_MAPPING")
def match_mapping(f, inst):
    subject = f.pop()
    f.push(subject)
    f.push(ConstantValue(bool(_flags(subject) & Py_TPFLAGS_MAPPING)))


@opcode("MATCH_SEQUENCE")
def match_sequence(f, inst):
    subject = f.pop()
    f.push(subject)
    f.push(ConstantValue(bool(_flags(subject) & Py_TPFLAGS_SEQUENCE)))


def _mapping_get(f, subject, key):
    """``subject.get(key, dummy)``: the Value, or None when missing.  ``get``
    never calls ``__missing__`` (defaultdict keys are not created)."""
    if isinstance(subject, DictValue) and getattr(subject.python_type(), "get", None) is dict.get:
        return subject.items.get(key)
    raise Unsupported(f"a mapping pattern on {subject}")


@opcode("MATCH_KEYS")
def match_keys(f, inst):
    """TOS: a tuple of keys, TOS1: the subject.  Push a tuple of the values
    (all keys present) or None."""
    keys_v = f.pop()
    subject = f.pop()
    f.push(subject)
    f.push(keys_v)
    keys = f.iterate(keys_v)
    if not keys:
        f.push(TupleValue([]))
        return
    seen = []
    values = []
    for kv in keys:
        k = _key(kv)
        if any(k is s or k == s for s in seen):
            raise user_error(ValueError, f"mapping pattern checks duplicate key ({k!r})")
        seen.append(k)
        v = _mapping_get(f, subject, k)
        if v is None:
            f.push(ConstantValue(None))
            return
        values.append(v)
    f.push(TupleValue(values))


def _attr_or_none(f, subject, cls, name, seen: set):
    """match_class_attr: the attribute's Value, or None on AttributeError."""
    if name in seen:
        raise user_error(TypeError, f"{_type_name(cls)}() got multiple sub-patterns for attribute {name!r}")
    seen.add(name)
    try:
        return subject.getattr(f, name)
    except Unsupported as e:
        if isinstance(e, UserException) and issubclass(e.exc_type, AttributeError):
            return None
        if isinstance(subject, ConstantValue) and not hasattr(subject.value, name):
            return None
        raise


@opcode("MATCH_CLASS")
def match_class(f, inst):
    """TOS: keyword attribute names, TOS1: the class, TOS2: the subject;
    ``inst.arg`` positional sub-patterns.  Replace the three with a tuple of
    the extracted attributes, or None when the subject does not match."""
    nargs = inst.arg
    names_v = f.pop()
    cls_v = f.pop()
    subject = f.pop()
    names = names_v.as_python_constant()
    if not cls_v.is_python_constant() or not isinstance(cls_v.as_python_constant(), type):
        if cls_v.is_python_constant():
            raise user_error(TypeError, "called match pattern must be a type")
        raise Unsupported(f"a class pattern against {cls_v}")
    cls = cls_v.as_python_constant()
    from ...values.operations.builtins import RULES
    if not RULES[isinstance](f, subject, cls_v).as_python_constant():
        f.push(ConstantValue(None))
        return
    seen: set = set()
    attrs = []
    if nargs:
        match_self = False
        try:
            match_args = cls.__match_args__
        except AttributeError:
            match_args = ()
            match_self = bool(cls.__flags__ & Py_TPFLAGS_MATCH_SELF)
        if type(match_args) is not tuple:
            raise user_error(TypeError, f"{_type_name(cls)}.__match_args__ must be a tuple "
                             f"(got {type(match_args).__name__})")
        allowed = 1 if match_self else len(match_args)
        if allowed < nargs:
            plural = "" if allowed == 1 else "s"
            raise user_error(TypeError, f"{_type_name(cls)}() accepts {allowed} positional "
                             f"sub-pattern{plural} ({nargs} given)")
        if match_self:
            attrs.append(subject)
        else:
            for name in match_args[:nargs]:
                if type(name) is not str:
                    raise user_error(TypeError, f"__match_args__ elements must be strings "
                                     f"(got {type(name).__name__})")
                v = _attr_or_none(f, subject, cls, name, seen)
                if v is None:
                    f.push(ConstantValue(None))
                    return
                attrs.append(v)
    for name in names:
        v = _attr_or_none(f, subject, cls, name, seen)
        if v is None:
            f.push(ConstantValue(None))
            return
        attrs.append(v)
    f.push(TupleValue(attrs))
