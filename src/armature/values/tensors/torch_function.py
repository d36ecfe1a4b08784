"""``__torch_function__`` in the trace: tensor subclasses and TorchFunctionModes.

Eager torch gives a tensor subclass (or an active ``TorchFunctionMode``) the
first word on every overridable call that reaches it: torch functions,
tensor methods, operators and even attribute reads (``x.shape`` calls
``__torch_function__(Tensor.shape.__get__, ...)``).  armature models that
protocol while tracing instead of giving up on the frame:

* every op the trace records goes through :func:`dispatch` first (from
  ``graph_call``, the one funnel of tensor ops, and from tensor attribute
  reads); when a modelled mode is active or an argument's class overrides
  ``__torch_function__``, the user's ``__torch_function__`` is *inlined*
  with ``(func, types, args, kwargs)`` exactly as torch would call it: the
  mode first (popped from the modelled stack while it runs), then the
  overloaded arguments in torch's order (subclasses before their bases,
  otherwise left to right), until one does not return ``NotImplemented``;
* torch's own implementations are modelled, not inlined:
  ``Tensor.__torch_function__`` (run ``func`` with subclass dispatch off,
  then ``as_subclass`` the tensors it returns) and
  ``torch._C._disabled_torch_function_impl``; so are
  ``torch._C.DisableTorchFunction[Subclass]`` and the mode-stack functions
  (``_push_on_torch_function_stack``...), which act on the trace's model of
  the stack, never on the real one;
* the graph itself holds plain tensors only: a subclass is a class carried
  by the TensorValue (``as_subclass`` is the same graph node with another
  class), inputs enter as plain aliases, and the compiled graph runs with
  torch function handling off (:func:`wrap_compiled`), so neither a mode
  nor a subclass sees the graph's ops a second time.  Subclass results are
  rebuilt after the graph with ``as_subclass`` and their Python attributes.

Modes active around a compiled call are read at trace start, guarded by
depth and by type (and whatever the traced ``__torch_function__`` reads of
them).  A mode pushed inside the traced code exists only in the model; a
graph break while one is pushed is moved to where it was pushed (that part
runs as Python), since the real stack cannot be handed across a break.
"""
from __future__ import annotations

import contextlib
import functools
import operator
import types
from typing import Any

import torch

from ...diagnostics.errors import Unsupported, user_error
from ..base import CallableConstantValue, Value, get_attribute, realize
from ..constant import ConstantValue
from ..builder import wrap
from .. import kinds
from ...tensor_classes import (DISABLED_IMPL, has_torch_dispatch, has_torch_function, is_traceable_wrapper,  # noqa: F401
                               needs_plain, plain_alias)

DEFAULT_IMPL = torch.Tensor.__torch_function__.__func__


def check_input_class(cls: type) -> None:
    """Tensor classes that may enter a trace; others break cleanly."""
    if cls in (torch.Tensor, torch.nn.Parameter):
        return
    if has_torch_dispatch(cls) and not is_traceable_wrapper(cls):
        raise Unsupported(f"the tensor subclass {cls.__qualname__} defines __torch_dispatch__ without "
                          "__tensor_flatten__/__tensor_unflatten__",
                          hint="make it a traceable wrapper subclass, or call the compiled function with plain "
                               "tensors; this frame runs as Python")


# --- the trace's torch-function state ------------------------------------------

