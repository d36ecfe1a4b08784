"""Guard kinds.  A guard is a predicate on a Source, rendered as one Python
expression; all guards of a cache entry are joined into one function."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import torch

from .sources import ConstPool, Source


class Kind(enum.IntEnum):
    # Ordered by cost: cheapest checks run first.
    GLOBAL_STATE = 0
    ID_MATCH = 1
    TYPE_MATCH = 2
    CONSTANT_MATCH = 3
    LEN_MATCH = 4
    NOT_IN_DICT = 5
    KEY_ABSENT = 6
    EMPTY = 7
    SAME_OBJECT = 8
    DICT_KEYS = 9
    SET_EQUALS = 10
    TENSOR_MATCH = 11
    #: a relation between sizes and ints from the ShapeEnv (``x.size()[0] >= 2``)
    SHAPE = 12
    DISTINCT = 13


@dataclass(frozen=True)
class TensorMeta:
    cls: type
    dtype: torch.dtype
    device: torch.device
    size: tuple
    stride: tuple
    requires_grad: bool
    #: False when an identity guard on the same source already fixes the
    #: object (a module's parameter): its class cannot change, and only
    #: ``.data`` replacement can change the rest.
    full: bool = True

    @classmethod
    def of(cls, t: torch.Tensor, full: bool = True, fake: torch.Tensor | None = None) -> "TensorMeta":
        """Sizes and strides that are ShapeEnv symbols in ``fake`` are None:
        the ShapeEnv's own guards check those (Kind.SHAPE)."""
        kind = type(t)
        from ..tensor_classes import plain_alias
        t = plain_alias(t)   # (reading a subclass's metadata must not run its __torch_function__)
        size, stride = tuple(t.size()), tuple(t.stride())
        if fake is not None:
            size = tuple(None if isinstance(f, torch.SymInt) else s for s, f in zip(size, fake.size()))
            stride = tuple(None if isinstance(f, torch.SymInt) else s for s, f in zip(stride, fake.stride()))
        return cls(kind, t.dtype, t.device, size, stride, t.requires_grad, full)

    @property
    def dynamic(self) -> bool:
        return None in self.size or None in self.stride


