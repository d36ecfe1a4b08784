"""BUILD_*, *_APPEND/EXTEND/UPDATE/MERGE, UNPACK_*, string formatting
(3.11-3.12: FORMAT_VALUE; 3.13: CONVERT_VALUE, FORMAT_SIMPLE, FORMAT_WITH_SPEC)."""
from __future__ import annotations

from ...diagnostics.errors import Unsupported, user_error
from ...values.constant import ConstantValue
from ...values.containers.containers import DictValue, ListValue, SetValue, SliceValue, TupleValue, _key
from ...pyversion import opcode


@opcode("BUILD_TUPLE")
def build_tuple(f, inst):
    f.push(TupleValue(f.popn(inst.arg, raw=True)))


@opcode("BUILD_LIST")
def build_list(f, inst):
    f.push(ListValue(f.popn(inst.arg, raw=True)))


@opcode("BUILD_MAP")
def build_map(f, inst):
    flat = f.popn(2 * inst.arg, raw=True)
    f.push(DictValue({_key(flat[i], f): flat[i + 1] for i in range(0, len(flat), 2)}))


@opcode("BUILD_SET")
def build_set(f, inst):
    s = SetValue(set())
    for v in f.popn(inst.arg):
        s.add_key(_key(v, f))
    f.push(s)


@opcode("SET_ADD")
def set_add(f, inst):
    v = f.pop()
    _target(f, inst.arg).add_key(_key(v, f))


@opcode("SET_UPDATE")
def set_update(f, inst):
    from ...values.containers import set_order
    v = f.pop()
    target = _target(f, inst.arg)
    snap = set_order.snapshot(f, v)
    target.items.update(_key(i, f) for i in f.iterate(v))
    set_order.record(target, ("call", "update", [snap]) if snap is not None else None)


@opcode("BUILD_CONST_KEY_MAP", until=(3, 13))
def build_const_key_map(f, inst):
    keys = f.pop().as_python_constant()
    values = f.popn(inst.arg, raw=True)
    f.push(DictValue(dict(zip(keys, values))))


def make_slice(parts: list):
    """The Value of ``slice(*parts)`` (BUILD_SLICE, and 3.12's BINARY_SLICE/STORE_SLICE)."""
    if len(parts) == 2:
        parts.append(ConstantValue(None))
    from ...values.tensors.tensor import known_index
    parts = [p if (n := known_index(p)) is None else ConstantValue(n) for p in parts]   # (xs[torch.tensor(1):])
    if all(isinstance(p, ConstantValue) for p in parts):
        return ConstantValue(slice(*(p.value for p in parts)))
    return SliceValue(*parts)


@opcode("BUILD_SLICE")
def build_slice(f, inst):
    f.push(make_slice(f.popn(inst.arg)))


@opcode("BUILD_STRING")
def build_string(f, inst):
    parts = f.popn(inst.arg)
    from ...values.operations.deferred_text import FormattedStringValue, join
    from ...values.operations.runtime_text import RuntimeTextValue, join_text
    if any(isinstance(p, RuntimeTextValue) for p in parts):
        # (an object's address joined at run time: fields from symbolic numbers are specialised)
        parts = [p.specialize() if isinstance(p, FormattedStringValue) else p for p in parts]
        f.push(join_text(f, parts))
        return
    deferred = join(f, parts)   # (a field formatted from a symbolic number)
    f.push(deferred if deferred is not None else join_text(f, parts))


_CONVERSIONS = {1: str, 2: repr, 3: ascii}


def _format(f, value, spec: str):
    """``format(value, spec)`` (f-string formatting after any conversion)."""
    from ...values.base import concrete
    from ...values.operations.deferred_text import format_field
    deferred = format_field(f, value, None, spec)   # (symbolic numbers: formatted at run time)
    if deferred is not None:
        return deferred
    value = concrete(f, value)
    if not value.is_python_constant():
        from ...values.operations.formatting import format_value
        from ...values.operations.runtime_text import RuntimeTextValue
        if isinstance(value, RuntimeTextValue) and not spec:   # (format(s, "") is s)
            return value
        text = format_value(f, value, spec)
        if text is None:
            raise Unsupported(f"formatting {value} into a string")
        return text
    try:
        return ConstantValue(format(value.as_python_constant(), spec))
    except (ValueError, TypeError) as e:  # a bad format spec: the program's own error
        from ...values.operations.operators import folded_exception
        raise folded_exception(format, e) from None