class TorchFunctionState:
    """What the trace knows of torch function handling: the modelled mode
    stack, and whether subclass / all handling is switched off in the region
    being traced (``DisableTorchFunction[Subclass]``, or inside torch's own
    ``__torch_function__``)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.entry_depth = torch._C._len_torch_function_stack()
        self._modes: list[Value] | None = None
        self.subclass_off = 0
        self.all_off = 0
        #: the unsplittable-region tokens of the modes the trace pushed (innermost last)
        self.push_origins: list = []
        #: the trace saw a subclass or a mode: the graph must run with
        #: torch function handling off
        self.used = self.entry_depth > 0

    @property
    def modes(self) -> list[Value]:
        if self._modes is None:
            self._modes = [wrap(self.ctx, torch._C._get_function_stack_at(i), ModeSource(i))
                           for i in range(self.entry_depth)]
        return self._modes

    def mode_active(self) -> bool:
        return not self.all_off and (self.entry_depth > 0 or self._modes is not None) and bool(self.modes)

    def subclasses_active(self) -> bool:
        return not self.all_off and not self.subclass_off


def state(ctx) -> TorchFunctionState:
    st = getattr(ctx, "_torch_function", None)
    if st is None:
        st = ctx._torch_function = TorchFunctionState(ctx)
    return st


def possible(ctx) -> bool:
    """Cheap test before any dispatch work: nothing to do unless a mode was
    active at entry or a subclass tensor was seen."""
    st = getattr(ctx, "_torch_function", None)
    return st is not None and st.used


from ...guards.sources import Source  # noqa: E402
from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True)
class ModeSource(Source):
    """The i-th active TorchFunctionMode (0 = the outermost)."""
    index: int

    def expr(self, pool):
        return f"{pool.const(torch._C._get_function_stack_at)}({self.index})"

    def emit(self, out):
        out.instr("PUSH_NULL")
        out.load_const(torch._C._get_function_stack_at)
        out.load_const(self.index)
        out.call(1)

    def __str__(self):
        return f"torch_function_mode[{self.index}]"


# --- what func a recorded op is, as torch hands it to __torch_function__ --------

@functools.lru_cache(maxsize=1)
def _operator_funcs() -> dict:
    """operator.X -> the func torch passes to ``__torch_function__`` for it
    (``x + 1`` arrives as ``Tensor.add``), learnt once by running each
    operator under a recording mode, so torch's own choice is used on every
    version."""
    from torch.overrides import TorchFunctionMode
    seen: list = []

    class _Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    table = {}
    a, b = torch.ones(2), torch.ones(2)
    ops = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
           operator.pow, operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift,
           operator.rshift, operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
           operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv, operator.imod,
           operator.ipow, operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift,
           operator.neg, operator.pos, operator.invert, operator.abs, operator.getitem, operator.setitem]
    for op in ops:
        for reflected in (False, True):
            x = torch.ones(2, dtype=torch.int64) if op in _INT_OPS else torch.ones(2)
            y = torch.ones(2, dtype=torch.int64) if op in _INT_OPS else torch.ones(2)
            seen.clear()
            try:
                with _Record():
                    if op in (operator.neg, operator.pos, operator.invert, operator.abs):
                        if reflected:
                            continue
                        op(x)
                    elif op is operator.getitem:
                        if reflected:
                            continue
                        op(x, 0)
                    elif op is operator.setitem:
                        if reflected:
                            continue
                        op(x, 0, 1)
                    elif op is operator.matmul:
                        op(x, y) if not reflected else None
                    elif reflected:
                        op(2, x)
                    else:
                        op(x, 2)
            except Exception:
                continue
            if seen:
                table[(op, reflected)] = seen[0]
    del a, b
    return table


_INT_OPS = frozenset({operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
                      operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift,
                      operator.invert})


#: learnt at import (armature's import runs with torch function handling on;
#: tracing runs with it off, where the recording mode would see nothing)
OPERATOR_FUNCS = _operator_funcs()
assert OPERATOR_FUNCS, "armature was imported with torch function handling disabled"


def public_func(kind: str, target: Any, args: list[Value]):
    """(func, args) as torch would offer them to ``__torch_function__`` for
    an op the trace records as (kind, target, args); None when the op is
    not overridable."""
    if kind == "call_method":
        func = getattr(torch.Tensor, target, None)
        return (func, args) if func is not None else None
    if target is getattr and len(args) == 2:
        name = args[1].as_python_constant()
        return getter(name), args[:1]
    if isinstance(target, types.BuiltinFunctionType) and getattr(target, "__module__", None) == "_operator":
        reflected = len(args) == 2 and not isinstance(args[0], kinds.TensorValue) and isinstance(args[1], kinds.TensorValue) \
            and target not in (operator.getitem, operator.setitem)
        func = OPERATOR_FUNCS.get((target, reflected))
        if func is None:
            return None
        return func, ([args[1], args[0]] if reflected else args)
    return target, args


def is_tensor_property(name: str) -> bool:
    return type(getattr(torch._C.TensorBase, name, None)).__name__ == "getset_descriptor"


def getter(name: str):
    """``Tensor.<name>.__get__``, as torch passes an attribute read."""
    return getattr(torch._C.TensorBase, name).__get__


# --- the dispatch ------------------------------------------------------------------

def overloaded_args(args, kwargs) -> list:
    """Tensor values whose classes override ``__torch_function__``, in
    torch's order: one per class, a subclass before its bases, otherwise
    in argument order (lists and tuples are looked into)."""
    out: list = []
    seen: set = set()

    def visit(v):
        if isinstance(v, kinds.TensorValue):
            cls = v.cls
            if cls in seen or not has_torch_function(cls):
                return
            seen.add(cls)
            index = len(out)
            for i, old in enumerate(out):
                if issubclass(cls, old.cls):
                    index = i
                    break
            out.insert(index, v)
        elif isinstance(v, (kinds.ListValue, kinds.TupleValue)):
            for i in v.items:
                visit(i)

    for v in list(args) + list(kwargs.values()):
        visit(v)
    return out


def dispatch(tx, kind: str, target: Any, args: list[Value], kwargs: dict[str, Value]) -> Value | None:
    """The result of handing an op to the active mode or to overriding
    subclasses, or None when neither takes part (the caller records it)."""
    st = state(tx.ctx)
    if st.all_off:
        return None
    args = [realize(tx.ctx, a) for a in args]
    kwargs = {k: realize(tx.ctx, v) for k, v in kwargs.items()}
    overloaded = overloaded_args(args, kwargs) if st.subclasses_active() else []
    mode = st.mode_active()
    if not overloaded and not mode:
        return None
    found = public_func(kind, target, args)
    if found is None:
        return None
    func, args = found
    if func in _not_overridable():
        return None
    return call_torch_function(tx, func, args, kwargs, overloaded, mode)


@functools.lru_cache(maxsize=1)
def _not_overridable() -> frozenset:
    from torch.overrides import get_ignored_functions
    return frozenset(get_ignored_functions()) | {torch.Tensor.as_subclass, torch.Tensor._make_subclass}


def call_torch_function(tx, func, args, kwargs, overloaded, mode: bool) -> Value:
    ctx = tx.ctx
    st = state(ctx)
    func_v = wrap_func(ctx, func)
    types_v = kinds.TupleValue([wrap(ctx, v.cls, None) for v in overloaded])
    args_v = kinds.TupleValue(list(args))
    kwargs_v = kinds.DictValue(dict(kwargs))
    if mode:
        top = st.modes.pop()
        try:
            res = top.call_method(tx, "__torch_function__", [func_v, types_v, args_v, kwargs_v], {})
        finally:
            st.modes.append(top)
        if not _is_not_implemented(res):
            return res
    for arg in overloaded:
        res = impl_value(tx, arg.cls).call(tx, [func_v, types_v, args_v, kwargs_v], {})
        if not _is_not_implemented(res):
            return res
    names = ", ".join(v.cls.__name__ for v in overloaded)
    raise user_error(TypeError, f"no implementation found for '{getattr(func, '__qualname__', func)}' on "
                                f"types that implement __torch_function__: [{names}]")


def _is_not_implemented(v: Value) -> bool:
    return isinstance(v, ConstantValue) and v.value is NotImplemented


def impl_value(tx, cls: type) -> Value:
    """``cls.__torch_function__`` bound to cls (it is a classmethod), with
    torch's own implementations modelled."""
    from ..objects.objects import find_class_attr
    raw, owner = find_class_attr(cls, "__torch_function__")
    fn = raw.__func__ if isinstance(raw, classmethod) else raw
    cls_v = wrap(tx.ctx, cls, None)
    if fn is DEFAULT_IMPL:
        return DefaultImplValue(cls)
    if fn is DISABLED_IMPL:
        return DisabledImplValue()
    if not isinstance(raw, classmethod):
        raise Unsupported(f"{cls.__qualname__}.__torch_function__ is not a classmethod")
    kinds.wrap_class_attr(tx, cls, "__torch_function__", raw, owner)   # (guards it)
    from ...guards.sources import AttrSource, ItemSource
    from ..objects.objects import class_source
    src = AttrSource(ItemSource(AttrSource(class_source(owner), "__dict__"), "__torch_function__"), "__func__")
    return kinds.BoundMethodValue(wrap(tx.ctx, fn, src), cls_v)


