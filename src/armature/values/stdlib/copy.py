"""copy: ``copy.deepcopy`` of plain user objects and the builtin containers.

copy.py itself cannot be traced through for a plain object: it keys its
memo by ``id()`` (of the object, of the memo itself), and it reaches the
object through ``object.__reduce_ex__(4)`` -> ``copyreg.__newobj__`` ->
``object.__new__`` and ``y.__dict__.update(deepcopy(state))``.  This models
the outcome of that path: a new instance of the same class (``__init__`` is
not run) whose instance dict holds deep copies of the original's values,
with the memo keeping shared references shared (one Value per object) and
cycles closed.  Only where that path is certain: a class that overrides
none of ``__deepcopy__``, ``__reduce_ex__``, ``__reduce__``,
``__getstate__``, ``__setstate__``, ``__getnewargs(_ex)__``, ``__slots__``,
``__new__`` and is not in ``copyreg.dispatch_table``; lists, tuples and
dicts with constant keys; immutable constants (returned as they are) and
``torch.dtype`` (which reduces to its name: deepcopy returns it itself).
Anything else (tensors included) raises Unsupported.

A class with its own ``__getattribute__`` or ``__getattr__`` (transformers'
``PretrainedConfig``, which maps aliases such as ``hidden_size`` through
``attribute_map``; ``T5Config`` in transformers 5 has two such hooks): copy.py's
``getattr`` calls run the hook, so the hook is traced, in a sandbox, for
exactly the names copy.py asks (``x.__deepcopy__``, ``x.__reduce_ex__``,
``x.__getstate__``, then on the new object ``y.__setstate__`` and
``y.__dict__``), and the copy is modelled only if each answers what the
generic lookup answers (AttributeError, ``object``'s methods bound to the
object, the new object's own dict) with no side effect; what the hook read
is guarded (the sandbox's guards join the trace's).

The first deepcopy of an instance of a class also caches the class's slot
names (``cls.__slotnames__``, copyreg._slotnames); that write is made while
tracing, as the eager call would make it.
"""
from __future__ import annotations

import copy
import copyreg
import types

import torch

from ...diagnostics.errors import Unsupported
from ..base import realize
from ..constant import ConstantValue
from .common import _std_function
from .. import kinds

_OVERRIDES = ("__deepcopy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__getnewargs__",
              "__getnewargs_ex__", "__slots__", "__class_getitem__", "__new__")
#: attribute hooks copy.py's getattr calls run: traced (_hooks_transparent)
_HOOKS = ("__getattr__", "__getattribute__")
_ATOMIC = (int, float, complex, bool, str, bytes, type(None), type(Ellipsis), type(NotImplemented), range,
           types.FunctionType, types.BuiltinFunctionType, type)


def _plain_class(cls: type) -> bool:
    if type(cls) is not type or cls in copyreg.dispatch_table:
        return False
    for klass in cls.__mro__[:-1]:
        if klass.__module__ == "builtins" or any(n in klass.__dict__ for n in _OVERRIDES):
            return False
    return True


def _has_hooks(cls: type) -> bool:
    return any(n in klass.__dict__ for klass in cls.__mro__[:-1] for n in _HOOKS)


def _probe_attr(obj, name):
    """What ``getattr(obj, name)`` gives, traced in a sandbox."""
    return getattr(obj, name)


def _probe(tx, sub, obj, name: str):
    """(True, Value) or (False, None) for an AttributeError; Unsupported for
    anything else the hook raises."""
    from ...diagnostics.errors import UserException
    from ..builder import wrap
    fn_v = wrap(sub, _probe_attr, None)
    try:
        return True, sub.make_frame(fn_v, fn_v.bind([obj, ConstantValue(name)], {}, ctx=sub), tx).run()
    except UserException as e:
        if issubclass(e.exc_type, AttributeError):
            return False, None
        raise Unsupported(f"copy.deepcopy: {obj.cls.__name__}'s attribute hook raises {e} for {name!r}") from e


def _bound_to(v, obj, fn) -> bool:
    return isinstance(v, kinds.BoundMethodValue) and v.obj is obj and v.func.is_python_constant() \
        and v.func.as_python_constant() is fn


