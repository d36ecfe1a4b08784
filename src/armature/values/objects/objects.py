"""User classes and their instances, with CPython's attribute semantics.

Lookup order for ``obj.name`` (``object.__getattribute__``):
  1. a data descriptor found on the type's MRO (property, __slots__ member,
     any class with __set__/__delete__) -- its __get__ runs;
  2. the instance dict -- pending writes of this trace first, then the real
     dict of an object that existed before the frame;
  3. a non-data descriptor or plain class attribute (functions bind);
  4. ``__getattr__``, if the class defines one.
Stores and deletes honour custom ``__setattr__``/``__delattr__`` and data
descriptors (their Python code is inlined); the primitive instance-dict
write is modelled in an overlay and, for pre-existing objects, logged as a
side effect.
"""
from __future__ import annotations

import collections as _collections
import functools as _functools
import inspect
import functools
import types
from typing import Any

from ...diagnostics.errors import Unsupported, user_error
from ...effects import DELETED, AttrDelete, AttrStore, DictReplace
from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource, ItemSource, Source, constant_source
from ..base import Value, realize
from ..constant import ConstantValue
from ..builder import wrap, wrap_constant_result
from .. import kinds

_MISSING = object()


def _is_data_descriptor(obj) -> bool:
    t = type(obj)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


def class_source(cls: type, ctx=None) -> Source:
    """Where the trace reads ``cls`` from: a constant, except for a class made
    per call by a class statement (values/objects/per_call_classes.py), read through
    the source the trace met it at (``ctx``: the trace)."""
    from .per_call_classes import class_source_of, statement_of
    if ctx is not None:
        src = class_source_of(ctx, cls)
        if src is not None:
            return src
    elif statement_of(cls) is not None:
        raise Unsupported(f"reading the class {cls.__qualname__}, made per call by a class statement, "
                          "as a constant")
    return constant_source(cls, cls.__qualname__)


def _per_call_member(tx, owner: type) -> bool:
    """Whether ``owner``'s dict entries are made per call (a class made per
    call by a class statement): guarded by type and code, not identity."""
    from .per_call_classes import statement_of
    return statement_of(owner) is not None


_PROPERTY_FIELDS = frozenset({"fget", "fset", "fdel", "__doc__"})


def find_class_attr(cls: type, name: str):
    """(raw attribute, owning class) along the MRO, without running descriptors."""
    for klass in cls.__mro__:
        d = klass.__dict__
        if name in d:
            return d[name], klass
    return _MISSING, None


def wrap_class_attr(tx, cls: type, name: str, raw, owner: type) -> Value:
    """Wrap a raw class-dict entry, guarded by identity/value on its owner's dict."""
    src = ItemSource(AttrSource(class_source(owner, tx.ctx), "__dict__"), name)
    if isinstance(raw, (property, staticmethod, classmethod)) or _is_data_descriptor(raw):
        if _per_call_member(tx, owner):   # made with its class, on every call
            if isinstance(raw, (property, staticmethod, classmethod)):
                tx.ctx.guards.add(Guard(Kind.TYPE_MATCH, src, type(raw)))
                return ObjectValue(raw, src)
            return wrap(tx.ctx, raw, src)
        tx.ctx.guards.add(Guard(Kind.ID_MATCH, src, raw))
        return ObjectValue(raw, src)
    return wrap(tx.ctx, raw, src)


