"""User functions (inlined when called), closures and their cells."""
from __future__ import annotations

import inspect
import types
from typing import Any

from ...diagnostics.errors import Unsupported, UserException, user_error
from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource, ClosureCellSource, ItemSource, Source, constant_source
from ..base import Value, LazyValue, realize
from ..constant import ConstantValue
from ..builder import wrap
from .. import kinds

#: the data descriptors of the function type (``__name__``, ``__code__``,
#: ``__dict__``...): found before the instance ``__dict__``
_FUNCTION_DATA_ATTRS = frozenset(name for name, raw in vars(types.FunctionType).items()
                                 if type(raw).__name__ in ("getset_descriptor", "member_descriptor"))


def _type_has(tp: type, name: str) -> bool:
    """``name`` is an attribute of ``tp``'s instances found on the type (its
    MRO's dicts; not the metaclass's, as ``hasattr(tp, name)`` would say)."""
    return any(name in vars(klass) for klass in tp.__mro__)


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

    def getattr(self, tx, name):
        if name == "cell_contents":
            if self.contents is CellValue.EMPTY:
                raise user_error(ValueError, "Cell is empty")
            return self.contents
        raise Unsupported(f"attribute {name!r} of a cell")

    def setattr(self, tx, name, value):
        """``cell.cell_contents = v``: how a resume function writes a cell it
        made (codegen/resume.py, 3.12+'s comprehension cells)."""
        if name != "cell_contents":
            raise Unsupported(f"setting attribute {name!r} of a cell")
        self.contents = value

    def reconstruct(self, out):
        from ...runtime import replay
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
        from ...effects import CellStore
        self.pending = value
        tx.ctx.effects.record(CellStore(self, value))

    def getattr(self, tx, name):
        if name == "cell_contents":
            try:
                return self.get(tx, "cell_contents")
            except UserException as e:
                if issubclass(e.exc_type, NameError):
                    raise user_error(ValueError, "Cell is empty")
                raise
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
        from ...guards.sources import ClosureSource
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
        if getattr(tx.ctx, "auditing_construction", False):
            from ..nn.user_module_construction import module_init_call
            done = module_init_call(tx, getattr(self, "fn", None), args, kwargs)
            if done is not None:
                return done
        return tx.inline_function(self, args, kwargs)

    def has_attr(self, tx, name):
        # the methods of the function type (__call__, __get__...) exist on
        # every function: no need to read them (getattr would break)
        if name not in _FUNCTION_DATA_ATTRS and _type_has(types.FunctionType, name):
            return True
        return super().has_attr(tx, name)

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
                    v = kinds.TupleValue(list(v))
                elif p.kind is p.VAR_KEYWORD:
                    v = kinds.DictValue(dict(v))
                result[local] = v
            elif p.kind is p.VAR_POSITIONAL:
                result[local] = kinds.TupleValue([])
            elif p.kind is p.VAR_KEYWORD:
                result[local] = kinds.DictValue({})
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

    def getattr(self, tx, name):
        """``function.__getattribute__``: the function type's data
        descriptors (``__name__``, ``__code__``, ``__dict__``...), then the
        instance ``__dict__`` (``__wrapped__``, user attributes).  Every
        read is of the real function, guarded on its source (a function read
        from a class dict has none: it is then loaded as a constant); an
        attribute it lacks is an AttributeError, guarded absent."""
        fn = self.fn
        if name == "__class__":  # cannot be assigned on a function: nothing to guard
            return wrap(tx.ctx, type(fn), None)
        src = self.source if self.source is not None else constant_source(fn, fn.__qualname__)
        if name == "__closure__":  # the one Value per cell that calls use, too
            if fn.__closure__ is None:
                return ConstantValue(None)
            return kinds.TupleValue(list(self.closure_cells(tx.ctx, src)))
        if name in _FUNCTION_DATA_ATTRS or name in fn.__dict__:
            return wrap(tx.ctx, getattr(fn, name), AttrSource(src, name))
        if _type_has(type(fn), name):  # a method of every function (__get__, __call__, __repr__...)
            raise Unsupported(f"the method {name!r} of a function")
        tx.ctx.guards.add(Guard(Kind.NOT_IN_DICT, src, name))
        raise user_error(AttributeError, f"'function' object has no attribute {name!r}")

    def closure_cells(self, ctx=None, source=None):
        """The function's cells, one Value per real cell for the whole trace
        (so a write through one closure is seen through every other)."""
        cells = self.fn.__closure__ or ()
        out = []
        source = source or self.source
        if source is None and cells:
            # a function trusted without a guard (torch's own): its cells are
            # read through the function object itself
            source = constant_source(self.fn, self.fn.__qualname__)
        from .closure_aliasing import cell_value
        varying = getattr(self, "guarded_by_code", False)
        for i, cell in enumerate(cells):
            contents = AttrSource(ItemSource(AttrSource(source, "__closure__"), i), "cell_contents")
            out.append(cell_value(ctx, cell, contents, varying))
        return tuple(out)

    def reconstruct(self, out):
        """Residual code (a graph break hands the function on): its source,
        or, for one read without a source of its own (a staticmethod read
        through an instance, a function of a class dict), the very object as
        a constant: the read that found it was guarded, so it is the
        function this entry runs with."""
        if self.source is None:
            out.load_const(self.fn)
            return
        super().reconstruct(out)

    def __repr__(self):
        return f"<function {self.code.co_qualname}>"


