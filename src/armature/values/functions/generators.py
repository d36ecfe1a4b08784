"""Generators created and consumed inside the traced frame.

Calling a generator function makes a GeneratorValue holding a paused Frame;
each ``next`` resumes it until its next YIELD_VALUE.  Consumption therefore
interleaves with the consumer exactly as in CPython.

``send``, ``throw`` and ``close`` follow Objects/genobject.c: ``send(v)``
resumes with ``v`` as the value of the paused ``yield`` (only None for a
generator not started yet); ``throw(exc)`` raises ``exc`` at the paused
``yield``, where the generator's own exception table routes it, as the
interpreter does for any exception; ``close()`` throws GeneratorExit and
expects the generator to finish (a value yielded instead is a
RuntimeError).  A generator that returns raises StopIteration(value) from
``send``/``throw``; one that raises is finished.  A generator paused inside
a ``yield from`` hands ``throw``/``close`` on to the inner iterator first
(values/functions/generator_delegation.py).
"""
from __future__ import annotations

import sys
import weakref

from ...diagnostics.errors import Unsupported, UserException, user_error
from ... import pyversion
from ..base import Value, realize
from ..constant import ConstantValue
from ..containers.containers import IteratorValue
from .generator_breaks import GeneratorAcrossBreak, closing_may_run_code, creation_origin
from ..builder import wrap
from .. import kinds


def _is_none(v: Value) -> bool:
    return v.is_python_constant() and v.as_python_constant() is None


