"""``bool(t)`` of a one-element tensor left undecided while a branch on it
may still be assumed (trace/speculation.py decides when; this is the value
that stands for it meanwhile, met by ``bool()`` and ``not``)."""
from __future__ import annotations

from ..base import Value


class DeferredTruth(Value):
    """``bool(t)`` (or ``not t``) of a one-element tensor, not decided yet.

    torch 2.15's distributions validate through a helper that returns
    ``bool(torch._is_all_true(valid))`` to a caller that raises: the truth
    is taken in one frame and branched on in another.  So ``bool()`` of a
    tensor, while speculation is possible, is this Value; a conditional
    jump on it goes through :func:`branch_truth` (an assumption when one
    side only raises); any other use needs the data (a graph break, where
    it is rebuilt as ``bool(t)``)."""

    def __init__(self, tensor, negated: bool = False):
        super().__init__()
        self.tensor, self.negated = tensor, negated

    def python_type(self):
        return bool

    def negate(self) -> "DeferredTruth":
        return DeferredTruth(self.tensor, not self.negated)

    def truth(self, tx):
        return self.tensor.truth(tx)   # (raises: deciding it needs the data)

    def reconstruct(self, out):
        out.instr("PUSH_NULL")
        out.load_const(bool)
        out.reconstruct(self.tensor)
        out.call(1)
        if self.negated:
            out.instr("UNARY_NOT")

    def __repr__(self):
        return f"<{'not ' if self.negated else ''}bool({self.tensor})>"
