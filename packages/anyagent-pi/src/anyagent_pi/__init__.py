"""anyagent-pi: pi for anyagent — pi's native RPC wire (``pi --mode rpc``).

Installing the package is enough: ``Runtime()`` loads it through the ``anyagent`` entry point.
To choose plugins explicitly: ``Runtime(plugins=[anyagent_pi.plugin])``.

* ``PiAdapter`` — the adapter (wire ``"pi"``); ``PROFILE`` — pi's catalog entry.
* ``Translator`` — the frame translator (RPC events → seam events), for tools and tests.
* ``GATE_OPTION`` — the opt-in permission gate (``configure("permission_gate", True)``).
"""

from __future__ import annotations

import typing

from anyagent import seam

if typing.TYPE_CHECKING:  # imported on first access: loading the plugin does not load the adapter
    from .adapter import CAPABILITIES, PiAdapter
    from .gate import GATE_OPTION
    from .profile import PROFILE
    from .translate import Translator
else:
    __getattr__ = seam.lazy_exports(
        __name__,
        {
            "CAPABILITIES": ".adapter",
            "GATE_OPTION": ".gate",
            "PROFILE": ".profile",
            "PiAdapter": ".adapter",
            "Translator": ".translate",
        },
    )

__all__ = ["CAPABILITIES", "GATE_OPTION", "PROFILE", "PiAdapter", "Translator"]
__version__ = "0.1.0"