def bind_attr(tx, raw, owner: type, name: str, instance: Value | None, cls_value: "ClassValue") -> Value:
    """Apply the descriptor protocol to a raw class attribute (instance None:
    accessed on the class)."""
    cls = cls_value.cls
    if isinstance(raw, staticmethod):
        desc = wrap_class_attr(tx, cls, name, raw, owner)
        return _descriptor_func(tx, desc, owner, raw.__func__, "__func__")
    if isinstance(raw, classmethod):
        desc = wrap_class_attr(tx, cls, name, raw, owner)
        return kinds.BoundMethodValue(_descriptor_func(tx, desc, owner, raw.__func__, "__func__"), cls_value)
    if isinstance(raw, (types.FunctionType, functools._lru_cache_wrapper)):
        # (an lru_cache-wrapped method binds as a function does: its __get__ makes a method)
        fv = wrap_class_attr(tx, cls, name, raw, owner)
        return fv if instance is None else kinds.BoundMethodValue(fv, instance)
    if isinstance(raw, property):
        desc = wrap_class_attr(tx, cls, name, raw, owner)
        if instance is None:
            raise Unsupported(f"reading the property object {cls.__name__}.{name}")
        fget = _descriptor_func(tx, desc, owner, raw.fget, "fget")
        if raw.fget is None:
            raise user_error(AttributeError, f"property {name!r} of {cls.__name__!r} object has no getter")
        return fget.call(tx, [instance], {})
    if isinstance(instance, ObjectValue) and owner in (list, tuple) and _seq_backed(instance):
        return kinds.BoundContainerMethod(seq_contents(tx, instance), name)
    if isinstance(instance, ObjectValue) and _dict_backed(instance) and owner in _DICT_TYPES:
        if not instance.is_new and name not in _DICT_READ_METHODS:
            raise Unsupported(f"mutating the dict contents of {instance} ({name})")
        return kinds.BoundContainerMethod(dict_contents(tx, instance), name)
    from ..tensors.autograd_function import APPLY
    if raw is APPLY and type(raw) is not types.FunctionType:
        # torch >= 2.14: Function.apply is a C classmethod (2.13's Python one is bound above)
        tx.ctx.guards.add(Guard(Kind.ID_MATCH, ItemSource(AttrSource(class_source(owner, tx.ctx), "__dict__"), name),
                                raw))
        return kinds.BoundMethodValue(kinds.ApplyValue(), cls_value)
    if isinstance(raw, _functools._lru_cache_wrapper):
        # a cached method (transformers' ``logger.warning_once``): the
        # wrapper's __get__ binds it like a function (values/stdlib/functools.py)
        fv = wrap_class_attr(tx, cls, name, raw, owner)
        return fv if instance is None else kinds.BoundMethodValue(fv, instance)
    getter = getattr(type(raw), "__get__", None)
    if getter is not None and not isinstance(raw, (type, types.BuiltinFunctionType)):
        if isinstance(getter, types.FunctionType):
            from .per_call_classes import statement_of
            if statement_of(type(raw)) is not None:
                raise Unsupported(f"the descriptor {cls.__name__}.{name}, whose class is made per call")
            desc = wrap_class_attr(tx, cls, name, raw, owner)
            none = ConstantValue(None)
            return _wrap_func(tx, getter).call(tx, [desc, instance or none, cls_value], {})
        if name == "__init__" and owner.__module__ == "builtins" and issubclass(owner, BaseException):
            from ..functions.exceptions import _GENERIC_INIT, BuiltinExceptionInit
            if owner in _GENERIC_INIT and (instance is None or isinstance(instance, kinds.ExceptionValue)):
                return BuiltinExceptionInit(owner, instance)
        try:
            kind = _GENERIC_SLOTS.get(raw)
        except TypeError:   # (pybind11's instancemethod is unhashable: a C method of a pybind class)
            kind = None
        if kind is not None and instance is None:
            return _ObjectSlot(kind)   # ``object.__setattr__(self, name, v)`` in a custom __setattr__
        if type(raw).__name__ in ("method_descriptor", "wrapper_descriptor", "builtin_function_or_method",
                                  "cython_function_or_method"):   # (NumPy's Generator.normal...)
            fv = _wrap_func(tx, raw)
            if instance is None and owner in _DICT_TYPES and type(raw).__name__ != "builtin_function_or_method":
                from .builtin_subclasses import UnboundDictMethod   # (``dict.__getitem__(self, k)``)
                fv = UnboundDictMethod(owner, name, fv)
            return fv if instance is None else kinds.BoundMethodValue(fv, instance)
        if owner is dict and name == "fromkeys":
            from ..containers.containers import dict_fromkeys
            from ..stdlib.common import _StdCallable
            return _StdCallable(lambda tx_, *a, **k: dict_fromkeys(tx_, cls, *a, **k), f"{cls.__name__}.fromkeys")
        if cls in (int, float, str, bytes) and type(raw).__name__ == "classmethod_descriptor":
            # int.from_bytes, float.fromhex, bytes.fromhex, str.maketrans: pure, folded on constants
            from ..stdlib.common import _StdCallable
            return _StdCallable(lambda tx_, *a, **k: _fold_class_method(getattr(cls, name), a, k),
                                f"{cls.__name__}.{name}")
        raise Unsupported(f"the C descriptor {cls.__name__}.{name} ({type(raw).__name__})")
    return wrap_class_attr(tx, cls, name, raw, owner)


def _fold_class_method(bound, args, kwargs) -> Value:
    from ..containers.containers import unwrap_constants
    a, k = unwrap_constants(args, kwargs, what=f"{bound.__qualname__}()")
    try:
        result = bound(*a, **k)
    except Exception as e:
        from ..operations.operators import folded_exception
        raise folded_exception(bound, e) from None
    return wrap_constant_result(result)


def _wrap_func(tx, fn) -> Value:
    return wrap(tx.ctx, fn, None)


def _descriptor_func(tx, desc: Value, owner: type, fn, attr: str) -> Value:
    """The function a ``staticmethod``/``classmethod``/``property`` holds
    (or None): a trusted constant where the descriptor is guarded by
    identity, read (and guarded) through the descriptor where it is made
    per call with its class."""
    if desc.source is not None and _per_call_member(tx, owner):
        return wrap(tx.ctx, fn, AttrSource(desc.source, attr))
    return ConstantValue(None) if fn is None else _wrap_func(tx, fn)


