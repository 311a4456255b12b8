"""The protocol, transport-agnostic: a ``Hub`` owns a ``Runtime`` and the sessions it opened.

A transport (stdio, a WebSocket) makes one ``Peer`` per client connection with a ``send(text)``
coroutine that writes one line/message, feeds each received line to ``hub.receive(peer, line)``,
and tells the hub when the connection ends (``hub.shutdown(peer)`` for stdio: every session is
closed and its ``closed`` written; ``hub.detach(peer)`` for a WebSocket: sessions outlive it).

Per session the hub keeps a bounded buffer of its output lines (``events``, then at most one
session ``error`` and exactly one ``closed``): ``replay`` lines (4096) or ``replay_bytes``. Every
peer watching a session has a cursor into it and a task that writes from there, in order. A
watcher whose next line would leave the buffer unsent lags: the session is closed with the lag
error (``SessionClosed``, ``lagged: true``), the way an in-process reader that falls a full buffer
behind is; memory stays bounded. A peer that attaches later (``attach`` with the last ``sequence``
it saw) is replayed what it missed, or told ``ReplayGap`` when that has left the buffer.
"""

from __future__ import annotations

import json
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import anyio
import anyio.abc
import attrs

import anyagent
from anyagent import (
    AgentError,
    AgentInstallation,
    Delivery,
    DiscoveryReport,
    Event,
    Events,
    Input,
    InvalidRequest,
    ProtocolFailed,
    Runtime,
    Session,
    SessionClosed,
    SessionOptions,
)

from . import wire
from .wire import WireError

__all__ = [
    "COMMANDS",
    "DEFAULT_MAX_LINE",
    "DEFAULT_REPLAY",
    "DEFAULT_REPLAY_BYTES",
    "PROTOCOL",
    "Hub",
    "Peer",
    "Tee",
    "dumps",
]

PROTOCOL = 1
"""The sidecar protocol version in the hello line (anyagent-rs's)."""

DEFAULT_MAX_LINE = 8 * 1024 * 1024
"""Bytes one command line may hold; a longer one is skipped unbuffered and answered ``BadFrame``."""

DEFAULT_REPLAY = 4096
"""Output lines each session keeps for watchers that lag or reconnect."""

DEFAULT_REPLAY_BYTES = 32 * 1024 * 1024
"""Bytes of output lines each session keeps (whichever bound is hit first)."""

MAX_QUEUED = 256
"""Commands one session (or one peer's session-less commands) may have waiting; past it → InvalidRequest."""

SHUTDOWN_GRACE = 10.0
"""Seconds ``shutdown`` waits for the last lines to be written before giving up on a stuck reader."""

SESSION_COMMANDS = (
    "prompt",
    "answer",
    "configure",
    "cancel",
    "rollback",
    "dequeue",
    "compact",
    "close",
    "info",
    "attach",
    "detach",
)
GLOBAL_COMMANDS = ("discover", "probe", "plan_usage", "open", "generate", "sessions")
COMMANDS = GLOBAL_COMMANDS + SESSION_COMMANDS
"""Every command name; ``attach``, ``detach`` and ``sessions`` are this server's additions."""


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def dumps(value: Any) -> str:
    """One wire line: compact JSON, UTF-8 kept (no ``\\u`` escapes), no trailing newline."""
    return _encode(value)  # one encoder for every line: json.dumps with options builds one per call


class BadFrame(InvalidRequest):
    """A line that is not a command (wire kind ``BadFrame``)."""


class UnknownSession(InvalidRequest):
    """A command named a session this server never opened (wire kind ``UnknownSession``)."""

    def __init__(self, session: str) -> None:
        super().__init__(f"no session {session!r}")
        self.session = session


class NotController(InvalidRequest):
    """``answer`` from a watcher that does not hold the session's control (WebSocket mode)."""


class ReplayGap(InvalidRequest):
    """``attach`` asked for events that already left the session's replay buffer."""


