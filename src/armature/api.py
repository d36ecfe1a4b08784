"""The public entry points: ``compile``, the compiled function and module
wrappers, ``reset``.

The hot path of a cached call is ``CompiledFunction.__call__``: for each
entry, run its guard function on the arguments; the first that passes runs
its transformed function.  Nothing else happens on a hit.
"""
from __future__ import annotations

import functools
import types
import warnings
from typing import Any, Callable

import torch

from . import config as config_mod
from .names import FN_ARG
from .backends import lookup_backend
from .diagnostics import logs
from .diagnostics import record as _record
from .diagnostics.errors import Unsupported
from .graph.dynamic import DynamicDimSpecialized
from .guards.build import explain_failure
from .runtime.cache import CodeCache, new_cache, reset_all
from .driver.compile_frame import compile_call
from .runtime.wrappers import TailCall
from .backends import cudagraph_step as _cudagraphs
from .runtime import stance as _stance
from .runtime import wrappers as _wrappers
from .driver import shared_code as _shared_code
from .driver import persistent_cache as _persistent
from .driver import cache_events as _cache_events
from .driver import native_frames as _native_frames
from .runtime import distributed as _distributed
from . import upcalls as _upcalls

log_recompiles = logs.artifact("recompiles")

_VALID_DYNAMIC = (None, True, False)


