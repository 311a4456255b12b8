"""anyagent-claude: Claude Code for anyagent — the ``claude`` wire (stream-json + control protocol).

Installing the package is enough: ``Runtime()`` loads it through the ``anyagent`` entry point.
To choose plugins explicitly: ``Runtime(plugins=[anyagent_claude.plugin])``.

* ``ClaudeAdapter`` — the adapter (wire ``"claude"``); ``PROFILE`` — Claude Code's catalog entry.
* ``Translator`` — the pure frame translator (stdout frames → seam events), for tools and tests.
"""

from __future__ import annotations

import typing

from anyagent import seam

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
    from .adapter import CAPABILITIES, ClaudeAdapter
    from .profile import PROFILE
    from .translate import FORK_POINT, Translator
else:
    __getattr__ = seam.lazy_exports(
        __name__,
        {
            "CAPABILITIES": ".adapter",
            "ClaudeAdapter": ".adapter",
            "FORK_POINT": ".translate",
            "PROFILE": ".profile",
            "Translator": ".translate",
        },
    )

__all__ = ["CAPABILITIES", "FORK_POINT", "PROFILE", "ClaudeAdapter", "Translator"]
__version__ = "0.1.0"