def _wrap_default(value, source, ctx):
    # wrapped (and guarded) only if the callee reads it
    return LazyValue(value, source, ctx)


#: attributes of a function that assignment replaces (data descriptors of
#: the function type) and what CPython requires of the new value
_WRITABLE = {"__name__": str, "__qualname__": str, "__doc__": None, "__module__": None,
             "__defaults__": tuple, "__kwdefaults__": dict, "__annotations__": dict, "__dict__": dict,
             "__type_params__": tuple}
_SET_ERRORS = {"__name__": "__name__ must be set to a string object",
               "__qualname__": "__qualname__ must be set to a string object",
               "__defaults__": "__defaults__ must be set to a tuple object",
               "__kwdefaults__": "__kwdefaults__ must be set to a dict object",
               "__annotations__": "__annotations__ must be set to a dict object",
               "__type_params__": "__type_params__ must be set to a tuple"}


class NestedFunctionValue(_Function):
    """A function created while tracing by ``MAKE_FUNCTION``.  It is the
    trace's own object, so its attributes are modelled here: what
    MAKE_FUNCTION gave it, assignments to the writable ones (``__name__``,
    ``__doc__``, ``__defaults__``... as ``functools.wraps`` makes them), and
    its ``__dict__`` (a DictValue, created on first use, holding
    ``__wrapped__`` and user attributes).  Rebuilt after the graph, the real
    function gets the same attributes and that very dict."""

    def __init__(self, code: types.CodeType, f_globals: dict, defaults: Value | None,
                 kwdefaults: Value | None, closure: tuple[Value, ...]):
        super().__init__()
        self.code, self.f_globals = code, f_globals
        self._defaults, self._kwdefaults, self.closure = defaults, kwdefaults, closure
        #: the annotations MAKE_FUNCTION got (a tuple of names and values), if any
        self.annotations: Value | None = None
        #: 3.14 (PEP 649): the function's ``__annotate__`` (a function Value),
        #: which makes ``__annotations__`` when first read
        self.annotate: Value | None = None
        #: assigned __name__/__qualname__/__doc__/__module__/__type_params__, and
        #: the __annotations__ dict once read or assigned
        self.assigned: dict[str, Value] = {}
        self.dict_value: Value | None = None

    def defaults(self, ctx):
        d = list(self._defaults.items) if self._defaults is not None else []
        kd = dict(self._kwdefaults.items) if self._kwdefaults is not None else {}
        return d, kd

    def closure_cells(self, ctx=None):
        return self.closure

    def instance_dict(self):
        if self.dict_value is None:
            self.dict_value = kinds.DictValue({})
        return self.dict_value

    def _annotations(self, tx) -> Value:
        """``__annotations__``: made from MAKE_FUNCTION's tuple (or empty)
        on first read, then the same dict (as func_get_annotations does)."""
        got = self.assigned.get("__annotations__")
        if got is None:
            if self.annotate is not None and self.annotations is None:
                # 3.14: func_get_annotations calls __annotate__(VALUE) once
                # and keeps the dict it returns
                got = self.annotate.call(tx, [ConstantValue(1)], {})
                if not isinstance(got, kinds.DictValue):
                    raise Unsupported("__annotate__ of a function made in the frame returned something else than a dict")
                self.assigned["__annotations__"] = got
                return got
            items = tx.iterate(self.annotations) if self.annotations is not None else []
            pairs = {}
            for i in range(0, len(items) - 1, 2):
                key = items[i]
                if not key.is_python_constant():
                    raise Unsupported("an annotation name that is not a constant")
                pairs[key.as_python_constant()] = items[i + 1]
            got = self.assigned["__annotations__"] = kinds.DictValue(pairs)
        return got

    def getattr(self, tx, name):
        """``function.__getattribute__``: the function type's data
        descriptors, then the instance ``__dict__``, then the type's
        methods."""
        code = self.code
        if name == "__class__":
            return wrap(tx.ctx, types.FunctionType, None)
        if name in self.assigned and name != "__annotations__":
            return self.assigned[name]
        if name in ("__name__", "__qualname__"):
            return ConstantValue(code.co_name if name == "__name__" else code.co_qualname)
        if name == "__module__":
            module = self.f_globals.get("__name__")
            if type(module) is not str:
                raise Unsupported("__module__ of a function made in a compiled frame whose globals have no __name__")
            return ConstantValue(module)
        if name == "__doc__":  # CPython: the first constant, if it is a string
            doc = code.co_consts[0] if code.co_consts else None
            return ConstantValue(doc if isinstance(doc, str) else None)
        if name == "__code__":
            return ConstantValue(code)
        if name == "__defaults__":
            return self._defaults if self._defaults is not None else ConstantValue(None)
        if name == "__kwdefaults__":
            return self._kwdefaults if self._kwdefaults is not None else ConstantValue(None)
        if name == "__closure__":
            return kinds.TupleValue(list(self.closure)) if self.closure else ConstantValue(None)
        if name == "__dict__":
            return self.instance_dict()
        if name == "__annotations__":
            return self._annotations(tx)
        if name == "__annotate__" and name in _FUNCTION_DATA_ATTRS:   # 3.14
            return self.annotate if self.annotate is not None else ConstantValue(None)
        if name == "__type_params__" and name in _FUNCTION_DATA_ATTRS:
            return ConstantValue(())   # (3.12+; MAKE_FUNCTION of a generic function is not modelled)
        if name in _FUNCTION_DATA_ATTRS:
            raise Unsupported(f"attribute {name!r} of a function made in a compiled frame")
        if self.dict_value is not None and name in self.dict_value.items:
            return self.dict_value.items[name]
        if _type_has(types.FunctionType, name):
            raise Unsupported(f"attribute {name!r} of a function made in a compiled frame")
        raise user_error(AttributeError, f"'function' object has no attribute {name!r}")

    def setattr(self, tx, name, value):
        """``f.name = value`` on a function made in the frame (no side
        effect: the function is the trace's own)."""
        value = realize(tx.ctx, value)
        if name == "__annotate__" and name in _FUNCTION_DATA_ATTRS:
            self._set_annotate(value)
            return
        if name in _FUNCTION_DATA_ATTRS and name not in _WRITABLE or name == "__class__":
            raise Unsupported(f"assigning {name!r} of a function made in a compiled frame")
        if name not in _WRITABLE:
            self.instance_dict().items[name] = value
            return
        kind = _WRITABLE[name]
        is_none = value.is_python_constant() and value.as_python_constant() is None
        if kind is str:
            if not (value.is_python_constant() and type(value.as_python_constant()) is str):
                raise user_error(TypeError, _SET_ERRORS[name])
            self.assigned[name] = value
        elif name == "__defaults__":
            if is_none:
                self._defaults = None
            elif isinstance(value, kinds.TupleValue) and value.cls is tuple:
                self._defaults = value
            elif value.is_python_constant() and type(value.as_python_constant()) is tuple:
                self._defaults = kinds.TupleValue([ConstantValue(v) for v in value.as_python_constant()])
            else:
                raise user_error(TypeError, _SET_ERRORS[name])
        elif name == "__kwdefaults__":
            if is_none:
                self._kwdefaults = None
            elif type(value) is kinds.DictValue and value.cls is dict:
                self._kwdefaults = value
            else:
                raise user_error(TypeError, _SET_ERRORS[name])
        elif name in ("__dict__", "__annotations__"):
            if not (type(value) is kinds.DictValue and value.cls is dict):
                if name == "__dict__":
                    raise user_error(TypeError, f"__dict__ must be set to a dictionary, not a "
                                                f"'{value.python_type().__name__}'")
                raise user_error(TypeError, _SET_ERRORS[name])
            if name == "__dict__":
                self.dict_value = value
            else:
                self.assigned[name] = value
                self.annotate = None   # (3.14: assigned annotations drop __annotate__)
        elif name == "__type_params__":
            if not (isinstance(value, kinds.TupleValue) and value.cls is tuple
                    or value.is_python_constant() and type(value.as_python_constant()) is tuple):
                raise user_error(TypeError, _SET_ERRORS[name])
            self.assigned[name] = value
        else:   # __doc__, __module__: any object
            self.assigned[name] = value

    def _set_annotate(self, value) -> None:
        """3.14's ``func.__annotate__ = value`` (functools.wraps copies it):
        None or a callable; a callable drops the computed annotations."""
        if value.is_python_constant() and value.as_python_constant() is None:
            self.annotate = None
            return
        if value.is_python_constant():
            ok = callable(value.as_python_constant())
        else:
            ok = isinstance(value, _Function) or hasattr(value.python_type(), "__call__")
        if not ok:
            raise user_error(TypeError, "__annotate__ must be callable or None")
        self.annotate = value
        self.annotations = None
        self.assigned.pop("__annotations__", None)

    def signature_stand_in(self, tx):
        """A real function with this one's code, defaults, keyword defaults
        and annotations, for ``inspect.signature`` (which reads only
        those), or None when one of them is not a constant or the function
        has attributes inspect would follow (``__wrapped__``,
        ``__signature__``)."""
        if self.dict_value is not None and self.dict_value.items:
            return None
        if self.annotate is not None and "__annotations__" not in self.assigned:
            self._annotations(tx)   # (3.14: inspect reads them through __annotate__ too)
        parts = [self._defaults, self._kwdefaults, self.assigned.get("__annotations__", self.annotations)]
        if any(p is not None and not p.is_python_constant() for p in parts):
            return None
        defaults, kwdefaults, annotations = (p.as_python_constant() if p is not None else None for p in parts)
        cells = tuple(types.CellType() for _ in self.code.co_freevars) or None
        fn = types.FunctionType(self.code, {}, self.code.co_name, defaults, cells)
        fn.__kwdefaults__ = kwdefaults
        if type(annotations) is tuple:
            annotations = dict(zip(annotations[::2], annotations[1::2]))
        fn.__annotations__ = annotations or {}
        return fn

    def delattr(self, tx, name):
        if name in _FUNCTION_DATA_ATTRS or name == "__class__":
            raise Unsupported(f"deleting {name!r} of a function made in a compiled frame")
        d = self.instance_dict()
        if name not in d.items:
            raise user_error(AttributeError, f"'function' object has no attribute {name!r}")
        del d.items[name]

    def reconstruct(self, out):
        from ...runtime import replay
        extra = {k: v for k, v in self.assigned.items()}
        if self.annotations is not None and "__annotations__" not in extra:
            extra["__annotations__"] = self.annotations   # (a tuple of names and values)
        if self.annotate is not None and "__annotations__" not in extra:
            extra["__annotate__"] = self.annotate   # 3.14: computes them when read
        if self.dict_value is not None:
            extra["__dict__"] = self.dict_value
        if extra:
            out.instr("PUSH_NULL")
            out.load_const(set_function_attributes)
        out.instr("PUSH_NULL")
        out.load_const(replay.make_function)
        out.load_const(self.code)
        out.load_const(self.f_globals)
        out.load_const(self.code.co_name)
        defaults, kwdefaults = self.defaults(None)
        if self._defaults is None:
            out.load_const(None)   # (not (): __defaults__ stays None)
        else:
            for d in defaults:
                out.reconstruct(d)
            out.instr("BUILD_TUPLE", len(defaults))
        out.build_map(kwdefaults)
        for c in self.closure:
            out.reconstruct(c)
        out.instr("BUILD_TUPLE", len(self.closure))
        out.call(6)
        if extra:
            out.load_const(tuple(extra))
            for v in extra.values():
                out.reconstruct(v)
            out.instr("BUILD_TUPLE", len(extra))
            out.call(3)

    def __repr__(self):
        return f"<nested function {self.code.co_qualname}>"