class CompiledFunction:
    """A compiled Python function (or a function bound to one object)."""

    def __init__(self, fn: types.FunctionType, backend: Callable, fullgraph: bool,
                 bound_self: Any = None, has_self: bool = False, dynamic: bool | None = None,
                 group: _shared_code.SharedCode | None = None, module_parameters: str | None = None):
        self._fn = fn
        #: the hidden argument of guard and transformed functions, made once
        #: (``**self._fn_arg, **kwargs`` costs what a keyword would)
        self._fn_arg = {FN_ARG: fn}
        self._backend = backend
        self._fullgraph = fullgraph
        #: the dynamic-shapes policy: None (automatic), True, False
        self._dynamic = dynamic
        self._self = bound_self
        self._has_self = has_self
        #: the code's shared caches (user compiles: driver/shared_code.py),
        #: or None for a cache of its own (resume functions and the wrappers
        #: of runtime/wrappers.py, shared by their own keys)
        self._group = group
        #: overrides config.module_parameters for this function ("inputs" for
        #: the callees of a frame run natively: driver/native_frames.py)
        self._module_parameters: str | None = module_parameters
        if group is not None:
            group.add_instance(bound_self if has_self else fn)
            self._cache: CodeCache = group.cache(module_parameters)
        else:
            self._cache = new_cache(fn.__code__)
        self._entries = self._cache.entries
        #: a resume function (its first call compiles under eager_then_compile:
        #: it inherits its caller's dynamism)
        self._resume = False
        #: {backend: CompiledFunction} for compiles under set_stance(force_backend=...)
        self._forced: dict = {}
        #: a call of this function starts a new CUDA-graph step (False for
        #: resume functions and the wrappers residual code calls:
        #: backends/cudagraph_step.py)
        self._top = True
        functools.update_wrapper(self, fn)

    def __call__(self, /, *args, **kwargs):   # (positional-only: a keyword argument may be named self)
        if self._has_self:
            args = (self._self, *args)
        self._cache.calls += 1
        if _cudagraphs.step is not None and self._top:
            _cudagraphs.step()
        if _stance.special:   # force_eager, skip_guard_eval_unsafe, force_backend
            result = self._dispatch_under_stance(args, kwargs)
            return result.run() if type(result) is TailCall else result
        f, fk = self._fn, self._fn_arg
        for entry in self._entries:
            try:
                hit = entry.guard(*args, **fk, **kwargs)
            except TypeError:  # the arguments do not bind: eager raises its own TypeError
                return f(*args, **kwargs)
            if hit:
                result = entry.run(*args, **fk, **kwargs)
                if type(result) is TailCall:
                    return result.run()
                return result
        result = self._miss(args, kwargs)
        if type(result) is TailCall:
            return result.run()
        return result

    def dispatch(self, args, kwargs):
        """One call without running a returned TailCall (the trampoline in
        TailCall.run drives chains of resume functions)."""
        if _stance.special:
            return self._dispatch_under_stance(args, kwargs)
        f, fk = self._fn, self._fn_arg
        for entry in self._entries:
            if entry.guard(*args, **fk, **kwargs):
                return entry.run(*args, **fk, **kwargs)
        return self._miss(args, kwargs)

    def _dispatch_under_stance(self, args, kwargs):
        """A call while a stance that affects cached calls is set (the
        result may be a TailCall)."""
        st = _stance.current
        f, fk = self._fn, self._fn_arg
        if st.stance == "force_eager":
            return f(*args, **kwargs)
        cf = self
        if st.force_backend is not None and st.force_backend != self._backend:
            # compiles under a forced backend live in a cache of their own:
            # they never serve calls made without it, nor the other way round
            cf = self._forced.get(st.force_backend)
            if cf is None:
                cf = self._forced[st.force_backend] = CompiledFunction(
                    f, st.force_backend, self._fullgraph, bound_self=self._self, has_self=self._has_self,
                    dynamic=self._dynamic, module_parameters=self._module_parameters)
                cf._resume = self._resume
        entries = cf._entries
        if st.skip_guard_eval_unsafe and entries:
            if len(entries) == 1:   # nothing to tell apart: no guard runs
                try:
                    return entries[0].run(*args, **fk, **kwargs)
                except TypeError:
                    from .driver.compile_frame import _binds
                    if _binds(f, args, kwargs):
                        raise
                    return f(*args, **kwargs)   # eager's own TypeError for a bad call
            for entry, guard in cf._cache.distinguishing_guards(f):
                try:
                    hit = guard(*args, **fk, **kwargs)
                except TypeError:
                    return f(*args, **kwargs)
                if hit:
                    return entry.run(*args, **fk, **kwargs)
        for entry in entries:
            try:
                hit = entry.guard(*args, **fk, **kwargs)
            except TypeError:
                return f(*args, **kwargs)
            if hit:
                return entry.run(*args, **fk, **kwargs)
        return cf._miss(args, kwargs)

    def _miss(self, args, kwargs):
        """No entry's guards passed: compile (or decide to run the original
        code) under the cache's lock, then run outside it.  A thread that
        waited on the lock first tries the entries another thread added
        meanwhile, so concurrent first calls make the entries one thread would."""
        f, fk = self._fn, self._fn_arg
        if self._group is not None and self._module_parameters is None and self._group.shared() \
                and config_mod.config.module_parameters == "attributes":
            self._share_instances()
        cache = self._cache
        with cache.lock:
            entry = _entry_for(cache.entries, args, fk, kwargs)
            if entry is None:
                entry = self._compile_miss(args, kwargs)
        if entry is _RUN_EAGER:
            return f(*args, **kwargs)
        return entry.run(*args, **fk, **kwargs)

    def _share_instances(self) -> None:
        """Two or more instances are compiled for this code: from this miss
        on, this function compiles (and looks up) in the code's cache whose
        entries take module parameters as graph inputs, so one entry serves
        every instance (driver/shared_code.py).  Entries it made before
        stay valid but are no longer consulted."""
        self._module_parameters = "inputs"
        self._cache = self._group.cache("inputs")
        self._entries = self._cache.entries

    def _compile_miss(self, args, kwargs):
        """A new entry for this call, or _RUN_EAGER (the cache's lock held)."""
        f = self._fn
        cache = self._cache
        if cache.limit_hit:
            return _RUN_EAGER
        backend = self._backend
        st = _stance.current
        if st is not _stance.DEFAULT:
            how = _stance_on_miss(self, st, args, kwargs)
            if how is _RUN_EAGER:
                return _RUN_EAGER
            if how is not None:
                backend = how
        if cache.entries:
            cache.recompiles += 1
            reason = explain_failure(f, cache.entries[0].guards, args, kwargs) or "no entry's guards passed"
            reason = _with_module_int_hint(reason, f, cache.entries[0].guards, args, kwargs)
            _note_changed_number(cache, f, args, kwargs)
            cache.recompile_reasons.append(reason)
            if _record.active:
                _record.recompiled(f, cache, reason, args, kwargs, module=self._module_of_call())
            log_recompiles.debug("recompiling %s (recompile %d): guard failed: %s%s",
                                 f.__qualname__, cache.recompiles, reason, _whitelist_hint(cache, self._dynamic))
            if len(cache.entries) >= config_mod.config.recompile_limit:
                cache.limit_hit = True
                warnings.warn(_limit_message(self, reason), RuntimeWarning, stacklevel=3)
                if _record.active:
                    _record.limit_hit(f, cache, f"hit the recompile limit ({config_mod.config.recompile_limit}); "
                                      f"last reason: {reason}", module=self._module_of_call())
                return _RUN_EAGER
        if not cache.disk_tried and st is _stance.DEFAULT and (
                self._group is not None or getattr(self, "_persist_role", None) is not None):
            # the first miss of a code a user compiled (or of a resume function
            # or callee's wrapper its entries call): entries an earlier process
            # stored (driver/persistent_cache.py), checked on this call
            cache.disk_tried = True
            if _persistent.enabled() and (loaded := _persistent.load(self, cache, args, kwargs)):
                entry = _entry_for(cache.entries, args, self._fn_arg, kwargs)
                if entry is not None:
                    return entry
                _cache_events.guard_failed(self, cache.entries[:loaded], args, kwargs)
        try:
            entry = compile_call(f, args, kwargs, backend, self._fullgraph,
                                 dynamic_sources=cache.dynamic_sources, policy=cache.policy(self._dynamic),
                                 module_parameters=self._module_parameters)
        except Unsupported as e:
            raise e.with_traceback(None) from e.__cause__
        except DynamicDimSpecialized as e:
            raise e.with_traceback(None) from None
        if entry is None:  # arguments that do not bind, or (fullgraph) the program raises: run it
            return _RUN_EAGER
        cache.add(entry)
        if backend is self._backend and _persistent.enabled():
            _persistent.store(self, cache, entry)
        if _record.active:
            _record.entry_added(f, cache, entry, module=self._module_of_call())
        return entry

    def _module_of_call(self):
        """The module when this compiles a CompiledModule's call (for the
        run record: the entries belong to its forward)."""
        return self._self if self._fn is _module_call else None

    def __get__(self, obj, objtype=None):
        # Decorating a method in a class body: bind like a function does.
        if obj is None:
            return self
        return types.MethodType(self, obj)

    def __repr__(self):
        return f"<armature compiled {self._fn.__qualname__}>"


