"""The only place that knows which torch release armature runs with.

armature supports torch 2.11 to 2.15 (pyproject.toml).  Where those releases
differ in something armature (or its tests, comparing against torch.compile
as an oracle) depends on, the difference is named here, once, as a fact about
the running torch, and the code asks for the fact instead of comparing
version strings itself (``torch.__version__ < "2.15"`` is a string compare:
it would call 2.9 newer than 2.15).  Its Python counterpart is
``trace/pyversion.py``.
"""
from __future__ import annotations

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


#: torch.compile (the tests' oracle) compares two tuples of tensors, as in
#: ``(x, y) == (y, x)``, in one graph before 2.15; 2.15's Dynamo breaks the
#: graph there ("list_richcompare_nonconst"), so it cannot be a fullgraph oracle
ORACLE_COMPARES_TENSOR_TUPLES = not at_least((2, 15))
