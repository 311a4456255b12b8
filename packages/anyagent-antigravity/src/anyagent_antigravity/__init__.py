"""Antigravity for anyagent: ``agy``'s headless stream-json wire (``AgyAdapter``) and the catalog
profile ``antigravity``, whose ``upgrade`` is Google's ACP server (driven by ``anyagent-acp``)."""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
    from .adapter import AgyAdapter, AgyDriver
    from .profile import PROFILE, SERVER
    from .translate import Translator

__all__ = ["PROFILE", "SERVER", "AgyAdapter", "AgyDriver", "Translator"]

_LAZY = {
    "AgyAdapter": ".adapter",
    "AgyDriver": ".adapter",
    "PROFILE": ".profile",
    "SERVER": ".profile",
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