class CompiledModule(torch.nn.Module):
    """Wraps a module: shares its parameters, buffers and submodules (the
    same dicts, so ``state_dict`` keys are identical) and forwards attribute
    access; calling it runs the compiled ``forward``."""

    def __new__(cls, *args, **kwargs):
        if cls is CompiledModule and args:   # (no arguments: copy and pickle; __setstate__ picks the class)
            cls = _protocol_class(type(args[0]))
        return super().__new__(cls)

    def __reduce_ex__(self, protocol):
        # a wrapper class made for a container protocol is not importable by
        # name: copies and pickles are made as a CompiledModule, which
        # __setstate__ turns back into the class the wrapped module needs
        reduced = super().__reduce_ex__(protocol)
        if type(self) is not CompiledModule and is_compiled_module_type(type(self)) and \
                isinstance(reduced, tuple) and len(reduced) >= 2 and reduced[1] and reduced[1][0] is type(self):
            reduced = (_blank_compiled_module, (), *reduced[2:])
        return reduced

    def __setstate__(self, state):
        super().__setstate__(state)
        cls = _protocol_class(type(self.__dict__["_orig_mod"]))
        if type(self) is CompiledModule and cls is not CompiledModule:
            object.__setattr__(self, "__class__", cls)

    def __init__(self, mod: torch.nn.Module, backend: Callable, fullgraph: bool, dynamic: bool | None = None):
        super().__init__()
        d = self.__dict__
        d["_orig_mod"] = mod
        #: the module calls run: the one compiled, even after ``_orig_mod`` is
        #: given another (as torch.compile's forward stays bound to it)
        d["_armature_target"] = mod
        d["_parameters"] = mod._parameters
        d["_buffers"] = mod._buffers
        d["_modules"] = mod._modules
        d["_non_persistent_buffers_set"] = mod._non_persistent_buffers_set
        d["_armature_backend"] = backend
        d["_armature_fullgraph"] = fullgraph
        d["_armature_dynamic"] = dynamic
        d["_armature_forwards"] = {}
        #: config.module_parameters for this module's compiled code (None: the
        #: config's; "inputs" for the modules FSDP manages: runtime/distributed.py)
        d["_armature_module_parameters"] = None
        # the caches shared with every module of this class compiled with
        # these settings; registering the instance now, before any call,
        # lets the first compile know it is shared (driver/shared_code.py)
        self._armature_group()
        from .runtime.distributed import kind_of, runner_for
        d["_armature_distributed"] = runner_for(backend, fullgraph, dynamic) if kind_of(mod) else None

    def _armature_group(self) -> _shared_code.SharedCode:
        """This module's group (kept outside the instance, which copies and
        pickles as before: a copy finds its group again)."""
        return _shared_code.for_compiled_module(self, _module_call.__code__)

    def _compiled_call(self) -> CompiledFunction:
        mp = self._armature_module_parameters
        if mp is None and getattr(self._armature_target, "_is_fsdp_managed_module", False):
            mp = "inputs"   # fully_shard'ed after compiling: FSDP swaps its parameters
        cf = self._armature_forwards.get(mp)
        if cf is None:
            cf = CompiledFunction(_module_call, self._armature_backend, self._armature_fullgraph,
                                  bound_self=self._armature_target, has_self=True, dynamic=self._armature_dynamic,
                                  group=self._armature_group(), module_parameters=mp)
            cf = self._armature_forwards.setdefault(mp, cf)   # (threads: one cache for all)
        return cf

    def __call__(self, *args, **kwargs):
        # The traced code is ``module(*args, **kwargs)``: nn.Module.__call__'s
        # semantics (hooks, a forward patched on the instance) are traced
        # and guarded, so hooks added after compiling invalidate the entry.
        if self._forward_hooks or self._forward_pre_hooks:  # hooks on the wrapper itself
            return torch.nn.Module.__call__(self, *args, **kwargs)
        if self._armature_distributed is not None:   # DDP's / FSDP's machinery eager, the math compiled
            return self._armature_distributed(self._armature_target, *args, **kwargs)
        return self._compiled_call()(*args, **kwargs)

    def forward(self, *args, **kwargs):
        if self._armature_distributed is not None:
            return self._armature_distributed(self._armature_target, *args, **kwargs)
        return self._compiled_call()(*args, **kwargs)

    def train(self, mode: bool = True):
        self._orig_mod.train(mode)
        return self

    @property
    def training(self) -> bool:  # always the original's flag
        return self.__dict__["_orig_mod"].training if "_orig_mod" in self.__dict__ else True

    @training.setter
    def training(self, mode: bool) -> None:
        if "_orig_mod" in self.__dict__:
            self._orig_mod.training = mode

    def __getattr__(self, name):
        if name in ("_orig_mod",):
            raise AttributeError(name)
        return getattr(self.__dict__["_orig_mod"], name)

    def __setattr__(self, name, value):
        if name == "__class__":   # the wrapper's own class (fully_shard makes it an FSDP subclass)
            object.__setattr__(self, name, value)
            self._armature_forwards.clear()
            return
        if name == "training":
            object.__setattr__(self, name, value)
            return
        if name == "_orig_mod":
            self._set_orig_mod(value)
            return
        setattr(self._orig_mod, name, value)

    def _set_orig_mod(self, mod) -> None:
        """``compiled._orig_mod = m`` (accelerate's extract_model_from_parallel
        gives the wrapper back the module it unwrapped): as torch.compile's
        wrapper, ``_orig_mod``, the attributes read through it and the
        parameters, buffers and submodules (state_dict) are now ``m``'s;
        calls still run the module that was compiled."""
        if not isinstance(mod, torch.nn.Module):
            raise TypeError(f"cannot assign '{type(mod).__name__}' as '_orig_mod' of a compiled module "
                            "(a torch.nn.Module is expected)")
        d = self.__dict__
        if mod is d["_orig_mod"]:
            return
        d["_orig_mod"] = mod
        for name in ("_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"):
            d[name] = getattr(mod, name)

    def __delattr__(self, name):
        delattr(self._orig_mod, name)

    def __dir__(self):
        return dir(self._orig_mod)

    def extra_repr(self):
        return f"compiled {type(self._orig_mod).__name__}"