def wrap_func(ctx, func) -> Value:
    """The ``func`` argument of ``__torch_function__`` as a Value: callable
    (with dispatch as torch would do it) and comparable to torch's objects."""
    if type(func).__name__ == "method-wrapper" and func.__name__ == "__get__":
        return GetterValue(func)
    return wrap(ctx, func, None)


class GetterValue(CallableConstantValue):
    """``Tensor.<attr>.__get__``: reading the attribute."""

    def call(self, tx, args, kwargs):
        if len(args) != 1 or kwargs:
            raise Unsupported("calling a tensor attribute getter with other than one argument")
        return get_attribute(tx, args[0], self.fn.__self__.__name__)


def _unpack_tf_args(args, kwargs):
    names = ("func", "types", "args", "kwargs")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    if "func" not in bound or "types" not in bound:
        raise Unsupported("__torch_function__ called without func and types")
    return bound["func"], bound["types"], bound.get("args"), bound.get("kwargs")


def _call_func(tx, func_v, args_v, kwargs_v) -> Value:
    args = [] if args_v is None else tx.iterate(realize(tx.ctx, args_v))
    kw = {}
    if kwargs_v is not None:
        kwargs_v = realize(tx.ctx, kwargs_v)
        if isinstance(kwargs_v, kinds.DictValue):
            kw = dict(kwargs_v.items)
        elif not (kwargs_v.is_python_constant() and kwargs_v.as_python_constant() is None):
            raise Unsupported(f"__torch_function__ kwargs {kwargs_v}")
    return func_v.call(tx, args, kw)


