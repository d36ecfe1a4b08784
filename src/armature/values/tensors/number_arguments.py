"""Tensors passed where an op takes a number.

Where an op's schema takes a ``Scalar`` (``torch.add``'s ``alpha``,
``addcmul``'s ``value``, ``torch.full``'s fill value, the scalar of a
foreach op: ``_foreach_lerp_(xs, ys, weight)``, ``_foreach_sub_(xs, s)``),
torch accepts a 0-d tensor and reads it with ``.item()`` before the
op runs (optimizers do this with a tensor learning rate or betas).  Run on
fake tensors inside the trace, that read made a data-dependent symbol no
output of the op binds: an internal error.  It is now made explicit, the
way Tensor.item() itself is traced:

* which arguments torch reads as numbers is asked of torch itself: the
  call is tried once on the fake arguments under a dispatch mode that
  answers each ``item()`` with a placeholder and stops the call at its
  first real op, so nothing runs (``read_as_numbers``);
* with ``capture_scalar_outputs`` (or ``fullgraph=True``) each such tensor
  becomes an ``item()`` node of the graph, an unbacked number the op then
  takes; without it the read is a graph break, as ``t.item()`` is (the
  reason says which argument and why).

Two foreach ops keep the tensor and so one graph even without capture, as
torch.compile does for optimizers' tensor betas: ``_foreach_lerp(_)`` with
a 0-d floating weight becomes the ``weights`` overload with the weight, in
each tensor's dtype, for every tensor, and ``_foreach_pow`` of a 0-d
floating base becomes the tensor-list overload.  Both are taken only where
they compute eager's bits (float32/float64 tensors on the weight's device:
the number eager reads, converted to the tensor's computation type, is the
tensor converted to that dtype; in half precision the weight would be
rounded); the weight is detached, as ``.item()`` detaches it.
"""
from __future__ import annotations

import types

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ...diagnostics.errors import Unsupported
from ..base import realize
from ..constant import ConstantValue
from .. import kinds

_ITEM_OPS = (torch.ops.aten._local_scalar_dense.default, torch.ops.aten.item.default)


class _Stop(Exception):
    """The tried call reached its first op: the arguments are all parsed."""


class _ReadsFirst(TorchDispatchMode):
    """Records the tensors read as numbers before the call's first op, and
    stops the call there."""

    def __init__(self):
        super().__init__()
        self.read: list = []

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        if func in _ITEM_OPS and len(args) == 1:
            t = args[0]
            self.read.append(t)
            if t.is_complex():
                return complex(1, 0)
            if t.is_floating_point():
                return 1.0
            return True if t.dtype is torch.bool else 1
        if func.namespace == "prim":   # (metadata queries, some asked where raising would abort)
            return func(*args, **(kwargs or {}))
        raise _Stop()


#: calls that read a tensor as a number by what they are (traced as such)
_READERS = frozenset({"item", "tolist", "__float__", "__int__", "__bool__", "__index__", "__complex__",
                      "_local_scalar_dense"})


def _parsed_by_torch(kind: str, target) -> bool:
    """Calls of C functions whose arguments torch's argument parser reads
    (the only ones that turn a tensor into a number on their own), and of
    the Python functions of torch that pass them on (F.leaky_relu)."""
    name = target if kind == "call_method" else getattr(target, "__name__", "")
    if name in _READERS:
        return False
    if kind == "call_method":
        return isinstance(getattr(torch.Tensor, target, None), (types.MethodDescriptorType,
                                                                types.WrapperDescriptorType))
    if isinstance(target, types.FunctionType):   # torch.nn.functional's, which pass numbers on to C
        from .torch_ops import _GRAPH_PY_MODULES
        return getattr(target, "__module__", None) in _GRAPH_PY_MODULES
    return isinstance(target, (types.BuiltinFunctionType, types.MethodDescriptorType,
                               torch._ops.OpOverload, torch._ops.OpOverloadPacket))


def _candidates(kind: str, args, kwargs) -> list:
    """(position, Value) of the arguments that are 0-d tensors (the parser
    reads a number from those only; a method's own tensor is not an
    argument it converts)."""
    out = []
    first = 1 if kind == "call_method" else 0
    for pos, v in [*list(enumerate(args))[first:], *kwargs.items()]:
        if isinstance(v, kinds.TensorValue) and v.fake.dim() == 0:
            out.append((pos, v))
    return out


