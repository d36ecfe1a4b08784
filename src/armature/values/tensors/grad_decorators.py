"""Grad-mode objects used as decorators inside the traced code.

``@torch.no_grad()`` (also ``enable_grad()``, ``set_grad_enabled(b)``,
``inference_mode(b)``, and the bare ``@torch.no_grad`` /
``@torch.inference_mode`` forms) on a function defined in the frame.  In
eager, ``_DecoratorContextManager.__call__`` wraps the function in
``decorate_context``, which on every call makes a fresh copy of the
context manager (``clone()``) and runs the function inside it.  The
decorated function here is modelled the same way: each call enters a fresh
grad-mode value, inlines the function, and leaves the mode as ``__exit__``
would, also when the function raises an exception the trace models.  A
graph break inside the function needs nothing special: the call runs
natively at the break, through the real decorated function that
``reconstruct`` builds (``torch.no_grad()(fn)``), which is what eager runs.

Decorating a generator function (torch wraps it in a generator that
switches the mode around each step) or a class is not modelled: a graph
break, and the decoration runs natively.
"""
from __future__ import annotations

import functools
import inspect
import types

from ...diagnostics.errors import Unsupported, UserException
from ..base import Value
from ..constant import ConstantValue


class GradModeDecoratedValue(Value):
    """``decorate_context``: ``fn`` wrapped by a grad-mode class with its
    constructor argument ``mode`` (None for no_grad/enable_grad)."""

    def __init__(self, cls: type, mode: bool | None, fn: Value):
        super().__init__()
        self.cls, self.mode, self.fn = cls, mode, fn

    def python_type(self):
        return types.FunctionType

    def _fresh_manager(self, tx) -> Value:
        """``self.clone()``, as decorate_context makes on every call."""
        from .torch_ops import GradModeClassValue
        args = [] if self.mode is None else [ConstantValue(self.mode)]
        return GradModeClassValue(self.cls).call(tx, args, {})

    def call(self, tx, args, kwargs):
        mgr = self._fresh_manager(tx)
        mgr.enter(tx)
        try:
            result = self.fn.call(tx, args, kwargs)
        except UserException:
            mgr.exit(tx)       # (the with block's __exit__ runs, then the exception goes on)
            raise
        mgr.exit(tx)
        return result

    def getattr(self, tx, name):
        if name == "__wrapped__":
            return self.fn
        if name in functools.WRAPPER_ASSIGNMENTS:   # copied from fn by functools.wraps
            return self.fn.getattr(tx, name)
        raise Unsupported(f"attribute {name!r} of a function decorated with {self.cls.__name__}")

    def has_attr(self, tx, name):
        if name == "__wrapped__":
            return True
        return super().has_attr(tx, name)

    def real(self, fn):
        """The real decorated function of ``fn`` (a class body made in the
        frame holds it as a method).  set_grad_enabled's constructor and
        ``__call__`` switch the real mode there and back."""
        return (self.cls() if self.mode is None else self.cls(self.mode))(fn)

    def reconstruct(self, out):
        """``cls(mode)(fn)``: the real decorated function (set_grad_enabled's
        constructor switches the mode and its ``__call__`` switches it back,
        so building it leaves the mode as it was, as in eager)."""
        out.instr("PUSH_NULL")
        out.instr("PUSH_NULL")
        out.load_const(self.cls)
        if self.mode is None:
            out.call(0)
        else:
            out.load_const(self.mode)
            out.call(1)
        out.reconstruct(self.fn)
        out.call(1)

    def __repr__(self):
        return f"<{self.cls.__name__}-decorated {self.fn!r}>"


def decorate(tx, cls: type, mode: bool | None, args, kwargs) -> Value:
    """A grad-mode object called with the function to decorate."""
    if kwargs or len(args) != 1:
        raise Unsupported(f"calling a {cls.__name__} object with {len(args)} arguments")
    fn = args[0]
    if not _decoratable(fn):
        raise Unsupported(f"decorating {fn} with {cls.__name__}",
                          hint="only Python functions are decorated in the trace; the decoration runs natively")
    return GradModeDecoratedValue(cls, mode, fn)


def _decoratable(fn: Value) -> bool:
    from ..functions.functions import BoundMethodValue, _Function
    if isinstance(fn, GradModeDecoratedValue):
        return True
    if isinstance(fn, BoundMethodValue):
        fn = fn.func
    return isinstance(fn, _Function) and not fn.code.co_flags & (
        inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR)


def is_function_argument(args, kwargs, name: str) -> bool:
    """``no_grad(fn)`` / ``inference_mode(fn)``: the class itself called with
    the function (torch's ``__new__`` then decorates it)."""
    v = args[0] if args else kwargs.get(name)
    if v is None:
        return False
    if v.is_python_constant() and isinstance(v.as_python_constant(), (bool, type(None))):
        return False
    return True

