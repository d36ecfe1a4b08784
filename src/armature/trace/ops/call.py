"""Calls: PUSH_NULL/KW_NAMES/PRECALL/CALL, CALL_FUNCTION_EX, MAKE_FUNCTION."""
from __future__ import annotations

from ...diagnostics.errors import Unsupported
from ...values.base import NULL
from ...values.constant import ConstantValue
from ...values.containers import DictValue, TupleValue
from ...values.functions import NestedFunctionValue
from ..pyversion import opcode


@opcode("PUSH_NULL")
def push_null(f, inst):
    f.push(NULL)


@opcode("KW_NAMES")
def kw_names(f, inst):
    f.kw_names = f.code.co_consts[inst.arg]


@opcode("PRECALL")
def precall(f, inst):
    pass


@opcode("CALL")
def call(f, inst):
    n = inst.arg
    args = f.popn(n, raw=True)
    b = f.pop()
    a = f.pop()
    if a is NULL:
        fn = b
    else:
        fn, args = a, [b, *args]
    kw = f.kw_names
    f.kw_names = ()
    kwargs = {}
    if kw:
        kwargs = dict(zip(kw, args[len(args) - len(kw):]))
        args = args[:len(args) - len(kw)]
    f.push(fn.call(f, args, kwargs))


@opcode("CALL_FUNCTION_EX")
def call_function_ex(f, inst):
    kwargs_v = f.pop() if inst.arg & 1 else None
    args_v = f.pop()
    fn = f.pop()
    if f.stack and f.stack[-1] is NULL:
        f.pop()
    args = f.iterate(args_v)
    kwargs = {}
    if kwargs_v is not None:
        if not isinstance(kwargs_v, DictValue):
            raise Unsupported(f"**kwargs from {kwargs_v}")
        kwargs = dict(kwargs_v.items)
        if not all(isinstance(k, str) for k in kwargs):
            raise Unsupported("keywords must be strings")
    f.push(fn.call(f, args, kwargs))


@opcode("MAKE_FUNCTION")
def make_function(f, inst):
    flags = inst.arg
    code = f.pop().as_python_constant()
    closure = f.pop() if flags & 0x08 else None
    if flags & 0x04:
        f.pop()  # annotations: not needed to run the function
    kwdefaults = f.pop() if flags & 0x02 else None
    defaults = f.pop() if flags & 0x01 else None
    cells = tuple(closure.items) if closure is not None else ()
    if isinstance(defaults, ConstantValue):
        defaults = TupleValue([ConstantValue(v) for v in defaults.value])
    if defaults is not None and not isinstance(defaults, TupleValue):
        raise Unsupported("function defaults that are not a tuple")
    f.push(NestedFunctionValue(code, f.f_globals, defaults, kwdefaults, cells))
