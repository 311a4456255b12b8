"""The ``anyagent`` entry point of this package (``[project.entry-points.anyagent] echo = ...``).

``Runtime()`` imports this module on first use and calls its hooks: they register the ``echo``
wire's adapter and the ``echo`` catalog profile. Hooks only register — no I/O, no processes.
"""

from __future__ import annotations

from anyagent import AgentProfile, Register, hookimpl

from .adapter import EchoAdapter

__all__ = ["PROFILE", "anyagent_adapters", "anyagent_agents"]

PROFILE = AgentProfile(
    id="echo",
    name="Echo agent",
    wire="echo",
    executables=("echo-agent",),
    install_hint="pip install anyagent-echo",
)
"""Everything the catalog knows about echo-agent. Discovery looks for ``echo-agent`` on PATH (or
``$ANYAGENT_ECHO_BIN``); a machine without it lists it as missing with the install hint."""


@hookimpl
def anyagent_adapters(register: Register) -> None:
    """The ``echo`` wire."""
    register.adapter(EchoAdapter)


@hookimpl
def anyagent_agents(register: Register) -> None:
    """The ``echo`` profile."""
    register.profile(PROFILE)
