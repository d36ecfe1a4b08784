"""nn.Module instances inside traced code.

A module is guarded by identity; its parameters, buffers and submodules are
read through ``_parameters`` / ``_buffers`` / ``_modules`` (sources that skip
``nn.Module.__getattr__``), and calling it inlines its class's ``forward``
after guarding that no hooks are installed and ``forward`` is not patched on
the instance.
"""
from __future__ import annotations

import inspect
import types

import torch

from ... import upcalls
from ...diagnostics.errors import Unsupported, user_error
from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource, ModuleMemberSource, Source
from ..base import Value, LazyValue, concrete, realize
from ..constant import ConstantValue
from ..builder import wrap
from .. import kinds
from ...effects import DELETED

_DISTRIBUTED_KINDS = {"ddp": "DistributedDataParallel", "fsdp1": "FSDP1", "fsdp2": "sharded by FSDP2"}
_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks",
                 "_global_backward_hooks", "_global_backward_pre_hooks")


def wrap_module(ctx, mod: torch.nn.Module, source: Source | None) -> "ModuleValue":
    if isinstance(mod, torch.jit.ScriptModule):
        if source is None:
            raise Unsupported("torch.jit.ScriptModule inside a compiled function", hint=_SCRIPT_HINT)
        ctx.guards.add(Guard(Kind.ID_MATCH, source, mod))
        return ScriptModuleValue(mod, source)
    if upcalls.is_compiled_module_type(type(mod)):
        return _wrap_compiled_module(ctx, mod, source)
    if source is not None and is_fresh_module_arg(ctx, source):
        if source.name in _NEW_MODULE_ARGS.get(ctx.fn.__code__, ()):
            from .fresh_modules import wrap_fresh_arg   # its parameters are new too
            return wrap_fresh_arg(ctx, mod, source)
        _guard_fresh_module(ctx, mod, source)
        return ModuleValue(mod, source)
    if source is not None:
        if ctx.config.module_parameters == "attributes" and not is_generic_module_source(ctx, source):
            ctx.guards.add(Guard(Kind.ID_MATCH, source, mod))
        else:
            ctx.guards.add(Guard(Kind.TYPE_MATCH, source, type(mod)))
    return ModuleValue(mod, source)


_SCRIPT_HINT = "TorchScript modules run as they are; call them outside armature.compile"


class ScriptModuleValue(Value):
    """A TorchScript module: opaque.  Loading and passing it along are
    free; calling it or reading it is a graph break, so the code around
    the call is still compiled (the call runs natively between graphs)."""

    def __init__(self, mod, source):
        super().__init__(source)
        self.mod = mod

    def python_type(self):
        return type(self.mod)

    def truth(self, tx):
        return True

    def call(self, tx, args, kwargs):
        raise Unsupported("calling a torch.jit.ScriptModule inside a compiled function", hint=_SCRIPT_HINT)

    def getattr(self, tx, name):
        raise Unsupported(f"reading {name!r} of a torch.jit.ScriptModule inside a compiled function",
                          hint=_SCRIPT_HINT)

    def __repr__(self):
        return f"<script module {self.source}>"


