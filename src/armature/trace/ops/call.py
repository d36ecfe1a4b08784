"""Calls: PUSH_NULL, CALL and its keyword forms, CALL_FUNCTION_EX,
MAKE_FUNCTION (+ 3.13's SET_FUNCTION_ATTRIBUTE), CALL_INTRINSIC_1/2.

Where the NULL of a call sits is the main version difference: below the
callable on 3.11-3.12 (``[NULL, fn, args]`` or ``[meth, self, args]``), above
it on 3.13 (``[fn, NULL, args]`` or ``[meth, self, args]``).  Keyword names
come from KW_NAMES (3.11-3.12) or are the top of the stack (3.13 CALL_KW).
"""
from __future__ import annotations

from ...diagnostics.errors import Unsupported
from ...values.base import NULL
from ...values.constant import ConstantValue
from ...values.containers.containers import DictValue, TupleValue
from ...values.functions.functions import NestedFunctionValue
from ...pyversion import opcode


@opcode("PUSH_NULL")
def push_null(f, inst):
    f.push(NULL)


@opcode("KW_NAMES", until=(3, 12))
def kw_names(f, inst):
    f.kw_names = f.code.co_consts[inst.arg]


@opcode("PRECALL", until=(3, 11))
def precall(f, inst):
    pass


def _finish_call(f, fn, args, kw) -> None:
    kwargs = {}
    if kw:
        kwargs = dict(zip(kw, args[len(args) - len(kw):]))
        args = args[:len(args) - len(kw)]
    f.push(fn.call(f, args, kwargs))


@opcode("CALL", until=(3, 12))
def call(f, inst):
    args = f.popn(inst.arg, raw=True)
    b = f.pop()
    a = f.pop()
    if a is NULL:
        fn = b
    else:
        fn, args = a, [b, *args]
    kw = f.kw_names
    f.kw_names = ()
    _finish_call(f, fn, args, kw)


def _pop_callee_313(f, args: list):
    """3.13: ``callable, self_or_null`` under the arguments."""
    self_or_null = f.pop()
    fn = f.pop()
    return fn, args if self_or_null is NULL else [self_or_null, *args]


@opcode("CALL", since=(3, 13))
def call_313(f, inst):
    fn, args = _pop_callee_313(f, f.popn(inst.arg, raw=True))
    _finish_call(f, fn, args, ())


@opcode("CALL_KW", since=(3, 13))
def call_kw(f, inst):
    kw = f.pop().as_python_constant()
    fn, args = _pop_callee_313(f, f.popn(inst.arg, raw=True))
    _finish_call(f, fn, args, kw)


def _call_ex(f, fn, args_v, kwargs_v) -> None:
    args = f.iterate(args_v)
    kwargs = {}
    if kwargs_v is not None:
        if not isinstance(kwargs_v, DictValue):
            raise Unsupported(f"**kwargs from {kwargs_v}")
        kwargs = dict(kwargs_v.items)
        if not all(isinstance(k, str) for k in kwargs):
            raise Unsupported("keywords must be strings")
    f.push(fn.call(f, args, kwargs))


@opcode("CALL_FUNCTION_EX", until=(3, 12))
def call_function_ex(f, inst):
    kwargs_v = f.pop() if inst.arg & 1 else None
    args_v = f.pop()
    fn = f.pop()
    if f.stack and f.stack[-1] is NULL:
        f.pop()
    _call_ex(f, fn, args_v, kwargs_v)


@opcode("CALL_FUNCTION_EX", since=(3, 13), until=(3, 13))
def call_function_ex_313(f, inst):
    """3.13: ``func, NULL, callargs[, kwargs]``."""
    kwargs_v = f.pop() if inst.arg & 1 else None
    args_v = f.pop()
    f.pop_raw()   # the NULL
    fn = f.pop()
    _call_ex(f, fn, args_v, kwargs_v)


def _defaults_value(defaults):
    if isinstance(defaults, ConstantValue):
        defaults = TupleValue([ConstantValue(v) for v in defaults.value])
    if defaults is not None and not isinstance(defaults, TupleValue):
        raise Unsupported("function defaults that are not a tuple")
    return defaults


@opcode("MAKE_FUNCTION", until=(3, 12))
def make_function(f, inst):
    flags = inst.arg
    code = f.pop().as_python_constant()
    closure = f.pop() if flags & 0x08 else None
    annotations = f.pop_raw() if flags & 0x04 else None   # (read only through __annotations__)
    kwdefaults = f.pop() if flags & 0x02 else None
    defaults = f.pop() if flags & 0x01 else None
    cells = tuple(closure.items) if closure is not None else ()
    fn = NestedFunctionValue(code, f.f_globals, _defaults_value(defaults), kwdefaults, cells)
    fn.annotations = annotations
    f.push(fn)


@opcode("MAKE_FUNCTION", since=(3, 13))
def make_function_313(f, inst):
    """3.13: the bare function; SET_FUNCTION_ATTRIBUTE adds the rest."""
    code = f.pop().as_python_constant()
    f.push(NestedFunctionValue(code, f.f_globals, None, None, ()))


@opcode("SET_FUNCTION_ATTRIBUTE", since=(3, 13))
def set_function_attribute(f, inst):
    fn = f.pop()
    attr = f.pop()
    if not isinstance(fn, NestedFunctionValue):  # pragma: no cover (only after MAKE_FUNCTION)
        raise Unsupported(f"setting a function attribute of {fn}")
    if inst.arg == 0x01:
        fn._defaults = _defaults_value(attr)
    elif inst.arg == 0x02:
        fn._kwdefaults = attr
    elif inst.arg == 0x08:
        fn.closure = tuple(attr.items)
    elif inst.arg == 0x04:
        fn.annotations = attr   # (read only through __annotations__)
    elif inst.arg == 0x10:
        fn.annotate = attr      # 3.14 (PEP 649): __annotations__ calls it
    else:
        raise Unsupported(f"SET_FUNCTION_ATTRIBUTE {inst.arg:#x}")
    f.push(fn)


# CALL_INTRINSIC_1/2 (3.12+): operand numbers from CPython's pycore_intrinsics.h
_INTRINSIC_UNARY_POSITIVE = 5
_INTRINSIC_LIST_TO_TUPLE = 6
_INTRINSIC_STOPITERATION_ERROR = 3


@opcode("CALL_INTRINSIC_1", since=(3, 12))
def call_intrinsic_1(f, inst):
    if inst.arg == _INTRINSIC_UNARY_POSITIVE:
        from ...values.constant import UNARY_OPS
        from ...values.operations.operators import unary_op
        f.push(unary_op(f, UNARY_OPS["UNARY_POSITIVE"], f.pop()))
    elif inst.arg == _INTRINSIC_LIST_TO_TUPLE:
        f.push(TupleValue(f.pop().items))
    elif inst.arg == _INTRINSIC_STOPITERATION_ERROR:
        # a generator's handler: StopIteration escaping it becomes RuntimeError
        exc = f.stack[-1]
        if issubclass(exc.python_type(), StopIteration):
            from ...values.functions.generators import stop_iteration_error
            f.stack[-1] = stop_iteration_error(exc).value   # (RERAISE raises it out of the generator)
    else:
        raise Unsupported(f"the intrinsic {inst.argrepr} (CALL_INTRINSIC_1)")


@opcode("CALL_INTRINSIC_2", since=(3, 12))
def call_intrinsic_2(f, inst):
    raise Unsupported(f"the intrinsic {inst.argrepr} (CALL_INTRINSIC_2)")
