"""Models of benchmarks/warm_start.py beyond the demo's own: a module the
worker imports by name, so that a warm process finds its class again (the
stored guards name it by import path)."""
from __future__ import annotations

import sys

from model import TinyGPT   # (demo/model.py: the worker puts demo/ on the path)


class PrintingGPT(TinyGPT):
    """TinyGPT that prints between its blocks and its head: a graph break,
    so a compiler makes two graphs and a resume function for the rest of
    the frame (the warm start of split frames: driver/persist_callees.py)."""

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok_emb(idx) + self.pos_emb[:, :T]
        for block in self.blocks:
            x = block(x)
        print("PrintingGPT: blocks done", file=sys.stderr)
        return self.head(self.ln_f(x))
