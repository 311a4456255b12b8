"""Shared helpers for the recorded tier: the scripted agent as an installation, a runtime with only
this package's plugin, and an open session read through the testkit's ``EventReader``."""

from __future__ import annotations

import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyagent_acp.plugin
from anyagent import AgentInstallation, Runtime, Session, SessionOptions
from anyagent_testkit.events import EventReader

AGENTS = Path(__file__).parent / "agents"
SCRIPTED = AGENTS / "scripted_agent.py"
WAIT = 15.0
"""Seconds one wait for an event may take (the scripted agents answer in milliseconds)."""


def scripted() -> AgentInstallation:
    """The scripted SDK agent, launched as ``python scripted_agent.py``."""
    return AgentInstallation.acp("scripted", sys.executable, [str(SCRIPTED)])


def runtime() -> Runtime:
    """A runtime that loads exactly this package's plugin."""
    return Runtime(plugins=[anyagent_acp.plugin])


@asynccontextmanager
async def opened(
    tmp_path: Path, options: SessionOptions | None = None, agent: AgentInstallation | None = None
) -> AsyncIterator[tuple[Session, EventReader]]:
    """A runtime with one open session on ``agent`` (the scripted agent by default), closed on
    exit; its events come through an ``EventReader`` bounded by ``WAIT``."""
    async with runtime() as rt:
        session, events = await rt.open(agent or scripted(), options or SessionOptions.in_dir(tmp_path))
        async with session:
            yield session, EventReader(events, timeout=WAIT)


def vendor_agent(tmp_path: Path, profile_id: str, flavor: str) -> AgentInstallation:
    """The JSON-lines vendor fake (``agents/vendor_agent.py FLAVOR``) launched under ``profile_id``,
    through a shell shim so the profile's executable name and quirks apply."""
    shim = tmp_path / "vendor-shim"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{AGENTS / "vendor_agent.py"}" "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return AgentInstallation(id=profile_id, name=profile_id, executable_path=shim, wire="acp", args=[flavor])
