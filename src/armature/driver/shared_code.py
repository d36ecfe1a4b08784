"""One cache per code and compile settings, shared by every callable
compiled for it (the per-block recipe).

PyTorch's advice for a large model is to compile each repeated block on
its own (a loop over ``model.layers`` replacing each block by its compiled
wrapper; torchtitan does it under FSDP2).  torch.compile keeps
its entries on the code object, so the second block runs the first one's
compiled code.  armature used to give every ``armature.compile(...)`` its
own cache, so every block was traced and compiled again.

A :class:`SharedCode` is the unit of sharing: the callables compiled with
equal settings (backend with its mode and options, fullgraph, dynamic) for
one code -- one function's code and globals, or one module class (a
compiled module runs ``type(mod).forward`` through ``nn.Module.__call__``)
-- hold one :class:`~armature.runtime.cache.CodeCache` per
``module_parameters`` setting, so an entry made for one is tried for all,
guards decide, and the recompile limit counts per code as torch.compile's
does.  Settings that change the result are in the key: a compile with one
backend never serves another.

It also knows the *instances* compiled for the code (the modules, the
objects bound to a method, the function objects): while two or more are
alive, a miss compiles with ``module_parameters="inputs"`` (modules
guarded by type and structure, their parameters and buffers graph inputs),
so one entry serves every instance.  A lone instance (a whole-model
compile) keeps the default: parameters as graph attributes, guarded by
identity (what regions and CUDA graphs are tuned for).  The rules are in
docs/ARCHITECTURE.md ("Separately compiled instances share code").

Groups and their caches live as long as a compiled callable holds them
(weak registry), as a private cache used to.
"""
from __future__ import annotations

import dataclasses
import threading
import types
import weakref

from .. import config as config_mod
from .. import upcalls
from ..runtime.cache import CodeCache, new_cache


class SharedCode:
    """The caches of one code under one set of compile settings, and the
    live instances compiled for it."""

    def __init__(self, key: tuple, code: types.CodeType, label: str):
        self.key = key
        self.code = code
        #: what messages call the code: ``Block.forward (model.py:12)``
        self.label = label
        #: {module_parameters override (None: the config's): CodeCache}
        self._caches: dict = {}
        #: {id(instance): instance}, weakly (an instance that cannot be
        #: weakly referenced is not counted: it keeps the default)
        self._instances: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def cache(self, module_parameters: str | None) -> CodeCache:
        c = self._caches.get(module_parameters)
        if c is None:
            with self._lock:
                c = self._caches.get(module_parameters)
                if c is None:
                    c = self._caches[module_parameters] = new_cache(self.code)
                    c.label = self.label
        return c

    def add_instance(self, obj) -> None:
        try:
            self._instances[id(obj)] = obj
        except TypeError:   # (not weakly referenceable)
            pass

    def shared(self) -> bool:
        """Two or more live instances compiled for this code."""
        return len(self._instances) >= 2

    def __repr__(self):
        return f"<armature shared code {self.label}: {len(self._instances)} instance(s)>"


_GROUPS: "weakref.WeakValueDictionary[tuple, SharedCode]" = weakref.WeakValueDictionary()
_GROUPS_LOCK = threading.Lock()


def _group(key: tuple, code: types.CodeType, label) -> SharedCode:
    g = _GROUPS.get(key)
    if g is None:
        with _GROUPS_LOCK:
            g = _GROUPS.get(key)
            if g is None:
                g = SharedCode(key, code, label())
                _GROUPS[key] = g
    return g


def for_function(fn: types.FunctionType, backend, fullgraph: bool, dynamic) -> SharedCode:
    """The group of a compiled function (or method, or callable object's
    ``__call__``): its code and globals (the transformed function reads the
    globals dict it was made with), and the settings."""
    code = fn.__code__
    key = ("function", code, id(fn.__globals__), backend, fullgraph, dynamic, _config_key())
    return _group(key, code, lambda: describe_code(code))


def for_module(mod, module_call_code: types.CodeType, backend, fullgraph: bool, dynamic) -> SharedCode:
    """The group of a compiled module: its class (whose ``forward`` the
    call runs; a forward patched on one instance is guarded like any
    attribute) and the settings."""
    CompiledModule = upcalls.CompiledModule
    while type(mod) is CompiledModule:   # (compiled twice: what runs is the innermost module's forward)
        mod = mod.__dict__["_orig_mod"]
    cls = type(mod)
    key = ("module", cls, backend, fullgraph, dynamic, _config_key())
    return _group(key, module_call_code, lambda: describe_forward(cls))


def _config_key() -> tuple:
    """The options in effect when ``armature.compile`` is called: a compile
    made under other options (``config.patch(regions="off")``,
    ``module_parameters="inputs"``) gets caches of its own, as it did when
    every compile had its own (the trace reads the options of the moment;
    only the recompile limit does not change what it makes)."""
    cfg = config_mod.config
    return tuple(getattr(cfg, name) for name in _OPTIONS)


_OPTIONS = tuple(f.name for f in dataclasses.fields(config_mod.Config) if f.name != "recompile_limit")


_OF_WRAPPER: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def for_compiled_module(wrapper, module_call_code: types.CodeType) -> SharedCode:
    """The group of a CompiledModule, its module registered as an instance
    (found again for a copy of the wrapper: nothing of it is stored on the
    wrapper, which deep-copies and pickles as it did)."""
    g = _OF_WRAPPER.get(wrapper)
    if g is None:
        d = wrapper.__dict__
        mod = d["_orig_mod"]
        g = for_module(mod, module_call_code, d["_armature_backend"], d["_armature_fullgraph"], d["_armature_dynamic"])
        g.add_instance(mod)
        _OF_WRAPPER[wrapper] = g
    return g


def describe_code(code: types.CodeType) -> str:
    name = getattr(code, "co_qualname", code.co_name)
    return f"{name} ({code.co_filename}:{code.co_firstlineno})"


def describe_forward(cls: type) -> str:
    """``Block.forward (file:line)``, through decorators to the code the
    user wrote; the class's name where forward is not Python code."""
    import inspect
    forward = getattr(cls, "forward", None)
    try:
        forward = inspect.unwrap(forward) if forward is not None else None
    except ValueError:
        pass
    if isinstance(forward, types.FunctionType):
        return describe_code(forward.__code__)
    return f"{cls.__qualname__}.forward"