class ClassValue(Value):
    """A class.  Class-attribute writes made in the frame live in ``attrs``."""

    def __init__(self, cls: type, source: Source | None):
        super().__init__(source)
        self.cls = cls
        self.attrs: dict[str, Any] = {}

    def python_type(self):
        return type(self.cls)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.cls

    def getitem(self, tx, key):
        """``cls[key]``: a generic alias (``list[int]``, ``MyGeneric[T]``),
        folded when ``__class_getitem__`` is C's or typing.Generic's."""
        import typing
        raw, owner = find_class_attr(self.cls, "__class_getitem__")
        if raw is not _MISSING and (type(raw).__name__ == "classmethod_descriptor" or owner is typing.Generic):
            from ..stdlib.typing import subscript_generic
            return subscript_generic(tx, self.cls, key)
        return super().getitem(tx, key)

    def lookup(self, tx, name):
        """Raw class attribute, consulting pending writes on this class and
        its bases (in MRO order)."""
        for klass in self.cls.__mro__:
            kv = wrap(tx.ctx, klass, None) if klass is not self.cls else self
            if isinstance(kv, ClassValue) and name in kv.attrs:
                v = kv.attrs[name]
                if v is DELETED:
                    continue
                return v, klass, True
            if name in klass.__dict__:
                return klass.__dict__[name], klass, False
        return _MISSING, None, False

    def getattr(self, tx, name):
        """``type.__getattribute__``: the metaclass's data descriptors first
        (``type.__mro__``, a metaclass property), then the class's MRO, then
        the metaclass's other attributes."""
        if name == "__name__" or name == "__qualname__" or name == "__module__":
            return ConstantValue(getattr(self.cls, name))
        meta = type(self.cls)
        meta_raw = _MISSING
        for klass in meta.__mro__:
            if name in klass.__dict__:
                meta_raw = klass.__dict__[name]
                break
        if meta_raw is not _MISSING and _is_data_descriptor(meta_raw):
            return self._meta_attr(tx, meta_raw, name)
        raw, owner, pending = self.lookup(tx, name)
        if raw is _MISSING:
            if meta_raw is not _MISSING:
                return self._meta_attr(tx, meta_raw, name)
            if meta is not type and getattr(meta, "__getattr__", None) is not None:
                raise Unsupported(f"the metaclass __getattr__ of {self.cls.__qualname__}")
            raise user_error(AttributeError, f"type object {self.cls.__name__!r} has no attribute {name!r}")
        if pending:
            return raw
        return bind_attr(tx, raw, owner, name, None, self)

    def truth(self, tx):
        """A class is true unless its metaclass says otherwise (``__bool__``/``__len__``)."""
        if any(n in k.__dict__ for k in type(self.cls).__mro__ for n in ("__bool__", "__len__")):
            raise Unsupported(f"truth value of {self.cls.__qualname__}, whose metaclass defines __bool__/__len__")
        return True

    def _meta_attr(self, tx, raw, name):
        """An attribute found on the metaclass, bound to this class."""
        if isinstance(raw, property) and isinstance(raw.fget, types.FunctionType):
            return _wrap_func(tx, raw.fget).call(tx, [self], {})
        if isinstance(raw, types.FunctionType):
            return kinds.BoundMethodValue(_wrap_func(tx, raw), self)
        if type(raw).__name__ in ("getset_descriptor", "member_descriptor") and self.attrs == {}:
            # a C slot of the class object (``__mro__``, ``__bases__``, ``__doc__``): read it
            value = raw.__get__(self.cls, type(self.cls))
            src = AttrSource(self.source, name) if self.source is not None else None
            return wrap(tx.ctx, value, src)
        raise Unsupported(f"the metaclass attribute {type(self.cls).__qualname__}.{name}")

    def setattr(self, tx, name, value):
        if type(self.cls) is not type:
            raise Unsupported(f"setting an attribute on {self.cls.__name__}, whose metaclass is not type")
        self.attrs[name] = value
        tx.ctx.effects.record(AttrStore(self, name, value, on_type=True))

    def delattr(self, tx, name):
        if name not in self.attrs and name not in self.cls.__dict__:
            raise user_error(AttributeError, f"{name}")
        self.attrs[name] = DELETED
        tx.ctx.effects.record(AttrDelete(self, name, on_type=True))

    def call(self, tx, args, kwargs):
        cls = self.cls
        if issubclass(cls, tuple) and hasattr(cls, "_fields"):
            return _make_namedtuple(cls, args, kwargs)
        from ..operations.builtins import RULES, fold_call
        if cls in RULES:
            return RULES[cls](tx, *args, **kwargs)
        if issubclass(cls, BaseException):
            return kinds.make_exception(tx, self, args, kwargs)
        if cls.__module__ == "builtins":
            return fold_call(cls, args, kwargs)
        import torch
        if issubclass(cls, torch.nn.Module):
            from ..nn.modules import construct_module
            return construct_module(tx, self, args, kwargs)
        if cls is torch.nn.Parameter:
            if getattr(tx.ctx, "auditing_construction", False):
                from ..nn.user_module_construction import audited_parameter
                return audited_parameter(tx, args, kwargs)
            raise Unsupported("creating an nn.Parameter inside a compiled function (a new leaf tensor, which a "
                              "graph cannot produce mid-way)",
                              hint="the call runs natively (a graph break, as torch.compile does); create the "
                                   "parameter outside, or make it in a module's __init__")
        if issubclass(cls, torch.Tensor) and cls not in (torch.Tensor, torch.nn.Parameter):
            from ..tensors.torch_function import construct_subclass
            return construct_subclass(tx, self, args, kwargs)
        return instantiate(tx, self, args, kwargs)

    def __repr__(self):
        return f"<class {self.cls.__qualname__}>"


def _make_namedtuple(cls, args, kwargs):
    try:
        bound = inspect.signature(cls).bind(*args, **kwargs)
    except TypeError as e:
        raise Unsupported(f"TypeError constructing {cls.__name__}: {e}")
    items = []
    for name in cls._fields:
        if name in bound.arguments:
            items.append(bound.arguments[name])
        else:
            items.append(wrap_constant_result(cls._field_defaults[name]))
    return kinds.TupleValue(items, cls=cls)


def _make_size(tx, args, kwargs):
    """``torch.Size(iterable)``: a tuple of ints (symbolic ones stay so)."""
    import torch
    if kwargs or len(args) > 1:
        raise Unsupported("torch.Size() with unusual arguments")
    items = tx.iterate(args[0]) if args else []
    for v in items:
        ok = isinstance(v, kinds.SymbolicNumberValue) or (isinstance(v, ConstantValue) and type(v.value) is int)
        if not ok:
            raise Unsupported(f"torch.Size() of {v}")
    if all(isinstance(v, ConstantValue) for v in items):
        return ConstantValue(torch.Size([v.value for v in items]))
    return kinds.TupleValue(items, cls=torch.Size)


