"""torch functions, Python modules, and torch's context managers.

Any function that belongs to torch's operator surface (``torch.*`` builtins,
``torch.nn.functional``, ``torch.linalg``/``fft``/``special``, ``torch.ops``,
Tensor method descriptors) becomes one graph node, run on fake tensors for
its metadata.  Functions that change global state are refused by name.
"""
from __future__ import annotations

import types
from typing import Any

import torch

from ...diagnostics.errors import Unsupported
from ..base import CallableConstantValue, Value, realize
from ..constant import ConstantValue
from ..builder import wrap
from .. import kinds

# Python-level torch modules whose functions go into the graph whole rather
# than being inlined.
_GRAPH_PY_MODULES = frozenset({"torch.nn.functional", "torch.functional", "torch._tensor",
                               "torch.nn.modules.utils"})

_REFUSED = {
    "manual_seed": "torch.manual_seed() changes global RNG state",
    "seed": "torch.seed() changes global RNG state",
    "set_rng_state": "torch.set_rng_state()", "get_rng_state": "torch.get_rng_state()",
    "set_default_dtype": "torch.set_default_dtype() changes global state",
    "set_default_device": "torch.set_default_device() changes global state",
    "set_default_tensor_type": "torch.set_default_tensor_type() changes global state",
    "use_deterministic_algorithms": "torch.use_deterministic_algorithms() changes global state",
    "set_num_threads": "torch.set_num_threads()", "set_printoptions": "torch.set_printoptions()",
    "save": "torch.save() does I/O", "load": "torch.load() does I/O",
    "grad": "torch.autograd.grad()", "backward": "torch.autograd.backward()",
    "_set_grad_enabled": "torch._C._set_grad_enabled() called directly",
    "set_grad_enabled": "torch.set_grad_enabled",
    "synchronize": "device synchronisation", "empty_cache": "allocator control",
}

#: torch._C namespaces whose functions are ATen operators: pure given their
#: arguments, so running them on fake tensors (factories included) is safe
_ATEN_NAMESPACES = ("_VariableFunctions", "_nn", "_fft", "_linalg", "_special", "_nested", "_sparse")
#: names of torch's C functions that only read global state
_QUERY_PREFIXES = ("is_", "_is_", "get_", "_get_", "_len_", "has_", "_has_", "are_", "_are_")


#: C functions that only record usage statistics: skipped while tracing
#: (nothing a program can observe depends on them)
IGNORED_STATE_FUNCTIONS = frozenset({"_log_api_usage_once"})


def is_aten_function(fn: Any) -> bool:
    """``torch.zeros``, ``torch._C._nn.linear``...: an ATen operator."""
    name = getattr(fn, "__name__", None)
    if name is None:
        return False
    for ns in _ATEN_NAMESPACES:
        if getattr(getattr(torch._C, ns, None), name, None) is fn:
            return True
    return False


def is_state_query(fn: Any) -> bool:
    """A C function of torch outside ATen that, by its name, only reads
    global state (``torch.is_autocast_enabled``, ``_len_torch_dispatch_stack``).
    Anything else outside ATen may change global state
    (``_push_on_torch_function_stack``, ``_vmap_increment_nesting``...) and
    is never called while tracing: it is a graph break."""
    name = getattr(fn, "__name__", "")
    return name.startswith(_QUERY_PREFIXES) and name not in _REFUSED or name in IGNORED_STATE_FUNCTIONS


_COMPILING_QUERIES = None


def _compiling_queries() -> set:
    global _COMPILING_QUERIES
    if _COMPILING_QUERIES is None:
        qs = {torch.compiler.is_compiling}
        for name in ("is_dynamo_compiling", "is_exporting"):
            f = getattr(torch.compiler, name, None)
            if f is not None and name != "is_exporting":
                qs.add(f)
        _COMPILING_QUERIES = qs
    return _COMPILING_QUERIES