class Peer:
    """One client connection: replies and the lines of the sessions it watches go to ``send``.

    Writes are serialized (one at a time, in the order the hub produces them). When ``send``
    raises, the peer is marked ``broken`` (``error`` holds why) and drops every later write.
    ``joins_lines``: ``send`` may be given several lines joined by ``\\n`` (a byte stream such as
    stdio); a message transport (a WebSocket: one frame per line) leaves it false.
    """

    def __init__(
        self, send: Callable[[str], Awaitable[None]], name: str = "peer", *, joins_lines: bool = False
    ) -> None:
        self._send = send
        self._lock = anyio.Lock()
        self.name = name
        self.joins_lines = joins_lines
        self.error: BaseException | None = None
        self.broken = anyio.Event()
        self.inflight: set[int] = set()
        self.queued = 0

    async def write(self, value: Any) -> None:
        """Write one JSON value as a line."""
        await self.write_text(dumps(value))

    async def write_text(self, text: str) -> None:
        """Write one already encoded line."""
        if self.error is not None:
            return
        async with self._lock:
            if self.broken.is_set():  # failed while this write waited for the lock
                return
            try:
                await self._send(text)
            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream) as exc:
                self.fail(exc)

    async def write_lines(self, texts: list[str]) -> None:
        """Write already encoded lines in order: one ``send`` when the transport joins lines."""
        if self.joins_lines:
            await self.write_text("\n".join(texts))
            return
        for text in texts:
            await self.write_text(text)

    def fail(self, exc: BaseException) -> None:
        """Mark the connection gone (its writes are dropped from now on)."""
        if self.error is None:
            self.error = exc
            self.broken.set()

    def __repr__(self) -> str:
        return f"<Peer {self.name}>"


class Tee(Protocol):
    """What a host plugs into a ``Hub`` to see every session's events and prompts (``anyagent ui``
    records them into a store). ``record`` wraps a session's events; the hub reads the iterator it
    yields instead (in the session's pump task, so the context is entered and left there)."""

    def record(
        self, session: Session, events: Events, options: SessionOptions
    ) -> AbstractAsyncContextManager[AsyncIterator[Event]]:
        """The events the hub forwards, read in place of ``events`` while the context is open."""
        ...

    def prompted(self, session: Session, text: str, delivery: Delivery) -> None:
        """A ``prompt`` command was delivered to ``session``."""
        ...


_BATCH_BYTES = 1 << 20  # one write holds at most about this many characters of lines


@attrs.define
class _Entry:
    seq: int
    text: str
    size: int
    terminal: bool = False


@attrs.define(eq=False)
class _Watcher:
    peer: Peer
    cursor: int
    lagged: bool = False
    started: anyio.Event = attrs.field(factory=anyio.Event)
    scope: anyio.CancelScope = attrs.field(factory=anyio.CancelScope)
    finished: anyio.Event = attrs.field(factory=anyio.Event)


