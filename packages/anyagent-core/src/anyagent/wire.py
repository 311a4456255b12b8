"""Wire plumbing shared by adapters (``anyagent.wire``): JSON lines, JSON-RPC 2.0, HTTP + SSE, and
the wire recorder.

JSON lines over an agent's stdio::

    lines = JsonLines(proc)                     # proc from anyagent.process.spawn
    await lines.send({"type": "user", ...})     # one compact line, under a lock
    async for frame in lines:                   # dict per stdout line; BadLine for anything else
        if isinstance(frame, BadLine):
            await link.diagnostic(f"agent wrote {frame.reason}", raw=frame.text)

JSON-RPC 2.0 on top (codex app-server, ACP)::

    peer = JsonRpcPeer(lines, accepts={"session/request_permission"})
    result = await peer.request("initialize", {...})     # JsonRpcError on an error response
    async for message in peer:                           # Notification | IncomingRequest | Stray | BadLine
        ...                                              # IncomingRequest: await message.reply(result)

HTTP agents (opencode serve)::

    async with HttpWire("http://127.0.0.1:4096", auth=("opencode", secret), recorder=rec) as http:
        reply = await http.request("POST", "/session", json={})
        async with http.events("/event") as events:
            async for event in events:                   # SseEvent: data as the server sent it
                ...

Nothing here starts a task: reading happens in whichever task awaits, so a wire opened in
``Adapter.connect`` keeps working in ``Driver.run`` (no task group outlives its task). Reads are
cancel-safe: a cancelled ``receive``/``request`` never loses a frame.
"""

from __future__ import annotations

import collections
import enum
import itertools
import json
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, Union

import anyio
import anyio.lowlevel
import attrs

from . import _log
from ._codec import _decode as _fast_decode
from ._codec import _dumps, _loads, _short
from ._frozen import _slot_setters
from .errors import AgentError, InvalidRequest, ProcessExited, ProtocolFailed
from .process import AgentProcess
from .recording import WireRecorder
from .types import JSON

if TYPE_CHECKING:
    from .http import HttpReply, HttpWire, SseEvent, SseStream

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "BadLine",
    "Correlator",
    "Frame",
    "HttpReply",
    "HttpWire",
    "IncomingRequest",
    "JsonLines",
    "JsonRpcCode",
    "JsonRpcError",
    "JsonRpcPeer",
    "Message",
    "Notification",
    "Response",
    "SseEvent",
    "SseStream",
    "Stray",
    "WireRecorder",
]

Frame = dict[str, Any]
"""One parsed JSON object from the wire."""

_READ_CHUNK = 1024 * 1024
_TEXT_CAP = 4096  # characters of a bad line kept in ``BadLine.text``
_STDIN_DEATH_WAIT = 0.5  # seconds to let a dying agent finish dying so its status is known


# ---------------------------------------------------------------------------------------------
# JSON lines


@attrs.frozen
class BadLine:
    """A stdout line that is not a JSON object: its ``text`` (invalid UTF-8 replaced, cut at 4 KiB),
    why it was rejected, and its length in bytes. Report it (``Diagnostic``), never fail on it."""

    text: str
    reason: str
    size: int


@attrs.frozen
class _TooLong:
    head: bytes
    size: int


