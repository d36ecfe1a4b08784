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

from ..diagnostics.errors import Unsupported, UserException, user_error
from ..guards.guard import Guard, Kind
from ..guards.sources import AttrSource, ModuleMemberSource, Source
from .base import Value
from .constant import ConstantValue

_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks",
                 "_global_backward_hooks", "_global_backward_pre_hooks")


def wrap_module(ctx, mod: torch.nn.Module, source: Source | None) -> "ModuleValue":
    if isinstance(mod, torch.jit.ScriptModule):
        raise Unsupported("torch.jit.ScriptModule inside a compiled function",
                          hint="TorchScript modules run as they are; call them outside armature.compile")
    if source is not None:
        ctx.guards.add(Guard(Kind.ID_MATCH, source, mod))
    return ModuleValue(mod, source)


class ModuleValue(Value):
    def __init__(self, mod: torch.nn.Module, source: Source | None):
        super().__init__(source)
        self.mod = mod
        #: plain attributes written in this trace (DELETED marks a delete)
        self.attrs: dict = {}

    def python_type(self):
        return type(self.mod)

    def is_python_constant(self):
        return False

    def truth(self, tx):
        if type(self.mod).__len__ is not torch.nn.Module.__dict__.get("__len__", None) and hasattr(self.mod, "__len__"):
            return self.length(tx) > 0
        return True

    # --- attributes ---------------------------------------------------------
    def _member(self, tx, table: str, name: str, obj) -> Value:
        from .builder import wrap
        src = ModuleMemberSource(self.source, name, table) if self.source is not None else None
        return wrap(tx.ctx, obj, src)

    def getattr(self, tx, name):
        from .builder import wrap
        mod = self.mod
        d = mod.__dict__
        if name in self.attrs:
            from ..effects import DELETED
            v = self.attrs[name]
            if v is DELETED:
                raise user_error(AttributeError, f"{type(mod).__name__!r} object has no attribute {name!r}")
            return v
        cls_attr = inspect.getattr_static(type(mod), name, _MISSING)
        # data descriptors on the class win over the instance dict
        if cls_attr is not _MISSING and _is_data_descriptor(cls_attr):
            if isinstance(cls_attr, property):
                from .functions import UserFunctionValue
                return UserFunctionValue(cls_attr.fget, None).call(tx, [self], {})
            raise Unsupported(f"descriptor {name!r} on {type(mod).__name__}")
        if name in d:
            src = AttrSource(self.source, name) if self.source is not None else None
            return wrap(tx.ctx, d[name], src)
        for table in ("_parameters", "_buffers", "_modules"):
            t = d.get(table)
            if t is not None and name in t:
                return self._member(tx, table, name, t[name])
        if cls_attr is not _MISSING:
            if self.source is not None:
                tx.ctx.guards.add(Guard(Kind.NOT_IN_DICT, self.source, name))
            if isinstance(cls_attr, types.FunctionType):
                from .functions import BoundMethodValue, UserFunctionValue
                return BoundMethodValue(UserFunctionValue(cls_attr, None), self)
            if isinstance(cls_attr, (staticmethod,)):
                return wrap(tx.ctx, cls_attr.__func__, None)
            if isinstance(cls_attr, classmethod):
                from .functions import BoundMethodValue, UserFunctionValue
                from .objects import ClassValue
                return BoundMethodValue(UserFunctionValue(cls_attr.__func__, None), ClassValue(type(mod), None))
            src = AttrSource(self.source, name) if self.source is not None else None
            return wrap(tx.ctx, getattr(mod, name), src)
        if type(mod).__getattr__ is not torch.nn.Module.__getattr__:
            raise Unsupported(f"custom __getattr__ of {type(mod).__name__}")
        raise user_error(AttributeError, f"{type(mod).__name__!r} object has no attribute {name!r}")

    def _plain_attr_target(self, tx, name, value) -> None:
        """Refuse writes whose meaning goes beyond object.__setattr__ under
        nn.Module.__setattr__ (registering parameters, buffers, submodules)."""
        mod = self.mod
        if type(mod).__setattr__ is not torch.nn.Module.__setattr__ or \
                type(mod).__delattr__ is not torch.nn.Module.__delattr__:
            raise Unsupported(f"custom __setattr__/__delattr__ of {type(mod).__name__}")
        for table in ("_parameters", "_buffers", "_modules"):
            if name in mod.__dict__.get(table, {}):
                raise Unsupported(f"replacing the registered {table[1:-1]} {name!r} of {type(mod).__name__} "
                                  "inside a compiled function")
        from .tensor import TensorValue
        if isinstance(value, ModuleValue) or isinstance(value, TensorValue) and \
                issubclass(value.python_type(), torch.nn.Parameter):
            raise Unsupported(f"registering {name!r} on {type(mod).__name__} inside a compiled function")
        cls_attr = inspect.getattr_static(type(mod), name, _MISSING)
        if cls_attr is not _MISSING and _is_data_descriptor(cls_attr):
            raise Unsupported(f"writing the descriptor {type(mod).__name__}.{name}")
        if self.source is None:
            raise Unsupported(f"writing an attribute of a module without a source")

    def setattr(self, tx, name, value):
        from ..effects import AttrStore
        self._plain_attr_target(tx, name, value)
        self.attrs[name] = value
        tx.ctx.effects.record(AttrStore(self, name, value))

    def delattr(self, tx, name):
        from ..effects import DELETED, AttrDelete
        self._plain_attr_target(tx, name, None)
        if name not in self.attrs and name not in self.mod.__dict__:
            raise user_error(AttributeError, name)
        self.attrs[name] = DELETED
        tx.ctx.effects.record(AttrDelete(self, name))

    def has_attr(self, tx, name) -> bool:
        try:
            self.getattr(tx, name)
            return True
        except UserException as e:
            if issubclass(e.exc_type, AttributeError):
                return False
            raise

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
            return [self._member(tx, "_parameters", k, p) for k, p in mod._parameters.items()]
        raise Unsupported(f"iterating over {type(mod).__name__}")

    def _guard_len(self, tx):
        # the module itself is ID-guarded; its _modules dict may still change
        if self.source is not None:
            tx.ctx.guards.add(Guard(Kind.DICT_KEYS, AttrSource(self.source, "_modules"), list(self.mod._modules)))

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
                raise Unsupported(f"slicing {type(mod).__name__}")
            return items[idx]
        if isinstance(mod, (torch.nn.ParameterList,)):
            return self.unpack(tx)[idx]
        if isinstance(mod, torch.nn.ParameterDict):
            return self._member(tx, "_parameters", idx, mod._parameters[idx])
        raise Unsupported(f"indexing {type(mod).__name__}")

    def contains(self, tx, item):
        k = item.as_python_constant()
        if isinstance(self.mod, torch.nn.ModuleDict):
            self._guard_len(tx)
            return k in self.mod._modules
        raise Unsupported(f"`in` on {type(self.mod).__name__}")

    # --- calls --------------------------------------------------------------
    def check_no_hooks(self, tx) -> None:
        mod = self.mod
        if any(getattr(mod, h, None) for h in _HOOK_DICTS) or _global_hooks():
            raise Unsupported(f"{type(mod).__name__} has hooks installed",
                              hint="module hooks inside compiled code are on the roadmap")
        if self.source is not None:
            for h in _HOOK_DICTS:
                tx.ctx.guards.add(Guard(Kind.EMPTY, AttrSource(self.source, h)))
        tx.ctx.guard_global_hooks()

    def call(self, tx, args, kwargs):
        mod = self.mod
        if type(mod).__call__ is not torch.nn.Module.__call__:
            raise Unsupported(f"custom __call__ of {type(mod).__name__}")
        self.check_no_hooks(tx)
        forward = self.getattr(tx, "forward")
        return forward.call(tx, args, kwargs)

    def __repr__(self):
        return f"<module {type(self.mod).__name__}{' ' + str(self.source) if self.source else ''}>"


def _global_hooks() -> bool:
    m = torch.nn.modules.module
    return any(getattr(m, h, None) for h in _GLOBAL_HOOKS)


class _Missing:
    pass


_MISSING = _Missing()


def _is_data_descriptor(obj) -> bool:
    t = type(obj)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")
