"""``generator.throw()``/``close()`` while the generator is paused inside
``yield from`` (PEP 380; Objects/genobject.c ``_gen_throw``,
``gen_close_iter``, the same from 3.11 to 3.14).

The exception goes to the inner iterator first, while the outer generator
counts as running (resuming it from there is "generator already
executing"):

* GeneratorExit (``close()``, or thrown): the inner iterator is closed -- a
  generator's ``close()``; otherwise its ``close`` attribute, looked up as
  ``getattr`` does (none: nothing to do) and called with no arguments --,
  then GeneratorExit is raised in the outer one at its ``yield from``; an
  exception the inner close raised is raised there instead.
* anything else, into an inner generator: its ``throw()``; into another
  iterator: its ``throw`` attribute, called with what was passed to the
  outer ``throw()`` as it was passed (an instance or a class, not
  normalized; CPython's ``PyObject_CallFunctionObjArgs(meth, typ, val,
  tb)`` stops at the first missing argument).  Without one (AttributeError
  while looking it up) the exception is raised in the outer one at once;
  another exception from the lookup leaves ``throw()`` with the outer one
  still paused.  A value the inner throw returns (a generator: yields) is
  what the outer one yields (it stays paused in ``yield from``); an
  exception it raises is raised in the outer one at its ``yield from``,
  where a StopIteration ends the ``yield from`` with its value (3.11:
  ``_gen_throw`` pops the inner one and jumps past the SEND loop itself;
  3.12+: the frame's CLEANUP_THROW handler does it, trace/ops/with_.py).

The inner methods are called through the trace's ordinary call machinery
(a Python method is traced inline).  A builtin iterator the trace models
(a list's, a range's, ``zip``...) has neither method.  A ``close`` whose
lookup raises something other than AttributeError is reported with
``sys.unraisablehook`` by CPython and then skipped: that is not modelled
(Unsupported), nor is an inner iterator of a kind the trace holds
otherwise (not a generator, builtin iterator or user object).
"""
from __future__ import annotations

import sys

from ...diagnostics.errors import Unsupported, UserException
from ..base import Value
from ..constant import ConstantValue
from ..containers.containers import IteratorValue, UserIteratorValue


def _builtin_without(inner, name: str) -> bool:
    """``inner`` is a builtin iterator the trace models (a list's, a
    range's, ``zip``...) whose type has no method ``name``."""
    if not isinstance(inner, IteratorValue) or isinstance(inner, UserIteratorValue):
        return False
    cls = inner.python_type()
    return cls.__module__ == "builtins" and not hasattr(cls, name)


_ABSENT = object()


def _method(tx, inner: UserIteratorValue, name: str):
    """``getattr(inner, name)`` (``_PyObject_LookupAttr``): the bound
    method, or _ABSENT when the lookup raises AttributeError; another
    exception of the lookup propagates."""
    try:
        return inner.obj.getattr(tx, name)
    except UserException as e:
        if issubclass(e.exc_type, AttributeError):
            return _ABSENT
        raise


def _delegated(gen, call):
    """``call()`` with ``gen`` counted as running (FRAME_EXECUTING); a
    throw()/close() of ``gen`` from there is handed to the inner iterator
    again on 3.11/3.12 (pyversion.REENTRANT_YIELD_FROM_THROW)."""
    was = gen.running, gen.delegating
    gen.running = gen.delegating = True
    try:
        return call()
    finally:
        gen.running, gen.delegating = was


def _close_inner(tx, gen, inner) -> None:
    """``gen_close_iter``: a generator's close(); an iterator's ``close``
    attribute called, if it has one; raises what the close raised."""
    from .generators import GeneratorValue
    if isinstance(inner, GeneratorValue):
        _delegated(gen, lambda: inner.close(tx))
    elif isinstance(inner, UserIteratorValue):
        try:
            close = _delegated(gen, lambda: _method(tx, inner, "close"))
        except UserException as e:
            raise Unsupported(f"looking up close on the iterator {inner.obj} a generator delegates to raised "
                              f"{e.exc_type.__name__} (CPython reports it with sys.unraisablehook)") from None
        if close is not _ABSENT:
            _delegated(gen, lambda: close.call(tx, [], {}))
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


def _is_generator_exit(tx, exc: Value) -> bool:
    """``PyErr_GivenExceptionMatches(exc, GeneratorExit)`` for what was
    passed to ``throw()``: an instance of it or the class (or a subclass)."""
    from ..objects.objects import ClassValue
    from .exceptions import ExceptionValue
    if isinstance(exc, ExceptionValue):
        return issubclass(exc.cls, GeneratorExit)
    if isinstance(exc, ClassValue):
        return isinstance(exc.cls, type) and issubclass(exc.cls, GeneratorExit)
    cls = exc.python_type()
    if issubclass(cls, BaseException):
        return issubclass(cls, GeneratorExit)
    if issubclass(cls, type):
        raise Unsupported(f"generator.throw({exc}) through `yield from`")
    return False   # (not an exception: the inner throw, or the outer one, sees it as it is)


def throw_into_delegate(gen, tx, exc: Value) -> Value:
    """``gen.throw(exc)`` while ``gen`` is paused in ``yield from`` (``exc``
    as passed): what ``gen`` yields next, or raises."""
    from .generators import GeneratorValue
    inner = gen._inner()
    if _is_generator_exit(tx, exc):
        try:
            _close_inner(tx, gen, inner)
        except UserException as e:
            return _raise_at_yield_from(gen, tx, e)
        return _raise_at_yield_from(gen, tx, gen.thrown(tx, exc))
    if isinstance(inner, GeneratorValue):
        try:
            return _delegated(gen, lambda: inner.throw(tx, exc))
        except UserException as e:
            return _inner_raised(gen, tx, e)
    if isinstance(inner, UserIteratorValue):
        throw = _delegated(gen, lambda: _method(tx, inner, "throw"))   # (an exception here leaves gen paused)
        if throw is _ABSENT:
            return _raise_at_yield_from(gen, tx, gen.thrown(tx, exc))
        try:
            return _delegated(gen, lambda: throw.call(tx, [exc], {}))
        except UserException as e:
            return _inner_raised(gen, tx, e)
    if _builtin_without(inner, "throw"):
        return _raise_at_yield_from(gen, tx, gen.thrown(tx, exc))
    raise Unsupported(f"generator.throw() into the iterator {inner} a generator delegates to (`yield from`)")
