"""Shared helpers for the core tests: open a mock session and read its events with bounds
(``anyagent_testkit.events.EventReader``, the reader every package's tests use)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeVar

from anyagent import (
    AgentProfile,
    Event,
    Events,
    Register,
    Runtime,
    Session,
    SessionOptions,
    StatusChanged,
    hookimpl,
)
from anyagent.mock import MockAdapter, Script
from anyagent_testkit.events import EventReader

K = TypeVar("K")

WAIT = 3.0


class Reader(EventReader):
    """The testkit's ``EventReader`` with the core tests' short default bound."""

    def __init__(self, events: Events) -> None:
        super().__init__(events, timeout=WAIT)


@asynccontextmanager
async def mock_session(script: Script, options: SessionOptions | None = None) -> AsyncIterator[tuple[Session, Reader]]:
    """A runtime over ``script``, one open session, and a bounded reader of its events."""
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, options or SessionOptions.in_dir("."))
        try:
            yield session, Reader(events)
        finally:
            await session.close()


class _OneAdapter:
    """A plugin serving one ``MockAdapter`` instance, so a test can read what it was sent."""

    def __init__(self, adapter: MockAdapter) -> None:
        self.adapter = adapter

    @hookimpl
    def anyagent_adapters(self, register: Register) -> None:
        register.adapter(lambda: self.adapter, wire="mock")

    @hookimpl
    def anyagent_agents(self, register: Register) -> None:
        register.profile(AgentProfile(id="mock", name="Mock agent", wire="mock", executables=()))


def recording_runtime(script: Script) -> tuple[Runtime, MockAdapter]:
    """A runtime over ``script`` and its one mock adapter (``adapter.sent``: every command)."""
    adapter = MockAdapter(script)
    return Runtime(plugins=[], _builtins=[_OneAdapter(adapter)]), adapter


def kinds(events: list[Event]) -> list[str]:
    """The class names of the events' kinds, for readable assertions."""
    return [type(e.kind).__name__ for e in events]


def statuses(events: list[Event]) -> list[str]:
    """The statuses flipped to, in order."""
    return [e.kind.status.name for e in events if isinstance(e.kind, StatusChanged)]
