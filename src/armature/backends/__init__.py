"""Backend registry: turns a name such as ``"inductor"`` into a compiler function.

A backend follows torch's contract ``compiler_fn(gm, example_inputs) -> compiled``
where ``gm`` is a :class:`torch.fx.GraphModule` whose forward returns a tuple of
tensors and ``compiled`` runs that graph.  The runtime calls the compiler inside
a ``torch._guards.tracing(TracingContext(fake_mode))`` block.

Why a registry of our own rather than ``torch._dynamo.backends.registry``:
torch's registry and its built-in backends are written for Dynamo's calling
context (they wrap results in Dynamo's ``disable``, read Dynamo's config and
counters), and importing them imports Dynamo.  Ours keeps armature's import
cheap: the built-in backends live in small sibling modules that import torch's
compiler stacks (functorch, inductor) only when a graph is actually compiled.

Calling convention: the compiled callable is called as ``compiled(*args)``
and returns the graph's outputs as a tuple or list, as under TorchDynamo.
torch's "boxed" convention (``compiled(list_of_args)``) is used only *inside*
AOTAutograd and inductor; note that the ``_boxed_call`` attribute leaks onto
AOTAutograd's unboxed wrapper (``functools.wraps`` copies ``__dict__``), so it
must not be used to pick a convention for a backend's result.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

__all__ = [
    "BackendError",
    "CompilerFn",
    "VALID_MODES",
    "list_backends",
    "lookup_backend",
    "register_backend",
]

CompilerFn = Callable[..., Callable[..., Any]]

#: Modes accepted by :func:`lookup_backend`, as for ``torch.compile``.
VALID_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class BackendError(ValueError):
    """An unknown backend name was asked for."""


class _Entry:
    """A registered backend: the compiler function, an optional options check
    and an optional ``prepare`` (see :func:`register_backend`)."""

    __slots__ = ("name", "fn", "check_options", "prepare")

    def __init__(self, name: str, fn: CompilerFn, check_options: Callable[[dict], None] | None,
                 prepare: Callable[[], None] | None = None):
        self.name = name
        self.fn = fn
        self.check_options = check_options
        self.prepare = prepare


_REGISTRY: dict[str, _Entry] = {}


def register_backend(
    name: str, *, check_options: Callable[[dict], None] | None = None,
    prepare: Callable[[], None] | None = None,
) -> Callable[[CompilerFn], CompilerFn]:
    """Decorator registering ``fn(gm, example_inputs, **kw) -> compiled`` under ``name``.

    A backend that takes keyword arguments ``mode`` and/or ``options`` receives
    them from :func:`lookup_backend`; one that does not is told nothing about
    ``mode`` and refuses ``options``.  ``check_options(options)`` may validate
    options eagerly, at lookup time, by raising ``ValueError``.
    ``prepare()`` is called by the runtime when a compile with this backend
    starts, before tracing: work that the backend will wait for later
    (inductor's compile workers, its CPU ISA probes) gets started while the
    frame is traced.  A ``prepare`` that takes ``mode``/``options`` keyword
    arguments is given the compile's, as the backend is.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"backend name must be a non-empty str, got {name!r}")

    def decorator(fn: CompilerFn) -> CompilerFn:
        if not callable(fn):
            raise TypeError(f"backend {name!r} must be callable, got {type(fn).__name__}")
        if name in _REGISTRY and _REGISTRY[name].fn is not fn:
            raise ValueError(f"backend {name!r} is already registered")
        _REGISTRY[name] = _Entry(name, fn, check_options, prepare)
        return fn

    return decorator


def list_backends() -> list[str]:
    """Sorted names of every registered backend."""
    return sorted(_REGISTRY)


def _accepts_kwarg(fn: Callable[..., Any], kwarg: str) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins without signatures
        return False
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        or (p.name == kwarg and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
        for p in params
    )


class _Backend:
    """The callable handed to the runtime: a backend bound to its mode and options.

    Compares equal to another with the same backend and settings, so callers can
    use it as part of a cache key.
    """

    __slots__ = ("name", "fn", "check_options", "kwargs", "__name__", "_prepare")

    def __init__(
        self,
        name: str,
        fn: CompilerFn,
        check_options: Callable[[dict], None] | None,
        kwargs: dict[str, Any],
        prepare: Callable[[], None] | None = None,
    ):
        self.name = name
        self.fn = fn
        self.check_options = check_options
        self.kwargs = kwargs
        self.__name__ = name
        self._prepare = prepare

    def prepare(self) -> None:
        """Start what the backend will wait for later (``register_backend``'s
        ``prepare``); a failure there is the backend's to meet when it
        compiles, never the trace's."""
        if self._prepare is not None:
            try:
                self._prepare(**{k: v for k, v in self.kwargs.items() if _accepts_kwarg(self._prepare, k)})
            except Exception as e:  # noqa: BLE001 - an optimisation only
                from ..diagnostics import logs
                logs.artifact("perf").debug("backend %r: preparing failed (%s: %s)", self.name, type(e).__name__, e)

    def __call__(self, gm: Any, example_inputs: list[Any]) -> Callable[..., Any]:
        compiled = self.fn(gm, example_inputs, **self.kwargs)
        if not callable(compiled):
            raise TypeError(
                f"backend {self.name!r} returned {type(compiled).__name__}, expected a callable"
            )
        return compiled

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Backend)
            and self.fn is other.fn
            and self.kwargs == other.kwargs
        )

    def __hash__(self) -> int:
        return hash((self.name, id(self.fn)))

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"<armature backend {self.name!r}{extra}>"


