"""Shared helpers for the core tests: open a mock session and read its events with bounds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeVar

import anyio

from anyagent import (
    AgentProfile,
    Event,
    Events,
    Register,
    Runtime,
    Session,
    SessionOptions,
    StatusChanged,
    TurnEnded,
    hookimpl,
)
from anyagent.mock import MockAdapter, Script

K = TypeVar("K")

WAIT = 3.0


class Reader:
    """Reads an ``Events`` stream with a bound on every wait (a hang fails the test)."""

    def __init__(self, events: Events) -> None:
        self.events = events
        self.seen: list[Event] = []

    async def next(self, *, statuses: bool = False, timeout: float = WAIT) -> Event:
        """The next event (skipping StatusChanged unless ``statuses``)."""
        with anyio.fail_after(timeout):
            while True:
                event = await self.events.__anext__()
                self.seen.append(event)
                if statuses or not isinstance(event.kind, StatusChanged):
                    return event

    async def kind(self, cls: type[K], *, timeout: float = WAIT) -> K:
        """Skip to the next event whose kind is ``cls`` and return that kind."""
        with anyio.fail_after(timeout):
            while True:
                event = await self.next(statuses=True)
                if isinstance(event.kind, cls):
                    return event.kind

    async def event_of(self, cls: type[object], *, timeout: float = WAIT) -> Event:
        """Skip to the next event whose kind is ``cls`` and return the whole event."""
        with anyio.fail_after(timeout):
            while True:
                event = await self.next(statuses=True)
                if isinstance(event.kind, cls):
                    return event

    async def turn(self, *, timeout: float = WAIT) -> list[Event]:
        """Every event up to and including the next TurnEnded (statuses included)."""
        collected: list[Event] = []
        with anyio.fail_after(timeout):
            while True:
                event = await self.next(statuses=True)
                collected.append(event)
                if isinstance(event.kind, TurnEnded):
                    return collected

    async def rest(self, *, timeout: float = WAIT) -> list[Event]:
        """Every remaining event until the stream ends (raises what the stream raises)."""
        collected: list[Event] = []
        with anyio.fail_after(timeout):
            async for event in self.events:
                self.seen.append(event)
                collected.append(event)
        return collected


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