#: per trace: the generators it made (see ``check_left_suspended``)
_MADE: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class GeneratorValue(IteratorValue):
    def __init__(self, frame):
        super().__init__([])
        self.frame = frame
        self.started = False
        self.done = False
        #: its frame is running, or a ``yield from`` hands it a throw()/close()
        #: (gi_running, FRAME_EXECUTING): resuming it again is an error
        self.running = False
        #: running only because a ``yield from`` hands the inner iterator a
        #: throw()/close() (generator_delegation._delegated)
        self.delegating = False
        _MADE.setdefault(frame.ctx, []).append(self)
        # where a break that needs this generator goes (values/functions/generator_breaks.py)
        maker = frame.parent
        self.origin = creation_origin(maker) if maker is not None else None
        self.made_at = maker.location() if maker is not None else None

    def across_break(self) -> Unsupported:
        """What rebuilding this generator in residual code raises: where to
        split instead (values/functions/generator_breaks.py), unless freeing or
        closing it could run code of the program (a ``finally``, a ``with``
        exit, an inner generator of ``yield from``): natively, the resume
        functions would hold it a little longer than eager's frame, so that
        code could run later than in eager; such a frame runs as Python."""
        name = self.frame.code.co_qualname
        if self.origin is None or closing_may_run_code(self.frame):
            return Unsupported(f"the generator {name} is still running where the compiled code hands its values "
                               "on (a graph break or the return), and freeing it may run its finally/with code",
                               hint="exhaust or close() the generator before the graph break or the return")
        return GeneratorAcrossBreak(name, self.origin, self.made_at)

    def cleanup_pending(self) -> bool:
        """Paused where closing it would run its code: inside a ``try``
        with a handler (``finally``, ``except``, ``with``) or in ``yield
        from`` (the inner one is closed).  The whole-body handler of 3.12+
        (StopIteration to RuntimeError) runs nothing for GeneratorExit."""
        if not self.started or self.done:
            return False
        from ...pyversion import handler_for
        f = self.frame
        if self._delegating():
            return True
        return _closing_runs_code(f, handler_for(f.code, f.current.offset))

    def python_type(self):
        import types
        return types.GeneratorType

    # --- resuming the frame -----------------------------------------------------
    def _run(self, tx):
        """Run the frame to its next yield: the yielded Value, or None when
        it returned (``return_value`` is set).  An exception leaving the
        frame finishes the generator; StopIteration leaving it becomes a
        RuntimeError (PEP 479, ``stop_iteration_error``)."""
        f = self.frame
        f.yielded = None
        self.running = True
        try:
            result = f.run()
        except UserException as e:
            self.done = True
            if issubclass(e.exc_type, StopIteration) and sys.version_info < (3, 12):
                # (3.12+: the generator's own handler converts it, CALL_INTRINSIC_1)
                f._materialize_exception(e)
                raise stop_iteration_error(e.value) from None
            raise
        finally:
            self.running = False
        if f.yielded is not None:
            v = f.yielded
            f.yielded = None
            return v
        self.done = True
        self.return_value = result  # what `yield from` evaluates to
        return None

    def resume(self, tx, sent: Value | None):
        """``next`` (``sent`` None) or ``send(sent)``: the yielded Value, or
        None when the generator is (or becomes) exhausted."""
        if self.running:
            raise user_error(ValueError, "generator already executing")
        if self.done:
            return None
        if self.started:
            self.frame.push(sent if sent is not None else ConstantValue(None))
        self.started = True
        return self._run(tx)

    def next(self, tx):
        return self.resume(tx, None)

    def unpack(self, tx):
        out = []
        while True:
            v = self.next(tx)
            if v is None:
                return out
            out.append(v)

    def _stop_iteration(self):
        """StopIteration carrying the generator's return value."""
        rv = getattr(self, "return_value", None)
        self.return_value = None   # (a finished generator's later calls raise a bare StopIteration)
        if rv is None or _is_none(rv):
            return user_error(StopIteration)
        exc = kinds.ExceptionValue(StopIteration, [rv])
        return UserException(StopIteration, rv.as_python_constant() if rv.is_python_constant() else rv, value=exc)

    def _delegating(self) -> bool:
        """Paused inside ``yield from`` or ``await``: the RESUME after the
        YIELD_VALUE says so (the low two bits of its oparg: 1 after a plain
        yield, 2 after ``yield from``, 3 after ``await``; 3.11 to 3.13)."""
        f = self.frame
        nxt = f.instructions[f.ip] if f.ip < len(f.instructions) else None
        if nxt is None or nxt.opname != "RESUME":
            return True   # (unknown layout: treated as delegating, so throw/close refuse)
        return ((nxt.arg or 0) & 3) >= 2

    # --- the generator's methods ------------------------------------------------
    def send(self, tx, value: Value) -> Value:
        if not self.started and not self.done and not _is_none(value):
            raise user_error(TypeError, "can't send non-None value to a just-started generator")
        if self.started and not self.done and self._delegating() and not isinstance(self._inner(), GeneratorValue):
            raise Unsupported("generator.send() into a `yield from` of an iterator that is not a generator",
                              hint="without fullgraph the frame is split here (a graph break); delegating to a "
                                   "generator keeps it in the graph")
        v = self.resume(tx, value)
        if v is None:
            raise self._stop_iteration()
        return v

    def _inner(self):
        return self.frame.stack[-1] if self.frame.stack else None

    def throw(self, tx, exc: Value) -> Value:
        """``throw(exc)``: ``exc`` an exception instance or class."""
        exc = realize(tx.ctx, exc)
        if self.running and not (self.delegating and pyversion.REENTRANT_YIELD_FROM_THROW):
            self.thrown(tx, exc)   # (what was thrown is checked first, then gen_send_ex refuses)
            raise user_error(ValueError, "generator already executing")
        if self.started and not self.done and self._delegating():   # handed to the inner iterator first (PEP 380)
            from .generator_delegation import throw_into_delegate
            return throw_into_delegate(self, tx, exc)
        error = self.thrown(tx, exc)
        if not self.started or self.done:
            # raised before the first instruction / in a finished generator: it
            # leaves at once, and the generator is finished
            self.started = self.done = True
            raise error
        return self.raise_at_pause(tx, error)

    def thrown(self, tx, exc: Value) -> UserException:
        """What ``throw(exc)`` raises in the generator (``throw_here``): the
        exception, made from ``exc`` if that is a class.  It is raised as it
        is, with the ``__context__`` it has (PyErr_Restore): the caller's
        handled exception is not chained; raise_at_pause chains the one the
        generator itself handles."""
        from .exceptions import as_exception
        exc = as_exception(tx, exc)
        if issubclass(exc.cls, (StopIteration, StopAsyncIteration)):
            raise Unsupported("throwing StopIteration into a generator")
        return UserException(exc.cls, *[a.as_python_constant() if a.is_python_constant() else a for a in exc.args],
                             value=exc)

    def raise_at_pause(self, tx, error: UserException) -> Value:
        """``error`` raised where the generator is paused, routed by its
        exception table: what it yields next, or raises.  Its ``__context__``
        becomes the exception the generator's frame is handling there, if
        any (gen_send_ex2's _PyErr_ChainStackItem: the generator's own
        exception state, not the caller's)."""
        f = self.frame
        if error.value is None:
            tx._materialize_exception(error)   # (an operation's error, raised where the caller runs)
        if f.exc_stack:
            error.value.raised(f.exc_stack[-1])
        if not f._handle_exception(error):
            self.done = True
            raise error
        v = self._run(tx)
        if v is None:
            raise self._stop_iteration()
        return v

    def close(self, tx) -> Value:
        """``close()``: None (3.13: the value the generator returns when it
        handles GeneratorExit by returning)."""
        if not self.started or self.done:
            self.started = self.done = True
            return ConstantValue(None)
        try:
            v = self.throw(tx, wrap(tx.ctx, GeneratorExit, None))
        except UserException as e:
            if issubclass(e.exc_type, (GeneratorExit, StopIteration)):
                rv = e.value.args[0] if e.exc_type is StopIteration and e.value is not None and e.value.args \
                    else ConstantValue(None)
                return rv if sys.version_info >= (3, 13) else ConstantValue(None)
            raise
        raise user_error(RuntimeError, "generator ignored GeneratorExit")

    def getattr(self, tx, name):
        if name in ("send", "throw", "close", "__next__", "__iter__"):
            return GeneratorMethodValue(self, name)
        raise Unsupported(f"generator attribute {name!r}")

    def reconstruct(self, out):
        raise self.across_break()