def _hooks_transparent(tx, obj, new) -> None:
    """The class's __getattribute__/__getattr__ answer copy.py's questions
    as the generic lookup does (see the module docstring), or Unsupported."""
    main = tx.ctx
    sub = main.sandbox()
    what = f"copy.deepcopy of a {obj.cls.__name__}, whose attribute hook"
    found, _ = _probe(tx, sub, obj, "__deepcopy__")
    if found:
        raise Unsupported(f"{what} answers __deepcopy__")
    for name, fn in (("__reduce_ex__", object.__reduce_ex__), ("__getstate__", getattr(object, "__getstate__", None))):
        if fn is None:
            continue
        found, v = _probe(tx, sub, obj, name)
        if not found or not _bound_to(v, obj, fn):
            raise Unsupported(f"{what} answers {name} with {v}")
    found, _ = _probe(tx, sub, new, "__setstate__")
    if found:
        raise Unsupported(f"{what} answers __setstate__ on the copy")
    found, v = _probe(tx, sub, new, "__dict__")
    if not found or v is not new.instance_dict():
        raise Unsupported(f"{what} answers __dict__ of the copy with {v}")
    if len(sub.effects) or sub.graph.has_ops() or sub.graph.tensor_inputs() or sub.graph.attrs:
        raise Unsupported(f"{what} has side effects")
    for g in sub.guards:
        main.guards.add(g)


class _DeepCopier:
    def __init__(self, tx):
        self.tx = tx
        self.memo: dict[int, object] = {}
        self.keep: list = []

    def copy(self, v):
        tx = self.tx
        v = realize(tx.ctx, v)
        done = self.memo.get(id(v))
        if done is not None:
            return done
        self.keep.append(v)
        if isinstance(v, ConstantValue) and (isinstance(v.value, _ATOMIC) and not isinstance(v.value, tuple)
                                             or type(v.value) is torch.dtype):
            return v
        if type(v) is kinds.ObjectValue and _plain_class(v.cls) and not getattr(v, "contents", None):
            from ..objects.builtin_subclasses import _new_instance
            new = _new_instance(v.cls, None)
            if _has_hooks(v.cls):
                _hooks_transparent(tx, v, new)
            if "__slotnames__" not in v.cls.__dict__:
                copyreg._slotnames(v.cls)   # (eager's reduce caches them on the class)
            self.memo[id(v)] = new
            for k in v.dict_keys(tx):
                new.attrs[k] = self.copy(v.dict_get(tx, k))
            return new
        if isinstance(v, kinds.ListValue) and v.python_type() is list:
            new = kinds.ListValue([])
            self.memo[id(v)] = new
            new.items.extend(self.copy(i) for i in v.unpack(tx))
            return new
        if isinstance(v, kinds.TupleValue) and v.python_type() is tuple:
            items = [self.copy(i) for i in v.unpack(tx)]
            done = self.memo.get(id(v))   # (a cycle through the tuple)
            if done is not None:
                return done
            if all(a is b for a, b in zip(items, v.items)):
                return v
            return kinds.TupleValue(items)
        if isinstance(v, kinds.DictValue) and v.python_type() is dict and type(v).__name__ == "DictValue":
            from ..containers.keys import has_value_keys
            if has_value_keys(v.items):
                raise Unsupported("copy.deepcopy of a dict keyed by objects")
            new = kinds.DictValue({})
            self.memo[id(v)] = new
            for k, item in list(v.items.items()):
                if not isinstance(k, _ATOMIC):
                    raise Unsupported(f"copy.deepcopy of a dict with the key {k!r}")
                new.items[k] = self.copy(item)
            return new
        if isinstance(v, kinds.InstanceDictValue):
            # ``copy.deepcopy(self.__dict__)`` (PretrainedConfig.to_dict): a plain
            # dict of deep copies; the keys are the instance dict's strings
            owner = v._live()
            new = kinds.DictValue({})
            self.memo[id(v)] = new
            for k in owner.dict_keys(tx):
                new.items[k] = self.copy(owner.dict_get(tx, k))
            return new
        if v.is_python_constant():
            c = v.as_python_constant()
            if type(c) in (tuple, frozenset) and _atomic_tree(c):
                return v
        raise Unsupported(f"copy.deepcopy of {v}", hint="only plain objects, lists, tuples, dicts and constants "
                                                       "are copied while tracing")


def _atomic_tree(c) -> bool:
    if type(c) in (tuple, frozenset):
        return all(_atomic_tree(i) for i in c)
    return isinstance(c, _ATOMIC)


def _deepcopy(tx, x, memo=None, _nil=None):
    if memo is not None and not (memo.is_python_constant() and memo.as_python_constant() is None) or _nil is not None:
        raise Unsupported("copy.deepcopy with a memo")
    return _DeepCopier(tx).copy(x)


_std_function(copy.deepcopy, _deepcopy)