#: the container protocol a wrapper passes on to the module it wraps
_PROTOCOL = ("__bool__", "__len__", "__iter__", "__reversed__", "__getitem__", "__contains__")
_PROTOCOL_CLASSES: dict[tuple[str, ...], type] = {}


def _forward_to_original(name: str):
    def method(self, *args):
        return getattr(self.__dict__["_orig_mod"], name)(*args)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"The wrapped module's {name}."
    return method


def _protocol_class(mod_cls: type) -> type:
    """The wrapper class for a module of class ``mod_cls``.

    Python looks special methods up on the type, so ``__getattr__``
    forwarding does not give the wrapper of a ``Sequential``, ``ModuleList``
    or ``ModuleDict`` its ``len()``, truth, iteration or indexing.  The
    wrapper's class is a subclass of CompiledModule with exactly those of
    ``_PROTOCOL`` that ``mod_cls`` has, each passed on to the wrapped module:
    ``bool(compile(nn.ModuleList()))`` is False and ``len()`` its length, as
    for the module itself, while a wrapper of a module without them stays
    neither Sized nor Iterable (what ``isinstance`` with the collections ABCs
    says of it is what it says of the module).  torch.compile's wrapper
    forwards ``len()`` only (and then ``bool()`` of a non-container raises)."""
    names = tuple(n for n in _PROTOCOL if getattr(mod_cls, n, None) is not None)
    if not names:
        return CompiledModule
    cls = _PROTOCOL_CLASSES.get(names)
    if cls is None:
        body = {n: _forward_to_original(n) for n in names}
        body["__module__"] = __name__
        body["__qualname__"] = "CompiledModule"
        cls = _PROTOCOL_CLASSES.setdefault(names, type("CompiledModule", (CompiledModule,), body))
    return cls


