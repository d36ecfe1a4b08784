"""A ``class`` statement inside the compiled frame (``builtins.__build_class__``).

CPython builds a class in three steps: it runs the class body (a function
whose locals are a namespace dict), computes the metaclass from the bases,
and calls it with the name, the bases and the namespace (``type.__new__``
then fills the body's ``__class__`` cell, calls ``__set_name__`` on the
namespace's descriptors and ``__init_subclass__`` on the parent).

Here the body runs as a traced frame whose LOAD_NAME/STORE_NAME go to a
namespace of Values (trace/ops/class_body.py).  The class is then created
for real while tracing, from real stand-ins of the namespace: constants as
they are, and for every function the body made a real function with the
same code, whose cells are placeholders (except ``__class__``, which
``type`` fills).  The trace never runs those real functions: they are
registered in the trace's value cache as the body's symbolic functions, so
a method call inlines the symbolic function with its symbolic closure.

The real class lives only inside this trace.  Guards on it (its dict entries,
read through a constant source) hold for every call.  Where the class or
one of its instances escapes the frame, or is live at a graph break,
residual code builds a new class per call from the reconstructed namespace
(:func:`rebuild_class`), as eager does, and remembers it as made by this
statement: a resume function (or any compiled function) that receives it
guards it by that, not by identity (values/objects/per_call_classes.py).

Only what is pure to run while tracing is modelled: the metaclass ``type``
(or ``abc.ABCMeta``), no ``__init_subclass__`` of the bases, namespace
values that are immutable constants, functions made by the body and
``staticmethod``/``classmethod``/``property`` of them, and containers,
tensors and objects the frame made (the real class holds stand-ins the
trace reads as those Values).  Anything else
(a metaclass of the user's, ``__init_subclass__``...) raises Unsupported at
the call of ``__build_class__``: a graph break there runs the statement
natively (:func:`per_call_classes.native_build_class`, which remembers the
class as made by the statement), the rest of the frame compiled.
"""
from __future__ import annotations

import abc
import types
import weakref

from ...diagnostics.errors import Unsupported, user_error
from ...effects import DELETED
from ..base import Value
from ..constant import ConstantValue
from ..functions.functions import CellValue, NestedFunctionValue
from .objects import ClassValue
from ..builder import wrap
from .. import kinds

#: real classes made while tracing -> their MadeClassValue
_MADE: "weakref.WeakKeyDictionary[type, MadeClassValue]" = weakref.WeakKeyDictionary()

_IMMUTABLE = (int, float, complex, bool, str, bytes, type(None), range, slice, type(Ellipsis),
              types.BuiltinFunctionType)
_DECORATORS = (staticmethod, classmethod, property)


def made_class_value(cls: type) -> "MadeClassValue | None":
    """The Value of a class made by a ``class`` statement in a trace, or None."""
    try:
        return _MADE.get(cls)
    except TypeError:
        return None


class ClassCellValue(CellValue):
    """The class body's ``__class__`` cell: ``type`` fills it with the new
    class.  Rebuilt (empty) only as part of rebuilding its class."""

    def __init__(self):
        super().__init__()
        self.made: MadeClassValue | None = None

    def reconstruct(self, out):
        from ...runtime import replay
        if self.made is None or id(self.made) not in out._building:
            raise Unsupported("rebuilding the __class__ cell of a class made in the frame, apart from its class")
        out.instr("PUSH_NULL")
        out.load_const(replay.make_cell)
        out.call(0)


class DecoratedFunctionValue(Value):
    """``staticmethod(f)``, ``classmethod(f)``, ``property(f)`` or
    ``abc.abstractmethod(f)`` of a function the class body made (as the
    body's decorators write them)."""

    def __init__(self, kind: type, func: Value):
        super().__init__()
        self.kind, self.func = kind, func

    def python_type(self):
        return types.FunctionType if self.kind is abc.abstractmethod else self.kind

    def reconstruct(self, out):
        out.instr("PUSH_NULL")
        out.load_const(self.kind)
        out.reconstruct(self.func)
        out.call(1)

    def __repr__(self):
        return f"<{self.kind.__name__} of {self.func!r}>"


class ClassBodyDecorator(Value):
    """The builtin ``staticmethod``/``classmethod``/``property`` as the class
    body reads it: applied to a function the body made, it stays symbolic."""

    def __init__(self, kind: type):
        super().__init__()
        self.kind = kind

    def python_type(self):
        return type

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.kind

    def call(self, tx, args, kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], NestedFunctionValue):
            return DecoratedFunctionValue(self.kind, args[0])
        return wrap(tx.ctx, self.kind, None).call(tx, args, kwargs)