class ModuleValue(Value):
    def __init__(self, mod: torch.nn.Module, source: Source | None):
        super().__init__(source)
        self.mod = mod
        #: plain attributes written in this trace (DELETED marks a delete)
        self.attrs: dict = {}
        #: for each name in ``attrs``: True when the write registered a
        #: member (then the name is not in the instance dict)
        self.write_kinds: dict = {}
        self._dict_view = None

    def python_type(self):
        return type(self.mod)

    def is_python_constant(self):
        return False

    def truth(self, tx):
        """``bool(module)``: the class's ``__bool__``, else its ``__len__``
        (Sequential, ModuleList, ModuleDict), else True, as CPython decides;
        nn.Module itself defines neither."""
        cls = type(self.mod)
        if getattr(cls, "__bool__", None) is not None or \
                getattr(cls, "__len__", None) is not None and not _builtin_container(cls, "__len__"):
            name = "__bool__" if getattr(cls, "__bool__", None) is not None else "__len__"
            out = concrete(tx, self.getattr(tx, name).call(tx, [], {}))
            if not out.is_python_constant():
                raise Unsupported(f"{cls.__name__}.{name} returned {out}")
            return bool(out.as_python_constant())
        if getattr(cls, "__len__", None) is not None:
            return self.length(tx) > 0
        return True

    # --- attributes ---------------------------------------------------------
    def _member(self, tx, table: str, name: str, obj) -> Value:
        src = ModuleMemberSource(self.source, name, table) if self.source is not None else None
        if src is not None and table != "_modules" and getattr(self.mod, "_armature_static", False):
            tx.ctx.policy.static_sources.add(src)   # armature.mark_static(module or its class)
        if src is not None and table != "_modules" and tx.ctx.config.skip_fsdp_guards \
                and getattr(self.mod, "_is_fsdp_managed_module", False) \
                and tx.ctx.config.module_parameters == "inputs":
            tx.ctx.guards.unguarded_tensors.add(src)   # (config.skip_fsdp_guards says what it risks)
        return wrap(tx.ctx, obj, src)

    def getattr(self, tx, name):
        mod = self.mod
        d = mod.__dict__
        if name == "__class__":
            return wrap(tx.ctx, type(mod), None)
        if name == "__dict__" and inspect.getattr_static(type(mod), "__dict__", None) is \
                inspect.getattr_static(torch.nn.Module, "__dict__"):
            if self._dict_view is None:
                self._dict_view = kinds.ModuleDictView(self)
            return self._dict_view
        deleted = False
        if name in self.attrs:
            v = self.attrs[name]
            if v is not DELETED:
                return v
            deleted = True  # deleted in this trace: the instance dict no longer has it
        cls_attr = inspect.getattr_static(type(mod), name, _MISSING)
        # data descriptors on the class win over the instance dict
        if cls_attr is not _MISSING and _is_data_descriptor(cls_attr):
            if isinstance(cls_attr, property):
                return kinds.UserFunctionValue(cls_attr.fget, None).call(tx, [self], {})
            raise Unsupported(f"descriptor {name!r} on {type(mod).__name__}")
        if name in d and not deleted:
            src = AttrSource(self.source, name) if self.source is not None else None
            value = d[name]
            if type(value) in (int, float) and src is not None:
                from .module_numbers import module_number
                return module_number(tx.ctx, value, src)
            return wrap(tx.ctx, value, src)
        if name in _MEMBER_METHODS and getattr(type(mod), name, None) is getattr(torch.nn.Module, name):
            return _MemberIterMethod(self, name)
        if name in _REGISTER_METHODS and getattr(type(mod), name, None) is getattr(torch.nn.Module, name) \
                and self.source is not None:
            return _RegisterMethod(self, name)
        for table in ("_parameters", "_buffers", "_modules"):
            t = d.get(table)
            if t is not None and name in t:
                return self._member(tx, table, name, t[name])
        if cls_attr is not _MISSING:
            if self.source is not None and not deleted:
                tx.ctx.guards.add(Guard(Kind.NOT_IN_DICT, self.source, name))
            # the class attribute, guarded on the class that defines it (a
            # method patched on the class after compiling recompiles)
            from ..objects.objects import bind_attr, find_class_attr
            raw, owner = find_class_attr(type(mod), name)
            cls_value = wrap(tx.ctx, type(mod), None)
            return bind_attr(tx, raw, owner, name, self, cls_value)
        if self.source is not None:  # absent now: guard that it stays absent
            tx.ctx.guards.add(Guard(Kind.NOT_IN_DICT, self.source, name))
            for table in ("_parameters", "_buffers", "_modules"):
                tx.ctx.guards.add(Guard(Kind.KEY_ABSENT, AttrSource(self.source, table), name))
        getattr_fn = inspect.getattr_static(type(mod), "__getattr__", None)
        if getattr_fn is not torch.nn.Module.__getattr__ and isinstance(getattr_fn, types.FunctionType):
            from ..objects.objects import find_class_attr
            raw, owner = find_class_attr(type(mod), "__getattr__")
            fv = kinds.wrap_class_attr(tx, type(mod), "__getattr__", raw, owner)
            return fv.call(tx, [self, ConstantValue(name)], {})
        raise user_error(AttributeError, f"{type(mod).__name__!r} object has no attribute {name!r}")

    def member(self, tx, name):
        """``nn.Module.__getattr__``: parameters, buffers, submodules."""
        d = self.mod.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            t = d.get(table)
            if t is not None and name in t:
                return self._member(tx, table, name, t[name])
        raise user_error(AttributeError, f"{type(self.mod).__name__!r} object has no attribute {name!r}")

    def _structural(self, tx, name, value) -> bool:
        """Check a write is one we can replay; True when it goes through
        nn.Module.__setattr__'s registration logic (a parameter, buffer or
        submodule is registered, replaced or deleted)."""
        mod = self.mod
        cls_attr = inspect.getattr_static(type(mod), name, _MISSING)
        if cls_attr is not _MISSING and _is_data_descriptor(cls_attr):
            raise Unsupported(f"writing the descriptor {type(mod).__name__}.{name}")
        if self.source is None:
            raise Unsupported("writing an attribute of a module without a source")
        registered = any(name in mod.__dict__.get(t, {}) for t in ("_parameters", "_buffers", "_modules")) \
            or name in getattr(self, "pending_members", ())
        registers = isinstance(value, ModuleValue) or isinstance(value, kinds.TensorValue) and \
            issubclass(value.python_type(), torch.nn.Parameter)
        if (registered or registers) and value is not None and \
                not isinstance(value, (kinds.TensorValue, ModuleValue)) and \
                not (value.is_python_constant() and value.as_python_constant() is None):
            raise Unsupported(f"assigning {value} to the registered member {name!r} of {type(mod).__name__}")
        return registered or registers

    def _custom(self, tx, dunder: str):
        """The class's own ``__setattr__``/``__delattr__`` (a Python
        function: inlined), or None for nn.Module's."""
        raw = inspect.getattr_static(type(self.mod), dunder)
        if raw is getattr(torch.nn.Module, dunder):
            return None
        if not isinstance(raw, types.FunctionType):
            raise Unsupported(f"the C {dunder} of {type(self.mod).__name__}")
        from ..objects.objects import find_class_attr
        raw, owner = find_class_attr(type(self.mod), dunder)
        return kinds.wrap_class_attr(tx, type(self.mod), dunder, raw, owner)

    def setattr(self, tx, name, value):
        custom = self._custom(tx, "__setattr__")
        if custom is not None:
            custom.call(tx, [self, ConstantValue(name), value], {})
            return
        self.standard_setattr(tx, name, value)

    def standard_setattr(self, tx, name, value):
        """``nn.Module.__setattr__`` itself (also what ``super().__setattr__`` reaches)."""
        from ...effects import AttrStore
        value = realize(tx.ctx, value)  # nn.Module.__setattr__ depends on what it is
        structural = self._structural(tx, name, value)
        self.attrs[name] = value
        self.write_kinds[name] = structural
        if structural:  # replayed through nn.Module.__setattr__, which registers it
            self.structure_changed = True
        tx.ctx.effects.record(AttrStore(self, name, value, via_module=structural))

    def store_in_dict(self, tx, name, value):
        """``mod.__dict__[name] = value``: no registration; the instance
        dict wins over ``nn.Module.__getattr__`` when the name is read."""
        from ...effects import AttrStore
        if self.source is None:
            raise Unsupported("writing the __dict__ of a module without a source")
        cls_attr = inspect.getattr_static(type(self.mod), name, _MISSING)
        if cls_attr is not _MISSING and _is_data_descriptor(cls_attr):
            raise Unsupported(f"writing {type(self.mod).__name__}.__dict__[{name!r}] under a descriptor")
        self.attrs[name] = value
        self.write_kinds[name] = False
        tx.ctx.effects.record(AttrStore(self, name, value, via_dict=True))

    def delattr(self, tx, name):
        custom = self._custom(tx, "__delattr__")
        if custom is not None:
            custom.call(tx, [self, ConstantValue(name)], {})
            return
        self.standard_delattr(tx, name)

    def standard_delattr(self, tx, name):
        from ...effects import DELETED, AttrDelete
        structural = self._structural(tx, name, None)
        if name not in self.attrs and name not in self.mod.__dict__ and not structural:
            raise user_error(AttributeError, name)
        self.attrs[name] = DELETED
        self.write_kinds[name] = structural
        if structural:
            self.structure_changed = True
        tx.ctx.effects.record(AttrDelete(self, name, via_module=structural))

    # --- container protocol of Sequential / ModuleList / ModuleDict ---------------
    def _children(self):
        return list(self.mod._modules.items())

    def unpack(self, tx):
        mod = self.mod
        if isinstance(mod, (torch.nn.Sequential, torch.nn.ModuleList)):
            self._guard_len(tx)
            return [self._member(tx, "_modules", k, m) for k, m in self._children()]
        if isinstance(mod, torch.nn.ModuleDict):
            self._guard_len(tx)
            return [ConstantValue(k) for k in mod._modules]
        if isinstance(mod, torch.nn.ParameterList):
            self._guard_params(tx)
            return [self._member(tx, "_parameters", k, p) for k, p in mod._parameters.items()]
        if isinstance(mod, torch.nn.ParameterDict):
            self._guard_params(tx)
            return [ConstantValue(k) for k in mod._parameters]
        raise Unsupported(f"iterating over {type(mod).__name__}")

    def _guard_len(self, tx):
        # the module itself is ID-guarded; its _modules dict may still change
        if self.source is not None:
            tx.ctx.guards.add(Guard(Kind.DICT_KEYS, AttrSource(self.source, "_modules"), list(self.mod._modules)))

    def _guard_params(self, tx):
        if self.source is not None:
            tx.ctx.guards.add(Guard(Kind.DICT_KEYS, AttrSource(self.source, "_parameters"),
                                    list(self.mod._parameters)))

    def length(self, tx):
        return len(self.unpack(tx))

    def getitem(self, tx, index: Value) -> Value:
        mod = self.mod
        idx = index.as_python_constant()
        if isinstance(mod, torch.nn.ModuleDict):
            self._guard_len(tx)
            return self._member(tx, "_modules", idx, mod._modules[idx])
        if isinstance(mod, (torch.nn.Sequential, torch.nn.ModuleList)):
            items = self.unpack(tx)
            if isinstance(idx, slice):
                return ModuleSliceValue(self, idx, items[idx])
            try:
                return items[idx]
            except IndexError:
                raise user_error(IndexError, f"index {idx} is out of range")
        if isinstance(mod, (torch.nn.ParameterList,)):
            items = self.unpack(tx)
            if isinstance(idx, slice):
                return ModuleSliceValue(self, idx, items[idx])
            return items[idx]
        if isinstance(mod, torch.nn.ParameterDict):
            return self._member(tx, "_parameters", idx, mod._parameters[idx])
        raise Unsupported(f"indexing {type(mod).__name__}")

    def contains(self, tx, item):
        if isinstance(self.mod, (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ParameterList)):
            from ..operations.operators import is_same
            return any(is_same(tx, item, m) for m in self.unpack(tx))
        k = item.as_python_constant()
        if isinstance(self.mod, torch.nn.ModuleDict):
            self._guard_len(tx)
            return k in self.mod._modules
        if isinstance(self.mod, torch.nn.ParameterDict):
            self._guard_params(tx)
            return k in self.mod._parameters
        raise Unsupported(f"`in` on {type(self.mod).__name__}")

    # --- calls --------------------------------------------------------------
    def check_no_hooks(self, tx) -> None:
        mod = self.mod
        if any(getattr(mod, h, None) for h in _HOOK_DICTS) or _global_hooks():
            raise Unsupported(f"{type(mod).__name__} has hooks installed")
        if self.source is not None:
            for h in _HOOK_DICTS:
                tx.ctx.guards.add(Guard(Kind.EMPTY, AttrSource(self.source, h)))
        tx.ctx.guard_global_hooks()

    def _hooks(self, tx, table: str) -> list[tuple[int, Value]]:
        """The hooks of one of the module's hook dicts, guarded: empty, or
        the same keys and the same hook objects."""
        d = getattr(self.mod, table)
        if self.source is None:
            if d:
                raise Unsupported("hooks on a module without a source")
            return []
        src = AttrSource(self.source, table)
        if not d:
            tx.ctx.guards.add(Guard(Kind.EMPTY, src))
            return []
        from ...guards.sources import ItemSource
        tx.ctx.guards.add(Guard(Kind.DICT_KEYS, src, list(d)))
        return [(k, wrap(tx.ctx, h, ItemSource(src, k))) for k, h in d.items()]

    def _global_hooks(self, tx, name: str) -> list[tuple[int, Value]]:
        d = getattr(torch.nn.modules.module, name)
        from ...guards.sources import ItemSource, global_source
        src = global_source(torch.nn.modules.module.__dict__, name, own=False)
        if not d:
            tx.ctx.guards.add(Guard(Kind.EMPTY, src))
            return []
        tx.ctx.guards.add(Guard(Kind.DICT_KEYS, src, list(d)))
        return [(k, wrap(tx.ctx, h, ItemSource(src, k))) for k, h in d.items()]

    def _keys(self, tx, table: str) -> set:
        """Keys of a with_kwargs/always_called dict, guarded."""
        d = getattr(self.mod, table, {})
        if self.source is not None:
            tx.ctx.guards.add(Guard(Kind.DICT_KEYS, AttrSource(self.source, table), list(d)))
        return set(d)

    def call(self, tx, args, kwargs):
        """``nn.Module.__call__``: forward pre-hooks, forward, forward hooks,
        in the order and with the result rules of ``Module._call_impl``."""
        mod = self.mod
        from ...runtime.distributed import kind_of
        kind = kind_of(mod)
        if kind is not None:
            raise Unsupported(
                f"calling {type(mod).__name__} ({_DISTRIBUTED_KINDS[kind]}): its hooks and collectives run "
                "as Python, as eagerly; its math is compiled on its own",
                hint="a call of a DDP or FSDP module is a graph break by design, as under torch.compile")
        call = inspect.getattr_static(type(mod), "__call__")
        if call is not torch.nn.Module.__call__:
            if isinstance(call, types.FunctionType):
                from ..objects.objects import find_class_attr
                raw, owner = find_class_attr(type(mod), "__call__")
                fv = kinds.wrap_class_attr(tx, type(mod), "__call__", raw, owner)  # (its closure has a source)
                return fv.call(tx, [self, *args], kwargs)
            raise Unsupported(f"the C __call__ of {type(mod).__name__}")
        return self.standard_call(tx, args, kwargs)

    def standard_call(self, tx, args, kwargs):
        """``nn.Module.__call__`` itself (also what ``super().__call__`` reaches);
        the nodes it makes are recorded for graph/regions.py (which may
        compile identical calls of one class once)."""
        from ...graph.regions import module_key, region
        with region(tx, module_key(self.mod)):
            return self._standard_call(tx, args, kwargs)

    def _standard_call(self, tx, args, kwargs):
        mod = self.mod
        m = torch.nn.modules.module
        if self.source is not None:
            for h in ("_backward_hooks", "_backward_pre_hooks"):
                if getattr(mod, h):
                    raise Unsupported(f"backward hooks on {type(mod).__name__}",
                                      hint="backward hooks inside compiled code are not supported yet")
                tx.ctx.guards.add(Guard(Kind.EMPTY, AttrSource(self.source, h)))
        elif mod._backward_hooks or mod._backward_pre_hooks:
            raise Unsupported(f"backward hooks on {type(mod).__name__}")
        if hasattr(mod, "_initialize_hook") and isinstance(mod, torch.nn.modules.lazy.LazyModuleMixin):
            initialize_lazy(tx, self, args, kwargs)
        m = torch.nn.modules.module
        for name in ("_global_backward_hooks", "_global_backward_pre_hooks"):
            if getattr(m, name):
                raise Unsupported("global module backward hooks")
        tx.ctx.guard_global_hooks(only=("_global_backward_hooks", "_global_backward_pre_hooks"))

        pre = self._global_hooks(tx, "_global_forward_pre_hooks") + self._hooks(tx, "_forward_pre_hooks")
        if pre:
            with_kwargs = self._keys(tx, "_forward_pre_hooks_with_kwargs")
            for hook_id, hook in pre:
                if hook_id in with_kwargs:
                    res = hook.call(tx, [self, kinds.TupleValue(list(args)), kinds.DictValue(dict(kwargs))], {})
                    if not _is_none(res):
                        parts = tx.iterate(res) if res.python_type() is tuple else None
                        if parts is None or len(parts) != 2:
                            raise Unsupported("forward pre-hook must return None or (args, kwargs)")
                        args = tx.iterate(parts[0])
                        kw = parts[1].realize(tx.ctx) if hasattr(parts[1], "realize") else parts[1]
                        if not isinstance(kw, kinds.DictValue):
                            raise Unsupported("forward pre-hook returned kwargs that are not a dict")
                        kwargs = dict(kw.items)
                else:
                    res = hook.call(tx, [self, kinds.TupleValue(list(args))], {})
                    if not _is_none(res):
                        args = tx.iterate(res) if res.python_type() is tuple else [res]
        forward = self.getattr(tx, "forward")
        with tx.ctx.graph.module_call(mod):   # (nn_module_stack metadata, for export)
            result = forward.call(tx, list(args), dict(kwargs))
        post = self._global_hooks(tx, "_global_forward_hooks") + self._hooks(tx, "_forward_hooks")
        if post:
            with_kwargs = self._keys(tx, "_forward_hooks_with_kwargs") | set(
                getattr(m, "_global_forward_hooks_with_kwargs", {}))
            for hook_id, hook in post:
                if hook_id in with_kwargs:
                    res = hook.call(tx, [self, kinds.TupleValue(list(args)), kinds.DictValue(dict(kwargs)), result], {})
                else:
                    res = hook.call(tx, [self, kinds.TupleValue(list(args)), result], {})
                if not _is_none(res):
                    result = res
        return result

    def __repr__(self):
        return f"<module {type(self.mod).__name__}{' ' + str(self.source) if self.source else ''}>"


