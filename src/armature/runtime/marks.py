"""``mark_dynamic`` and friends: what a user says about a tensor's dims.

The marks are attributes on the tensor object (as torch's own are), read by
graph/dynamic.py when the tensor is first traced.  They are a request for
the next compile, not a guard: a marked tensor that is already covered by a
static entry does not recompile by itself.
"""
from __future__ import annotations

from typing import Callable, Iterable

import torch

from ..graph.dynamic import DYNAMIC_ATTR, MAYBE_DYNAMIC_ATTR, STATIC_ATTR, UNBACKED_ATTR
from ..graph.output_graph import STATIC_ADDRESS_ATTR


def _dims(t, dims, what: str) -> list[int]:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"armature.{what}: expected a tensor, got {type(t).__name__}")
    if isinstance(dims, int):
        dims = [dims]
    try:
        dims = list(dims)
    except TypeError:
        raise TypeError(f"armature.{what}: dims must be an int or a list of ints, got {dims!r}") from None
    out = []
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"armature.{what}: dims must be ints, got {d!r}")
        nd = d + t.dim() if d < 0 else d
        if not 0 <= nd < t.dim():
            raise IndexError(f"armature.{what}: dim {d} is out of range for a tensor with {t.dim()} dims")
        out.append(nd)
    return out


def _set_of(t, attr: str) -> set:
    s = getattr(t, attr, None)
    if s is None:
        s = set()
        setattr(t, attr, s)
    return s


def mark_dynamic(t: torch.Tensor, dims: int | Iterable[int], min: int | None = None, max: int | None = None,
                 specialize_on: list[Callable[[int], bool]] | None = None) -> None:
    """Dims ``dims`` of ``t`` are dynamic from the first compile that sees
    ``t``; code that specialises one of them (``if x.shape[0] == 8``, a
    ``view`` that needs a constant) raises an error naming the dim instead
    of silently compiling a static graph.  ``min``/``max`` bound the size
    (guarded); ``specialize_on`` lists predicates (``lambda s: s == 8``)
    whose matching sizes get graphs compiled for them (see docs)."""
    for name, v in (("min", min), ("max", max)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise ValueError(f"armature.mark_dynamic: {name} must be a non-negative int, got {v!r}")
    if min is not None and max is not None and min > max:
        raise ValueError(f"armature.mark_dynamic: min ({min}) is larger than max ({max})")
    if specialize_on is not None and (not isinstance(specialize_on, (list, tuple))
                                      or not all(callable(p) for p in specialize_on)):
        raise TypeError("armature.mark_dynamic: specialize_on must be a list of callables (lambda s: s == 8)")
    dims = _dims(t, dims, "mark_dynamic")
    marks = getattr(t, DYNAMIC_ATTR, None)
    if marks is None:
        marks = {}
        setattr(t, DYNAMIC_ATTR, marks)
    for d in dims:
        marks[d] = (min, max, tuple(specialize_on or ()))
        _set_of(t, STATIC_ATTR).discard(d)


def maybe_mark_dynamic(t: torch.Tensor, dims: int | Iterable[int]) -> None:
    """Like mark_dynamic, but specialising the dims is allowed (no error)."""
    for d in _dims(t, dims, "maybe_mark_dynamic"):
        _set_of(t, MAYBE_DYNAMIC_ATTR).add(d)


def mark_static(t, dims: int | Iterable[int] | None = None) -> None:
    """Dims ``dims`` of ``t`` stay static, whatever the policy.  On an
    nn.Module (or a class of modules): its parameters and buffers stay
    static (they are by default; this also overrides a whitelist)."""
    if isinstance(t, torch.nn.Module) or (isinstance(t, type) and issubclass(t, torch.nn.Module)):
        if isinstance(t, torch.nn.Module):
            object.__setattr__(t, "_armature_static", True)   # (read through the instance or its class)
        else:
            t._armature_static = True
        return
    if dims is None:
        raise TypeError("armature.mark_static: give the dims of a tensor (an nn.Module takes none)")
    for d in _dims(t, dims, "mark_static"):
        _set_of(t, STATIC_ATTR).add(d)
        (getattr(t, DYNAMIC_ATTR, None) or {}).pop(d, None)
        _set_of(t, MAYBE_DYNAMIC_ATTR).discard(d)


def mark_unbacked(t: torch.Tensor, dims: int | Iterable[int]) -> None:
    """Dims whose size is never specialised, not even to 0 or 1: an unbacked
    symbol without an example value.  Code that branches on the size is a
    graph break (an error with fullgraph=True) unless torch._check told
    enough about it; one compile serves sizes 0, 1 and up."""
    for d in _dims(t, dims, "mark_unbacked"):
        _set_of(t, UNBACKED_ATTR).add(d)


def mark_static_address(t: torch.Tensor, guard: bool = True) -> None:
    """``t`` keeps its memory address from call to call (a KV cache, a
    buffer updated in place): CUDA graphs read it where it is instead of
    copying it into graph-owned memory on every replay (parameters and
    buffers of modules are static already).  If its address does change,
    the CUDA-graph tree records a new graph for it.  ``guard`` is accepted
    for torch's signature; armature adds no address guard either way (a
    moved tensor re-records instead of recompiling)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"armature.mark_static_address: expected a tensor, got {type(t).__name__}")
    if not isinstance(guard, bool):
        raise TypeError(f"armature.mark_static_address: guard must be a bool, got {guard!r}")
    setattr(t, STATIC_ADDRESS_ATTR, True)
