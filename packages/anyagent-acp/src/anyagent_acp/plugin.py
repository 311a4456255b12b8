"""The ``anyagent`` entry point of this package: the ``acp`` wire and the ACP catalog profiles."""

from __future__ import annotations

from anyagent import AgentProfile, hookimpl
from anyagent.seam import Adapter

from .adapter import AcpAdapter
from .profiles import PROFILES


@hookimpl
def anyagent_adapters() -> list[type[Adapter]]:
    """The ``acp`` wire: every profile here, and ``AgentInstallation.acp(...)`` for the rest."""
    return [AcpAdapter]


@hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """Cursor, Grok, Hermes, Kiro, Qwen, Gemini, the Claude and Codex bridges, Antigravity's server."""
    return list(PROFILES)
