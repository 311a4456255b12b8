"""anyagent-codex: Codex for anyagent — the native ``codex app-server`` JSON-RPC wire.

Installing the package is enough: ``Runtime()`` loads it through the ``anyagent`` entry point.
To choose plugins explicitly: ``Runtime(plugins=[anyagent_codex.plugin])``.

* ``CodexAdapter`` — the adapter (wire ``"codex"``); ``PROFILE`` — Codex's catalog entry.
* ``Translator`` — the notification translator (app-server notifications → seam events).
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
    from .adapter import CodexAdapter
    from .driver import CAPABILITIES, MAX_RETRIES
    from .profile import PROFILE
    from .translate import FORK_POINT, Translator

__all__ = ["CAPABILITIES", "FORK_POINT", "MAX_RETRIES", "PROFILE", "CodexAdapter", "Translator"]
__version__ = "0.1.0"

_LAZY = {
    "CAPABILITIES": ".driver",
    "CodexAdapter": ".adapter",
    "FORK_POINT": ".translate",
    "MAX_RETRIES": ".driver",
    "PROFILE": ".profile",
    "Translator": ".translate",
}

if not typing.TYPE_CHECKING:  # type checkers see the imports above

    def __getattr__(name: str) -> object:
        """The names above, each imported from its module on first access."""
        if name not in _LAZY:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
