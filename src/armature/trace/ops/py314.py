"""The opcodes CPython 3.14 added or changed, in one place.

- New loads: LOAD_SMALL_INT (an int constant in the oparg),
  LOAD_COMMON_CONSTANT (AssertionError, NotImplementedError, tuple, all,
  any), LOAD_FAST_BORROW and its pair (LOAD_FAST that skips a reference
  count: the same value to the tracer; generated code never emits them,
  codegen/spelling.py).
- ``with``: LOAD_SPECIAL replaces BEFORE_WITH.  It pushes the special
  method and ``self`` (or NULL), so the ``with`` body runs over two stack
  slots, the normal exit is ``CALL 3`` and WITH_EXCEPT_START finds
  ``__exit__`` one slot deeper than on 3.13.  The tracer pushes the bound
  method and a NULL: the same call to every consumer.
- BINARY_SUBSCR is BINARY_OP 26; constant slices are LOAD_CONST slice(...)
  (trace/ops/load_store.py already pushes those as constants).
- CALL_FUNCTION_EX has no oparg and always a kwargs slot (NULL without
  ``**``).
- An exhausted FOR_ITER skips END_FOR and lands on POP_ITER, which pops the
  iterator (ops/control.py's FOR_ITER pushes a placeholder END_FOR pops).
- NOT_TAKEN marks the fall-through of a conditional jump (for monitoring).
- t-strings (BUILD_TEMPLATE, BUILD_INTERPOLATION, PEP 750) are refused:
  the frame runs as Python (or breaks before them) with the reason below.
- PEP 649 annotations: SET_FUNCTION_ATTRIBUTE 0x10 (ops/call.py) keeps a
  function's ``__annotate__``; class bodies store ``__annotate_func__``,
  ``__classdictcell__`` and friends as ordinary names.
"""
from __future__ import annotations

from ...diagnostics.errors import Unsupported
from ...values.base import NULL, Value
from ...values.builder import wrap
from ...values.constant import BINARY_OPS, ConstantValue
from ...values.operations.operators import binary_op, getitem
from ...pyversion import opcode
from .call import _call_ex, _pop_callee_313
from .load_store import load_fast_313, load_fast_load_fast

#: BINARY_OP's oparg for ``a[b]`` (NB_SUBSCR in CPython's opcode_ids)
NB_SUBSCR = 26

T_STRING_REASON = ("a t-string (template string literal, PEP 750): armature does not trace "
                   "string.templatelib.Template construction")

opcode("LOAD_FAST_BORROW", since=(3, 14))(load_fast_313)
opcode("LOAD_FAST_BORROW_LOAD_FAST_BORROW", since=(3, 14))(load_fast_load_fast)


@opcode("LOAD_SMALL_INT", since=(3, 14))
def load_small_int(f, inst):
    f.push(ConstantValue(inst.arg))


@opcode("LOAD_COMMON_CONSTANT", since=(3, 14))
def load_common_constant(f, inst):
    """Builtins the compiler loads directly (no LOAD_GLOBAL, so no guard:
    shadowing ``AssertionError`` does not change what ``assert`` raises)."""
    import opcode as _opcode
    f.push(wrap(f.ctx, _opcode._common_constants[inst.arg], None))


class SpecialMethod(Value):
    """What LOAD_SPECIAL pushes for ``__enter__``/``__exit__`` of ``owner``:
    calls as the bound method.  Until ``__enter__`` has been called, a
    graph break may fall between the loads and that call (a block whose
    enter a break cannot split, such as ``inference_mode`` switching the
    mode, moves the break to the call, so that ``__enter__`` runs natively);
    there both methods are rebuilt as attributes of the one rebuilt owner.
    After it, ``__exit__`` rebuilds as the method Value says (a grad-mode
    block's restoring exit...)."""

    def __init__(self, owner: Value, name: str, method: Value, exit_: "SpecialMethod | None" = None):
        super().__init__()
        self.owner, self.name, self.method = owner, name, method
        self.exit = exit_           # (on __enter__: the block's __exit__)
        self.before_enter = True    # (on __exit__: __enter__ not called yet)

    def python_type(self):
        return self.method.python_type()

    def call(self, tx, args, kwargs):
        if self.exit is not None:
            self.exit.before_enter = False
        return self.method.call(tx, args, kwargs)

    def reconstruct(self, out):
        if self.name == "__exit__" and not self.before_enter:
            out.reconstruct(self.method)
            return
        owner = out.materialize(self.owner)
        out.instr("LOAD_FAST", owner.name)
        out.instr("LOAD_ATTR", self.name)


@opcode("LOAD_SPECIAL", since=(3, 14))
def load_special(f, inst):
    """``__enter__``/``__exit__`` (``__aenter__``/``__aexit__`` belong to
    async code, never traced): the method, then NULL (``with`` loads
    ``__exit__`` first and keeps it two slots under ``__enter__``)."""
    owner = f.pop()
    name = inst.argrepr   # (dis gives the index as argval)
    method = owner.getattr(f, name)
    exit_ = None
    if name == "__enter__" and len(f.stack) >= 2 and isinstance(f.stack[-2], SpecialMethod) \
            and f.stack[-2].owner is owner and f.stack[-2].name == "__exit__":
        exit_ = f.stack[-2]
    f.push(SpecialMethod(owner, name, method, exit_))
    f.push(NULL)


@opcode("WITH_EXCEPT_START", since=(3, 14))
def with_except_start(f, inst):
    """``exit_func, exit_self, lasti, prev_exc, exc``: calls
    ``exit_func([exit_self,] type(exc), exc, traceback)``."""
    exc = f.stack[-1]
    exit_self = f.stack[-4]
    exit_fn = f.stack[-5]
    typ = wrap(f.ctx, exc.python_type(), None)
    args = [typ, exc, ConstantValue(None)]
    if exit_self is not NULL:
        args.insert(0, exit_self)
    f.push(exit_fn.call(f, args, {}))


@opcode("BINARY_OP", since=(3, 14))
def binary_op_314(f, inst):
    b = f.pop()
    a = f.pop()
    if inst.arg == NB_SUBSCR:
        f.push(getitem(f, a, b))
    else:
        f.push(binary_op(f, BINARY_OPS[inst.argrepr], a, b))


@opcode("CALL_FUNCTION_EX", since=(3, 14))
def call_function_ex_314(f, inst):
    """``func, NULL, callargs, kwargs_or_NULL``."""
    kwargs_v = f.pop_raw()
    args_v = f.pop()
    fn, _ = _pop_callee_313(f, [])
    _call_ex(f, fn, args_v, None if kwargs_v is NULL else kwargs_v)


@opcode("POP_ITER", since=(3, 14))
def pop_iter(f, inst):
    f.pop_raw()


@opcode("NOT_TAKEN", since=(3, 14))
def not_taken(f, inst):
    pass


@opcode("BUILD_TEMPLATE", "BUILD_INTERPOLATION", since=(3, 14))
def build_template(f, inst):
    raise Unsupported(T_STRING_REASON)