@contextlib.contextmanager
def subclasses_off(ctx):
    st = state(ctx)
    st.subclass_off += 1
    try:
        yield
    finally:
        st.subclass_off -= 1


class DisabledImplValue(Value):
    """``torch._C._disabled_torch_function_impl``: run func with subclass
    dispatch off and return what it returns (``nn.Parameter``'s)."""

    def python_type(self):
        return types.BuiltinFunctionType

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return DISABLED_IMPL

    def call(self, tx, args, kwargs):
        func_v, _types, args_v, kwargs_v = _unpack_tf_args(args, kwargs)
        with subclasses_off(tx.ctx):
            return _call_func(tx, func_v, args_v, kwargs_v)


class DefaultImplValue(Value):
    """``torch.Tensor.__torch_function__`` bound to ``cls``: NotImplemented
    unless cls is a subclass of every type offered; otherwise func with
    subclass dispatch off, its tensors converted to ``cls`` (except for the
    functions torch leaves unwrapped)."""

    def __init__(self, cls: type):
        super().__init__()
        self.cls = cls

    def python_type(self):
        return types.MethodType

    def call(self, tx, args, kwargs):
        func_v, types_v, args_v, kwargs_v = _unpack_tf_args(args, kwargs)
        offered = types_v.as_python_constant() if types_v.is_python_constant() else \
            [t.as_python_constant() for t in tx.iterate(types_v)]
        if not all(issubclass(self.cls, t) for t in offered):
            return ConstantValue(NotImplemented)
        with subclasses_off(tx.ctx):
            ret = _call_func(tx, func_v, args_v, kwargs_v)
        func = func_v.as_python_constant() if func_v.is_python_constant() else None
        from torch.overrides import get_default_nowrap_functions
        if func is not None and func in get_default_nowrap_functions():
            return ret
        return convert(tx, ret, self.cls)


