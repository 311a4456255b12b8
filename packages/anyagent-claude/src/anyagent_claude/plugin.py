"""The ``anyagent`` plugin: registers the ``claude`` wire's adapter and Claude Code's profile.

Loaded through the entry point ``[project.entry-points.anyagent] claude = "anyagent_claude.plugin"``
or explicitly: ``Runtime(plugins=[anyagent_claude.plugin])``.
"""

from __future__ import annotations

from pathlib import Path

import anyagent
from anyagent import AgentProfile, Register
from anyagent.seam import Adapter

from .profile import PROFILE

__all__ = ["anyagent_adapters", "anyagent_agents", "anyagent_demos"]


def _adapter() -> Adapter:
    """A new ``ClaudeAdapter``: its module (the wire, the driver) is imported here, when a session
    opens, not when the plugin loads."""
    from .adapter import ClaudeAdapter

    return ClaudeAdapter()


@anyagent.hookimpl
def anyagent_adapters(register: Register) -> None:
    """The adapter for the ``claude`` wire."""
    register.adapter(_adapter, wire="claude")


@anyagent.hookimpl
def anyagent_agents() -> list[AgentProfile]:
    """Claude Code's catalog profile."""
    return [PROFILE]


@anyagent.hookimpl
def anyagent_demos() -> list[anyagent.DemoAgent]:
    """``anyagent demo``: this adapter against a scripted Claude Code (``python -m anyagent_claude.demo``)
    fixing a throwaway ``calc.py``. The demo module is imported only when the demo runs."""

    def installation(directory: Path) -> anyagent.AgentInstallation:
        from .demo import demo_installation

        return demo_installation(directory)

    def project(directory: Path) -> Path:
        from .demo import demo_project

        return demo_project(directory)

    def report(project: Path) -> str:
        lines = (project / "calc.py").read_text(encoding="utf-8").splitlines()
        return "calc.py on disk now: " + next((line.strip() for line in lines if "return" in line), "?")

    title = "the real Claude adapter talking to a scripted agent process over Claude Code's wire"
    prompt = "the test for add() fails; fix it"
    return [anyagent.DemoAgent("claude", title, prompt, installation, project, report)]
