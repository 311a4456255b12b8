"""HTTP + SSE for agents that serve a local HTTP API (``anyagent.wire.HttpWire`` and friends).

Kept apart from ``anyagent.wire`` so that importing the stdio helpers never imports httpx; the
names are re-exported from ``anyagent.wire`` on first use.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import json
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import cast

import anyio
import attrs
import httpx
import httpx_sse

from . import _log
from ._codec import _cut, _short
from ._codec import _decode as _fast_decode
from ._frozen import _slot_setters
from .errors import ProtocolFailed
from .recording import WireRecorder
from .types import JSON

__all__ = ["HttpReply", "HttpWire", "SseEvent", "SseStream"]

# ---------------------------------------------------------------------------------------------
# HTTP + SSE


@attrs.frozen
class HttpReply:
    """An HTTP response: ``status``, the body parsed as JSON (None if it is not JSON) and as text."""

    status: int
    body: JSON
    text: str

    @property
    def ok(self) -> bool:
        """A 2xx status."""
        return 200 <= self.status < 300


@attrs.frozen
class SseEvent:
    """One server-sent event: its ``event`` name (``"message"`` by default), ``data`` parsed as
    JSON exactly as the server sent it (None if the data is not JSON), the raw data ``text``, and
    the stream's last event ``id`` (SSE semantics: it carries over to later events). Unknown event
    names pass through untouched. An agent's own envelope (opencode wraps events in
    ``{"directory": …, "payload": {…}}``) is its adapter's to unwrap."""

    event: str
    data: JSON
    text: str
    id: str | None = None


_sse_event, _sse_data, _sse_text, _sse_id = _slot_setters(SseEvent, "event", "data", "text", "id")


def _sse_event_init(self: SseEvent, event: str, data: JSON, text: str, id: str | None = None) -> None:
    _sse_event(self, event)  # one per streamed event: see ``_frozen._slot_setters``
    _sse_data(self, data)
    _sse_text(self, text)
    _sse_id(self, id)


SseEvent.__init__ = _sse_event_init  # type: ignore[method-assign]


def _parse(text: str) -> tuple[bool, JSON]:
    if _fast_decode is not None:  # msgspec, and ``json`` (which decides) for what it refuses
        try:
            return True, _fast_decode(text)  # type: ignore[arg-type]  # msgspec takes str too
        except ValueError:
            pass
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


