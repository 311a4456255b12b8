"""opencode for anyagent: one ``opencode serve`` per session, driven over HTTP + SSE.

``Runtime()`` finds this package through its ``anyagent`` entry point; the pieces are
``profile.PROFILE`` (the catalog entry), ``translate.Translator`` (events → seam events) and
``adapter.OpencodeAdapter`` (launch, handshake, commands).
"""

from __future__ import annotations

from .adapter import CAPABILITIES, OpencodeAdapter, OpencodeDriver
from .profile import PROFILE
from .translate import Translator

__all__ = ["CAPABILITIES", "PROFILE", "OpencodeAdapter", "OpencodeDriver", "Translator"]
__version__ = "0.1.0"
