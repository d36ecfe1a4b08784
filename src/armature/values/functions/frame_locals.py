"""``locals()``, ``vars()`` and ``dir()`` without arguments, traced: the
user's local variables bound at the call, as a dict made in the frame.

The names and values are those of the frame as the user wrote it: in a
resume function (codegen/resume.py) the original code's variables, never
the generated ``<prefix>stack*``/``<prefix>cell_*``/``<prefix>local*`` ones (names.py) (a closure
variable by its cell's contents, a pytest ``@py_assert1`` by its own name);
in an inlined callee the callee's; in a 3.13 inlined comprehension the
enclosing function's and the comprehension's variable, as CPython shows
them (PEP 709).  The order is CPython's (runtime/frame_view.localsplus_names).

3.13 returns a new snapshot on every call (PEP 667).  3.11 returns the
frame's one dict, updated on every call (bound variables set, unbound ones
removed, keys the program added kept): the trace keeps that dict in the
frame's locals under ``<prefix>f_locals`` (codegen/resume.handed_over_name), so a later call in the trace updates
the same object and a graph break hands it to the resume function as an
argument (codegen/breaks.py).  Natively a resume function answers the same
way (runtime/frame_view.py), so the frame can be split at any break.

Anything this cannot model (a class body's namespace, ``dir()`` of keys
that do not sort) raises :class:`FrameIntrospection`: the frame runs as
Python, never a break at the call itself.
"""
from __future__ import annotations

import inspect
import types

from ...diagnostics.errors import Unsupported, UserException, user_error
from ...runtime import frame_view
from ..base import NULL, LazyValue, Value
from ..constant import ConstantValue
from ..containers.containers import DictValue, ListValue
from .. import kinds


class FrameIntrospection(Unsupported):
    """A call that looks at the calling frame itself (``sys._getframe()``,
    ``inspect.currentframe()``, or ``locals()`` where it is not modelled):
    run natively at a graph break it would see the transformed function's
    frame, so the frame that makes it runs as Python instead."""

    frame_introspection = True


def _cell_contents(tx, name: str, cell):
    """A closure variable's value, or None when its cell is empty; a slot
    that holds a plain value (3.12+ inlined comprehensions) is that value."""
    if type(cell) is LazyValue:
        if not isinstance(cell.obj, types.CellType):
            return cell
        cell = cell.realize(tx.ctx)
    if isinstance(cell, (kinds.CellValue, kinds.RealCellValue)):
        try:
            return cell.get(tx, name)
        except UserException as e:
            if issubclass(e.exc_type, NameError):
                return None
            raise
    return cell


def _handed_over(tx, lazy: LazyValue) -> Value:
    """The 3.11 locals dict a graph break handed over, as a Value whose
    items stay lazy: locals() only writes them, so only its type and keys
    are guarded (and a dict that holds itself, ``d = locals()`` then
    ``locals()``, is no cycle to wrap)."""
    from ...guards.guard import Guard, Kind
    from ...guards.sources import ItemSource
    obj = lazy.obj
    cached = tx.ctx.value_cache.get(id(obj))
    if type(obj) is not dict or not all(type(k) is str for k in obj) or lazy.source is None or \
            (cached is not None and cached[0] is obj) or id(obj) in tx.ctx.instance_dict_owners:
        return lazy.realize(tx.ctx)
    src = lazy.source
    tx.ctx.guards.add(Guard(Kind.TYPE_MATCH, src, dict))
    tx.ctx.guards.add(Guard(Kind.DICT_KEYS, src, list(obj)))
    d = DictValue({k: LazyValue(v, ItemSource(src, k), tx.ctx) for k, v in obj.items()}, source=src)
    tx.ctx.value_cache[id(obj)] = (obj, d)
    lazy._realized = d
    return d


def bound_variables(tx) -> tuple[list[str], dict[str, Value]]:
    """(the user's variable names in CPython's order, {name: Value} of the
    bound ones) of the symbolic frame ``tx``."""
    from ...names import cell_arg, generated_prefix, local_key, origin_of
    base, translation = origin_of(tx.code)
    prefix = generated_prefix(base)
    names = frame_view.localsplus_names(base)
    cells = set(base.co_cellvars) | set(base.co_freevars)
    bound: dict[str, Value] = {}
    for name in names:
        if translation is not None:   # a resume function: the generated names
            if name in cells:
                v = tx.locals.get(cell_arg(prefix, name))
                v = None if v is None else _cell_contents(tx, name, v)
            else:
                v = tx.locals.get(local_key(base, name))
        elif name in cells and name not in tx.locals:
            v = tx.cells.get(name)
            v = None if v is None else _cell_contents(tx, name, v)
        else:
            v = tx.locals.get(name)
        if v is not None and v is not NULL:
            bound[name] = v
    return names, bound


def locals_dict(tx, what: str = "locals()") -> Value:
    """The Value ``locals()`` returns in the symbolic frame ``tx``."""
    if not tx.code.co_flags & inspect.CO_OPTIMIZED:
        raise FrameIntrospection(f"{what} in a class body or module looks at its namespace")
    names, bound = bound_variables(tx)
    if frame_view.SNAPSHOT:
        return DictValue(bound)
    from ...names import handed_over_name
    key = handed_over_name(tx.code)
    d = tx.locals.get(key)
    if d is None:
        d = tx.locals[key] = DictValue({})
    if type(d) is LazyValue:
        d = tx.locals[key] = _handed_over(tx, d)
    if not isinstance(d, DictValue):
        raise FrameIntrospection(f"{what}: the frame's locals dict is {d}")
    for name in names:
        if name in bound:
            d.setitem(tx, ConstantValue(name), bound[name])
        else:
            d.method(tx, "pop", [ConstantValue(name), ConstantValue(None)], {})
    return d


def locals_rule(tx, *args, **kwargs):
    if args or kwargs:
        raise user_error(TypeError, f"locals() takes no arguments ({len(args) + len(kwargs)} given)")
    return locals_dict(tx)


def dir_of_frame(tx) -> Value:
    """``dir()``: the sorted names of ``locals()``."""
    d = locals_dict(tx, "dir()")
    keys = [k.as_python_constant() if k.is_python_constant() else k for k in d.unpack(tx)]
    if not all(isinstance(k, str) for k in keys):
        raise FrameIntrospection("dir() of a locals dict with keys that are not strings")
    return ListValue([ConstantValue(k) for k in sorted(keys)])
