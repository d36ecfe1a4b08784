"""Conversions of a module made in the frame: ``nn.Linear(4, 4).double()``,
``.to(torch.float64)``, ``.requires_grad_(False)``, ``.eval()``...

Inlined, these run ``Module._apply``, which sets ``param.data``: a graph
break inside torch's code, and a resume function guarded on the per-call
closure of ``_apply`` (a recompile on every call).  They only transform the
module they are called on (and its submodules), so they are modelled
instead: applied to the template while tracing, so the rest of the trace
sees the converted module (dtypes, devices, ``requires_grad``,
``training``), and recorded for the run, which makes the same calls on the
real module in the same order.

Where the real module is built:

* a module with parameters built by the setup (a ``NewModuleSource``, or a
  submodule reached from one): the call becomes a step of the setup, after
  the constructions before it (``fresh_modules.emit_setup``), so the setup
  runs ``m = Linear(4, 4); m.double()`` before the graph reads ``m``'s
  parameters;
* a module without parameters built while tracing (``NewModuleValue``, no
  source yet): the call is kept on its Value; residual code that rebuilds
  it (it escapes) makes the same calls after the constructor, and so does
  the setup if the module later goes into one it builds.

Moving a conversion before the graph is faithful only if the graph did not
use the module's tensors before the call (it would have used the
unconverted ones); it draws no random numbers, so the random stream is
untouched.  What must hold, or the call is a graph break at the call site
(it then runs natively, and the module is handed on as one made in the
frame):

* the module is one the setup builds in this trace (not one passed in,
  not one handed over from before a break);
* no parameter or buffer of its tree was read by this trace yet, and no
  attribute of a module of the tree was written in it (the writes are
  replayed after the graph, after the setup's conversion);
* every module of the tree is of a torch.nn class, and the methods the
  conversion reaches are torch's (a user override could do anything);
* the arguments are constants; devices are CPU or CUDA; not while tracing
  speculatively (but in the audit of a user module's constructor, on a
  submodule it made: applied to the audit's template only, as the real
  constructor, run by the setup, makes the call itself); and, for the conversions that touch tensors (all but
  ``train``/``eval``), not under a torch function mode (it would see the
  tensor calls) or in inference mode (the real tensors would be inference
  tensors, the template's are not).
"""
from __future__ import annotations

import types

import torch

from ...diagnostics.errors import Unsupported
from ..base import Value, concrete
from ..constant import ConstantValue
from .. import kinds

#: the conversions modelled, and the methods of every module of the tree
#: they reach (besides their own)
CONVERSIONS = {
    "double": ("_apply",), "float": ("_apply",), "half": ("_apply",), "bfloat16": ("_apply",),
    "to": ("_apply",), "type": ("_apply",), "cpu": ("_apply",), "cuda": ("_apply",),
    "train": ("train",), "eval": ("train",),
    "requires_grad_": ("parameters", "named_parameters", "_named_members", "named_modules"),
    "zero_grad": ("parameters", "named_parameters", "_named_members", "named_modules"),
}
#: methods that return ``self`` (``zero_grad`` returns None)
_RETURNS_SELF = frozenset(CONVERSIONS) - {"zero_grad"}
_CONST_TYPES = (bool, int, float, str, type(None), torch.dtype, torch.device, torch.memory_format)
_DEVICE_TYPES = ("cpu", "cuda")


def conversion_method(tx, value, name: str):
    """The Value of ``value.<name>`` when it is a conversion of a module made
    in the frame (None: the ordinary attribute lookup applies)."""
    if name not in CONVERSIONS or not isinstance(value, (kinds.FreshModuleValue, kinds.NewModuleValue)):
        return None
    mod = value.mod
    if name in value.attrs or name in mod.__dict__:
        return None
    from ..objects.objects import find_class_attr
    _raw, owner = find_class_attr(type(mod), name)
    if owner is None or not _trusted(owner):   # (a class's own override: inlined as it is)
        return None
    return ConversionMethod(value, name)


def _trusted(owner: type) -> bool:
    return owner.__module__ == "torch.nn" or owner.__module__.startswith("torch.nn.")


def _apply_calls(mod, calls):
    """Residual code: the conversions the frame made, in its order."""
    for name, args, kwargs in calls:
        getattr(mod, name)(*args, **kwargs)
    return mod


def emit_with_calls(out, push_module, calls) -> None:
    """Push the module ``push_module(out)`` pushes, after making ``calls``
    on it (a list of (name, args, kwargs) of constants)."""
    if not calls:
        push_module(out)
        return
    out.instr("PUSH_NULL")
    out.load_const(_apply_calls)
    push_module(out)
    out.load_const(tuple(calls))
    out.call(2)


class ConversionMethod(Value):
    """``module.double`` and friends on a module made in the frame."""

    def __init__(self, owner, name: str):
        super().__init__()
        self.owner, self.name = owner, name

    def python_type(self):
        return types.MethodType

    def call(self, tx, args, kwargs):
        owner, name = self.owner, self.name
        what = f"{type(owner.mod).__name__}.{name}() on a module made in the frame"
        a, k = _constants(tx, args, kwargs, what)
        _check_context(tx, name, what)
        step = _where(tx, owner, what)
        _check_tree(tx, owner, name, what)
        _check_arguments(name, a, k, what)
        try:
            getattr(owner.mod, name)(*a, **k)   # the template: the trace's own object
        except Exception as e:  # noqa: BLE001  (eager raises it: the break runs the call natively)
            raise Unsupported(f"{what}: {type(e).__name__}: {e}")
        step(name, tuple(a), dict(k))
        return owner if name in _RETURNS_SELF else ConstantValue(None)

    def reconstruct(self, out):
        # (a break at the call runs it natively: the bound method, as eager has it)
        out.reconstruct(self.owner)
        out.instr("LOAD_ATTR", self.name)

    def __repr__(self):
        return f"<conversion {self.name} of {self.owner}>"


