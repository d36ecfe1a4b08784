"""LOAD_*/STORE_*/DELETE_* for locals, globals, cells, attributes, items.

Version differences: the NULL of a method call (LOAD_GLOBAL's and, from
3.12, LOAD_ATTR's low bit; 3.11's LOAD_METHOD) goes below the callable on
3.11-3.12 and above it on 3.13; 3.12 adds LOAD_FAST_CHECK,
LOAD_FAST_AND_CLEAR (inlined comprehensions), LOAD_SUPER_ATTR and
BINARY_SLICE/STORE_SLICE; 3.13 adds the paired LOAD_FAST_LOAD_FAST family and
loads a cell object with LOAD_FAST to build a closure (3.11-3.12:
LOAD_CLOSURE).
"""
from __future__ import annotations

import builtins
import types

from ...diagnostics.errors import Unsupported, UserException, user_error
from ...guards.guard import Guard, Kind
from ...guards.sources import global_source
from ...values.base import NULL, LazyValue, get_attribute
from ...values.builder import wrap
from ...values.constant import ConstantValue
from ...values.functions.functions import CellValue, RealCellValue
from ...values.operations.operators import getitem
from ... import pyversion
from ...pyversion import opcode


def _has_rule(obj) -> bool:
    """A function with a rule held as a constant: only armature's generated
    code does that (a resume function's ``frame_view.resolve``)."""
    if not isinstance(obj, types.FunctionType):
        return False
    from ...values.operations.builtins import RULES
    return obj in RULES


@opcode("LOAD_CONST")
def load_const(f, inst):
    if isinstance(inst.argval, type) or _has_rule(inst.argval):
        # only armature's own code holds a class as a constant (a resume
        # function's ``types.CellType()``, codegen/spelling.py): a class
        # Value, as if it had been read from a global
        f.push(wrap(f.ctx, inst.argval, None))
        return
    f.push(ConstantValue(inst.argval))


@opcode("LOAD_FAST", until=(3, 12))
@opcode("LOAD_FAST_CHECK", since=(3, 12), until=(3, 12))
def load_fast(f, inst):
    f.push(f.load_local(inst.argval))


def _load_fast_313(f, name: str):
    """3.13's LOAD_FAST of a cell variable (a closure being built) loads the
    cell itself."""
    if name not in f.locals and name in f.cells:
        return _cell(f, name)
    return f.load_local(name)


@opcode("LOAD_FAST", "LOAD_FAST_CHECK", since=(3, 13))
def load_fast_313(f, inst):
    f.push(_load_fast_313(f, inst.argval))


@opcode("LOAD_FAST_LOAD_FAST", since=(3, 13))
def load_fast_load_fast(f, inst):
    first, second = inst.argval
    f.push(_load_fast_313(f, first))
    f.push(_load_fast_313(f, second))


def _store_local(f, name: str, value) -> None:
    if isinstance(value, (CellValue, RealCellValue)) and name in f.code.co_cellvars:
        # 3.12+: after an inlined comprehension, the slot of a closure
        # variable gets its cell back (LOAD_FAST_AND_CLEAR saved it)
        f.locals.pop(name, None)
        f.cells[name] = value
    elif value is NULL:   # 3.12+: an inlined comprehension restores a local it found unbound
        f.locals.pop(name, None)
    else:
        f.locals[name] = value


@opcode("STORE_FAST")
def store_fast(f, inst):
    _store_local(f, inst.argval, f.pop_raw())


@opcode("STORE_FAST_STORE_FAST", since=(3, 13))
def store_fast_store_fast(f, inst):
    first, second = inst.argval
    _store_local(f, first, f.pop_raw())
    _store_local(f, second, f.pop_raw())


@opcode("STORE_FAST_LOAD_FAST", since=(3, 13))
def store_fast_load_fast(f, inst):
    store, load = inst.argval
    _store_local(f, store, f.pop_raw())
    f.push(_load_fast_313(f, load))


@opcode("LOAD_FAST_AND_CLEAR", since=(3, 12))
def load_fast_and_clear(f, inst):
    """An inlined comprehension saves the outer value of its variable (NULL
    if unbound) and unbinds it; STORE_FAST puts it back afterwards."""
    name = inst.argval
    if name in f.code.co_cellvars and name in f.cells:
        # the slot of a closure variable holds its cell (CPython's model):
        # saved here; a MAKE_CELL that follows gives the comprehension its
        # own, or the slot serves as a plain local until STORE_FAST puts it back
        f.push(f.cells.pop(name))
        return
    f.push(f.locals.pop(name, NULL))


@opcode("DELETE_FAST")
def delete_fast(f, inst):
    f.load_local(inst.argval)
    del f.locals[inst.argval]


def _is_torch_internal(f_globals: dict) -> bool:
    name = f_globals.get("__name__", "")
    return name == "torch" or name.startswith("torch.")


