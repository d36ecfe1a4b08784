"""The compiler's stance (mirrors ``torch.compiler.set_stance``).

The current stance is one module-level object, ``current``; the hot path of
a cached call reads only ``special`` (True when a cached call itself must
consult the stance: ``force_eager``, ``skip_guard_eval_unsafe`` or a forced
backend).  Every other stance acts on cache misses only (api.py ``_miss``),
so it costs a cached call nothing.

Stances:

``default``
    compile as usual.
``force_eager``
    compiled functions run their original code; nothing compiles, nothing
    is looked up.
``eager_on_recompile``
    existing entries are used; a call no entry accepts runs the original
    code and nothing new is cached (also for a function never compiled).
``fail_on_recompile``
    existing entries are used; a call that would compile raises
    :class:`RecompileError` naming, per entry, the guard that failed.
``eager_then_compile`` / ``aot_eager_then_compile``
    the first call of each compiled code object runs eagerly (or compiles
    with the ``aot_eager`` backend), recording its inputs' sizes and
    numbers; the next compile treats every tensor dim and number that
    differed between the two calls as dynamic from the start.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

from ..diagnostics.errors import ArmatureError

STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile",
           "eager_then_compile", "aot_eager_then_compile")


class RecompileError(ArmatureError, RuntimeError):
    """A compile was needed under the ``fail_on_recompile`` stance (or a call
    no entry accepts under ``skip_guard_eval_unsafe=True``)."""


@dataclass(frozen=True)
class Stance:
    """What :func:`get_stance` returns."""

    stance: str = "default"
    skip_guard_eval_unsafe: bool = False
    #: the backend compiles use under this stance (None: each function's own)
    force_backend: Any = None

    def __repr__(self):
        extra = ""
        if self.skip_guard_eval_unsafe:
            extra += ", skip_guard_eval_unsafe=True"
        if self.force_backend is not None:
            extra += f", force_backend={getattr(self.force_backend, 'name', self.force_backend)!r}"
        return f"Stance({self.stance!r}{extra})"


DEFAULT = Stance()

#: the stance now in force
current: Stance = DEFAULT
#: what the hot path reads: a cached call must consult ``current``
special: bool = False


def _install(new: Stance) -> Stance:
    global current, special
    prev = current
    current = new
    special = new.stance == "force_eager" or new.skip_guard_eval_unsafe or new.force_backend is not None
    return prev


def get_stance() -> Stance:
    """The stance now in force."""
    return current


def _make(stance, skip_guard_eval_unsafe, force_backend) -> Stance:
    if not isinstance(stance, str):
        raise TypeError(f"armature.set_stance: stance must be a str, got {type(stance).__name__}")
    if stance not in STANCES:
        raise ValueError(f"armature.set_stance: unknown stance {stance!r}; valid stances are: "
                         + ", ".join(repr(s) for s in STANCES))
    if not isinstance(skip_guard_eval_unsafe, bool):
        raise TypeError("armature.set_stance: skip_guard_eval_unsafe must be a bool, "
                        f"got {skip_guard_eval_unsafe!r}")
    backend = None
    if force_backend is not None:
        if stance != "default":
            raise RuntimeError(f"armature.set_stance: force_backend can only be given with the 'default' "
                               f"stance, not {stance!r}")
        from ..backends import lookup_backend
        backend = lookup_backend(force_backend)
    return Stance(stance, skip_guard_eval_unsafe, backend)


class set_stance:  # noqa: N801 - mirrors torch.compiler.set_stance
    """Set the compiler's stance: as a call (``armature.set_stance("force_eager")``
    sets it until changed), a context manager (``with armature.set_stance(...):``
    restores the previous stance on exit) or a decorator (the stance holds
    during each call of the decorated function).

    Calling it inside compiled code is an error, as with torch.compile.
    """

    __armature_forbidden__ = "armature.set_stance"

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend: str | Callable | None = None):
        self.stance = _make(stance, skip_guard_eval_unsafe, force_backend)
        self.prev = _install(self.stance)

    def __enter__(self) -> None:
        _install(self.stance)

    def __exit__(self, *exc) -> bool:
        _install(self.prev)
        return False

    def __call__(self, fn):
        # Used as a decorator: the stance applies during calls of ``fn`` only.
        _install(self.prev)
        if not callable(fn):
            raise TypeError(f"armature.set_stance(...) decorates a callable, got {type(fn).__name__}")
        stance = self.stance

        @functools.wraps(fn)
        def with_stance(*args, **kwargs):
            prev = _install(stance)
            try:
                return fn(*args, **kwargs)
            finally:
                _install(prev)

        with_stance.__armature_forbidden__ = "a function decorated with armature.set_stance"
        return with_stance

    def __repr__(self):
        return f"armature.set_stance({self.stance!r})"


# --- eager_then_compile: the inputs of a code object's first call -------------

def record_example(fn, args, kwargs) -> dict:
    """{Source: ("t", sizes) | ("n", number)} for the tensors and numbers in
    the call's arguments (and the lists, tuples and dicts they hold), named
    by the Sources a trace reads them through."""
    import inspect

    from ..guards.sources import LocalSource
    try:
        bound = inspect.signature(fn, follow_wrapped=False).bind(*args, **kwargs)
    except TypeError:
        return {}
    out: dict = {}
    for name, value in bound.arguments.items():
        _walk(value, LocalSource(name), out, 0)
    return out


def _walk(value, source, out: dict, depth: int) -> None:
    import torch

    from ..guards.sources import ItemSource
    t = type(value)
    if isinstance(value, torch.Tensor):
        out[source] = ("t", tuple(value.size()))
    elif t is int or t is float:
        out[source] = ("n", value)
    elif depth < 4 and t in (list, tuple) and len(value) <= 64:
        for i, item in enumerate(value):
            _walk(item, ItemSource(source, i), out, depth + 1)
    elif depth < 4 and t is dict and len(value) <= 64:
        for k, item in value.items():
            if type(k) in (str, int):
                _walk(item, ItemSource(source, k), out, depth + 1)


def apply_example_differences(cache, first: dict, now: dict) -> None:
    """Make dynamic, in ``cache``'s next compiles, every tensor dim and number
    whose value differs between the two recorded calls."""
    for source, (kind, a) in first.items():
        other = now.get(source)
        if other is None or other[0] != kind:
            continue
        b = other[1]
        if kind == "t":
            if len(a) != len(b):
                continue
            dims = {d for d, (m, n) in enumerate(zip(a, b)) if m != n}
            if dims:
                cache.auto_dims.setdefault(source, set()).update(dims)
        elif a != b and type(a) is type(b):
            cache.dynamic_sources.add(source)
