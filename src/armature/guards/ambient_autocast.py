"""The guard on the autocast state a frame is called under.

Autocast is ambient state: ``with torch.autocast("cuda", dtype=torch.bfloat16):
f(x)`` changes what every op of ``f`` computes without ``f`` mentioning it.
The eager backend would follow a later change by itself (its ops dispatch
through autocast on every call), but aot_eager and inductor trace the graph
once, under the state of the first call, and bake the casts in: a graph
compiled inside an autocast region and called outside it returned bfloat16
where eager returns float32.  So every entry guards the state it was traced
under, the way it guards grad mode.

Cheap in the common case: outside any autocast region the guard is one C
call (``torch._C._is_any_autocast_enabled``); inside one it compares the
(device, dtype) pairs of the enabled devices with those it was traced under.
"""
from __future__ import annotations

import torch

from .guard import Guard, Kind

#: device types whose autocast state can be asked on this build of torch
_CANDIDATES = ("cpu", "cuda", "xpu", "mps", "hpu", "mtia", "maia", "xla", "ipu")


def _queryable(device: str) -> bool:
    try:
        torch.is_autocast_enabled(device)
        torch.get_autocast_dtype(device)
    except Exception:  # noqa: BLE001 - a device type this torch does not know
        return False
    return True


_DEVICES = tuple(d for d in _CANDIDATES if _queryable(d))


def autocast_state() -> tuple:
    """The (device, dtype) pairs of the device types autocast is on for."""
    return tuple((d, torch.get_autocast_dtype(d)) for d in _DEVICES if torch.is_autocast_enabled(d))


def ambient_autocast_guard() -> Guard:
    """The guard for the autocast state in force now (at the start of a trace)."""
    if not torch._C._is_any_autocast_enabled():
        return Guard(Kind.GLOBAL_STATE, None, text="not ___any_autocast()",
                     consts={"___any_autocast": torch._C._is_any_autocast_enabled},
                     label="autocast is off")
    state = autocast_state()
    shown = ", ".join(f"{d} ({str(dt).replace('torch.', '')})" for d, dt in state)
    return Guard(Kind.GLOBAL_STATE, None, text="___autocast_state() == ___ac_state",
                 consts={"___autocast_state": autocast_state, "___ac_state": state},
                 label=f"autocast is on for {shown}")
