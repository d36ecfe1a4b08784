"""abc: ``@abc.abstractmethod`` on a method of a class statement in the
frame (values/objects/class_def.py): it marks the function the class body made,
applied again to the real stand-in and to the rebuilt function."""
from __future__ import annotations

import abc

from ...diagnostics.errors import Unsupported
from .common import _std_function
from .. import kinds


def _abstractmethod(tx, fn):
    if not isinstance(fn, kinds.NestedFunctionValue):
        raise Unsupported(f"abc.abstractmethod({fn}) outside a class statement of the frame")
    return kinds.DecoratedFunctionValue(abc.abstractmethod, fn)


_std_function(abc.abstractmethod, _abstractmethod)