class MadeClassValue(ClassValue):
    """A class made by a ``class`` statement in this trace."""

    def __init__(self, cls: type, name: str, bases: list[Value], namespace: dict[str, Value],
                 body_code: types.CodeType | None = None):
        super().__init__(cls, None)
        self.name, self.bases, self.namespace = name, bases, namespace
        #: the class statement's body: the rebuilt class is remembered as
        #: made by it (values/objects/per_call_classes.py)
        self.body_code = body_code
        #: the statement's ``metaclass=`` (None: from the bases)
        self.metaclass = None
        #: decorators applied to the class (``@dataclass``), in order: (callable, kwargs)
        self.decorators: list[tuple] = []

    def setattr(self, tx, name, value):
        # a class made in this frame: nothing outside sees it unless it
        # escapes, and then it is rebuilt with these writes applied
        if name in ("__dict__", "__class__", "__bases__", "__mro__", "__name__", "__qualname__"):
            raise Unsupported(f"assigning {name} of a class made in the frame")
        self.attrs[name] = value

    def delattr(self, tx, name):
        if self.attrs.get(name, DELETED if name not in self.cls.__dict__ else None) is DELETED:
            raise user_error(AttributeError, f"{name}")
        self.attrs[name] = DELETED

    def reconstruct(self, out):
        # (handed to a resume function, the class rebuilt per call is guarded
        # there by its class statement, not by identity: per_call_classes.py)
        cell = self.namespace.get("__classdictcell__")
        if isinstance(cell, CellValue):
            # 3.14: the body's __classdict__ cell is rebuilt empty, once
            # (its __annotate__ closes over the same cell); type() fills it
            from ...runtime import replay
            out.preset(cell, replay.make_cell)
        out.instr("PUSH_NULL")
        out.load_const(rebuild_class)
        out.load_const(self.name)
        for b in self.bases:
            out.reconstruct(b)
        out.instr("BUILD_TUPLE", len(self.bases))
        keys = tuple(self.namespace)
        out.load_const(keys)
        for k in keys:
            out.reconstruct(self.namespace[k])
        out.instr("BUILD_TUPLE", len(keys))
        out.load_const(tuple(self.decorators))
        names = tuple(self.attrs)
        out.load_const(names)
        for k in names:
            v = self.attrs[k]
            if v is DELETED:
                out.load_const(_DELETE)
            else:
                out.reconstruct(v)
        out.instr("BUILD_TUPLE", len(names))
        out.load_const(self.body_code)
        out.load_const(self.metaclass)
        out.call(9)

    def __repr__(self):
        return f"<class {self.cls.__qualname__} (made in the frame)>"


_DELETE = object()


def rebuild_class(name, bases, keys, values, decorators, attr_names, attr_values, body_code=None, metaclass=None):
    """Residual code: the class a ``class`` statement made in the traced frame,
    built anew on every call (as eager does), then decorated and given the
    writes the frame made to it; remembered as made by that statement."""
    kwds = {"metaclass": metaclass} if metaclass is not None else None
    cls = types.new_class(name, bases, kwds, exec_body=lambda ns: ns.update(zip(keys, values)))
    for fn, kwargs in decorators:
        cls = fn(**kwargs)(cls) if kwargs else fn(cls)
    for k, v in zip(attr_names, attr_values):
        if v is _DELETE:
            delattr(cls, k)
        else:
            setattr(cls, k, v)
    if body_code is not None:
        from .per_call_classes import note_made
        note_made(cls, body_code)
    return cls


def _immutable_constant(c) -> bool:
    if isinstance(c, (tuple, frozenset)) and type(c) in (tuple, frozenset):
        return all(_immutable_constant(i) for i in c)
    import torch
    return type(c) in _IMMUTABLE or isinstance(c, (type, torch.dtype, torch.device))


class _StandIn:
    """The real class's entry for a class attribute the frame made (a list,
    a tensor...): never read for real, the trace's value cache maps it to
    the Value."""

    __slots__ = ("__weakref__",)


