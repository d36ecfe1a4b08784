"""``eval(source)`` and ``exec(source)`` without namespaces, traced.

Without ``globals``/``locals`` arguments, ``eval``/``exec`` in a function
read the *calling frame*: its globals and ``locals()`` (the bound
variables, closure variables by their contents; what the string writes
lands in that dict, never in the function's fast locals).

- ``eval`` of a string the trace knows (a constant) that only reads names:
  the string is compiled here (``compile(s, "<string>", "eval")``, the same
  code eval runs) and traced inline as a frame whose name lookups
  (``LOAD_NAME``, as in a class body: trace/ops/class_body.py) read the
  frame's ``locals()`` dict (values/functions/frame_locals.locals_dict:
  3.11/3.12 the frame's one dict, refreshed here as eval refreshes it, with
  the names an earlier ``exec`` wrote; 3.13+ a snapshot), then the caller's
  globals, then builtins.  The result joins the graph.
- anything else (a string known only at run time, ``exec``, code that
  stores names or defines functions, an operation inside the string that
  would break the graph, a ``locals()`` inside it) is a graph break at the
  call, whose native call gets the frame's globals and ``locals()`` dict as
  explicit namespaces (codegen/namespace_calls.py): what CPython's call
  does, instead of reading armature's generated frame.
- what the break cannot make faithful raises :class:`FrameIntrospection`,
  and the frame runs as Python: a constant string that looks at the frames
  above it (``sys._getframe``...: natively, armature's frame would be its
  caller).  3.13+'s keyword spelling (``globals=None``, ``locals=None``)
  is rewritten like the positional one.

With explicit namespaces (``eval(s, g)``, ``eval(s, g, l)`` with ``l`` not
None) the call does not look at the frame: it stays an ordinary graph break.
"""
from __future__ import annotations

import builtins
import dis
import inspect

from ...diagnostics.errors import Unsupported, UserException, user_error
from ... import pyversion
from ..base import realize
from ..containers.keys import has_value_keys
from ..functions.frame_locals import FrameIntrospection, locals_dict

_HINT = ("eval/exec without namespaces read the calling frame; a constant string that only reads names "
         "is traced into the graph, anything else runs between two graphs")

#: opcodes that would change the namespace (a walrus, ``del``) or make code
#: that runs later (a lambda, a generator expression, a 3.11 comprehension)
_REFUSED = {"STORE_NAME", "DELETE_NAME", "MAKE_FUNCTION", "STORE_GLOBAL", "DELETE_GLOBAL", "IMPORT_NAME"}


#: names whose use in the string means it may look at the frames above it
#: (run natively at a break, the frame above it would be armature's)
_INSPECTS = frozenset({"_getframe", "currentframe", "getouterframes", "getframeinfo", "f_back",
                       "extract_stack", "print_stack", "format_stack"})


def _inspects_frames(source: str, mode: str) -> bool:
    """Whether the code of ``source`` (nested code included) names something
    that looks at its frame's callers (``inspect.stack``: both names)."""
    try:
        todo = [compile(source, "<string>", mode)]
    except (SyntaxError, ValueError):
        return False   # (the native call raises eager's error)
    names: set = set()
    while todo:
        code = todo.pop()
        names.update(code.co_names)
        todo += [c for c in code.co_consts if isinstance(c, type(code))]
    return bool(_INSPECTS & names) or {"inspect", "stack"} <= names


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
    rewrite it (code that is not a function's), the frame runs as Python.
    (``kwargs``: ``globals=None``/``locals=None``, 3.13+, rewritten too.)"""
    if not tx.code.co_flags & inspect.CO_OPTIMIZED:
        return FrameIntrospection(f"{what} outside a function reads the calling frame", hint=_HINT)
    return Unsupported(f"{what}: it runs natively at a graph break, with the frame's globals and locals() "
                       "as its namespaces", hint=_HINT)


def _keyword_namespaces(name: str, kwargs) -> None:
    """3.11/3.12: the namespaces are positional only (eager's TypeError)."""
    given = [k for k in kwargs if k in ("globals", "locals")]
    if given and not pyversion.NAMESPACE_KEYWORDS:
        raise user_error(TypeError, "eval() takes no keyword arguments" if name == "eval"
                         else f"'{given[0]}' is an invalid keyword argument for exec()")


def eval_rule(tx, *args, **kwargs):
    if not args or len(args) > 3 or set(kwargs) - {"globals", "locals"}:
        raise Unsupported("eval() with these arguments")
    _keyword_namespaces("eval", kwargs)
    if not _needs_frame(args, kwargs):
        raise Unsupported("eval() with explicit namespaces", hint="it runs natively at a graph break")
    src = realize(tx.ctx, args[0])
    if not (src.is_python_constant() and isinstance(src.as_python_constant(), str)):
        raise _native(tx, "eval() of a string known only at run time", args, kwargs)
    if _inspects_frames(src.as_python_constant(), "eval"):
        raise FrameIntrospection("eval() of code that looks at its frame", hint=_HINT)
    code = _code_of(src.as_python_constant())
    if code is None:
        raise _native(tx, "eval() of code that stores names, defines functions or does not compile", args, kwargs)
    if tx.depth + 1 > tx.ctx.config.inline_depth_limit:
        raise _native(tx, "eval() beyond the inlining depth limit", args, kwargs)
    # (3.11/3.12: the frame's one locals() dict, refreshed as eval refreshes
    # it, with the names an earlier exec wrote; 3.13+: a snapshot)
    names = locals_dict(tx, "eval()")
    if has_value_keys(names.items) or not all(isinstance(k, str) for k in names.items):
        raise _native(tx, "eval() with a locals() dict whose keys are not all strings", args, kwargs)
    frame = tx.child(code, tx.f_globals, {}, {})
    frame.class_namespace = dict(names.items)
    frame.eval_namespace = True
    try:
        return frame.run()
    except UserException:
        raise   # (an exception the string raises is the program's own)
    except FrameIntrospection as e:
        # locals(), vars(), dir() or eval() in the string (one that looks
        # above its frame was refused before tracing it): natively, with
        # explicit namespaces, they read those namespaces, as in the frame
        raise _native(tx, f"eval() of code that reads its namespace ({e.what})", args, kwargs) from e
    except Unsupported as e:
        raise _native(tx, f"eval() of code that breaks the graph ({e.what})", args, kwargs) from e


def exec_rule(tx, *args, **kwargs):
    if not args or len(args) > 3 or set(kwargs) - {"globals", "locals", "closure"}:
        raise Unsupported("exec() with these arguments")
    _keyword_namespaces("exec", kwargs)
    if not _needs_frame(args, kwargs):
        raise Unsupported("exec() with explicit namespaces", hint="it runs natively at a graph break")
    src = realize(tx.ctx, args[0])
    if src.is_python_constant() and isinstance(src.as_python_constant(), str) and \
            _inspects_frames(src.as_python_constant(), "exec"):
        raise FrameIntrospection("exec() of code that looks at its frame", hint=_HINT)
    raise _native(tx, "exec() without namespaces", args, kwargs)


def register(rules) -> None:
    from ...runtime import frame_view
    rules[builtins.eval] = rules[frame_view.frame_eval] = eval_rule
    rules[builtins.exec] = rules[frame_view.frame_exec] = exec_rule