class HubSession:
    """One open session: its handles, its output buffer and who watches it."""

    def __init__(
        self,
        hub: Hub,
        session: Session,
        events: Events | None,
        controller: Peer | None,
        options: SessionOptions | None = None,
        source: AbstractAsyncContextManager[AsyncIterator[Event]] | None = None,
    ) -> None:
        self.hub = hub
        self.options = options
        self.source = source
        self.id = session.id
        self.session = session
        self.events = events
        self.ring: deque[_Entry] = deque()
        self.base = 0  # absolute index of ring[0]
        self.ring_bytes = 0
        self.evicted_seq = 0  # the sequence of the last entry that left the ring
        self.last_seq = 0
        self.done = anyio.Event()  # `closed` is in the ring
        self.watchers: dict[Peer, _Watcher] = {}
        self.controller: Peer | None = controller
        self._changed = anyio.Event()
        self._waiting = 0
        self.lag_error: SessionClosed | None = None
        self.queue_send, self.queue_receive = anyio.create_memory_object_stream[tuple[Peer, int, str, dict[str, Any]]](
            MAX_QUEUED
        )

    @property
    def end(self) -> int:
        return self.base + len(self.ring)

    # -- the output buffer

    def _notify(self) -> None:
        if self._waiting:
            self._changed.set()
            self._changed = anyio.Event()

    async def _wait(self, changed: anyio.Event) -> None:
        self._waiting += 1
        try:
            await changed.wait()
        finally:
            self._waiting -= 1

    def append(self, seq: int, text: str, *, terminal: bool = False) -> None:
        """Buffer one output line. When the buffer is full and a watcher has not yet written its
        oldest line, that watcher lags: the session is closed with the lag error (once) and the
        lagging watchers skip to the terminal lines. Memory stays bounded either way."""
        if self.lag_error is not None and not terminal:
            return  # the session is closing because a reader lagged; its remaining events go nowhere
        size = len(text)
        self.ring.append(_Entry(seq, text, size, terminal))
        self.ring_bytes += size
        hub = self.hub
        while len(self.ring) > 1 and (len(self.ring) > hub.replay or self.ring_bytes > hub.replay_bytes):
            if not terminal:
                for watcher in self.watchers.values():
                    if watcher.cursor <= self.base and not watcher.lagged:
                        watcher.lagged = True
                        self._lagged(watcher)
            elif any(w.cursor <= self.base for w in self.watchers.values()):
                break  # the terminal lines may overfill the buffer rather than drop them unsent
            old = self.ring.popleft()
            self.base += 1
            self.ring_bytes -= old.size
            self.evicted_seq = old.seq
        self._notify()

    def _lagged(self, watcher: _Watcher) -> None:
        if self.lag_error is None:
            self.lag_error = SessionClosed(
                f"the client fell {self.hub.replay} lines behind reading {self.id}; the session was closed"
            )
            self.hub._spawn(self.session.close)

    async def pump(self) -> None:
        """Move the session's events into the buffer; then its error (if any) and ``closed``."""
        error: BaseException | None = None
        tee = self.hub.tee
        try:
            if self.source is not None:  # adopted: the host records it its own way
                try:
                    async with self.source as stream:
                        await self._forward(stream)
                finally:
                    with anyio.CancelScope(shield=True):
                        await self.session.close()  # also when entering the source failed
            elif tee is None or self.options is None:
                assert self.events is not None
                await self._forward(self.events)
            else:
                assert self.events is not None
                async with tee.record(self.session, self.events, self.options) as stream:
                    await self._forward(stream)
        except AgentError as exc:
            error = exc
        except Exception as exc:  # an encoding bug must still end the session properly
            error = ProtocolFailed(f"the server could not forward an event: {exc!r}")
            with anyio.CancelScope(shield=True):
                await self.session.close()
        if self.lag_error is not None:
            error = self.lag_error
        if error is not None:
            body = wire.encode_error(error)
            if error is self.lag_error:
                body["lagged"] = True
            self.append(self.last_seq + 1, dumps({"session": self.id, "error": body}), terminal=True)
        self.append(self.last_seq + 2, dumps({"closed": self.id}), terminal=True)
        self.done.set()
        self._notify()

    async def _forward(self, events: AsyncIterator[Event]) -> None:
        async for event in events:
            self.last_seq = event.sequence
            self.append(event.sequence, wire.event_line(event, dumps))

    # -- watchers

    def cursor_after(self, after: int | None) -> int:
        """Where a watcher that saw up to sequence ``after`` starts (``ReplayGap`` when that is gone)."""
        if after is None:
            return self.base
        if self.evicted_seq > after:
            raise ReplayGap(
                f"events after sequence {after} of {self.id} are no longer buffered"
                f" (the oldest kept is {self.ring[0].seq if self.ring else self.evicted_seq + 1})"
            )
        for index, entry in enumerate(self.ring):
            if entry.seq > after:
                return self.base + index
        return self.end

    def attach(self, peer: Peer, cursor: int | None = None) -> anyio.Event:
        """Register ``peer`` as a watcher from ``cursor`` (default: every line kept). Its lines are
        held for it from now on; writing starts once the returned event is set (after the reply)."""
        if peer in self.watchers:
            raise InvalidRequest(f"this connection already watches {self.id}")
        watcher = _Watcher(peer, self.base if cursor is None else cursor)
        self.watchers[peer] = watcher
        if self.controller is None:
            self.controller = peer
        self.hub._spawn(self._watch, watcher)
        return watcher.started

    def detach(self, peer: Peer) -> None:
        watcher = self.watchers.pop(peer, None)
        if watcher is not None:
            watcher.scope.cancel()
        if self.controller is peer:
            self.controller = next(iter(self.watchers), None)
        self._notify()

    async def _watch(self, watcher: _Watcher) -> None:
        peer = watcher.peer
        try:
            with watcher.scope:
                await watcher.started.wait()
                while peer.error is None:
                    changed = self._changed
                    if watcher.cursor < self.base:
                        watcher.cursor = self.base
                    if watcher.cursor < self.end:
                        # every line ready now, in one write (bounded): one syscall per wakeup, not per line
                        batch: list[str] = []
                        size = 0
                        ring, base, end = self.ring, self.base, self.end
                        cursor = watcher.cursor
                        while cursor < end and size < _BATCH_BYTES:
                            entry = ring[cursor - base]
                            cursor += 1
                            if watcher.lagged and not entry.terminal:
                                continue
                            batch.append(entry.text)
                            size += entry.size
                        if batch:
                            await peer.write_lines(batch)
                        watcher.cursor = cursor
                    elif self.done.is_set():
                        break
                    else:
                        await self._wait(changed)
        finally:
            watcher.finished.set()
            if self.watchers.get(peer) is watcher and peer.error is not None:
                self.detach(peer)

    # -- commands, in order

    async def serve_commands(self) -> None:
        async with self.queue_receive:
            async for peer, cmd_id, cmd, frame in self.queue_receive:
                peer.queued -= 1
                await self.hub._run_command(peer, cmd_id, self._command, cmd, frame, peer)

    async def _command(self, cmd: str, frame: dict[str, Any], peer: Peer) -> Any:
        s = self.session
        path = "$"
        if cmd == "prompt":
            value = Input.text(_field(frame, "text", str))
            for i, item in enumerate(_field(frame, "attachments", list, [])):
                value = value.attach(wire._str(item, f"{path}.attachments[{i}]"))
            delivery = await s.prompt(value)
            if self.hub.tee is not None:
                self.hub.tee.prompted(s, value.content, delivery)
            return wire.encode_delivery(delivery)
        if cmd == "answer":
            request = _field(frame, "request", str)
            answer = wire.decode_answer(frame.get("answer"), "$.answer")
            if self.controller is not None and self.controller is not peer:
                raise NotController(f"another connection holds control of {self.id}; attach with control to take it")
            await s.answer(request, answer)
            return None
        if cmd == "configure":
            option = _field(frame, "option", str)
            await s.configure(option, wire.decode_config_value(frame.get("value"), "$.value"))
            return None
        if cmd == "cancel":
            await s.cancel(clear_queue=_field(frame, "clear_queue", bool, False))
            return None
        if cmd == "rollback":
            turns = _field(frame, "turns", int)
            if turns < 1:
                raise WireError("expected an integer >= 1", "$.turns")
            await s.rollback(turns, wire.decode_rollback_scope(frame.get("scope", "Conversation"), "$.scope"))
            return None
        if cmd == "dequeue":
            await s.dequeue(_field(frame, "prompt", str))
            return None
        if cmd == "compact":
            await s.compact()
            return None
        if cmd == "close":
            await s.close()
            return None
        if cmd == "info":
            return wire.encode_session_info(s.info())
        if cmd == "attach":
            after = frame.get("after")
            if after is not None:
                after = wire._int(after, "$.after")
            control = _field(frame, "control", bool, False)
            if peer in self.watchers:
                raise InvalidRequest(f"this connection already watches {self.id}")
            start = self.attach(peer, self.cursor_after(after))
            if control:
                self.controller = peer
            try:
                await peer.write({"id": frame["id"], "ok": wire.encode_session_info(s.info())})
            finally:
                start.set()
            return _ALREADY_REPLIED
        if cmd == "detach":
            self.detach(peer)
            return None
        raise AssertionError(cmd)  # pragma: no cover