#: substrings of the names of torch functions that draw random numbers
_RANDOM_OPS = ("rand", "dropout", "bernoulli", "normal", "multinomial", "uniform", "exponential", "geometric",
               "cauchy", "poisson", "rrelu")


def _draws_random_numbers(graph) -> bool:
    for node in graph.graph.nodes:
        if node.op in ("call_function", "call_method", "call_module"):
            name = node.target if isinstance(node.target, str) else getattr(node.target, "__name__", "")
            if any(r in str(name).lower() for r in _RANDOM_OPS):
                return True
    return False


def initialize_lazy(tx, value: ModuleValue, args, kwargs) -> None:
    """The first call of a lazy module (``nn.LazyLinear``...): its
    initialisation hook runs now, while tracing, on the call's fake inputs,
    as eager runs it at the call (parameters materialised from the input's
    sizes, ``reset_parameters`` drawing from torch's RNG); the module then
    is the module it becomes (``cls_to_become``) and is traced as such, so
    a lazy model compiles into one graph, also under ``fullgraph=True``.

    Faithful while nothing earlier in the graph draws random numbers (they
    would be drawn after the initialisation instead of before it) and the
    inputs' sizes are static: otherwise the call is a graph break, and runs
    natively."""
    mod = value.mod
    what = f"initialising the lazy module {type(mod).__name__}"
    if value.source is None:
        raise Unsupported(f"{what} without a source")
    if _draws_random_numbers(tx.ctx.graph):
        raise Unsupported(f"{what} after random numbers were drawn in the same graph",
                          hint="eager draws its initial weights at the call; call the model once before "
                               "compiling to keep the order of random draws")

    def fake_of(v):
        v = realize(tx.ctx, v)
        if isinstance(v, kinds.TensorValue):
            if any(isinstance(d, torch.SymInt) for d in v.fake.size()):
                raise Unsupported(f"{what} from an input with dynamic sizes")
            return v.fake
        if v.is_python_constant():
            return v.as_python_constant()
        if isinstance(v, kinds.ListValue) or (isinstance(v, kinds.TupleValue) and v.cls is tuple):
            # (a list or tuple of inputs: the hook sees the same structure of fakes)
            return type(v.python_type()())(fake_of(item) for item in v.items)
        if isinstance(v, kinds.DictValue) and v.cls is dict and all(isinstance(k, (str, int)) for k in v.items):
            return {k: fake_of(item) for k, item in v.items.items()}
        raise Unsupported(f"{what} from {v}")

    fake_args = [fake_of(a) for a in args]
    fake_kwargs = {k: fake_of(v) for k, v in kwargs.items()}
    try:
        mod._infer_parameters(mod, fake_args, fake_kwargs)
    except Exception as e:  # noqa: BLE001  (the native call raises it, or initialises)
        raise Unsupported(f"{what}: {type(e).__name__}: {e}")


