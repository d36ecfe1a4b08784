"""The ``numpy`` namespace inside compiled code: its functions, its classes
(dtypes and scalar types, ``finfo``/``iinfo``), and the bridges between
torch and NumPy (``Tensor.numpy()``, ``torch.from_numpy``).

A NumPy function becomes one graph node computing its ``torch._numpy``
counterpart (targets.NumpyFunction); one without a counterpart, or one that
draws from NumPy's global random state, is unsupported (a graph break: NumPy
runs it as Python).  Functions that only answer questions about dtypes fold
on the spot with real NumPy.
"""
from __future__ import annotations

import functools

import torch

from ...diagnostics.errors import Unsupported
from ..base import CallableConstantValue, Value, realize, concrete
from ..constant import ConstantValue
from ..tensors.tensor import TensorValue
from . import shadow as sh
from . import targets
from .ndarray import _BREAK, NdarrayValue, graph_args, node_call
from .. import kinds

#: NumPy functions answered with real NumPy while tracing: their results are
#: dtypes, booleans or numbers that depend on dtypes only, never on data
_FOLDED = frozenset({
    "numpy.issubdtype", "numpy.result_type", "numpy.promote_types", "numpy.can_cast",
    "numpy.min_scalar_type", "numpy.isdtype", "numpy.ndim", "numpy.shape", "numpy.size",
    "numpy.isscalar", "numpy.iscomplexobj", "numpy.isrealobj",
})

_RANDOM_HINT = ("NumPy's random streams cannot be reproduced by the graph (torch's generator draws "
                "different numbers); " + _BREAK)


@functools.lru_cache(maxsize=1)
def _namespace() -> dict[int, tuple[object, object, str]]:
    """id(NumPy callable) -> (callable, torch._numpy counterpart or None, qualified name)."""
    np = sh.np()
    import torch._numpy as tnp
    table: dict[int, tuple[object, object, str]] = {}
    for np_mod, tnp_mod in ((np, tnp), (np.fft, tnp.fft), (np.linalg, tnp.linalg), (np.random, tnp.random)):
        for name in dir(np_mod):
            if name.startswith("_"):
                continue
            obj = getattr(np_mod, name, None)
            if not callable(obj) or isinstance(obj, type):
                continue
            counterpart = getattr(tnp_mod, name, None)
            if id(obj) in table and (table[id(obj)][1] is not None or not callable(counterpart)):
                continue   # an alias (np.concat is np.concatenate): the name torch._numpy knows wins
            table[id(obj)] = (obj, counterpart if callable(counterpart) else None, f"{np_mod.__name__}.{name}")
    return table


def numpy_callable_name(obj) -> str | None:
    entry = _namespace().get(id(obj))
    if entry is not None and entry[0] is obj:
        return entry[2]
    return None


class NumpyFunctionValue(CallableConstantValue):
    """A function of ``numpy`` (or ``numpy.fft``/``linalg``/``random``)."""

    def __init__(self, fn, qualname: str, counterpart, source=None):
        super().__init__(fn, source)
        self.qualname = qualname
        self.counterpart = counterpart

    def call(self, tx, args, kwargs):
        name = self.qualname
        if name.startswith("numpy.random."):
            raise Unsupported(f"{name}() inside a compiled function", hint=_RANDOM_HINT)
        if name in ("numpy.asarray", "numpy.array", "numpy.asanyarray") and len(args) == 1 and not kwargs \
                and isinstance(realize(tx.ctx, args[0]), TensorValue):
            # eager converts through Tensor.__array__, which is t.numpy() (np.array copies it)
            arr = tensor_numpy(tx, realize(tx.ctx, args[0]), [], {})
            return arr.call_method(tx, "copy", [], {}) if name == "numpy.array" else arr
        if name in _FOLDED:
            return fold_on_shadows(tx, name, self.fn, args, kwargs)
        if self.counterpart is None:
            raise Unsupported(f"{name}() has no counterpart in torch._numpy, so it cannot be put in the graph",
                              hint=_BREAK)
        if name == "numpy.clip":   # torch._numpy names the bounds min/max
            kwargs = {{"a_min": "min", "a_max": "max"}.get(k, k): v for k, v in kwargs.items()}
        return node_call(tx, f"{name}()", targets.function_target(self.counterpart, name), args, kwargs,
                         self.fn)

    def __repr__(self):
        return f"<{self.qualname}>"


def fold_on_shadows(tx, what, fn, args, kwargs) -> Value:
    """Call real NumPy with arrays replaced by their shadows: for functions
    whose answer depends on dtypes and shapes only."""
    shadow_args = [graph_args(tx, a)[2] if isinstance(realize(tx.ctx, a), NdarrayValue) else _constant(tx, a)
                   for a in args]
    shadow_kwargs = {k: _constant(tx, v) for k, v in kwargs.items()}
    result = sh.run(f"{what}()", fn, *shadow_args, **shadow_kwargs)
    if isinstance(result, sh.np().ndarray):
        raise Unsupported(f"{what}() returned an array", hint=_BREAK)
    return ConstantValue(result)


def _constant(tx, v: Value):
    v = concrete(tx, v)
    if isinstance(v, NdarrayValue):
        return v.shadow
    if not v.is_python_constant():
        raise Unsupported(f"{v} passed to a NumPy function that is folded while tracing", hint=_BREAK)
    return v.as_python_constant()


