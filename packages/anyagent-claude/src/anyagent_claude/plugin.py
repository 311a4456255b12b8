"""The ``anyagent`` plugin: registers the ``claude`` wire's adapter and Claude Code's profile.

Loaded through the entry point ``[project.entry-points.anyagent] claude = "anyagent_claude.plugin"``
or explicitly: ``Runtime(plugins=[anyagent_claude.plugin])``.
"""

from __future__ import annotations

import anyagent
from anyagent import AgentProfile
from anyagent.seam import Adapter

from .adapter import ClaudeAdapter
from .profile import PROFILE

__all__ = ["anyagent_adapters", "anyagent_agents"]


@anyagent.hookimpl
def anyagent_adapters() -> list[type[Adapter]]:
    """The adapter for the ``claude`` wire."""
    return [ClaudeAdapter]


@anyagent.hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """Claude Code's catalog profile."""
    return [PROFILE]
