"""``eval(source)`` and ``exec(source)`` without namespaces, traced.

Without ``globals``/``locals`` arguments, ``eval`` reads the *calling
frame's* variables.  Run natively at a graph break it would read the
transformed function's frame (generated names, values still on the stack):
a NameError or a wrong value.  So a call that needs the frame is never a
plain break:

- ``eval`` of a string the trace knows (a constant): the string is
  compiled here (``compile(s, "<string>", "eval")``, the same code eval
  runs) and traced inline as a frame whose name lookups (``LOAD_NAME``, as
  in a class body: trace/ops/class_body.py) read a namespace of the
  caller's bound variables (values/frame_locals.bound_variables: what
  ``locals()`` shows, closure variables by their contents), then the
  caller's globals, then builtins.  The result joins the graph.
- anything this does not model (a string known only at run time, ``exec``,
  code that stores names or defines nested code, an operation inside the
  string that would break the graph) raises :class:`FrameIntrospection`:
  the frame runs as Python, as it must to give eval its real frame.

With explicit namespaces (``eval(s, g)``, ``eval(s, g, l)`` with ``l`` not
None) the call does not look at the frame: it stays an ordinary graph break.
"""
from __future__ import annotations

import builtins
import dis
import inspect

from ...diagnostics.errors import Unsupported, UserException
from ..base import realize
from ..constant import ConstantValue
from ..functions.frame_locals import FrameIntrospection, bound_variables

_HINT = ("eval/exec without namespaces read the calling frame; a constant string that only reads names "
         "is traced into the graph, anything else runs between two graphs")

#: opcodes that would change the namespace (a walrus, ``del``) or make code
#: that runs later (a lambda, a generator expression, a 3.11 comprehension)
_REFUSED = {"STORE_NAME", "DELETE_NAME", "MAKE_FUNCTION", "STORE_GLOBAL", "DELETE_GLOBAL", "IMPORT_NAME"}


def _needs_frame(args, kwargs) -> bool:
    rest = list(args[1:]) + [kwargs.get("globals"), kwargs.get("locals")]
    return all(v is None or (v.is_python_constant() and v.as_python_constant() is None) for v in rest)


def _code_of(source: str):
    try:
        code = compile(source, "<string>", "eval")
    except SyntaxError:
        return None
    for inst in dis.get_instructions(code):
        if inst.opname in _REFUSED:
            return None
    if any(isinstance(c, type(code)) for c in code.co_consts):
        return None
    return code


def _native(tx, what: str, args, kwargs) -> Unsupported:
    """The call runs natively at a graph break, with the frame's namespaces
    made explicit (codegen/namespace_calls.py); where the break cannot
    rewrite it (a keyword spelling, code that is not a function's), the
    frame runs as Python."""
    if kwargs or not tx.code.co_flags & inspect.CO_OPTIMIZED:
        return FrameIntrospection(f"{what} (spelled with keywords, or outside a function) reads the calling "
                                  "frame", hint="pass the source and namespaces positionally")
    return Unsupported(f"{what}: it runs natively at a graph break, with the frame's globals and locals() "
                       "as its namespaces", hint=_HINT)


def eval_rule(tx, *args, **kwargs):
    if not args or len(args) > 3 or set(kwargs) - {"globals", "locals"}:
        raise Unsupported("eval() with these arguments")
    if not _needs_frame(args, kwargs):
        raise Unsupported("eval() with explicit namespaces", hint="it runs natively at a graph break")
    src = realize(tx.ctx, args[0])
    if not (src.is_python_constant() and isinstance(src.as_python_constant(), str)):
        raise _native(tx, "eval() of a string known only at run time", args, kwargs)
    code = _code_of(src.as_python_constant())
    if code is None:
        raise _native(tx, "eval() of code that stores names, defines functions or does not compile", args, kwargs)
    if tx.depth + 1 > tx.ctx.config.inline_depth_limit:
        raise _native(tx, "eval() beyond the inlining depth limit", args, kwargs)
    from ...trace.frame import Frame
    _, bound = bound_variables(tx)
    frame = Frame(tx.ctx, code, tx.f_globals, {}, {}, tx)
    frame.class_namespace = dict(bound)
    frame.eval_namespace = True
    try:
        return frame.run()
    except (FrameIntrospection, UserException):
        raise   # (the string looks at its frame; an exception it raises is the program's own)
    except Unsupported as e:
        raise _native(tx, f"eval() of code that breaks the graph ({e.what})", args, kwargs) from e


def exec_rule(tx, *args, **kwargs):
    if not args or len(args) > 3 or set(kwargs) - {"globals", "locals", "closure"}:
        raise Unsupported("exec() with these arguments")
    if not _needs_frame(args, kwargs):
        raise Unsupported("exec() with explicit namespaces", hint="it runs natively at a graph break")
    raise _native(tx, "exec() without namespaces", args, kwargs)


def register(rules) -> None:
    from ...runtime import frame_view
    rules[builtins.eval] = rules[frame_view.frame_eval] = eval_rule
    rules[builtins.exec] = rules[frame_view.frame_exec] = exec_rule
