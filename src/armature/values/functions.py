"""User functions (inlined when called), closures and their cells."""
from __future__ import annotations

import inspect
import types
from typing import Any

from ..diagnostics.errors import Unsupported, user_error
from ..guards.sources import AttrSource, ClosureCellSource, ItemSource, Source
from .base import Value


def unbound_cell(name: str):
    """CPython 3.11's error for reading an empty free variable (the handler
    turns it into UnboundLocalError for the frame's own cell variables)."""
    return user_error(NameError, f"cannot access free variable {name!r} where it is not associated with a value "
                                 "in enclosing scope")


class CellValue(Value):
    """A cell created while tracing (``MAKE_CELL``): its contents are a Value."""

    EMPTY = object()

    def __init__(self, contents: Any = EMPTY):
        super().__init__()
        self.contents = contents

    def get(self, tx, name: str) -> Value:
        if self.contents is CellValue.EMPTY:
            raise unbound_cell(name)
        return self.contents

    def set(self, tx, value: Value) -> None:
        self.contents = value

    def reconstruct(self, out):
        from ..runtime import replay
        out.instr("PUSH_NULL")
        out.load_const(replay.make_cell)
        if self.contents is CellValue.EMPTY:
            out.call(0)
        else:
            out.reconstruct(self.contents)
            out.call(1)


class RealCellValue(Value):
    """A cell of a function that existed before the frame; read lazily through
    its Source and guarded like any other read."""

    def __init__(self, cell: types.CellType, source: Source):
        super().__init__(source)
        self.cell = cell
        self.pending: Any = CellValue.EMPTY   # a write made in this trace

    def get(self, tx, name: str) -> Value:
        from .builder import wrap
        if self.pending is not CellValue.EMPTY:
            if self.pending is None:
                raise unbound_cell(name)
            return self.pending
        try:
            contents = self.cell.cell_contents
        except ValueError:
            raise unbound_cell(name)
        return wrap(tx.ctx, contents, self.source)

    def set(self, tx, value: Value | None) -> None:
        """``value`` None deletes the contents."""
        from ..effects import CellStore
        self.pending = value
        tx.ctx.effects.record(CellStore(self, value))

    def getattr(self, tx, name):
        if name == "cell_contents":
            return self.get(tx, "cell_contents")
        raise Unsupported(f"attribute {name!r} of a cell")

    def setattr(self, tx, name, value):
        if name != "cell_contents":
            raise Unsupported(f"attribute {name!r} of a cell")
        self.set(tx, value)

    def delattr(self, tx, name):
        if name != "cell_contents":
            raise Unsupported(f"attribute {name!r} of a cell")
        self.get(tx, "cell_contents")
        self.set(tx, None)

    def reconstruct(self, out):
        self.cell_source().emit(out)

    def cell_source(self):
        """Source of the cell object itself (the contents' source minus
        ``.cell_contents``)."""
        from ..guards.sources import ClosureSource
        src = self.source
        if isinstance(src, ClosureSource):
            return ClosureCellSource(src.index, src.name)
        return src.parent


class _Function(Value):
    """Shared inlining machinery for user-level Python functions."""

    code: types.CodeType
    f_globals: dict

    def python_type(self):
        return types.FunctionType

    def defaults(self, ctx) -> tuple[list[Value], dict[str, Value]]:
        raise NotImplementedError

    def closure_cells(self, ctx=None) -> tuple[Value, ...]:
        raise NotImplementedError

    def call(self, tx, args, kwargs):
        from ..trace.inline import inline_function
        return inline_function(tx, self, args, kwargs)

    def bind(self, args: list[Value], kwargs: dict[str, Value], ctx=None) -> dict[str, Value]:
        defaults, kwdefaults = self.defaults(ctx)
        sig = _signature(self.code, len(defaults), tuple(sorted(kwdefaults)))
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise Unsupported(f"TypeError calling {self.code.co_qualname}(): {e}")
        result: dict[str, Value] = {}
        # inspect renames a comprehension's ".0" parameter to "implicit0":
        # locals are keyed by the code's own names, taken by position.
        names = self.code.co_varnames
        for pos, p in enumerate(sig.parameters.values()):
            # (co_varnames puts keyword-only parameters before *args: map by name)
            local = p.name if p.name in names else names[pos]
            if p.name in bound.arguments:
                v = bound.arguments[p.name]
                if p.kind is p.VAR_POSITIONAL:
                    from .containers import TupleValue
                    v = TupleValue(list(v))
                elif p.kind is p.VAR_KEYWORD:
                    from .containers import DictValue
                    v = DictValue(dict(v))
                result[local] = v
            elif p.kind is p.VAR_POSITIONAL:
                from .containers import TupleValue
                result[local] = TupleValue([])
            elif p.kind is p.VAR_KEYWORD:
                from .containers import DictValue
                result[local] = DictValue({})
            elif p.kind is p.KEYWORD_ONLY:
                result[local] = kwdefaults[p.name]
            else:
                result[local] = defaults[p.default.index]
        return result


class _DefaultMarker:
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index


_SIG_CACHE: dict[tuple, inspect.Signature] = {}


