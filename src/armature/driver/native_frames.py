"""Frames run natively with their calls compiled: the policy for a graph
break inside a loop over modules.

``for layer in self.layers: if torch.rand([]) < p: continue; x = layer(x)``
(LayerDrop, in Whisper's and BART's encoders and decoders) breaks inside the
loop.  Splitting the frame there makes a resume function that continues the
loop; it inlines a *different* layer on every iteration, so it compiles once
per layer (a graph per layer, and past ``recompile_limit`` layers the rest
of the model runs as plain Python).  torch.compile instead runs such a frame
as Python and compiles each layer's ``forward`` as a frame of its own, one
graph serving every layer of a class.

armature does the same, without a frame hook: the frame's entry runs a copy
of its code whose call sites go through :class:`Router`
(codegen/routed_calls.py).  The router compiles what torch.compile would
compile as a frame of its own -- the ``forward`` (or overridden
``__call__``) of a module whose class is user code, and user functions and
methods -- and calls everything else (torch's own modules and functions,
builtins, classes) directly.  Compiled callees are *generic over
instances*: ``config.module_parameters="inputs"`` for them and their resume
functions, so their modules are guarded by type and structure and their
parameters are graph inputs; the layers of a model share one graph.

The entry is guarded like any other (what the trace read up to the break),
so when the loop stops breaking (eval mode: no LayerDrop) the frame is traced
and compiled whole again.
"""
from __future__ import annotations

import dis
import os
import sysconfig
import types

import torch

from ..codegen.routed_calls import route_calls

