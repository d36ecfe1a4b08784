"""The opcodes of a ``class`` statement: LOAD_BUILD_CLASS, and those of a
class body, whose locals are a namespace (LOAD_NAME, STORE_NAME,
DELETE_NAME, SETUP_ANNOTATIONS, 3.11's LOAD_CLASSDEREF, 3.12+'s
LOAD_LOCALS / LOAD_FROM_DICT_OR_DEREF / LOAD_FROM_DICT_OR_GLOBALS).

A class body runs as a frame with ``class_namespace`` set (values/objects/class_def.py),
and so does the code of ``eval(constant string)`` (``eval_namespace`` set too:
values/operations/eval_builtin.py); module-level code is never traced.
"""
from __future__ import annotations

from ...diagnostics.errors import Unsupported, user_error
from ...values.base import Value
from ...pyversion import opcode
from .load_store import load_deref, load_global_value

_BODY_DECORATORS = {"staticmethod": staticmethod, "classmethod": classmethod, "property": property}


def _namespace(f) -> dict:
    ns = getattr(f, "class_namespace", None)
    if ns is None:
        raise Unsupported("a name lookup outside a class body (module-level code)")
    return ns


class ClassNamespaceValue(Value):
    """What LOAD_LOCALS pushes in a class body: its namespace, read only by
    the LOAD_FROM_DICT_* opcodes that follow."""

    def __init__(self, namespace: dict):
        super().__init__()
        self.namespace = namespace

    def python_type(self):
        return dict


@opcode("LOAD_BUILD_CLASS")
def load_build_class(f, inst):
    from ...values.objects.class_def import BuildClassValue
    f.push(BuildClassValue(f, f.ip - 1))


def _global_or_builtin(f, name: str) -> Value:
    v = load_global_value(f, name)
    kind = _BODY_DECORATORS.get(name)
    if kind is not None and not getattr(f, "eval_namespace", False) and v.is_python_constant() and v.as_python_constant() is kind:
        from ...values.objects.class_def import ClassBodyDecorator
        return ClassBodyDecorator(kind)
    return v


@opcode("LOAD_NAME")
def load_name(f, inst):
    ns = _namespace(f)
    name = inst.argval
    f.push(ns[name] if name in ns else _global_or_builtin(f, name))


@opcode("STORE_NAME")
def store_name(f, inst):
    _namespace(f)[inst.argval] = f.pop_raw()


@opcode("DELETE_NAME")
def delete_name(f, inst):
    ns = _namespace(f)
    if inst.argval not in ns:
        raise user_error(NameError, f"name {inst.argval!r} is not defined")
    del ns[inst.argval]


@opcode("SETUP_ANNOTATIONS")
def setup_annotations(f, inst):
    from ...values.containers.containers import DictValue
    ns = _namespace(f)
    if "__annotations__" not in ns:
        ns["__annotations__"] = DictValue({})


@opcode("LOAD_CLASSDEREF", until=(3, 11))
def load_classderef(f, inst):
    ns = _namespace(f)
    if inst.argval in ns:
        f.push(ns[inst.argval])
    else:
        load_deref(f, inst)


@opcode("LOAD_LOCALS", since=(3, 12))
def load_locals(f, inst):
    f.push(ClassNamespaceValue(_namespace(f)))


def _pop_namespace(f) -> dict:
    m = f.pop()
    if not isinstance(m, ClassNamespaceValue):
        raise Unsupported(f"{inst_name(f)} on {m}")
    return m.namespace


def inst_name(f) -> str:
    return f.current.opname if f.current is not None else "?"


@opcode("LOAD_FROM_DICT_OR_DEREF", since=(3, 12))
def load_from_dict_or_deref(f, inst):
    ns = _pop_namespace(f)
    if inst.argval in ns:
        f.push(ns[inst.argval])
    else:
        load_deref(f, inst)


@opcode("LOAD_FROM_DICT_OR_GLOBALS", since=(3, 12))
def load_from_dict_or_globals(f, inst):
    ns = _pop_namespace(f)
    name = inst.argval
    f.push(ns[name] if name in ns else _global_or_builtin(f, name))

