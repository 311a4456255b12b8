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

import typing

from anyagent import seam

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
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
else:
    __getattr__ = seam.lazy_exports(
        __name__,
        {
            "AcpAdapter": ".adapter",
            "CLAUDE_ACP": ".profiles",
            "CLIENT_CAPABILITIES": ".adapter",
            "CODEX_ACP": ".profiles",
            "CURSOR": ".profiles",
            "GEMINI": ".profiles",
            "GROK": ".profiles",
            "HERMES": ".profiles",
            "KIRO": ".profiles",
            "PROFILES": ".profiles",
            "PROTOCOL_VERSION": ".translate",
            "QWEN": ".profiles",
            "Quirks": ".quirks",
        },
    )

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
