"""opencode for anyagent: one ``opencode serve`` per session, driven over HTTP + SSE.

``Runtime()`` finds this package through its ``anyagent`` entry point; the pieces are
``profile.PROFILE`` (the catalog entry), ``translate.Translator`` (events → seam events) and
``adapter.OpencodeAdapter`` (launch, handshake, commands).
"""

from __future__ import annotations

import typing

from anyagent import seam

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
    from .adapter import CAPABILITIES, OpencodeAdapter, OpencodeDriver
    from .profile import PROFILE
    from .translate import Translator
else:
    __getattr__ = seam.lazy_exports(
        __name__,
        {
            "CAPABILITIES": ".adapter",
            "OpencodeAdapter": ".adapter",
            "OpencodeDriver": ".adapter",
            "PROFILE": ".profile",
            "Translator": ".translate",
        },
    )

__all__ = ["CAPABILITIES", "PROFILE", "OpencodeAdapter", "OpencodeDriver", "Translator"]
__version__ = "0.1.0"
