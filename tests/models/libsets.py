"""The library sets the real-model suite runs against (`./dev models --libs`).

* current: torch 2.14.1, torchvision 0.29.2, transformers 5.24.0, timm 1.0.31
  (.venv-models);
* old: torch 2.13.0 (CPU), torchvision 0.28.0, transformers 4.57.6,
  timm 1.0.29 (.venv-models-old).

The current set also runs on CPython 3.13 (.venv-models-py313, `./dev models
--python 3.13`); the set is told apart by the library versions alone, so the
same expectations apply on both Pythons.

The old set's torchvision wheel (PyPI) is built for the CUDA torch 2.13.0: its
compiled ops (``torchvision::nms`` and friends) do not load next to the CPU
torch, and ``import torchvision`` fails in ``torchvision._meta_registrations``,
which registers meta kernels for those ops.  The models under test are pure
Python (no torchvision.ops kernels), so :func:`import_torchvision` imports
torchvision with that one module replaced by an empty one.  Only this process
is affected; site-packages is not touched.
"""
from __future__ import annotations

import sys
import types

#: the pinned library sets (the same pins as ./dev and pyproject.toml's
#: [models] / [models-old] extras)
SETS = {
    "current": {"torch": "2.14.1", "torchvision": "0.29.2", "transformers": "5.24.0", "timm": "1.0.31"},
    "old": {"torch": "2.13.0", "torchvision": "0.28.0", "transformers": "4.57.6", "timm": "1.0.29"},
}


def _versions() -> dict:
    import importlib.metadata as md
    out = {}
    for dist in ("torch", "torchvision", "transformers", "timm"):
        try:
            out[dist] = md.version(dist).split("+")[0]  # 2.13.0+cpu -> 2.13.0
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def current() -> str:
    """The name of the library set this process runs ("current", "old"), or
    "unpinned" when the installed versions match neither (then no
    set-specific expectation applies: every failure is a real one)."""
    versions = _versions()
    for name, pins in SETS.items():
        if versions == pins:
            return name
    return "unpinned"


def import_torchvision():
    """Import torchvision; without its meta registrations where its ops cannot load.

    Returns the module, or None when torchvision is not installed.  Sets
    ``torchvision_ops_stubbed`` to True when the stub was needed.
    """
    global torchvision_ops_stubbed
    try:
        import torchvision
        return torchvision
    except ModuleNotFoundError as exc:
        if exc.name == "torchvision":
            return None
        raise
    except RuntimeError as exc:
        if "torchvision::" not in str(exc) or "does not exist" not in str(exc):
            raise
    # the failed import left a partial package behind: start again without
    # the module that registers meta kernels for the missing operators.
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]
    sys.modules["torchvision._meta_registrations"] = types.ModuleType("torchvision._meta_registrations")
    import torchvision
    torchvision_ops_stubbed = True
    return torchvision


torchvision_ops_stubbed = False


def describe() -> str:
    """One line naming the library set, the versions and the Python of this
    process (`./dev models --python 3.13` runs the current set on 3.13)."""
    import importlib.metadata as md
    import platform
    parts = []
    for dist in ("torch", "torchvision", "transformers", "timm"):
        try:
            parts.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            parts.append(f"{dist} -")
    parts[0] = f"{current()}: {parts[0]}"
    if torchvision_ops_stubbed:
        parts.append("(torchvision without _meta_registrations)")
    parts.append(f"Python {platform.python_version()}")
    return ", ".join(parts)
