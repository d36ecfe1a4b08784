"""The one place that turns real objects into Values (Dynamo's
VariableBuilder).  Wrapping installs exactly the guards the chosen Value kind
relies on; since wrapping happens only when traced code reads a value, guards
stay lazy.
"""
from __future__ import annotations

import enum
import functools
import sys
import types
from typing import Any

import torch

from ..diagnostics.errors import Unsupported
from ..guards.guard import Guard, Kind, TensorMeta
from ..guards.sources import AttrSource, ClosureSource, ItemSource, LocalSource, ModuleMemberSource, Source
from .base import Value
from .constant import ConstantValue
from . import kinds

_CONSTANT_TYPES = (int, float, bool, str, bytes, complex, type(None), type(Ellipsis),
                   type(NotImplemented))
_META_CONSTANT_TYPES = (torch.dtype, torch.device, torch.layout, torch.memory_format)


def is_torch_object(obj: Any) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    return mod == "torch" or mod.startswith("torch.")


#: id(ctx) -> ids of the containers being wrapped right now (cycle check)
_WRAPPING: dict[int, set[int]] = {}


def wrap(ctx, obj: Any, source: Source | None) -> Value:
    """Wrap ``obj`` read from ``source``; guards go to ``ctx.guards``.
    ``source=None`` means the object is trusted (e.g. a torch-internal
    global) and needs no guard."""
    cached = ctx.value_cache.get(id(obj))
    if cached is not None and cached[0] is obj:
        value = cached[1]
        if not _LATE_LOADED:
            _load_late()
        theirs = object_source(value)   # (a cell's Value has its contents' source)
        if source is not None and theirs is not None and theirs != source \
                and not isinstance(value, ConstantValue):
            ctx.guards.add(Guard(Kind.SAME_OBJECT, source, theirs))
        if not isinstance(value, ConstantValue):
            return value
    owner = ctx.instance_dict_owners.get(id(obj)) if type(obj) is dict else None
    if owner is not None:
        # the instance dict of an object already in the trace: one Value for
        # both, so writes through either are seen through the other
        if source is not None and owner.source is not None:
            ctx.guards.add(Guard(Kind.SAME_OBJECT, source, AttrSource(owner.source, "__dict__")))
        value = owner.instance_dict()
        ctx.value_cache[id(obj)] = (obj, value)
        return value
    if type(obj) in (dict, list, tuple):
        # a container that holds itself (3.11's ``d = locals()`` followed by
        # another ``locals()``): its Value would be built forever
        busy = _WRAPPING.setdefault(id(ctx), set())
        if id(obj) in busy:
            raise Unsupported(f"a {type(obj).__name__} that contains itself")
        busy.add(id(obj))
        try:
            value = _wrap_new(ctx, obj, source)
        finally:
            busy.discard(id(obj))
            if not busy:
                del _WRAPPING[id(ctx)]
    else:
        value = _wrap_new(ctx, obj, source)
    if not isinstance(value, ConstantValue) and type(obj) not in (int, float, bool) and \
            not _stands_for_another(obj):
        # (numbers have no identity worth tracking: equal small ints are one
        # object, which must not tie two sources together)
        ctx.value_cache[id(obj)] = (obj, value)
        _note_instance_dict(ctx, value)
    return value


def _has_rule(obj) -> bool:
    """A torch C function with a rule of its own (values/tensors/state_queries.py)."""
    from .operations.builtins import RULES
    try:
        return obj in RULES
    except TypeError:
        return False


def _stands_for_another(obj) -> bool:
    """A compiled function is traced as the function it wraps, whose Value
    (source ``cf._fn``) is cached under that function: caching it under the
    wrapper too would tie ``cf`` and ``cf._fn`` as one object."""
    if not _LATE_LOADED:
        _load_late()
    return type(obj) is CompiledFunction


def _note_instance_dict(ctx, value: Value) -> None:
    if not isinstance(value, kinds.ObjectValue) or value.is_new:
        return
    d = getattr(value.obj, "__dict__", None)
    if type(d) is not dict:
        return
    cached = ctx.value_cache.get(id(d))
    if cached is not None and cached[0] is d:
        raise Unsupported(f"an object whose __dict__ is also reached as a separate dict ({value.source})")
    if ctx.instance_dict_owners.get(id(d), value) is not value:
        raise Unsupported(f"two objects sharing one __dict__ ({value.source})")
    ctx.instance_dict_owners[id(d)] = value


