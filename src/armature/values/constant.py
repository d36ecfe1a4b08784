"""Python values fully known while tracing: folded, never put in the graph."""
from __future__ import annotations

import operator
from typing import Any

from ..diagnostics.errors import Unsupported
from .base import Value

# Types whose methods are pure and whose instances are immutable, so calls on
# them can be folded at trace time.
import inspect as _inspect
import types as _types

FOLDABLE_TYPES = (int, float, bool, str, bytes, complex, type(None), type(Ellipsis),
                  range, slice, frozenset, tuple, _types.CodeType, _inspect.Signature,
                  _inspect.Parameter, _types.MappingProxyType)


class ConstantValue(Value):
    def __init__(self, value: Any, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self):
        return type(self.value)

    def is_python_constant(self):
        return True

    def as_python_constant(self):
        return self.value

    def truth(self, tx):
        return bool(self.value)

    def unpack(self, tx):
        try:
            items = list(self.value)
        except TypeError:
            raise Unsupported(f"iterating over {type(self.value).__name__}")
        return [ConstantValue(v) for v in items]

    def length(self, tx):
        return len(self.value)

    def getattr(self, tx, name):
        try:
            attr = getattr(self.value, name)
        except AttributeError as e:
            from ..diagnostics.errors import user_error
            raise user_error(AttributeError, str(e))
        if name == "__class__" or isinstance(attr, type):
            # a class, not a method: ``s.__class__.__name__``, ``np.dtype(...).type(2)``
            from .builder import wrap
            return wrap(tx.ctx, attr, None)
        if callable(attr) and not isinstance(self.value, FOLDABLE_TYPES + (_torch_meta_types())):
            raise Unsupported(f"method {name!r} of {type(self.value).__name__}")
        if callable(attr):
            return ConstantMethodValue(self, name)
        return ConstantValue(attr)

    def call(self, tx, args, kwargs):
        if type(self.value) in _NOT_CALLABLE:   # (``3()``, a ``throw = 3`` attribute called)
            from ..diagnostics.errors import user_error
            raise user_error(TypeError, f"'{type(self.value).__name__}' object is not callable")
        return super().call(tx, args, kwargs)

    def reconstruct(self, out):
        out.load_const(self.value)

    def __repr__(self):
        return f"Constant({self.value!r})"


#: constants whose call is CPython's TypeError, raised in the trace
_NOT_CALLABLE = (int, float, complex, bool, str, bytes, type(None), tuple, frozenset)


def _torch_meta_types():
    import torch
    return (torch.dtype, torch.device, torch.Size, torch.layout, torch.memory_format, torch.finfo, torch.iinfo)


class ConstantMethodValue(Value):
    """A method of an immutable constant: calls fold when all args are constants."""

    def __init__(self, obj: ConstantValue, name: str):
        super().__init__()
        self.obj, self.name = obj, name

    def call(self, tx, args, kwargs):
        from .containers.containers import ListValue, TupleValue, unwrap_constants
        from .operations.strings import method_arguments
        if type(self.obj.value) is str and self.name == "format":
            from .operations.deferred_text import str_format
            deferred = str_format(tx, self.obj.value, args, kwargs)   # ("{} rows".format(n), n symbolic)
            if deferred is not None:
                return deferred
        args = method_arguments(tx, self.obj.value, self.name, args)   # (sep.join(generator))
        if self.name == "join" and type(self.obj.value) is str and len(args) == 1 and not kwargs \
                and isinstance(args[0], (TupleValue, ListValue)):
            from .operations.runtime_text import join_with   # (an item holds an object's address)
            joined = join_with(tx, self.obj.value, args[0].items)
            if joined is not None:
                return joined
        a, k = unwrap_constants(args, kwargs, what=f"{type(self.obj.value).__name__}.{self.name}()")
        try:
            result = getattr(self.obj.value, self.name)(*a, **k)
        except Exception as e:
            raise Unsupported(f"{type(self.obj.value).__name__}.{self.name}() raised {type(e).__name__}: {e}")
        from .builder import wrap_constant_result
        return wrap_constant_result(result)

    def reconstruct(self, out):
        out.reconstruct(self.obj)
        out.instr("LOAD_ATTR", self.name)


BINARY_OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "@": operator.matmul,
    "&": operator.and_, "|": operator.or_, "^": operator.xor, "<<": operator.lshift,
    ">>": operator.rshift,
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "@=": operator.imatmul,
    "&=": operator.iand, "|=": operator.ior, "^=": operator.ixor, "<<=": operator.ilshift,
    ">>=": operator.irshift,
}

COMPARE_OPS = {
    "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
    ">": operator.gt, ">=": operator.ge,
}

UNARY_OPS = {
    "UNARY_NEGATIVE": operator.neg, "UNARY_POSITIVE": operator.pos,
    "UNARY_INVERT": operator.invert, "UNARY_NOT": operator.not_,
}

INPLACE_TO_BINARY = {
    operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
    operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
    operator.imod: operator.mod, operator.ipow: operator.pow, operator.imatmul: operator.matmul,
    operator.iand: operator.and_, operator.ior: operator.or_, operator.ixor: operator.xor,
    operator.ilshift: operator.lshift, operator.irshift: operator.rshift,
}
