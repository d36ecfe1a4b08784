"""Strings formatted from symbolic numbers, built at run time.

``f"{x.shape}"``, ``str(x.size())``, ``"{} tokens".format(n)``, ``"%d" % n``
and a shape tuple in an error message, where the numbers are dynamic sizes
(or other numbers known while tracing only by an example): the text depends
on the number, so it cannot be a constant of the trace without
specialising the number (a guard on its value: a recompile per size, and
an error for a dimension marked dynamic).  A :class:`FormattedStringValue`
keeps the pieces instead -- literal text and fields (a value with its
conversion and format spec) -- and the residual code formats the fields
with the run's values when the string leaves the frame (returned, stored,
passed to a call that runs natively such as ``print`` or a logger).  This
is what torch.compile's ``StringFormatVariable`` does.

Fields are deferred only where formatting cannot fail or depend on more
than the value: an empty spec, a spec the example number takes (not
``c``), a ``%s``/``%d``-like conversion of an int; numbers and
tuples/``torch.Size``/lists of them (the containers are
snapshots: a list changed later in the frame does not change the text).
Anything that needs the text itself (concatenation with ``+``, a method,
``==``, a dict key, the length) gets it as a constant with the numbers
specialised and guarded, as for a symbolic number (``concrete``).
"""
from __future__ import annotations

import re
import string

import torch

from ..base import Value, realize
from ..constant import ConstantValue
from .. import kinds

_CONVERSIONS = {None: None, "s": str, "r": repr, "a": ascii}


def _render(value, conv, spec):
    """One field at run time (and for the trace's example text)."""
    if conv == "%":
        return spec % value
    fn = _CONVERSIONS[conv]
    return format(fn(value) if fn is not None else value, spec)


class Field:
    """``format(conv(value), spec)``, or ``spec % value`` (conv ``"%"``)."""

    __slots__ = ("value", "conv", "spec")

    def __init__(self, value: Value, conv: str | None, spec: str):
        self.value, self.conv, self.spec = value, conv, spec

    def __repr__(self):
        return f"Field({self.value!r}, {self.conv!r}, {self.spec!r})"


class FormattedStringValue(Value):
    """A str whose fields are formatted at run time (see the module text)."""

    def __init__(self, parts: list, ctx):
        super().__init__()
        #: literal strs and Fields, in order
        self.parts = parts
        self.ctx = ctx

    def python_type(self):
        return str

    def is_python_constant(self):
        return False   # folding paths leave it alone ...

    def as_python_constant(self):
        return self.specialize().value   # ... whoever needs the text gets it, guarded

    def specialize(self, tx=None) -> ConstantValue:
        """The text with every number specialised (guarded by value)."""
        return ConstantValue("".join(p if type(p) is str else _render(_constant(p.value), p.conv, p.spec)
                                     for p in self.parts))

    def truth(self, tx):
        # a field formats a number or a container as non-empty text
        return any(type(p) is not str or p for p in self.parts)

    def getattr(self, tx, name):
        return self.specialize(tx).getattr(tx, name)

    def length(self, tx):
        return len(self.specialize(tx).value)

    def unpack(self, tx):
        return self.specialize(tx).unpack(tx)

    def getitem(self, tx, index):
        from .operators import getitem
        return getitem(tx, self.specialize(tx), index)

    def reconstruct(self, out):
        n = 0
        for p in self.parts:
            if type(p) is str:
                if p:
                    out.load_const(p)
                    n += 1
                continue
            out.instr("PUSH_NULL")
            out.load_const(_render)
            out.reconstruct(p.value)
            out.load_const(p.conv)
            out.load_const(p.spec)
            out.call(3)
            n += 1
        if n != 1:
            out.instr("BUILD_STRING", n)

    def __repr__(self):
        return f"FormattedString({self.parts!r})"


def _constant(v: Value):
    """The example object of a frozen value, numbers specialised (guarded)."""
    if isinstance(v, kinds.SymbolicNumberValue):
        return v.specialize().value
    if isinstance(v, ConstantValue):
        return v.value
    items = [_constant(i) for i in v.items]
    if isinstance(v, kinds.TupleValue):
        return torch.Size(items) if v.cls is torch.Size else tuple(items)
    return items


def _example(v: Value):
    """Like :func:`_constant` without guarding (the example values)."""
    if isinstance(v, kinds.SymbolicNumberValue):
        return v.example
    if isinstance(v, ConstantValue):
        return v.value
    items = [_example(i) for i in v.items]
    if isinstance(v, kinds.TupleValue):
        return torch.Size(items) if v.cls is torch.Size else tuple(items)
    return items