_OWN_DIRS = tuple(os.path.dirname(p) + os.sep for p in (torch.__file__, os.path.dirname(__file__)))
_STDLIB_DIRS = tuple({os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")})


def is_user_code(code: types.CodeType) -> bool:
    """Code torch.compile would compile as a frame: not torch's, not
    armature's, not the standard library's."""
    filename = code.co_filename
    if filename.startswith("<"):
        return True   # exec'd or generated user code
    if filename.startswith(_OWN_DIRS):
        return False
    real = os.path.realpath(filename)
    if real.startswith(_OWN_DIRS):
        return False
    installed = "site-packages" in real or "dist-packages" in real
    return installed or not real.startswith(_STDLIB_DIRS)


#: every jump opcode of the running CPython (3.13 lists them in ``hasjump``)
_JUMP_OPNAMES = frozenset(dis.opname[o] for o in (getattr(dis, "hasjump", None) or dis.hasjrel + dis.hasjabs))


def break_in_loop(frame, index: int) -> bool:
    """Whether a break before instruction ``index`` of the root frame is
    inside a loop, by torch.compile's rule: a jump after it, before the
    first return, leads back to an earlier offset.  torch.compile does not
    split such a frame (the resume functions would be one per iteration, a
    graph each); it runs the frame as Python and compiles what the frame
    calls.  The rule is a heuristic (an early ``return`` in the loop body
    hides the loop; a conditional jump that closes a loop is not inside
    it), and using torch.compile's own keeps the graphs it makes the ones
    users compare with."""
    insts = frame.instructions
    here = insts[index].offset
    for inst in insts[index + 1:]:
        if inst.opname in ("RETURN_VALUE", "RETURN_CONST"):
            return False
        if inst.opname in _JUMP_OPNAMES and isinstance(inst.argval, int) and inst.argval < here:
            return True
    return False


def loop_over_modules(frame) -> bool:
    """Whether the frame is inside a ``for`` loop whose iterator yields
    modules (or tuples holding one: ``enumerate``, ``zip``)."""
    from ..values.base import LazyValue
    from ..values.containers.containers import IteratorValue, TupleValue
    from ..values.nn.modules import ModuleValue
    from ..values.containers.real_iterator import RealIteratorValue

    def holds_module(v) -> bool:
        if type(v) is LazyValue:
            v = v._realized if v._realized is not None else v.obj
        if isinstance(v, (ModuleValue, torch.nn.Module)):
            return True
        return isinstance(v, TupleValue) and any(holds_module(i) for i in v.items)

    def yields_modules(v, depth=0) -> bool:
        if type(v) is LazyValue:
            v = v._realized
        if depth > 4 or v is None:
            return False
        if isinstance(v, (IteratorValue, RealIteratorValue)) and v.items:
            return any(holds_module(i) for i in v.items)
        inner = getattr(v, "it", None)      # enumerate(...) and other lazy iterators
        if inner is not None and yields_modules(inner, depth + 1):
            return True
        return any(yields_modules(i, depth + 1) for i in getattr(v, "its", ()) or ())

    return any(yields_modules(v) for v in frame.stack)


class Router:
    """Called by a natively run frame's rewritten call sites: a compiled
    form of user code, the callable itself for anything else."""

    __slots__ = ("backend", "dynamic", "_plain", "_compiled_fns")

    def __init__(self, backend, dynamic):
        self.backend = backend
        self.dynamic = dynamic
        #: types whose instances are called directly (no lookup next time)
        self._plain: set = set()
        #: function -> its compiled form, or None when it runs as it is
        self._compiled_fns: dict = {}

    def call(self, f, args):
        target = self._target(f)
        return f(*args) if target is None else target(*args)

    def call_kw(self, f, args, kwnames=None):
        if kwnames is None:   # 3.13: the names are the last item
            kwnames = args[-1]
            args = args[:-1]
        k = len(kwnames)
        kwargs = dict(zip(kwnames, args[len(args) - k:]))
        args = args[:len(args) - k]
        target = self._target(f)
        return f(*args, **kwargs) if target is None else target(*args, **kwargs)

    def _target(self, f):
        t = type(f)
        if t in self._plain:
            return None
        if isinstance(f, torch.nn.Module):
            return self._module_target(f)
        if t is types.FunctionType:
            return self._compiled_or_none(f)
        if t is types.MethodType:
            target = self._compiled_or_none(f.__func__)
            return types.MethodType(target, f.__self__) if target is not None else None
        self._plain.add(t)
        return None

    def _module_target(self, mod):
        from ..runtime.distributed import kind_of, runner_for
        if kind_of(mod) is not None:   # DDP / FSDP: their hooks eager, their math compiled
            return types.MethodType(runner_for(self.backend, False, self.dynamic), mod)
        cls = type(mod)
        if cls.__call__ is torch.nn.Module.__call__:
            if "forward" in mod.__dict__ or _has_hooks(mod):
                return None   # Module.__call__ runs them
            fn = cls.forward
        else:
            fn = cls.__call__
        target = self._compiled_or_none(fn)
        return types.MethodType(target, mod) if target is not None else None

    def _compiled_or_none(self, fn):
        """The compiled form of a function the router may compile (generic
        over module instances), None for one that runs as it is; looked up
        once per function (every call of a layer goes through here)."""
        try:
            return self._compiled_fns[fn]
        except KeyError:
            target = None
            if _compilable(fn):
                from ..runtime.wrappers import compiled_wrapper_for
                target = compiled_wrapper_for(fn, self.backend, self.dynamic, module_parameters="inputs")
            self._compiled_fns[fn] = target
            return target


def _compilable(fn) -> bool:
    """User code that is not a generator and carries no mark saying how
    compiled code must treat it (armature.disable, allow/disallow_in_graph,
    torch.compiler.disable): those run as they are."""
    if type(fn) is not types.FunctionType or not is_user_code(fn.__code__) or _is_generator(fn.__code__):
        return False
    from ..runtime.markers import IN_GRAPH
    marked = IN_GRAPH.get(id(fn))
    if marked is not None and marked[0] is fn:
        return False
    return not (getattr(fn, "__armature_disabled__", False) or getattr(fn, "_torchdynamo_disable", False))


def _is_generator(code) -> bool:
    import inspect
    return bool(code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR))


def _has_hooks(mod) -> bool:
    from torch.nn.modules import module as m
    return bool(mod._forward_hooks or mod._forward_pre_hooks or mod._backward_hooks or mod._backward_pre_hooks
                or m._global_forward_hooks or m._global_forward_pre_hooks or m._global_backward_hooks
                or m._global_backward_pre_hooks)


_ROUTED_CODE: dict = {}
_ROUTERS: dict = {}


def routed_runner(code: types.CodeType, backend, dynamic):
    """``run(*args, **{FN_ARG: f}, **kwargs)`` of a cache entry: ``f``'s body
    with its calls routed (the rewritten code is made once per code object)."""
    key = (code, backend, dynamic)
    new_code = _ROUTED_CODE.get(key)
    if new_code is None:
        router = _ROUTERS.get((backend, dynamic))
        if router is None:
            router = _ROUTERS[(backend, dynamic)] = Router(backend, dynamic)
        new_code = _ROUTED_CODE[key] = route_calls(code, router.call, router.call_kw)
        from ..runtime.frame_view import same_user_frame
        same_user_frame(new_code, code)   # (locals() in a resume function's code: runtime/frame_view.py)

    from ..names import FN_ARG

    def run(*args, **kwargs):
        f = kwargs.pop(FN_ARG)   # (kwargs is this call's own dict)
        fn = types.FunctionType(new_code, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
        if f.__kwdefaults__:
            fn.__kwdefaults__ = f.__kwdefaults__
        return fn(*args, **kwargs)

    return run


def reset() -> None:
    _ROUTED_CODE.clear()
    _ROUTERS.clear()
