"""The ``anyagent`` plugin: registers the ``agy`` wire's adapter and Antigravity's profile.

Loaded through the entry point ``[project.entry-points.anyagent] antigravity = "anyagent_antigravity.plugin"``
or explicitly: ``Runtime(plugins=[anyagent_antigravity.plugin])``. The profile's ``upgrade`` (the
ACP server) is served by the ``acp`` wire of the ``anyagent-acp`` package when that is installed.
"""

from __future__ import annotations

import anyagent
from anyagent import AgentProfile, Register
from anyagent.seam import Adapter

from .profile import PROFILE

__all__ = ["anyagent_adapters", "anyagent_agents"]


def _adapter() -> Adapter:
    """A new ``AgyAdapter``: its module (the wire, the driver) is imported here, when a session
    opens, not when the plugin loads."""
    from .adapter import AgyAdapter

    return AgyAdapter()


@anyagent.hookimpl
def anyagent_adapters(register: Register) -> None:
    """The adapter for the ``agy`` wire (headless stream-json)."""
    register.adapter(_adapter, wire="agy")


@anyagent.hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """Antigravity's catalog profile (its ACP server rides along as ``upgrade``)."""
    return [PROFILE]