class _BoundedLines(httpx.AsyncByteStream):
    """Wraps a response body: fails with ``ProtocolFailed`` once a line passes ``max_line`` bytes,
    so a server that never sends a newline cannot grow the SSE decoder's buffer without end."""

    def __init__(self, inner: httpx.AsyncByteStream, max_line: int) -> None:
        self._inner = inner
        self._max = max_line

    async def __aiter__(self) -> AsyncIterator[bytes]:
        run = 0
        async for chunk in self._inner:
            cut = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
            run = len(chunk) - cut - 1 if cut >= 0 else run + len(chunk)
            if run > self._max:
                raise ProtocolFailed(f"an event-stream line is longer than {self._max} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class SseStream:
    """The events of one open event stream (from ``HttpWire.events``); iterate with ``async for``,
    or take the events already read with ``receive_nowait``. Iteration ends when the server closes
    the stream; a broken stream raises ``ProtocolFailed``.

    Decoding follows the SSE spec (lines end with CRLF, LF or CR; ``:`` comments; ``event``,
    ``data``, ``id`` fields; a blank line dispatches; an event without data is no event; an
    unfinished event at the end of the stream is dropped). Every chunk read is decoded whole, so
    a flood costs one wait per chunk, not per event."""

    def __init__(self, response: httpx.Response, stream_id: int, recorder: WireRecorder | None) -> None:
        self.status = response.status_code
        self._chunks = response.aiter_text()
        self._id = stream_id
        self._recorder = recorder
        self._ready: collections.deque[tuple[str, str, str]] = collections.deque()  # (event, data, id)
        self._rest = ""  # the unfinished line
        self._skip_lf = False  # the last chunk ended with CR: a LF first in the next one ends no line
        self._event = ""
        self._data: list[str] = []
        self._last_id = ""
        self._ended = False

    def __aiter__(self) -> SseStream:
        return self

    async def __anext__(self) -> SseEvent:
        while not self._ready:
            if self._ended:
                raise StopAsyncIteration
            await self._read()
        return self._hand_out()

    def receive_nowait(self) -> SseEvent:
        """The next event already read from the stream, without waiting (no checkpoint);
        ``anyio.WouldBlock`` when the next one needs a read (or the stream ended: iterate)."""
        if not self._ready:
            raise anyio.WouldBlock
        return self._hand_out()

    def receive_data_nowait(self) -> JSON:
        """What ``receive_nowait().data`` is, or its ``text`` when that is None (not JSON, or JSON
        ``null``), without building the ``SseEvent``: for a wire whose events are their data alone
        (the event name and id dropped; recorded as ``receive_nowait`` records them). The flood's
        path: one call per event. ``anyio.WouldBlock`` as for ``receive_nowait``."""
        ready = self._ready
        if not ready:
            raise anyio.WouldBlock
        if self._recorder is None and _fast_decode is not None:
            data = ready.popleft()[1]
            try:
                value = _fast_decode(data)  # type: ignore[arg-type]  # msgspec takes str too
            except ValueError:
                value = _parse(data)[1]
            return value if value is not None else data
        event = self._hand_out()
        return event.data if event.data is not None else event.text

    def _hand_out(self) -> SseEvent:
        event, data, last_id = self._ready.popleft()
        event = event or "message"
        value: JSON = None
        parsed = False
        if _fast_decode is not None:  # ``_parse`` inlined for the flood: msgspec first
            try:
                value = _fast_decode(data)  # type: ignore[arg-type]  # msgspec takes str too
            except ValueError:
                pass
            else:
                parsed = True
        if not parsed:
            parsed, value = _parse(data)
        if self._recorder is not None:
            shape: dict[str, JSON] = {"kind": "sse", "stream": self._id, "event": event, "id": last_id or None}
            shape.update({"data": value} if parsed else {"text": data})
            self._recorder.http(shape)
        return SseEvent(event, value, data, last_id or None)

    async def _read(self) -> None:
        try:
            text = await self._chunks.__anext__()
        except StopAsyncIteration:
            self._ended = True
            self._record_end(None)
            return
        except (httpx.HTTPError, httpx_sse.SSEError) as exc:
            self._ended = True
            self._record_end(exc)
            raise ProtocolFailed(f"the event stream broke: {_short(exc)}") from exc
        except ProtocolFailed as exc:
            self._ended = True
            self._record_end(exc)
            raise
        self._decode(text)

    def _decode(self, text: str) -> None:
        if self._skip_lf:
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        if "\r" in text:
            self._skip_lf = text.endswith("\r")
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        # the common case whole: an event that is one ``data: `` line and its blank line is one
        # block of ``split("\n\n")``, with no state before or after it (a dispatch resets it);
        # every other block goes line by line (the first may continue the event read before)
        blocks = (self._rest + text).split("\n\n")
        rest = blocks.pop()  # after the last blank line: the unfinished event
        if blocks:
            if self._data or self._event:  # the first block continues the event read before
                self._lines(blocks[0].split("\n"))
                self._dispatch()
                del blocks[0]
            ready = self._ready
            for block in blocks:
                if block[:6] == "data: " and "\n" not in block:
                    if len(block) > 6:  # no data, no event
                        ready.append(("", block[6:], self._last_id))
                else:
                    self._lines(block.split("\n"))
                    self._dispatch()
        lines = rest.split("\n")
        self._rest = lines.pop()
        self._lines(lines)

    def _dispatch(self) -> None:
        """A blank line: the event read so far (if it has data) is ready; the name resets."""
        data = self._data
        if data:
            joined = "\n".join(data)
            if joined:  # no data, no event
                self._ready.append((self._event, joined, self._last_id))
            data.clear()
        self._event = ""

    def _lines(self, lines: list[str]) -> None:
        data = self._data
        for line in lines:
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
            elif not line:
                self._dispatch()
            elif line[0] != ":":
                name, _, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                if name == "event":
                    self._event = value
                elif name == "data":
                    data.append(value)
                elif name == "id" and "\0" not in value:
                    self._last_id = value

    async def _close(self) -> None:
        await self._chunks.aclose()  # type: ignore[attr-defined]

    def _record_end(self, error: BaseException | None) -> None:
        if self._recorder is not None:
            end: dict[str, JSON] = {"kind": "sse_end", "stream": self._id}
            if error is not None:
                end["error"] = _short(error)
            self._recorder.http(end)


class HttpWire:
    """An ``httpx`` client for an agent's local HTTP server, with explicit timeouts and recording.

    ``request`` returns an ``HttpReply`` whatever the status (check ``.ok``) and raises
    ``ProtocolFailed`` when the server cannot be reached or times out. ``events(path)`` opens an
    event stream (no read timeout: streams idle between turns). ``auth`` is HTTP basic auth.
    Proxy settings from the environment are ignored (agents listen on loopback). ``transport``
    replaces the network (tests).
    """

    def __init__(
        self,
        base_url: str,
        *,
        auth: tuple[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        max_line: int = 16 * 1024 * 1024,
        recorder: WireRecorder | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._timeout = httpx.Timeout(timeout, connect=connect_timeout)
        self._stream_timeout = httpx.Timeout(timeout, connect=connect_timeout, read=None)
        self._client = httpx.AsyncClient(
            base_url=base_url,
            verify=_tls(),
            auth=httpx.BasicAuth(*auth) if auth is not None else None,
            headers=dict(headers or {}),
            timeout=self._timeout,
            transport=transport,
            trust_env=False,
        )
        self._max = max_line
        self.recorder = recorder
        self._ids = itertools.count(1)

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: JSON = None,
        params: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> HttpReply:
        """Send ``json`` (None: no body) to ``path``; the reply whatever its status."""
        rid = next(self._ids)
        url = str(self._client.build_request(method, path, params=params).url)
        self._record({"kind": "request", "id": rid, "method": method, "url": url, "body": json})
        try:
            response = await self._client.request(
                method,
                path,
                json=json,
                params=params,
                timeout=self._timeout if timeout is None else httpx.Timeout(timeout),
            )
        except httpx.HTTPError as exc:
            self._record({"kind": "error", "id": rid, "error": _short(exc)})
            raise ProtocolFailed(f"{method} {url}: {_describe(exc)}") from exc
        parsed, value = _parse(response.text)
        body: dict[str, JSON] = {"body": value} if parsed else {"text": response.text}
        self._record({"kind": "response", "id": rid, "status": response.status_code, **body})
        return HttpReply(response.status_code, value, response.text)

    @contextlib.asynccontextmanager
    async def events(self, path: str, *, params: Mapping[str, str] | None = None) -> AsyncIterator[SseStream]:
        """Open an event stream at ``path``; ``ProtocolFailed`` if it cannot be opened (including
        a non-2xx status or a body that is not ``text/event-stream``)."""
        sid = next(self._ids)
        url = str(self._client.build_request("GET", path, params=params).url)
        try:
            connection = httpx_sse.aconnect_sse(self._client, "GET", path, params=params, timeout=self._stream_timeout)
            source = await connection.__aenter__()
        except httpx.HTTPError as exc:
            self._record({"kind": "error", "id": sid, "error": _short(exc)})
            raise ProtocolFailed(f"GET {url}: {_describe(exc)}") from exc
        try:
            response = source.response
            self._record({"kind": "sse_open", "stream": sid, "url": url, "status": response.status_code})
            if not response.is_success:
                text = (await response.aread()).decode("utf-8", "replace")
                raise ProtocolFailed(f"GET {url}: status {response.status_code}: {_cut(text)}")
            kind = response.headers.get("content-type", "")
            if "text/event-stream" not in kind:
                raise ProtocolFailed(f"GET {url}: expected an event stream, got content-type {kind!r}")
            response.stream = _BoundedLines(cast(httpx.AsyncByteStream, response.stream), self._max)
            stream = SseStream(response, sid, self.recorder)
            try:
                yield stream
            finally:
                await stream._close()
        finally:
            with anyio.CancelScope(shield=True):
                await connection.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Close the client and its connections."""
        await self._client.aclose()

    async def __aenter__(self) -> HttpWire:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _record(self, fields: dict[str, JSON]) -> None:
        if self.recorder is not None:
            self.recorder.http(fields)
        log = _log.enabled("anyagent.wire", _log.DEBUG)
        if log is not None:  # requests, replies and stream opens (headers, where credentials go, are not)
            log.debug("http %s", _log.frame_text(fields))


@functools.lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    """httpx's default verifying TLS context, built once per process and shared by every
    ``HttpWire`` (building one loads the CA bundle: ~20 ms of CPU per client otherwise)."""
    return httpx.create_ssl_context()


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect: {_short(exc)}"
    return f"{type(exc).__name__}: {_short(exc)}"
