"""os: ``os.fspath`` and the pure functions of ``os.path``.

``os.path.join``/``basename``/... are Python functions (posixpath.py) that
start with ``os.fspath(path)``, a C function (Modules/posixmodule.c,
``PyOS_FSPath``): str and bytes are returned as they are, an object whose
type has ``__fspath__`` is asked for it (which must return str or bytes),
anything else is a TypeError.  That is modelled here, so the path functions
inline with any argument the trace knows.

The path functions that only compute on their arguments (no file system,
no environment, no working directory) fold outright when every argument is
a str or bytes constant: the result is what the real function returns,
without inlining posixpath (whose helpers differ between Python versions,
3.12+ calls C ones).  ``abspath``, ``realpath``, ``expanduser``,
``relpath``, ``exists``... read process or disk state and stay unmodelled.
"""
from __future__ import annotations

import os
import types

from ...diagnostics.errors import Unsupported, user_error
from ..base import Value, realize
from ..operations.builtins import PURE_BUILTINS, RULES, fold_call
from ..constant import ConstantValue
from .. import kinds

#: functions of os.path that depend on nothing but their arguments
_PURE_PATH_FUNCTIONS = ("join", "basename", "dirname", "split", "splitext", "splitdrive", "splitroot",
                        "normpath", "normcase", "isabs", "commonprefix", "commonpath")


def _is_text(v) -> bool:
    return type(v) in (str, bytes)


def _plain_path_argument(v: Value) -> bool:
    """A str/bytes constant, or a list/tuple of them (commonpath's
    argument)."""
    if not v.is_python_constant():
        return False
    c = v.as_python_constant()
    if _is_text(c):
        return True
    return type(c) in (list, tuple) and all(_is_text(i) for i in c)


def _path_rule(fn):
    def handler(tx, *args, **kwargs):
        if all(_plain_path_argument(a) for a in (*args, *kwargs.values())):
            return fold_call(fn, list(args), kwargs)
        if not isinstance(fn, types.FunctionType):
            raise Unsupported(f"os.path.{fn.__name__}() of arguments that are not str/bytes constants",
                              hint="pass str paths (os.fspath(p) first), or compute the path outside the "
                                   "compiled function")
        return kinds.UserFunctionValue(fn, None).call(tx, list(args), kwargs)   # (inlined: os.fspath is modelled)
    return handler


def _fspath(tx, *args, **kwargs):
    """``os.fspath(path)`` as PyOS_FSPath computes it."""
    if kwargs or len(args) != 1:
        if kwargs and len(args) == 0 and list(kwargs) == ["path"]:
            args = (kwargs["path"],)
        else:
            raise user_error(TypeError, f"fspath() takes exactly one argument ({len(args) + len(kwargs)} given)")
    path = realize(tx.ctx, args[0])
    if path.is_python_constant() and _is_text(path.as_python_constant()):
        return path
    t = path.python_type()
    owner = next((k for k in t.__mro__ if "__fspath__" in vars(k)), None)
    if owner is None:
        raise user_error(TypeError, f"expected str, bytes or os.PathLike object, not {t.__name__}")
    if not callable(vars(owner)["__fspath__"]):
        raise Unsupported(f"os.fspath() of a {t.__name__}, whose __fspath__ is not callable")
    dunder = getattr(path, "dunder", None)
    method = dunder(tx, "__fspath__") if dunder is not None else None
    if method is None:
        raise Unsupported(f"os.fspath() of a {t.__name__}, whose __fspath__ armature cannot call")
    result = realize(tx.ctx, method.call(tx, [], {}))
    if not result.is_python_constant():
        raise Unsupported(f"{t.__name__}.__fspath__() returned {result}, not a string known while tracing")
    if not _is_text(result.as_python_constant()):
        raise user_error(TypeError, f"expected {t.__name__}.__fspath__() to return str or bytes, "
                                    f"not {type(result.as_python_constant()).__name__}")
    return ConstantValue(result.as_python_constant())


RULES[os.fspath] = _fspath
for _name in _PURE_PATH_FUNCTIONS:
    _fn = getattr(os.path, _name, None)
    if _fn is not None:
        RULES[_fn] = _path_rule(_fn)
# 3.13's os.path.normpath is posix._path_normpath itself, a C function (pure:
# folded on str arguments)
_c_normpath = getattr(__import__(os.name), "_path_normpath", None)
if _c_normpath is not None:
    PURE_BUILTINS.add(_c_normpath)
    RULES[_c_normpath] = _path_rule(_c_normpath)
