"""The queue between a session's engine and its one ``Events`` reader, bounded by count and bytes.

The engine puts events without waiting (it never blocks on a slow app); the reader takes them in
order. Unlike a plain memory stream, the engine may merge a new text delta into the last queued
one while the reader lags, so a burst from a fast agent costs queue space per message, not per
delta, and no text is lost.
"""

from __future__ import annotations

from collections import deque

import anyio
import anyio.lowlevel

from .types import Event


class Outbox:
    """A single-writer, single-reader event queue living on one event loop."""

    def __init__(self, max_events: int, max_bytes: int) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.bytes = 0
        self._items: deque[tuple[Event, int]] = deque()
        self._waiter: anyio.Event | None = None
        self._writer_closed = False
        self._reader_closed = False

    # -- the engine's side

    @property
    def reader_gone(self) -> bool:
        """True once the reader stopped reading (``close_reader``)."""
        return self._reader_closed

    def __len__(self) -> int:
        return len(self._items)

    def fits(self, size: int) -> bool:
        """Whether one more event of ``size`` bytes stays within both bounds."""
        return len(self._items) < self.max_events and self.bytes + size <= self.max_bytes

    def put(self, event: Event, size: int) -> None:
        """Queue ``event`` (``size``: its payload bytes); the caller checked ``fits``."""
        self._items.append((event, size))
        self.bytes += size
        self._wake()

    def last(self) -> Event | None:
        """The newest queued event, or None."""
        return self._items[-1][0] if self._items else None

    def replace_last(self, event: Event, extra: int) -> None:
        """Swap the newest queued event for ``event``, which is ``extra`` bytes larger."""
        _, size = self._items[-1]
        self._items[-1] = (event, size + extra)
        self.bytes += extra

    def close(self) -> None:
        """No more events: the reader drains what is queued, then ends."""
        self._writer_closed = True
        self._wake()

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.set()

    # -- the reader's side

    def receive_nowait(self) -> Event:
        """The next event; ``anyio.WouldBlock`` when none is queued, ``anyio.EndOfStream`` at the end."""
        if self._reader_closed:
            raise anyio.EndOfStream
        if self._items:
            event, size = self._items.popleft()
            self.bytes -= size
            return event
        if self._writer_closed:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> Event:
        """Wait for the next event (cancel-safe: nothing is taken until it is returned). Always a
        checkpoint, so a reader that never has to wait stays cancellable."""
        await anyio.lowlevel.checkpoint()
        while True:
            try:
                return self.receive_nowait()
            except anyio.WouldBlock:
                waiter = self._waiter = anyio.Event()
                await waiter.wait()

    def close_reader(self) -> None:
        """The reader is gone: drop what is queued; the engine sees ``reader_gone``."""
        self._reader_closed = True
        self._items.clear()
        self.bytes = 0