def instantiate(tx, cls_value: ClassValue, args, kwargs, through_metaclass: bool = True) -> "ObjectValue":
    """``cls(*args, **kwargs)`` for a Python class: the metaclass's ``__call__``
    when it has its own (any other metaclass method -- ``__setattr__``,
    ``__new__`` for classes, ``__getattr__`` -- plays no part in making an
    instance), else ``type.__call__``'s ``__new__`` then ``__init__``."""
    import abc
    import collections
    cls = cls_value.cls
    meta = type(cls)
    if through_metaclass and meta not in (type, abc.ABCMeta):
        call_raw, owner = find_class_attr(meta, "__call__")
        if call_raw is not type.__call__:
            from .metaclasses import metaclass_call
            return metaclass_call(tx, cls_value, call_raw, owner, args, kwargs)
    if getattr(cls, "__abstractmethods__", None):
        from ...pyversion import at_least
        names = sorted(cls.__abstractmethods__)
        plural = "s" if len(names) > 1 else ""
        if at_least((3, 12)):
            raise user_error(TypeError, f"Can't instantiate abstract class {cls.__name__} without an implementation "
                                        f"for abstract method{plural} {', '.join(repr(n) for n in names)}")
        raise user_error(TypeError, f"Can't instantiate abstract class {cls.__name__} with abstract method{plural} "
                                    f"{', '.join(names)}")
    import torch
    if cls is torch.Size:
        return _make_size(tx, args, kwargs)
    storage = None
    builtin_bases = [b for b in cls.__mro__[1:-1] if b.__module__ == "builtins" or b is collections.OrderedDict]
    if builtin_bases and all(b in (dict, collections.OrderedDict) for b in builtin_bases):
        storage = collections.OrderedDict if collections.OrderedDict in builtin_bases else dict
    elif builtin_bases in ([list], [tuple]):
        storage = builtin_bases[0]
    elif builtin_bases == [property] and cls.__module__.startswith("torch."):
        return _torch_property(tx, cls, args, kwargs)
    elif builtin_bases:
        raise Unsupported(f"creating an instance of {cls.__qualname__}, a subclass of {builtin_bases[0].__name__}")
    new_raw, new_owner, _ = cls_value.lookup(tx, "__new__")
    plain_new = new_raw is object.__new__ or (isinstance(new_raw, staticmethod) and new_raw.__func__ is object.__new__) \
        or (storage is not None and new_raw in (dict.__new__, collections.OrderedDict.__new__, list.__new__))
    if storage is tuple and new_raw is tuple.__new__:
        return _new_tuple_instance(tx, cls, args, kwargs)
    if plain_new:
        obj = _new_instance(cls, storage)
    else:
        fn = new_raw.__func__ if isinstance(new_raw, staticmethod) else new_raw
        if not isinstance(fn, types.FunctionType):
            raise Unsupported(f"creating an instance of {cls.__qualname__}, whose __new__ is not Python")
        src = ItemSource(AttrSource(class_source(new_owner, tx.ctx), "__dict__"), "__new__")
        if isinstance(new_raw, staticmethod):
            src = AttrSource(src, "__func__")
        if _per_call_member(tx, new_owner):
            new_fn = wrap(tx.ctx, fn, src)
        else:
            tx.ctx.guards.add(Guard(Kind.ID_MATCH, src, fn))
            new_fn = kinds.UserFunctionValue(fn, src)
        obj = new_fn.call(tx, [cls_value, *args], dict(kwargs))
        if not (isinstance(obj, ObjectValue) and obj.is_new and issubclass(obj.cls, cls)):
            return obj  # __new__ returned something else: __init__ is not called
    obj.storage_kind = storage
    obj.cls_value = cls_value   # (a class made per call is rebuilt through it)
    init_raw, owner, _ = cls_value.lookup(tx, "__init__")
    if init_raw is object.__init__:
        if args or kwargs:
            raise user_error(TypeError, f"{cls.__name__}() takes no arguments")
        return obj
    init = bind_attr(tx, init_raw, owner, "__init__", obj, cls_value)
    init.call(tx, list(args), dict(kwargs))
    return obj


def _torch_property(tx, cls, args, kwargs) -> "ObjectValue":
    """A descriptor of torch's built from functions (``lazy_property.__get__``
    on the class makes a ``_lazy_property_and_property`` for distributions'
    validation to test with ``isinstance``): made for real, a descriptor
    is nothing but its functions."""
    def real(v):
        if v.is_python_constant():
            return v.as_python_constant()
        fn = getattr(v, "fn", None)
        if isinstance(fn, types.FunctionType):
            return fn
        raise Unsupported(f"creating the descriptor {cls.__qualname__} from {v}")
    obj = cls(*[real(a) for a in args], **{k: real(v) for k, v in kwargs.items()})
    return ObjectValue(obj, None)


