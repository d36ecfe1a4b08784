"""Python-level attributes of tensors: what a tensor subclass defines
(methods, properties, class variables) and what code stores on a tensor
(``t.tag = "x"``, the ``quant_type`` a GGUF tensor's ``__new__`` sets).

torch.Tensor's own attributes (``shape``, ``grad``, methods) are answered by
``TensorValue.tensor_attribute``; this module comes first and handles the
rest, in CPython's order: a data descriptor of the class, then the
instance's ``__dict__``, then the class attribute.

An attribute of a tensor that came from outside the frame is read from the
real object (guarded through its Source); one stored in the frame lives on
the TensorValue (``attrs``) and is written for real after the graph: as a
replayed ``setattr`` on an outside tensor, or while rebuilding a new tensor
(``codegen/emitter``).
"""
from __future__ import annotations

import torch

from ...diagnostics.errors import Unsupported
from ..base import Value, realize
from ..builder import wrap
from ..constant import ConstantValue
from .. import kinds

#: classes whose attributes are torch's own (TensorValue.tensor_attribute)
TORCH_OWNERS = frozenset({torch.Tensor, torch._C.TensorBase, torch.nn.Parameter, object})


def _class_attribute(cls: type, name: str):
    """(raw, owner) when the subclass itself defines ``name``."""
    if cls in (torch.Tensor, torch.nn.Parameter):
        return None, None
    from ..objects.objects import find_class_attr
    raw, owner = find_class_attr(cls, name)
    if owner is None or owner in TORCH_OWNERS:
        return None, None
    return raw, owner


def python_attribute(tx, t, name: str) -> Value | None:
    """The Python-level attribute ``name`` of tensor ``t``, or None when it
    is one of torch's own (or absent: then torch's lookup reports it)."""
    from ..objects.objects import _is_data_descriptor, bind_attr
    raw, owner = _class_attribute(t.cls, name)
    if owner is not None and (isinstance(raw, property) or _is_data_descriptor(raw)):
        return bind_attr(tx, raw, owner, name, t, _class_value(tx, t.cls))
    if name in t.attrs:
        return t.attrs[name]
    if not _torch_defines(name):
        found = _real_instance_attribute(tx, t, name)
        if found is not None:
            return found
    if owner is not None:
        return bind_attr(tx, raw, owner, name, t, _class_value(tx, t.cls))
    return None


def _torch_defines(name: str) -> bool:
    return hasattr(torch.Tensor, name)


def _class_value(tx, cls):
    return wrap(tx.ctx, cls, None)


def _real_instance_attribute(tx, t, name: str) -> Value | None:
    if t.source is None:
        return None
    from ...guards.sources import AttrSource
    from .tensor import _real_of
    real = _real_of(tx, t)
    d = getattr(real, "__dict__", None)
    if not d or name not in d:
        return None
    return wrap(tx.ctx, d[name], AttrSource(t.source, name))


def set_python_attribute(tx, t, name: str, value: Value) -> None:
    """``t.name = value``: a property setter of the subclass runs (inlined);
    torch's own attributes are not modelled; anything else is a Python
    attribute of the tensor object."""
    from ...effects import AttrStore
    raw, owner = _class_attribute(t.cls, name)
    if isinstance(raw, property):
        if raw.fset is None:
            from ...diagnostics.errors import user_error
            raise user_error(AttributeError, f"property {name!r} of {t.cls.__name__!r} object has no setter")
        wrap(tx.ctx, raw.fset, None).call(tx, [t, value], {})
        return
    if owner is not None and not isinstance(raw, (property,)) and hasattr(raw, "__set__"):
        raise Unsupported(f"storing {name!r} through the descriptor {t.cls.__name__}.{name}")
    if name == "grad":
        _set_grad(tx, t, realize(tx.ctx, value))
        return
    if _torch_defines(name):
        raise Unsupported(f"setting the tensor attribute {name!r} inside compiled code",
                          hint="without fullgraph the frame is split here (a graph break)")
    value = realize(tx.ctx, value)
    t.attrs[name] = value
    if t.source is not None:
        tx.ctx.effects.record(AttrStore(t, name, value))


def _set_grad(tx, t, value: Value) -> None:
    """``t.grad = g``: checked as torch checks it, seen by later reads in the
    trace; on a tensor from outside the frame written for real after the
    graph (the same object eager would store), on one made in the frame set
    where the tensor is rebuilt, if it leaves the frame (codegen/emitter.py
    ``_rebuild_tensor_object``: the attributes the trace gave it)."""
    from ...diagnostics.errors import user_error
    from ...effects import AttrStore
    if isinstance(value, ConstantValue) and value.value is None:
        pass
    elif isinstance(value, kinds.TensorValue):
        g, f = value.fake, t.fake
        if g.dtype != f.dtype or g.device != f.device:
            raise user_error(RuntimeError, "attempting to assign a gradient with a different dtype or device "
                                           "than the tensor")
        if tuple(g.shape) != tuple(f.shape):
            raise user_error(RuntimeError, "attempting to assign a gradient of size "
                                           f"'{list(g.shape)}' to a tensor of size '{list(f.shape)}'. Please "
                                           "ensure that the gradient and the tensor are the same size")
    else:
        raise user_error(TypeError, f"assigned grad expected to be a Tensor or None but got grad of type "
                                    f"{value.python_type().__name__}")
    t.attrs["grad"] = value
    if t.source is not None:
        tx.ctx.effects.record(AttrStore(t, "grad", value))


def needs_rebuild(t) -> bool:
    """A new tensor whose Python object is more than the graph's output: a
    subclass instance, or one carrying attributes."""
    return t.cls is not torch.Tensor or bool(t.attrs)
