"""The ``anyagent`` plugin: registers the ``codex`` wire's adapter and Codex's profile.

Loaded through the entry point ``[project.entry-points.anyagent] codex = "anyagent_codex.plugin"``
or explicitly: ``Runtime(plugins=[anyagent_codex.plugin])``.
"""

from __future__ import annotations

import anyagent
from anyagent import AgentProfile, Register
from anyagent.seam import Adapter

from .profile import PROFILE

__all__ = ["anyagent_adapters", "anyagent_agents"]


def _adapter() -> Adapter:
    """A new ``CodexAdapter``: its module (the wire, the driver) is imported here, when a session
    opens, not when the plugin loads."""
    from .adapter import CodexAdapter

    return CodexAdapter()


@anyagent.hookimpl
def anyagent_adapters(register: Register) -> None:
    """The adapter for the ``codex`` wire."""
    register.adapter(_adapter, wire="codex")


@anyagent.hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """Codex's catalog profile."""
    return [PROFILE]
