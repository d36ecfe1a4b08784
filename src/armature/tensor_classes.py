"""Which tensor classes take part in ``__torch_function__`` and
``__torch_dispatch__``, and a subclass tensor's data as a plain Tensor: facts
of torch's tensor classes alone.

They sit at the bottom of the package because the guards (reading a
subclass's metadata), the graph (fake propagation of a subclass input) and
the value layer (values/tensors/torch_function.py, which models
``__torch_function__`` in the trace) all ask them; none of them needs the
trace.
"""
from __future__ import annotations

from typing import Any

import torch

DISABLED_IMPL = torch._C._disabled_torch_function_impl


# --- which classes take part ----------------------------------------------------

def has_torch_function(cls: type) -> bool:
    """Instances of ``cls`` are offered every overridable call (torch's test:
    not exactly Tensor, and a ``__torch_function__`` that is not the
    disabled one; ``nn.Parameter`` disables it)."""
    if cls is torch.Tensor or not (isinstance(cls, type) and issubclass(cls, torch.Tensor)):
        return False
    tf = getattr(cls, "__torch_function__", DISABLED_IMPL)
    return tf is not DISABLED_IMPL


def has_torch_dispatch(cls: type) -> bool:
    return getattr(cls, "__torch_dispatch__", None) is not torch.Tensor.__torch_dispatch__


def is_traceable_wrapper(cls: type) -> bool:
    """A ``__torch_dispatch__`` subclass that can be flattened into plain
    tensors (``__tensor_flatten__``/``__tensor_unflatten__``): fake tensors,
    AOTAutograd and inductor handle it as a graph input."""
    return has_torch_dispatch(cls) and hasattr(cls, "__tensor_flatten__") and hasattr(cls, "__tensor_unflatten__")


def plain_alias(t: torch.Tensor) -> torch.Tensor:
    """The same data as a plain Tensor (autograd-connected, as ``as_subclass``
    is), made without asking the subclass."""
    if type(t) is torch.Tensor or type(t) is torch.nn.Parameter or is_traceable_wrapper(type(t)):
        return t
    with torch._C.DisableTorchFunctionSubclass():
        return t.as_subclass(torch.Tensor)


def needs_plain(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and type(t) not in (torch.Tensor, torch.nn.Parameter) \
        and not is_traceable_wrapper(type(t))
