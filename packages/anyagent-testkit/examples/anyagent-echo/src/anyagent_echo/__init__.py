"""anyagent-echo: an example third-party anyagent adapter and the tiny agent it drives.

* ``anyagent_echo.plugin`` — the entry point: registers ``EchoAdapter`` (wire ``echo``) and
  ``PROFILE`` (agent ``echo``, executable ``echo-agent``).
* ``anyagent_echo.adapter`` — the handshake and the wire's commands; ``anyagent.toolkit`` does the
  launch, the run loop and the request bookkeeping.
* ``anyagent_echo.translate`` — pure: one echo-agent frame → one seam event (``anyagent.jsonread``).
* ``anyagent_echo.agent`` — ``echo-agent``, the JSON-lines agent program (a console script).
"""

from __future__ import annotations

from .adapter import EchoAdapter, EchoDriver
from .plugin import PROFILE
from .translate import translate

__version__ = "0.1.0"

__all__ = ["PROFILE", "EchoAdapter", "EchoDriver", "__version__", "translate"]