class GeneratorMethodValue(Value):
    """A bound method of a GeneratorValue (``g.send``)."""

    def __init__(self, gen: GeneratorValue, name: str):
        super().__init__()
        self.gen, self.name = gen, name

    def python_type(self):
        import types
        return types.BuiltinMethodType

    def call(self, tx, args, kwargs):
        if kwargs:
            raise user_error(TypeError, f"generator.{self.name}() takes no keyword arguments")
        gen, name = self.gen, self.name
        if name == "send" and len(args) == 1:
            return gen.send(tx, args[0])
        if name == "throw" and len(args) == 1:
            return gen.throw(tx, args[0])
        if name == "close" and not args:
            return gen.close(tx)
        if name == "__next__" and not args:
            v = gen.next(tx)
            if v is None:
                raise gen._stop_iteration()
            return v
        if name == "__iter__" and not args:
            return gen
        raise Unsupported(f"generator.{name}() with {len(args)} arguments")

    def __repr__(self):
        return f"<generator method {self.name}>"


def _closing_runs_code(f, entry, hops: int = 0) -> bool:
    """Whether GeneratorExit raised where ``entry`` (an exception-table
    entry of the generator's frame) catches runs code of the program: a
    ``finally``, a ``with`` exit or an ``except`` clause that matches it.
    ``except IndexError:`` (``collections.abc.Sequence.__iter__``) only
    tests the class and re-raises; the clean-up entries that restore the
    previous exception and 3.12+'s whole-body StopIteration handler run
    nothing either.  Anything not recognised counts as code."""
    import builtins
    from ...pyversion import handler_for
    if entry is None:
        return False
    if hops > 16:
        return True
    ins = f.instructions
    i = f.index_of[entry.target]
    op = ins[i]
    if op.opname == "CALL_INTRINSIC_1" and op.arg == 3:    # 3.12+: StopIteration -> RuntimeError
        return False
    if op.opname == "COPY" and i + 2 < len(ins) and ins[i + 1].opname == "POP_EXCEPT" \
            and ins[i + 2].opname == "RERAISE":             # restores the previous exception
        return _closing_runs_code(f, handler_for(f.code, ins[i + 2].offset), hops + 1)
    if op.opname != "PUSH_EXC_INFO":
        return True
    j = i + 1
    while j + 2 < len(ins):
        a = ins[j]
        if a.opname == "RERAISE":                          # no clause matched
            return _closing_runs_code(f, handler_for(f.code, a.offset), hops + 1)
        jump = ins[j + 2]
        if a.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins[j + 1].opname == "CHECK_EXC_MATCH" \
                and jump.opname.startswith("POP_JUMP") and jump.opname.endswith("IF_FALSE"):
            cls = f.f_globals.get(a.argval, getattr(builtins, a.argval, None))
            if not (isinstance(cls, type) and issubclass(cls, BaseException)) or issubclass(GeneratorExit, cls):
                return True
            j = f.index_of[jump.argval]                    # the next clause
            continue
        return True
    return True


def check_left_suspended(ctx) -> None:
    """At the end of a trace: a generator made in it and left paused where
    closing it runs code (a ``finally`` around the ``yield``) would run
    that code in eager when it is freed (often as the frame returns); the
    trace cannot place that, so the frame is not compiled."""
    for gen in _MADE.get(ctx, ()):
        if gen.cleanup_pending():
            raise Unsupported(f"the generator {gen.frame.code.co_qualname} is left paused inside a try/with block "
                              "(freeing it runs its finally/except code)",
                              hint="exhaust or close() the generator inside the compiled function")


def stop_iteration_error(stop) -> UserException:
    """PEP 479: a StopIteration (``stop``, an ExceptionValue) leaving a
    generator's frame is raised to the consumer as ``RuntimeError("generator
    raised StopIteration")`` whose ``__cause__`` and ``__context__`` are the
    StopIteration (Objects/genobject.c through 3.11, the
    STOPITERATION_ERROR intrinsic from 3.12).  StopAsyncIteration leaving a
    plain generator is not converted."""
    message = "generator raised StopIteration"
    err = kinds.ExceptionValue(RuntimeError, [ConstantValue(message)])
    err.cause, err.has_cause, err.context = stop, True, stop
    return UserException(RuntimeError, message, value=err)