def lookup_backend(
    name_or_callable: str | CompilerFn,
    *,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
) -> Callable[[Any, list[Any]], Callable[..., Any]]:
    """Resolve a backend name (or a compiler callable) to ``fn(gm, example_inputs)``.

    ``mode`` and ``options`` follow ``torch.compile``: at most one of them may be
    given; ``mode`` must be one of :data:`VALID_MODES`; ``options`` is a dict
    passed to backends that take options (inductor: config overrides).
    """
    if mode not in VALID_MODES:
        raise ValueError(
            f"unknown mode {mode!r}; valid modes are: "
            + ", ".join(repr(m) for m in VALID_MODES)
        )
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    if mode is not None and options is not None:
        raise ValueError(
            "Either mode or options can be specified, but both can't be specified at the same time."
        )

    if isinstance(name_or_callable, _Backend):  # already resolved
        if mode is None and options is None:
            return name_or_callable
        b = name_or_callable  # rebind the same backend to new settings
        name, fn, check, prepare = b.name, b.fn, b.check_options, b._prepare
    elif isinstance(name_or_callable, str):
        entry = _REGISTRY.get(name_or_callable)
        if entry is None:
            raise BackendError(
                f"unknown backend {name_or_callable!r}; valid backends are: "
                + ", ".join(list_backends())
            )
        name, fn, check, prepare = entry.name, entry.fn, entry.check_options, entry.prepare
    elif callable(name_or_callable):
        fn = name_or_callable
        name = getattr(fn, "__name__", type(fn).__name__)
        check = None
        # a built-in backend's function handed over directly prepares as its name would
        prepare = next((e.prepare for e in _REGISTRY.values() if e.fn is fn), None)
    else:
        raise TypeError(
            "backend must be a registered name (one of "
            + ", ".join(list_backends())
            + ") or a callable fn(gm, example_inputs), got "
            + type(name_or_callable).__name__
        )

    kwargs: dict[str, Any] = {}
    if mode not in (None, "default") and _accepts_kwarg(fn, "mode"):
        kwargs["mode"] = mode
    if options:
        if not _accepts_kwarg(fn, "options"):
            raise ValueError(f"backend {name!r} takes no options, got {sorted(options)}")
        if check is not None:
            check(options)
        kwargs["options"] = dict(options)
    return _Backend(name, fn, check, kwargs, prepare)


# Built-in backends register themselves on import; each imports its compiler
# stack lazily, so these imports are cheap.
from . import aot_eager as _aot_eager  # noqa: E402,F401
from . import debugging as _debugging  # noqa: E402,F401
from . import eager as _eager  # noqa: E402,F401
from . import inductor as _inductor  # noqa: E402,F401