_ALREADY_REPLIED = object()
_MISSING = object()


def _field(frame: dict[str, Any], name: str, kind: type, default: Any = _MISSING) -> Any:
    value = frame.get(name, _MISSING)
    if value is _MISSING or (value is None and default is not _MISSING):
        if default is _MISSING:
            raise WireError(f"missing field {name!r}", f"$.{name}")
        return default
    if kind is int:
        return wire._int(value, f"$.{name}")
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise WireError(f"expected {kind.__name__}, got {wire._jtype(value)}", f"$.{name}")
    return value


class Hub:
    """The sessions and the command dispatch; ``async with Hub(runtime) as hub``.

    ``runtime`` must already be entered; the hub never closes it (but closes every session it
    opened when it exits). ``tee`` sees every session's events and prompts (see ``Tee``).
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        replay: int = DEFAULT_REPLAY,
        replay_bytes: int = DEFAULT_REPLAY_BYTES,
        max_line: int = DEFAULT_MAX_LINE,
        tee: Tee | None = None,
    ) -> None:
        self.runtime = runtime
        self.tee = tee
        self.replay = max(1, replay)
        self.replay_bytes = max(1, replay_bytes)
        self.max_line = max_line
        self.sessions: dict[str, HubSession] = {}
        self._report: DiscoveryReport | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._opening: set[anyio.CancelScope] = set()
        self._opens_done = anyio.Event()
        self._opens = 0
        self._scopes: set[anyio.CancelScope] = set()
        self._stopping = False
        self.closing = False

    async def __aenter__(self) -> Hub:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._tg is not None
        with anyio.CancelScope(shield=True):
            await self.close_all()
            # each background task ends in its own scope, so the group exits without being cancelled
            self._stopping = True
            for scope in list(self._scopes):
                scope.cancel()
        await self._tg.__aexit__(None, None, None)

    def hello(self) -> dict[str, Any]:
        """The first line every connection gets."""
        from . import __version__

        return {"hello": {"protocol": PROTOCOL, "anyagent": anyagent.__version__, "server": f"python/{__version__}"}}

    def _spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        assert self._tg is not None, "the Hub is not entered"
        self._tg.start_soon(self._guarded, fn, args)

    async def _guarded(self, fn: Callable[..., Coroutine[Any, Any, Any]], args: tuple[Any, ...]) -> None:
        if self._stopping:
            return
        scope = anyio.CancelScope()
        self._scopes.add(scope)
        try:
            with scope:
                await fn(*args)
        except Exception as exc:  # a bug in one task must not take every session down
            print(f"anyagent serve: internal error in {getattr(fn, '__name__', fn)}: {exc!r}", file=sys.stderr)
        finally:
            self._scopes.discard(scope)

    # -- receiving

    async def receive(self, peer: Peer, line: str | bytes | None, *, too_long: int | None = None) -> None:
        """Handle one received line (``too_long``: its size, when it was dropped for the bound)."""
        if too_long is not None:
            await _bad_frame(peer, None, f"line longer than {self.max_line} bytes ({too_long} bytes); skipped")
            return
        assert line is not None
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                await _bad_frame(peer, None, f"not UTF-8: {exc}")
                return
        if not line.strip():
            return
        try:
            frame = json.loads(line)
        except (ValueError, RecursionError) as exc:
            await _bad_frame(peer, None, f"not JSON: {exc}")
            return
        if not isinstance(frame, dict):
            await _bad_frame(peer, None, f"a command is a JSON object, not {wire._jtype(frame)}")
            return
        cmd_id = frame.get("id")
        if isinstance(cmd_id, bool) or not isinstance(cmd_id, int) or cmd_id < 0 or cmd_id >= 2**64:
            await _bad_frame(peer, None, "a command needs an integer id >= 0")
            return
        cmd = frame.get("cmd")
        if not isinstance(cmd, str) or cmd not in COMMANDS:
            await _bad_frame(peer, cmd_id, f"unknown command {cmd!r}" if isinstance(cmd, str) else "no 'cmd' string")
            return
        if cmd_id in peer.inflight:
            await _bad_frame(peer, cmd_id, f"id {cmd_id} is already in flight")
            return
        if cmd in SESSION_COMMANDS:
            name = frame.get("session")
            if not isinstance(name, str):
                await _bad_frame(peer, cmd_id, "missing field 'session' (a string)")
                return
            hs = self.sessions.get(name)
            if hs is None:
                error = UnknownSession(name)
                await peer.write({"id": cmd_id, "error": wire.encode_error(error, "UnknownSession", session=name)})
                return
            peer.inflight.add(cmd_id)
            try:
                hs.queue_send.send_nowait((peer, cmd_id, cmd, frame))
            except anyio.WouldBlock:
                peer.inflight.discard(cmd_id)
                await self._reply_error(
                    peer, cmd_id, InvalidRequest(f"more than {MAX_QUEUED} commands wait for {name}")
                )
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                peer.inflight.discard(cmd_id)
                await self._reply_error(peer, cmd_id, SessionClosed(f"session {name} is closed"))
            else:
                peer.queued += 1
            return
        if peer.queued >= MAX_QUEUED:
            await self._reply_error(peer, cmd_id, InvalidRequest(f"more than {MAX_QUEUED} commands in flight"))
            return
        peer.inflight.add(cmd_id)
        peer.queued += 1
        self._spawn(self._global, peer, cmd_id, cmd, frame)

    async def _global(self, peer: Peer, cmd_id: int, cmd: str, frame: dict[str, Any]) -> None:
        peer.queued -= 1
        if cmd == "open":
            await self._open(peer, cmd_id, frame)
            return
        await self._run_command(peer, cmd_id, self._global_command, cmd, frame)

    async def _run_command(
        self, peer: Peer, cmd_id: int, fn: Callable[..., Awaitable[Any]], cmd: str, frame: dict[str, Any], *args: Any
    ) -> None:
        try:
            result = await fn(cmd, frame, *args)
        except WireError as exc:
            await _bad_frame(peer, cmd_id, exc.message)
        except AgentError as exc:
            await self._reply_error(peer, cmd_id, exc)
        except Exception as exc:
            await self._reply_error(peer, cmd_id, ProtocolFailed(f"{cmd} failed in the server: {exc!r}"))
        else:
            if result is not _ALREADY_REPLIED:
                await peer.write({"id": cmd_id, "ok": result})
        finally:
            peer.inflight.discard(cmd_id)

    async def _reply_error(self, peer: Peer, cmd_id: int | None, exc: BaseException) -> None:
        kind = type(exc).__name__ if isinstance(exc, (BadFrame, UnknownSession, NotController, ReplayGap)) else None
        extra: dict[str, Any] = {}
        if isinstance(exc, UnknownSession):
            extra["session"] = exc.session
        await peer.write({"id": cmd_id, "error": wire.encode_error(exc, kind, **extra)})

    async def discover(self) -> DiscoveryReport:
        """Discover the installed agents (the runtime's report, kept as the hub's latest) and return the report."""
        self._report = await self.runtime.discover()
        return self._report

    async def _agent(self, ref: Any) -> AgentInstallation:
        if isinstance(ref, dict) and set(ref) == {"acp"}:
            spec = wire._obj(ref["acp"], "$.agent.acp")
            return AgentInstallation.acp(
                wire._str(spec.get("name"), "$.agent.acp.name"),
                wire._str(spec.get("path"), "$.agent.acp.path"),
                wire._strs(spec.get("args", []), "$.agent.acp.args"),
            )
        if not isinstance(ref, str):
            raise WireError('expected an agent id or {"acp": {...}}', "$.agent")
        report = self._report or await self.discover()
        if not any(a.id == ref for a in report.agents):
            report = await self.discover()
        return report.require(ref)

    def _options(self, frame: dict[str, Any]) -> SessionOptions:
        options = SessionOptions.in_dir(_field(frame, "dir", str))
        resume = _field(frame, "resume", str, None)
        if resume is not None:
            options = options.resume(resume)
        fork = _field(frame, "fork", str, None)
        if fork is not None:
            options = options.fork_from(fork, at=_field(frame, "fork_at", str, None))
        mode = frame.get("permission_mode")
        if mode is not None:
            options = options.permission_mode(wire.decode_permission_mode(mode, "$.permission_mode"))
        for i, server in enumerate(_field(frame, "mcp_servers", list, [])):
            options = options.mcp_server(wire.decode_mcp_server(server, f"$.mcp_servers[{i}]"))
        for key, value in _field(frame, "configure", dict, {}).items():
            options = options.configure(key, wire.decode_config_value(value, f"$.configure.{key}"))
        return options

    async def _global_command(self, cmd: str, frame: dict[str, Any]) -> Any:
        if cmd == "discover":
            return wire.encode_discovery(await self.discover())
        if cmd == "probe":
            return wire.encode_details(await self.runtime.probe(await self._agent(frame.get("agent"))))
        if cmd == "plan_usage":
            return wire.encode_plan_usage(await self.runtime.plan_usage(await self._agent(frame.get("agent"))))
        if cmd == "generate":
            prompt = _field(frame, "prompt", str)
            agent = await self._agent(frame.get("agent"))
            return await self.runtime.generate(agent, self._options(frame), prompt)
        if cmd == "sessions":
            return [
                {"id": hs.id, "closed": hs.done.is_set(), "watchers": len(hs.watchers), "last_sequence": hs.last_seq}
                for hs in self.sessions.values()
            ]
        raise AssertionError(cmd)  # pragma: no cover

    async def _open(self, peer: Peer, cmd_id: int, frame: dict[str, Any]) -> None:
        try:
            if self.closing:
                raise SessionClosed("the server is shutting down")
            agent = await self._agent(frame.get("agent"))
            options = self._options(frame)
            self._opens += 1
            try:
                with anyio.CancelScope() as scope:
                    self._opening.add(scope)
                    if self._closing_now():
                        scope.cancel()
                    session, events = await self.runtime.open(agent, options)
            finally:
                self._opening.discard(scope)
                self._opens -= 1
                if self._opens == 0:
                    self._opens_done.set()
                    self._opens_done = anyio.Event()
            if scope.cancelled_caught:
                raise SessionClosed("the server shut down while this session was opening; it was closed")
            hs = HubSession(self, session, events, peer, options)
            self.sessions[hs.id] = hs
            self._spawn(hs.pump)
            self._spawn(hs.serve_commands)
            start = hs.attach(peer)
            try:
                await peer.write({"id": cmd_id, "ok": wire.encode_session_info(session.info())})
            finally:
                start.set()  # the reply is written before any line of the session
        except WireError as exc:
            await _bad_frame(peer, cmd_id, exc.message)
        except AgentError as exc:
            await self._reply_error(peer, cmd_id, exc)
        except Exception as exc:
            await self._reply_error(peer, cmd_id, ProtocolFailed(f"open failed in the server: {exc!r}"))
        finally:
            peer.inflight.discard(cmd_id)

    async def installation(self, agent_id: str) -> AgentInstallation:
        """The installed agent ``agent_id`` (the hub's last discovery, run again when it lacks it);
        ``NotInstalled`` with the install hint otherwise."""
        return await self._agent(agent_id)

    def adopt(self, session: Session, source: AbstractAsyncContextManager[AsyncIterator[Event]]) -> None:
        """Serve a session the host opened itself (``anyagent ui`` reopens a stored thread through the
        store): listed, watched and commanded like one ``open`` made, its lines those of the iterator
        ``source`` yields (entered in the session's pump task, in place of the ``tee``; the session is
        closed once it ends). No peer watches it yet; the first to ``attach`` holds its control.
        ``SessionClosed`` when the hub is shutting down (the session is then the caller's to close)."""
        if self.closing:
            raise SessionClosed("the server is shutting down")
        if session.id in self.sessions:
            raise InvalidRequest(f"session {session.id} is already served")
        hs = HubSession(self, session, None, None, source=source)
        self.sessions[hs.id] = hs
        self._spawn(hs.pump)
        self._spawn(hs.serve_commands)

    def _closing_now(self) -> bool:
        return self.closing

    # -- ending

    def detach(self, peer: Peer) -> None:
        """The connection ``peer`` went away: stop writing to it; its sessions stay open."""
        peer.fail(peer.error or anyio.ClosedResourceError())
        for hs in list(self.sessions.values()):
            hs.detach(peer)

    async def close_all(self) -> None:
        """Close every session (in-flight opens are abandoned and closed) and wait for their ``closed``."""
        self.closing = True
        for scope in list(self._opening):
            scope.cancel()
        while self._opens:
            await self._opens_done.wait()
        async with anyio.create_task_group() as tg:
            for hs in list(self.sessions.values()):
                if not hs.done.is_set():
                    tg.start_soon(hs.session.close)
        with anyio.move_on_after(SHUTDOWN_GRACE):
            for hs in list(self.sessions.values()):
                await hs.done.wait()
                hs.queue_send.close()

    async def shutdown(self, peer: Peer) -> None:
        """stdin ended: close every session, write each ``closed`` to ``peer``, then return."""
        await self.close_all()
        with anyio.move_on_after(SHUTDOWN_GRACE):
            while peer.inflight and peer.error is None:  # commands read before EOF are still answered
                await anyio.sleep(0.01)
            for hs in list(self.sessions.values()):
                watcher = hs.watchers.get(peer)
                if watcher is not None:
                    await watcher.finished.wait()


async def _bad_frame(peer: Peer, cmd_id: int | None, message: str) -> None:
    await peer.write({"id": cmd_id, "error": {"kind": "BadFrame", "message": message, "detail": message}})
