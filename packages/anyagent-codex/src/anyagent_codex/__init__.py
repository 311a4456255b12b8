"""anyagent-codex: Codex for anyagent — the native ``codex app-server`` JSON-RPC wire.

Installing the package is enough: ``Runtime()`` loads it through the ``anyagent`` entry point.
To choose plugins explicitly: ``Runtime(plugins=[anyagent_codex.plugin])``.

* ``CodexAdapter`` — the adapter (wire ``"codex"``); ``PROFILE`` — Codex's catalog entry.
* ``Translator`` — the notification translator (app-server notifications → seam events).
"""

from __future__ import annotations

from .adapter import CodexAdapter
from .driver import CAPABILITIES, MAX_RETRIES
from .profile import PROFILE
from .translate import FORK_POINT, Translator

__all__ = ["CAPABILITIES", "FORK_POINT", "MAX_RETRIES", "PROFILE", "CodexAdapter", "Translator"]
__version__ = "0.1.0"
