"""``Store``: durable threads over a ``Backend``, and ``Recording``, the tee that writes what an app reads."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import threading
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from itertools import compress
from operator import attrgetter
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.abc
import attrs

from anyagent import (
    AgentError,
    AgentInstallation,
    ContextUsage,
    Delivery,
    Event,
    EventKind,
    Events,
    Input,
    MessageEnded,
    PromptOrigin,
    ReasoningDelta,
    RequestOpened,
    Runtime,
    Session,
    SessionOptions,
    SessionUpdated,
    StatusChanged,
    TextDelta,
    ToolOutputDelta,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
    UnsupportedFeature,
    UserMessage,
)

from ._backend import THREAD_COLUMNS, Backend, PostgresBackend, SqliteBackend, default_path
from ._codec import coalesce, decode_chunk, encode_batch, merge_into, merged_run, undecodable_event
from ._errors import StoreError, ThreadNotFound
from ._model import OriginKind, StoredEvent, Thread, ThreadPage, ThreadStatus, from_micros, to_micros

__all__ = ["PROMPT_EXTENSION", "Recording", "Store", "TitleMaker"]

T = TypeVar("T")
PROMPT_EXTENSION = "anyagent-store/prompt"
"""Marks the ``UserMessage`` a recording stores for each of the app's own prompts (value: the prompt id)."""

TitleMaker = Callable[[str], Awaitable[str]]
"""Makes a thread's title from its first prompt (``Store.generated_title`` asks the agent)."""

_TITLE_WAIT = 30.0
# seconds a recording's block end waits for a TitleMaker still at work (then the first line stays)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _title_from(text: str, limit: int = 80) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _thread_from_row(row: Sequence[Any]) -> Thread:
    values = dict(zip(THREAD_COLUMNS, row, strict=True))
    return Thread(
        id=values["id"],
        agent_id=values["agent_id"],
        status=ThreadStatus(values["status"]),
        created_at=from_micros(int(values["created_us"])),
        updated_at=from_micros(int(values["updated_us"])),
        wire=values["wire"],
        cwd=values["cwd"],
        title=values["title"],
        resume_token=values["resume_token"],
        archived=bool(values["archived"]),
        event_count=int(values["event_count"]),
        used_tokens=values["used_tokens"],
        window_tokens=values["window_tokens"],
        cost_usd=values["cost_usd"],
        origin_id=values["origin_id"],
        origin_kind=OriginKind(values["origin_kind"]) if values["origin_kind"] else None,
        origin_position=values["origin_position"],
    )


def _cursor(thread: Thread) -> str:
    return f"{to_micros(thread.updated_at)}:{thread.id}"


def _parse_cursor(cursor: str) -> tuple[int, str]:
    micros, sep, thread_id = cursor.partition(":")
    if not sep or not micros.isdigit():
        raise StoreError(f"not a thread-list cursor: {cursor!r}")
    return int(micros), thread_id