def convert(tx, ret: Value, cls: type) -> Value:
    """torch's ``_convert``: tensors that are not already ``cls`` become
    ``ret.as_subclass(cls)``; lists and tuples element by element."""
    if cls is torch.Tensor:
        return ret
    ret = realize(tx.ctx, ret)
    if isinstance(ret, kinds.TensorValue):
        return ret if issubclass(ret.cls, cls) else as_subclass(tx, ret, cls)
    if isinstance(ret, kinds.TupleValue) and ret.cls is tuple:
        return kinds.TupleValue([convert(tx, i, cls) for i in ret.items])
    if type(ret) is kinds.ListValue:
        return kinds.ListValue([convert(tx, i, cls) for i in ret.items])
    return ret


def as_subclass(tx, t, cls: type):
    """``t.as_subclass(cls)``: the same graph node, seen as another class
    (an alias of the same data; the graph has plain tensors only)."""
    if not (isinstance(cls, type) and issubclass(cls, torch.Tensor)):
        raise user_error(TypeError, "as_subclass() argument 'cls' must be a subclass of torch.Tensor")
    check_input_class(cls)
    if has_torch_dispatch(cls):
        raise Unsupported(f"as_subclass to the __torch_dispatch__ subclass {cls.__qualname__}")
    out = kinds.TensorValue(t.node, t.fake, cls=cls)
    if cls is not torch.Tensor:
        state(tx.ctx).used = True
    return out


def make_subclass(tx, args, kwargs) -> Value:
    """``torch.Tensor._make_subclass(cls, data, require_grad=False)``: a new
    tensor of ``cls`` sharing data's memory, detached from its history."""
    names = ("cls", "data", "require_grad")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    cls = realize(tx.ctx, bound["cls"]).as_python_constant()
    data = realize(tx.ctx, bound["data"])
    rg = bound.get("require_grad", ConstantValue(False))
    rg = bool(realize(tx.ctx, rg).as_python_constant())
    if not isinstance(data, kinds.TensorValue):
        raise Unsupported(f"torch.Tensor._make_subclass of {data}")
    if rg and tx.ctx.grad_enabled:
        raise Unsupported("torch.Tensor._make_subclass(..., require_grad=True) makes a new autograd leaf, "
                          "which a graph cannot return", hint="the call runs as Python (a graph break)")
    with subclasses_off(tx.ctx):
        detached = kinds.graph_call(tx, "call_method", "detach", [data], {})
    return as_subclass(tx, detached, cls)


