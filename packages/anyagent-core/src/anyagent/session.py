"""The two handles ``Runtime.open`` returns: ``Session`` (commands) and ``Events`` (the ordered
stream of what happened). Both are thin: every rule lives in the session's engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from types import TracebackType

import anyio

from ._engine import _Engine
from .errors import AgentError
from .options import RollbackScope
from .types import Answer, ConfigValue, Delivery, Event, Input, SessionInfo, SessionStatus

__all__ = ["Events", "Session"]


class Session:
    """A cheap handle on one live session; copies talk to the same engine.

    Dropping every handle (or the session's ``Events``) ends the session as ``close()`` would,
    so an abandoned session never leaves its agent running; ``close()`` is still the way to wait
    for the cleanup.

    Calls return once the engine accepted the command; the events confirm the outcome.
    After ``close`` every call raises ``SessionClosed``.
    """

    __slots__ = ("_engine",)

    def __init__(self, engine: _Engine) -> None:
        self._engine = engine
        engine._handles += 1

    def __copy__(self) -> Session:
        return Session(self._engine)

    def __deepcopy__(self, memo: object) -> Session:
        return Session(self._engine)

    def __del__(self) -> None:
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine._release(events=False)

    @property
    def id(self) -> str:
        """The session id (``s1``, ``s2``, …); not a resume token."""
        return self._engine.session_id

    async def prompt(self, text: str | Input) -> Delivery:
        """Send a prompt. Returns ``Delivery`` with ``Started``, ``Steered`` or ``Queued``."""
        result = self._engine.prompt(text)
        if isinstance(result, Delivery):
            await anyio.lowlevel.checkpoint()
            return result
        await result.done.wait()
        outcome = result.result
        if isinstance(outcome, AgentError):
            raise outcome
        assert outcome is not None
        return outcome

    async def dequeue(self, prompt_id: str) -> None:
        """Drop a queued prompt before it starts (``InvalidRequest`` if it is not queued)."""
        self._engine.dequeue(prompt_id)
        await anyio.lowlevel.checkpoint()

    async def answer(self, request_id: str, answer: Answer) -> None:
        """Answer an open request exactly once; confirmed by ``RequestClosed``."""
        self._engine.answer(request_id, answer)
        await anyio.lowlevel.checkpoint()

    async def configure(self, option_id: str, value: ConfigValue) -> None:
        """Change a live config option; confirmed by ``SessionUpdated``."""
        self._engine.configure(option_id, value)
        await anyio.lowlevel.checkpoint()

    async def rollback(self, turns: int, scope: RollbackScope = RollbackScope.CONVERSATION) -> None:
        """Rewind ``turns`` completed turns (idle sessions only); confirmed by ``SessionUpdated``."""
        self._engine.rollback(turns, scope)
        await anyio.lowlevel.checkpoint()

    async def compact(self) -> None:
        """Ask the agent to summarize its context (idle only); confirmed by ``ContextCompacted``."""
        self._engine.compact()
        await anyio.lowlevel.checkpoint()

    async def cancel(self, clear_queue: bool = False) -> None:
        """Stop the running turn (``TurnEnded(Cancelled)``); ``clear_queue`` drops queued prompts."""
        self._engine.cancel(clear_queue)
        await anyio.lowlevel.checkpoint()

    async def close(self) -> None:
        """End the session and wait (bounded) for the agent to be cleaned up. Idempotent."""
        with anyio.CancelScope(shield=True):
            await self._engine.close()

    def info(self) -> SessionInfo:
        """Snapshot: agent, details, configuration, resume token, title, status."""
        return self._engine.info

    def status(self) -> SessionStatus:
        """``IDLE``, ``WORKING`` or ``NEEDS_INPUT``, without reading the stream."""
        return self._engine.status

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<Session {self.id} agent={self._engine.agent.id!r} status={self.status().name}>"


class Events:
    """The ordered stream of a session's events; one consumer. ``async for event in events``.

    Buffers 1024 events or 64 MiB (while the reader lags, text deltas of one message merge);
    a consumer that falls past either bound is treated as gone and the
    session closes. When the session ends because of a failure, iteration raises that
    ``AgentError`` after the last buffered event.
    """

    __slots__ = ("_checkpoint", "_engine", "_raised", "_receive", "_since_checkpoint", "_tap")

    def __init__(self, engine: _Engine) -> None:
        self._engine = engine
        self._receive = engine._take_output()
        self._raised = False
        self._since_checkpoint = 0
        self._tap: Callable[[Event], object] | None = None
        self._checkpoint: Callable[[], object] | None = None

    def tap(self, sink: Callable[[Event], object] | None, *, checkpoint: Callable[[], object] | None = None) -> None:
        """Hand every event this stream yields from now on to ``sink`` as well, just before it is
        yielded, in order (``None`` removes it, and ``checkpoint`` with it; one sink at a time, a new one
        replaces the old).

        ``sink`` runs in the reader's task for each event, so it must be cheap and must not block or
        raise: ``list.append`` of a list another thread drains is the intended use (a recorder that
        must not slow the reader, as ``anyagent_store`` does). It sees exactly what the reader gets,
        text deltas merged while the reader lagged included; the ``AgentError`` a failure ends the
        stream with is raised to the reader, not passed to ``sink``.

        ``checkpoint``, when given, is called (no arguments, in the reader's task) each time the stream
        is about to hand control to the scheduler: at least once every 64 events, and whenever no event
        is queued. That is where a recorder whose thread needs the GIL should let it run (by waiting
        for it there, briefly): a thread that asks for the GIL while the reader's loop never sleeps waits
        until the loop does, and costs the reader a wake-up each time the loop lets go of the GIL."""
        self._tap = sink
        self._checkpoint = checkpoint if sink is not None else None

    @property
    def failure(self) -> AgentError | None:
        """The ``AgentError`` this stream ended with, once it has been raised to the reader (None while the
        stream runs, after a clean end, or before the reader reached the error)."""
        return self._engine._terminal_error if self._raised else None

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        # take buffered events without a scheduler round-trip, but yield now and then so a
        # busy consumer stays cancellable and fair
        if self._since_checkpoint < 64:
            outbox = self._receive
            items = outbox._items
            if items and not outbox._reader_closed:  # ``receive_nowait`` inlined: the flood's path
                event, size = items.popleft()
                outbox.bytes -= size
                self._since_checkpoint += 1
                if self._tap is not None:
                    self._tap(event)
                return event
            try:
                event = self._receive.receive_nowait()
            except anyio.WouldBlock:
                pass
            except anyio.EndOfStream:
                return await self._end()
            else:
                self._since_checkpoint += 1
                if self._tap is not None:
                    self._tap(event)
                return event
        self._since_checkpoint = 1  # the event this receive returns counts: a checkpoint every 64 events
        if self._checkpoint is not None:
            self._checkpoint()
        try:
            event = await self._receive.receive()
        except anyio.EndOfStream:
            return await self._end()
        if self._tap is not None:
            self._tap(event)
        return event

    async def _end(self) -> Event:
        self._receive.close_reader()
        error = self._engine._terminal_error
        if error is not None and not self._raised:
            self._raised = True
            raise error
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Stop reading; the session closes as if ``close()`` was called."""
        self._receive.close_reader()
        await self._engine.close()

    async def __aenter__(self) -> Events:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with anyio.CancelScope(shield=True):
            await self.aclose()

    def __repr__(self) -> str:
        return f"<Events of {self._engine.session_id}>"

    def __del__(self) -> None:
        receive = getattr(self, "_receive", None)
        if receive is not None:
            receive.close_reader()
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine._release(events=True)