class ObjectValue(Value):
    """An instance of a user class.  ``attrs`` holds instance-dict writes made
    in this trace (all of them for an object created here)."""

    def __init__(self, obj, source: Source | None, cls: type | None = None, is_new: bool = False):
        super().__init__(source)
        self.obj = obj
        self.cls = cls if cls is not None else type(obj)
        self.is_new = is_new
        self.attrs: dict[str, Any] = {}
        self.dict_replaced = False
        #: after ``obj.__dict__ = d``: the DictValue d, whose items *are*
        #: ``attrs`` from then on (one dict, as in CPython)
        self.dict_value = None
        #: real instance-dict keys deleted in this trace (re-adding one moves
        #: it to the end of the dict: its order is then not modelled)
        self.deleted_real_keys: set = set()

    def python_type(self):
        return self.cls

    def _class_value(self, tx) -> ClassValue:
        return wrap(tx.ctx, self.cls, None)

    def _has_real_dict(self) -> bool:
        return not self.is_new and hasattr(self.obj, "__dict__")

    # --- instance dict (overlay + real) ---------------------------------------
    def dict_get(self, tx, name):
        """The instance-dict entry as a Value, or _MISSING."""
        if name in self.attrs:
            v = self.attrs[name]
            return _MISSING if v is DELETED else v
        if self.is_new or self.dict_replaced:
            return _MISSING
        d = getattr(self.obj, "__dict__", None)
        if d is not None and name in d:
            raw, _ = find_class_attr(self.cls, name)
            # ``obj.name`` would run a data descriptor of the class: read the dict
            src = ItemSource(AttrSource(self.source, "__dict__"), name) if _is_data_descriptor(raw) \
                else AttrSource(self.source, name)
            return wrap(tx.ctx, d[name], src)
        if d is not None and self.source is not None:
            tx.ctx.guards.add(Guard(Kind.NOT_IN_DICT, self.source, name))
        return _MISSING

    def _slot_get(self, tx, name):
        if name in self.attrs:
            v = self.attrs[name]
            if v is DELETED:
                raise user_error(AttributeError, f"{name}")
            return v
        if self.is_new:
            raise user_error(AttributeError, f"{self.cls.__name__!r} object has no attribute {name!r}")
        try:
            real = getattr(self.obj, name)
        except AttributeError:
            raise user_error(AttributeError, f"{name}")
        return wrap(tx.ctx, real, AttrSource(self.source, name))

    # --- attribute protocol --------------------------------------------------------
    def getattr(self, tx, name):
        if type(self.obj) is property and name in _PROPERTY_FIELDS and not self.is_new and self.source is not None:
            # (a property read from a class __dict__, identity-guarded: its
            # fields are read-only)
            return wrap(tx.ctx, getattr(self.obj, name), AttrSource(self.source, name))
        cls_value = self._class_value(tx)
        ga, owner, _ = cls_value.lookup(tx, "__getattribute__")
        if ga is not object.__getattribute__ and ga not in _GENERIC_GETATTRIBUTE:
            if isinstance(ga, types.FunctionType):
                return bind_attr(tx, ga, owner, "__getattribute__", self, cls_value).call(
                    tx, [ConstantValue(name)], {})
            raise Unsupported(f"the C __getattribute__ of {self.cls.__name__}")
        return self.generic_getattr(tx, name)

    def generic_getattr(self, tx, name):
        """``object.__getattribute__`` (with ``__getattr__`` as fallback)."""
        cls_value = self._class_value(tx)
        if name == "__class__":
            return cls_value
        if name == "__dict__":
            if not (self.is_new or self._has_real_dict()) or "__slots__" in self.cls.__dict__ and "__dict__" not in self.cls.__slots__:
                raise user_error(AttributeError, f"{self.cls.__name__!r} object has no attribute '__dict__'")
            return self.dict_value if self.dict_replaced else self.instance_dict()
        raw, owner, pending = cls_value.lookup(tx, name)
        if raw is not _MISSING and not pending and _is_data_descriptor(raw):
            if type(raw).__name__ == "member_descriptor":
                return self._slot_get(tx, name)
            return bind_attr(tx, raw, owner, name, self, cls_value)
        v = self.dict_get(tx, name)
        if v is not _MISSING:
            return v
        if raw is not _MISSING:
            return raw if pending else bind_attr(tx, raw, owner, name, self, cls_value)
        gattr, gowner, _ = cls_value.lookup(tx, "__getattr__")
        if gattr is not _MISSING:
            return bind_attr(tx, gattr, gowner, "__getattr__", self, cls_value).call(tx, [ConstantValue(name)], {})
        raise user_error(AttributeError, f"{self.cls.__name__!r} object has no attribute {name!r}")

    def setattr(self, tx, name, value):
        cls_value = self._class_value(tx)
        sa, owner, _ = cls_value.lookup(tx, "__setattr__")
        if sa is not object.__setattr__:
            if isinstance(sa, types.FunctionType):
                bind_attr(tx, sa, owner, "__setattr__", self, cls_value).call(tx, [ConstantValue(name), value], {})
                return
            raise Unsupported(f"the C __setattr__ of {self.cls.__name__}")
        self.generic_setattr(tx, name, value)

    def generic_setattr(self, tx, name, value):
        """``object.__setattr__``: data descriptors first, then the instance dict."""
        cls_value = self._class_value(tx)
        if name == "__dict__":
            if not isinstance(value, kinds.DictValue):
                raise Unsupported("assigning a non-dict to __dict__")
            self.attrs = value.items   # shared: writes through either side show in both
            self.dict_value = value
            self.dict_replaced = True
            if not self.is_new:
                tx.ctx.effects.record(DictReplace(self, value))
            return
        if name == "__class__":
            raise Unsupported("assigning __class__")
        raw, owner, pending = cls_value.lookup(tx, name)
        if raw is not _MISSING and not pending and _is_data_descriptor(raw):
            if isinstance(raw, property):
                desc = wrap_class_attr(tx, self.cls, name, raw, owner)
                fset = _descriptor_func(tx, desc, owner, raw.fset, "fset")
                if raw.fset is None:
                    raise user_error(AttributeError, f"property {name!r} of {self.cls.__name__!r} object has no setter")
                fset.call(tx, [self, value], {})
                return
            if type(raw).__name__ != "member_descriptor":
                setter = getattr(type(raw), "__set__", None)
                from .per_call_classes import statement_of
                if isinstance(setter, types.FunctionType) and statement_of(type(raw)) is not None:
                    raise Unsupported(f"the descriptor {self.cls.__name__}.{name}, whose class is made per call")
                if isinstance(setter, types.FunctionType):
                    desc = wrap_class_attr(tx, self.cls, name, raw, owner)
                    _wrap_func(tx, setter).call(tx, [desc, self, value], {})
                    return
                raise Unsupported(f"the C descriptor {self.cls.__name__}.{name}")
        elif self.is_new and not hasattr(self.cls, "__dict__") or _slots_only(self.cls) and name not in _all_slots(self.cls):
            raise user_error(AttributeError, f"{self.cls.__name__!r} object has no attribute {name!r}")
        self.attrs[name] = value
        if not self.is_new and not self.dict_replaced:
            # (after ``obj.__dict__ = d`` the write is in d, which the
            # replayed replacement carries in its final state)
            tx.ctx.effects.record(AttrStore(self, name, value))

    def delattr(self, tx, name):
        cls_value = self._class_value(tx)
        da, owner, _ = cls_value.lookup(tx, "__delattr__")
        if da is not object.__delattr__:
            if isinstance(da, types.FunctionType):
                bind_attr(tx, da, owner, "__delattr__", self, cls_value).call(tx, [ConstantValue(name)], {})
                return
            raise Unsupported(f"the C __delattr__ of {self.cls.__name__}")
        self.generic_delattr(tx, name)

    def generic_delattr(self, tx, name):
        cls_value = self._class_value(tx)
        raw, owner, pending = cls_value.lookup(tx, name)
        if raw is not _MISSING and not pending and _is_data_descriptor(raw) and \
                type(raw).__name__ != "member_descriptor":
            if isinstance(raw, property):
                desc = wrap_class_attr(tx, self.cls, name, raw, owner)
                fdel = _descriptor_func(tx, desc, owner, raw.fdel, "fdel")
                if raw.fdel is None:
                    raise user_error(AttributeError, f"property {name!r} of {self.cls.__name__!r} object has no deleter")
                fdel.call(tx, [self], {})
                return
            raise Unsupported(f"deleting through the descriptor {self.cls.__name__}.{name}")
        if type(raw).__name__ == "member_descriptor":
            self._slot_get(tx, name)
        elif self.dict_get(tx, name) is _MISSING:
            raise user_error(AttributeError, f"{name}")
        self.forget(name)
        if not self.is_new and not self.dict_replaced:
            tx.ctx.effects.record(AttrDelete(self, name))

    def instance_dict(self) -> "InstanceDictValue":
        """The one Value of this object's own instance dict."""
        d = self.__dict__.get("_instance_dict")
        if d is None:
            d = self._instance_dict = kinds.InstanceDictValue(self)
        return d

    def forget(self, name: str) -> None:
        """Remove ``name`` from the instance dict (overlay)."""
        if self.dict_replaced:
            self.attrs.pop(name, None)
            return
        if not self.is_new and name not in self.attrs:
            self.deleted_real_keys.add(name)
        self.attrs[name] = DELETED

    def dict_keys(self, tx) -> list:
        """The instance dict's keys, in order (real keys guarded)."""
        if self.dict_replaced or self.is_new:
            return [k for k, v in self.attrs.items() if v is not DELETED]
        real = list(self.obj.__dict__)
        if self.source is None:
            raise Unsupported("the instance dict of an object without a source")
        tx.ctx.guards.add(Guard(Kind.DICT_KEYS, AttrSource(self.source, "__dict__"), real))
        if any(k in self.deleted_real_keys and self.attrs.get(k, DELETED) is not DELETED for k in real):
            raise Unsupported("the key order of an instance dict after deleting and re-adding a key")
        keys = [k for k in real if self.attrs.get(k) is not DELETED]
        keys += [k for k, v in self.attrs.items() if k not in self.obj.__dict__ and v is not DELETED]
        return keys

    # --- dunder protocols ---------------------------------------------------------
    def dunder(self, tx, name: str):
        """The bound special method ``type(obj).name`` (special methods skip the
        instance dict), or None."""
        cls_value = self._class_value(tx)
        raw, owner, pending = cls_value.lookup(tx, name)
        if raw is _MISSING or raw is None:
            return None
        if pending:
            return kinds.BoundMethodValue(raw, self)
        if isinstance(raw, (types.FunctionType, staticmethod, classmethod)) or \
                isinstance(getattr(type(raw), "__get__", None), types.FunctionType):
            return bind_attr(tx, raw, owner, name, self, cls_value)
        if owner in _DICT_TYPES and _dict_backed(self) or owner in (list, tuple) and _seq_backed(self):
            return bind_attr(tx, raw, owner, name, self, cls_value)
        return None

    def call(self, tx, args, kwargs):
        from ..functions import script_functions
        if not self.is_new and script_functions.is_script_function(self.obj):
            return script_functions.inline_target(tx, self).call(tx, args, kwargs)
        m = self.dunder(tx, "__call__")
        if m is None:
            if getattr(self.cls, "__call__", None) is not None:
                raise Unsupported(f"calling a {self.cls.__qualname__} (implemented in C)")
            raise user_error(TypeError, f"{self.cls.__name__!r} object is not callable")
        return m.call(tx, args, kwargs)

    def truth(self, tx):
        m = self.dunder(tx, "__bool__")
        if m is not None:
            return m.call(tx, [], {}).truth(tx)
        m = self.dunder(tx, "__len__")
        if m is not None:
            return m.call(tx, [], {}).as_python_constant() != 0
        return True

    def length(self, tx):
        m = self.dunder(tx, "__len__")
        if m is None:
            raise user_error(TypeError, f"object of type {self.cls.__name__!r} has no len()")
        return m.call(tx, [], {}).as_python_constant()

    def getitem(self, tx, index):
        m = self.dunder(tx, "__getitem__")
        if m is None:
            raise user_error(TypeError, f"{self.cls.__name__!r} object is not subscriptable")
        return m.call(tx, [index], {})

    def setitem(self, tx, index, value):
        m = self.dunder(tx, "__setitem__")
        if m is None:
            raise user_error(TypeError, f"{self.cls.__name__!r} object does not support item assignment")
        m.call(tx, [index, value], {})

    def delitem(self, tx, index):
        m = self.dunder(tx, "__delitem__")
        if m is None:
            raise user_error(TypeError, f"{self.cls.__name__!r} object does not support item deletion")
        m.call(tx, [index], {})

    def get_iter(self, tx):
        m = self.dunder(tx, "__iter__")
        if m is not None:
            it = m.call(tx, [], {})
            if isinstance(it, ObjectValue):
                return it  # an iterator object (often self): the caller drives __next__
            return tx.get_iter(it)
        if self.dunder(tx, "__getitem__") is not None:
            raise Unsupported("iteration through the old __getitem__ protocol")
        if getattr(self.cls, "__iter__", None) is not None:
            raise Unsupported(f"iterating a {self.cls.__qualname__} made outside the frame (a C iterator: "
                              "consuming it while tracing would change it)")
        raise user_error(TypeError, f"{self.cls.__name__!r} object is not iterable")

    def unpack(self, tx):
        it = self.get_iter(tx)
        return tx.iterate(it)

    def next_value(self, tx):
        m = self.dunder(tx, "__next__")
        if m is None:
            raise user_error(TypeError, f"{self.cls.__name__!r} object is not an iterator")
        return m.call(tx, [], {})

    # --- residual code -----------------------------------------------------------
    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        if not self.is_new:
            raise Unsupported(f"rebuilding {self}")
        from ...runtime import replay
        names = [k for k, v in self.attrs.items() if v is not DELETED]
        contents = getattr(self, "contents", None)
        if _seq_backed(self):  # a list/tuple subclass: its items, then its attributes
            self._rebuild_prefix(out, replay.new_sequence_object, names)
            for v in contents.items:
                out.reconstruct(v)
            out.instr("BUILD_TUPLE", len(contents.items))
            out.call(4)
            return
        if contents is not None:  # a dict subclass: its items, then its attributes
            self._rebuild_prefix(out, replay.new_dict_object, names)
            out.load_const(tuple(contents.items))
            for v in contents.items.values():
                out.reconstruct(v)
            out.instr("BUILD_TUPLE", len(contents.items))
            out.call(5)
            return
        self._rebuild_prefix(out, replay.new_object, names)
        out.call(3)

    def _rebuild_prefix(self, out, helper, names) -> None:
        """``helper(cls, names, (attribute values...), ...``: the start of
        every rebuild call (the caller pushes its own further operands)."""
        out.instr("PUSH_NULL")
        out.load_const(helper)
        from .per_call_classes import emit_class
        made = kinds.made_class_value(self.cls)
        if made is not None:   # a class made in the frame: rebuilt per call, as eager makes it
            out.reconstruct(made)
        elif not emit_class(out, self.cls, getattr(self, "cls_value", None)):
            out.load_const(self.cls)
        out.load_const(tuple(names))
        for k in names:
            out.reconstruct(self.attrs[k])
        out.instr("BUILD_TUPLE", len(names))

    def __repr__(self):
        where = f" {self.source}" if self.source is not None else (" (new)" if self.is_new else "")
        return f"<{self.cls.__qualname__} object{where}>"