def _frozen(tx, v: Value, ints_only: bool = False) -> tuple[Value, bool] | None:
    """(a snapshot of ``v`` for a field, whether it holds a symbolic number),
    or None when ``v`` cannot be a deferred field: numbers (a symbolic one
    with a residual expression), None/str constants, and tuples, torch.Sizes
    and plain lists of those."""
    v = realize(tx.ctx, v)
    if isinstance(v, kinds.SymbolicNumberValue):
        if v.source is None or (ints_only and type(v.example) not in (int, bool)):
            return None   # (an unbacked number, or a float where its value range matters)
        return v, True
    if isinstance(v, ConstantValue):
        return (v, False) if type(v.value) in (int, bool, float, str, type(None)) else None
    if isinstance(v, kinds.TupleValue) and v.cls in (tuple, torch.Size) or type(v) is kinds.ListValue:
        parts = [_frozen(tx, i, ints_only) for i in v.items]
        if any(p is None for p in parts):
            return None
        items = [p[0] for p in parts]
        symbolic = any(p[1] for p in parts)
        if isinstance(v, kinds.TupleValue):
            return kinds.TupleValue(items, cls=v.cls), symbolic
        return kinds.ListValue(items), symbolic
    return None


def format_field(tx, value: Value, conv: str | None = None, spec: str = "") -> Value | None:
    """``format(conv(value), spec)`` (an f-string field, ``str()``,
    ``repr()``, ``format()``) deferred to run time, or None when the caller's
    constant rules apply (nothing symbolic, or a case not deferred)."""
    value = realize(tx.ctx, value)
    if isinstance(value, kinds.ExceptionValue) and spec == "" and conv in (None, "s"):
        from .exception_text import deferred_str
        value = deferred_str(tx, value) or value   # (str(e) of ValueError(f"... {x.shape}"))
    if isinstance(value, FormattedStringValue):
        if spec == "" and conv in (None, "s"):
            return value   # (the str of a str)
        return None
    frozen = _frozen(tx, value)
    if frozen is None or not frozen[1] or not _spec_holds(frozen[0], conv, spec):
        return None
    return FormattedStringValue([Field(frozen[0], conv, spec)], tx.ctx)


def _spec_holds(value: Value, conv, spec: str) -> bool:
    """Whether ``format(conv(value), spec)`` formats every value this one
    may take at run time as it does the example: any spec the example takes
    but ``c`` (a character: its range depends on the number) and nested
    fields, for a number alone; only the empty spec otherwise."""
    if spec == "":
        return True
    if not isinstance(value, kinds.SymbolicNumberValue) or conv is not None or "{" in spec or spec.endswith("c"):
        return False
    try:
        _render(value.example, None, spec)
    except (TypeError, ValueError, OverflowError):
        return False   # (the constant path raises the program's error)
    return True


def join(tx, parts: list[Value]) -> Value | None:
    """BUILD_STRING of f-string pieces, when one of them is deferred."""
    parts = [realize(tx.ctx, p) for p in parts]
    if not any(isinstance(p, FormattedStringValue) for p in parts):
        return None
    out: list = []
    for p in parts:
        if isinstance(p, FormattedStringValue):
            out.extend(p.parts)
        else:
            out.append(p.as_python_constant())
    return FormattedStringValue(out, tx.ctx)


def str_format(tx, template: str, args: list[Value], kwargs: dict) -> Value | None:
    """``template.format(*args)`` with a symbolic argument, deferred (plain
    fields only: automatic or numbered, no attribute or index access, a spec
    only on a number: :func:`_spec_holds`), or None."""
    if kwargs:
        return None
    try:
        pieces = list(string.Formatter().parse(template))
    except ValueError:
        return None   # (the constant path raises the program's error)
    out: list = []
    auto = 0
    manual = False
    symbolic = False
    for literal, name, spec, conv in pieces:
        if literal:
            out.append(literal)
        if name is None:
            continue
        if conv is not None and conv not in _CONVERSIONS:
            return None
        if name == "":
            if manual:
                return None
            index = auto
            auto += 1
        elif re.fullmatch(r"\d+", name):
            if auto:
                return None
            manual = True
            index = int(name)
        else:
            return None
        if index >= len(args):
            return None
        frozen = _frozen(tx, args[index])
        if frozen is None or spec and not (frozen[1] and _spec_holds(frozen[0], conv, spec)):
            return None
        symbolic |= frozen[1]
        out.append(Field(frozen[0], conv, spec))
    return FormattedStringValue(out, tx.ctx) if symbolic else None


#: a %-conversion whose text is defined for every int (no ``*`` widths, no
#: ``%c``, no mapping keys)
_PERCENT = re.compile(r"%(?:%|[-+ #0]*\d*(?:\.\d+)?[sradiuxXo])")


def percent(tx, fmt: Value, args: Value) -> Value | None:
    """``fmt % args`` for a constant str ``fmt`` and ints or tuples of ints
    with a symbolic one among them, deferred, or None."""
    if not (isinstance(fmt, ConstantValue) and type(fmt.value) is str):
        return None
    text = fmt.value
    if _PERCENT.sub("", text).count("%"):
        return None
    args = realize(tx.ctx, args)
    frozen = _frozen(tx, args, ints_only=True)
    if frozen is None or not frozen[1] or type(frozen[0]) is kinds.ListValue:
        return None
    try:
        text % _example(frozen[0])   # (the right number of arguments, of kinds it takes)
    except (TypeError, ValueError, OverflowError):
        return None
    return FormattedStringValue([Field(frozen[0], "%", text)], tx.ctx)
