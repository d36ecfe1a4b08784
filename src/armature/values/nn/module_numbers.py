"""Numbers stored on modules (``self.num_heads``, ``self.steps``, a scale).

How an int or float attribute of an ``nn.Module`` enters the trace, and
how api's automatic dynamic recognises such an attribute when one of its
guards fails: ints static at first and a symbol once changed (or always
static, torch.compile's rule, with ``config.allow_unspec_int_on_nn_module``
off), floats lazily guarded.
"""
from __future__ import annotations

import torch

from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource
from ..base import Value
from ..builder import wrap
from ..constant import ConstantValue
from .. import kinds


def module_number(ctx, value, source) -> Value:
    """An int or float stored on a module, read from ``source``.

    An int is static at first (``self.num_heads``, ``self.n_layers``:
    configuration, a constant of the trace guarded by value) and, by
    default (``config.allow_unspec_int_on_nn_module``), a symbol once it
    has changed between calls, as any int (automatic dynamic: a step
    counter costs one recompile).  With the option off it stays static, as
    torch.compile keeps it: a changed one recompiles with the new constant
    (api's automatic dynamic skips it) unless ``config.dynamic_sources``
    names it.
    A float stays lazily guarded (values/tensors/symbolic.py): where it
    meets a floating tensor it is a 0-d graph input, so a changing scale or
    learning rate does not recompile."""
    if type(value) is int and ctx.config.allow_unspec_int_on_nn_module:
        return wrap(ctx, value, source)   # (automatic dynamic, as any int)
    if type(value) is int:
        from ...graph.dynamic import whitelisted
        if whitelisted(source)[0] and -2 ** 63 <= value < 2 ** 63:
            from ..tensors.symbolic import int_symbol
            ctx.guards.add(Guard(Kind.TYPE_MATCH, source, int))
            return int_symbol(ctx, value, source)
        ctx.guards.add(Guard(Kind.CONSTANT_MATCH, source, value))
        return ConstantValue(value, source)
    ctx.guards.add(Guard(Kind.TYPE_MATCH, source, type(value)))
    return kinds.SymbolicNumberValue(value, source, ctx)


def is_module_number_source(f, source, args, kwargs) -> bool:
    """Whether ``source`` reads an int attribute of a module on this call
    (``self.n``, ``self.__dict__["n"]``): static, whatever changes."""
    from ...guards.build import read_source
    from ...guards.sources import ItemSource
    owner = None
    if isinstance(source, AttrSource):
        owner = source.base
    elif isinstance(source, ItemSource) and isinstance(source.base, AttrSource) and source.base.attr == "__dict__":
        owner = source.base.base
    return owner is not None and isinstance(read_source(f, owner, args, kwargs), torch.nn.Module)