from .builtin_subclasses import (_DICT_READ_METHODS, _DICT_TYPES, _dict_backed, _new_instance,  # noqa: E402
                                 _new_tuple_instance, _seq_backed, dict_contents, seq_contents)

class _BaseNew(Value):
    """``object.__new__`` / ``dict.__new__`` reached through super() in a
    Python ``__new__``: makes the bare instance."""

    def __init__(self, storage):
        super().__init__()
        self.storage = storage

    def call(self, tx, args, kwargs):
        cls = args[0].as_python_constant()
        return _new_instance(cls, self.storage)


# builtin types whose __getattribute__ is CPython's generic lookup
_GENERIC_GETATTRIBUTE = {dict.__getattribute__, list.__getattribute__, set.__getattribute__,
                         tuple.__getattribute__}
def _slots_only(cls) -> bool:
    return not any("__dict__" in k.__dict__ for k in cls.__mro__[:-1]) and any("__slots__" in k.__dict__ for k in cls.__mro__)


def _all_slots(cls) -> set:
    out = set()
    for k in cls.__mro__:
        s = k.__dict__.get("__slots__", ())
        out.update([s] if isinstance(s, str) else s)
    return out


class SuperValue(Value):
    """``super(cls, obj)``: attribute lookup along obj's MRO after cls."""

    def __init__(self, start: type, obj: Value):
        super().__init__()
        self.start, self.obj = start, obj

    def getattr(self, tx, name):
        if isinstance(self.obj, ClassValue) and not issubclass(self.obj.cls, self.start):
            from .metaclasses import metaclass_super_attr   # super() in a metaclass method
            return metaclass_super_attr(tx, self.start, self.obj, name)
        objtype = self.obj.cls if isinstance(self.obj, ClassValue) else self.obj.python_type()
        mro = objtype.__mro__
        idx = mro.index(self.start) + 1
        for klass in mro[idx:]:
            if name in klass.__dict__:
                raw = klass.__dict__[name]
                if raw is object.__init__:
                    return _NoopInit()
                if name == "__new__" and raw in (object.__new__, dict.__new__, _collections.OrderedDict.__new__):
                    return _BaseNew(None if raw is object.__new__ else
                                    (dict if raw is dict.__new__ else _collections.OrderedDict))
                import torch
                from ..nn.user_module_construction import ModuleUnderConstruction
                if klass is torch.nn.Module and isinstance(self.obj, ModuleUnderConstruction):
                    return self.obj.super_attr(tx, name)
                if raw is torch.nn.Module.__getattr__ and isinstance(self.obj, kinds.ModuleValue):
                    return _ModuleMember(self.obj)
                if isinstance(self.obj, kinds.ModuleValue) and klass is torch.nn.Module:
                    from ..nn.modules import _MEMBER_METHODS, _MemberIterMethod
                    if name == "__call__":
                        return _ModuleStandardCall(self.obj)
                    if name in ("__setattr__", "__delattr__"):
                        from ..nn.modules import ModuleStandardWrite
                        return ModuleStandardWrite(self.obj, name)
                    if name in _MEMBER_METHODS:
                        return _MemberIterMethod(self.obj, name)
                if raw is object.__setattr__ and isinstance(self.obj, ObjectValue):
                    return _BoundGeneric(self.obj, "set")
                if raw is object.__getattribute__ and isinstance(self.obj, ObjectValue):
                    return _BoundGeneric(self.obj, "get")
                if raw is object.__delattr__ and isinstance(self.obj, ObjectValue):
                    return _BoundGeneric(self.obj, "del")
                cls_value = wrap(tx.ctx, objtype, None)
                inst = None if isinstance(self.obj, ClassValue) else self.obj
                if klass in (list, tuple) and isinstance(inst, ObjectValue) and _seq_backed(inst):
                    return kinds.BoundContainerMethod(seq_contents(tx, inst), name)
                if klass in _DICT_TYPES and isinstance(inst, ObjectValue) and _dict_backed(inst):
                    if not inst.is_new and name not in _DICT_READ_METHODS:
                        raise Unsupported(f"super().{name}() of a dict subclass")
                    return kinds.BoundContainerMethod(dict_contents(tx, inst), name)
                return bind_attr(tx, raw, klass, name, inst, cls_value)
        raise user_error(AttributeError, f"'super' object has no attribute {name!r}")