def _blank_compiled_module() -> CompiledModule:
    """An empty CompiledModule for copy and pickle to fill in (see
    CompiledModule.__reduce_ex__)."""
    return CompiledModule.__new__(CompiledModule)


def is_compiled_module_type(cls: type) -> bool:
    """``cls`` is the class of an ``armature.compile(module)`` wrapper."""
    return cls is CompiledModule or cls in _PROTOCOL_CLASSES.values()


_RUN_EAGER = object()


def _limit_message(cf: CompiledFunction, reason: str) -> str:
    f = cf._fn
    limit = config_mod.config.recompile_limit
    label = cf._cache.label or _shared_code.describe_code(f.__code__)
    what = f"{label} hit the recompile limit ({limit} entries)"
    if cf._group is not None:
        what += (" -- the limit counts the entries of this code across every function and module "
                 "compiled for it with these settings (per code, as torch.compile's)")
    return (f"armature: {what}; new cases run as plain Python from now on. Last reason: {reason}. "
            "Raise armature.config.recompile_limit or make the changing value a tensor.")

#: callables implemented in C that armature.compile accepts (as torch.compile
#: does): what is compiled is a Python function calling one
_C_FUNCTIONS = (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodWrapperType,
                types.WrapperDescriptorType, types.MethodDescriptorType, types.ClassMethodDescriptorType)


def _calling(fn):
    """A Python function that calls ``fn`` (a C function) with its arguments."""
    def call(*args, **kwargs):
        return fn(*args, **kwargs)
    for name in ("__name__", "__qualname__", "__doc__"):
        try:
            setattr(call, name, getattr(fn, name))
        except (AttributeError, TypeError):
            pass
    call.__wrapped__ = fn
    return call


def _entry_for(entries, args, fk, kwargs):
    """The first of ``entries`` whose guards pass (None: none does;
    _RUN_EAGER: the arguments do not bind, eager raises its own TypeError)."""
    for entry in list(entries):
        try:
            if entry.guard(*args, **fk, **kwargs):
                return entry
        except TypeError:
            return _RUN_EAGER
    return None


