"""The source objects that name an armature graph's inputs for AOTAutograd
(backends/cudagraphs.py).  A module of their own, imported only when a graph
is compiled: torch._guards is not needed before, and a class defined at
module level pickles (inductor's FX-graph cache pickles what it keys on)."""
from __future__ import annotations

import dataclasses

from torch._guards import GuardSource, Source


@dataclasses.dataclass(frozen=True)
class ArmatureInputSource(Source):
    """One input (or lifted attribute) of an armature graph.  AOTAutograd
    only compares these (duplicate inputs) and prints them; armature never
    guards them (it guards aliasing itself)."""

    label: str

    @property
    def _name_template(self) -> str:
        return self.label

    def guard_source(self) -> GuardSource:
        return GuardSource.LOCAL