def construct_subclass(tx, cls_v, args, kwargs) -> Value:
    """``MySubclass(...)``: its ``__new__`` (user code, usually calling
    ``_make_subclass`` or ``as_subclass``), then its ``__init__`` when the
    result is an instance, as ``type.__call__`` does."""
    from ..objects.objects import find_class_attr
    cls = cls_v.cls
    raw_new, owner = find_class_attr(cls, "__new__")
    fn = raw_new.__func__ if isinstance(raw_new, staticmethod) else raw_new
    if not isinstance(fn, types.FunctionType):
        raise Unsupported(f"constructing the tensor subclass {cls.__qualname__} without a Python __new__")
    new_v = kinds.wrap_class_attr(tx, cls, "__new__", raw_new, owner)
    if isinstance(raw_new, staticmethod):
        new_v = wrap(tx.ctx, fn, None)
    obj = realize(tx.ctx, new_v.call(tx, [cls_v, *args], kwargs))
    if isinstance(obj, kinds.TensorValue) and issubclass(obj.cls, cls):
        raw_init, init_owner = find_class_attr(cls, "__init__")
        if isinstance(raw_init, types.FunctionType):
            init_v = kinds.wrap_class_attr(tx, cls, "__init__", raw_init, init_owner)
            kinds.BoundMethodValue(init_v, obj).call(tx, list(args), dict(kwargs))
        elif raw_init not in (object.__init__, torch._C.TensorBase.__init__):
            raise Unsupported(f"the __init__ of {cls.__qualname__} is not Python")
    return obj


# --- torch._C's switches and mode stack, on the model ---------------------------

class DisableContextValue(Value):
    """``torch._C.DisableTorchFunctionSubclass()`` / ``DisableTorchFunction()``."""

    def __init__(self, cls):
        super().__init__()
        self.cls = cls
        self.entered = False

    def python_type(self):
        return self.cls

    def getattr(self, tx, name):
        if name in ("__enter__", "__exit__"):
            return _ContextMethod(self, name)
        raise Unsupported(f"attribute {name!r} of {self.cls.__name__}")

    def enter(self, tx):
        st = state(tx.ctx)
        if self.cls is torch._C.DisableTorchFunction:
            st.all_off += 1
        else:
            st.subclass_off += 1
        self.entered = True
        return ConstantValue(None)

    def exit(self, tx):
        st = state(tx.ctx)
        if self.cls is torch._C.DisableTorchFunction:
            st.all_off -= 1
        else:
            st.subclass_off -= 1
        self.entered = False
        return ConstantValue(None)

    def reconstruct(self, out):
        raise Unsupported(f"a graph break inside `with torch._C.{self.cls.__name__}()`",
                          hint="the region runs as Python")


class _ContextMethod(Value):
    def __init__(self, ctxv, name):
        super().__init__()
        self.ctxv, self.name = ctxv, name

    def call(self, tx, args, kwargs):
        return self.ctxv.enter(tx) if self.name == "__enter__" else self.ctxv.exit(tx)

    def reconstruct(self, out):
        raise Unsupported(f"a graph break inside `with torch._C.{self.ctxv.cls.__name__}()`",
                          hint="the region runs as Python")


class DisableContextClassValue(CallableConstantValue):
    def call(self, tx, args, kwargs):
        if args or kwargs:
            raise Unsupported(f"{self.fn.__name__}() with arguments")
        return DisableContextValue(self.fn)


def _root_origin(tx) -> tuple[int, bool]:
    f, depth = tx, 0
    while f.parent is not None:
        f, depth = f.parent, depth + 1
    return f.ip - 1, depth > 0