def _kind_of(v):
    """What decides how torch's parser reads an argument: for a tensor its
    dtype, whether it is 0-d and requires grad; for a constant its value."""
    if isinstance(v, kinds.TensorValue):
        f = v.fake
        return ("T", f.dtype, f.dim() == 0, f.requires_grad)
    if isinstance(v, (kinds.ListValue, kinds.TupleValue)):
        return (type(v).__name__, tuple(_kind_of(i) for i in v.items))
    if isinstance(v, ConstantValue):
        try:
            hash(v.value)
            return ("C", type(v.value), v.value)
        except TypeError:
            return ("C", type(v.value))
    return (type(v).__name__,)


#: (kind, target, the arguments' kinds) -> the positions read, or _IN_A_LIST:
#: the tried call is made once per kind of call (a loop's ops are one)
_READS: dict = {}
_IN_A_LIST = object()


def read_as_numbers(tx, kind: str, target, args, kwargs) -> list:
    """The positions (index or keyword) of the tensor arguments torch reads
    as numbers in this call."""
    if not _parsed_by_torch(kind, target):
        return []
    candidates = _candidates(kind, args, kwargs)
    if not candidates:
        return []
    try:
        key = (kind, target, tuple(_kind_of(a) for a in args), tuple((k, _kind_of(v)) for k, v in kwargs.items()))
        known = _READS.get(key)
    except TypeError:   # (an unhashable target)
        key, known = None, None
    if known is None:
        known = _try_call(tx, kind, target, args, kwargs, candidates)
        if key is not None:
            if len(_READS) > 4096:
                _READS.clear()
            _READS[key] = known
    if known is _IN_A_LIST:
        raise Unsupported(f"{_name(kind, target)}() takes numbers where tensors inside a list are passed, and "
                          "reads them with Tensor.item() of a tensor (its data)",
                          hint="pass Python numbers, or call the op outside the compiled function")
    return list(known)


def _try_call(tx, kind: str, target, args, kwargs, candidates):
    """Try the call on the fake arguments, stopped at its first op: the
    positions of the candidates read as numbers (a tuple), or _IN_A_LIST."""
    from .tensor import to_graph_arg
    from ... import torch_compat
    fake_args = [to_graph_arg(a)[1] for a in args]
    fake_kwargs = {k: to_graph_arg(v)[1] for k, v in kwargs.items()}
    mode = _ReadsFirst()
    stand_ins = {}
    try:
        with tx.ctx.graph.fake_mode, torch_compat.fake_prop_state():
            # (each candidate its own fake tensor, so a tensor passed twice,
            # once as a number, tells which)
            for pos, v in candidates:
                stand_ins[pos] = torch.empty_like(v.fake).requires_grad_(v.fake.requires_grad)
                if isinstance(pos, int):
                    fake_args[pos] = stand_ins[pos]
                else:
                    fake_kwargs[pos] = stand_ins[pos]
            with torch._C._AutoDispatchBelowAutograd(), mode:   # (autograd's kernels must not see _Stop)
                if kind == "call_method":
                    getattr(fake_args[0], target)(*fake_args[1:], **fake_kwargs)
                else:
                    target(*fake_args, **fake_kwargs)
    except Exception:   # (_Stop, or the call is wrong: the real call says how)
        pass
    if not mode.read:
        return ()
    if any(all(r is not t for t in stand_ins.values()) for r in mode.read):
        return _IN_A_LIST   # (a tensor inside a list read as a number: ``_foreach_mul_(xs, [t1, t2])``)
    return tuple(pos for pos, t in stand_ins.items() if any(t is r for r in mode.read))


def _name(kind: str, target) -> str:
    if kind == "call_method":
        return f"Tensor.{target}"
    return f"torch.{getattr(target, '__name__', target)}"