def _guard(ctx, kind: Kind, source: Source | None, expected: Any = None) -> None:
    if source is not None:
        ctx.guards.add(Guard(kind, source, expected))


_LATE_LOADED = False


def _load_late() -> None:
    """Bind, once, the modules ``_wrap_new`` consults for every object (they
    import this module, so they are imported late).  A function-level
    ``from .x import y`` is an import-system round trip on every run
    (``__spec__.parent``, ``_handle_fromlist``); _wrap_new made about
    seventeen of them per wrapped object."""
    global _LATE_LOADED, autograd_function, torch_ops, vbuiltins, modules, functions, containers, objects, \
        markers, wrap_marked, CompiledFunction, distributed, stdlib_wrap_special, autocast, torch_function, \
        vmap, pytree, real_iterator, wrap_real_generator, wrap_numpy_object, whitelisted, dims_for_tensor, \
        int_is_dynamic, config_mod, object_source
    from .tensors import autograd_function, torch_ops
    from .operations import builtins as vbuiltins
    from .nn import modules
    from .functions import functions
    from .containers import containers
    from .objects import objects
    from ..runtime import markers
    from .directives.markers import wrap_marked   # disable, allow/disallow_in_graph, set_stance
    from .. import upcalls
    CompiledFunction = upcalls.CompiledFunction   # (api sits above this layer: it installs its class there)
    from .distributed import distributed   # collectives, rank queries, process groups
    from .stdlib.common import wrap_special as stdlib_wrap_special
    from .tensors import autocast, torch_function, vmap
    from .containers import pytree, real_iterator
    from .functions.generator_breaks import wrap_real_generator
    from .numpy import wrap_numpy_object   # ndarrays, numpy's functions and classes, torch.from_numpy
    from ..graph.dynamic import dims_for_tensor, int_is_dynamic, whitelisted
    from .. import config as config_mod
    from .functions.closure_aliasing import object_source
    _LATE_LOADED = True


