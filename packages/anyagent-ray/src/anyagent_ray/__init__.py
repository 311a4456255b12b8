"""anyagent sessions on a Ray cluster: ``RayRuntime`` hosts each session in a Ray actor on a node that has
the agent, forwards every command and streams the events back in order. See ``docs/ray.md``."""

from __future__ import annotations

__version__ = "0.1.0"

from ._fleet import Card, CardResult, load_cards, run_fleet
from ._runtime import (
    ACTOR_PREFIX,
    BATCH,
    LOAD_TTL,
    MEMORY_FULL,
    NodeLoad,
    NodeLost,
    RayEvents,
    RayRuntime,
    RaySession,
    pick,
)

__all__ = [
    "ACTOR_PREFIX",
    "BATCH",
    "LOAD_TTL",
    "MEMORY_FULL",
    "NodeLoad",
    "pick",
    "Card",
    "CardResult",
    "load_cards",
    "run_fleet",
    "NodeLost",
    "RayEvents",
    "RayRuntime",
    "RaySession",
    "__version__",
]
