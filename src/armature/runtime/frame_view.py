"""``locals()``, ``vars()``, ``dir()``, ``eval`` and ``exec`` as the user's frame would answer them,
when the code that calls them runs natively inside a resume function.

A resume function (codegen/resume.py) is the rest of a user's frame after a
graph break, as a new code object: its locals are the user's locals plus
generated ones (``___stack0``, the saved stack; ``___cell_x``, the cell of
the user's closure variable ``x``; ``___local3``, a user's local whose name
is not an identifier, such as pytest's ``@py_assert1``).  The builtins
would show those.  So in a resume function, every load of the global names
``locals``, ``vars`` and ``dir`` goes through :func:`resolve`, which swaps
the builtin for a function here that computes the user's view from the
calling frame: the names of the original code, in CPython's order (its
variables, then its cells, then its free variables), bound ones only, a cell
variable by its contents.

CPython 3.11 returns the frame's one locals dict, updated on every call
(bound names set, unbound ones removed, other keys kept); 3.13 returns a
new snapshot in a function (PEP 667).  For 3.11 the dict survives a graph
break as the resume function's argument ``<prefix>f_locals`` (names.py's generated prefix; the trace keeps it
in the frame's locals under that name, values/functions/frame_locals.py); a resume
function that makes its first one natively keeps it in its real frame's
locals dict, which CPython never clears of names that are not variables.

``eval`` and ``exec`` without namespaces read the same view (and the
frame's globals): their loads are routed the same way, and the stand-ins
pass both as explicit namespaces (the dict the string's writes land in).

The trace treats the functions here as it treats the builtins
(values/functions/frame_locals.py), so the symbolic and the native answer agree.
"""
from __future__ import annotations

import builtins
import inspect
import sys
import types

from ..pyversion import NAMESPACE_KEYWORDS, VERSION

#: 3.13+ (PEP 667): locals() in a function is a new snapshot on every call
SNAPSHOT = VERSION >= (3, 13)
#: where a resume function running natively keeps the 3.11 dict it made (a
#: key of its real frame's locals dict, after the code's generated prefix)
_KEPT = "f_locals_made_here"


def localsplus_names(code: types.CodeType) -> list[str]:
    """A code object's variables in the order CPython's ``locals()`` lists
    them: its variables (arguments first), then cell variables that are not
    arguments, then free variables."""
    names = list(code.co_varnames)
    names += [c for c in code.co_cellvars if c not in code.co_varnames]
    names += list(code.co_freevars)
    return names


def update_persistent(d: dict, names: list[str], bound: dict) -> dict:
    """3.11's update of a frame's locals dict: each variable, in order, set
    when bound and removed when not; other keys stay."""
    for name in names:
        if name in bound:
            d[name] = bound[name]
        else:
            d.pop(name, None)
    return d


def _user_items(frame, base: types.CodeType) -> dict:
    """The user's bound variables of a resume function's frame, in order."""
    from ..names import cell_arg, generated_prefix, local_key
    prefix = generated_prefix(base)
    raw = frame.f_locals
    cells = set(base.co_cellvars) | set(base.co_freevars)
    out = {}
    for name in localsplus_names(base):
        key = cell_arg(prefix, name) if name in cells else local_key(base, name)
        if key not in raw:
            continue
        v = raw[key]
        if name in cells and isinstance(v, types.CellType):
            try:
                v = v.cell_contents
            except ValueError:  # an empty cell: the variable is unbound
                continue
        out[name] = v
    return out


#: a rewrite of a resume function's code (driver/native_frames.py routes
#: its calls) -> that code: the same user's frame
_SAME_FRAME: dict[types.CodeType, types.CodeType] = {}


def same_user_frame(new: types.CodeType, code: types.CodeType) -> None:
    """``new`` is ``code`` rewritten: its frames are the same user's frame."""
    _SAME_FRAME[new] = _SAME_FRAME.get(code, code)


def view_of(frame) -> dict:
    """What ``locals()`` returns in ``frame``, as the user's code sees it."""
    from ..names import origin_of
    code = frame.f_code
    code = _SAME_FRAME.get(code, code)
    base, translation = origin_of(code)
    if translation is None:   # not a resume function: the builtin's own answer
        if SNAPSHOT and code.co_flags & inspect.CO_OPTIMIZED:
            return dict(frame.f_locals)
        return frame.f_locals
    bound = _user_items(frame, base)
    if SNAPSHOT:
        return bound
    from ..names import generated_prefix, handed_over_name
    raw = frame.f_locals
    d = raw.get(handed_over_name(base))
    if d is None:
        kept = generated_prefix(base) + _KEPT
        d = raw.get(kept)
        if d is None:
            d = raw[kept] = {}
    return update_persistent(d, localsplus_names(base), bound)


def frame_locals(*args, **kwargs):
    """``locals()`` of the calling frame, as the user's frame sees it."""
    if args or kwargs:
        return builtins.locals(*args, **kwargs)   # (raises the builtin's TypeError)
    return view_of(sys._getframe(1))


def frame_vars(*args, **kwargs):
    """``vars()``: with an argument the builtin's, without it ``locals()``."""
    if args or kwargs:
        return builtins.vars(*args, **kwargs)
    return view_of(sys._getframe(1))


def frame_dir(*args, **kwargs):
    """``dir()``: with an argument the builtin's, without it the sorted
    names of ``locals()``."""
    if args or kwargs:
        return builtins.dir(*args, **kwargs)
    return sorted(view_of(sys._getframe(1)))


def _with_frame_namespaces(fn, args: tuple, kwargs: dict):
    """``fn(*args, **kwargs)`` (``eval`` or ``exec``) with the namespaces
    the calling frame of the stand-in would give it: its globals and its
    ``locals()`` as the user's frame sees it (the dict the string's writes
    land in, as in CPython)."""
    if not 1 <= len(args) <= 3 or (not NAMESPACE_KEYWORDS and {"globals", "locals"} & set(kwargs)):
        return fn(*args, **kwargs)   # (eager's TypeError)
    rest = dict(kwargs)
    g = args[1] if len(args) > 1 else rest.pop("globals", None)
    loc = args[2] if len(args) > 2 else rest.pop("locals", None)
    if g is None:
        caller = sys._getframe(2)
        g = caller.f_globals
        if loc is None:
            loc = view_of(caller)
    return fn(args[0], g, loc, **rest)


def frame_eval(*args, **kwargs):
    return _with_frame_namespaces(builtins.eval, args, kwargs)


def frame_exec(*args, **kwargs):
    return _with_frame_namespaces(builtins.exec, args, kwargs)


for _fn, _like in ((frame_locals, builtins.locals), (frame_vars, builtins.vars), (frame_dir, builtins.dir),
                   (frame_eval, builtins.eval), (frame_exec, builtins.exec)):
    _fn.__name__ = _fn.__qualname__ = _like.__name__
    _fn.__doc__ = _like.__doc__

#: builtin -> its frame-aware stand-in
STAND_INS = {"locals": frame_locals, "vars": frame_vars, "dir": frame_dir, "eval": frame_eval,
             "exec": frame_exec}
_BY_BUILTIN = ((builtins.locals, frame_locals), (builtins.vars, frame_vars), (builtins.dir, frame_dir),
               (builtins.eval, frame_eval), (builtins.exec, frame_exec))


def resolve(obj):
    """What a resume function's load of ``locals``/``vars``/``dir`` gives:
    the stand-in when the name is the builtin, the object itself when the
    user's module rebinds the name."""
    for b, stand_in in _BY_BUILTIN:
        if obj is b:
            return stand_in
    return obj
