"""What generated code calls in place of a zero-argument ``super()``
whose ``super`` may be shadowed (codegen/zero_arg_super.py emits the calls;
values/operations/builtins.py loads ``adapt`` into residual code too)."""
from __future__ import annotations

import builtins


class _WithoutArguments:
    """A shadowing ``super`` as the zero-argument form calls it."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, cls, obj):
        return self.fn()


def adapt(global_super):
    """What generated code calls with ``(__class__, first argument)`` in
    place of the zero-argument ``super()`` whose ``super`` is ``global_super``."""
    if global_super is builtins.super:
        return global_super
    return _WithoutArguments(global_super)