@dataclass(eq=False)
class Guard:
    kind: Kind
    source: Source | None
    expected: Any = None
    #: for GLOBAL_STATE: the expression text (with its own constants)
    text: str | None = None
    consts: dict = field(default_factory=dict)
    #: how a GLOBAL_STATE guard reads to users
    label: str | None = None
    #: SHAPE guards: locals the text reads, bound once per guard function at
    #: their first use ({"___sz0": "x.size()"}), so ``x.size()`` is called once
    binds: dict = field(default_factory=dict)

    def key(self):
        exp = self.expected
        if self.kind in (Kind.ID_MATCH, Kind.TYPE_MATCH):
            exp = id(exp)
        elif self.kind is Kind.CONSTANT_MATCH:
            exp = (type(exp), repr(exp))
        elif isinstance(exp, list):
            exp = tuple(exp)
        if self.consts:  # the same text over different objects is a different guard
            return (self.kind, self.source, exp, self.text,
                    tuple(sorted((k, id(v)) for k, v in self.consts.items())))
        return (self.kind, self.source, exp, self.text)

    def expr(self, pool: ConstPool) -> str:
        if self.kind is Kind.DISTINCT:
            items = ", ".join(f"id({pool.render(s)})" for s in self.expected)
            return f"len({{{items}}}) == {len(self.expected)}"
        if self.kind in (Kind.GLOBAL_STATE, Kind.SHAPE):
            text = self._with_consts(self.text, pool)
            bound = getattr(pool, "bound_names", None)
            prefix = []
            for name, value in self.binds.items():
                if bound is None or name not in bound:
                    prefix.append(f"({name} := {self._with_consts(value, pool)}) is not None")
                    if bound is not None:
                        bound.add(name)
            return " and ".join(prefix + [text]) if prefix else text
        e = pool.render(self.source)
        exp = self.expected
        if self.kind is Kind.ID_MATCH:
            return f"{e} is {pool.const(exp)}"
        if self.kind is Kind.TYPE_MATCH:
            return f"type({e}) is {pool.const(exp)}"
        if self.kind is Kind.CONSTANT_MATCH:
            if exp is None or type(exp) is bool or exp is Ellipsis:
                return f"{e} is {exp!r}"
            if type(exp) is float and exp != exp:  # NaN equals nothing, itself included
                return f"type({e}) is float and {e} != {e}"
            if type(exp) is float and exp == 0.0:  # 0.0 == -0.0, but 1/x, str(x), copysign tell them apart
                import math
                return f"type({e}) is float and {e} == 0.0 and {pool.const(math.copysign)}(1.0, {e}) == " \
                       f"{math.copysign(1.0, exp)!r}"
            if type(exp) in (int, str) or (type(exp) is float and abs(exp) != float("inf")):
                return f"type({e}) is {type(exp).__name__} and {e} == {exp!r}"
            return f"type({e}) is {pool.const(type(exp))} and {e} == {pool.const(exp)}"
        if self.kind is Kind.LEN_MATCH:
            return f"len({e}) == {exp}"
        if self.kind is Kind.NOT_IN_DICT:
            return f"{exp!r} not in {e}.__dict__"
        if self.kind is Kind.KEY_ABSENT:
            return f"{exp!r} not in {e}"
        if self.kind is Kind.EMPTY:
            return f"not {e}"
        if self.kind is Kind.SAME_OBJECT:
            return f"{e} is {pool.render(exp)}"
        if self.kind is Kind.DICT_KEYS:
            literal = all(type(k) in (str, int, bool) for k in exp)
            keys = repr(exp) if literal else pool.const(list(exp))
            return f"list({e}) == {keys}"
        if self.kind is Kind.SET_EQUALS:
            return f"{e} == {pool.const(exp)}"
        if self.kind is Kind.TENSOR_MATCH:
            first, rest = pool.hoist(e)
            return tensor_match_expr(first, rest, exp, pool)
        raise AssertionError(self.kind)

    def _with_consts(self, text: str, pool: ConstPool) -> str:
        import re
        names = {name: pool.const(obj) for name, obj in self.consts.items()}
        if not names:
            return text
        # a constant's name as a name of its own: not inside a string literal
        # (a key ``['___G']``), nor an attribute (``.___G``)
        alternatives = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
        pattern = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|(?<![\w.])(""" + alternatives + r")\b")
        return pattern.sub(lambda m: m.group(1) or names[m.group(2)], text)

    def describe(self) -> str:
        """A line for logs and explain(): what is assumed about what."""
        src = str(self.source) if self.source is not None else "<global state>"
        exp = self.expected
        if self.kind is Kind.TENSOR_MATCH:
            size = [("*" if n is None else n) for n in exp.size]
            stride = [("*" if n is None else n) for n in exp.stride]
            return (f"{src}: {exp.cls.__name__} {str(exp.dtype).replace('torch.', '')} "
                    f"{exp.device} size={size} stride={stride} "
                    f"requires_grad={exp.requires_grad}")
        if self.kind is Kind.SHAPE:
            return self.label or self.text
        if self.kind is Kind.GLOBAL_STATE:
            return f"global state: {self.label or self.text}"
        if self.kind is Kind.DISTINCT:
            return f"{', '.join(map(str, exp))} are distinct objects"
        if self.kind is Kind.ID_MATCH:
            return f"{src} is {_short(exp)}"
        if self.kind is Kind.TYPE_MATCH:
            return f"type({src}) is {exp.__qualname__}"
        if self.kind is Kind.CONSTANT_MATCH:
            return f"{src} == {exp!r}"
        if self.kind is Kind.LEN_MATCH:
            return f"len({src}) == {exp}"
        if self.kind is Kind.NOT_IN_DICT:
            return f"{exp!r} not in {src}.__dict__"
        if self.kind is Kind.KEY_ABSENT:
            return f"{exp!r} not in {src}"
        if self.kind is Kind.EMPTY:
            return f"{src} is empty"
        if self.kind is Kind.SAME_OBJECT:
            return f"{src} is {exp}"
        if self.kind is Kind.DICT_KEYS:
            return f"keys of {src} == {exp!r}"
        if self.kind is Kind.SET_EQUALS:
            return f"{src} == {set(exp)!r}"
        return f"{self.kind.name} {src}"

    __str__ = describe


def _short(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name:
        return f"<{type(obj).__name__} {name}>"
    return f"<{type(obj).__name__} object at {id(obj):#x}>"


def tensor_match_expr(first: str, e: str, meta: TensorMeta, pool: ConstPool) -> str:
    """Cheapest-first checks of a tensor's class, dtype, device, sizes,
    strides and requires_grad.  ``first`` evaluates the tensor (binding it
    when it is not a plain name), ``e`` reads it afterwards."""
    if meta.full:
        parts = [f"type({first}) is {pool.const(meta.cls)}", f"{e}.dtype is {pool.const(meta.dtype)}"]
    else:
        parts = [f"{first}.dtype is {pool.const(meta.dtype)}"]
    dev = meta.device
    if dev.type == "cpu":
        parts.append(f"{e}.is_cpu")
    elif dev.type == "cuda":
        parts.append(f"{e}.is_cuda and {e}.get_device() == {dev.index}")
    else:
        parts.append(f"{e}.device == {pool.const(dev)}")
    parts.append(f"{e}.requires_grad is {meta.requires_grad}")
    if not meta.dynamic:
        parts.append(f"{e}.size() == {meta.size!r}")
        if meta.full:
            parts.append(f"{e}.stride() == {meta.stride!r}")
        return " and ".join(parts)
    # dynamic dims are checked by the ShapeEnv's guards; the rest here
    parts.append(f"{e}.dim() == {len(meta.size)}")
    parts.extend(f"{e}.size({d}) == {n}" for d, n in enumerate(meta.size) if n is not None)
    if meta.full:
        parts.extend(f"{e}.stride({d}) == {n}" for d, n in enumerate(meta.stride) if n is not None)
    return " and ".join(parts)
