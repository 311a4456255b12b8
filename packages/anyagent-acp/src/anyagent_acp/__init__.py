"""anyagent-acp: one adapter for every Agent Client Protocol agent, plus the ACP catalog.

::

    from anyagent import AgentInstallation, Runtime, SessionOptions

    agent = AgentInstallation.acp("my-agent", "/usr/local/bin/my-agent", ["acp"])
    async with Runtime() as runtime:
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))

The package registers the ``acp`` wire and the catalog profiles through the ``anyagent`` entry
point (``anyagent_acp.plugin``); nothing needs importing by hand.
"""

from __future__ import annotations

from .adapter import CLIENT_CAPABILITIES, AcpAdapter
from .profiles import (
    CLAUDE_ACP,
    CODEX_ACP,
    CURSOR,
    GEMINI,
    GROK,
    HERMES,
    KIRO,
    PROFILES,
    QWEN,
)
from .quirks import Quirks
from .translate import PROTOCOL_VERSION

__version__ = "0.1.0"

__all__ = [
    "CLAUDE_ACP",
    "CLIENT_CAPABILITIES",
    "CODEX_ACP",
    "CURSOR",
    "GEMINI",
    "GROK",
    "HERMES",
    "KIRO",
    "PROFILES",
    "PROTOCOL_VERSION",
    "QWEN",
    "AcpAdapter",
    "Quirks",
    "__version__",
]