class _Realizer:
    """Real stand-ins for the namespace Values of one class body."""

    def __init__(self, tx, body_cell: ClassCellValue | None, classdict_cell: CellValue | None = None):
        self.tx = tx
        self.body_cell = body_cell
        self.real_cell = types.CellType()
        #: 3.14: the body's ``__classdict__`` cell (``__classdictcell__``,
        #: closed over by its ``__annotate__``) and its real counterpart,
        #: which type() fills with the new class's dict
        self.classdict_cell = classdict_cell
        self.real_classdict_cell = types.CellType()
        self.functions: list[tuple[types.FunctionType, NestedFunctionValue]] = []
        self.stand_ins: list[tuple[_StandIn, Value]] = []

    def real(self, name: str, v: Value):
        if isinstance(v, ClassCellValue) and v is self.body_cell:
            return self.real_cell
        if v is self.classdict_cell and name == "__classdictcell__":
            return self.real_classdict_cell
        if isinstance(v, NestedFunctionValue):
            return self.function(name, v)
        if isinstance(v, DecoratedFunctionValue) and isinstance(v.func, NestedFunctionValue):
            return v.kind(self.function(name, v.func))
        from ..tensors.grad_decorators import GradModeDecoratedValue
        if isinstance(v, GradModeDecoratedValue) and isinstance(v.fn, NestedFunctionValue):
            return v.real(self.function(name, v.fn))   # ``@torch.no_grad()`` on a method
        if isinstance(v, kinds.DictValue) and name == "__annotations__" and v.is_python_constant():
            return dict(v.as_python_constant())
        if v.is_python_constant():
            c = v.as_python_constant()
            if _immutable_constant(c):
                return c
        if v.source is None and self._traced_object(v):
            # a list, dict, set, tensor or object the frame made: the class
            # holds a stand-in that reads, in this trace, as the Value itself
            stand_in = _StandIn()
            self.stand_ins.append((stand_in, v))
            return stand_in
        raise Unsupported(f"the class attribute {name!r} ({v}) of a class made in the frame",
                          hint="constants, methods and objects the frame made are modelled in a class statement "
                               "inside the frame")

    @staticmethod
    def _traced_object(v: Value) -> bool:
        if isinstance(v, (kinds.ListValue, kinds.DictValue, kinds.SetValue, kinds.TupleValue, kinds.TensorValue)):
            return True
        if type(v) is kinds.ObjectValue and v.is_new:
            return not any(hasattr(v.cls, n) for n in ("__get__", "__set__", "__delete__", "__set_name__"))
        return False

    def function(self, name: str, v: NestedFunctionValue) -> types.FunctionType:
        d, kd = v.defaults(None)
        if not all(x.is_python_constant() for x in [*d, *kd.values()]):
            raise Unsupported(f"the method {name!r} of a class made in the frame has defaults that are not constants")
        closure = tuple(self.real_cell if c is self.body_cell and c is not None
                        else self.real_classdict_cell if c is self.classdict_cell and c is not None
                        else types.CellType()
                        for c in v.closure)
        fn = types.FunctionType(v.code, v.f_globals, v.code.co_name,
                                tuple(x.as_python_constant() for x in d) or None, closure or None)
        if kd:
            fn.__kwdefaults__ = {k: x.as_python_constant() for k, x in kd.items()}
        self.functions.append((fn, v))
        return fn


#: what a metaclass may define and still make classes as ``type`` does
_METACLASS_PLAIN_DUNDERS = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                                      "__firstlineno__", "__static_attributes__"})


def plain_metaclass(meta) -> bool:
    """A metaclass that only adds methods and attributes to ``type`` (or
    ``abc.ABCMeta``), none of them a dunder (no ``__new__``, ``__init__``,
    ``__prepare__``, ``__call__``, ``__setattr__``, ``__repr__``...), and no
    data descriptors: making a class with it, an instance of that class,
    and reading the class are what ``type`` does, which the trace models."""
    if not isinstance(meta, type) or not issubclass(meta, type):
        return False
    for klass in meta.__mro__:
        if klass in (type, abc.ABCMeta, object):
            continue
        for k, v in klass.__dict__.items():
            if k.startswith("__") and k.endswith("__") and k not in _METACLASS_PLAIN_DUNDERS:
                return False
            if hasattr(type(v), "__set__") or hasattr(type(v), "__delete__"):
                return False
    return True


def _metaclass(bases: list[type], explicit) -> type:
    meta = explicit if explicit is not None else (type(bases[0]) if bases else type)
    for b in bases:
        bm = type(b)
        if issubclass(meta, bm):
            continue
        if issubclass(bm, meta):
            meta = bm
            continue
        raise user_error(TypeError, "metaclass conflict: the metaclass of a derived class must be a (non-strict) "
                                    "subclass of the metaclasses of all its bases")
    return meta


class BuildClassValue(Value):
    """``builtins.__build_class__`` as LOAD_BUILD_CLASS pushes it."""

    def __init__(self, frame, index: int):
        super().__init__()
        self.frame, self.index = frame, index

    def python_type(self):
        return types.BuiltinFunctionType

    def call(self, tx, args, kwargs):
        # (what it cannot model is a graph break on the call: the statement
        # runs natively, its class then made per call: per_call_classes.py)
        return build_class(tx, args, kwargs)

    def reconstruct(self, out):
        from .per_call_classes import native_build_class
        out.load_const(native_build_class)