def set_function_attributes(fn, names: tuple, values: tuple):
    """Residual code: give a function rebuilt after the graph the
    attributes the trace assigned (``__dict__`` is the rebuilt dict
    itself, so the function and any other holder of it share one)."""
    for name, value in zip(names, values):
        if name == "__annotations__" and type(value) is tuple:   # MAKE_FUNCTION's form
            value = dict(zip(value[::2], value[1::2]))
        setattr(fn, name, value)
    return fn


class BoundMethodValue(Value):
    """``obj.method`` for a Python-level method: calls inline with obj first."""

    def __init__(self, func: Value, obj: Value, source=None):
        super().__init__(source)
        self.func, self.obj = func, obj

    def python_type(self):
        return types.MethodType

    def getattr(self, tx, name):
        """``method.__getattribute__``: ``__func__``, ``__self__``, the
        method type's own attributes, then everything else read from
        ``__func__``."""
        if name == "__func__":
            return self.func
        if name == "__self__":
            return self.obj
        if name == "__class__":
            return wrap(tx.ctx, types.MethodType, None)
        if name != "__doc__" and _type_has(types.MethodType, name):
            raise Unsupported(f"the method {name!r} of a bound method")
        try:
            return self.func.getattr(tx, name)
        except UserException as e:
            if issubclass(e.exc_type, AttributeError):
                raise user_error(AttributeError, f"'method' object has no attribute {name!r}")
            raise

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



