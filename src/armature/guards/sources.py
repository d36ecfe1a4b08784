"""Sources: immutable descriptions of where a value lives relative to a frame.

A Source can (a) name the value in generated guard code (:meth:`expr`),
(b) emit bytecode that loads it in the transformed function (:meth:`emit`),
and (c) print itself for users (``str``: ``x``, ``self.linear.weight``).

Guard code and transformed functions both receive the called function object
as a hidden keyword argument (names.py ``FN_ARG``; guard source
spells it ``___f``) so that closure cells and defaults of *that* function
(not the one traced first) are read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ..names import FN_ARG, guard_fn_name


class ConstPool(Protocol):
    #: prefix of the pool's own names (names.py generated_prefix)
    prefix: str

    def const(self, obj: Any) -> str: ...
    def render(self, source: "Source") -> str: ...


class Emitter(Protocol):
    def load_const(self, obj: Any) -> None: ...
    def instr(self, name: str, arg: Any = ...) -> None: ...


def _is_literal(key: Any) -> bool:
    return type(key) in (int, str, bool, type(None)) or (type(key) is float and key == key)


@dataclass(frozen=True)
class Source:
    def expr(self, pool: ConstPool) -> str:
        raise NotImplementedError

    def emit(self, out: Emitter) -> None:
        raise NotImplementedError

    @property
    def base(self) -> "Source | None":
        return None

    def root(self) -> "Source":
        s = self
        while s.base is not None:
            s = s.base
        return s


@dataclass(frozen=True)
class LocalSource(Source):
    name: str

    def expr(self, pool):
        return self.name

    def emit(self, out):
        out.instr("LOAD_FAST", self.name)

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class GlobalSource(Source):
    """A global of some module.  ``own`` is True when it is a global of the
    compiled function itself (then LOAD_GLOBAL works natively)."""

    globals_id: int
    name: str
    module: str
    own: bool

    def expr(self, pool):
        return f"{pool.const(_GLOBALS_BY_ID[self.globals_id])}[{self.name!r}]"

    def emit(self, out):
        if self.own:
            out.instr("LOAD_GLOBAL", (False, self.name))
        else:
            out.load_const(_GLOBALS_BY_ID[self.globals_id])
            out.load_const(self.name)
            out.instr("BINARY_SUBSCR")

    def __str__(self):
        return self.name if self.own else f"{self.module}.{self.name}"


# Globals dicts are not hashable; sources refer to them by id and keep them
# alive here (module dicts live as long as their modules anyway).
_GLOBALS_BY_ID: dict[int, dict] = {}


def global_source(f_globals: dict, name: str, own: bool) -> GlobalSource:
    _GLOBALS_BY_ID[id(f_globals)] = f_globals
    return GlobalSource(id(f_globals), name, f_globals.get("__name__", "?"), own)


@dataclass(frozen=True)
class AttrSource(Source):
    parent: Source
    attr: str

    @property
    def base(self):
        return self.parent

    def expr(self, pool):
        return f"{pool.render(self.parent)}.{self.attr}"

    def emit(self, out):
        self.parent.emit(out)
        out.instr("LOAD_ATTR", self.attr)

    def __str__(self):
        return f"{self.parent}.{self.attr}"


@dataclass(frozen=True)
class ItemSource(Source):
    parent: Source
    key: Any

    @property
    def base(self):
        return self.parent

    def expr(self, pool):
        key = repr(self.key) if _is_literal(self.key) else pool.const(self.key)
        return f"{pool.render(self.parent)}[{key}]"

    def emit(self, out):
        self.parent.emit(out)
        out.load_const(self.key)
        out.instr("BINARY_SUBSCR")

    def __str__(self):
        return f"{self.parent}[{self.key!r}]"


@dataclass(frozen=True)
class ModuleMemberSource(ItemSource):
    """``mod._modules['x']`` / ``mod._parameters['w']``: printed as ``mod.x``
    but read through the dict, which skips ``nn.Module.__getattr__``."""

    table: str = "_modules"

    def expr(self, pool):
        return f"{pool.render(self.parent)}.{self.table}[{self.key!r}]"

    def emit(self, out):
        self.parent.emit(out)
        out.instr("LOAD_ATTR", self.table)
        out.load_const(self.key)
        out.instr("BINARY_SUBSCR")

    def __str__(self):
        return f"{self.parent}.{self.key}"


@dataclass(frozen=True)
class ClosureCellSource(Source):
    """The cell ``index`` of the called function's closure."""

    index: int
    name: str

    def expr(self, pool):
        return f"{guard_fn_name(pool.prefix)}.__closure__[{self.index}]"

    def emit(self, out):
        out.instr("LOAD_FAST", FN_ARG)
        out.instr("LOAD_ATTR", "__closure__")
        out.load_const(self.index)
        out.instr("BINARY_SUBSCR")

    def __str__(self):
        return f"<cell {self.name}>"


