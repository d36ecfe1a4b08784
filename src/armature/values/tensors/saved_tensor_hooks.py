"""Saved-tensor hooks (``torch.autograd.graph.saved_tensors_hooks``,
``save_on_cpu``): autograd calls ``pack`` on every tensor an operation
saves for backward and ``unpack`` when backward reads it back.

While compiling.  Tracing runs operations on fake tensors with autograd
on, so hooks active around the compiled call (or pushed by the code) would
be called on fake tensors, and a backend tracing forward and backward would
call them again.  A compile runs with the hooks deferred
(``torch._C._autograd._saved_tensors_hooks_set_tracing``, what
torch.compile's own tracing uses): operations save their tensors without
calling them.  At run time a compiled graph runs under whatever hooks the
caller has, and they see the tensors the compiled backward saves (as under
torch.compile).

In the traced code.  Entering ``saved_tensors_hooks`` makes pack/unpack
see the tensors that every operation in the region saves; a graph compiled
by aot_autograd or inductor saves other tensors (its own activations), so
the region is never compiled: the code from the hooks' ``__enter__`` on
runs as Python, and what it calls is compiled as frames of their own
(driver/native_frames.py), as torch.compile gives up such a frame.  Code
before the region still compiles: the frame is split before entering it
and the resume function, which starts inside the region, runs as Python.
"""
from __future__ import annotations

import contextlib

import torch

from ...diagnostics.errors import Unsupported

_PUSH = getattr(torch._C._autograd, "_push_saved_tensors_default_hooks", None)
_POP = getattr(torch._C._autograd, "_pop_saved_tensors_default_hooks", None)
_SET_TRACING = getattr(torch._C._autograd, "_saved_tensors_hooks_set_tracing", None)


class SavedTensorHooksRegion(Unsupported):
    """The traced code enters or leaves a saved-tensor-hooks region: the
    frame runs as Python from there (compile_frame; ``entering`` with
    operations before it: split first, so they still compile)."""

    native_rest = True

    def __init__(self, entering: bool):
        what = "entering" if entering else "leaving"
        super().__init__(
            f"{what} torch.autograd.graph.saved_tensors_hooks: the code under saved-tensor hooks runs as Python "
            "(a compiled graph would save other tensors than the hooks see in eager)",
            hint="compile the functions called under the hooks, or move the hooks around the compiled call "
                 "(they then see the tensors the compiled backward saves)")
        self.entering = entering


def check(target) -> None:
    """Raise for the C functions that push and pop saved-tensor hooks."""
    if target is _PUSH and _PUSH is not None:
        raise SavedTensorHooksRegion(entering=True)
    if target is _POP and _POP is not None:
        raise SavedTensorHooksRegion(entering=False)


@contextlib.contextmanager
def deferred():
    """Saved-tensor hooks not called by the operations a compile runs."""
    if _SET_TRACING is None:
        yield
        return
    prior = _SET_TRACING(True)
    try:
        yield
    finally:
        _SET_TRACING(prior)