#: attribute values of a C function that are answered as constants
_FIXED_ATTR_TYPES = (str, int, bool, type(None))


def callable_constant_attribute(tx, value, name: str) -> Value:
    """``fn.name`` for a fixed callable (a builtin, a torch function, a
    method descriptor).  A Python function's attributes are read as a user
    function's are (guarded through its source); a C function has no
    instance dict and fixed attributes, so its names and docstring are
    constants and a missing attribute is an AttributeError."""
    fn = value.fn
    if isinstance(fn, types.FunctionType):
        return UserFunctionValue(fn, value.source).getattr(tx, name)
    if isinstance(fn, type) or hasattr(fn, "__dict__"):
        raise Unsupported(f"attribute {name!r} of {value}")
    try:
        attr = getattr(fn, name)
    except AttributeError as e:
        raise user_error(AttributeError, str(e))
    if type(attr) in _FIXED_ATTR_TYPES:
        return ConstantValue(attr)
    if name in ("__self__", "__objclass__") and isinstance(attr, (type, types.ModuleType)):
        return wrap(tx.ctx, attr, None)
    raise Unsupported(f"attribute {name!r} of {value}")


def _class_attribute(cls: type, name: str):
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name], klass
    return None, None


def tensor_method_type(tensor_cls: type, name: str) -> type:
    """``type(t.name)`` for a method of a tensor: a bound builtin method for
    torch's C methods, a bound method for the Python ones."""
    raw, _ = _class_attribute(tensor_cls, name)
    if isinstance(raw, types.FunctionType):
        return types.MethodType
    if isinstance(raw, types.MethodDescriptorType):
        return types.BuiltinMethodType
    if isinstance(raw, types.WrapperDescriptorType):
        return types.MethodWrapperType
    raise Unsupported(f"the type of the tensor attribute {name!r}")