class NumpyClassValue(CallableConstantValue):
    """A NumPy class: ``np.ndarray``, ``np.dtype``, a scalar type
    (``np.float32``), ``np.finfo``/``np.iinfo``.  As a constant it works
    with ``isinstance`` and as a dtype argument."""

    def python_type(self):
        return type(self.fn)

    def getattr(self, tx, name):
        try:
            attr = getattr(self.fn, name)
        except AttributeError as e:
            from ...diagnostics.errors import user_error
            raise user_error(AttributeError, str(e))
        if isinstance(attr, (str, int, float, bool, type(None))):
            return ConstantValue(attr)
        raise Unsupported(f"attribute {name!r} of {self.fn.__qualname__}", hint=_BREAK)

    def call(self, tx, args, kwargs):
        np = sh.np()
        cls = self.fn
        if cls in (np.dtype, np.finfo, np.iinfo):
            result = sh.run(f"numpy.{cls.__name__}()", cls, *[_constant(tx, a) for a in args],
                            **{k: _constant(tx, v) for k, v in kwargs.items()})
            return ConstantValue(result)
        if issubclass(cls, np.generic) and sh.dtype_name(cls) is not None:
            vals = [realize(tx.ctx, a) for a in args]
            if not kwargs and len(vals) <= 1 and all(v.is_python_constant() for v in vals):
                c = [v.as_python_constant() for v in vals]
                if all(isinstance(x, (int, float, bool, complex, np.generic)) for x in c):
                    return ConstantValue(sh.run(f"numpy.{cls.__name__}()", cls, *c))
            import torch._numpy as tnp
            counterpart = getattr(tnp, cls.__name__, None)
            if counterpart is not None and not kwargs and len(args) == 1:
                return node_call(tx, f"numpy.{cls.__name__}()",
                                 targets.function_target(counterpart, f"numpy.{cls.__name__}"), args, {}, cls)
        raise Unsupported(f"calling numpy.{cls.__name__} inside a compiled function", hint=_BREAK)

    def __repr__(self):
        return f"<numpy class {self.fn.__qualname__}>"


# --- torch <-> NumPy ------------------------------------------------------------

def tensor_numpy(tx, t: TensorValue, args, kwargs) -> Value:
    """``t.numpy()`` (``force=`` too): an ndarray over the same tensor, as in
    eager (writes through either are seen through the other)."""
    from ..containers.containers import unwrap_constants
    a, k = unwrap_constants(args, kwargs, what="Tensor.numpy()")
    force = bool(a[0]) if a else bool(k.pop("force", False))
    if k or len(a) > 1:
        raise Unsupported("Tensor.numpy() with unexpected arguments", hint=_BREAK)
    fake = t.fake
    if sh.numpy_dtype_of(fake.dtype) is None:
        raise Unsupported(f"Tensor.numpy() of a {fake.dtype} tensor (NumPy has no such dtype)", hint=_BREAK)
    if not force and (fake.requires_grad or fake.device.type != "cpu" or fake.is_conj() or fake.is_neg()):
        raise Unsupported("Tensor.numpy() of a tensor that requires grad, is not on the CPU, or has a conj/neg "
                          "bit: eager raises", hint=_BREAK)
    from ..tensors.tensor import _real_of
    real = None
    if t.source is not None:
        try:
            real = _real_of(tx, t)
        except Unsupported:
            real = None
    view = kinds.graph_call(tx, "call_method", "detach", [t], {})
    if force:
        for m in ("cpu", "resolve_conj", "resolve_neg"):
            view = kinds.graph_call(tx, "call_method", m, [view], {})
    return NdarrayValue(view, sh.shadow_of_tensor(view.fake, real), layout_known=sh.layout_known(view.fake))


class TorchFromNumpyValue(CallableConstantValue):
    """``torch.from_numpy``/``torch.as_tensor``/``torch.tensor`` /
    ``torch.asarray``: given an ndarray, the tensor under it (shared memory,
    as in eager) or a copy; otherwise the ordinary torch function."""

    def call(self, tx, args, kwargs):
        fn = self.fn
        first = realize(tx.ctx, args[0]) if args else None
        if not isinstance(first, NdarrayValue):
            if fn is torch.from_numpy:
                raise Unsupported("torch.from_numpy() of something that is not an ndarray in the trace",
                                  hint=_BREAK)
            return kinds.TorchFunctionValue(fn, self.source).call(tx, args, kwargs)
        if first.scalar and fn is torch.from_numpy:
            from ...diagnostics.errors import user_error
            raise user_error(TypeError, f"expected np.ndarray (got {first.python_type().__name__})")
        if len(args) > 1 or fn is torch.from_numpy and kwargs:
            raise Unsupported(f"torch.{fn.__name__}() of an ndarray with these arguments", hint=_BREAK)
        t = first.tensor
        if fn is torch.tensor:
            t = kinds.graph_call(tx, "call_method", "clone", [t], {})
        if kwargs:
            if set(kwargs) - {"dtype", "device"}:
                raise Unsupported(f"torch.{fn.__name__}() of an ndarray with {sorted(kwargs)}", hint=_BREAK)
            t = kinds.graph_call(tx, "call_method", "to", [t], kwargs)
        return t

    def __repr__(self):
        return f"<torch.{self.fn.__name__} (NumPy-aware)>"


_BRIDGES = ("from_numpy", "as_tensor", "tensor", "asarray")


def is_bridge(obj) -> bool:
    return any(getattr(torch, n, None) is obj for n in _BRIDGES)


def is_numpy_callable(obj) -> bool:
    np = sh.np()
    if isinstance(obj, np.ufunc):
        return True
    if isinstance(obj, type):
        return False
    mod = getattr(obj, "__module__", None)
    return isinstance(mod, str) and (mod == "numpy" or mod.startswith("numpy."))
