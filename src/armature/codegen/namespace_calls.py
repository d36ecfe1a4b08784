"""``eval``/``exec`` without namespaces, run natively at a graph break.

Without ``globals``/``locals``, ``eval(s)`` and ``exec(s)`` in a function
read the *calling* frame: its globals and ``locals()`` (the bound variables,
closure variables by their contents).  At a graph break the native call runs
in the transformed function, whose frame holds armature's temporaries, so
the call as written would see the wrong names.  CPython's call is the same
as ``eval(s, <frame globals>, <the frame's locals() dict>)``: writes made by
the string land in that dict, never in the function's fast locals.  So the
break calls exactly that: the callable on the stack is replaced by
``partial(call_with_namespaces, eval, <globals>, <locals dict>)``, whose
arguments are the traced frame's (values/functions/frame_locals.locals_dict:
3.13+ a fresh snapshot, PEP 667; 3.11/3.12 the frame's one dict, refreshed
here as CPython refreshes it at each eval/exec, and handed to the resume
function like any ``locals()`` dict).  The operands stay where the
instruction put them; only the callee changes.

``CALL`` with the source, then ``None`` for the namespaces if given, is
rewritten, and on 3.13+ (where eval/exec take keywords) ``CALL_KW`` with
``globals=None``/``locals=None``; an unpacked spelling (``eval(*args)``)
cannot be split there (:class:`BreakNotPossible`: the frame runs as Python).
Explicit namespaces need no frame: the call stays as it is.
"""
from __future__ import annotations

import builtins
import functools

from ..runtime import frame_view
from ..values.base import NULL, LazyValue, Value, realize

#: the callables that read the calling frame when given no namespaces -> the
#: builtin to call with explicit ones (a resume function loads the
#: runtime/frame_view stand-ins instead of the builtins)
FRAME_READERS = {builtins.eval: builtins.eval, builtins.exec: builtins.exec,
                 frame_view.frame_eval: builtins.eval, frame_view.frame_exec: builtins.exec}


def call_with_namespaces(fn, f_globals: dict, f_locals: dict, source, *namespaces, **keyword_namespaces):
    """At run time: ``fn(source, f_globals, f_locals)``, the call the user's
    frame would have made (``namespaces``, ``keyword_namespaces``: the
    ``None`` arguments written, positionally or, 3.13+, by keyword)."""
    return fn(source, f_globals, f_locals)


class _WithNamespaces(Value):
    """The callee of a rewritten call: ``partial(call_with_namespaces, fn,
    globals, <the locals dict>)``."""

    def __init__(self, fn, f_globals: dict, f_locals: Value):
        super().__init__()
        self.fn, self.f_globals, self.f_locals = fn, f_globals, f_locals

    def reconstruct(self, out):
        out.instr("PUSH_NULL")
        out.load_const(functools.partial)
        out.load_const(functools.partial(call_with_namespaces, self.fn, self.f_globals))
        out.reconstruct(self.f_locals)
        out.call(2)


def _reader(ctx, v: Value):
    """The builtin to call if ``v`` is one of FRAME_READERS, else None.  Only
    then is a lazy ``v`` realized (guarded: the rewrite assumes this
    callable); any other callee is left as it is, unguarded."""
    obj = v.obj if type(v) is LazyValue else getattr(v, "fn", None)
    try:
        fn = FRAME_READERS.get(obj)
    except Exception:   # (an unhashable object, a __hash__ that raises)
        return None
    if fn is not None:
        realize(ctx, v)
    return fn


def _is_none(ctx, v: Value) -> bool:
    v = realize(ctx, v)
    return v.is_python_constant() and v.as_python_constant() is None


def rewrite(frame, stack: list, inst, kw_names: tuple) -> None:
    """Replace, in ``stack`` (the frame's stack before the breaking
    ``inst``), the callee of an ``eval``/``exec`` that reads the frame by
    one that passes the frame's namespaces.  Anything else is left alone."""
    from .breaks import BreakNotPossible
    from .spelling import SPELLING
    from ..values.functions.frame_locals import locals_dict
    if inst.opname not in ("CALL", "CALL_KW", "CALL_FUNCTION_EX"):
        return
    pos = SPELLING.callable_position(len(stack), inst.opname, inst.arg)
    if inst.opname != "CALL_FUNCTION_EX":
        pos = SPELLING.callee_is_first(stack, pos, NULL)
    fn = _reader(frame.ctx, stack[pos])
    if fn is None:
        return
    if inst.opname == "CALL_FUNCTION_EX":
        raise BreakNotPossible(f"{fn.__name__}() with unpacked arguments reads the calling frame")
    if kw_names:
        return   # (3.11/3.12: eval/exec take no keywords; eager's TypeError, raised before any frame is read)
    names: tuple = ()
    end = len(stack)
    if inst.opname == "CALL_KW":   # (3.13+: the keyword names on top of the stack)
        top = realize(frame.ctx, stack[-1])
        names = top.as_python_constant() if top.is_python_constant() else None
        if not isinstance(names, tuple) or not set(names) <= {"globals", "locals"}:
            raise BreakNotPossible(f"{fn.__name__}() with these keyword arguments reads the calling frame")
        end -= 1
    args = stack[end - inst.arg:end]
    if not args or len(args) > 3 or len(args) == len(names) or not all(_is_none(frame.ctx, a) for a in args[1:]):
        return   # explicit namespaces (or eager's TypeError): the call as written
    stack[pos] = _WithNamespaces(fn, frame.f_globals, locals_dict(frame, f"{fn.__name__}()"))
