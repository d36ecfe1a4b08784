"""Stack shuffling: POP_TOP, COPY, SWAP."""
from __future__ import annotations

from ...pyversion import opcode


@opcode("POP_TOP")
def pop_top(f, inst):
    f.pop_raw()


@opcode("COPY")
def copy(f, inst):
    f.push(f.stack[-inst.arg])


@opcode("SWAP")
def swap(f, inst):
    s = f.stack
    s[-1], s[-inst.arg] = s[-inst.arg], s[-1]