def construct_module(tx, cls_value, args, kwargs) -> "NewModuleValue":
    """``nn.ReLU()`` inside the frame (DistilBERT's classification head calls
    ``nn.ReLU()(pooled_output)`` in forward).

    Supported for torch.nn's own classes built from constants (and from
    modules made in the frame).  A module without parameters or buffers:
    its constructor is deterministic and touches nothing outside the new
    object (no RNG, no global state), so the module is built for real while
    tracing and read like any module (its forward inlined); if it escapes
    the frame (returned, stored), the residual code builds a fresh one with
    the same arguments, as eager does on every call.  Writes to its
    attributes are not modelled (a graph break).  A module with parameters
    or buffers, or one holding modules made in the frame, is built on every
    call by the transformed function's setup (values/nn/fresh_modules.py)."""
    cls = cls_value.cls
    what = f"creating the module {cls.__qualname__} inside a compiled function"
    hint = "create modules outside and pass them in"
    from . import fresh_modules, user_module_construction
    if type(cls) is type and user_module_construction.is_user_module_class(cls):
        user_module_construction.audit(tx, cls_value, args, kwargs, what)
    elif type(cls) is not type or not cls.__module__.startswith("torch.nn."):
        raise Unsupported(what, hint=hint + " (modules created in the frame: torch.nn's own classes and user "
                                            "subclasses of nn.Module)")
    args = [concrete(tx, a) for a in args]
    kwargs = {k: concrete(tx, v) for k, v in kwargs.items()}
    real_args, real_kwargs, inner = fresh_modules.template_args(tx, args, kwargs, what)
    try:
        mod = fresh_modules.build_template(cls, real_args, real_kwargs)
    except Exception as e:  # noqa: BLE001  (eager raises it: the break runs the call natively)
        raise Unsupported(f"{what}: {type(e).__name__}: {e}")
    if inner or next(mod.parameters(), None) is not None or next(mod.buffers(), None) is not None:
        # built by the transformed function's setup on every call (values/nn/fresh_modules.py)
        return fresh_modules.new_module(tx, mod, cls_value, args, kwargs, inner, what)
    return NewModuleValue(mod, cls_value, args, kwargs)