def _wrap_new(ctx, obj: Any, source: Source | None) -> Value:
    if not _LATE_LOADED:
        _load_late()
    t = type(obj)
    if obj is markers.graph_break:
        return torch_ops.GraphBreakValue()
    marked = wrap_marked(ctx, obj, source)
    if marked is not None:
        return marked
    if isinstance(obj, CompiledFunction) and source is not None:
        # a compiled function called from compiled code is simply inlined
        _guard(ctx, Kind.TYPE_MATCH, source, t)
        fn_v = wrap(ctx, obj._fn, AttrSource(source, "_fn"))
        if obj._has_self:
            return functions.BoundMethodValue(fn_v, wrap(ctx, obj._self, AttrSource(source, "_self")))
        return fn_v
    special = distributed.wrap_special(ctx, obj, source)
    if special is not None:
        return special
    special = stdlib_wrap_special(ctx, obj, source)
    if special is not None:
        return special
    special = torch_function.wrap_special(ctx, obj) or vmap.wrap_special(ctx, obj) or \
        autocast.wrap_special(ctx, obj) or pytree.wrap_special(ctx, obj)
    if special is None:
        special = real_iterator.wrap(ctx, obj, source)
    if special is None:
        special = wrap_real_generator(ctx, obj, source)
    if special is not None:
        return special
    numpy_value = wrap_numpy_object(ctx, obj, source)
    if numpy_value is not None:
        return numpy_value
    if isinstance(obj, torch.Tensor):
        if source is None:
            raise Unsupported("a tensor constant reached from torch internals")
        torch_function.check_input_class(t)
        subclass = t not in (torch.Tensor, torch.nn.Parameter)
        if subclass:
            torch_function.state(ctx).used = True
        if not subclass and isinstance(source, ModuleMemberSource) and source.table in ("_parameters", "_buffers") \
                and ctx.config.module_parameters == "attributes" and source not in ctx.dynamic_sources \
                and not modules.is_generic_module_source(ctx, source) \
                and (source in ctx.policy.static_sources or not whitelisted(source)[0]):
            _guard(ctx, Kind.ID_MATCH, source, obj)
            _guard(ctx, Kind.TENSOR_MATCH, source, TensorMeta.of(obj, full=False))
            node, fake = ctx.graph.add_attr(obj, source)
        else:
            node, fake = ctx.graph.add_input(obj, source, dims_for_tensor(ctx.policy, obj, source))
            _guard(ctx, Kind.TENSOR_MATCH, source, TensorMeta.of(obj, fake=fake))
        if subclass and torch_function.is_traceable_wrapper(t):
            t = type(fake) if isinstance(fake, t) else t
        value = kinds.TensorValue(node, fake, cls=t, source=source)
        ctx.graph.note_tensor_value(value)
        return value
    if t is int and source is not None and -2 ** 63 <= obj < 2 ** 63:
        if int_is_dynamic(ctx.policy, source):
            from .tensors.symbolic import int_symbol
            _guard(ctx, Kind.TYPE_MATCH, source, t)
            return int_symbol(ctx, obj, source)
    if t in (int, float) and source is not None and (source in ctx.dynamic_sources or _crossed_a_break(ctx, t, source)):
        _guard(ctx, Kind.TYPE_MATCH, source, t)
        return kinds.SymbolicNumberValue(obj, source, ctx)
    if t in _CONSTANT_TYPES:
        _guard(ctx, Kind.CONSTANT_MATCH, source, obj)
        return ConstantValue(obj, source)
    if t in _META_CONSTANT_TYPES:
        _guard(ctx, Kind.CONSTANT_MATCH if t is torch.device else Kind.ID_MATCH, source, obj)
        return ConstantValue(obj, source)
    if t is torch.Size:
        if source is not None and _has_dynamic_item(ctx, source, len(obj)):
            # a size handed over a graph break whose items were dynamic there:
            # item by item, so those stay symbols (not one constant)
            _guard(ctx, Kind.TYPE_MATCH, source, t)
            _guard(ctx, Kind.LEN_MATCH, source, len(obj))
            return kinds.TupleValue([wrap(ctx, v, ItemSource(source, i)) for i, v in enumerate(obj)], cls=t, source=source)
        _guard(ctx, Kind.CONSTANT_MATCH, source, obj)
        return ConstantValue(obj, source)
    if t is list and source is not None:
        _guard(ctx, Kind.TYPE_MATCH, source, t)
        return containers.LazyListValue(obj, source, ctx)
    if t in (tuple, list) or (isinstance(obj, tuple) and hasattr(t, "_fields")):
        _guard(ctx, Kind.TYPE_MATCH, source, t)
        _guard(ctx, Kind.LEN_MATCH, source, len(obj))
        items = [wrap(ctx, v, ItemSource(source, i) if source is not None else None)
                 for i, v in enumerate(obj)]
        if t is list:
            return containers.ListValue(items, source=source)
        return containers.TupleValue(items, cls=t, source=source)
    if t is types.MappingProxyType and source is not None:
        from .containers.mapping_proxy import wrap_existing   # (a class __dict__, a proxy passed in)
        value = wrap_existing(ctx, obj, source)
        if value is not None:
            return value
    if t is dict:
        keys = list(obj)
        from .objects.per_call_classes import statement_of
        if not all(type(k) in (str, int, bool, float, bytes, type(None)) or isinstance(k, enum.Enum)
                   or (isinstance(k, type) and statement_of(k) is None) for k in keys):
            # (a class made per call is a key like an object: not a constant)
            from .containers.keys import wrap_by_position   # keys that are objects (tensors, modules...)
            return containers.DictValue(wrap_by_position(ctx, obj, source), source=source)
        _guard(ctx, Kind.TYPE_MATCH, source, t)
        _guard(ctx, Kind.DICT_KEYS, source, keys)
        items = {k: wrap(ctx, obj[k], ItemSource(source, k) if source is not None else None) for k in keys}
        return containers.DictValue(items, source=source)
    if t is set and all(type(k) in _CONSTANT_TYPES for k in obj):
        _guard(ctx, Kind.TYPE_MATCH, source, t)
        _guard(ctx, Kind.SET_EQUALS, source, frozenset(obj))
        return containers.SetValue(obj, source=source)
    if t is frozenset and all(type(k) in _CONSTANT_TYPES for k in obj):
        _guard(ctx, Kind.CONSTANT_MATCH, source, obj)
        return ConstantValue(obj, source)
    if t in (set, frozenset) and source is not None:
        from .containers.keys import set_keys_in_order, wrap_by_position   # elements that are objects (tensors, modules...)
        value = containers.SetValue(wrap_by_position(ctx, obj, source), source=source, cls=t)
        value.real_order = set_keys_in_order(ctx, obj, source)
        return value
    if t in (slice, range):
        _guard(ctx, Kind.CONSTANT_MATCH, source, obj)
        return ConstantValue(obj, source)
    if isinstance(obj, torch.nn.Module):
        return modules.wrap_module(ctx, obj, source)
    if t is types.CellType and source is not None:
        # a cell handed to a resume function: its contents are read lazily
        _guard(ctx, Kind.TYPE_MATCH, source, t)
        return functions.RealCellValue(obj, AttrSource(source, "cell_contents"))
    if isinstance(obj, types.ModuleType):
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return torch_ops.PythonModuleValue(obj, source)
    if obj is config_mod.patch:
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return kinds.ConfigPatchFunctionValue(source)
    if type(obj) is config_mod._Patch:
        from .directives.config_patch import check_changes
        check_changes(obj.changes)
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return kinds.ConfigPatchValue(dict(obj.changes), source)
    if obj is torch._check or obj is torch._check_is_size:
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return torch_ops.CheckValue(obj, source)
    if t is types.FunctionType and obj in vbuiltins.RULES:  # a Python function with a rule (inspect.signature)
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return vbuiltins.BuiltinValue(obj, source)
    if t is types.BuiltinMethodType and getattr(obj, "__name__", None) == "apply" and \
            isinstance(obj.__self__, type) and issubclass(obj.__self__, torch.autograd.Function):
        # a stored ``MyFn.apply`` on torch >= 2.14 (a C classmethod bound to the class)
        _guard(ctx, Kind.ID_MATCH, source, obj)
        cls_v = wrap(ctx, obj.__self__, AttrSource(source, "__self__") if source is not None else None)
        return functions.BoundMethodValue(autograd_function.ApplyValue(), cls_v)
    if t is types.FunctionType and obj is autograd_function.APPLY:
        return autograd_function.ApplyValue()   # (bind_attr guarded the classmethod)
    if t is types.FunctionType:
        from .objects.per_call_classes import reached_through_per_call_class
        per_call = source is not None and reached_through_per_call_class(ctx, source)
        # (a closure's cells are read through it; which cells it holds is
        # guarded where it matters: values/functions/closure_aliasing.py)
        # (or read from the compiled function's closure: a function made per
        # call of the code that made the compiled one, ``inner`` calling its
        # sibling ``f3``)
        nested_argument = isinstance(source, (LocalSource, ClosureSource)) and "<locals>" in obj.__qualname__
        from .functions.closure_aliasing import cells_bound
        if source is not None and (source in ctx.dynamic_sources or per_call or nested_argument) \
                and not torch_ops.is_graph_function(obj) and cells_bound(obj):
            # a function made anew on every call (api's automatic-generic
            # bookkeeping, a closure-free function defined inside another one
            # handed in as an argument -- a lambda its caller makes per call,
            # which torch.compile guards by code too -- or a method of a class made per call:
            # values/objects/per_call_classes.py): what a call of it depends on is its code and
            # globals; closure cells and defaults are read through it.  (A
            # method a class decorator generates per class, dataclass's
            # __init__ and __repr__, has equal code, not the same object.)
            _guard(ctx, Kind.TYPE_MATCH, source, t)
            _guard(ctx, Kind.CONSTANT_MATCH if per_call else Kind.ID_MATCH, AttrSource(source, "__code__"),
                   obj.__code__)
            _guard(ctx, Kind.ID_MATCH, AttrSource(source, "__globals__"), obj.__globals__)
            value = functions.UserFunctionValue(obj, source)
            value.guarded_by_code = True
            return value
        _guard(ctx, Kind.ID_MATCH, source, obj)
        if torch_ops.is_graph_function(obj):
            return torch_ops.TorchFunctionValue(obj, source)
        return functions.UserFunctionValue(obj, source)
    if t is types.MethodType:
        # A bound method is made anew on each attribute read: guard what it binds.
        self_v = wrap(ctx, obj.__self__, AttrSource(source, "__self__") if source is not None else None)
        if isinstance(self_v, torch_ops.GradModeValue) and obj.__func__.__name__ in ("__enter__", "__exit__"):
            return torch_ops._CtxMethod(self_v, obj.__func__.__name__)
        func_v = wrap(ctx, obj.__func__, AttrSource(source, "__func__") if source is not None else None)
        return functions.BoundMethodValue(func_v, self_v, source)
    if t is types.BuiltinMethodType and isinstance(getattr(obj, "__self__", None), torch.Tensor) \
            and source is not None:
        # ``tensor.add`` saved across a graph break
        return kinds.TensorMethodValue(wrap(ctx, obj.__self__, AttrSource(source, "__self__")), obj.__name__)
    if isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
                        torch._ops.OpOverloadPacket, torch._ops.OpOverload, functools.partial)) \
            or t.__name__ == "method-wrapper":
        _guard(ctx, Kind.ID_MATCH, source, obj)
        if torch_ops.is_graph_function(obj) and not _has_rule(obj):
            return torch_ops.TorchFunctionValue(obj, source)
        return vbuiltins.BuiltinValue(obj, source)
    if isinstance(obj, type):
        from .objects.per_call_classes import statement_of, wrap_per_call_class
        if statement_of(obj) is not None:   # made anew on every call by a class statement
            return wrap_per_call_class(ctx, obj, source)
        _guard(ctx, Kind.ID_MATCH, source, obj)
        if obj in torch_ops.GRAD_MODE_CLASSES:
            return torch_ops.GradModeClassValue(obj, source)
        return objects.ClassValue(obj, source)
    if t is types.CodeType:
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return ConstantValue(obj, source)
    if isinstance(obj, enum.Enum):
        _guard(ctx, Kind.ID_MATCH, source, obj)
        return ConstantValue(obj, source)
    ctx_value = torch_ops.wrap_context_object(ctx, obj, source)
    if ctx_value is not None:
        _guard(ctx, Kind.TYPE_MATCH, source, t)
        return ctx_value
    from .objects.thread_local import wrap_thread_local
    tl = wrap_thread_local(ctx, obj, source)
    if tl is not None:
        return tl
    return objects.wrap_object(ctx, obj, source)


