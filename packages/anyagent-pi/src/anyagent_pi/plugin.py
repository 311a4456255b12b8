"""The ``anyagent`` plugin: registers the ``pi`` wire's adapter and pi's profile.

Loaded through the entry point ``[project.entry-points.anyagent] pi = "anyagent_pi.plugin"``
or explicitly: ``Runtime(plugins=[anyagent_pi.plugin])``.
"""

from __future__ import annotations

import anyagent
from anyagent import AgentProfile, Register
from anyagent.seam import Adapter

from .profile import PROFILE

__all__ = ["anyagent_adapters", "anyagent_agents"]


def _adapter() -> Adapter:
    """A new ``PiAdapter``: its module (the wire, the driver) is imported here, when a session
    opens, not when the plugin loads."""
    from .adapter import PiAdapter

    return PiAdapter()


@anyagent.hookimpl
def anyagent_adapters(register: Register) -> None:
    """The adapter for the ``pi`` wire."""
    register.adapter(_adapter, wire="pi")


@anyagent.hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """pi's catalog profile."""
    return [PROFILE]
