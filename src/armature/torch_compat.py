"""The only place that knows which torch release armature runs with.

armature supports torch 2.11 to 2.15 (pyproject.toml).  Where those releases
differ in something armature (or its tests, comparing against torch.compile
as an oracle) depends on, the difference is named here, once, as a fact about
the running torch, and the code asks for the fact instead of comparing
version strings itself (``torch.__version__ < "2.15"`` is a string compare:
it would call 2.9 newer than 2.15).  Its Python counterpart is
``pyversion.py``.
"""
from __future__ import annotations

import contextlib
import re

import torch

#: the supported releases, (major, minor), inclusive
OLDEST = (2, 11)
NEWEST = (2, 15)


def _parse(version: str) -> tuple[int, int]:
    """(major, minor) of a torch version string ("2.11.0+cu130", "2.15.0a0")."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if m is None:
        raise ValueError(f"not a torch version: {version!r}")
    return int(m.group(1)), int(m.group(2))


#: the running torch's (major, minor)
VERSION = _parse(str(torch.__version__))


def at_least(version: tuple[int, int]) -> bool:
    return VERSION >= version


def is_supported() -> bool:
    return OLDEST <= VERSION <= NEWEST


#: torch.compile before 2.13, the tests' oracle, compiles less of some
#: Python constructs in one graph than 2.13+ (and armature): ids of objects
#: made in the frame, namedtuple defaults, tuple subclasses, nested
#: functions' attributes, and locals() after a graph break, which it even
#: gets wrong (seen with 2.11 on CPython 3.12; tests/python_semantics skip
#: the oracle for those cases there and compare with eager alone)
OLD_ORACLE = not at_least((2, 13))

#: torch.compile (the tests' oracle) compares two tuples of tensors, as in
#: ``(x, y) == (y, x)``, in one graph before 2.15; 2.15's Dynamo breaks the
#: graph there ("list_richcompare_nonconst"), so it cannot be a fullgraph oracle
ORACLE_COMPARES_TENSOR_TUPLES = not at_least((2, 15))


#: torch 2.11-2.12's AOTAutograd (its tensorify_python_scalars pass, run on a
#: graph with a float ``.item()``) calls ops on fx ``MetaProxy`` objects,
#: which only dispatch through ``__torch_function__``, but does not turn
#: torch function back on itself (torch 2.13 does, around that pass)
AOT_NEEDS_TORCH_FUNCTION = not at_least((2, 13))


#: torch 2.11's C++ kernels of some composite ops (``at::native::matmul``,
#: reached from ``F.linear`` without a bias on a 3-D input, GPT-2's lm_head)
#: read a tensor's sizes as plain ints: run on a fake tensor with a symbolic
#: size, that asks ``aten.size`` of the fake tensor, which turns each SymInt
#: into an int and so guards the symbol to its example value (one compile per
#: sequence length).  Under the Python dispatcher those ops take their
#: symbolic Python kernels instead, as torch.compile always runs fake
#: propagation; 2.13's C++ kernels are symbolic themselves (2.12 not seen:
#: it gets the dispatcher too, which is what torch.compile does anyway)
FAKE_PROP_NEEDS_PYTHON_DISPATCHER = not at_least((2, 13))


def fake_prop_state():
    """The state an op runs on fake tensors in (besides the fake mode):
    the Python dispatcher where ``FAKE_PROP_NEEDS_PYTHON_DISPATCHER``."""
    if not FAKE_PROP_NEEDS_PYTHON_DISPATCHER:
        return contextlib.nullcontext()
    from torch._dispatch.python import enable_python_dispatcher
    return enable_python_dispatcher()


@contextlib.contextmanager
def backend_compile_state():
    """The state a backend compiles a graph in.  armature's compile runs with
    torch function disabled (trace/context.py: the caller's modes are
    modelled, never called for real); where AOTAutograd needs it on
    (``AOT_NEEDS_TORCH_FUNCTION``) it is enabled for the backend with the
    caller's torch function modes set aside, so only fx's proxies see it."""
    if not AOT_NEEDS_TORCH_FUNCTION:
        yield
        return
    modes = []
    while torch._C._len_torch_function_stack() > 0:
        modes.append(torch._C._pop_torch_function_stack())
    try:
        with torch._C._EnableTorchFunction():
            yield
    finally:
        for mode in reversed(modes):
            torch._C._push_on_torch_function_stack(mode)
