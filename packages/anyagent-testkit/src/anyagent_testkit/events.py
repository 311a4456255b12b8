"""Reading a session's ``Events`` in tests: every wait bounded, everything seen kept.

::

    reader = EventReader(events, timeout=10)
    await session.prompt("hi")
    turn = await reader.turn()                       # up to and including the next TurnEnded
    assert text_of(turn) == "hello"
    opened = await reader.kind(RequestOpened)        # skip to the next kind of that class
    event = await reader.until(TurnEnded, ToolUpdated)   # the next event of any of these kinds
    rest = await reader.rest()                       # until the stream ends (raises what it raises)

A wait that passes its ``timeout`` fails the test with ``TimeoutError`` naming what was seen
instead of hanging it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import anyio

from anyagent import Event, Events, StatusChanged, TextDelta, TurnEnded

__all__ = ["EventReader", "kinds", "text_of", "without_status"]

K = TypeVar("K")

WAIT = 10.0
"""Seconds one wait may take by default."""


class EventReader:
    """Reads an ``Events`` stream with a bound on every wait; ``seen`` keeps every event read.

    ``statuses=False`` (the default) makes ``next`` skip ``StatusChanged``; the other readers
    see every event whatever it is.
    """

    def __init__(self, events: Events, *, timeout: float = WAIT) -> None:
        self.events = events
        self.timeout = timeout
        self.seen: list[Event] = []

    async def _read(self) -> Event:
        event = await self.events.__anext__()
        self.seen.append(event)
        return event

    async def next(self, *, statuses: bool = False, timeout: float | None = None) -> Event:
        """The next event (``StatusChanged`` skipped unless ``statuses``)."""
        with self._bound(timeout, "the next event"):
            while True:
                event = await self._read()
                if statuses or not isinstance(event.kind, StatusChanged):
                    return event

    async def match(self, accept: Callable[[Event], bool], *, timeout: float | None = None) -> Event:
        """The next event ``accept`` takes (the ones before it are skipped, and kept in ``seen``)."""
        with self._bound(timeout, "a matching event"):
            while True:
                event = await self._read()
                if accept(event):
                    return event

    async def until(self, *classes: type[Any], timeout: float | None = None) -> Event:
        """The next event whose kind is one of ``classes``."""
        return await self.match(lambda event: isinstance(event.kind, classes), timeout=timeout)

    async def event_of(self, cls: type[Any], *, timeout: float | None = None) -> Event:
        """The next event whose kind is ``cls``."""
        return await self.until(cls, timeout=timeout)

    async def kind(self, cls: type[K], *, timeout: float | None = None) -> K:
        """The kind of the next event whose kind is ``cls``."""
        event = await self.until(cls, timeout=timeout)
        kind: K = event.kind  # type: ignore[assignment]
        return kind

    async def turn(self, *, timeout: float | None = None) -> list[Event]:
        """Every event up to and including the next ``TurnEnded`` (statuses included)."""
        start = len(self.seen)
        await self.until(TurnEnded, timeout=timeout)
        return self.seen[start:]

    async def rest(self, *, timeout: float | None = None) -> list[Event]:
        """Every event until the stream ends; raises what the stream raises at its end."""
        start = len(self.seen)
        with self._bound(timeout, "the end of the stream"):
            async for event in self.events:
                self.seen.append(event)
        return self.seen[start:]

    def _bound(self, timeout: float | None, waiting_for: str) -> Any:
        seconds = self.timeout if timeout is None else timeout
        return _Bound(seconds, waiting_for, self.seen)


class _Bound:
    """``anyio.fail_after`` whose ``TimeoutError`` says what was awaited and what was seen."""

    def __init__(self, seconds: float, waiting_for: str, seen: list[Event]) -> None:
        self._scope = anyio.fail_after(seconds)
        self._seconds = seconds
        self._waiting_for = waiting_for
        self._seen = seen

    def __enter__(self) -> None:
        self._scope.__enter__()

    def __exit__(self, *exc_info: Any) -> bool | None:
        try:
            return self._scope.__exit__(*exc_info)
        except TimeoutError:
            last = [type(event.kind).__name__ for event in self._seen[-12:]]
            raise TimeoutError(
                f"waited {self._seconds:g} s for {self._waiting_for}; the last events seen: {last}"
            ) from None


def kinds(events: Iterable[Event], cls: type[K]) -> list[K]:
    """The kinds of ``events`` that are ``cls``, in order."""
    return [event.kind for event in events if isinstance(event.kind, cls)]


def text_of(events: Iterable[Event], parent: str | None = None) -> str:
    """The ``TextDelta`` text of the main thread (or of the subagent tool ``parent``), joined."""
    return "".join(
        event.kind.text
        for event in events
        if isinstance(event.kind, TextDelta) and (event.turn_info and event.turn_info.parent_tool_id) == parent
    )


def without_status(events: Iterable[Event]) -> list[Event]:
    """``events`` without the ``StatusChanged`` ones."""
    return [event for event in events if not isinstance(event.kind, StatusChanged)]