def emit_construct(out, cls_value, args, kwargs) -> None:
    """Residual code that builds a module as the frame did: ``cls(*args, **kwargs)``."""
    out.instr("PUSH_NULL")
    out.load_const(_construct)
    out.reconstruct(cls_value)
    for a in args:
        out.reconstruct(a)
    out.instr("BUILD_TUPLE", len(args))
    out.build_map(kwargs)
    out.call(3)


def _construct(cls, args, kwargs):
    return cls(*args, **kwargs)


class NewModuleValue(ModuleValue):
    """A torch.nn module without parameters or buffers created in the frame
    (:func:`construct_module`).  ``mod`` is the instance built while tracing,
    private to the trace; residual code that needs the object builds a new
    one from the same class and arguments."""

    def __init__(self, mod, cls_value, args, kwargs):
        super().__init__(mod, None)
        self.cls_value, self.args, self.kwargs = cls_value, args, kwargs
        #: conversions made on it (``.eval()``...), (name, args, kwargs) of
        #: constants: made again on a rebuilt one (values/nn/fresh_module_methods.py)
        self.calls: list = []

    def getattr(self, tx, name):
        from .fresh_module_methods import conversion_method
        method = conversion_method(tx, self, name)
        return method if method is not None else super().getattr(tx, name)

    def reconstruct(self, out):
        if self.source is not None:   # built by the setup (it went into a module made there)
            self.source.emit(out)
            return
        from .fresh_module_methods import emit_with_calls
        emit_with_calls(out, lambda o: emit_construct(o, self.cls_value, self.args, self.kwargs), self.calls)

    def __repr__(self):
        return f"<new module {type(self.mod).__name__}>"


