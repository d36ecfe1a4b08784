"""Helpers that residual bytecode calls to write side effects back.

Each does exactly one primitive operation with CPython's own semantics."""
from __future__ import annotations

import inspect
import types



def store_attr(obj, name, value):
    object.__setattr__(obj, name, value)


def store_type_attr(cls, name, value):
    type.__setattr__(cls, name, value)


def delete_attr(obj, name):
    object.__delattr__(obj, name)


def delete_type_attr(cls, name):
    type.__delattr__(cls, name)


def store_dict_item(obj, name, value):
    obj.__dict__[name] = value


def delete_dict_item(obj, name):
    del obj.__dict__[name]


def replace_instance_dict(obj, new):
    obj.__dict__ = new


def replace_list(lst, items):
    lst[:] = items


def replace_dict(d, keys, values):
    d.clear()
    d.update(zip(keys, values))


def set_cell(cell, value):
    cell.cell_contents = value


def clear_cell(cell):
    del cell.cell_contents


def store_global(g, name, value):
    g[name] = value


def delete_global(g, name):
    del g[name]


def _set_attributes(obj, cls, names, values):
    """Store attributes as the primitive stores the trace modelled: slots
    through their descriptors, the rest in ``__dict__``."""
    d = getattr(obj, "__dict__", None)
    for n, v in zip(names, values):
        desc = inspect.getattr_static(cls, n, None)
        if type(desc).__name__ == "member_descriptor":
            desc.__set__(obj, v)
        else:
            d[n] = v
    return obj


def new_object(cls, names, values):
    """An instance of a plain Python class created inside the traced frame,
    rebuilt with its final attributes (stored as the primitive stores the
    trace modelled: slots through their descriptors, the rest in __dict__)."""
    obj = object.__new__(cls)
    return _set_attributes(obj, cls, names, values)


def list_iterator_at(seq, index):
    it = iter(seq)
    for _ in range(index):
        next(it)
    return it


def make_cell(*value):
    return types.CellType(*value)


def make_function(code, f_globals, name, defaults, kwdefaults, closure):
    """A function created inside the traced frame (MAKE_FUNCTION).  (No
    cells: ``__closure__`` is None, as MAKE_FUNCTION leaves it, not ().)"""
    fn = types.FunctionType(code, f_globals, name, defaults, closure or None)
    if kwdefaults:
        fn.__kwdefaults__ = kwdefaults
    return fn


def grad_mode_exit(cls, prev, mode):
    """The bound ``__exit__`` of a grad-mode context entered inside a traced
    region, rebuilt so that leaving the block restores ``prev``."""
    obj = object.__new__(cls)
    obj.prev = prev
    obj.mode = mode
    return obj.__exit__


def replace_set(s, items):
    s.clear()
    s.update(items)


def extend_list(lst, items):
    lst.extend(items)


def new_dict_object(cls, names, values, keys, items):
    """An instance of a dict subclass created in the traced frame (e.g. a
    transformers ModelOutput), rebuilt with its final items and attributes
    without running its __setitem__/__setattr__ again."""
    obj = cls.__new__(cls)
    base = next(b for b in cls.__mro__ if b.__module__ in ("builtins", "collections") and issubclass(b, dict))
    for k, v in zip(keys, items):
        base.__setitem__(obj, k, v)
    d = obj.__dict__
    for n, v in zip(names, values):
        d[n] = v
    return obj


def new_sequence_object(cls, names, values, items):
    """An instance of a list or tuple subclass created in the traced frame,
    rebuilt with its final items and attributes without running its own
    __new__/__init__/append again."""
    if issubclass(cls, tuple):
        obj = tuple.__new__(cls, items)
    else:
        obj = list.__new__(cls)
        list.extend(obj, items)
    return _set_attributes(obj, cls, names, values)


def module_setattr(mod, name, value):
    """nn.Module.__setattr__: registers parameters, buffers and submodules."""
    import torch
    torch.nn.Module.__setattr__(mod, name, value)


def module_delattr(mod, name):
    import torch
    torch.nn.Module.__delattr__(mod, name)


def call_method(obj, name, kwnames, *values):
    n = len(values) - len(kwnames)
    getattr(obj, name)(*values[:n], **dict(zip(kwnames, values[n:])))


def link_exception(exc, cause, has_cause, context, runtime_context):
    """An exception the traced code raised, rebuilt after a graph break with
    the links raising it made: ``raise ... from`` set ``__cause__``; raising
    while another exception was handled set ``__context__`` (the caller's,
    read now, when the trace could not know it)."""
    import sys
    if has_cause:
        exc.__cause__ = cause
    if runtime_context:
        context = sys.exc_info()[1]
    if context is not None and context is not exc:
        exc.__context__ = context
    return exc


class DictKeyIter:
    """The rest of a dict's iteration after a graph break: the keys still
    to come, read live (``kind`` keys/values/items, as the dict's own
    iterators do), and CPython's check that the dict did not change size
    (``RuntimeError`` on every later step once it has)."""

    __slots__ = ("d", "keys", "i", "size", "kind")

    def __init__(self, d, keys, size, kind="keys"):
        self.d, self.keys, self.i, self.size, self.kind = d, keys, 0, size, kind

    def __iter__(self):
        return self

    def __next__(self):
        if len(self.d) != self.size:
            raise RuntimeError("dictionary changed size during iteration")
        if self.i >= len(self.keys):
            raise StopIteration
        self.i += 1
        k = self.keys[self.i - 1]
        if self.kind == "keys":
            return k
        return self.d[k] if self.kind == "values" else (k, self.d[k])