def wrap_constant_result(result: Any) -> Value:
    """Wrap the result of folding a pure call on constants."""
    if type(result) in _CONSTANT_TYPES or isinstance(result, enum.Enum) or isinstance(result, _META_CONSTANT_TYPES + (torch.Size, range, slice)):
        return ConstantValue(result)
    if type(result) in (tuple, list):
        items = [wrap_constant_result(r) for r in result]
        return kinds.TupleValue(items) if type(result) is tuple else kinds.ListValue(items)
    if type(result) is dict:
        return kinds.DictValue({k: wrap_constant_result(v) for k, v in result.items()})
    if isinstance(result, (frozenset, set)):
        if isinstance(result, frozenset):
            return ConstantValue(result)
        return kinds.SetValue(result)   # a new set: mutable, its own Value
    np = sys.modules.get("numpy")
    if np is not None and isinstance(result, np.generic) and not isinstance(result, (np.object_, np.void)):
        return ConstantValue(result)   # a NumPy scalar (np.pi * np.float32(2)): immutable
    raise Unsupported(f"a folded call returned {type(result).__name__}")


def _crossed_a_break(ctx, t: type, source) -> bool:
    """A float on the stack of a resume function was computed by the
    residual Python of a graph break (``.item()``, ``float(t)``, a disabled
    helper): data, which changes from call to call.  It is symbolic from the
    first compile (a 0-d graph input where it meets a tensor) instead of a
    constant that would recompile on every new value."""
    from ..names import generated_prefix, stack_arg
    return t is float and isinstance(source, LocalSource) \
        and source.name.startswith(stack_arg(generated_prefix(ctx.fn.__code__), ""))


def _has_dynamic_item(ctx, source, n: int) -> bool:
    from ..graph.dynamic import int_is_dynamic
    return any(int_is_dynamic(ctx.policy, ItemSource(source, i)) for i in range(n))