class ModuleSliceValue(Value):
    """``seq[a:b]`` of a Sequential/ModuleList (or ``seq[::-1][:2]``, a
    slice of a slice): eager makes a new container of the same modules;
    here it is that list of modules (calling a Sequential slice chains
    them), rebuilt by slicing again, slice after slice, if it escapes.  A
    rebuilt one is a new object on every call: handed to a resume function
    it is guarded by what the code relies on, not by identity
    (``note_fresh_modules``)."""

    def __init__(self, parent: ModuleValue, sl: slice | list, items: list):
        super().__init__()
        self.parent, self.items = parent, items
        self.slices = list(sl) if isinstance(sl, list) else [sl]

    def python_type(self):
        return type(self.parent.mod)

    def unpack(self, tx):
        return list(self.items)

    def length(self, tx):
        return len(self.items)

    def truth(self, tx):
        return bool(self.items)

    def getitem(self, tx, index):
        idx = concrete(tx, index).as_python_constant()
        if isinstance(idx, slice):
            return ModuleSliceValue(self.parent, self.slices + [idx], self.items[idx])
        try:
            return self.items[idx]
        except IndexError:
            raise user_error(IndexError, f"index {idx} is out of range")

    def call(self, tx, args, kwargs):
        if not isinstance(self.parent.mod, torch.nn.Sequential):
            raise user_error(TypeError, f"'{type(self.parent.mod).__name__}' object is not callable")
        if kwargs or len(args) != 1:
            raise Unsupported("calling a Sequential slice with more than one argument")
        x = args[0]
        for m in self.items:
            x = m.call(tx, [x], {})
        return x

    def reconstruct(self, out):
        out.reconstruct(self.parent)
        for sl in self.slices:
            out.load_const(sl)
            out.instr("BINARY_SUBSCR")


