"""``generator.throw()``/``close()`` while the generator is paused inside
``yield from`` (PEP 380, Objects/genobject.c ``_gen_throw``).

The exception goes to the inner iterator first:

* GeneratorExit (``close()``, or thrown): the inner one is closed (a
  generator's ``close()``; a builtin iterator has none), then GeneratorExit
  is raised in the outer one at its ``yield from``; an exception the inner
  close raised is raised there instead.
* anything else, into an inner generator: its ``throw()``.  A value it yields
  is what the outer one yields (it stays paused in ``yield from``); an
  exception it raises is raised in the outer one at its ``yield from``,
  where a StopIteration ends the ``yield from`` with its value (3.11:
  ``_gen_throw`` pops the inner one and jumps past the SEND loop itself;
  3.12+: the frame's CLEANUP_THROW handler does it, trace/ops/with_.py).
* an inner builtin iterator (no ``throw``): raised in the outer one at once.

Other inner iterators (user objects with their own ``throw``) are not
modelled (Unsupported: a graph break there).
"""
from __future__ import annotations

import sys

from ...diagnostics.errors import Unsupported, UserException
from ..base import Value
from ..constant import ConstantValue
from ..containers.containers import IteratorValue


def _builtin_without(inner, name: str) -> bool:
    """``inner`` is a builtin iterator the trace models (a list's, a
    range's, ``zip``...) whose type has no method ``name``."""
    from ..containers.containers import UserIteratorValue
    if not isinstance(inner, IteratorValue) or isinstance(inner, UserIteratorValue):
        return False
    cls = inner.python_type()
    return cls.__module__ == "builtins" and not hasattr(cls, name)


def _close_inner(tx, inner) -> None:
    """``gen_close_iter``: a generator's close(); nothing for an iterator
    without ``close``; raises what the close raised."""
    from .generators import GeneratorValue
    if isinstance(inner, GeneratorValue):
        inner.close(tx)
    elif not _builtin_without(inner, "close"):
        raise Unsupported(f"closing the iterator {inner} a generator delegates to (`yield from`)")


def _raise_at_yield_from(gen, tx, error: UserException) -> Value:
    """``error`` raised in ``gen`` at its paused ``yield from``."""
    f = gen.frame
    if sys.version_info >= (3, 12):
        f.push(ConstantValue(None))   # (gen_send_ex pushes the sent None; CLEANUP_THROW's depth counts it)
    return gen.raise_at_pause(tx, error)


def _inner_raised(gen, tx, error: UserException) -> Value:
    """The inner ``throw()`` raised ``error``."""
    if sys.version_info >= (3, 12):
        return _raise_at_yield_from(gen, tx, error)
    # 3.11: pop the inner iterator and leave the SEND loop (to its exit)
    f = gen.frame
    send = next(i for i in reversed(f.instructions[:f.ip]) if i.opname == "SEND")
    f.pop_raw()
    f.jump(send.argval)
    if issubclass(error.exc_type, StopIteration):
        exc = error.value
        f.push(exc.args[0] if exc is not None and exc.args else ConstantValue(None))
        v = gen._run(tx)
        if v is None:
            raise gen._stop_iteration()
        return v
    return gen.raise_at_pause(tx, error)


def throw_into_delegate(gen, tx, exc, error: UserException) -> Value:
    """``gen.throw(exc)`` while ``gen`` is paused in ``yield from``
    (``error``: ``exc`` as raised): what ``gen`` yields next, or raises."""
    from .generators import GeneratorValue
    inner = gen._inner()
    if issubclass(exc.cls, GeneratorExit):
        try:
            _close_inner(tx, inner)
        except UserException as e:
            return _raise_at_yield_from(gen, tx, e)
        return _raise_at_yield_from(gen, tx, error)
    if isinstance(inner, GeneratorValue):
        try:
            return inner.throw(tx, exc)
        except UserException as e:
            return _inner_raised(gen, tx, e)
    if _builtin_without(inner, "throw"):
        return _raise_at_yield_from(gen, tx, error)
    raise Unsupported(f"generator.throw() into the iterator {inner} a generator delegates to (`yield from`)")
