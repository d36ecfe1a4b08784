"""enum: members are constants guarded by identity (``name``/``value``
fold; methods and properties of the enum class are inlined); enum classes
look members up by name, by value and by iteration.  Registered as a
fallback of ``wrap_special``: enum classes are user classes.
"""
from __future__ import annotations

import enum
import inspect
import types

from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Kind
from ..constant import ConstantValue
from ..objects.objects import ClassValue
from .common import _FALLBACK_HANDLERS, _MISSING, _attr_src, _const, _guard, _wrap, _wrap_scalar_or


def _enum_attr(tx, member, name: str, source):
    """``member.name`` for names that are not Enum's own properties."""
    cls = type(member)
    d = member.__dict__
    from ..objects.objects import bind_attr, find_class_attr
    raw, owner = find_class_attr(cls, name)
    is_data = raw is not _MISSING and (hasattr(type(raw), "__set__") or hasattr(type(raw), "__delete__"))
    if name in d and not is_data:
        return _wrap_scalar_or(tx.ctx, d[name], _attr_src(source, name))
    if raw is _MISSING:
        raise user_error(AttributeError, f"{cls.__name__!r} object has no attribute {name!r}")
    if isinstance(raw, enum.Enum):
        return EnumMemberValue(raw, None)
    if owner in (enum.Enum, enum.IntEnum, enum.Flag, enum.IntFlag, object, int, str) \
            or getattr(owner, "__module__", None) == "enum":
        raise Unsupported(f"{owner.__name__}.{name} of an enum member")
    return bind_attr(tx, raw, owner, name, EnumMemberValue(member, source), _wrap(tx.ctx, cls, None))


class EnumMemberValue(ConstantValue):
    """An enum member: a constant guarded by identity.  ``name``/``value``
    fold; methods and properties defined on the enum class are inlined."""

    def getattr(self, tx, name):
        m = self.value
        if name in ("name", "_name_"):
            return ConstantValue(m._name_)
        if name in ("value", "_value_"):
            return _wrap_scalar_or(tx.ctx, m._value_, _attr_src(self.source, "_value_"))
        if name == "__class__":
            return _wrap(tx.ctx, type(m), None)
        if isinstance(m, (int, str, float)) and not isinstance(inspect.getattr_static(type(m), name, None),
                                                             (types.FunctionType, property)):
            # IntEnum / StrEnum: the mixed-in type's own attributes
            return super().getattr(tx, name)
        return _enum_attr(tx, m, name, self.source)

    def __repr__(self):
        return f"EnumMember({self.value!r})"


_ENUM_MISSING_OK = {enum.Enum._missing_.__func__, enum.Flag._missing_.__func__}


class EnumClassValue(ClassValue):
    def getattr(self, tx, name):
        cls = self.cls
        member = cls.__dict__.get("_member_map_", {}).get(name)
        if member is not None and inspect.getattr_static(cls, name, None) is not None:
            return EnumMemberValue(getattr(cls, name), None)
        if name == "__members__":
            raise Unsupported("Enum.__members__ (a mappingproxy)")
        return super().getattr(tx, name)

    def call(self, tx, args, kwargs):
        cls = self.cls
        if kwargs or len(args) != 1:
            raise Unsupported(f"{cls.__name__}(...) other than a lookup by value")
        missing = getattr(getattr(cls, "_missing_", None), "__func__", None)
        if missing not in _ENUM_MISSING_OK:
            raise Unsupported(f"{cls.__name__}(value) with a custom _missing_")
        v = _const(args[0], f"{cls.__name__}()")
        try:
            return EnumMemberValue(cls(v), None)
        except ValueError as e:
            raise user_error(ValueError, str(e))
        except Exception as e:
            raise Unsupported(f"{cls.__name__}({v!r}) raised {type(e).__name__}")

    def getitem(self, tx, key):
        k = _const(key, f"{self.cls.__name__}[...]")
        try:
            return EnumMemberValue(self.cls[k], None)
        except KeyError:
            raise user_error(KeyError, k)

    def unpack(self, tx):
        return [EnumMemberValue(m, None) for m in self.cls]

    def length(self, tx):
        return len(self.cls)

    def truth(self, tx):
        return True

    def contains(self, tx, item) -> bool:
        if isinstance(item, ConstantValue):
            try:
                return item.value in self.cls
            except TypeError as e:
                raise user_error(TypeError, str(e))
        raise Unsupported(f"`in` on {self.cls.__name__} with {item}")



def _wrap_enum_class_or_member(ctx, obj, source):
    if isinstance(obj, type):
        if issubclass(obj, enum.Enum):
            _guard(ctx, Kind.ID_MATCH, source, obj)
            return EnumClassValue(obj, source)
        return None
    if isinstance(obj, enum.Enum):
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return EnumMemberValue(obj, source)
    return None


_FALLBACK_HANDLERS.append(_wrap_enum_class_or_member)
