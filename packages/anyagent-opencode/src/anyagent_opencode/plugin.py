"""The ``anyagent`` plugin: registers the ``opencode`` wire's adapter and opencode's profile.

Loaded through the entry point ``[project.entry-points.anyagent] opencode = "anyagent_opencode.plugin"``
or explicitly: ``Runtime(plugins=[anyagent_opencode.plugin])``.
"""

from __future__ import annotations

import anyagent
from anyagent import AgentProfile, Register
from anyagent.seam import Adapter

from .profile import PROFILE

__all__ = ["anyagent_adapters", "anyagent_agents"]


def _adapter() -> Adapter:
    """A new ``OpencodeAdapter``: its module (the wire, the driver) is imported here, when a session
    opens, not when the plugin loads."""
    from .adapter import OpencodeAdapter

    return OpencodeAdapter()


@anyagent.hookimpl
def anyagent_adapters(register: Register) -> None:
    """The adapter for the ``opencode`` wire."""
    register.adapter(_adapter, wire="opencode")


@anyagent.hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """opencode's catalog profile."""
    return [PROFILE]
