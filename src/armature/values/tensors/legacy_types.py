"""``isinstance(t, torch.FloatTensor)``: the legacy tensor types.

``torch.FloatTensor``, ``torch.cuda.HalfTensor``, ``torch.sparse.LongTensor``...
are instances of the C metaclass ``torch.tensortype``, whose
``__instancecheck__`` (not Python, so not traceable) answers True exactly
for a tensor (any ``torch.Tensor`` subclass) of the type's dtype whose
backend dispatch key is the type's: CPU or CUDA, dense or sparse COO.  That
is metadata the trace holds (the fake tensor's dtype, device and layout,
all guarded on inputs), so the answer is a constant, as torch.compile's.
Tensors of other backends (meta, mkldnn, quantized, nested, XPU...) are
never instances of these types; where the tensor's kind is not certain the
check is unsupported (a graph break runs it as Python).
"""
from __future__ import annotations

import torch

from ...diagnostics.errors import Unsupported


def is_legacy_tensor_type(cls) -> bool:
    return type(cls) is type(torch.FloatTensor)


def instancecheck(tx, obj, cls) -> bool:
    """``isinstance(obj, cls)`` for ``obj`` a Value and ``cls`` a legacy
    tensor type."""
    from ..base import realize
    from .tensor import TensorValue
    obj = realize(tx.ctx, obj)
    if not issubclass(obj.python_type(), torch.Tensor):
        return False
    if not isinstance(obj, TensorValue):
        raise Unsupported(f"isinstance(..., {cls.__module__}.{cls.__name__}) of {obj}")
    fake = obj.fake
    if fake.dtype != cls.dtype:
        return False
    if fake.is_quantized or fake.is_mkldnn or fake.is_nested:
        return False
    device = "cuda" if cls.is_cuda else "cpu"
    layout = torch.sparse_coo if cls.is_sparse else torch.strided
    if fake.layout not in (torch.strided, torch.sparse_coo):
        return False
    return fake.device.type == device and fake.layout == layout