def load_global_value(f, name: str):
    g = f.f_globals
    ctx = f.ctx
    trusted = _is_torch_internal(g) and not ctx.config.guard_torch_internals
    pending = ctx.effects.pending_global(g, name)
    if pending is not None:
        from ...effects import DELETED
        if pending is DELETED:
            raise user_error(NameError, f"name {name!r} is not defined")
        return pending
    if name in g:
        src = global_source(g, name, own=g is ctx.fn.__globals__)
        obj = g[name]
        import torch
        if trusted and not isinstance(obj, torch.Tensor):
            return wrap(ctx, obj, None)
        return wrap(ctx, obj, src)
    b = g.get("__builtins__", builtins.__dict__)
    bdict = b if isinstance(b, dict) else b.__dict__
    if name not in bdict:
        raise user_error(NameError, f"name {name!r} is not defined")
    if not trusted:
        ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text=f"{name!r} not in ___G",
                             consts={"___G": g}, label=f"builtin {name!r} is not shadowed by a global"))
    return wrap(ctx, bdict[name], None)


@opcode("LOAD_GLOBAL", until=(3, 12))
def load_global(f, inst):
    if inst.arg & 1:
        f.push(NULL)
    f.push(load_global_value(f, inst.argval))


@opcode("LOAD_GLOBAL", since=(3, 13))
def load_global_313(f, inst):
    f.push(load_global_value(f, inst.argval))
    if inst.arg & 1:
        f.push(NULL)


@opcode("STORE_GLOBAL")
def store_global(f, inst):
    f.ctx.effects.store_global(f.f_globals, inst.argval, f.pop())


@opcode("DELETE_GLOBAL")
def delete_global(f, inst):
    load_global_value(f, inst.argval)  # NameError if it does not exist
    f.ctx.effects.store_global(f.f_globals, inst.argval, None)


@opcode("LOAD_ATTR", until=(3, 11))
def load_attr(f, inst):
    obj = f.pop()
    f.push(get_attribute(f, obj, inst.argval))


@opcode("LOAD_METHOD", until=(3, 11))
def load_method(f, inst):
    obj = f.pop()
    f.push(NULL)
    f.push(get_attribute(f, obj, inst.argval))


def push_method(f, inst, attr) -> None:
    """Push an attribute loaded with the method bit (3.12+) as a callable
    with its NULL: ``[NULL, attr]`` on 3.12, ``[attr, NULL]`` on 3.13.  (The
    bound method stands for CPython's ``[function, self]``.)"""
    if not inst.arg & 1:
        f.push(attr)
    elif _NULL_ABOVE_CALLABLE:
        f.push(attr)
        f.push(NULL)
    else:
        f.push(NULL)
        f.push(attr)


_NULL_ABOVE_CALLABLE = pyversion.at_least((3, 13))


@opcode("LOAD_ATTR", since=(3, 12))
def load_attr_312(f, inst):
    obj = f.pop()
    push_method(f, inst, get_attribute(f, obj, inst.argval))


@opcode("LOAD_SUPER_ATTR", since=(3, 12))
def load_super_attr(f, inst):
    """``super().name`` (zero-argument: the compiler loads ``__class__`` and
    the first argument itself) and ``super(C, obj).name``.  Without the
    two-argument bit CPython calls a ``super`` that is not the builtin (a
    module's own ``super``) with no arguments at all."""
    self_v = f.pop()
    cls_v = f.pop()
    super_v = f.pop()
    builtin = super_v.is_python_constant() and super_v.as_python_constant() is builtins.super
    if inst.arg & 2 or builtin:
        sup = super_v.call(f, [cls_v, self_v], {})
    else:
        sup = super_v.call(f, [], {})
    push_method(f, inst, sup.getattr(f, inst.argval))


@opcode("STORE_ATTR")
def store_attr(f, inst):
    obj = f.pop()
    value = f.pop_raw()
    obj.setattr(f, inst.argval, value)


@opcode("DELETE_ATTR")
def delete_attr(f, inst):
    obj = f.pop()
    if not hasattr(obj, "delattr"):
        raise Unsupported(f"deleting attribute {inst.argval!r} of {obj}")
    obj.delattr(f, inst.argval)


@opcode("BINARY_SUBSCR", until=(3, 13))   # 3.14: BINARY_OP 26 (ops/py314.py)
def binary_subscr(f, inst):
    index = f.pop()
    obj = f.pop()
    f.push(getitem(f, obj, index))


@opcode("BINARY_SLICE", since=(3, 12))
def binary_slice(f, inst):
    from .build import make_slice
    parts = f.popn(2)
    obj = f.pop()
    f.push(getitem(f, obj, make_slice(parts)))


@opcode("STORE_SUBSCR")
def store_subscr(f, inst):
    index = f.pop()
    obj = f.pop()
    _setitem(f, obj, index, f.pop_raw())


@opcode("STORE_SLICE", since=(3, 12))
def store_slice(f, inst):
    from .build import make_slice
    parts = f.popn(2)
    obj = f.pop()
    _setitem(f, obj, make_slice(parts), f.pop_raw())


def _setitem(f, obj, index, value) -> None:
    import operator
    from ...values.tensors.tensor import TensorValue, graph_call
    if isinstance(obj, TensorValue):
        graph_call(f, "call_function", operator.setitem, [obj, index, value], {})
        return
    if hasattr(obj, "setitem"):
        obj.setitem(f, index, value)
        return
    raise Unsupported(f"item assignment on {obj}")