@dataclass(frozen=True)
class ClosureSource(Source):
    """Contents of cell ``index`` of the called function's closure."""

    index: int
    name: str

    def expr(self, pool):
        return f"{ClosureCellSource(self.index, self.name).expr(pool)}.cell_contents"

    def emit(self, out):
        ClosureCellSource(self.index, self.name).emit(out)
        out.instr("LOAD_ATTR", "cell_contents")

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class ConstantSource(Source):
    """An object captured by the trace (e.g. a class object found through a
    type() call); loaded as a constant."""

    obj_id: int
    label: str

    def expr(self, pool):
        return pool.const(_CONSTS[self.obj_id])

    def emit(self, out):
        out.load_const(_CONSTS[self.obj_id])

    def __str__(self):
        return self.label


_CONSTS: dict[int, Any] = {}


def constant_source(obj: Any, label: str) -> ConstantSource:
    _CONSTS[id(obj)] = obj
    return ConstantSource(id(obj), label)


@dataclass(frozen=True)
class DictEntrySource(Source):
    """The ``index``-th key (``part="keys"``) or value (``part="values"``)
    of a dict, or element of a set (``part="set"``), in iteration order: how
    a container whose keys are objects (tensors, modules...) is read item by
    item (values/containers/keys.py).  ``list(d)[i]`` in guards and residual code."""

    parent: Source
    index: int
    part: str = "keys"

    @property
    def base(self):
        return self.parent

    def expr(self, pool):
        inner = pool.render(self.parent)
        if self.part == "values":
            inner = f"{inner}.values()"
        return f"list({inner})[{self.index}]"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(list)
        if self.part == "values":
            out.instr("PUSH_NULL")
            self.parent.emit(out)
            out.instr("LOAD_ATTR", "values")
            out.call(0)
        else:
            self.parent.emit(out)
        out.call(1)
        out.load_const(self.index)
        out.instr("BINARY_SUBSCR")

    def __str__(self):
        if self.part == "values":
            return f"list({self.parent}.values())[{self.index}]"
        return f"list({self.parent})[{self.index}]"


@dataclass(frozen=True)
class LengthSource(Source):
    """``len(parent)`` as the frame found it: the length of an outside list
    that changes between calls (a log that grows every call), read at run
    time instead of guarded (values/tensors/symbolic.py makes it; the cache
    and the warm start read it, so it lives here with the other kinds)."""

    parent: Any

    @property
    def base(self):
        return self.parent

    def expr(self, pool):
        return f"len({pool.render(self.parent)})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(len)
        self.parent.emit(out)
        out.call(1)

    def __str__(self):
        return f"len({self.parent})"


def _memoize_hash(cls) -> None:
    """Give ``cls`` a hash computed once per Source.  A dataclass hash is
    ``hash(fields)``, and a chained source (``self._modules['a']._parameters
    ['w']``) hashes its whole parent chain on every dict lookup; guards,
    the value cache and the guard function's shared-subexpression count look
    sources up thousands of times per compile (the largest single cost of
    building a big model's guard function).  Sources are frozen and their
    fields are frozen sources and literal keys, so the hash cannot change;
    it is kept out of pickles (string hashes differ between processes)."""
    computed = cls.__hash__

    def __hash__(self):
        try:
            return self.__dict__["_hash"]
        except KeyError:
            h = computed(self)
            object.__setattr__(self, "_hash", h)
            return h
    __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
    cls.__hash__ = __hash__


def _getstate(self):
    state = dict(self.__dict__)
    state.pop("_hash", None)
    return state


Source.__getstate__ = _getstate
for _cls in (GlobalSource, AttrSource, ItemSource, ModuleMemberSource, DictEntrySource):
    _memoize_hash(_cls)
