"""The ``anyagent`` plugin: registers the ``opencode`` wire's adapter and opencode's profile.

Loaded through the entry point ``[project.entry-points.anyagent] opencode = "anyagent_opencode.plugin"``
or explicitly: ``Runtime(plugins=[anyagent_opencode.plugin])``.
"""

from __future__ import annotations

import anyagent
from anyagent import AgentProfile
from anyagent.seam import Adapter

from .adapter import OpencodeAdapter
from .profile import PROFILE

__all__ = ["anyagent_adapters", "anyagent_agents"]


@anyagent.hookimpl
def anyagent_adapters() -> list[type[Adapter]]:
    """The adapter for the ``opencode`` wire."""
    return [OpencodeAdapter]


@anyagent.hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """opencode's catalog profile."""
    return [PROFILE]