class JsonLines:
    """JSON objects, one per line, over an ``AgentProcess``'s stdout and stdin.

    ``receive()`` returns the next ``Frame`` (a dict) or a ``BadLine`` (not JSON, not an object,
    or longer than ``process.max_line`` — that line is skipped without being buffered) and raises
    ``anyio.EndOfStream`` when stdout ends; ``async for`` stops there. Blank lines are skipped.
    One task reads at a time. ``send(frame)`` writes one compact line under a lock and raises
    ``ProcessExited`` (or ``ProtocolFailed``) when the agent no longer reads. Both directions go to
    ``process.recorder`` when there is one. Reading a new chunk is a checkpoint; handing out a line
    already buffered is not (that is what makes it as fast as a bare ``readline`` loop).

    ``batches`` (off by default; settable later): a line holding a JSON array of objects (a
    JSON-RPC 2.0 batch, which ACP v2 allows on stdio) is handed out as its objects, in order, each
    as if it had its own line (recorded so too); an empty array or one holding a non-object stays
    a bad line.
    """

    def __init__(self, process: AgentProcess, *, batches: bool = False) -> None:
        self.process = process
        self.batches = batches
        self._stdout = process.stdout
        self._max = process.max_line
        self._recorder = process.recorder
        self._ready: list[bytes | _TooLong] = []
        self._next = 0
        self._partial: list[bytes] = []
        self._partial_len = 0
        self._skipped = -1  # ≥ 0 while dropping an over-long line
        self._head = b""
        self._eof = False
        self._stamp = b',"_t":0.000}\n'
        self._write_lock = anyio.Lock()
        self._log: Any = None  # the ``anyagent.wire`` logger while it logs DEBUG (see ``_log``)

    # -- reading

    async def receive(self) -> Frame | BadLine:
        """The next frame or bad line; ``anyio.EndOfStream`` at the end of stdout."""
        while True:
            line = self._ready[self._next] if self._next < len(self._ready) else await self._fill()
            self._next += 1
            value = self._parse(line)
            if value is not None:
                return value

    def receive_nowait(self) -> Frame | BadLine:
        """The next frame or bad line already read from the pipe, without waiting (no
        checkpoint); ``anyio.WouldBlock`` when the next one needs a read."""
        ready = self._ready
        while self._next < len(ready):
            line = ready[self._next]
            self._next += 1
            if _fast_decode is not None and self._recorder is None and self._log is None and type(line) is bytes:
                # the flood's path, inlined: one decode, nothing to record or log
                try:
                    value = _fast_decode(line)
                except (ValueError, RecursionError):
                    pass
                else:
                    if type(value) is dict:
                        return value
            value = self._parse(line)
            if value is not None:
                return value
        raise anyio.WouldBlock

    def _parse(self, line: bytes | _TooLong) -> Frame | BadLine | None:
        """One line as a frame or a bad line; None for a blank line."""
        if type(line) is _TooLong:
            return self._bad(line.head, f"line longer than {self._max} bytes", line.size)
        assert type(line) is bytes
        try:
            # msgspec straight away; ``_loads`` (the standard codec's reading) for what it refuses
            value = _fast_decode(line) if _fast_decode is not None else _loads(line)
        except ValueError:
            try:
                value = _loads(line)
            except (ValueError, RecursionError) as exc:
                return self._not_json(line, exc)
        except RecursionError as exc:
            return self._not_json(line, exc)
        if type(value) is dict:
            if self._recorder is not None:
                self._recorder._received_line(line, value, self._stamp)
                if self._next == len(self._ready):
                    self._recorder.flush()
            if self._log is not None:
                self._log.debug("pid %s -> %s", self.process.pid, _log.frame_text(value))
            return value
        if type(value) is list and self.batches and value and all(type(item) is dict for item in value):
            # a batch: its objects become lines of their own, read next (the flood's path never
            # sees one)
            items: list[bytes | _TooLong] = [json.dumps(item, separators=(",", ":")).encode() for item in value]
            self._ready[self._next : self._next] = items[1:]
            return self._parse(items[0])
        return self._bad(line, f"not a JSON object ({type(value).__name__})", len(line))

    def __aiter__(self) -> JsonLines:
        return self

    async def __anext__(self) -> Frame | BadLine:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def _fill(self) -> bytes | _TooLong:
        """Read chunks until at least one line is ready; return it (``_next`` points at it)."""
        if self._recorder is not None:
            self._recorder.flush()  # about to wait: the recording is complete up to here
        self._log = _log.enabled("anyagent.wire", _log.DEBUG)  # asked once per read, not per frame
        while True:
            if self._eof:
                raise anyio.EndOfStream
            try:
                chunk = await self._stdout.receive(_READ_CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._eof = True
                self._ready, self._next = self._flush(), 0
            else:
                self._ready, self._next = self._split(chunk), 0
                if self._recorder is not None:
                    self._stamp = self._recorder._stamp()
            if self._ready:
                return self._ready[0]

    def _split(self, chunk: bytes) -> list[bytes | _TooLong]:
        """Cut a chunk into complete lines, carrying the unfinished tail to the next chunk."""
        pieces = chunk.split(b"\n")
        tail = pieces.pop()
        if not pieces:  # no newline in this chunk
            self._grow(tail)
            return []
        lines: list[bytes | _TooLong] = list(pieces)
        first = pieces[0]
        if self._skipped >= 0:
            lines[0] = _TooLong(self._head, self._skipped + len(first))
            self._skipped = -1
        elif self._partial:
            first = lines[0] = b"".join([*self._partial, first])
            self._partial, self._partial_len = [], 0
        if len(chunk) > self._max or len(first) > self._max:
            lines = [self._cap(line) for line in lines]
        self._grow(tail)
        return lines

    def _grow(self, data: bytes) -> None:
        """Keep an unfinished line, switching to skipping once it passes the bound."""
        if not data:
            return
        if self._skipped >= 0:
            self._skipped += len(data)
            return
        self._partial.append(data)
        self._partial_len += len(data)
        if self._partial_len > self._max:
            head = bytearray()
            for piece in self._partial:  # never join the whole over-long line
                head += piece[: _TEXT_CAP - len(head)]
                if len(head) >= _TEXT_CAP:
                    break
            self._head = bytes(head)
            self._skipped = self._partial_len
            self._partial, self._partial_len = [], 0

    def _cap(self, part: bytes | _TooLong) -> bytes | _TooLong:
        if type(part) is bytes and len(part) > self._max:
            return _TooLong(part[:_TEXT_CAP], len(part))
        return part

    def _flush(self) -> list[bytes | _TooLong]:
        """At EOF: the last line even without its newline."""
        if self._skipped >= 0:
            last = _TooLong(self._head, self._skipped)
            self._skipped = -1
            return [last]
        if self._partial:
            line = b"".join(self._partial)
            self._partial, self._partial_len = [], 0
            return [line]
        return []

    def _not_json(self, line: bytes, exc: BaseException) -> BadLine | None:
        if not line.strip():
            return None
        return self._bad(line, f"not JSON ({_short(exc)})", len(line))

    def _bad(self, line: bytes, reason: str, size: int) -> BadLine:
        text = line.decode("utf-8", "replace").rstrip("\r")
        if self._recorder is not None:
            self._recorder.received_raw(text, size if size > len(line) else None)
        cut = text if len(text) <= _TEXT_CAP else text[:_TEXT_CAP] + "…"
        return BadLine(cut, reason, size)

    # -- writing

    async def send(self, frame: Mapping[str, Any]) -> None:
        """Write ``frame`` as one compact JSON line. ``ProcessExited``/``ProtocolFailed`` if the
        agent's stdin is gone; a frame is never interleaved with another."""
        payload = _dumps(frame if type(frame) is dict else dict(frame))
        log = _log.enabled("anyagent.wire", _log.DEBUG)
        if log is not None:
            log.debug("pid %s <- %s", self.process.pid, _log.frame_text(frame))
        async with self._write_lock:
            if self._recorder is not None:
                self._recorder._sent_line(payload)
            try:
                await self.process.stdin.send(payload + b"\n")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                raise await self._stdin_error() from exc

    async def _stdin_error(self) -> AgentError:
        # exit_error joins the stderr drain: the tail is whole, not what the drain had read when
        # the exit was seen (under load, often nothing)
        error = await self.process.exit_error(_STDIN_DEATH_WAIT)
        if isinstance(error, ProcessExited):
            return error
        return ProtocolFailed("the agent's stdin is closed")


# ---------------------------------------------------------------------------------------------
# JSON-RPC 2.0


class JsonRpcCode(enum.IntEnum):
    """The JSON-RPC 2.0 error codes every wire shares (an ``int``, so compare or send it as is).
    Codes a protocol adds on top (ACP's ``-32000`` "auth required") live with its adapter."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603


PARSE_ERROR = JsonRpcCode.PARSE_ERROR
"""JSON-RPC -32700: the message was not JSON (`JsonRpcCode.PARSE_ERROR`)."""
INVALID_REQUEST = JsonRpcCode.INVALID_REQUEST
"""JSON-RPC -32600: the JSON was not a request (`JsonRpcCode.INVALID_REQUEST`)."""
METHOD_NOT_FOUND = JsonRpcCode.METHOD_NOT_FOUND
"""JSON-RPC -32601: no such method (`JsonRpcCode.METHOD_NOT_FOUND`)."""
INVALID_PARAMS = JsonRpcCode.INVALID_PARAMS
"""JSON-RPC -32602: the params did not fit the method (`JsonRpcCode.INVALID_PARAMS`)."""
INTERNAL_ERROR = JsonRpcCode.INTERNAL_ERROR
"""JSON-RPC -32603: the handler failed (`JsonRpcCode.INTERNAL_ERROR`)."""


class JsonRpcError(ProtocolFailed):
    """An error response: ``code``, ``message`` and ``data`` as the agent sent them; ``method`` is
    the request it answered. A ``ProtocolFailed``, so an uncaught one is still a typed error."""

    def __init__(self, code: int, message: str, data: JSON = None, method: str | None = None) -> None:
        super().__init__(f"{method or 'request'} failed: {message} ({code})")
        self.code = code
        self.message = message
        self.data = data
        self.method = method


@attrs.frozen
class Notification:
    """A notification from the agent."""

    method: str
    params: JSON = None


_notification_method, _notification_params = _slot_setters(Notification, "method", "params")


def _notification_init(self: Notification, method: str, params: JSON = None) -> None:  # one per message
    _notification_method(self, method)
    _notification_params(self, params)


Notification.__init__ = _notification_init  # type: ignore[method-assign]
_new_notification = object.__new__


@attrs.define(eq=False)
class IncomingRequest:
    """A request from the agent for a method the peer ``accepts``: answer it exactly once with
    ``reply(result)`` or ``reply_error(code, message, data)``."""

    id: int | str | float | None
    method: str
    params: JSON
    _peer: JsonRpcPeer = attrs.field(repr=False, alias="peer")
    answered: bool = False

    async def reply(self, result: JSON) -> None:
        """Answer with ``result``."""
        await self._peer._answer(self, {"result": result})

    async def reply_error(self, code: int, message: str, data: JSON = None) -> None:
        """Answer with an error object."""
        error: dict[str, JSON] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self._peer._answer(self, {"error": error})


@attrs.frozen
class Stray:
    """A JSON frame that fits no open exchange: a response to an unknown id, a malformed message,
    or a request the peer does not accept (already answered ``-32601``). Report it."""

    frame: Frame
    reason: str


@attrs.frozen
class Response:
    """The answer to a request sent with ``JsonRpcPeer.send_request``, delivered by ``receive``
    in wire order (after every frame the agent wrote before it). ``error`` is set for an error
    response, else ``result`` holds the result."""

    id: int
    method: str
    result: JSON = None
    error: JsonRpcError | None = None

    @property
    def ok(self) -> bool:
        """True for a result, False for an error response."""
        return self.error is None


Message = Union[Notification, IncomingRequest, Response, Stray, BadLine]
"""What ``JsonRpcPeer.receive`` yields."""


@attrs.define
class _Pending:
    method: str
    in_order: bool = False
    done: bool = False
    result: JSON = None
    error: JsonRpcError | None = None


class JsonRpcPeer:
    """A JSON-RPC 2.0 peer over ``JsonLines``.

    ``request(method, params)`` sends a request (ids 1, 2, …) and returns its result, raising
    ``JsonRpcError`` for an error response and ``ProcessExited``/``ProtocolFailed`` if the wire
    ends first. ``send_request(method, params)`` sends a request without waiting: its answer comes
    out of ``receive()`` as a ``Response``, in order with the agent's other messages (so a turn's
    last update is always read before the reply that ends it). ``notify`` sends a notification.
    ``receive()`` (or ``async for``) yields what the
    agent sends that is not a response: ``Notification``, ``IncomingRequest`` (methods in
    ``accepts``; every other request is answered ``-32601`` at once and reported as ``Stray``),
    ``Stray`` and ``BadLine``; it raises ``anyio.EndOfStream`` when the wire has ended.

    There is no reader task: whoever waits reads (one at a time), routing responses to their
    requests and queueing everything else for ``receive``. So ``request`` works in the handshake
    before anyone iterates, and alongside a reader loop in another task. Bound waits with
    ``anyio.fail_after``; a response arriving after its request gave up is reported as ``Stray``.
    ``jsonrpc_field=False`` leaves the ``"jsonrpc": "2.0"`` member out of what we send.
    """

    def __init__(self, lines: JsonLines, *, accepts: Collection[str] = (), jsonrpc_field: bool = True) -> None:
        self.lines = lines
        self._accepts = frozenset(accepts)
        self._base: dict[str, JSON] = {"jsonrpc": "2.0"} if jsonrpc_field else {}
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._inbox: collections.deque[Message] = collections.deque()
        self._replies: list[Frame] = []
        self._read_lock = anyio.Lock(fast_acquire=True)
        self._reading = False  # ``_read_lock`` is held (a plain flag: ``receive_nowait`` asks per message)
        self._ended: AgentError | None = None

    @property
    def ended(self) -> AgentError | None:
        """Why the wire ended (``ProcessExited``/``ProtocolFailed``), or None while it is open."""
        return self._ended

    async def request(self, method: str, params: JSON = None) -> JSON:
        """Send a request and wait for its result."""
        self._raise_if_ended()
        rid = next(self._ids)
        slot = self._pending[rid] = _Pending(method)
        try:
            await self.lines.send(self._message(id=rid, method=method, params=params))
            while not slot.done:
                self._raise_if_ended()
                await self._pump(lambda: slot.done)
        finally:
            self._pending.pop(rid, None)
        if slot.error is not None:
            raise slot.error
        return slot.result

    def new_id(self) -> int:
        """Reserve a request id for ``send_request(..., request_id=...)``, so the caller knows it
        before the write (the answer may be read by another task while the write is under way)."""
        return next(self._ids)

    async def send_request(self, method: str, params: JSON = None, *, request_id: int | None = None) -> int:
        """Send a request and return its id (``request_id`` from ``new_id``, else a fresh one);
        its ``Response`` arrives through ``receive``. ``ProcessExited``/``ProtocolFailed`` when the
        agent no longer reads."""
        self._raise_if_ended()
        rid = next(self._ids) if request_id is None else request_id
        self._pending[rid] = _Pending(method, in_order=True)
        try:
            await self.lines.send(self._message(id=rid, method=method, params=params))
        except BaseException:
            self._pending.pop(rid, None)
            raise
        return rid

    def forget(self, request_id: int) -> None:
        """Stop waiting for ``send_request``'s answer ``request_id`` (a late one becomes ``Stray``)."""
        self._pending.pop(request_id, None)

    async def notify(self, method: str, params: JSON = None) -> None:
        """Send a notification."""
        self._raise_if_ended()
        await self.lines.send(self._message(method=method, params=params))

    async def receive(self) -> Message:
        """The next message that is not a response; ``anyio.EndOfStream`` once the wire ended."""
        while not self._inbox:
            if self._ended is not None:
                raise anyio.EndOfStream
            await self._pump(lambda: bool(self._inbox))
        if self._replies:
            await self._send_replies()
        return self._inbox.popleft()

    def receive_nowait(self) -> Message:
        """The next message already read from the pipe, without waiting (no checkpoint);
        ``anyio.WouldBlock`` when the next one needs a read, another task is reading, or an
        automatic answer has to be sent first."""
        while not self._inbox:
            if self._ended is not None or self._replies or self._reading:
                raise anyio.WouldBlock
            frame = self.lines.receive_nowait()
            if type(frame) is dict and "id" not in frame:
                method = frame.get("method")
                if type(method) is str:  # a notification (what ``_route`` makes of it, directly)
                    # ``Notification(method, params)`` without its ``__init__`` call (one per message)
                    note = _new_notification(Notification)
                    _notification_method(note, method)
                    _notification_params(note, frame.get("params"))
                    return note
            self._route(frame)
        if self._replies:
            raise anyio.WouldBlock
        return self._inbox.popleft()

    def __aiter__(self) -> JsonRpcPeer:
        return self

    async def __anext__(self) -> Message:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    # -- internals

    def _message(self, **fields: JSON) -> Frame:
        message = dict(self._base)
        for key, value in fields.items():
            if value is not None or key == "id":
                message[key] = value
        return message

    def _raise_if_ended(self) -> None:
        ended = self._ended
        if ended is None:
            return
        if isinstance(ended, ProcessExited):
            raise ProcessExited(ended.status, ended.stderr)
        raise type(ended)(ended.message)

    async def _pump(self, satisfied: Callable[[], bool]) -> None:
        """Read one frame unless ``satisfied()`` already holds once we hold the read lock."""
        async with self._read_lock:
            self._reading = True
            try:
                if not satisfied() and self._ended is None:
                    try:
                        frame = await self.lines.receive()
                    except anyio.EndOfStream:
                        self._ended = await self.lines.process.exit_error()
                    else:
                        self._route(frame)
            finally:
                self._reading = False
        await self._send_replies()

    async def _send_replies(self) -> None:
        """Send automatic answers (outside the read lock, so reading never waits on writing)."""
        while self._replies:
            try:
                await self.lines.send(self._replies.pop(0))
            except AgentError:
                self._replies.clear()  # the agent is gone; the read side will tell

    async def _answer(self, request: IncomingRequest, outcome: Frame) -> None:
        if request.answered:
            raise InvalidRequest(f"request {request.id!r} ({request.method}) was already answered")
        request.answered = True
        await self.lines.send({**self._base, "id": request.id, **outcome})

    def _route(self, frame: Frame | BadLine) -> None:
        if isinstance(frame, BadLine):
            self._inbox.append(frame)
        elif "method" in frame:
            self._route_call(frame)
        elif "id" in frame and ("result" in frame or "error" in frame):
            self._route_response(frame)
        else:
            self._inbox.append(Stray(frame, "neither a request, a notification nor a response"))

    def _route_call(self, frame: Frame) -> None:
        method, params = frame["method"], frame.get("params")
        if not isinstance(method, str):
            self._inbox.append(Stray(frame, "method is not a string"))
        elif "id" not in frame:
            self._inbox.append(Notification(method, params))
        elif not _scalar_id(frame["id"]):
            self._inbox.append(Stray(frame, f"request id {frame['id']!r} is not a string or number"))
        elif method in self._accepts:
            self._inbox.append(IncomingRequest(frame["id"], method, params, peer=self))
        else:
            error = {"code": METHOD_NOT_FOUND, "message": f"method not found: {method}"}
            self._replies.append({**self._base, "id": frame["id"], "error": error})
            self._inbox.append(Stray(frame, f"unhandled request {method!r}, answered {METHOD_NOT_FOUND}"))

    def _route_response(self, frame: Frame) -> None:
        key = frame["id"]
        slot = self._find(key)
        if slot is None:
            self._inbox.append(Stray(frame, f"response to unknown request id {key!r}"))
            return
        if "error" in frame:
            slot.error = _rpc_error(frame["error"], slot.method)
        else:
            slot.result = frame["result"]
        slot.done = True
        if slot.in_order:
            rid = int(key)
            del self._pending[rid]
            self._inbox.append(Response(rid, slot.method, slot.result, slot.error))

    def _find(self, key: Any) -> _Pending | None:
        """The pending request ``key`` answers; ``7``, ``7.0`` and ``"7"`` all find request 7."""
        if isinstance(key, bool):
            return None
        numeric = isinstance(key, float) and key.is_integer()
        if numeric or (isinstance(key, str) and key.isascii() and key.isdigit()):
            key = int(key)
        return self._pending.get(key) if isinstance(key, int) else None


