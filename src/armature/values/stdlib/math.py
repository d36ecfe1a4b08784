"""math: ``math.prod`` over values that are not all constants (the other
math functions are folded by builtins.py's constant rules).
"""
from __future__ import annotations

import math
import operator

from ...diagnostics.errors import user_error
from ..operations.builtins import RULES, fold_call
from ..constant import ConstantValue
from ..containers.containers import ListValue
from .common import _r


def _math_prod(tx, iterable, *rest, start=None, **kwargs):
    if rest or kwargs:
        raise user_error(TypeError, "prod() takes exactly 1 positional argument")
    from ..operations.operators import binary_op
    start = start if start is not None else ConstantValue(1)
    items = tx.iterate(iterable)
    if start.is_python_constant() and all(i.is_python_constant() for i in items):
        return fold_call(math.prod, [ListValue(items)], {"start": start})
    acc = start
    for v in items:
        acc = binary_op(tx, operator.mul, _r(tx, acc), _r(tx, v))
    return acc


RULES[math.prod] = _math_prod
