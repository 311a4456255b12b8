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

import importlib
import typing

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

_LAZY = {
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
}

if not typing.TYPE_CHECKING:  # type checkers see the imports above

    def __getattr__(name: str) -> object:
        """The names above, each imported from its module on first access."""
        if name not in _LAZY:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
