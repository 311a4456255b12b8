"""anyagent-codex: Codex for anyagent — the native ``codex app-server`` JSON-RPC wire.

Installing the package is enough: ``Runtime()`` loads it through the ``anyagent`` entry point.
To choose plugins explicitly: ``Runtime(plugins=[anyagent_codex.plugin])``.

* ``CodexAdapter`` — the adapter (wire ``"codex"``); ``PROFILE`` — Codex's catalog entry.
* ``Translator`` — the notification translator (app-server notifications → seam events).
"""

from __future__ import annotations

import typing

from anyagent import seam

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
    from .adapter import CodexAdapter
    from .driver import CAPABILITIES, MAX_RETRIES
    from .profile import PROFILE
    from .translate import FORK_POINT, PROPOSED_PLAN, Translator
else:
    __getattr__ = seam.lazy_exports(
        __name__,
        {
            "CAPABILITIES": ".driver",
            "CodexAdapter": ".adapter",
            "FORK_POINT": ".translate",
            "MAX_RETRIES": ".driver",
            "PROFILE": ".profile",
            "PROPOSED_PLAN": ".translate",
            "Translator": ".translate",
        },
    )

__all__ = ["CAPABILITIES", "FORK_POINT", "MAX_RETRIES", "PROFILE", "PROPOSED_PLAN", "CodexAdapter", "Translator"]
__version__ = "0.1.0"
