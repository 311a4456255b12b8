"""Antigravity for anyagent: ``agy``'s headless stream-json wire (``AgyAdapter``) and the catalog
profile ``antigravity``, whose ``upgrade`` is Google's ACP server (driven by ``anyagent-acp``)."""

from __future__ import annotations

from .adapter import AgyAdapter, AgyDriver
from .profile import PROFILE, SERVER
from .translate import Translator

__all__ = ["PROFILE", "SERVER", "AgyAdapter", "AgyDriver", "Translator"]