def _builtin_container(cls: type, name: str) -> bool:
    """Whether ``cls.name`` is torch.nn's own (a container's ``__len__``)."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__module__.startswith("torch.nn.")
    return False


def _is_none(v) -> bool:
    return v.is_python_constant() and v.as_python_constant() is None


_MEMBER_METHODS = frozenset({
    "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
    "modules", "named_modules"})


class _MemberIterMethod(Value):
    """``module.parameters()`` and friends (nn.Module's own implementations):
    evaluated on the real module, each member wrapped with a source that
    walks ``_modules``/``_parameters``/``_buffers``, and the structure of
    every visited module guarded."""

    def __init__(self, owner: "ModuleValue", name: str):
        super().__init__()
        self.owner, self.name = owner, name

    def python_type(self):
        return types.MethodType

    def call(self, tx, args, kwargs):
        from ..containers.containers import unwrap_constants
        a, k = unwrap_constants(args, kwargs, what=f"Module.{self.name}()")
        owner = self.owner
        if owner.source is None:
            raise Unsupported(f"Module.{self.name}() on a module without a source")
        if getattr(owner, "structure_changed", False):
            raise Unsupported(f"Module.{self.name}() after members were registered or removed in this frame")
        mod = owner.mod
        # sources of every submodule by dotted path; guard each one's structure
        paths = {"": owner.source}
        for path, sub in torch.nn.Module.named_modules(mod, remove_duplicate=False):
            if path:
                parent, _, leaf = path.rpartition(".")
                paths[path] = ModuleMemberSource(paths[parent], leaf, "_modules")
            src = paths[path]
            for table in ("_parameters", "_buffers", "_modules"):
                tx.ctx.guards.add(Guard(Kind.DICT_KEYS, AttrSource(src, table), list(getattr(sub, table))))
        try:
            items = list(getattr(torch.nn.Module, self.name)(mod, *a, **k))  # nn.Module's own
        except Exception as e:
            raise Unsupported(f"Module.{self.name}() raised {type(e).__name__}: {e}")
        owners = {id(m): p for p, m in torch.nn.Module.named_modules(mod, remove_duplicate=False)}
        out = []
        from .fresh_modules import member_of
        for item in items:
            name, obj = item if isinstance(item, tuple) else (None, item)
            if isinstance(owner, kinds.FreshModuleValue):   # its members are new objects on every call
                v = member_of(tx, owner, obj)
            elif isinstance(obj, torch.nn.Module):
                src = paths[owners[id(obj)]] if id(obj) in owners else None
                v = wrap(tx.ctx, obj, src)
            else:
                # lazy: a parameter becomes part of the graph only when the
                # code uses it (``next(self.parameters()).dtype`` reads one)
                src = _member_source(mod, paths, obj)
                v = LazyValue(obj, src, tx.ctx) if src is not None else wrap(tx.ctx, obj, src)
            out.append(kinds.TupleValue([ConstantValue(name), v]) if name is not None else v)
        return kinds.IteratorValue(out)


_REGISTER_METHODS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})


class _RegisterMethod(Value):
    """``module.register_buffer(name, t)`` and friends inside the frame: the
    member is visible to the rest of the trace at once, and the call itself
    is replayed (with nn.Module's own checks) as a side effect."""

    def __init__(self, owner: "ModuleValue", name: str):
        super().__init__()
        self.owner, self.name = owner, name

    def call(self, tx, args, kwargs):
        from ...effects import MethodCall
        args = [realize(tx.ctx, a) for a in args]
        kwargs = {k: realize(tx.ctx, v) for k, v in kwargs.items()}
        member = args[0].as_python_constant() if args else kwargs["name"].as_python_constant()
        value = args[1] if len(args) > 1 else kwargs.get("tensor", kwargs.get("param", kwargs.get("module")))
        if not isinstance(member, str) or not member or "." in member:
            raise Unsupported(f"Module.{self.name}() with the name {member!r}")
        if value is None or not (isinstance(value, (kinds.TensorValue, ModuleValue)) or
                                 value.is_python_constant() and value.as_python_constant() is None):
            raise Unsupported(f"Module.{self.name}() of {value}")
        owner = self.owner
        owner.attrs[member] = value
        owner.structure_changed = True
        owner.pending_members = getattr(owner, "pending_members", set()) | {member}
        tx.ctx.effects.record(MethodCall(owner, self.name, list(args), dict(kwargs)))
        return ConstantValue(None)


def _member_source(mod, paths, obj):
    for path, sub in torch.nn.Module.named_modules(mod, remove_duplicate=False):
        for table in ("_parameters", "_buffers"):
            for k, t in getattr(sub, table).items():
                if t is obj:
                    return ModuleMemberSource(paths[path], k, table)
    raise Unsupported("a module member that cannot be located")


def _global_hooks() -> bool:
    m = torch.nn.modules.module
    return any(getattr(m, h, None) for h in _GLOBAL_HOOKS)


class _Missing:
    pass


_MISSING = _Missing()


def _is_data_descriptor(obj) -> bool:
    t = type(obj)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


# --- containers made afresh on every call, handed across a graph break ------

#: resume code object -> names of its arguments that receive a module
#: container rebuilt by the residual code on every call (a slice of a
#: ModuleList, a module created in the frame)
_FRESH_MODULE_ARGS: dict = {}
#: the subset of those whose members are made afresh too (a module with
#: parameters built in the frame, values/nn/fresh_modules.py)
_NEW_MODULE_ARGS: dict = {}


def note_fresh_modules(resume_code, named_values, new_names=()) -> None:
    """Called at a graph break for the values handed to a resume function:
    remember which arguments are modules the residual code makes anew on
    every call.  An identity guard on them would fail on every call (a
    recompile per call until the limit); they are guarded by type, keys and
    members instead (:func:`_guard_fresh_module`)."""
    fresh, new = set(), set(new_names)   # (new_names: modules built natively at the break)
    for name, v in named_values:
        if type(v) is LazyValue:
            v = v._realized
        if isinstance(v, ModuleSliceValue) and isinstance(v.parent, kinds.FreshModuleValue):
            new.add(name)
        elif isinstance(v, kinds.FreshModuleValue):
            new.add(name)
        elif isinstance(v, (ModuleSliceValue, NewModuleValue)):
            fresh.add(name)
    if new:
        _NEW_MODULE_ARGS.setdefault(resume_code, set()).update(new)
    if fresh or new:
        _FRESH_MODULE_ARGS.setdefault(resume_code, set()).update(fresh | new)


def is_generic_module_source(ctx, source) -> bool:
    """Whether ``source`` is, or is reached through, a module the cache saw
    as different instances of one class between calls (api's automatic
    generic modules): guarded by type, its parameters graph inputs."""
    dyn = ctx.dynamic_sources
    if not dyn:
        return False
    s = source
    while s is not None:
        if s in dyn and not (isinstance(s, ModuleMemberSource) and s.table in ("_parameters", "_buffers")):
            return True
        s = getattr(s, "base", None)
    return False


def is_fresh_module_arg(ctx, source) -> bool:
    from ...guards.sources import LocalSource
    if not isinstance(source, LocalSource):
        return False
    names = _FRESH_MODULE_ARGS.get(getattr(ctx.fn, "__code__", None))
    return bool(names) and source.name in names


def _guard_fresh_module(ctx, mod, source) -> None:
    """What code can rely on in a container made afresh: its class, its
    member tables' keys (length, order) and the identity of each member
    (their parameters may be graph attributes).  Everything else it reads
    (attributes, hooks) is guarded where it is read."""
    ctx.guards.add(Guard(Kind.TYPE_MATCH, source, type(mod)))
    for table in ("_modules", "_parameters", "_buffers"):
        ctx.guards.add(Guard(Kind.DICT_KEYS, AttrSource(source, table), list(getattr(mod, table))))


# --- compiled modules inside compiled code ----------------------------------

def _wrap_compiled_module(ctx, mod, source) -> "CompiledModuleValue":
    """An armature-compiled module called from compiled code is traced as
    the module it wraps (composition: one graph, no compile of its own)."""
    if source is not None:
        if ctx.config.module_parameters == "attributes" and not is_generic_module_source(ctx, source):
            ctx.guards.add(Guard(Kind.ID_MATCH, source, mod))
        else:   # (the wrapper's class; the module it wraps is guarded as any module)
            ctx.guards.add(Guard(Kind.TYPE_MATCH, source, type(mod)))
    inner = wrap(ctx, mod.__dict__["_orig_mod"], AttrSource(source, "_orig_mod") if source is not None else None)
    return CompiledModuleValue(mod, inner, source)


class CompiledModuleValue(Value):
    """An ``armature.compile(module)`` wrapper met while tracing.  Calls and
    attribute reads go to the wrapped module, as the wrapper forwards them;
    so do its truth, ``len()``, iteration, indexing and ``in``, which the
    wrapper's class passes on exactly where the module's class has them
    (api._protocol_class)."""

    def __init__(self, wrapper, inner: ModuleValue, source):
        super().__init__(source)
        self.wrapper, self.inner = wrapper, inner

    def python_type(self):
        return type(self.wrapper)

    def is_python_constant(self):
        return False

    def truth(self, tx):
        return self.inner.truth(tx)

    def length(self, tx):
        return self.inner.length(tx)

    def unpack(self, tx):
        return self.inner.unpack(tx)

    def getitem(self, tx, index):
        return self.inner.getitem(tx, index)

    def contains(self, tx, item):
        return self.inner.contains(tx, item)

    def _check_own_hooks(self, tx) -> None:
        w = self.wrapper
        if w._forward_hooks or w._forward_pre_hooks or w._backward_hooks or w._backward_pre_hooks:
            raise Unsupported("hooks registered on the armature-compiled wrapper of a module")
        if self.source is not None:
            for h in _HOOK_DICTS:
                tx.ctx.guards.add(Guard(Kind.EMPTY, AttrSource(self.source, h)))

    def call(self, tx, args, kwargs):
        self._check_own_hooks(tx)
        return self.inner.call(tx, args, kwargs)

    def getattr(self, tx, name):
        if name == "__class__":
            return wrap(tx.ctx, type(self.wrapper), None)
        if name == "_orig_mod":
            return self.inner
        if name == "forward":
            return _CompiledForward(self)
        if name in _HOOK_DICTS:
            return wrap(tx.ctx, getattr(self.wrapper, name),
                        AttrSource(self.source, name) if self.source is not None else None)
        return self.inner.getattr(tx, name)

    def __repr__(self):
        return f"<compiled module {type(self.inner.mod).__name__}>"


class _CompiledForward(Value):
    """``compiled_module.forward``: the wrapper's forward calls the wrapped
    module (hooks included), as ``CompiledModule.forward`` does."""

    def __init__(self, owner: CompiledModuleValue):
        super().__init__()
        self.owner = owner

    def python_type(self):
        return types.MethodType

    def call(self, tx, args, kwargs):
        return self.owner.inner.call(tx, args, kwargs)


class ModuleStandardWrite(Value):
    """``super().__setattr__`` / ``super().__delattr__`` reaching
    nn.Module's own (from a module class's custom one, inlined)."""

    def __init__(self, module: ModuleValue, name: str):
        super().__init__()
        self.module, self.name = module, name

    def call(self, tx, args, kwargs):
        if kwargs or len(args) != (2 if self.name == "__setattr__" else 1):
            raise user_error(TypeError, f"{self.name}() takes the wrong number of arguments")
        key = concrete(tx, args[0])
        if not (key.is_python_constant() and type(key.as_python_constant()) is str):
            raise Unsupported(f"nn.Module.{self.name} with a name that is not a constant string")
        if self.name == "__setattr__":
            self.module.standard_setattr(tx, key.as_python_constant(), args[1])
        else:
            self.module.standard_delattr(tx, key.as_python_constant())
        return ConstantValue(None)