def explicit(tx, kind: str, target, args: list, kwargs: dict) -> tuple[list, dict]:
    """``args``/``kwargs`` with every tensor torch reads as a number made an
    ``item()`` node of the graph (or a graph break without
    ``capture_scalar_outputs``)."""
    positions = read_as_numbers(tx, kind, target, args, kwargs)
    if not positions:
        return args, kwargs
    args, kwargs = list(args), dict(kwargs)
    for pos in positions:
        what = f"argument {pos}" if isinstance(pos, int) else f"{pos}="
        value = args[pos] if isinstance(pos, int) else kwargs[pos]
        from .tensor import known_value
        known = known_value(value)
        if known is not None:   # (made in the frame from known numbers: eager's read, no break)
            if isinstance(pos, int):
                args[pos] = ConstantValue(known)
            else:
                kwargs[pos] = ConstantValue(known)
            continue
        if not tx.ctx.capture_scalars:
            raise Unsupported(
                f"{_name(kind, target)}() takes a number as its {what}, and the tensor passed there is read "
                "with Tensor.item() of a tensor (its data)",
                hint="pass a Python number, or set armature.config.capture_scalar_outputs = True (on with "
                     "fullgraph=True) to keep the read in the graph as a symbol")
        number = value.scalar(tx)
        if isinstance(pos, int):
            args[pos] = number
        else:
            kwargs[pos] = number
    return args, kwargs


# --- foreach ops that keep the tensor ---------------------------------------------

def _tensors(tx, v):
    v = realize(tx.ctx, v)
    if not isinstance(v, (kinds.ListValue, kinds.TupleValue)):
        return None
    items = [realize(tx.ctx, i) for i in v.items]
    return items if items and all(isinstance(i, kinds.TensorValue) for i in items) else None


def _exact_number(weight, tensors) -> bool:
    """A 0-d floating tensor that eager reads as a number equal to the
    tensor converted to each tensor's dtype (float32/float64 tensors on the
    weight's device)."""
    w = weight.fake
    # (torch does not read a tensor that requires grad as a number: eager raises)
    return w.dim() == 0 and w.is_floating_point() and not w.is_complex() and not w.requires_grad and all(
        t.fake.dtype in (torch.float32, torch.float64) and t.fake.device == w.device for t in tensors)


def _weights(tx, weight, tensors):
    """The weight, detached (``.item()`` detaches it), in each tensor's dtype."""
    from .tensor import graph_call
    detached = graph_call(tx, "call_method", "detach", [weight], {})
    by_dtype = {}
    out = []
    for t in tensors:
        dtype = t.fake.dtype
        if dtype not in by_dtype:
            by_dtype[dtype] = detached if detached.fake.dtype == dtype else \
                graph_call(tx, "call_method", "to", [detached, ConstantValue(dtype)], {})
        out.append(by_dtype[dtype])
    return kinds.ListValue(out)


def foreach_with_tensor(tx, fn, args, kwargs):
    """``_foreach_lerp(_)(xs, ys, weight)`` and ``_foreach_pow(base, xs)``
    with a 0-d tensor for the number, as their tensor-list overloads (one
    graph, no data-dependent read), or None where that would not compute
    eager's bits."""
    from .tensor import graph_call
    if fn in (torch._foreach_lerp_, torch._foreach_lerp):
        call_args = list(args)
        if "weight" in kwargs and len(call_args) == 2 and len(kwargs) == 1:
            call_args.append(kwargs["weight"])
        elif kwargs or len(call_args) != 3:
            return None
        weight = realize(tx.ctx, call_args[2])
        xs, ys = _tensors(tx, call_args[0]), _tensors(tx, call_args[1])
        if not isinstance(weight, kinds.TensorValue) or xs is None or ys is None or len(xs) != len(ys) \
                or not _exact_number(weight, xs):
            return None
        return graph_call(tx, "call_function", fn, [call_args[0], call_args[1], _weights(tx, weight, xs)], {})
    if fn is torch._foreach_pow and len(args) == 2 and not kwargs:
        base = realize(tx.ctx, args[0])
        exponents = _tensors(tx, args[1])
        if not isinstance(base, kinds.TensorValue) or exponents is None or not _exact_number(base, exponents):
            return None
        return graph_call(tx, "call_function", fn, [_weights(tx, base, exponents), args[1]], {})
    return None