def _signature(code: types.CodeType, ndefaults: int, kwdefault_names: tuple) -> inspect.Signature:
    key = (code, ndefaults, kwdefault_names)
    sig = _SIG_CACHE.get(key)
    if sig is None:
        cells = tuple(types.CellType() for _ in code.co_freevars)
        dummy = types.FunctionType(code, {}, code.co_name,
                                   tuple(_DefaultMarker(i) for i in range(ndefaults)), cells or None)
        dummy.__kwdefaults__ = {k: None for k in kwdefault_names} or None
        sig = inspect.signature(dummy)
        _SIG_CACHE[key] = sig
    return sig


class UserFunctionValue(_Function):
    """A Python function that existed before the frame (guarded by identity)."""

    def __init__(self, fn: types.FunctionType, source: Source | None):
        super().__init__(source)
        self.fn = fn
        self.code = fn.__code__
        self.f_globals = fn.__globals__

    def defaults(self, ctx):
        fn = self.fn
        d = fn.__defaults__ or ()
        kd = fn.__kwdefaults__ or {}
        src = self.source
        return ([_wrap_default(v, src and ItemSource(AttrSource(src, "__defaults__"), i), ctx) for i, v in enumerate(d)],
                {k: _wrap_default(v, src and ItemSource(AttrSource(src, "__kwdefaults__"), k), ctx) for k, v in kd.items()})

    _FUNCTION_ATTRS = ("__name__", "__qualname__", "__module__", "__doc__")

    def getattr(self, tx, name):
        from .builder import wrap
        if name in self._FUNCTION_ATTRS:
            return wrap(tx.ctx, getattr(self.fn, name), AttrSource(self.source, name) if self.source else None)
        if name in ("__wrapped__", "__defaults__", "__kwdefaults__", "__code__", "__globals__") or \
                name in getattr(self.fn, "__dict__", {}):
            if self.source is None:
                raise Unsupported(f"attribute {name!r} of a function without a source")
            try:
                return wrap(tx.ctx, getattr(self.fn, name), AttrSource(self.source, name))
            except AttributeError:
                raise user_error(AttributeError, f"'function' object has no attribute {name!r}")
        raise user_error(AttributeError, f"'function' object has no attribute {name!r}")

    def closure_cells(self, ctx=None):
        """The function's cells, one Value per real cell for the whole trace
        (so a write through one closure is seen through every other)."""
        cells = self.fn.__closure__ or ()
        out = []
        for i, cell in enumerate(cells):
            if self.source is None:
                raise Unsupported(f"closure of {self.code.co_qualname} without a source")
            cached = ctx.value_cache.get(id(cell)) if ctx is not None else None
            if cached is not None and cached[0] is cell:
                out.append(cached[1])
                continue
            v = RealCellValue(cell, AttrSource(ItemSource(AttrSource(self.source, "__closure__"), i), "cell_contents"))
            if ctx is not None:
                ctx.value_cache[id(cell)] = (cell, v)
            out.append(v)
        return tuple(out)

    def __repr__(self):
        return f"<function {self.code.co_qualname}>"


def _wrap_default(value, source, ctx):
    # wrapped (and guarded) only if the callee reads it
    from .base import LazyValue
    return LazyValue(value, source, ctx)


class NestedFunctionValue(_Function):
    """A function created while tracing by ``MAKE_FUNCTION``."""

    def __init__(self, code: types.CodeType, f_globals: dict, defaults: Value | None,
                 kwdefaults: Value | None, closure: tuple[Value, ...]):
        super().__init__()
        self.code, self.f_globals = code, f_globals
        self._defaults, self._kwdefaults, self.closure = defaults, kwdefaults, closure

    def defaults(self, ctx):
        d = list(self._defaults.items) if self._defaults is not None else []
        kd = dict(self._kwdefaults.items) if self._kwdefaults is not None else {}
        return d, kd

    def closure_cells(self, ctx=None):
        return self.closure

    def reconstruct(self, out):
        from ..runtime import replay
        out.instr("PUSH_NULL")
        out.load_const(replay.make_function)
        out.load_const(self.code)
        out.load_const(self.f_globals)
        out.load_const(self.code.co_name)
        defaults, kwdefaults = self.defaults(None)
        for d in defaults:
            out.reconstruct(d)
        out.instr("BUILD_TUPLE", len(defaults))
        for k, v in kwdefaults.items():
            out.load_const(k)
            out.reconstruct(v)
        out.instr("BUILD_MAP", len(kwdefaults))
        for c in self.closure:
            out.reconstruct(c)
        out.instr("BUILD_TUPLE", len(self.closure))
        out.call(6)

    def __repr__(self):
        return f"<nested function {self.code.co_qualname}>"


class BoundMethodValue(Value):
    """``obj.method`` for a Python-level method: calls inline with obj first."""

    def __init__(self, func: Value, obj: Value, source=None):
        super().__init__(source)
        self.func, self.obj = func, obj

    def python_type(self):
        return types.MethodType

    def getattr(self, tx, name):
        if name == "__func__":
            return self.func
        if name == "__self__":
            return self.obj
        if name in ("__name__", "__qualname__", "__doc__", "__module__", "__wrapped__"):
            return self.func.getattr(tx, name)
        raise user_error(AttributeError, f"'method' object has no attribute {name!r}")

    def call(self, tx, args, kwargs):
        return self.func.call(tx, [self.obj, *args], kwargs)

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        import types
        out.instr("PUSH_NULL")
        out.load_const(types.MethodType)
        out.reconstruct(self.func)
        out.reconstruct(self.obj)
        out.call(2)

    def __repr__(self):
        return f"<bound method {self.func!r} of {self.obj!r}>"