def tensor_method_attribute(tx, method, name: str) -> Value:
    """``t.name.attr`` for a tensor method ``t.name`` of torch's own tensor
    classes: ``__self__`` is the tensor; the names and the docstring are the
    class attribute's (a bound C method's ``__qualname__`` names the
    tensor's class, as meth_get__qualname__ makes it)."""
    import torch
    cls = method.tensor.python_type()
    raw, owner = _class_attribute(cls, method.name)
    if raw is None or not (owner.__module__ or "").startswith("torch"):
        raise Unsupported(f"attribute {name!r} of {method} (a method not defined by torch)")
    if name == "__self__":
        return method.tensor
    if name == "__class__":
        return wrap(tx.ctx, tensor_method_type(cls, method.name), None)
    if isinstance(raw, types.FunctionType):
        if name == "__func__":
            return wrap(tx.ctx, raw, None)
        return UserFunctionValue(raw, None).getattr(tx, name)
    if name == "__qualname__":
        return ConstantValue(f"{cls.__qualname__}.{raw.__name__}")
    if name == "__module__":
        return ConstantValue(None)
    if name in ("__name__", "__doc__", "__text_signature__"):
        return ConstantValue(getattr(raw, name))
    if not hasattr(getattr(torch.empty(0), method.name), name):
        raise user_error(AttributeError, f"'{tensor_method_type(cls, method.name).__name__}' object has no "
                                         f"attribute {name!r}")
    raise Unsupported(f"attribute {name!r} of {method}")