def _stance_on_miss(cf: CompiledFunction, st, args, kwargs):
    """What a cache miss does under a stance other than the default:
    _RUN_EAGER (run the original code, cache nothing), a backend to compile
    with instead of the function's own, or None (compile as usual).  Raises
    RecompileError under fail_on_recompile."""
    name = st.stance
    f = cf._fn
    cache = cf._cache
    if name in ("force_eager", "eager_on_recompile"):
        return _RUN_EAGER
    if name == "fail_on_recompile" or (st.skip_guard_eval_unsafe and cache.entries):
        raise _stance.RecompileError(_recompile_message(cf, st, args, kwargs))
    if name in ("eager_then_compile", "aot_eager_then_compile") and not cf._resume:
        now = _stance.record_example(f, args, kwargs)
        if cache.first_example is None:
            # the first call of this code under the stance: eager (or
            # aot_eager), remembering the inputs to compare the next call with
            cache.first_example = now
            if name == "eager_then_compile":
                return _RUN_EAGER
            return lookup_backend("aot_eager")
        _stance.apply_example_differences(cache, cache.first_example, now)
    return None


def _recompile_message(cf: CompiledFunction, st, args, kwargs) -> str:
    f = cf._fn
    code = f.__code__
    where = f"{f.__qualname__} ({code.co_filename}:{code.co_firstlineno})"
    if st.stance == "fail_on_recompile":
        head = f"armature: {where} would compile under the stance 'fail_on_recompile'"
    else:
        head = (f"armature: {where} would compile under set_stance(skip_guard_eval_unsafe=True): no cache "
                "entry accepts this call. Warm up with every kind of input before skipping guards")
    entries = cf._cache.entries
    if not entries:
        return f"{head}: it has no compiled entry yet (its first compile)"
    lines = []
    for i, entry in enumerate(entries):
        reason = explain_failure(f, entry.guards, args, kwargs) or "no guard failed"
        lines.append(f"  - entry {i}: {reason}")
    return f"{head}; guard failures:\n" + "\n".join(lines)


def _note_changed_number(cache, f, args, kwargs) -> None:
    """Automatic dynamic for Python numbers: a number that made a guard fail
    is kept symbolic from now on (see values/tensors/symbolic.py)."""
    from .guards.build import failed_guard
    from .guards.guard import Kind
    for entry in cache.entries:
        g = failed_guard(f, entry.guards, args, kwargs)
        if g is None or g == "unbound" or g.source is None:
            continue
        if g.kind is Kind.CONSTANT_MATCH and type(g.expected) in (int, float):
            if _module_int(f, g, args, kwargs):
                if entry is cache.entries[0]:
                    log_recompiles.debug("%s is an int attribute of a module: static, as torch.compile keeps it "
                                         "(recompiled with the new value); to make it dynamic, list it in "
                                         "ARMATURE_DYNAMIC_SOURCES, set armature.config."
                                         "allow_unspec_int_on_nn_module, or make it a tensor", g.source)
            else:
                cache.dynamic_sources.add(g.source)
        if g.kind in (Kind.TENSOR_MATCH, Kind.SHAPE, Kind.CONSTANT_MATCH):
            # automatic dynamic: every input dim (and int argument) whose
            # value changed, not only the first guard that noticed, so a
            # call that changes batch and length costs one recompile
            _note_all_changes(cache, f, entry, args, kwargs)
        from .values.containers.real_iterator import note_changed_iterator
        note_changed_iterator(cache.dynamic_sources, g.source)
        if g.kind is Kind.LEN_MATCH:  # an outside list whose length changes: len() stays symbolic
            from .guards.sources import LengthSource
            cache.dynamic_sources.add(LengthSource(g.source))
        # a parameter/buffer object replaced between calls (``self.buf = ...``):
        # from now on it is a graph input instead of a graph attribute
        from .guards.sources import LocalSource, ModuleMemberSource
        if g.kind is Kind.ID_MATCH and isinstance(g.source, ModuleMemberSource) and \
                g.source.table in ("_parameters", "_buffers"):
            cache.dynamic_sources.add(g.source)
        if g.kind is Kind.ID_MATCH and isinstance(g.source, LocalSource) and _another_instance(f, g, args, kwargs):
            cache.dynamic_sources.add(g.source)