# ---------------------------------------------------------------------------------------------
# request/response correlation for wires that are not JSON-RPC

_R = TypeVar("_R")


@attrs.define(eq=False)
class _Waiter(Generic[_R]):
    label: str
    done: anyio.Event = attrs.Factory(anyio.Event)
    reply: _R | None = None
    on_reply: Callable[[_R], Awaitable[None]] | None = None


class Correlator(Generic[_R]):
    """Matches replies to requests by id on wires with their own request frames (Claude Code's
    control protocol, pi's RPC commands). The adapter builds and writes the frames; this keeps
    the ids and the waiters::

        rid = control.open("set_model")                  # mint an id, register a waiter
        await lines.send({"request_id": rid, ...})       # (control.cancel(rid) if that fails)
        reply = await control.wait(rid, timeout=30)      # None on timeout or when failed
        ...
        # in the reader, for every reply frame:
        if await control.resolve(frame_id, reply): ...   # True: somebody asked for it

    ``open(label, on_reply=callback)`` hands the reply to ``callback`` instead of a waiter (fire
    and forget). ``fail_all(make)`` answers every open request with ``make(id, label)`` (the
    wire died). Ids are ``prefix`` + a counter, so they never collide with the agent's own.
    """

    def __init__(self, prefix: str = "anyagent-") -> None:
        self._prefix = prefix
        self._ids = itertools.count(1)
        self._open: dict[str, _Waiter[_R]] = {}

    def open(self, label: str = "", on_reply: Callable[[_R], Awaitable[None]] | None = None) -> str:
        """Register a request and return its id (write the frame next)."""
        request_id = f"{self._prefix}{next(self._ids)}"
        self._open[request_id] = _Waiter(label, on_reply=on_reply)
        return request_id

    def cancel(self, request_id: str) -> None:
        """Forget a request (its frame could not be written, or the caller gave up)."""
        self._open.pop(request_id, None)

    def pending(self, request_id: str) -> bool:
        """True while ``request_id`` waits for its reply."""
        return request_id in self._open

    async def wait(self, request_id: str, timeout: float) -> _R | None:
        """The reply to ``request_id``, or None when ``timeout`` passed or it was failed without
        one. The request is forgotten either way."""
        waiter = self._open.get(request_id)
        if waiter is None:
            return None
        try:
            with anyio.move_on_after(timeout):
                await waiter.done.wait()
        finally:
            self._open.pop(request_id, None)
        return waiter.reply

    async def resolve(self, request_id: object, reply: _R) -> bool:
        """Deliver ``reply`` to the request ``request_id``; False when nobody waits for it."""
        if not isinstance(request_id, str):
            return False
        waiter = self._open.get(request_id)
        if waiter is None:
            return False
        waiter.reply = reply
        waiter.done.set()
        if waiter.on_reply is not None:
            del self._open[request_id]
            await waiter.on_reply(reply)
        return True

    def fail_all(self, make: Callable[[str, str], _R]) -> None:
        """Answer every open request with ``make(request_id, label)`` (callbacks are dropped)."""
        waiters, self._open = self._open, {}
        for request_id, waiter in waiters.items():
            if waiter.reply is None:
                waiter.reply = make(request_id, waiter.label)
            waiter.done.set()

    def __len__(self) -> int:
        return len(self._open)


def _scalar_id(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float, str)) and not isinstance(value, bool))


def _rpc_error(error: Any, method: str) -> JsonRpcError:
    """Map an error member leniently: a missing code is -32603, a missing message the raw text."""
    if not isinstance(error, dict):
        return JsonRpcError(INTERNAL_ERROR, str(error), None, method)
    code = error.get("code")
    message = error.get("message")
    return JsonRpcError(
        code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
        message if isinstance(message, str) else json.dumps(error),
        error.get("data"),
        method,
    )


_HTTP_NAMES = frozenset({"HttpReply", "HttpWire", "SseEvent", "SseStream"})


def __getattr__(name: str) -> Any:
    """The HTTP+SSE helpers import httpx on first use, so stdio adapters never pay for it."""
    if name in _HTTP_NAMES:
        try:
            from . import http
        except ImportError as exc:  # httpx is an extra: stdio-only installs do not carry it
            raise ImportError(
                f"anyagent.wire.{name} needs httpx and httpx-sse: pip install 'anyagent-core[http]'", name=exc.name
            ) from exc
        return getattr(http, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
