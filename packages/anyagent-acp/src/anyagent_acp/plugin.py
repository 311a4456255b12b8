"""The ``anyagent`` entry point of this package: the ``acp`` wire and the ACP catalog profiles."""

from __future__ import annotations

from anyagent import AgentProfile, Register, hookimpl
from anyagent.seam import Adapter

from .profiles import PROFILES


def _adapter() -> Adapter:
    """A new ``AcpAdapter``: its module (the wire, the driver) is imported here, when a session
    opens, not when the plugin loads."""
    from .adapter import AcpAdapter

    return AcpAdapter()


@hookimpl
def anyagent_adapters(register: Register) -> None:
    """The ``acp`` wire: every profile here, and ``AgentInstallation.acp(...)`` for the rest."""
    register.adapter(_adapter, wire="acp")


@hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """Cursor, Grok, Hermes, Kiro, Qwen, Gemini, the Claude and Codex bridges, Antigravity's server."""
    return list(PROFILES)
