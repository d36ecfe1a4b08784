"""What the persistent cache did, as records: each entry stored or loaded
(with its file), and each time stored entries were not used or a compiled
entry was not stored, with the reason (the key part that changed, a source
file that changed, a guard that failed on this call, a corrupt file, what
could not be stored).

One record per event, made where persistent_cache.py decides (a hook of a
line there), so the three readers say the same thing: ``ARMATURE_LOGS=cache``
(one INFO line each, naming the function and its file:line),
``explain()`` (ExplainOutput.cache) and the run's HTML report (the events
of each function).  The process's list also tells cache_artifacts.py which
entry files this process stored or loaded.
"""
from __future__ import annotations

import types
from dataclasses import dataclass

from ..diagnostics import logs

log = logs.artifact("cache")

#: kind -> its log line ({fn}: the function, {where}: " (file:line)", {detail}, {path})
KINDS = {
    "stored": "stored an entry of {fn}{where}: {path}",
    "loaded": "loaded an entry of {fn}{where} from {path}{detail}",
    "miss": "miss: {fn}{where}: {detail}",
    "key_mismatch": "not used (key mismatch): {fn}{where}: {detail}",
    "source_changed": "not used (source file changed): {fn}{where}: {detail} [{path}]",
    "guard_failed": "not used (guard failed on this call): {fn}{where}: {detail}",
    "rejected": "not used: {fn}{where}: {detail} [{path}]",
    "corrupt": "not used (corrupt file): {fn}{where}: {detail} [{path}]",
    "not_stored": "not stored: an entry of {fn}: {detail}{where}",
}
#: the kinds that say why stored entries were not used
NOT_USED = ("key_mismatch", "source_changed", "guard_failed", "rejected", "corrupt")


@dataclass
class CacheEvent:
    kind: str                       # a key of KINDS
    function: str                   # the user function's qualified name
    filename: str | None
    lineno: int | None
    detail: str                     # why (the key part, the file, the guard, ...)
    path: str | None = None         # the entry file concerned

    def __str__(self):
        where = f" ({self.filename}:{self.lineno})" if self.filename else ""
        return KINDS[self.kind].format(fn=self.function, where=where, detail=self.detail, path=self.path)


#: the attribute of a backend callable naming the registered backend it
#: stands for in the persistent cache's key (explain()'s backend of its own)
PERSIST_AS = "_armature_persist_as"

def stands_for(backend):
    """The registered backend ``backend`` is stored as (explain()'s backend
    of its own names it with PERSIST_AS), or ``backend`` itself."""
    named = getattr(getattr(backend, "fn", backend), PERSIST_AS, None)
    return backend if named is None else named


#: every event of this process, in order (bounded: a long run keeps the newest)
events: list[CacheEvent] = []
_MAX = 10_000
_recorders: list[list] = []
#: the entry files this process stored or loaded, in order (kept apart from
#: the bounded ``events``: save_cache_artifacts carries them all)
_files: dict = {}


def user_function(cf) -> tuple[str, str | None, int | None]:
    """(qualified name, file, first line) of what the user compiled: a
    compiled module's forward rather than armature's own call of it."""
    fn = getattr(cf, "_fn", cf)
    module = cf._module_of_call() if hasattr(cf, "_module_of_call") else None
    if module is not None:
        import inspect
        forward = getattr(type(module), "forward", None)
        try:
            forward = inspect.unwrap(forward) if forward is not None else None
        except ValueError:
            pass
        if isinstance(forward, types.FunctionType):
            fn = forward
    code = getattr(fn, "__code__", None)
    name = getattr(fn, "__qualname__", None) or getattr(code, "co_name", "?")
    return name, getattr(code, "co_filename", None), getattr(code, "co_firstlineno", None)


def note(kind: str, cf, detail: str = "", path: str | None = None) -> CacheEvent:
    """Record (and log at INFO) one event of ``cf`` (a CompiledFunction, or
    a function)."""
    name, filename, lineno = user_function(cf)
    ev = CacheEvent(kind, name, filename, lineno, detail, path)
    events.append(ev)
    if kind in ("stored", "loaded") and path:
        _files.setdefault(path, None)
    if len(events) > _MAX:
        del events[: len(events) - _MAX]
    for r in _recorders:
        r.append(ev)
    log.info("%s", ev)
    from ..diagnostics import record
    if record.active:   # (the run's report lists each function's events)
        record.cache_event(cf, ev)
    return ev


class recording:  # noqa: N801 - a context manager used like a function
    """The events made while the ``with`` block runs (explain())."""

    def __enter__(self) -> list:
        self.events: list = []
        _recorders.append(self.events)
        return self.events

    def __exit__(self, *exc) -> None:
        _recorders.remove(self.events)


def files_of_process() -> list[str]:
    """The entry files this process stored or loaded (oldest first, once each)."""
    return list(_files)


def guard_failed(cf, loaded: list, args, kwargs) -> None:
    """Entries were loaded for ``cf``'s code but none passed its guards on
    this call (the call compiles): which guard failed."""
    from ..guards.build import explain_failure
    try:
        why = explain_failure(cf._fn, loaded[0].guards, args, kwargs) or "no loaded entry's guards passed"
    except Exception as e:   # noqa: BLE001 - a diagnostic never breaks the call
        why = f"no loaded entry's guards passed ({type(e).__name__} while finding which)"
    note("guard_failed", cf, why.splitlines()[0], getattr(loaded[0], "loaded_from", None))
