"""User functions (inlined when called), closures and their cells."""
from __future__ import annotations

import inspect
import types
from typing import Any

from ..diagnostics.errors import Unsupported
from ..guards.sources import AttrSource, ItemSource, Source
from .base import Value
from .constant import ConstantValue


class CellValue(Value):
    """A cell created while tracing (``MAKE_CELL``): its contents are a Value."""

    EMPTY = object()

    def __init__(self, contents: Any = EMPTY):
        super().__init__()
        self.contents = contents

    def get(self, tx, name: str) -> Value:
        if self.contents is CellValue.EMPTY:
            raise Unsupported(f"free variable {name!r} referenced before assignment")
        return self.contents

    def set(self, tx, value: Value) -> None:
        self.contents = value


class RealCellValue(Value):
    """A cell of a function that existed before the frame; read lazily through
    its Source and guarded like any other read."""

    def __init__(self, cell: types.CellType, source: Source):
        super().__init__(source)
        self.cell = cell

    def get(self, tx, name: str) -> Value:
        from .builder import wrap
        try:
            contents = self.cell.cell_contents
        except ValueError:
            raise Unsupported(f"free variable {name!r} referenced before assignment")
        return wrap(tx.ctx, contents, self.source)

    def set(self, tx, value: Value) -> None:
        raise Unsupported("assigning to a nonlocal variable of a function defined outside the compiled frame",
                          hint="side effects on closure cells are not replayed yet")


class _Function(Value):
    """Shared inlining machinery for user-level Python functions."""

    code: types.CodeType
    f_globals: dict

    def python_type(self):
        return types.FunctionType

    def defaults(self) -> tuple[list[Value], dict[str, Value]]:
        raise NotImplementedError

    def closure_cells(self) -> tuple[Value, ...]:
        raise NotImplementedError

    def call(self, tx, args, kwargs):
        from ..trace.inline import inline_function
        return inline_function(tx, self, args, kwargs)

    def bind(self, args: list[Value], kwargs: dict[str, Value]) -> dict[str, Value]:
        defaults, kwdefaults = self.defaults()
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
            local = names[pos]
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

    def defaults(self):
        fn = self.fn
        d = fn.__defaults__ or ()
        kd = fn.__kwdefaults__ or {}
        src = self.source
        return ([_wrap_default(v, src and ItemSource(AttrSource(src, "__defaults__"), i)) for i, v in enumerate(d)],
                {k: _wrap_default(v, src and ItemSource(AttrSource(src, "__kwdefaults__"), k)) for k, v in kd.items()})

    def closure_cells(self):
        cells = self.fn.__closure__ or ()
        out = []
        for i, (cell, name) in enumerate(zip(cells, self.code.co_freevars)):
            if self.source is None:
                raise Unsupported(f"closure of {self.code.co_qualname} without a source")
            src = AttrSource(ItemSource(AttrSource(self.source, "__closure__"), i), "cell_contents")
            out.append(RealCellValue(cell, src))
        return tuple(out)

    def __repr__(self):
        return f"<function {self.code.co_qualname}>"


def _wrap_default(value, source):
    # wrapped (and guarded) only if the callee reads it
    from .base import LazyValue
    return LazyValue(value, source)


class NestedFunctionValue(_Function):
    """A function created while tracing by ``MAKE_FUNCTION``."""

    def __init__(self, code: types.CodeType, f_globals: dict, defaults: Value | None,
                 kwdefaults: Value | None, closure: tuple[Value, ...]):
        super().__init__()
        self.code, self.f_globals = code, f_globals
        self._defaults, self._kwdefaults, self.closure = defaults, kwdefaults, closure

    def defaults(self):
        d = list(self._defaults.items) if self._defaults is not None else []
        kd = dict(self._kwdefaults.items) if self._kwdefaults is not None else {}
        return d, kd

    def closure_cells(self):
        return self.closure

    def reconstruct(self, out):
        raise Unsupported(f"returning the nested function {self.code.co_qualname} from a compiled frame")

    def __repr__(self):
        return f"<nested function {self.code.co_qualname}>"


class BoundMethodValue(Value):
    """``obj.method`` for a Python-level method: calls inline with obj first."""

    def __init__(self, func: Value, obj: Value, source=None):
        super().__init__(source)
        self.func, self.obj = func, obj

    def python_type(self):
        return types.MethodType

    def call(self, tx, args, kwargs):
        return self.func.call(tx, [self.obj, *args], kwargs)

    def __repr__(self):
        return f"<bound method {self.func!r} of {self.obj!r}>"
