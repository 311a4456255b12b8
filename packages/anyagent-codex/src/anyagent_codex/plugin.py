"""The ``anyagent`` plugin: registers the ``codex`` wire's adapter and Codex's profile.

Loaded through the entry point ``[project.entry-points.anyagent] codex = "anyagent_codex.plugin"``
or explicitly: ``Runtime(plugins=[anyagent_codex.plugin])``.
"""

from __future__ import annotations

import anyagent
from anyagent import AgentProfile
from anyagent.seam import Adapter

from .adapter import CodexAdapter
from .profile import PROFILE

__all__ = ["anyagent_adapters", "anyagent_agents"]


@anyagent.hookimpl
def anyagent_adapters() -> list[type[Adapter]]:
    """The adapter for the ``codex`` wire."""
    return [CodexAdapter]


@anyagent.hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """Codex's catalog profile."""
    return [PROFILE]
