"""Generators created and consumed inside the traced frame.

Calling a generator function makes a GeneratorValue holding a paused Frame;
each ``next`` resumes it until its next YIELD_VALUE.  Consumption therefore
interleaves with the consumer exactly as in CPython.
"""
from __future__ import annotations

from ..diagnostics.errors import Unsupported
from .constant import ConstantValue
from .containers import IteratorValue


class GeneratorValue(IteratorValue):
    def __init__(self, frame):
        super().__init__([])
        self.frame = frame
        self.started = False
        self.done = False

    def python_type(self):
        import types
        return types.GeneratorType

    def next(self, tx):
        if self.done:
            return None
        f = self.frame
        if self.started:
            f.push(ConstantValue(None))  # the value sent by next()
        self.started = True
        f.yielded = None
        result = f.run()
        if f.yielded is not None:
            v = f.yielded
            f.yielded = None
            return v
        self.done = True
        self.return_value = result  # what `yield from` evaluates to
        return None

    def unpack(self, tx):
        out = []
        while True:
            v = self.next(tx)
            if v is None:
                return out
            out.append(v)

    def getattr(self, tx, name):
        raise Unsupported(f"generator method {name!r}")

    def reconstruct(self, out):
        raise Unsupported("a generator that is still running at the end of the compiled frame")