class StackFunctionValue(CallableConstantValue):
    """The mode-stack functions of ``torch._C``, answered from the model."""

    def call(self, tx, args, kwargs):
        st = state(tx.ctx)
        name = self.fn.__name__
        if name == "_len_torch_function_stack":
            return ConstantValue(len(st.modes))
        if name == "_get_function_stack_at":
            i = realize(tx.ctx, args[0]).as_python_constant()
            return st.modes[i]
        if name == "_push_on_torch_function_stack":
            st.modes.append(realize(tx.ctx, args[0]))
            st.push_origins.append(tx.ctx.enter_unsplittable(_root_origin(tx)))
            st.used = True
            return ConstantValue(None)
        if name == "_pop_torch_function_stack":
            if not st.modes:
                raise user_error(RuntimeError, "trying to pop from empty mode stack")
            if st.push_origins:
                tx.ctx.leave_unsplittable(st.push_origins.pop())
            else:
                raise Unsupported("popping a TorchFunctionMode that was active before the compiled call",
                                  hint="the mode stack around a compiled call must be the same when it returns")
            return st.modes.pop()
        if name == "_is_torch_function_mode_enabled":
            return ConstantValue(st.mode_active())
        if name == "_is_torch_function_enabled":
            return ConstantValue(not st.all_off and not st.subclass_off)
        if name == "_is_torch_function_all_disabled":
            return ConstantValue(bool(st.all_off))
        if name in ("_has_torch_function", "_has_torch_function_unary", "_has_torch_function_variadic"):
            vals = list(args)
            if name == "_has_torch_function" and len(args) == 1:
                vals = tx.iterate(realize(tx.ctx, args[0]))
            vals = [realize(tx.ctx, v) for v in vals]
            return ConstantValue(st.mode_active() or (st.subclasses_active() and bool(overloaded_args(vals, {}))))
        raise Unsupported(f"torch._C.{name}() inside compiled code")


STACK_FUNCTIONS = frozenset({
    "_len_torch_function_stack", "_get_function_stack_at", "_push_on_torch_function_stack",
    "_pop_torch_function_stack", "_is_torch_function_mode_enabled", "_is_torch_function_enabled",
    "_is_torch_function_all_disabled", "_has_torch_function", "_has_torch_function_unary",
    "_has_torch_function_variadic"})


def wrap_special(ctx, obj) -> Value | None:
    """builder hook: torch's torch-function machinery, modelled."""
    if obj is DISABLED_IMPL:
        return DisabledImplValue()
    if obj is torch._C.DisableTorchFunctionSubclass or obj is torch._C.DisableTorchFunction:
        return DisableContextClassValue(obj)
    if isinstance(obj, types.BuiltinFunctionType) and getattr(obj, "__self__", None) is torch._C \
            and obj.__name__ in STACK_FUNCTIONS:
        return StackFunctionValue(obj)
    if isinstance(obj, types.MethodType) and obj.__func__ is DEFAULT_IMPL:
        return DefaultImplValue(obj.__self__)
    if obj is DEFAULT_IMPL:
        return _DefaultImplFunction(obj)
    if obj is torch.Tensor._make_subclass:
        return _MakeSubclassValue(obj)
    return None


class _MakeSubclassValue(CallableConstantValue):
    def call(self, tx, args, kwargs):
        return make_subclass(tx, args, kwargs)


class _DefaultImplFunction(CallableConstantValue):
    """The plain function behind ``Tensor.__torch_function__`` (reached
    through ``super()``, bound to the class as its first argument)."""

    def call(self, tx, args, kwargs):
        cls = realize(tx.ctx, args[0]).as_python_constant()
        return DefaultImplValue(cls).call(tx, list(args[1:]), kwargs)


# --- running the graph ----------------------------------------------------------

def wrap_compiled(ctx, compiled, graph):
    """The compiled graph runs with torch function handling off (the
    trace already applied every mode and subclass override), with subclass
    inputs handed over as plain aliases."""
    st = getattr(ctx, "_torch_function", None)
    if st is None or not st.used:
        return compiled
    positions = tuple(i for i, gi in enumerate(graph.inputs) if needs_plain(gi.real))
    disable = torch._C.DisableTorchFunction

    if not positions:
        def run_graph(*inputs):
            with disable():
                return compiled(*inputs)
    else:
        def run_graph(*inputs):
            with disable():
                inputs = list(inputs)
                for i in positions:
                    inputs[i] = inputs[i].as_subclass(torch.Tensor)
                return compiled(*inputs)
    run_graph.__wrapped__ = compiled
    return run_graph


def rebuild_subclass(t: torch.Tensor, cls: type) -> torch.Tensor:
    """After the graph: a plain output as the subclass the trace saw."""
    with torch._C.DisableTorchFunction():
        return t.as_subclass(cls)