def _convert(f, value, conv: int):
    """``str``/``repr``/``ascii`` of a value (the ``!s``/``!r``/``!a`` of an f-string)."""
    from ...values.base import concrete
    from ...values.operations.deferred_text import format_field
    deferred = format_field(f, value, "sra"[conv - 1])
    if deferred is not None:
        return deferred
    value = concrete(f, value)
    if value.is_python_constant():
        return ConstantValue(_CONVERSIONS[conv](value.as_python_constant()))
    from ...values.operations.formatting import text_of, text_value
    from ...values.operations.runtime_text import RuntimeTextValue
    if conv == 1 and isinstance(value, RuntimeTextValue):
        return value
    if conv == 1 or conv == 2 and not isinstance(value, RuntimeTextValue):
        text = text_value(f, value, "str" if conv == 1 else "repr")
        if text is None:
            raise Unsupported(f"formatting {value} into a string")
        return text
    text = text_of(f, value, "repr")
    if text is None:
        raise Unsupported(f"formatting {value} into a string")
    # ascii(): repr with non-ASCII characters escaped
    return ConstantValue(text.encode("ascii", "backslashreplace").decode("ascii"))


@opcode("FORMAT_VALUE", until=(3, 12))
def format_value(f, inst):
    spec = f.pop().as_python_constant() if inst.arg & 0x04 else ""
    value = f.pop()
    conv = inst.arg & 0x03
    f.push(_format(f, _convert(f, value, conv) if conv else value, spec))


@opcode("CONVERT_VALUE", since=(3, 13))
def convert_value(f, inst):
    f.push(_convert(f, f.pop(), inst.arg))


@opcode("FORMAT_SIMPLE", since=(3, 13))
def format_simple(f, inst):
    f.push(_format(f, f.pop(), ""))


@opcode("FORMAT_WITH_SPEC", since=(3, 13))
def format_with_spec(f, inst):
    spec = f.pop().as_python_constant()
    f.push(_format(f, f.pop(), spec))


def _target(f, depth: int):
    """The container a *_APPEND/*_EXTEND/*_UPDATE instruction writes into.
    It is normally being built by this frame; when a graph break handed it to
    a resume function it is a real object, and the write is a side effect."""
    from ...values.base import realize
    target = realize(f.ctx, f.stack[-depth])
    f.stack[-depth] = target
    from ...values.containers.containers import LazyListValue
    if target.source is not None and hasattr(target, "_check_mutable") and \
            not isinstance(target, LazyListValue):  # (its appends record themselves)
        target._check_mutable(f)
    return target


@opcode("LIST_APPEND")
def list_append(f, inst):
    v = f.pop_raw()
    _target(f, inst.arg).method(f, "append", [v], {})


@opcode("LIST_EXTEND")
def list_extend(f, inst):
    v = f.pop()
    _target(f, inst.arg).items.extend(f.iterate(v))


@opcode("LIST_TO_TUPLE", until=(3, 11))  # 3.12+: CALL_INTRINSIC_1
def list_to_tuple(f, inst):
    f.push(TupleValue(f.pop().items))


@opcode("MAP_ADD")
def map_add(f, inst):
    value = f.pop_raw()
    key = f.pop()
    _target(f, inst.arg).items[_key(key, f)] = value


@opcode("DICT_UPDATE", "DICT_MERGE")
def dict_update(f, inst):
    other = f.pop()
    target = _target(f, inst.arg)
    items = other.items if isinstance(other, DictValue) else _mapping_items(f, other, inst.opname)
    if inst.opname == "DICT_MERGE":
        dup = [k for k in items if k in target.items]
        if dup:
            raise user_error(TypeError, f"got multiple values for keyword argument {dup[0]!r}")
    target.items.update(items)


def _mapping_items(f, other, opname) -> dict:
    """The entries of a mapping that is not a dict, as CPython's dict_merge
    reads them (values/containers/mapping_merge.py)."""
    from ...values.base import realize
    from ...values.containers.mapping_merge import has_keys, mapping_entries
    other = realize(f.ctx, other)
    if not has_keys(other):
        if opname == "DICT_MERGE":   # (eager's message names the callee: raised natively)
            raise Unsupported(f"** unpacking of {other}, which has no keys()")
        raise user_error(TypeError, f"'{other.python_type().__name__}' object is not a mapping")
    return mapping_entries(f, other)


@opcode("UNPACK_SEQUENCE")
def unpack_sequence(f, inst):
    items = f.iterate(f.pop())
    if len(items) != inst.arg:
        raise user_error(ValueError, f"expected {inst.arg} values to unpack, got {len(items)}")
    for v in reversed(items):
        f.push(v)


@opcode("UNPACK_EX")
def unpack_ex(f, inst):
    before, after = inst.arg & 0xFF, inst.arg >> 8
    items = f.iterate(f.pop())
    if len(items) < before + after:
        raise user_error(ValueError, "not enough values to unpack")
    star = ListValue(items[before:len(items) - after])
    out = items[:before] + [star] + items[len(items) - after:]
    for v in reversed(out):
        f.push(v)