@opcode("DELETE_SUBSCR")
def delete_subscr(f, inst):
    index = f.pop()
    obj = f.pop()
    if hasattr(obj, "delitem"):
        obj.delitem(f, index)
        return
    raise Unsupported(f"item deletion on {obj}")


# --- cells -------------------------------------------------------------------

@opcode("MAKE_CELL")
def make_cell(f, inst):
    name = inst.argval
    cell = f.cells.get(name)
    if cell is None:
        cell = f.cells[name] = CellValue()
    if name in f.locals:  # an argument captured by an inner function
        cell.set(f, f.load_local(name))
        del f.locals[name]


@opcode("COPY_FREE_VARS")
def copy_free_vars(f, inst):
    pass  # the frame's closure cells are installed when the frame is made


def _cell(f, name):
    try:
        cell = f.cells[name]
    except KeyError:
        raise Unsupported(f"cell {name!r} not found")
    if type(cell) is LazyValue:  # a real cell handed over (e.g. a closure of a function made before a break)
        cell = f.cells[name] = cell.realize(f.ctx)
    return cell


@opcode("LOAD_DEREF")
def load_deref(f, inst):
    name = inst.argval
    try:
        value = _cell(f, name).get(f, name)
    except UserException as e:
        if e.exc_type is NameError and name in f.code.co_cellvars:  # the frame's own cell variable
            raise user_error(UnboundLocalError, f"cannot access local variable {name!r} where it is not "
                                                "associated with a value") from None
        raise
    f.push(value)


@opcode("STORE_DEREF")
def store_deref(f, inst):
    _cell(f, inst.argval).set(f, f.pop_raw())


@opcode("DELETE_DEREF")
def delete_deref(f, inst):
    cell = _cell(f, inst.argval)
    cell.get(f, inst.argval)
    if isinstance(cell, RealCellValue):
        cell.set(f, None)
    else:
        cell.contents = CellValue.EMPTY


@opcode("LOAD_CLOSURE", until=(3, 12))   # 3.13: LOAD_FAST of the cell
def load_closure(f, inst):
    f.push(_cell(f, inst.argval))


# --- imports of modules that are already imported ------------------------------

def _package(g: dict) -> str | None:
    """The package a relative import in a module with globals ``g`` is
    relative to, as ``__import__`` computes it: ``__package__``, else the
    parent of ``__spec__``, else ``__name__`` (a package's ``__init__``, which
    has ``__path__``) or its parent."""
    package = g.get("__package__")
    if package is not None:
        return package
    spec = g.get("__spec__")
    if spec is not None:
        return spec.parent
    name = g.get("__name__")
    if not isinstance(name, str):
        return None
    return name if "__path__" in g else name.rpartition(".")[0]


def _resolve(f, name: str, level: int) -> str:
    """The absolute name of ``from <level dots><name> import ...``; a
    relative import that has no package to be relative to raises eager's
    ImportError."""
    if level == 0:
        return name
    package = _package(f.f_globals)
    if not isinstance(package, str):
        raise user_error(TypeError, "__package__ not set to a string")
    if not package:
        raise user_error(ImportError, "attempted relative import with no known parent package")
    bits = package.rsplit(".", level - 1)
    if len(bits) < level:
        raise user_error(ImportError, "attempted relative import beyond top-level package")
    base = bits[0]
    return f"{base}.{name}" if name else base


@opcode("IMPORT_NAME")
def import_name(f, inst):
    import sys
    fromlist = f.pop().as_python_constant()
    level = f.pop().as_python_constant()
    full = _resolve(f, inst.argval, level)
    if full not in sys.modules:
        raise Unsupported(f"importing {full!r}, which is not imported yet",
                          hint="import it at module level so that importing has no side effects here")
    mod = sys.modules[full] if fromlist else sys.modules[full.partition(".")[0]]
    for name in fromlist or ():
        # ``from pkg import sub`` imports the submodule (importlib's
        # _handle_fromlist): not modelled, the import runs natively
        if name != "*" and hasattr(mod, "__path__") and not hasattr(mod, name) \
                and f"{full}.{name}" not in sys.modules:
            raise Unsupported(f"importing {full + '.' + name!r}, which is not imported yet",
                              hint="import it at module level so that importing has no side effects here")
    f.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text="___m.get(___n) is ___v",
                           consts={"___m": sys.modules, "___n": full, "___v": sys.modules[full]},
                           label=f"sys.modules[{full!r}] is unchanged"))
    f.push(wrap(f.ctx, mod, None))


@opcode("IMPORT_FROM")
def import_from(f, inst):
    import sys
    mod = f.stack[-1]
    name = inst.argval
    real = mod.as_python_constant()
    if hasattr(real, name):
        f.push(mod.getattr(f, name))
        return
    sub = f"{getattr(real, '__name__', '')}.{name}"
    if sub in sys.modules:
        f.push(wrap(f.ctx, sys.modules[sub], None))
        return
    raise user_error(ImportError, f"cannot import name {name!r} from {getattr(real, '__name__', '?')!r}")
