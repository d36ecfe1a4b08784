"""``torch.utils._pytree.tree_leaves`` on Values.

torch's pytree code looks node types up in ``SUPPORTED_NODES``, a dict keyed
by classes, on every step; inlining it costs many trace steps and needs that
torch-internal dict as a guarded object.  Code in the models armature
compiles calls ``tree_leaves`` on small argument structures (transformers'
``TransformGetItemToIndex`` mode does, on every indexing inside its mask
code), so it is answered here directly with pytree's rules: tuples, lists,
dicts (in key order) and namedtuples are looked into (``None`` is a leaf or an
empty node, as this torch's pytree has it); any other type registered as a pytree node is not modelled (a
graph break); everything else is a leaf.
"""
from __future__ import annotations

import torch
import torch.utils._pytree as pytree

from ...diagnostics.errors import Unsupported
from ..base import CallableConstantValue, Value, realize
from ..constant import ConstantValue
from .. import kinds


class TreeLeavesValue(CallableConstantValue):
    def call(self, tx, args, kwargs):
        if len(args) != 1 or kwargs:
            raise Unsupported("torch.utils._pytree.tree_leaves() with is_leaf or other arguments")
        out: list[Value] = []
        _leaves(tx, args[0], out)
        return kinds.ListValue(out)


def _leaves(tx, v: Value, out: list) -> None:
    v = realize(tx.ctx, v)
    if isinstance(v, ConstantValue):
        value = v.value
        if value is None and not _NONE_IS_LEAF:
            return
        if isinstance(value, (tuple, list, dict)) and (value or type(value) not in (tuple, list, dict)):
            for leaf in pytree.tree_leaves(value):
                out.append(ConstantValue(leaf))
            return
        out.append(v)
        return
    if isinstance(v, kinds.TupleValue) and (v.cls is tuple or pytree.is_namedtuple_class(v.cls)):
        for item in v.items:
            _leaves(tx, item, out)
        return
    if type(v) is kinds.ListValue:
        for item in v.items:
            _leaves(tx, item, out)
        return
    if type(v) is kinds.DictValue:
        for item in v.items.values():
            _leaves(tx, item, out)
        return
    t = v.python_type()
    if t in pytree.SUPPORTED_NODES or (isinstance(t, type) and issubclass(t, (tuple, list, dict))
                                       and t not in _LEAF_SEQUENCES):
        raise Unsupported(f"torch.utils._pytree.tree_leaves() of a {t.__name__}")
    out.append(v)


#: whether this torch's pytree counts None as a leaf (it has differed between versions)
_NONE_IS_LEAF = pytree.tree_leaves(None) == [None]

#: tuple subclasses pytree treats as leaves (not registered, not namedtuples)
_LEAF_SEQUENCES = frozenset({torch.Size})


def wrap_special(ctx, obj) -> Value | None:
    if obj is pytree.tree_leaves:
        return TreeLeavesValue(obj)
    return None
