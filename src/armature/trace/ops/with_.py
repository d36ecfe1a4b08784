"""``with`` blocks and exception handling.

BEFORE_WITH pushes ``__exit__`` and ``__enter__()``'s result; the normal
exit path calls ``__exit__(None, None, None)`` as an ordinary CALL.
Exceptions the traced program raises are routed by Frame._handle_exception
through the exception table to these handlers, which follow CPython's stack
discipline exactly (the same for these opcodes on 3.11 to 3.13, except
3.12's SEND, which leaves its exhausted receiver to END_SEND).
"""
from __future__ import annotations

from ...diagnostics.errors import Unsupported, UserException, user_error
from ...values.constant import ConstantValue
from ...values.functions.exceptions import ExcInfoSlot, ExceptionValue, as_exception as _as_exception
from ...pyversion import opcode


@opcode("BEFORE_WITH", until=(3, 13))   # 3.14: LOAD_SPECIAL (ops/py314.py)
def before_with(f, inst):
    mgr = f.pop()
    enter = mgr.getattr(f, "__enter__")
    exit_ = mgr.getattr(f, "__exit__")
    f.push(exit_)
    f.push(enter.call(f, [], {}))


@opcode("PUSH_EXC_INFO")
def push_exc_info(f, inst):
    exc = f.pop()
    f.push(ExcInfoSlot(f.exc_stack[-1] if f.exc_stack else ConstantValue(None), exc))
    f.push(exc)
    f.exc_stack.append(exc)


@opcode("POP_EXCEPT")
def pop_except(f, inst):
    f.pop()
    if f.exc_stack:
        f.exc_stack.pop()


@opcode("CHECK_EXC_MATCH")
def check_exc_match(f, inst):
    right = f.pop().as_python_constant()
    left = f.stack[-1]
    f.push(ConstantValue(issubclass(left.python_type(), right)))


def _raise(v: ExceptionValue):
    raise UserException(v.cls, *[a.as_python_constant() if a.is_python_constant() else a for a in v.args], value=v)


def handled_exception(f):
    """The exception being handled where ``f`` runs (sys.exc_info()[1]): the
    innermost except block of this frame or of its callers in the trace;
    None when the traced frames handle nothing (the caller's, unknown)."""
    while f is not None:
        if f.exc_stack:
            return f.exc_stack[-1]
        f = f.parent
    return None


@opcode("RAISE_VARARGS")
def raise_varargs(f, inst):
    if inst.arg == 0:
        current = handled_exception(f)
        if not isinstance(current, ExceptionValue):
            raise Unsupported("a bare raise of an exception the trace did not make")
        _raise(current)
    cause = f.pop() if inst.arg == 2 else None
    exc = _as_exception(f, f.pop())
    if cause is not None:
        if not cause.is_python_constant() or cause.as_python_constant() is not None:
            cause = _as_exception(f, cause)
        exc.cause, exc.has_cause = cause, True
    exc.raised(handled_exception(f))
    _raise(exc)


@opcode("RERAISE")
def reraise(f, inst):
    exc = f.pop()
    if inst.arg:
        f.pop()
    _raise(_as_exception(f, exc))


@opcode("WITH_EXCEPT_START", until=(3, 13))   # 3.14: ops/py314.py
def with_except_start(f, inst):
    exc = f.stack[-1]
    exit_fn = f.stack[-4]
    from ...values.builder import wrap
    typ = wrap(f.ctx, exc.python_type(), None)
    f.push(exit_fn.call(f, [typ, exc, ConstantValue(None)], {}))


@opcode("LOAD_ASSERTION_ERROR", until=(3, 13))   # 3.14: LOAD_COMMON_CONSTANT
def load_assertion_error(f, inst):
    from ...values.builder import wrap
    f.push(wrap(f.ctx, AssertionError, None))


@opcode("RETURN_GENERATOR")
def return_generator(f, inst):
    # Only reached when a GeneratorValue first resumes its frame: the value
    # "sent" to start a generator is None, which the next POP_TOP discards.
    f.push(ConstantValue(None))


@opcode("YIELD_VALUE")
def yield_value(f, inst):
    f.yielded = f.pop_raw()


@opcode("GET_YIELD_FROM_ITER")
def get_yield_from_iter(f, inst):
    from ...values.functions.generators import GeneratorValue
    v = f.pop()
    f.push(v if isinstance(v, GeneratorValue) else f.get_iter(v))


def _send_next(f):
    """The inner iterator's next value, or None when it is exhausted."""
    from ...values.functions.generators import GeneratorValue
    sent = f.pop()
    receiver = f.stack[-1]
    if not (sent.is_python_constant() and sent.as_python_constant() is None):
        if not isinstance(receiver, GeneratorValue):
            raise Unsupported("sending a value into an iterator that is not a generator (generator.send)")
        if not receiver.started and not receiver.done:
            raise user_error(TypeError, "can't send non-None value to a just-started generator")
        return receiver, receiver.resume(f, sent)   # (generator.send through `yield from`)
    return receiver, receiver.next(f)


@opcode("SEND", until=(3, 11))
def send(f, inst):
    """``yield from``: resume the inner iterator; a yielded value goes on to
    the YIELD_VALUE that follows, exhaustion pushes the return value."""
    receiver, v = _send_next(f)
    if v is None:
        f.pop()
        f.push(getattr(receiver, "return_value", None) or ConstantValue(None))
        f.jump(inst.argval)
    else:
        f.push(v)


@opcode("SEND", since=(3, 12))
def send_312(f, inst):
    """3.12+: exhaustion keeps the receiver under the return value and jumps
    to END_SEND, which removes it."""
    receiver, v = _send_next(f)
    if v is None:
        f.push(getattr(receiver, "return_value", None) or ConstantValue(None))
        f.jump(inst.argval)
    else:
        f.push(v)


@opcode("END_SEND", since=(3, 12))
def end_send(f, inst):
    value = f.pop_raw()
    f.pop_raw()
    f.push(value)


@opcode("CLEANUP_THROW", since=(3, 12))
def cleanup_throw(f, inst):
    """The handler of a ``yield from`` that generator.throw() reached
    (values/functions/generator_delegation.py): the inner iterator's StopIteration
    ends the ``yield from`` with its value (END_SEND follows), anything
    else propagates."""
    exc = f.pop()
    f.pop_raw()   # (the value sent last)
    f.pop_raw()   # (the inner iterator)
    exc = _as_exception(f, exc)
    if not issubclass(exc.cls, StopIteration):
        _raise(exc)
    f.push(ConstantValue(None))
    f.push(exc.args[0] if exc.args else ConstantValue(None))
