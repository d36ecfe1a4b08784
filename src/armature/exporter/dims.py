"""``dynamic_shapes`` as torch.export takes it, turned into armature's own
dynamism: marks on the input tensors (runtime/marks.py) and the sources of
the ints that are to be symbols (the policy's ``auto_ints``).

Each tensor dim or int leaf gets one :class:`DimSpec`.  Named ``Dim``\\ s and
``Dim.DYNAMIC`` are *strict*: after the trace, :mod:`.constraints` checks
that the code did not specialise or narrow them.  ``Dim.AUTO`` may be
specialised; ``Dim.STATIC``/``None``/absent dims are static, as in
torch.export.  A derived dim (``2 * batch``) is a dimension of its own
during the trace (the ShapeEnv ties it to its root where the code relates
them); the check then requires that it is either free or equal to its
formula.
"""
from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass, field
from typing import Any

import torch

from ..graph.dynamic import DYNAMIC_ATTR, MAYBE_DYNAMIC_ATTR, STATIC_ATTR, UNBACKED_ATTR
from ..guards.sources import AttrSource, ItemSource, LocalSource, Source


@dataclass
class DimSpec:
    """What the user asked for one tensor dim or one int."""

    #: "static", "auto", "dynamic" (Dim.DYNAMIC), "named" (a Dim), "derived"
    kind: str
    #: the Dim object (named / derived), else None
    dim: Any = None
    min: int | None = None
    max: int | None = None
    #: how users name the input: ``x.size()[0]``, ``n``
    text: str = ""

    @property
    def strict(self) -> bool:
        return self.kind in ("dynamic", "named", "derived")

    @property
    def dynamic(self) -> bool:
        return self.kind != "static"

    @property
    def name(self) -> str:
        if self.dim is not None:
            return self.dim.__name__
        return self.text


@dataclass
class InputSpecs:
    #: (tensor, dim index, spec) for every dynamic tensor dim
    tensor_dims: list = field(default_factory=list)
    #: (sources the trace may read the int by, example value, spec)
    ints: list = field(default_factory=list)

    def int_sources(self) -> set:
        return {s for srcs, _, spec in self.ints if spec.dynamic for s in srcs}


def _classify(spec, text: str) -> DimSpec:
    from torch.export.dynamic_shapes import _DerivedDim, _DimHint, _DimHintType, _StaticDim, Dim
    if spec is None:
        return DimSpec("static", text=text)
    if isinstance(spec, int) and not isinstance(spec, bool):
        return DimSpec("static", text=text)
    if isinstance(spec, _DimHint):
        kind = {_DimHintType.AUTO: "auto", _DimHintType.DYNAMIC: "dynamic", _DimHintType.STATIC: "static"}[spec.type]
        return DimSpec(kind, min=spec.min, max=spec.max, text=text)
    if isinstance(spec, _StaticDim):
        return DimSpec("static", text=text)
    if isinstance(spec, _DerivedDim):
        return DimSpec("derived", dim=spec, min=_finite(spec.min), max=_finite(spec.max), text=text)
    if isinstance(spec, Dim):
        return DimSpec("named", dim=spec, min=_finite(spec.min), max=_finite(spec.max), text=text)
    raise TypeError(f"armature.export: unexpected dynamic shape spec {spec!r} for {text}")


def _finite(v):
    try:
        v = int(v)
    except Exception:   # sympy / torch infinities
        return None
    return v if abs(v) < 2 ** 62 else None


def _leaf_sources(root_names: list[Source], path) -> list[Source]:
    """The Sources the trace reads a leaf by (``x``, ``d['k']``, ``p.n``):
    ints are told apart by where they are read, not by value."""
    from torch.utils._pytree import GetAttrKey, MappingKey, SequenceKey
    out = list(root_names)
    for key in path:
        nxt = []
        for s in out:
            if isinstance(key, SequenceKey):
                nxt.append(ItemSource(s, key.idx))
            elif isinstance(key, MappingKey):
                nxt.append(ItemSource(s, key.key))
            elif isinstance(key, GetAttrKey):
                nxt.append(AttrSource(s, key.name))
        out = nxt
    return out


def combined_args(fn, args: tuple, kwargs: dict) -> dict:
    """Arguments by parameter name, as torch.export binds them (``*args``
    as a tuple, ``**kwargs`` as a dict)."""
    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    return dict(bound.arguments)


def parse(fn, args: tuple, kwargs: dict, dynamic_shapes) -> InputSpecs:
    """One DimSpec per dynamic tensor dim and per int argument."""
    from torch.export.dynamic_shapes import _tree_map_with_path
    from torch.utils._pytree import MappingKey, SequenceKey, keystr
    specs = InputSpecs()
    combined = combined_args(fn, args, kwargs)
    sig = inspect.signature(fn)
    if dynamic_shapes is None:
        tree, shapes = combined, None
    elif isinstance(dynamic_shapes, dict):
        tree, shapes = combined, dynamic_shapes
    else:
        tree, shapes = type(dynamic_shapes)(combined.values()), dynamic_shapes
    names = list(combined)

    def roots(first) -> list[Source]:
        name = first.key if isinstance(first, MappingKey) else names[first.idx]
        return [LocalSource(name)]

    def visit(path, value, *shape):
        shape = shape[0] if shape else None
        text = names[path[0].idx] if isinstance(path[0], SequenceKey) else path[0].key
        text = f"{text}{keystr(path[1:])}"
        if isinstance(value, torch.Tensor):
            per_dim = {}
            if isinstance(shape, dict):
                per_dim = dict(shape)
            elif isinstance(shape, (tuple, list)):
                per_dim = dict(enumerate(shape))
            for d in range(value.dim()):
                spec = _classify(per_dim.get(d), f"{text}.size()[{d}]")
                if spec.dynamic:
                    specs.tensor_dims.append((value, d, spec))
        elif isinstance(value, int) and not isinstance(value, bool):
            spec = _classify(shape, text)
            specs.ints.append((_leaf_sources(roots(path[0]), path[1:]), value, spec))
        return None

    if shapes is None:
        import torch.utils._pytree as pytree
        for path, value in pytree.tree_flatten_with_path(tree)[0]:
            visit(path, value)
    else:
        _tree_map_with_path(visit, tree, shapes, tree_name="inputs")
    del sig
    return specs


_MARK_ATTRS = (DYNAMIC_ATTR, MAYBE_DYNAMIC_ATTR, STATIC_ATTR, UNBACKED_ATTR)
_MISSING = object()


@contextlib.contextmanager
def marked(specs: InputSpecs):
    """Marks on the input tensors for the duration of the trace (the user's
    own marks are put back afterwards)."""
    from ..runtime.marks import mark_dynamic, maybe_mark_dynamic
    saved = {}
    for t, _, _ in specs.tensor_dims:
        if id(t) not in saved:
            saved[id(t)] = (t, {a: t.__dict__.get(a, _MISSING) for a in _MARK_ATTRS})
            for a in _MARK_ATTRS:
                t.__dict__.pop(a, None)
    try:
        for t, d, spec in specs.tensor_dims:
            if spec.kind == "named" or (spec.kind == "dynamic" and (spec.min is not None or spec.max is not None)):
                # the range is the symbol's range while tracing: code that
                # stays within it needs no guard (checked afterwards)
                mark_dynamic(t, d, min=spec.min, max=spec.max)
            else:
                maybe_mark_dynamic(t, d)
        yield
    finally:
        for t, attrs in saved.values():
            for a, v in attrs.items():
                if v is _MISSING:
                    t.__dict__.pop(a, None)
                else:
                    t.__dict__[a] = v