class Store:
    """Durable threads: the thread list, full transcripts, resume, fork, hand-off, export.

    ::

        async with Store.sqlite() as store:            # ~/.local/share/anyagent/threads.db
            page = await store.threads(limit=50)        # newest activity first

    ``Store.sqlite(path)`` keeps one SQLite file (WAL; several processes may use it at once);
    ``Store.postgres(dsn)`` uses a PostgreSQL database. Both migrate the schema when opened. Every
    database call runs in a worker thread (a recording's writes in a thread of its own), one at a time per
    store: the event loop never blocks.
    """

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._limiter = anyio.CapacityLimiter(1)
        self._db_lock = threading.Lock()  # the backend's one connection: worker threads and recordings' writers
        self._open = False

    # -- opening -------------------------------------------------------------------------------------
    @classmethod
    def sqlite(
        cls, path: str | os.PathLike[str] | None = None, *, max_bytes: int | None = None, busy_timeout: float = 10.0
    ) -> Store:
        """A store in one SQLite file: ``path``, else ``default_path()`` (created on first use).

        ``max_bytes`` caps the file's size (a write past it fails with ``StoreFull``); ``busy_timeout``
        is how long a write waits for another process's write to finish."""
        target = Path(path).expanduser() if path is not None else default_path()
        return cls(SqliteBackend(target, busy_timeout=busy_timeout, max_bytes=max_bytes))

    @classmethod
    def postgres(cls, dsn: str, *, schema: str = "anyagent_store") -> Store:
        """A store in PostgreSQL (``dsn`` as libpq takes it); its tables live in ``schema``."""
        return cls(PostgresBackend(dsn, schema=schema))

    @classmethod
    def from_url(cls, url: str | None = None) -> Store:
        """``postgresql://…`` → ``postgres(url)``; a path or ``sqlite:///path`` → ``sqlite(path)``; None →
        ``$ANYAGENT_STORE`` if set, else the default SQLite file."""
        url = url if url is not None else os.environ.get("ANYAGENT_STORE")
        if not url:
            return cls.sqlite()
        if url.startswith(("postgresql://", "postgres://")):
            return cls.postgres(url)
        if url.startswith("sqlite://"):
            return cls.sqlite(url[len("sqlite://") :])
        return cls.sqlite(url)

    @property
    def location(self) -> str:
        """The database file's path, or the PostgreSQL server and schema (password redacted)."""
        return self._backend.location

    async def open(self) -> Store:
        """Open the database, check it is an anyagent store and migrate it (also ``async with``)."""
        if not self._open:
            await anyio.to_thread.run_sync(self._locked, self._backend.open, limiter=self._limiter)
            self._open = True
        return self

    async def aclose(self) -> None:
        """Close the backend (in a worker thread); safe to call twice."""
        if self._open:
            self._open = False
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._locked, self._backend.close, limiter=self._limiter)

    async def __aenter__(self) -> Store:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if not self._open:
            raise StoreError("the store is not open (use `async with store:` or `await store.open()`)", self.location)
        return await anyio.to_thread.run_sync(self._locked, fn, *args, limiter=self._limiter)

    def _locked(self, fn: Callable[..., T], *args: Any) -> T:
        with self._db_lock:
            return fn(*args)

    # -- threads -------------------------------------------------------------------------------------
    async def create_thread(
        self,
        agent_id: str,
        *,
        cwd: str | os.PathLike[str] | None = None,
        title: str | None = None,
        wire: str | None = None,
        resume_token: str | None = None,
        status: ThreadStatus = ThreadStatus.IDLE,
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
        origin: Thread | None = None,
        origin_kind: OriginKind | None = None,
        origin_position: int | None = None,
    ) -> Thread:
        """A new, empty thread (``record`` makes one itself when not given one)."""
        created = created_at or _now()
        thread = Thread(
            id=uuid.uuid4().hex,
            agent_id=agent_id,
            status=status,
            created_at=created,
            updated_at=updated_at or created,
            wire=wire,
            cwd=str(cwd) if cwd is not None else None,
            title=title,
            resume_token=resume_token,
            origin_id=origin.id if origin is not None else None,
            origin_kind=origin_kind,
            origin_position=origin_position,
        )
        await self._call(self._backend.insert_thread, _row(thread))
        return thread

    async def thread(self, thread: Thread | str) -> Thread:
        """The thread as stored now, by id or by a unique id prefix of at least 4 characters."""
        key = thread.id if isinstance(thread, Thread) else thread
        found = await self._call(self._backend.thread, key)
        if isinstance(found, tuple):
            return _thread_from_row(found)
        if len(found) == 1:
            return _thread_from_row(found[0])
        detail = "several threads start with it" if found else "no such thread"
        raise ThreadNotFound(f"thread {key!r}: {detail}", self.location)

    async def threads(
        self,
        *,
        agent: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        status: ThreadStatus | Sequence[ThreadStatus] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        title: str | None = None,
        text: str | None = None,
        archived: bool | None = False,
        origin: Thread | str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> ThreadPage:
        """One page of the thread list, newest activity first.

        Filters: ``agent`` (profile id), ``cwd``, ``status`` (one or several), last activity in
        ``[since, until)``, ``title`` (a substring, case-insensitive), ``text`` (a substring of the title
        or of anything said in the thread), ``archived`` (False: live threads, True: archived ones,
        None: both), ``origin`` (threads forked or handed off from it). ``cursor`` is the previous page's
        ``next_cursor``."""
        if limit < 1:
            raise StoreError("limit must be at least 1")
        statuses = [status] if isinstance(status, ThreadStatus) else list(status or ())
        query: dict[str, Any] = {
            "agent_id": agent,
            "cwd": str(cwd) if cwd is not None else None,
            "statuses": [s.value for s in statuses],
            "since": to_micros(since) if since is not None else None,
            "until": to_micros(until) if until is not None else None,
            "title": title,
            "text": text,
            "archived": archived,
            "origin_id": origin.id if isinstance(origin, Thread) else origin,
            "before": _parse_cursor(cursor) if cursor else None,
            "limit": limit + 1,
        }
        rows = await self._call(self._backend.threads, query)
        threads = tuple(_thread_from_row(r) for r in rows[:limit])
        return ThreadPage(threads, _cursor(threads[-1]) if len(rows) > limit else None)

    async def events(
        self, thread: Thread | str, *, after: int = 0, upto: int | None = None, page: int = 5000
    ) -> AsyncIterator[StoredEvent]:
        """The thread's stored events in order (positions after ``after``, up to ``upto``), read a page at a
        time. A line that no longer decodes comes with ``event`` None and its raw text."""
        async with contextlib.aclosing(self._pages(thread, after, upto, page)) as pages:
            async for decoded in pages:
                for stored in decoded:
                    yield stored

    async def _pages(
        self, thread: Thread | str, after: int, upto: int | None, page: int
    ) -> AsyncGenerator[list[StoredEvent], None]:
        thread_id = thread.id if isinstance(thread, Thread) else (await self.thread(thread)).id
        chunks_per_read = max(1, page // 256)
        while True:
            rows = await self._call(self._backend.chunks, thread_id, after, chunks_per_read, upto)
            if not rows:
                return
            decoded = await anyio.to_thread.run_sync(_decode_all, rows, after, upto)
            yield decoded
            after = max(after, decoded[-1].position) if decoded else after
            if len(rows) < chunks_per_read:
                return

    async def history(self, thread: Thread | str, *, upto: int | None = None) -> list[StoredEvent]:
        """Every stored event of the thread (up to position ``upto``)."""
        found: list[StoredEvent] = []
        async with contextlib.aclosing(self._pages(thread, 0, upto, 20_000)) as pages:
            async for decoded in pages:
                found += decoded  # a page at a time, not an await an event
        return found

    async def archive(self, thread: Thread | str, archived: bool = True) -> Thread:
        """Hide the thread from the default list (``archived=False`` brings it back)."""
        found = await self.thread(thread)
        await self._call(self._backend.update_thread, found.id, {"archived": 1 if archived else 0})
        return attrs.evolve(found, archived=archived)

    async def delete(self, thread: Thread | str) -> None:
        """Remove the thread and its events for good."""
        found = await self.thread(thread)
        await self._call(self._backend.delete_thread, found.id)

    async def rename(self, thread: Thread | str, title: str) -> Thread:
        """Set the thread's title."""
        found = await self.thread(thread)
        await self._call(self._backend.update_thread, found.id, {"title": title})
        return attrs.evolve(found, title=title)

    async def bulk_load(self, threads: Sequence[Thread], events: Mapping[str, Sequence[Event]]) -> None:
        """Insert threads and their events (by thread id, positions from 1) in one transaction, in chunks of
        256 (imports, benchmarks). Each thread's ``event_count`` must be its number of events."""
        chunks = []
        for thread_id, thread_events in events.items():
            for start in range(0, len(thread_events), 256):
                lines, text = encode_batch(thread_events[start : start + 256])
                chunks.append((thread_id, start + 1, start + len(lines), "\n".join(lines), text))
        await self._call(self._backend.bulk_load, [_row(t) for t in threads], chunks)

    # -- recording -----------------------------------------------------------------------------------
    def record(
        self,
        session: Session,
        events: Events | AsyncIterator[Event],
        *,
        thread: Thread | None = None,
        title: str | TitleMaker | None = None,
        cwd: str | os.PathLike[str] | None = None,
        wire: str | None = None,
        batch_size: int = 256,
        flush_interval: float = 0.25,
    ) -> Recording:
        """Tee ``events`` into a thread's log while the app reads them::

            async with store.record(session, events) as recording:
                await recording.prompt("fix the bug")     # the prompt is stored too; first one titles
                async for event in recording:             # the same events, in the same order
                    ...

        A new thread is made on entry unless ``thread`` is given (then events are appended to it); it
        takes the agent id, wire and resume token from the session, ``cwd`` from the caller (the
        directory the session was opened in: ``options.cwd``).
        ``title``: a fixed title, or a ``TitleMaker`` (``Store.generated_title``) run once on the first prompt
        beside the reading (the block's end waits for it up to 30 seconds; the prompt's first line titles the
        thread until it answers); by default the first line of the first prompt. The recording's writer thread
        takes the events as they are read (``Events.tap``: the reader's cost is one Python call an event), and
        writes every ``flush_interval`` seconds, when ``batch_size`` events (a run of deltas counts as one) wait
        for it, and at once at each turn end and permission or question. The read does not wait for it, except
        at a checkpoint of the stream (every 64 events at most) when a round is due: there the reader lets the
        writer in and waits for that round (a few hundred µs, at most 20 ms), so that a flood that keeps the
        event loop from sleeping cannot keep the writer from the GIL.
        A run of back-to-back deltas of one message (or one tool's output) is stored as one delta holding its
        text. So a host killed with SIGKILL loses only events read after the last write began: at most
        ``flush_interval`` seconds' worth plus the write under way (by default 0.25 s and a few ms), or twice
        that for the deltas of a message the app stopped reading in the middle of. A failed write
        (``StoreFull``) stops the recording, never the session: the events keep flowing to the app, ``failure`` holds
        the error and ``flush()``/exiting the block raise it."""
        return Recording(
            self,
            session,
            events,
            thread=thread,
            title=title,
            wire=wire,
            cwd=cwd,
            batch_size=batch_size,
            flush_interval=flush_interval,
        )

    @staticmethod
    def generated_title(runtime: Runtime, agent: AgentInstallation, cwd: str | os.PathLike[str] = ".") -> TitleMaker:
        """A ``TitleMaker`` that asks ``agent`` for a short title (``Runtime.generate``), opt-in: it starts
        a throwaway session of the agent once per thread. Falls back to the first prompt's first line."""

        async def make(prompt: str) -> str:
            ask = (
                "Reply with only a title of at most six words for a conversation that starts with this"
                f" request, no quotes:\n\n{prompt[:2000]}"
            )
            text = await runtime.generate(agent, SessionOptions.in_dir(Path(cwd)), ask)
            return _title_from(text.strip().strip("\"'")) or _title_from(prompt)

        return make

    # -- reopening, forking, handing off -------------------------------------------------------------
    async def _installation(self, runtime: Runtime, agent: AgentInstallation | str) -> AgentInstallation:
        if isinstance(agent, AgentInstallation):
            return agent
        return (await runtime.discover()).require(agent)

    def _options(self, thread: Thread, options: SessionOptions | None) -> SessionOptions:
        if options is not None:
            return options
        cwd = thread.cwd if thread.cwd and Path(thread.cwd).is_dir() else os.getcwd()
        return SessionOptions.in_dir(cwd)

    async def reopen(
        self,
        runtime: Runtime,
        thread: Thread | str,
        *,
        options: SessionOptions | None = None,
        agent: AgentInstallation | None = None,
        history: bool = True,
    ) -> Recording:
        """Resume the thread's conversation through its resume token and record on into it.

        Iterating the recording yields the stored history first (``Event``s; a line that no longer
        decodes as a warning ``Diagnostic`` carrying the raw text), then the live events. Live events an
        agent replays on resume, before the turn of the first new prompt (messages and tools the history already holds,
        by their ids), are dropped, so
        no message or tool shows twice. ``history=False``: the recording yields only the live events (for an app
        that shows the stored history itself, as ``anyagent ui`` does); the replays are dropped all the same.
        ``options`` defaults to the thread's directory; the resume token is set on
        them. The recording closes the session it opened when its block ends."""
        found = await self.thread(thread)
        if not found.resume_token:
            raise UnsupportedFeature(f"thread {found.id} has no resume token: the agent gave none")
        installation = agent or await self._installation(runtime, found.agent_id)
        reopen_options = self._options(found, options).resume(found.resume_token)
        session, events = await runtime.open(installation, reopen_options)
        return Recording(self, session, events, thread=found, replay=True, owns_session=True, history=history)

    async def fork(
        self,
        runtime: Runtime,
        thread: Thread | str,
        *,
        at: StoredEvent | int | None = None,
        options: SessionOptions | None = None,
        agent: AgentInstallation | None = None,
    ) -> Recording:
        """Branch a new thread off ``thread`` through the agent's fork (at the message of stored event
        ``at``, or at the end). The new thread starts with a copy of the history up to that event and
        names its origin. An agent that cannot fork is refused with ``anyagent.UnsupportedFeature``
        before anything is stored."""
        found = await self.thread(thread)
        if not found.resume_token:
            raise UnsupportedFeature(f"thread {found.id} has no resume token to fork from")
        installation = agent or await self._installation(runtime, found.agent_id)
        position = at.position if isinstance(at, StoredEvent) else at
        message_id: str | None = None
        if position is not None:
            if not 1 <= position <= found.event_count:
                raise StoreError(f"thread {found.id} has no event {position}", self.location)
            message_id = await self._message_at(found, position)
        fork_options = self._options(found, options).fork_from(found.resume_token, at=message_id)
        session, events = await runtime.open(installation, fork_options)  # UnsupportedFeature: no fork
        upto = position if position is not None else found.event_count
        branch = await self.create_thread(
            found.agent_id,
            cwd=found.cwd,
            title=found.title,
            wire=found.wire,
            resume_token=session.info().resume_token,
            origin=found,
            origin_kind=OriginKind.FORK,
            origin_position=upto,
        )
        await self._call(self._backend.copy_events, found.id, branch.id, upto)
        await self._call(self._backend.update_thread, branch.id, {"event_count": upto})
        branch = attrs.evolve(branch, event_count=upto)
        return Recording(self, session, events, thread=branch, replay=True, owns_session=True, dedupe=False)

    async def _message_at(self, thread: Thread, position: int) -> str | None:
        """The message id of the stored event at ``position``, else of the nearest message before it."""
        stored = await self.history(thread, upto=position)
        for item in reversed(stored):
            kind = item.event.kind if item.event is not None else None
            if isinstance(kind, (TextDelta, ReasoningDelta, UserMessage, MessageEnded)):
                return kind.message_id
        return None

    async def handoff(
        self,
        runtime: Runtime,
        thread: Thread | str,
        agent: AgentInstallation | str,
        *,
        budget: int | None = None,
        instruction: str | None = None,
        options: SessionOptions | None = None,
    ) -> Recording:
        """Continue ``thread`` on another agent: a new thread (linked to its origin) whose first prompt,
        sent by the recording on entry, carries the earlier conversation within ``budget`` characters
        (default ``anyagent_store.HANDOFF_BUDGET``; the rule is ``anyagent_store.handoff_prompt``'s)."""
        from ._handoff import HANDOFF_BUDGET, handoff_prompt

        found = await self.thread(thread)
        installation = await self._installation(runtime, agent)
        stored = await self.history(found)
        prompt = handoff_prompt(
            found, [s.event for s in stored if s.event is not None], budget or HANDOFF_BUDGET, instruction
        )
        handoff_options = self._options(found, options)
        session, events = await runtime.open(installation, handoff_options)
        successor = await self.create_thread(
            installation.id,
            cwd=str(handoff_options.cwd),
            title=found.title,
            wire=installation.wire,
            resume_token=session.info().resume_token,
            origin=found,
            origin_kind=OriginKind.HANDOFF,
            origin_position=found.event_count,
        )
        return Recording(self, session, events, thread=successor, owns_session=True, first_prompt=prompt)

    # -- the agents' own history ---------------------------------------------------------------------
    async def import_history(
        self, runtime: Runtime, agent: AgentInstallation | str, cwd: str | os.PathLike[str] | None = None
    ) -> list[Thread]:
        """Add the conversations ``agent`` keeps itself (``Runtime.history``) to the thread list, as
        threads with a resume token and no stored events (``reopen`` continues them). A conversation
        imported before (same agent and resume token) is not added twice; the new threads are returned.
        ``UnsupportedFeature`` when the agent keeps no history it exposes."""
        entries = await runtime.history(agent, cwd)
        known: set[tuple[str, str]] = set()
        agent_ids = {entry.agent_id for entry in entries}
        for agent_id in agent_ids:
            cursor: str | None = None
            while True:
                page = await self.threads(agent=agent_id, archived=None, limit=500, cursor=cursor)
                known.update((t.agent_id, t.resume_token) for t in page.threads if t.resume_token)
                cursor = page.next_cursor
                if cursor is None:
                    break
        added: list[Thread] = []
        for entry in entries:
            if (entry.agent_id, entry.resume_token) in known:
                continue
            known.add((entry.agent_id, entry.resume_token))
            added.append(
                await self.create_thread(
                    entry.agent_id,
                    cwd=entry.cwd,
                    title=entry.title,
                    resume_token=entry.resume_token,
                    created_at=entry.created_at or entry.last_activity,
                    updated_at=entry.last_activity,
                    origin_kind=OriginKind.IMPORT,
                )
            )
        return added

    # -- export --------------------------------------------------------------------------------------
    async def export(self, thread: Thread | str, format: str = "jsonl") -> str:
        """The thread as text: ``"jsonl"`` (one ``anyagent.serialize`` event per line, as stored; a line that
        no longer decodes is written as stored) or ``"md"`` (a readable Markdown transcript)."""
        from ._export import markdown

        found = await self.thread(thread)
        stored = await self.history(found)
        if format == "jsonl":
            return "".join(item.raw + "\n" for item in stored)
        if format in ("md", "markdown"):
            return markdown(found, stored)
        raise StoreError(f"unknown export format {format!r} (jsonl or md)")


_gc_lock = threading.Lock()
_gc_pauses = 0  # decodes running with the collector paused
_gc_was_enabled = False


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a page of events is decoded (at most 20 000 events,
    a few tenths of a second): the values built make no cycles, and the collector's passes over the
    young values, about 40 % of the decoding time, find nothing. Nested and concurrent decodes share one
    pause; a collector the app turned off stays off."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


def _decode_all(rows: Sequence[tuple[int, str]], after: int, upto: int | None) -> list[StoredEvent]:
    with _collector_paused():
        decoded = [stored for first, body in rows for stored in decode_chunk(first, body)]
    return [s for s in decoded if s.position > after and (upto is None or s.position <= upto)]


def _row(thread: Thread) -> dict[str, Any]:
    return {
        "id": thread.id,
        "agent_id": thread.agent_id,
        "wire": thread.wire,
        "cwd": thread.cwd,
        "title": thread.title,
        "status": thread.status.value,
        "resume_token": thread.resume_token,
        "created_us": to_micros(thread.created_at),
        "updated_us": to_micros(thread.updated_at),
        "archived": 1 if thread.archived else 0,
        "event_count": thread.event_count,
        "origin_id": thread.origin_id,
        "origin_kind": thread.origin_kind.value if thread.origin_kind else None,
        "origin_position": thread.origin_position,
        "used_tokens": thread.used_tokens,
        "window_tokens": thread.window_tokens,
        "cost_usd": thread.cost_usd,
    }


_TRACKED = frozenset((TurnEnded, RequestOpened, TurnStarted, StatusChanged, ContextUsage, SessionUpdated))
_STATUS_OF = {"idle": ThreadStatus.IDLE, "working": ThreadStatus.WORKING, "needs_input": ThreadStatus.NEEDS_INPUT}


def _identity(event: Event) -> tuple[str, str] | None:
    """What makes an event a repeat of one already stored: its message or tool (the agent's ids)."""
    kind = event.kind
    if isinstance(kind, (TextDelta, ReasoningDelta, UserMessage, MessageEnded)):
        return "message", kind.message_id
    if isinstance(kind, ToolUpdated):
        return "tool", kind.tool.id
    if isinstance(kind, ToolOutputDelta):
        return "tool", kind.tool_id
    return None  # turn ids are the engine's own, counted afresh in each session: never a repeat


class _FieldsMark:
    """The ``kind`` of every `_Fields`: its class tells the writer's one pass over the inbox's kinds that a
    mark is among the events."""


class _Fields(dict):  # type: ignore[type-arg]
    """Thread fields the loop sets (title, failed status), passed to the writer in order with the events."""

    kind = _FieldsMark()


class _RunMark:
    """The ``kind`` of every `_Run` (as `_FieldsMark` is of every `_Fields`)."""


class _Run:
    """A run of back-to-back text (or reasoning) deltas of one message and turn, gathered by the recording's
    tap: its first event, and entries of text, sequence and time. The head is the first entry; after it, at
    each checkpoint of the stream (at least every 64 events) the tap publishes what it gathered since as one
    entry: the deltas' joined text, the first one's time and the last one's sequence (as `merged_run`
    stores them). The reader appends (sequences, then times, then texts); the writer takes from the front
    what ``texts`` holds, so the other two hold at least as much. The events themselves are not kept."""

    __slots__ = ("head", "sequences", "texts", "times")
    kind = _RunMark()

    def __init__(self, head: Event) -> None:
        self.head = head
        self.sequences = [head.sequence]
        self.times = [head.occurred_at]
        self.texts: list[str] = [head.kind.text]  # type: ignore[union-attr]


_Item = Event | _Fields | _Run


def _nothing() -> None:
    pass


def _wait_while_alive(done: threading.Event, thread: threading.Thread) -> None:
    """Wait for ``done`` as long as ``thread`` (the writer that sets it) runs."""
    while not done.wait(0.1) and thread.is_alive():
        pass


def _no() -> bool:
    return False


_kind_of: Callable[[_Item], Any] = attrgetter("kind")
_WRITER_TRACKED = _TRACKED | {_FieldsMark, _RunMark}
_HANDOFF_WAIT = 0.02  # the longest the reader waits at a checkpoint for the writer's round to end
_FORCING = (TurnEnded, RequestOpened)  # kinds the writer stores at once (the reader hands over at its next checkpoint)


class Recording:
    """A session's events, teed into a stored thread as the app reads them (``Store.record``,
    ``Store.reopen``, ``Store.fork``, ``Store.handoff``). Use it in ``async with``; iterate it for the
    events; prompt through ``prompt`` so the prompt is stored (and titles the thread).

    How it stays out of the reader's way: on an ``anyagent.Events`` stream it installs ``Events.tap`` and
    iterating it iterates the stream itself. The tap keeps no event: a text or reasoning delta that
    continues the current run of one message adds its text to the run's chunk (one append), anything else
    goes into the inbox as it is; so the reader pays one Python call an event, and a delta outlives the
    reader's use of it only as its text. At each checkpoint of the stream (``Events.tap(checkpoint=)``: at
    least every 64 events) the chunk becomes one entry of the run (joined text, first time, last
    sequence). The writer thread sleeps ``flush_interval`` between rounds, or until a turn end, an open
    request or a full batch wakes it; a round takes what arrived, tracks status and usage, makes each
    run's text one stored delta (``merged_run``; other runs of deltas merge with C-level passes,
    ``coalesce``), encodes and writes. It never waits for the GIL on its own while the reader floods: a
    thread that asks for it while the event loop never sleeps gets it only when the loop does, and makes
    the loop pay a futex wake-up each time it lets go of the GIL meanwhile; the stream's checkpoint lets
    it in when its round is due. While history is replayed or the agent's replays are dropped
    (``reopen``), and for an iterator that is no ``Events``, iterating goes through the recording, which
    appends each event it passes on."""

    def __init__(
        self,
        store: Store,
        session: Session,
        events: Events | AsyncIterator[Event],
        *,
        thread: Thread | None = None,
        title: str | TitleMaker | None = None,
        wire: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        batch_size: int = 256,
        flush_interval: float = 0.25,
        replay: bool = False,
        owns_session: bool = False,
        dedupe: bool = True,
        first_prompt: str | None = None,
        history: bool = True,
    ) -> None:
        if batch_size < 1 or flush_interval <= 0:
            raise StoreError("batch_size must be at least 1 and flush_interval positive")
        self.store = store
        self.session = session
        self._source = events
        self._events = events.__aiter__()
        self._next = self._events.__anext__
        self._plain = False  # see _refresh
        self._tapped: Events | None = None  # the stream whose tap feeds the inbox
        self._thread = thread
        self._title_arg = title
        self._wire = wire
        self._cwd = str(cwd) if cwd is not None else None
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self._replay = replay
        self._owns_session = owns_session
        self._dedupe = dedupe
        self._first_prompt = first_prompt
        self._show_history = history
        # the loop appends (events, runs, _Fields); the writer takes from the front: each list operation is atomic
        self._inbox: list[_Item] = []
        self._end_run: Callable[[], None] = _nothing  # ends the run the tap is gathering (the loop's)
        self._publish: Callable[[], bool] = _no  # publishes what the tap gathered of its run (the loop's)
        self._open: _Run | None = None  # the last run the writer took, which may still grow (the writer's)
        self._wake = threading.Event()
        self._due = math.inf  # when the writer's next round is due: it sets it before it sleeps
        self._handing = False  # a hand-over timed out and its round has not ended yet
        self._flushes: list[threading.Event] = []
        self._stopping = False
        self._writer: threading.Thread | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._next_position = (thread.event_count if thread else 0) + 1
        self._status = thread.status if thread else ThreadStatus.IDLE  # the writer's
        self._latest = datetime.min.replace(tzinfo=timezone.utc)  # the writer's: the newest event time taken
        self._title = thread.title if thread else (title if isinstance(title, str) else None)  # the loop's
        self._seen: set[tuple[str, str]] = set()
        self._history: AsyncIterator[StoredEvent] | None = None
        self.failure: StoreError | None = None
        self._closed = False
        self._titling: anyio.Event | None = None  # set when a TitleMaker started on the first prompt is done

    @property
    def thread(self) -> Thread:
        """The thread being recorded into, as of the last write (``Store.thread`` for what is stored)."""
        if self._thread is None:
            raise StoreError("the recording has not started (use `async with`)")
        return self._thread

    async def __aenter__(self) -> Recording:
        if self._thread is None:
            info = self.session.info()
            self._thread = await self.store.create_thread(
                info.agent.id,
                cwd=self._cwd,
                title=self._title,
                wire=self._wire or info.agent.wire,
                resume_token=info.resume_token,
            )
        if self._replay and self._show_history:
            self._history = self.store.events(self._thread, upto=self._next_position - 1).__aiter__()
        elif self._replay and self._dedupe:  # the history is not yielded, but its ids still mark replays
            async for stored in self.store.events(self._thread, upto=self._next_position - 1):
                identity = _identity(stored.event) if stored.event is not None else None
                if identity is not None:
                    self._seen.add(identity)
        self._writer = threading.Thread(
            target=self._writer_main, name=f"anyagent-store writer {self._thread.id[:8]}", daemon=True
        )
        self._writer.start()
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._publishing)
        self._refresh()
        if self._first_prompt is not None:
            try:
                await self.prompt(self._first_prompt)
            except BaseException as exc:
                await self.__aexit__(type(exc), exc, exc.__traceback__)
                raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        tg = self._tg
        if tg is not None and self._titling is not None and exc_type is None:
            with anyio.move_on_after(_TITLE_WAIT):  # the title is asked for at the first prompt: let it arrive
                await self._titling.wait()
        self._tg = None
        if tg is not None:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)
        with anyio.CancelScope(shield=True):
            try:
                self._untap()
                if isinstance(self._source, Events) and self._source.failure is not None:
                    self._failed()  # the stream failed while the app read it directly (a typed error of a
                    # call in the block, a bad prompt say, is no failure of the session)
                self._closed = True
                self._plain = False
                writer, self._writer = self._writer, None
                if writer is not None:
                    self._stopping = True  # the writer writes what the inbox holds, then ends
                    self._wake.set()
                    await anyio.to_thread.run_sync(writer.join)
            finally:
                self._closed = True
                if self._owns_session:
                    await self.session.close()
        if self.failure is not None and exc_type is None:
            raise self.failure

    # -- prompting -----------------------------------------------------------------------------------
    async def prompt(self, value: str | Input) -> Delivery:
        """``session.prompt(value)``, with the prompt stored as a ``UserMessage`` marked
        ``anyagent-store/prompt`` (its id); the first prompt titles an untitled thread."""
        delivery = await self.session.prompt(value)
        self.note_prompt(value if isinstance(value, str) else value.content, delivery)
        return delivery

    def note_prompt(self, text: str, delivery: Delivery) -> None:
        """Store a prompt the app sent on ``session`` itself (``prompt`` calls this)."""
        event = Event(
            sequence=0,
            occurred_at=_now(),
            session_id=self.session.info().session_id,
            kind=UserMessage(f"prompt-{delivery.prompt_id}", text),
            extensions={PROMPT_EXTENSION: delivery.prompt_id},
        )
        self._add(event)
        if self._title is None and text.strip():
            self._title = _title_from(text)
            self._add(_Fields(title=self._title))
            if callable(self._title_arg) and self._tg is not None:
                self._titling = anyio.Event()
                self._tg.start_soon(self._generate_title, self._title_arg, text, self._titling)

    async def _generate_title(self, make: TitleMaker, text: str, done: anyio.Event) -> None:
        try:
            title = await make(text)
        except AgentError:
            return
        finally:
            done.set()
        if title:
            self._title = title
            self._add(_Fields(title=title))

    # -- reading -------------------------------------------------------------------------------------
    def __aiter__(self) -> AsyncIterator[Event]:
        if self._plain and self._tapped is not None:
            return self._tapped  # the stream itself: its tap records each event
        return self

    async def __anext__(self) -> Event:
        if self._plain:  # live events, nothing replayed or dropped
            if self._tapped is None:
                self._checkpoint()
            try:
                event = await self._next()
            except AgentError:
                self._failed()
                raise
            if self._tapped is None:
                self._add(event)
            return event
        return await self._next_slow()

    def _refresh(self) -> None:
        """Whether ``__anext__`` may take its plain path: live events recorded, nothing to replay or drop;
        on an ``Events`` stream the tap then records them."""
        self._plain = (
            self._history is None
            and not self._seen
            and not self._closed
            and self.failure is None
            and self._writer is not None
        )
        if self._plain and self._tapped is None and isinstance(self._source, Events):
            self._tapped = self._source
            sink, checkpoint = self._sink()
            self._source.tap(sink, checkpoint=checkpoint)

    def _sink(self) -> tuple[Callable[[Event], None], Callable[[], None]]:
        """The tap and its checkpoint. A text or reasoning delta that continues the current run adds its text
        to the run's chunk (one append; the event itself is let go once the next one replaces it as the
        run's last), one that starts a run puts a `_Run` in the inbox, anything else goes in as it is (a turn
        end or an open request, or ``batch_size`` items waiting, wake the writer). The checkpoint publishes
        the chunk into the run (`_Run`), then lets the writer in when its round is due (`_checkpoint`); a
        run's end, ``_add`` and the recording's periodic ``_publishing`` publish it too. The current run
        lives in the closures' cells (the cheapest reads Python has: the tap runs for every event the app
        reads)."""
        inbox = self._inbox
        append = inbox.append
        wake = self._wake.set
        add = self._add
        batch_size = self.batch_size
        chunk: list[str] = []  # the texts of the run's deltas since its last publish (the loop's alone)
        add_text = chunk.append
        run: _Run | None = None  # the run being gathered (while ``cls`` is set)
        first: Event | None = None  # the chunk's first delta
        last: Event | None = None  # the run's last delta
        cls: type | None = None  # the current run: its kind class, turn, message id, extensions
        turn: Any = None
        ident: Any = None
        empty: Any = None

        def publish() -> bool:
            nonlocal first
            if not chunk:
                return False
            run.sequences.append(last.sequence)  # type: ignore[union-attr]
            run.times.append(first.occurred_at)  # type: ignore[union-attr]
            run.texts.append("".join(chunk))  # type: ignore[union-attr]
            chunk.clear()
            first = None
            return True

        def sink(event: Event) -> None:
            nonlocal run, first, last, cls, turn, ident, empty
            kind = event.kind
            if (
                kind.__class__ is cls
                and event.turn_info is turn
                and kind.message_id == ident  # type: ignore[union-attr]
                and (event.extensions is empty or not event.extensions)
            ):
                add_text(kind.text)  # type: ignore[union-attr]
                last = event
                if first is None:
                    first = event
                return
            if chunk:
                publish()  # the run ends here
            kind_class = kind.__class__
            if (kind_class is TextDelta or kind_class is ReasoningDelta) and not event.extensions:
                run = _Run(event)
                cls, turn, ident, empty = kind_class, event.turn_info, kind.message_id, event.extensions  # type: ignore[union-attr]
                append(run)
                if len(inbox) >= batch_size:
                    wake()
            else:
                add(event)  # ends the run; a turn end, an open request or a full batch wakes the writer

        def end_run() -> None:
            nonlocal cls
            publish()
            cls = None

        handoff = self._checkpoint

        def checkpoint() -> None:
            if chunk:
                publish()
            handoff()

        self._end_run = end_run
        self._publish = publish
        return sink, checkpoint

    def _checkpoint(self) -> None:
        """The reader's checkpoint (``Events.tap``; at least every 64 events, and whenever the stream must
        wait): when the writer's round is due (its timer ran out, or the tap woke it for a turn end, an
        open request or ``batch_size`` items), let it in: wait, bounded, for that round to end. Waiting
        releases the GIL to it. A writer that asked for the GIL while the loop never sleeps (a flood) would
        get it only once the flood ended, and would cost the reader a futex wake-up each time the loop let
        go of the GIL meanwhile (measured: ~0.3 µs an event on the in-process mock's 2.1). A round that
        outlasts ``_HANDOFF_WAIT`` (a slow disk, a far server) is not waited for again until it ends."""
        if self._handing or (not self._wake.is_set() and time.monotonic() < self._due):
            if self.failure is not None and self._tapped is not None:
                self._untap()  # nothing is written any more: stop gathering
            return
        self._due = math.inf  # one hand-over a round: the writer sets the next due time before it sleeps
        done = threading.Event()
        self._flushes.append(done)
        self._wake.set()
        if not done.wait(_HANDOFF_WAIT):
            self._handing = True  # the writer clears it when that round ends

    def _untap(self) -> None:
        tapped, self._tapped = self._tapped, None
        if tapped is not None:
            tapped.tap(None)
            self._end_run()  # what the tap gathered of its last run goes to the writer

    async def _publishing(self) -> None:
        """Every ``flush_interval``, publish what the tap gathered of its run (an app that holds the stream
        in the middle of a message reaches no checkpoint) and wake the writer for it."""
        while True:
            await anyio.sleep(self.flush_interval)
            if self._publish():
                self._wake.set()

    def _failed(self) -> None:
        self._add(_Fields(status=ThreadStatus.FAILED.value))

    async def _next_slow(self) -> Event:
        """``__anext__`` while history is replayed, replays are dropped, or nothing is recorded any more."""
        if self._history is not None:
            try:
                stored = await self._history.__anext__()
            except StopAsyncIteration:
                self._history = None
                self._refresh()
            else:
                event = stored.event
                if event is None:
                    return undecodable_event(stored, self.session.info().session_id)
                if self._dedupe:
                    identity = _identity(event)
                    if identity is not None:
                        self._seen.add(identity)
                return event
        while True:
            if self._writer is not None:
                self._checkpoint()
            try:
                event = await self._next()
            except AgentError:
                self._failed()
                raise
            if self._seen:
                if isinstance(event.kind, TurnStarted) and isinstance(event.kind.origin, PromptOrigin):
                    self._seen.clear()  # the first turn of a new prompt: replays come before it, never after
                    self._add(event)
                    self._refresh()  # from the next event on, the tap records
                    return event
                identity = _identity(event)
                if identity is not None and identity in self._seen:
                    continue  # the agent replayed history the store already showed
            if self._tapped is None:
                self._add(event)
            return event

    def _add(self, item: Event | _Fields) -> None:
        if not self._closed and self.failure is None:
            self._end_run()  # what the tap gathers next comes after this
            self._inbox.append(item)
            # a title or status waits for the next round (a flood that starts with the prompt would stall
            # for it at its first checkpoint), a turn end, an open request or a full batch wakes the writer
            if len(self._inbox) >= self.batch_size or (type(item) is not _Fields and type(item.kind) in _FORCING):
                self._wake.set()

    # -- writing -------------------------------------------------------------------------------------
    # The loop only appends (the tap: to the current run or the inbox; a prompt, a field); the writer thread
    # takes what arrived every few milliseconds, tracks the thread's status, usage and resume token, and
    # writes when it holds ``batch_size`` events, at a turn end or an open request, at ``flush``, or when
    # ``flush_interval`` passed since its last write. The loop never waits for a write.
    async def flush(self) -> None:
        """Write what was read so far; raises the recording's ``failure`` (``StoreFull``, …) if it has one."""
        if self._writer is not None:
            written = threading.Event()
            self._flushes.append(written)
            self._wake.set()
            await anyio.to_thread.run_sync(_wait_while_alive, written, self._writer)
        if self.failure is not None:
            raise self.failure

    def _writer_main(self) -> None:
        """The writer thread: `_write_loop`; an error it did not expect (a bug, not the database) ends the
        recording's writes with a ``failure`` and releases whoever waits for a round."""
        try:
            self._write_loop()
        except BaseException as exc:
            if self.failure is None:
                thread_id = self._thread.id if self._thread is not None else "?"
                self.failure = StoreError(f"recording into thread {thread_id} failed: {exc!r}", self.store.location)
                self.failure.__cause__ = exc
            self._plain = False
            self._inbox.clear()  # the reader's next checkpoint removes the tap (never this thread: it would race it)
        finally:
            self._handing = True  # no checkpoint waits for a round again
            for done in self._flushes:
                done.set()

    def _write_loop(self) -> None:
        """The writer's rounds."""
        pending: list[Event] = []  # coalesced: the events the next write stores
        fields: dict[str, Any] = {}
        poll = self.flush_interval
        inbox = self._inbox
        while True:
            self._due = time.monotonic() + poll  # from then on the reader's checkpoint lets this thread in
            self._wake.wait(poll)
            self._wake.clear()
            stopping = self._stopping  # read before the inbox: what came before the stop is in it
            flushes = self._flushes[:]
            del self._flushes[: len(flushes)]
            taken = len(inbox)
            items = inbox[:taken]
            del inbox[:taken]
            if self._open is not None:
                self._drain(self._open, pending)  # what it gathered since
            if items:
                self._open = None  # anything after a run in the inbox means the run ended before it
                self._absorb(items, pending, fields)
            if self.failure is not None:  # a failed recording writes nothing more: let what it took go
                pending.clear()
                fields.clear()
            if (pending or fields) and self.failure is None:
                self._write(pending, fields)  # a round comes every flush_interval, or at a checkpoint when due
                pending, fields = [], {}
            for done in flushes:
                done.set()
            self._handing = False
            if stopping:
                return

    def _absorb(self, items: list[_Item], pending: list[Event], fields: dict[str, Any]) -> None:
        """Take ``items`` into the pending events (coalesced: ``pending`` counts stored events) and fields.
        Plain events take C-level passes only; runs, marks and tracked events are found by index (C-level
        too) and handled one by one."""
        kinds = list(map(_kind_of, items))
        classes = list(map(type, kinds))
        if _WRITER_TRACKED.isdisjoint(classes):
            self._take(items, kinds, pending)  # type: ignore[arg-type]
            return
        begin = 0
        for index in compress(range(len(classes)), map(_WRITER_TRACKED.__contains__, classes)):
            item = items[index]
            if isinstance(item, Event):
                self._track(item, fields)
                continue  # taken with the stretch it belongs to
            self._take(items[begin:index], kinds[begin:index], pending)  # type: ignore[arg-type]
            begin = index + 1
            if isinstance(item, _Fields):
                fields.update(item)
                if "status" in item:
                    self._status = ThreadStatus(item["status"])
            else:
                self._drain(item, pending)
        self._take(items[begin:], kinds[begin:], pending)  # type: ignore[arg-type]
        if isinstance(items[-1], _Run):
            self._open = items[-1]  # the last run may still grow (the tap appends to it until something else comes)

    def _take(self, events: list[Event], kinds: list[EventKind], pending: list[Event]) -> None:
        if events:
            self._latest = max(self._latest, events[-1].occurred_at)  # a merged run keeps its first delta's time
            merge_into(pending, coalesce(events, kinds, one_session=True))  # a recording is of one session

    def _drain(self, run: _Run, pending: list[Event]) -> None:
        """Take what ``run`` gathered since the last look into ``pending``."""
        taken = len(run.texts)
        if not taken:
            return
        texts = run.texts[:taken]
        del run.texts[:taken]
        sequences = run.sequences[:taken]
        del run.sequences[:taken]
        times = run.times[:taken]
        del run.times[:taken]
        self._latest = max(self._latest, times[-1])
        merge_into(pending, merged_run(run.head, texts, sequences, times))

    def _track(self, event: Event, fields: dict[str, Any]) -> None:
        kind = event.kind
        status: ThreadStatus | None = None
        if isinstance(kind, StatusChanged):
            status = _STATUS_OF.get(kind.status.value)
        elif isinstance(kind, RequestOpened):
            status = ThreadStatus.NEEDS_INPUT
        elif isinstance(kind, TurnStarted):
            status = ThreadStatus.WORKING
        elif isinstance(kind, TurnEnded):
            if event.turn_info is None or not event.turn_info.parent_tool_id:
                status = ThreadStatus.IDLE
        elif isinstance(kind, ContextUsage):
            fields.update(used_tokens=kind.used_tokens, window_tokens=kind.window_tokens, cost_usd=kind.cost_usd)
        elif isinstance(kind, SessionUpdated) and kind.info.resume_token:
            fields["resume_token"] = kind.info.resume_token
        if status is not None and status is not self._status:
            self._status = status
            fields["status"] = status.value

    def _write(self, batch: list[Event], fields: dict[str, Any]) -> None:
        thread = self._thread
        if self.failure is not None or thread is None:
            return
        store = self.store
        try:
            start = self._next_position
            if batch:
                fields["event_count"] = start + len(batch) - 1
                fields["updated_us"] = to_micros(max(self._latest, thread.updated_at))
            token = self.session.info().resume_token
            if token and token != thread.resume_token and "resume_token" not in fields:
                fields["resume_token"] = token
            lines, text = encode_batch(batch)
            with store._db_lock:
                store._backend.append(thread.id, start, lines, text, fields)
        except StoreError as exc:
            self.failure = exc
            self._plain = False
            return
        except Exception as exc:  # a bug, not the database: stop recording, tell at flush and block end
            self.failure = StoreError(f"recording into thread {thread.id} failed: {exc!r}", store.location)
            self.failure.__cause__ = exc
            self._plain = False
            return
        self._next_position = start + len(batch)
        self._thread = _evolve(thread, fields)


def _evolve(thread: Thread, fields: dict[str, Any]) -> Thread:
    changes: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "updated_us":
            changes["updated_at"] = from_micros(value)
        elif name == "status":
            changes["status"] = ThreadStatus(value)
        elif name in ("event_count", "title", "resume_token", "used_tokens", "window_tokens", "cost_usd", "cwd"):
            changes[name] = value
    return attrs.evolve(thread, **changes)
