"""anyagent-pi: pi for anyagent — pi's native RPC wire (``pi --mode rpc``).

Installing the package is enough: ``Runtime()`` loads it through the ``anyagent`` entry point.
To choose plugins explicitly: ``Runtime(plugins=[anyagent_pi.plugin])``.

* ``PiAdapter`` — the adapter (wire ``"pi"``); ``PROFILE`` — pi's catalog entry.
* ``Translator`` — the frame translator (RPC events → seam events), for tools and tests.
* ``GATE_OPTION`` — the opt-in permission gate (``configure("permission_gate", True)``).
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
    from .adapter import CAPABILITIES, PiAdapter
    from .gate import GATE_OPTION
    from .profile import PROFILE
    from .translate import Translator

__all__ = ["CAPABILITIES", "GATE_OPTION", "PROFILE", "PiAdapter", "Translator"]
__version__ = "0.1.0"

_LAZY = {
    "CAPABILITIES": ".adapter",
    "GATE_OPTION": ".gate",
    "PROFILE": ".profile",
    "PiAdapter": ".adapter",
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
