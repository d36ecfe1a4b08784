"""The ``eager`` backend: run the captured FX graph as it is.

No compilation at all, so it isolates the frontend (tracing, guards, graph
breaks) from any compiler: if a program is wrong under ``eager``, the bug is
in armature, not in a backend.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from . import register_backend


@register_backend("eager")
def eager(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    """Return ``gm.forward``; the example inputs are not needed."""
    return gm.forward
