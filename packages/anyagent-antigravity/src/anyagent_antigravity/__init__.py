"""Antigravity for anyagent: ``agy``'s headless stream-json wire (``AgyAdapter``) and the catalog
profile ``antigravity``, whose ``upgrade`` is Google's ACP server (driven by ``anyagent-acp``)."""

from __future__ import annotations

import typing

from anyagent import seam

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
    from .adapter import AgyAdapter, AgyDriver
    from .profile import PROFILE, SERVER
    from .translate import Translator
else:
    __getattr__ = seam.lazy_exports(
        __name__,
        {
            "AgyAdapter": ".adapter",
            "AgyDriver": ".adapter",
            "PROFILE": ".profile",
            "SERVER": ".profile",
            "Translator": ".translate",
        },
    )

__version__ = "0.1.0"

__all__ = ["PROFILE", "SERVER", "AgyAdapter", "AgyDriver", "Translator", "__version__"]