def build_class(tx, args, kwargs) -> MadeClassValue:
    if len(args) < 2 or not isinstance(args[0], NestedFunctionValue):
        raise Unsupported("__build_class__ called other than by a class statement")
    body, name_v, base_vs = args[0], args[1], list(args[2:])
    name = name_v.as_python_constant()
    bases = []
    for b in base_vs:
        if not isinstance(b, ClassValue) or not isinstance(b.cls, type):
            raise Unsupported(f"a class statement in the frame whose base is {b}")
        if b.attrs:
            raise Unsupported(f"a class statement whose base {b.cls.__qualname__} was modified in the frame")
        bases.append(b.cls)
    explicit = None
    for k, v in kwargs.items():
        if k != "metaclass":
            raise Unsupported(f"a class statement with the keyword {k!r} (passed to __init_subclass__)")
        explicit = v.as_python_constant()
    meta = _metaclass(bases, explicit)
    if meta not in (type, abc.ABCMeta) and not plain_metaclass(meta):
        raise Unsupported(f"a class statement in the frame with the metaclass {meta.__qualname__}",
                          hint="classes made while tracing use the metaclass type or abc.ABCMeta, or one that "
                               "only adds methods (no __new__, __init__, __prepare__, __call__...); the statement "
                               "runs natively at a graph break; define the class outside the compiled function "
                               "to keep one graph")
    for b in bases:
        for klass in b.__mro__[:-1]:
            if "__init_subclass__" in klass.__dict__:
                raise Unsupported(f"a class statement in the frame whose base {klass.__qualname__} defines "
                                  "__init_subclass__")
    namespace, body_cell = _run_body(tx, body)
    classdict_cell = namespace.get("__classdictcell__")
    realizer = _Realizer(tx, body_cell, classdict_cell if isinstance(classdict_cell, CellValue) else None)
    real_ns = {k: realizer.real(k, v) for k, v in namespace.items()}
    for k, v in real_ns.items():
        if hasattr(type(v), "__set_name__") and not isinstance(v, _DECORATORS):
            raise Unsupported(f"the class attribute {k!r} of a class made in the frame has __set_name__")
    try:
        cls = meta(name, tuple(bases), real_ns)
    except Exception as e:   # e.g. a layout conflict of the bases: eager raises it too
        raise user_error(type(e), str(e)) from None
    made = MadeClassValue(cls, name, base_vs, namespace, body.code)
    made.metaclass = explicit if isinstance(explicit, type) and explicit is not type else None
    _MADE[cls] = made
    ctx = tx.ctx
    ctx.value_cache[id(cls)] = (cls, made)
    for fn, v in realizer.functions + realizer.stand_ins:
        ctx.value_cache[id(fn)] = (fn, v)
    if body_cell is not None:
        body_cell.made = made
        body_cell.contents = made
    return made


def decorate_made_class(tx, decorator, cls_value: Value, kwargs: dict) -> MadeClassValue:
    """A pure class decorator of the standard library (``dataclasses.dataclass``)
    applied to a class made in this frame: applied for real while tracing
    (it only adds generated methods to the class) and again to the class
    residual code rebuilds."""
    if not isinstance(cls_value, MadeClassValue):
        raise Unsupported(f"{decorator.__qualname__}() of a class made outside the compiled frame")
    if cls_value.attrs:
        raise Unsupported(f"{decorator.__qualname__}() of a class the frame modified after making it")
    kw = {k: v.as_python_constant() for k, v in kwargs.items()}
    try:
        result = decorator(cls_value.cls, **kw)
    except Exception as e:  # eager raises it too (e.g. a field without default after one with)
        raise user_error(type(e), str(e)) from None
    if result is not cls_value.cls:
        raise Unsupported(f"{decorator.__qualname__}() that makes a new class (e.g. slots=True)")
    cls_value.decorators.append((decorator, kw))
    return cls_value


def _run_body(tx, body: NestedFunctionValue):
    """Run the class body; its namespace (name -> Value) and its
    ``__class__`` cell (None if no method uses it)."""
    code = body.code
    if code.co_argcount or code.co_flags & (0x04 | 0x08 | 0x20):
        raise Unsupported("__build_class__ called with a function that is not a class body")
    if tx.depth + 1 > tx.ctx.config.inline_depth_limit:
        raise Unsupported("a class statement beyond the inlining depth limit")
    frame = tx.ctx.make_frame(body, {}, tx)
    body_cell = None
    if "__class__" in code.co_cellvars:
        body_cell = frame.cells["__class__"] = ClassCellValue()
    frame.class_namespace = {}
    result = frame.run()
    ns = frame.class_namespace
    if result is not None and not (isinstance(result, ConstantValue) and result.value is None) \
            and result is not body_cell:
        raise Unsupported("a class body that returns something else than its __class__ cell")
    cell = ns.get("__classcell__")
    if cell is not None and cell is not body_cell:
        raise Unsupported("a class body whose __classcell__ is not its own cell")
    return ns, body_cell
