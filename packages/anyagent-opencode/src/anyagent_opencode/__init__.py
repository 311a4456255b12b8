"""opencode for anyagent: one ``opencode serve`` per session, driven over HTTP + SSE.

``Runtime()`` finds this package through its ``anyagent`` entry point; the pieces are
``profile.PROFILE`` (the catalog entry), ``translate.Translator`` (events → seam events) and
``adapter.OpencodeAdapter`` (launch, handshake, commands).
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
    from .adapter import CAPABILITIES, OpencodeAdapter, OpencodeDriver
    from .profile import PROFILE
    from .translate import Translator

__all__ = ["CAPABILITIES", "PROFILE", "OpencodeAdapter", "OpencodeDriver", "Translator"]
__version__ = "0.1.0"

_LAZY = {
    "CAPABILITIES": ".adapter",
    "OpencodeAdapter": ".adapter",
    "OpencodeDriver": ".adapter",
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
