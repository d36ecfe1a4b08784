"""``threading.local()`` objects in traced code (a per-thread flag or
cache a library keeps, read in forward).

Their attributes live in a per-thread dict that ``_thread._local``'s C
``__getattribute__`` switches to: reading one while tracing reads the
calling thread's value (the trace runs in the thread that called), and the
guard reads it again from the same source in whatever thread calls later,
so each thread gets an entry that matches its own values.  Writes go
through the C ``__setattr__``, which a replay by ``object.__setattr__``
cannot reach: they are graph breaks (the write runs natively).
"""
from __future__ import annotations

import _thread

from ...diagnostics.errors import Unsupported
from ...guards.guard import Guard, Kind
from ...guards.sources import AttrSource
from ..base import Value
from ..builder import wrap


class ThreadLocalValue(Value):
    def __init__(self, obj, source):
        super().__init__(source)
        self.obj = obj

    def python_type(self):
        return type(self.obj)

    def getattr(self, tx, name):
        if self.source is None:
            raise Unsupported("a threading.local() object without a source")
        if name == "__class__":
            return wrap(tx.ctx, type(self.obj), None)
        src = AttrSource(self.source, name)
        if name not in self.obj.__dict__:   # (the calling thread's dict)
            raise Unsupported(f"reading {name!r}, which this thread's threading.local() does not have")
        return wrap(tx.ctx, self.obj.__dict__[name], src)

    def has_attr(self, tx, name):
        if self.source is None:
            raise Unsupported("a threading.local() object without a source")
        present = name in self.obj.__dict__
        tx.ctx.guards.add(Guard(Kind.GLOBAL_STATE, None, text="(___n in ___o.__dict__) is ___v",
                                consts={"___n": name, "___o": self.obj, "___v": present},
                                label=f"hasattr({self.source}, {name!r}) is {present}"))
        return present

    def setattr(self, tx, name, value):
        raise Unsupported("writing an attribute of a threading.local() object",
                          hint="the write runs natively (a graph break)")

    def delattr(self, tx, name):
        raise Unsupported("deleting an attribute of a threading.local() object")


def wrap_thread_local(ctx, obj, source):
    if type(obj) is not _thread._local:
        return None
    if source is not None:
        ctx.guards.add(Guard(Kind.ID_MATCH, source, obj))
    return ThreadLocalValue(obj, source)
