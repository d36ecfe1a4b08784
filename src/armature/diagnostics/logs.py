"""`ARMATURE_LOGS` artifacts routed through :mod:`logging`.

``ARMATURE_LOGS=recompiles,guards,graph,bytecode`` enables the named
artifacts; each is a child logger of ``armature`` so that users can also
configure them with the standard logging API.
"""
from __future__ import annotations

import logging
import os

ARTIFACTS = ("recompiles", "guards", "graph", "bytecode", "graph_breaks", "fallbacks", "dynamic", "perf",
             "regions", "cache")

_root = logging.getLogger("armature")


def _configure_from_env() -> set[str]:
    raw = os.environ.get("ARMATURE_LOGS", "")
    names = {n.strip() for n in raw.split(",") if n.strip()}
    if "all" in names:
        names = set(ARTIFACTS)
    unknown = names - set(ARTIFACTS)
    if unknown:
        logging.getLogger("armature").warning(
            "ARMATURE_LOGS: unknown artifact(s) %s; valid: %s",
            sorted(unknown), ", ".join(ARTIFACTS))
    if names:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[armature:%(name)s] %(message)s"))
        for name in names & set(ARTIFACTS):
            lg = logging.getLogger(f"armature.{name}")
            lg.setLevel(logging.DEBUG)
            lg.addHandler(handler)
            lg.propagate = False
    return names


_enabled = _configure_from_env()


def artifact(name: str) -> logging.Logger:
    """The logger of one artifact; check ``isEnabledFor(DEBUG)`` before
    building expensive messages."""
    assert name in ARTIFACTS, name
    return logging.getLogger(f"armature.{name}")


def enabled(name: str) -> bool:
    return artifact(name).isEnabledFor(logging.DEBUG)
