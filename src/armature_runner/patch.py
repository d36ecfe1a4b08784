"""Route ``torch.compile`` and the user-facing ``torch._dynamo`` /
``torch.compiler`` helpers to armature, for scripts that were written for
``torch.compile``.

This is the ONE module of armature that touches ``torch._dynamo``: to make
an unmodified script call armature, the attributes its code reads
(``torch.compile``, ``torch._dynamo.mark_dynamic``...) must be armature's
while it runs, so this module imports ``torch._dynamo`` and replaces those
attributes, and puts the originals back when the patch ends.  Nothing
here is used by the frontend, and nothing of Dynamo is *called*
(tests/test_frontend_imports.py checks the frontend and allows this
package only).

What is routed, and how torch's arguments are mapped:

* ``torch.compile`` / ``torch.compiler.compile`` -> ``armature.compile``;
  ``torch._dynamo.optimize(backend, nopython=, dynamic=, disable=)`` -> a
  decorator over ``armature.compile``.  Backend names armature does not
  have become ``inductor``; a ``mode`` or ``options`` the backend does not
  take, and arguments armature has no counterpart for (``name``,
  ``recompile_limit``, ``guard_fail_fn``...), are dropped.  Each such
  decision is reported once (stderr and the run record), never an error.
* ``disable``, ``graph_break``, ``mark_dynamic``, ``mark_static``,
  ``maybe_mark_dynamic``, ``reset``, ``set_stance``, ``allow_in_graph``,
  ``explain`` -> armature's own (the objects the tracer recognises, where
  identity matters: ``graph_break``, ``set_stance``, ``allow_in_graph``).
* ``is_compiling``: ``torch.compiler.is_compiling`` already answers True
  inside armature's traces (and False when code runs), so it is left as it
  is; ``torch._dynamo.is_compiling`` is pointed at it.
* ``torch.compiler.save_cache_artifacts`` / ``load_cache_artifacts``:
  torch's own, wrapped so that the bytes also carry the compiled entries
  armature stored or loaded (the warm start), ahead of torch's bytes, and
  loading installs them into this process's cache directory
  (armature/driver/cache_artifacts.py); torch's loader gets exactly its
  bytes.
* ``OptimizedModule`` (``torch._dynamo.eval_frame.OptimizedModule`` and
  ``torch._dynamo.OptimizedModule``): libraries ask whether a model is
  compiled with ``isinstance(m, OptimizedModule)`` and then use
  ``m._orig_mod`` (accelerate's ``is_compiled_module`` and
  ``extract_model_from_parallel``).  The name is pointed at a subclass of
  torch's class whose ``isinstance``/``issubclass`` also answer True for
  armature's compiled modules (which have ``_orig_mod``, and accept it
  back: api.CompiledModule).  Torch's own instances still pass, and
  constructing it still builds torch's kind.
"""
from __future__ import annotations

import functools
import sys
import types
from typing import Any

import torch

from armature import api
from armature.backends import BackendError, list_backends, lookup_backend
from armature.diagnostics import record
from armature.driver import explain as explain_mod
from armature.runtime import markers, marks, stance

_reported: set = set()


def report_once(text: str) -> None:
    """Tell the user once per distinct message (stderr and the run record)."""
    record.note(text)
    if text not in _reported:
        _reported.add(text)
        print(f"[armature] {text}", file=sys.stderr)


# --- torch.compile -> armature.compile ---------------------------------------

_COMPILE_KNOWN = {"model", "fullgraph", "dynamic", "backend", "mode", "options", "disable"}


def _backend_for(backend: Any, mode: Any, options: Any, forced: Any, where: str):
    """armature's backend for torch's (backend, mode, options); drops what it
    cannot take, reporting each drop once."""
    if forced is not None:
        backend = forced
    if backend is None:
        backend = "inductor"
    if isinstance(backend, str) and backend not in list_backends():
        report_once(f"{where}: backend {backend!r} is not an armature backend ({', '.join(list_backends())}); "
                    "using 'inductor'")
        backend = "inductor"
    if mode is not None and mode not in api._VALID_MODES:
        report_once(f"{where}: mode={mode!r} is not a torch.compile mode; ignored")
        mode = None
    if mode is not None and options is not None:
        report_once(f"{where}: both mode and options given; options ignored")
        options = None
    try:
        return lookup_backend(backend, mode=mode, options=options)
    except (ValueError, TypeError, BackendError) as e:
        if options is not None:
            report_once(f"{where}: options={options!r} ignored ({e})")
            return _backend_for(backend, mode, None, None, where)
        report_once(f"{where}: backend {backend!r} cannot be used ({e}); using 'inductor'")
        return lookup_backend("inductor")