class _ModuleMember(Value):
    """``super().__getattr__`` reaching ``nn.Module.__getattr__``."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def call(self, tx, args, kwargs):
        return self.module.member(tx, args[0].as_python_constant())


class _ModuleStandardCall(Value):
    """``super().__call__`` reaching ``nn.Module.__call__``."""

    def __init__(self, module):
        super().__init__()
        self.module = module

    def call(self, tx, args, kwargs):
        return self.module.standard_call(tx, list(args), dict(kwargs))


class _NoopInit(Value):
    def call(self, tx, args, kwargs):
        return ConstantValue(None)


class _BoundGeneric(Value):
    def __init__(self, obj, kind):
        super().__init__()
        self.obj, self.kind = obj, kind

    def call(self, tx, args, kwargs):
        name = args[0].as_python_constant()
        if self.kind == "get":
            return self.obj.generic_getattr(tx, name)
        if self.kind == "set":
            self.obj.generic_setattr(tx, name, args[1])
        else:
            self.obj.generic_delattr(tx, name)
        return ConstantValue(None)


# (not object.__getattribute__: _BoundGeneric's "get" falls back to __getattr__, which it must not)
_GENERIC_SLOTS = {object.__setattr__: "set", object.__delattr__: "del"}


class _ObjectSlot(Value):
    """``object.__setattr__`` / ``__getattribute__`` / ``__delattr__`` read from
    the class: called on a user object, the generic attribute protocol
    (what a custom ``__setattr__`` calls to store for real)."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def python_type(self):
        return types.WrapperDescriptorType

    def call(self, tx, args, kwargs):
        n = 3 if self.kind == "set" else 2
        if kwargs or len(args) != n:
            raise user_error(TypeError, f"expected {n} arguments, got {len(args)}")
        obj, name = realize(tx.ctx, args[0]), args[1]
        if self.kind == "set" and isinstance(obj, kinds.ModuleValue) and name.is_python_constant() \
                and type(name.as_python_constant()) is str:
            # (bypasses nn.Module.__setattr__: the instance dict, nothing registered)
            obj.store_in_dict(tx, name.as_python_constant(), args[2])
            return ConstantValue(None)
        if not isinstance(obj, ObjectValue) or not name.is_python_constant():
            raise Unsupported(f"object.__{self.kind}attr__ on {obj}")
        if type(name.as_python_constant()) is not str:
            raise user_error(TypeError, f"attribute name must be string, not "
                                        f"'{type(name.as_python_constant()).__name__}'")
        return _BoundGeneric(obj, self.kind).call(tx, args[1:], {})

    def reconstruct(self, out):
        out.load_const({v: k for k, v in _GENERIC_SLOTS.items()}[self.kind])


def wrap_object(ctx, obj, source):
    if source is None:
        raise Unsupported(f"a {type(obj).__qualname__} object reached without a source")
    from .per_call_classes import statement_of
    if statement_of(type(obj)) is not None:
        # an instance of a class made per call: its class guarded as such
        value = ObjectValue(obj, source)
        value.cls_value = wrap(ctx, type(obj), AttrSource(source, "__class__"))
        return value
    ctx.guards.add(Guard(Kind.TYPE_MATCH, source, type(obj)))
    return ObjectValue(obj, source)