def _with_module_int_hint(reason: str, f, guards, args, kwargs) -> str:
    """The recompile reason, told why when the failed guard is an int
    attribute of a module (static, so every new value recompiles, as under
    torch.compile: a step counter read in forward is the usual cause)."""
    from .guards.build import failed_guard
    from .guards.guard import Kind
    g = failed_guard(f, guards, args, kwargs)
    if g is None or g == "unbound" or g.source is None or g.kind is not Kind.CONSTANT_MATCH \
            or not _module_int(f, g, args, kwargs):
        return reason
    first, _, rest = reason.partition("\n")
    hint = (" [an int attribute of a module: static, as torch.compile keeps them; make it a tensor, or set "
            "armature.config.allow_unspec_int_on_nn_module = True to make it dynamic once it changes]")
    return first + hint + ("\n" + rest if rest else "")


def _module_int(f, g, args, kwargs) -> bool:
    """An int attribute of a module: static (values/nn/module_numbers.py)."""
    if type(g.expected) is not int or config_mod.config.allow_unspec_int_on_nn_module:
        return False
    from .values.nn.module_numbers import is_module_number_source
    return is_module_number_source(f, g.source, args, kwargs)


def _another_instance(f, g, args, kwargs) -> bool:
    """Automatic generic arguments: the argument an identity guard fixed now
    holds another instance of the same module class (each layer of a model
    handed to one function, a module made per call), or another
    function with the same code (a lambda or closure made per call; which
    cells a closure holds is guarded where the trace depends on it:
    values/functions/closure_aliasing.py).  From now on
    that source is guarded by type and structure (by code, for a function),
    a module's parameters graph inputs, so one entry serves every instance
    (values/nn/modules.py, values/builder.py)."""
    expected = g.expected
    if not (isinstance(expected, torch.nn.Module) or type(expected) is types.FunctionType):
        return False
    from .guards.build import read_source
    now = read_source(f, g.source, args, kwargs)
    if now is expected or type(now) is not type(expected):
        return False
    return isinstance(now, torch.nn.Module) or now.__code__ is expected.__code__


def _whitelist_hint(cache, mode) -> str:
    """After automatic-dynamic recompiles: the ready-made whitelist line that
    makes the changing sizes and ints dynamic from the first compile."""
    if mode is False or not (cache.auto_dims or cache.policy(mode).auto_ints):
        return ""
    items = [f"{src}:{d}" for src, dims in cache.auto_dims.items() for d in sorted(dims)]
    items += sorted(str(s) for s in cache.policy(mode).auto_ints if not _is_module_member(s))
    return ("\n  these change between calls and are now dynamic; to make them dynamic from the first "
            f"compile: ARMATURE_DYNAMIC_SOURCES={','.join(items)}")


def _is_module_member(source) -> bool:
    from .guards.sources import ModuleMemberSource
    return isinstance(source, ModuleMemberSource)


def _note_all_changes(cache, f, entry, args, kwargs) -> None:
    from .guards.build import read_source
    from .guards.guard import Kind
    from .guards.sources import ModuleMemberSource
    for g in entry.guards:
        if g.source is None or isinstance(g.source, ModuleMemberSource):
            continue
        if g.kind is Kind.TENSOR_MATCH:
            _note_changed_dims(cache, f, g, args, kwargs)
        elif g.kind is Kind.CONSTANT_MATCH and type(g.expected) is int and g.source not in cache.dynamic_sources:
            now = read_source(f, g.source, args, kwargs)
            if type(now) is int and now != g.expected and not _module_int(f, g, args, kwargs):
                cache.dynamic_sources.add(g.source)


def _note_changed_dims(cache, f, g, args, kwargs) -> None:
    from .guards.build import read_source
    now = read_source(f, g.source, args, kwargs)
    meta = g.expected
    if not isinstance(now, torch.Tensor) or now.dim() != len(meta.size) or now.dtype != meta.dtype:
        return
    changed = {d for d, n in enumerate(meta.size) if n is not None and now.size(d) != n}
    if changed:
        cache.auto_dims.setdefault(g.source, set()).update(changed)