class Router:
    """The routed functions, bound to the runner's settings."""

    def __init__(self, backend: Any = None):
        #: a backend that every compile uses instead of the script's (``--backend``)
        self.forced_backend = backend

    def compile(self, model=None, **kwargs):
        """``torch.compile`` with armature: same calling forms (call,
        bare decorator, decorator with arguments)."""
        unknown = sorted(set(kwargs) - _COMPILE_KNOWN)
        for name in unknown:
            report_once(f"torch.compile({name}=...) has no armature counterpart; ignored")
        fullgraph = kwargs.get("fullgraph", False)
        if not isinstance(fullgraph, bool):
            report_once(f"torch.compile(fullgraph={fullgraph!r}): not a bool; using {bool(fullgraph)}")
            fullgraph = bool(fullgraph)
        dynamic = kwargs.get("dynamic")
        if dynamic not in api._VALID_DYNAMIC:
            report_once(f"torch.compile(dynamic={dynamic!r}): not None/True/False; using None")
            dynamic = None
        disable = bool(kwargs.get("disable", False))
        backend = _backend_for(kwargs.get("backend"), kwargs.get("mode"), kwargs.get("options"),
                               self.forced_backend, "torch.compile")

        def wrap(obj):
            if disable:
                return obj
            try:
                return api.compile(obj, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
            except TypeError as e:   # e.g. a callable implemented in C: run it as it is
                report_once(f"torch.compile({_name(obj)}): {e}; it runs uncompiled")
                return obj

        return wrap if model is None else wrap(model)

    def optimize(self, *args, **kwargs):
        """``torch._dynamo.optimize(backend, nopython=..., dynamic=...)``: a
        decorator (the context-manager form is not supported: it returns a
        decorator all the same)."""
        backend = args[0] if args else kwargs.pop("backend", "inductor")
        if len(args) > 1:
            report_once("torch._dynamo.optimize: extra positional arguments ignored")
        fullgraph = bool(kwargs.pop("nopython", False) or kwargs.pop("error_on_graph_break", False))
        disable = bool(kwargs.pop("disable", False))
        dynamic = kwargs.pop("dynamic", None)
        for name in sorted(kwargs):
            report_once(f"torch._dynamo.optimize({name}=...) has no armature counterpart; ignored")
        return lambda fn: self.compile(fn, backend=backend, fullgraph=fullgraph, dynamic=dynamic,
                                       disable=disable)


def _name(obj) -> str:
    return getattr(obj, "__qualname__", type(obj).__name__)


# --- the helpers ------------------------------------------------------------

def disable(fn=None, recursive=True, *, reason=None, wrapping=True):
    """``torch._dynamo.disable`` / ``torch.compiler.disable`` signature,
    armature's ``disable`` behaviour."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason, wrapping=wrapping)
    return markers.disable(fn, recursive=recursive)


def mark_dynamic(t, index, *, hint_override=None, min=None, max=None, specialize_on=None):
    if hint_override is not None:
        report_once("mark_dynamic(hint_override=...) has no armature counterpart; ignored")
    return marks.mark_dynamic(t, index, min=min, max=max, specialize_on=specialize_on)


def reset() -> None:
    api.reset()


def explain(f, *extra_args, **extra_kwargs):
    """``torch._dynamo.explain(f)(*args)`` (or ``explain(f, *args)``) ->
    armature's ExplainOutput."""
    run = explain_mod.explain(f)
    if extra_args or extra_kwargs:
        return run(*extra_args, **extra_kwargs)
    return run


# --- cache artifacts ------------------------------------------------------------

_WRAPS = "_armature_wraps"


def _unwrapped(fn):
    return getattr(fn, _WRAPS, fn)


def save_cache_artifacts_for(torch_save):
    """``torch.compiler.save_cache_artifacts`` returning torch's artifacts
    and armature's entries in one container (driver/cache_artifacts.py)."""
    from armature.driver import cache_artifacts

    @functools.wraps(torch_save)
    def save_cache_artifacts():
        result = torch_save()
        part = cache_artifacts.pack()
        if part is None:
            return result
        torch_bytes, info = result if result is not None else (None, None)
        if info is None:
            from torch.compiler._cache import CacheInfo
            info = CacheInfo()
        info.artifacts["armature"].extend(cache_artifacts.cache_events.files_of_process())
        return cache_artifacts.combine(torch_bytes, part), info

    setattr(save_cache_artifacts, _WRAPS, torch_save)
    return save_cache_artifacts


def load_cache_artifacts_for(torch_load):
    """``torch.compiler.load_cache_artifacts`` that also installs armature's
    entries of the bytes (torch's loader gets exactly torch's bytes)."""
    from armature.driver import cache_artifacts

    @functools.wraps(torch_load)
    def load_cache_artifacts(serialized_artifacts):
        torch_bytes, part = cache_artifacts.split(serialized_artifacts)
        installed = cache_artifacts.install(part) if part is not None else []
        info = torch_load(torch_bytes) if torch_bytes else None
        if installed:
            if info is None:
                from torch.compiler._cache import CacheInfo
                info = CacheInfo()
            info.artifacts["armature"].extend(installed)
        return info

    setattr(load_cache_artifacts, _WRAPS, torch_load)
    return load_cache_artifacts


# --- patching -----------------------------------------------------------------

_STAND_INS: dict = {}


def optimized_module_stand_in(real: type) -> type:
    """A subclass of torch's ``OptimizedModule`` (``real``) that
    ``isinstance``/``issubclass`` also match for armature's compiled
    modules; one per torch class."""
    cls = _STAND_INS.get(real)
    if cls is not None:
        return cls
    matched = (real, api.CompiledModule)

    class _Meta(type(real)):
        def __instancecheck__(cls, obj):
            return isinstance(obj, matched)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, matched)

    cls = _Meta("OptimizedModule", (real,), {"__module__": real.__module__, "__qualname__": real.__qualname__,
                                             "__doc__": real.__doc__})
    _STAND_INS[real] = cls
    return cls


