"""anyagent-claude: Claude Code for anyagent — the ``claude`` wire (stream-json + control protocol).

Installing the package is enough: ``Runtime()`` loads it through the ``anyagent`` entry point.
To choose plugins explicitly: ``Runtime(plugins=[anyagent_claude.plugin])``.

* ``ClaudeAdapter`` — the adapter (wire ``"claude"``); ``PROFILE`` — Claude Code's catalog entry.
* ``Translator`` — the pure frame translator (stdout frames → seam events), for tools and tests.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
    from .adapter import CAPABILITIES, ClaudeAdapter
    from .profile import PROFILE
    from .translate import FORK_POINT, Translator

__all__ = ["CAPABILITIES", "FORK_POINT", "PROFILE", "ClaudeAdapter", "Translator"]
__version__ = "0.1.0"

_LAZY = {
    "CAPABILITIES": ".adapter",
    "ClaudeAdapter": ".adapter",
    "FORK_POINT": ".translate",
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
