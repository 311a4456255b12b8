"""The ``anyagent`` plugin: registers the ``pi`` wire's adapter and pi's profile.

Loaded through the entry point ``[project.entry-points.anyagent] pi = "anyagent_pi.plugin"``
or explicitly: ``Runtime(plugins=[anyagent_pi.plugin])``.
"""

from __future__ import annotations

import anyagent
from anyagent import AgentProfile
from anyagent.seam import Adapter

from .adapter import PiAdapter
from .profile import PROFILE

__all__ = ["anyagent_adapters", "anyagent_agents"]


@anyagent.hookimpl
def anyagent_adapters() -> list[type[Adapter]]:
    """The adapter for the ``pi`` wire."""
    return [PiAdapter]


@anyagent.hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """pi's catalog profile."""
    return [PROFILE]