def is_graph_function(obj: Any) -> bool:
    if obj in _compiling_queries():
        return True
    if isinstance(obj, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return True
    if isinstance(obj, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return getattr(obj, "__objclass__", None) in (torch._C.TensorBase, torch.Tensor)
    mod = getattr(obj, "__module__", None) or ""
    if isinstance(obj, types.BuiltinFunctionType):
        if mod == "torch" or mod.startswith("torch."):
            return True
        self_ = getattr(obj, "__self__", None)
        return isinstance(self_, types.ModuleType) and self_.__name__.startswith("torch._C")
    if isinstance(obj, types.FunctionType):
        # the module the code was defined in (its globals), not __module__,
        # which functools.wraps(torch.relu) copies onto a user's function
        mod = obj.__globals__.get("__name__")
        mod = mod if type(mod) is str else ""
        return mod in _GRAPH_PY_MODULES or mod.startswith(("torch.linalg", "torch.fft", "torch.special"))
    return False


class TorchFunctionValue(CallableConstantValue):
    def call(self, tx, args, kwargs):
        fn = self.fn
        if fn in _compiling_queries():
            return ConstantValue(True)
        if fn is torch.is_grad_enabled or fn is torch._C.is_grad_enabled:
            # the trace's own grad mode (the mode at entry is guarded)
            return ConstantValue(tx.ctx.grad_enabled)
        if fn is torch.is_inference_mode_enabled or fn is torch._C.is_inference_mode_enabled:
            # the trace's own inference mode (the mode at entry is guarded)
            return ConstantValue(tx.ctx.inference_enabled)
        if (fn is torch.is_inference or fn is torch.Tensor.is_inference) and len(args) == 1 and not kwargs:
            from .inference import is_inference
            arg = realize(tx.ctx, args[0])
            if isinstance(arg, kinds.TensorValue):
                return ConstantValue(is_inference(tx, arg))
        if (fn is torch.Tensor.__iter__ or fn is torch.Tensor.__reversed__) and len(args) == 1 and not kwargs \
                and isinstance(realize(tx.ctx, args[0]), kinds.TensorValue):
            return kinds.TensorMethodValue(realize(tx.ctx, args[0]), fn.__name__).call(tx, [], {})
        name = getattr(fn, "__name__", "")
        if name in _REFUSED:
            raise Unsupported(f"{_REFUSED[name]} inside a compiled function",
                              hint="call it outside the compiled function")
        if name.startswith("_foreach_"):
            from .number_arguments import foreach_with_tensor
            kept = foreach_with_tensor(tx, fn, args, kwargs)   # (a 0-d tensor weight or base: one graph)
            if kept is not None:
                return kept
        return kinds.graph_call(tx, "call_function", fn, args, kwargs)

    def __repr__(self):
        return f"<torch op {getattr(self.fn, '__qualname__', self.fn)}>"


class PythonModuleValue(Value):
    """A Python module.  One found without a source (``import m`` /
    ``from . import m`` inside the frame, a function's ``__module__``) is
    read through the module object itself, a constant (the import guards
    ``sys.modules``): its attributes then have sources, and are guarded
    like any global (a tensor becomes a graph input, an int read there is
    checked again on the next call)."""

    def __init__(self, module: types.ModuleType, source=None):
        if source is None:
            from ...guards.sources import constant_source
            source = constant_source(module, module.__name__)
        super().__init__(source)
        self.module = module

    def python_type(self):
        return types.ModuleType

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.module

    def getattr(self, tx, name):
        from ...guards.sources import AttrSource
        pending = tx.ctx.effects.pending_global(self.module.__dict__, name)
        if pending is not None:   # a global of this module the trace wrote (``global x; x = ...``)
            from ...effects import DELETED
            if pending is not DELETED:
                return pending
            from ...diagnostics.errors import user_error
            raise user_error(AttributeError, f"module {self.module.__name__!r} has no attribute {name!r}")
        try:
            obj = getattr(self.module, name)
        except AttributeError:
            raise Unsupported(f"module {self.module.__name__!r} has no attribute {name!r}")
        trusted = self.module.__name__.split(".")[0] == "torch" and not tx.ctx.config.guard_torch_internals
        if trusted:
            return wrap(tx.ctx, obj, None) if not isinstance(obj, torch.Tensor) else \
                wrap(tx.ctx, obj, AttrSource(self.source, name))
        return wrap(tx.ctx, obj, AttrSource(self.source, name))

    def __repr__(self):
        return f"<module {self.module.__name__}>"


# --- grad-mode context managers ------------------------------------------------

class GradModeValue(Value):
    """``torch.no_grad()`` / ``enable_grad()`` / ``set_grad_enabled(b)``.

    ``set_grad_enabled(b)`` switches the mode when constructed (as torch does)
    and restores the previous mode on exit; the other two switch on enter.
    Every switch is recorded in the graph as ``torch._C._set_grad_enabled``
    so the compiled graph runs each op under the right mode.
    """

    def __init__(self, cls: type, target: bool, prev: bool | None = None):
        super().__init__()
        self.cls, self.target, self.prev = cls, target, prev

    def python_type(self):
        return self.cls

    def enter(self, tx) -> Value:
        if self.cls is not torch.set_grad_enabled:
            self.prev = tx.ctx.grad_enabled
            tx.ctx.set_grad_enabled(self.target)
        elif tx.ctx.grad_enabled != self.target:   # (its __enter__ sets the mode it was made with)
            tx.ctx.set_grad_enabled(self.target)
        return ConstantValue(None)

    def call(self, tx, args, kwargs):
        """Used as a decorator: ``_DecoratorContextManager.__call__``
        (grad_decorators.py).  set_grad_enabled's first restores the mode
        from before its constructor switched it."""
        from .grad_decorators import decorate
        decorated = decorate(tx, self.cls, None if self.cls in (torch.no_grad, torch.enable_grad) else self.target,
                             args, kwargs)
        if self.cls is torch.set_grad_enabled and self.prev is not None:
            tx.ctx.set_grad_enabled(self.prev)
        return decorated

    def exit(self, tx) -> Value:
        tx.ctx.set_grad_enabled(self.prev)
        return ConstantValue(False)

    def getattr(self, tx, name):
        if name in ("__enter__", "__exit__"):
            return _CtxMethod(self, name)
        if name == "__class__":
            return GradModeClassValue(self.cls)
        raise Unsupported(f"attribute {name!r} of {self.cls.__name__}")

    def reconstruct(self, out):
        if self.prev is None:  # not entered yet: a fresh context object
            out.instr("PUSH_NULL")
            out.load_const(self.cls)
            if self.cls is torch.set_grad_enabled:
                out.load_const(self.target)
                out.call(1)
            else:
                out.call(0)
            return
        raise Unsupported(f"a {self.cls.__name__} context object that is already active")


class _CtxMethod(Value):
    def __init__(self, ctxval, name):
        super().__init__()
        self.ctxval, self.name = ctxval, name

    def call(self, tx, args, kwargs):
        return self.ctxval.enter(tx) if self.name == "__enter__" else self.ctxval.exit(tx)

    def reconstruct(self, out):
        # The ``__exit__`` left on the stack by a ``with`` block that a graph
        # break splits: leaving the block must restore the mode from before it.
        from ...runtime import replay
        if self.name == "__exit__" and hasattr(self.ctxval, "reconstruct_exit"):
            return self.ctxval.reconstruct_exit(out)
        if self.name != "__exit__" or self.ctxval.prev is None:
            raise Unsupported(f"rebuilding {self.ctxval.cls.__name__}.{self.name}")
        out.call_helper(replay.grad_mode_exit, self.ctxval.cls, self.ctxval.prev, self.ctxval.target, pop=False)


class GradModeClassValue(Value):
    """The classes themselves: calling one makes a GradModeValue."""

    def __init__(self, cls, source=None):
        super().__init__(source)
        self.cls = cls

    def python_type(self):
        return type

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.cls

    def call(self, tx, args, kwargs):
        cls = self.cls
        if cls is torch.inference_mode:
            from .inference import make_inference_mode
            return make_inference_mode(tx, args, kwargs)
        if cls in (torch.no_grad, torch.enable_grad):
            from .grad_decorators import decorate, is_function_argument
            if is_function_argument(args, kwargs, "orig_func"):   # ``torch.no_grad(fn)``
                return decorate(tx, cls, None, args or [kwargs["orig_func"]], {})
            if args or kwargs:
                raise Unsupported(f"{cls.__name__}() with arguments {args} {kwargs}")
            return GradModeValue(cls, cls is torch.enable_grad)
        mode = (args[0] if args else kwargs["mode"]).as_python_constant()
        prev = tx.ctx.grad_enabled
        tx.ctx.set_grad_enabled(bool(mode))
        return GradModeValue(cls, bool(mode), prev)


GRAD_MODE_CLASSES = (torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.inference_mode)


def wrap_context_object(ctx, obj, source):
    """Context-manager instances passed into the frame (e.g. a stored
    ``torch.no_grad()``, or the one a graph break hands to a resume
    function, whose ``prev`` is what leaving the block restores)."""
    t = type(obj)
    if t is torch.inference_mode:
        from .inference import wrap_inference_mode
        return wrap_inference_mode(ctx, obj, source)
    if t in (torch.no_grad, torch.enable_grad, torch.set_grad_enabled):
        prev = getattr(obj, "prev", None)
        if prev is not None and source is not None:
            from ...guards.guard import Guard, Kind
            from ...guards.sources import AttrSource
            ctx.guards.add(Guard(Kind.CONSTANT_MATCH, AttrSource(source, "prev"), prev))
        target = getattr(obj, "mode", t is torch.enable_grad)
        return GradModeValue(t, bool(target), prev)
    return None


class GraphBreakValue(Value):
    """``armature.graph_break``: calling it splits the frame."""

    def call(self, tx, args, kwargs):
        raise Unsupported("armature.graph_break() was called", hint="remove the call to keep one graph")

    def reconstruct(self, out):
        from ...runtime.markers import graph_break
        out.load_const(graph_break)


class DisabledValue(Value):
    """A function wrapped by ``armature.disable``: always runs natively."""

    def __init__(self, fn, source=None):
        super().__init__(source)
        self.fn = fn

    def call(self, tx, args, kwargs):
        raise Unsupported(f"call to {getattr(self.fn, '__qualname__', self.fn)}, which is marked "
                          "armature.disable", hint="it runs as plain Python between two graphs")

    def reconstruct(self, out):
        if self.source is not None:
            return self.source.emit(out)
        out.load_const(self.fn)


class CheckValue(TorchFunctionValue):
    """``torch._check(cond)`` / ``torch._check_is_size(n)``: a fact about a
    symbolic size or scalar, told to the ShapeEnv (so a later branch on a
    data-dependent value can be decided).  Like torch.compile, armature
    trusts the fact: it is not re-checked at run time."""

    def call(self, tx, args, kwargs):
        from ...diagnostics.errors import user_error
        from .symbolic import _evaluate
        if not args:
            raise Unsupported(f"{self.fn.__name__}() without a condition")
        cond = realize(tx.ctx, args[0])
        if isinstance(cond, kinds.SymbolicNumberValue) and cond.sym is not None:
            _evaluate(lambda: self.fn(cond.sym))
            return ConstantValue(None)
        if isinstance(cond, ConstantValue):
            value = cond.value
            if self.fn is torch._check_is_size:
                ok = isinstance(value, int) and value >= 0
            else:
                ok = bool(value)
            if not ok:
                message = args[1].as_python_constant() if len(args) > 1 and args[1].is_python_constant() else None
                text = message() if callable(message) else f"Expected cond to be True, but got False. {message or ''}"
                raise user_error(RuntimeError, text.strip())
            return ConstantValue(None)
        raise Unsupported(f"{self.fn.__name__}() of {cond}")