def _constants(tx, args, kwargs, what):

    def const(v):
        v = concrete(tx, v)
        if not v.is_python_constant():
            raise Unsupported(f"{what} with the argument {v}, which is not a constant")
        c = v.as_python_constant()
        if type(c) not in _CONST_TYPES:
            raise Unsupported(f"{what} with the argument {c!r}")
        return c

    return [const(v) for v in args], {n: const(v) for n, v in kwargs.items()}


def _check_context(tx, name, what) -> None:
    from ..tensors.torch_function import state
    ctx = tx.ctx
    if getattr(ctx.graph, "is_sandbox", False) and not getattr(ctx, "auditing_construction", False):
        raise Unsupported(f"{what} while tracing speculatively")
    if CONVERSIONS[name] == ("train",):
        return   # (flags only: no tensor is touched)
    if ctx.inference_enabled or ctx.initial_inference_enabled:
        raise Unsupported(f"{what} in inference mode")
    if state(ctx).mode_active():
        raise Unsupported(f"{what} under a torch function mode (it sees the conversion's tensor calls)")


def _where(tx, owner, what):
    """Where the call is recorded: a function of (name, args, kwargs)."""
    from .fresh_modules import made_in_frame, record_call
    if getattr(tx.ctx, "auditing_construction", False):
        # a user module's __init__ traced in a sandbox (user_module_construction.py):
        # the real constructor makes the call itself, on a submodule it made
        if not _made_by_the_constructor(tx.ctx, owner):
            raise Unsupported(f"{what}, in a module constructor, of a module it did not make")
        return lambda *call: None
    if isinstance(owner, kinds.NewModuleValue) and owner.source is None:
        return lambda *call: owner.calls.append(call)
    if made_in_frame(owner.source):
        return lambda *call: record_call(tx.ctx, owner.source, call)
    raise Unsupported(f"{what} after a graph break (the module is an argument of the resume function)",
                      hint="convert the module right after creating it, before any graph break")


def _made_by_the_constructor(ctx, owner) -> bool:
    from .fresh_modules import _Construction, constructions, made_in_frame
    if not made_in_frame(owner.source):
        return False
    root = owner.source.root()
    return any(c.source is root for c in constructions(ctx) if isinstance(c, _Construction))


def _check_tree(tx, owner, name, what) -> None:
    """The module and its submodules: torch.nn classes with torch's
    methods, no member read and no attribute written by the trace so far."""
    from ..objects.objects import find_class_attr
    ctx = tx.ctx
    read = {id(gi.real) for gi in ctx.graph.inputs}
    helpers = CONVERSIONS[name]
    guarded = set()
    for sub in owner.mod.modules():
        cls = type(sub)
        if not _trusted(cls):
            raise Unsupported(f"{what}: the class {cls.__qualname__} in its tree is not one of torch.nn's "
                              "(a user module may hold modules from outside the frame)",
                              hint="create and convert the module outside the compiled function, or convert "
                                   "its torch.nn submodules where its constructor makes them")
        for method in helpers + ((name,) if sub is owner.mod else ()):
            if method in sub.__dict__:
                raise Unsupported(f"{what}: {method} is patched on a submodule")
            raw, defining = find_class_attr(cls, method)
            if defining is None or not _trusted(defining):
                raise Unsupported(f"{what}: {cls.__qualname__}.{method} is not torch's")
            if (cls, method) not in guarded:   # (a method patched on the class later recompiles)
                guarded.add((cls, method))
                kinds.wrap_class_attr(tx, cls, method, raw, defining)
        cached = ctx.value_cache.get(id(sub))
        if cached is not None and cached[0] is sub:
            v = cached[1]
            if getattr(v, "attrs", None) or getattr(v, "structure_changed", False):
                raise Unsupported(f"{what} after attributes of the module were written in the frame")
        if helpers == ("train",):
            continue   # (the training flags: plain attributes, read while tracing as constants)
        for table in ("_parameters", "_buffers"):
            for t in getattr(sub, table).values():
                if t is None:
                    continue
                cached = ctx.value_cache.get(id(t))
                if id(t) in read or cached is not None and cached[0] is t:
                    raise Unsupported(f"{what} after its parameters or buffers were used",
                                      hint="convert the module right after creating it")


def _check_arguments(name, args, kwargs, what) -> None:
    devices = []
    if name == "to":
        try:
            device, dtype, _non_blocking, _fmt = torch._C._nn._parse_to(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            raise Unsupported(f"{what}: {type(e).__name__}: {e}")
        if dtype is not None and dtype.is_complex:
            raise Unsupported(f"{what} to a complex dtype (eager warns on every call)")
        devices.append(device)
    elif name == "cuda":
        devices.append(torch.device("cuda", args[0]) if args and args[0] is not None else torch.device("cuda"))
    elif name == "type":
        dst = args[0] if args else kwargs.get("dst_type")
        if not isinstance(dst, (torch.dtype, str)):
            raise Unsupported(f"{what} with {dst!r}")
    for d in devices:
        if d is not None and torch.device(d).type not in _DEVICE_TYPES:
            raise Unsupported(f"{what} to the device {d}")