def _targets(router: Router) -> list[tuple[types.ModuleType, str, Any]]:
    import torch._dynamo as dynamo   # (this module only: see the docstring)
    import torch._dynamo.eval_frame as eval_frame
    import torch.compiler as compiler
    same = {
        "disable": disable, "graph_break": markers.graph_break, "mark_dynamic": mark_dynamic,
        "mark_static": marks.mark_static, "maybe_mark_dynamic": marks.maybe_mark_dynamic, "reset": reset,
        "set_stance": stance.set_stance, "allow_in_graph": markers.allow_in_graph,
    }
    out = [(torch, "compile", router.compile), (compiler, "compile", router.compile),
           (dynamo, "optimize", router.optimize), (dynamo, "explain", explain),
           (dynamo, "is_compiling", compiler.is_compiling)]
    for name, value in same.items():
        out.append((dynamo, name, value))
        if hasattr(compiler, name):
            out.append((compiler, name, value))
    for name, wrap in (("save_cache_artifacts", save_cache_artifacts_for),
                       ("load_cache_artifacts", load_cache_artifacts_for)):
        if callable(getattr(compiler, name, None)):
            out.append((compiler, name, wrap(_unwrapped(getattr(compiler, name)))))
    if hasattr(dynamo, "mark_unbacked"):
        out.append((dynamo, "mark_unbacked", marks.mark_unbacked))
    real = eval_frame.__dict__.get("OptimizedModule")
    real = getattr(real, "__bases__", (None,))[0] if real in _STAND_INS.values() else real
    if isinstance(real, type):
        stand_in = optimized_module_stand_in(real)
        out.append((eval_frame, "OptimizedModule", stand_in))
        if dynamo.__dict__.get("OptimizedModule") is not None:
            out.append((dynamo, "OptimizedModule", stand_in))
    return out


class patch_torch_compile:  # noqa: N801 - used like a function: `with armature.patch_torch_compile():`
    """Route ``torch.compile`` and the ``torch._dynamo`` / ``torch.compiler``
    helpers to armature while the ``with`` block runs (or between
    ``start()`` and ``stop()``).  ``backend=`` makes every compile use that
    backend; ``record=True`` (the default) records the run for
    :func:`armature.report` and the runner's summary."""

    def __init__(self, backend: Any = None, record_run: bool = True):
        if backend is not None:
            lookup_backend(backend)   # a bad name is the caller's error, now
        self.router = Router(backend)
        self.record_run = record_run
        self._saved: list | None = None
        self._started_recording = False

    def start(self) -> "patch_torch_compile":
        if self._saved is not None:
            return self
        if self.record_run and not record.active:
            record.start()
            self._started_recording = True
        saved = []
        for module, name, value in _targets(self.router):
            saved.append((module, name, module.__dict__.get(name, _MISSING)))
            setattr(module, name, value)
        self._saved = saved
        return self

    def stop(self) -> None:
        if self._saved is None:
            return
        for module, name, old in reversed(self._saved):
            if old is _MISSING:
                module.__dict__.pop(name, None)
            else:
                setattr(module, name, old)
        self._saved = None
        if self._started_recording:   # the record stays readable (summary, report)
            record.stop()
            self._started_recording = False

    def __enter__(self) -> "patch_torch_compile":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


_MISSING = object()