def _module_call(self, *args, **kwargs):
    """What a compiled module traces: a call of the original module."""
    return self(*args, **kwargs)


def _global_hooks() -> bool:
    m = torch.nn.modules.module
    return bool(m._global_forward_hooks or m._global_forward_pre_hooks or m._global_backward_hooks
                or m._global_backward_pre_hooks)


_VALID_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model: Callable | None = None, *, backend: str | Callable = "inductor", fullgraph: bool = False,
            dynamic: bool | None = None, mode: str | None = None, options: dict | None = None,
            disable: bool = False):
    """Compile a function or ``nn.Module`` (mirrors ``torch.compile``).

    Usable as ``armature.compile(fn)``, ``@armature.compile`` and
    ``@armature.compile(backend="eager")``.
    """
    if not isinstance(fullgraph, bool):
        raise TypeError(f"armature.compile: fullgraph must be a bool, got {fullgraph!r}")
    if dynamic not in _VALID_DYNAMIC:
        raise TypeError(f"armature.compile: dynamic must be None, True or False, got {dynamic!r}")
    if not isinstance(disable, bool):
        raise TypeError(f"armature.compile: disable must be a bool, got {disable!r}")
    backend_fn = lookup_backend(backend, mode=mode, options=options)

    def wrap(obj):
        if disable:
            return obj
        if isinstance(obj, torch.nn.Module):
            return CompiledModule(obj, backend_fn, fullgraph, dynamic)
        if isinstance(obj, CompiledFunction):
            obj = obj._fn if not obj._has_self else types.MethodType(obj._fn, obj._self)
        if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
            fn = obj.__func__
            return CompiledFunction(fn, backend_fn, fullgraph, bound_self=obj.__self__, has_self=True,
                                    dynamic=dynamic, group=_shared_code.for_function(fn, backend_fn, fullgraph, dynamic))
        if isinstance(obj, types.FunctionType):
            return CompiledFunction(obj, backend_fn, fullgraph, dynamic=dynamic,
                                    group=_shared_code.for_function(obj, backend_fn, fullgraph, dynamic))
        if callable(obj):
            call = getattr(type(obj), "__call__", None)
            if isinstance(call, types.FunctionType):
                return CompiledFunction(call, backend_fn, fullgraph, bound_self=obj, has_self=True, dynamic=dynamic,
                                        group=_shared_code.for_function(call, backend_fn, fullgraph, dynamic))
            if isinstance(obj, _C_FUNCTIONS):   # torch.sin, math.exp: compiled as a call of it
                return CompiledFunction(_calling(obj), backend_fn, fullgraph, dynamic=dynamic)
            raise TypeError(f"armature.compile: cannot compile {obj!r}: it is a {type(obj).__name__} "
                            "implemented in C; compile a Python function or nn.Module that calls it")
        raise TypeError(f"armature.compile: expected a function or nn.Module, got {type(obj).__name__}")

    if model is None:
        return wrap
    return wrap(model)


def reset() -> None:
    """Drop every compiled entry of every compiled function."""
    reset_all()
    _wrappers.reset()
    _native_frames.reset()
    _distributed.reset()
    _cudagraphs.reset()


def cache_entries(compiled) -> list:
    """The cache entries of a compiled function or module (newest first)."""
    if isinstance(compiled, CompiledModule):
        return [e for cf in compiled._armature_forwards.values() for e in cf._cache.entries]
    if isinstance(compiled, types.MethodType):
        compiled = compiled.__func__
    if not isinstance(compiled, CompiledFunction):
        raise TypeError(f"expected an armature-compiled function or module, got {type(compiled).__name__}")
    return list(compiled._cache.entries)


# the layers below reach these through armature.upcalls (they may not import api)
_upcalls.install(CompiledFunction=CompiledFunction, CompiledModule=CompiledModule, compile=compile, reset=reset,
                 is_compiled_module_type=is_compiled_module_type, module_call_code=_module_call.__code__)
