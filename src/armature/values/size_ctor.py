"""``torch.Size(iterable)`` inside the frame (torch.distributions builds its
sample shapes with it: ``torch.Size(sample_shape + self._batch_shape)``):
a tuple Value of class ``torch.Size`` over the same items, so dynamic
sizes stay symbolic; constants fold to a constant Size.  Items must be
ints, as torch.Size requires."""
from __future__ import annotations

import torch

from ..diagnostics.errors import Unsupported, user_error
from .base import realize
from .constant import ConstantValue


def _size(tx, *args, **kwargs):
    from .containers import TupleValue
    from .symbolic import SymbolicNumberValue
    if kwargs or len(args) > 1:
        raise Unsupported("torch.Size() with keyword or several arguments")
    if not args:
        return ConstantValue(torch.Size())
    items = [realize(tx.ctx, v) for v in tx.iterate(realize(tx.ctx, args[0]))]
    for i, v in enumerate(items):
        if isinstance(v, SymbolicNumberValue):
            if type(v.example) is not int:
                raise Unsupported("torch.Size() of a symbolic number that is not an int")
            continue
        if not v.is_python_constant():
            raise Unsupported(f"torch.Size() of {v}")
        c = v.as_python_constant()
        if type(c) is not int and not isinstance(c, torch.SymInt):
            raise user_error(TypeError, f"torch.Size() takes an iterable of 'int' (item {i} is '{type(c).__name__}')")
    if all(isinstance(v, ConstantValue) for v in items):
        return ConstantValue(torch.Size([v.as_python_constant() for v in items]))
    return TupleValue(items, cls=torch.Size)


def register(rules: dict) -> None:
    rules[torch.Size] = _size
