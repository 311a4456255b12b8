"""HTTP mode: serve a recorded list of HTTP exchanges and SSE events on 127.0.0.1 (opencode-style).

Recording shape (JSONL, one object per line, in the order things happened)::

    {"_http": {"method": "POST", "path": "/session", "body": {...}, "id": "s1"}, "_t": 0.10}
    {"_response": {"status": 200, "headers": {"Content-Type": "application/json"}, "body": {...}, "id": "s1"}}
    {"_http": {"method": "GET", "path": "/event", "sse": true}, "_t": 0.00}
    {"_sse": {"path": "/event", "data": {"type": "server.connected", "properties": {}}}, "_t": 0.13}

* ``_http`` — a request the client makes (like ``_sent`` on stdio). Matched by method and path
  (query ignored); requests may arrive in any order, each live request takes the earliest
  unmatched recorded one.
* ``_response`` — the answer to a request: the one with the same ``id``, or without ids the nearest
  earlier ``_http`` still unanswered. It is sent when the timeline reaches it, so a blocking request
  (opencode's ``POST /session/{id}/message``) is answered after the events recorded before its answer.
  ``body`` is JSON, or a string sent as-is; ``null`` sends an empty body.
* ``_sse`` — one event written to every open stream on ``path`` (a GET to a path that has ``_sse``
  lines opens a stream; its ``_http`` line, with ``"sse": true``, is optional). ``data`` is JSON or a
  string; optional ``event`` and ``id`` become SSE fields. The timeline waits up to ``sse_wait``
  seconds for a stream to be open, then drops the event (logged).
* ``_meta`` / ``_note`` / other bookkeeping lines are ignored.

The shape ``SessionOptions.record_wire()`` writes for HTTP wires is read too:
``{"_http": {"kind": "request", "id", "method", "url", "body"}}``, ``{"kind": "response", "id",
"status", "body" | "text"}``, ``{"kind": "error", "id"}`` (the client never got an answer: the
connection is closed instead), ``{"kind": "sse_open", "stream", "url", "status"}``,
``{"kind": "sse", "stream", "event", "id", "data" | "text"}`` and ``{"kind": "sse_end", "stream"}``
(the server closes that stream).

A request the recording does not hold gets 404 ``{"name": "NotInRecording"}`` — except a repeated
GET/HEAD, which gets the last recorded answer for that path again (health polls). In strict mode
every such request is a failure and the process exits 1.
"""

from __future__ import annotations

import functools
import json
import queue
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from .._httpserver import LoopbackServer, RequestHandler
from ._recording import RecordingError

__all__ = ["HttpExchange", "HttpReplayServer", "HttpTimeline", "load_http_timeline", "parse_http_timeline"]

WAIT_STEP = 0.05


@attrs.define
class HttpExchange:
    """One recorded request and (once paired) its recorded response; ``live`` is set when a client sends it."""

    number: int
    method: str
    path: str
    sse: bool = False
    exchange_id: Any = None
    response: dict[str, Any] | None = None
    live: _LiveRequest | None = None


@attrs.frozen
class _ResponseItem:
    number: int
    exchange: HttpExchange
    t: float | None


@attrs.frozen
class _RequestItem:
    exchange: HttpExchange
    t: float | None


@attrs.frozen
class _SseItem:
    number: int
    path: str
    data: Any
    event: str | None
    event_id: str | None
    t: float | None


@attrs.frozen
class _SseEnd:
    number: int
    path: str
    t: float | None


_Item = _RequestItem | _ResponseItem | _SseItem | _SseEnd
DROP = "_drop"
"""A response key meaning "the client never got an answer": the connection is closed instead."""


@attrs.frozen
class HttpTimeline:
    """A parsed HTTP recording: ``items`` in order, the ``exchanges``, and the SSE paths."""

    items: tuple[_Item, ...]
    exchanges: tuple[HttpExchange, ...]
    sse_paths: frozenset[str]


def load_http_timeline(path: str | Path) -> HttpTimeline:
    """Read an HTTP recording (see the module docstring)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordingError(f"cannot read recording {path}: {exc}") from exc
    return parse_http_timeline(text.splitlines())


def parse_http_timeline(lines: Iterable[str]) -> HttpTimeline:
    """Parse HTTP recording lines (either shape); a line that is not JSON, or a response with no
    request to answer, is a ``RecordingError``."""
    builder = _TimelineBuilder()
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RecordingError(f"line {number} is not JSON ({exc.msg})") from exc
        if isinstance(obj, dict):
            builder.add(number, obj)
    return builder.build()


class _TimelineBuilder:
    """Collects timeline items from lines of the testkit shape or of ``record_wire``'s ``kind`` shape."""

    def __init__(self) -> None:
        self.items: list[_Item] = []
        self.exchanges: list[HttpExchange] = []
        self.by_id: dict[str, HttpExchange] = {}
        self.stream_paths: dict[str, str] = {}

    def add(self, number: int, obj: dict[str, Any]) -> None:
        t = obj.get("_t") if isinstance(obj.get("_t"), (int, float)) else None
        http = obj.get("_http")
        if isinstance(http, dict) and "kind" in http:
            self._recorded(number, http, t)
        elif isinstance(http, dict):
            self._request(number, http.get("method"), http.get("path"), http.get("id"), bool(http.get("sse")), t)
        elif isinstance(obj.get("_response"), dict):
            response = obj["_response"]
            self.items.append(_ResponseItem(number, self._pair(number, response.get("id"), response), t))
        elif isinstance(obj.get("_sse"), dict):
            event = obj["_sse"]
            path = urlsplit(str(event.get("path", "/event"))).path
            self._event(number, path, event.get("data"), event.get("event"), event.get("id"), t)

    def _recorded(self, number: int, http: dict[str, Any], t: float | None) -> None:
        """One line of ``anyagent.wire.WireRecorder.http`` (``kind``: request, response, error,
        sse_open, sse, sse_end)."""
        kind = http.get("kind")
        key = http.get("stream") if kind in ("sse_open", "sse", "sse_end") else http.get("id")
        if kind == "request":
            self._request(number, http.get("method"), http.get("url"), key, False, t)
        elif kind == "response":
            body = {"body": http["body"]} if "body" in http else {"body": str(http.get("text", ""))}
            response = {"status": http.get("status", 200), **body}
            self.items.append(_ResponseItem(number, self._pair(number, key, response), t))
        elif kind == "error" and _id_key(key) in self.by_id:
            self.items.append(_ResponseItem(number, self._pair(number, key, {DROP: True}), t))
        elif kind == "sse_open":
            path = urlsplit(str(http.get("url", "/"))).path or "/"
            ok = 200 <= int(http.get("status", 200)) < 300
            self._request(number, "GET", path, key, ok, t)
            self.stream_paths[_id_key(key)] = path
            if not ok:
                response = {"status": http.get("status"), "body": ""}
                self.items.append(_ResponseItem(number, self._pair(number, key, response), t))
        elif kind == "sse" and _id_key(key) in self.stream_paths:
            data = http["data"] if "data" in http else http.get("text", "")
            event = None if http.get("event") == "message" else http.get("event")
            self._event(number, self.stream_paths[_id_key(key)], data, event, http.get("id"), t)
        elif kind == "sse_end" and _id_key(key) in self.stream_paths:
            self.items.append(_SseEnd(number, self.stream_paths[_id_key(key)], t))

    def _request(self, number: int, method: Any, path: Any, key: Any, sse: bool, t: float | None) -> None:
        exchange = HttpExchange(number, str(method or "GET").upper(), urlsplit(str(path or "/")).path or "/", sse, key)
        self.exchanges.append(exchange)
        if key is not None:
            self.by_id[_id_key(key)] = exchange
        self.items.append(_RequestItem(exchange, t))

    def _pair(self, number: int, key: Any, response: dict[str, Any]) -> HttpExchange:
        """The exchange ``response`` answers: the one with id ``key``, else the nearest unanswered one."""
        candidates = [self.by_id[_id_key(key)]] if key is not None and _id_key(key) in self.by_id else []
        if key is None:
            candidates = [exchange for exchange in reversed(self.exchanges) if exchange.response is None]
        for exchange in candidates:
            if exchange.response is None:
                exchange.response = response
                return exchange
        raise RecordingError(f"line {number}: a response with no unanswered request before it")

    def _event(self, number: int, path: str, data: Any, event: Any, event_id: Any, t: float | None) -> None:
        name = str(event) if event else None
        self.items.append(_SseItem(number, path, data, name, str(event_id) if event_id else None, t))

    def build(self) -> HttpTimeline:
        sse_paths = {item.path for item in self.items if isinstance(item, (_SseItem, _SseEnd))}
        sse_paths |= {exchange.path for exchange in self.exchanges if exchange.sse}
        for exchange in self.exchanges:
            exchange.sse = exchange.sse or (exchange.path in sse_paths and exchange.method == "GET")
        return HttpTimeline(tuple(self.items), tuple(self.exchanges), frozenset(sse_paths))


def _id_key(value: Any) -> str:
    return json.dumps(value)


class _LiveRequest:
    """A client request matched to a recorded exchange, waiting for the timeline to answer it."""

    def __init__(self) -> None:
        self.answered = threading.Event()
        self.response: dict[str, Any] | None = None


class _Stream:
    def __init__(self, path: str) -> None:
        self.path = path
        self.events: queue.Queue[_SseItem | None] = queue.Queue()


class HttpReplayServer:
    """Serves an ``HttpTimeline`` on ``127.0.0.1:port`` (0 picks a free port) until ``close``.

    ``failures`` lists what went wrong (requests not in the recording, dropped events);
    ``fully_played`` says the timeline reached its end. Usable as a context manager.
    """

    def __init__(
        self,
        timeline: HttpTimeline,
        *,
        strict: bool = False,
        realtime: bool = False,
        max_gap: float = 2.0,
        sse_wait: float = 10.0,
        port: int = 0,
        log: Any = None,
    ) -> None:
        self.timeline = timeline
        self.strict = strict
        self.realtime = realtime
        self.max_gap = max_gap
        self.sse_wait = sse_wait
        self.failures: list[str] = []
        self.fully_played = False
        self._log_stream = log
        self._lock = threading.Condition()
        self._streams: list[_Stream] = []
        self._last: dict[tuple[str, str], dict[str, Any]] = {}
        self._server = LoopbackServer(_make_handler(self), port)
        self._player = threading.Thread(target=self._play, name="replay-http-timeline", daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return self._server.url

    @property
    def port(self) -> int:
        """The bound port."""
        return self._server.port

    def start(self) -> HttpReplayServer:
        """Begin serving and playing the timeline."""
        self._server.start("replay-http")
        self._player.start()
        return self

    def close(self) -> None:
        """Stop serving (open streams and waiting requests end)."""
        with self._lock:
            self._lock.notify_all()
        self._server.close()
        self._player.join(timeout=5)

    def __enter__(self) -> HttpReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def stopping(self) -> bool:
        """True once ``close`` began."""
        return self._server.stopping.is_set()

    # -- the timeline --------------------------------------------------------------------------

    def _play(self) -> None:
        last_t: float | None = None
        for item in self.timeline.items:
            if self.stopping:
                return
            last_t = self._pace(last_t, item.t)
            if isinstance(item, _RequestItem):
                if not self._wait(functools.partial(_is_live, item.exchange)):
                    return
            elif isinstance(item, _ResponseItem):
                self._answer(item.exchange)
            elif isinstance(item, _SseEnd):
                self._end_streams(item.path)
            else:
                self._publish(item)
        self.fully_played = True
        self.log("timeline fully played")

    def _pace(self, last_t: float | None, t: float | None) -> float | None:
        if self.realtime and t is not None and last_t is not None:
            time.sleep(min(max(t - last_t, 0.0), self.max_gap))
        return t if t is not None else last_t

    def _wait(self, ready: Callable[[], bool], timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while not ready():
                if self.stopping or (deadline is not None and time.monotonic() >= deadline):
                    return bool(ready())
                self._lock.wait(WAIT_STEP)
        return True

    def _answer(self, exchange: HttpExchange) -> None:
        live = exchange.live
        if live is None or exchange.sse:
            return
        with self._lock:
            live.response = exchange.response
            self._last[(exchange.method, exchange.path)] = exchange.response or {}
        live.answered.set()

    def _publish(self, event: _SseItem) -> None:
        if not self._wait(lambda: any(stream.path == event.path for stream in self._streams), self.sse_wait):
            self._fail(f"line {event.number}: no client had {event.path} open within {self.sse_wait}s; event dropped")
            return
        with self._lock:
            for stream in self._streams:
                if stream.path == event.path:
                    stream.events.put(event)

    def _end_streams(self, path: str) -> None:
        with self._lock:
            for stream in self._streams:
                if stream.path == path:
                    stream.events.put(None)

    # -- the handler side ----------------------------------------------------------------------

    def match(self, method: str, path: str) -> tuple[HttpExchange | None, _LiveRequest | None]:
        """Take the earliest unmatched recorded exchange for ``method path`` (None if there is none)."""
        with self._lock:
            for exchange in self.timeline.exchanges:
                if exchange.live is None and exchange.method == method and exchange.path == path:
                    exchange.live = _LiveRequest()
                    self._lock.notify_all()
                    return exchange, exchange.live
        return None, None

    def repeat(self, method: str, path: str) -> dict[str, Any] | None:
        """The last answer served for a GET/HEAD to ``path``, for repeated polls."""
        if method not in ("GET", "HEAD"):
            return None
        with self._lock:
            return self._last.get(("GET", path))

    def open_stream(self, path: str) -> _Stream:
        """Register an SSE stream on ``path`` (also matches its recorded ``_http`` line, if any)."""
        self.match("GET", path)
        stream = _Stream(path)
        with self._lock:
            self._streams.append(stream)
            self._lock.notify_all()
        return stream

    def close_stream(self, stream: _Stream) -> None:
        """Forget a stream whose client went away."""
        with self._lock:
            if stream in self._streams:
                self._streams.remove(stream)

    def stream_headers(self, path: str) -> dict[str, str]:
        """Recorded headers for the stream on ``path`` (from its ``_http`` exchange's response)."""
        for exchange in self.timeline.exchanges:
            if exchange.path == path and exchange.response is not None:
                return _headers(exchange.response)
        return {}

    def unexpected(self, method: str, path: str) -> None:
        """Record a request the recording does not hold."""
        self._fail(f"{method} {path} is not in the recording")

    def _fail(self, message: str) -> None:
        with self._lock:
            self.failures.append(message)
        self.log(message)

    def log(self, message: str) -> None:
        """One line on the log stream (stderr for the CLI)."""
        if self._log_stream is not None:
            try:
                self._log_stream.write(f"[replay-http] {message}\n")
                self._log_stream.flush()
            except (OSError, ValueError):
                pass


def _is_live(exchange: HttpExchange) -> bool:
    return exchange.live is not None


def _headers(response: dict[str, Any]) -> dict[str, str]:
    raw = response.get("headers")
    return {str(key): str(value) for key, value in raw.items()} if isinstance(raw, dict) else {}


def _make_handler(replay: HttpReplayServer) -> type[RequestHandler]:
    class Handler(RequestHandler):
        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PUT(self) -> None:
            self._serve()

        def do_PATCH(self) -> None:
            self._serve()

        def do_DELETE(self) -> None:
            self._serve()

        def do_HEAD(self) -> None:
            self._serve()

        def _serve(self) -> None:
            try:
                self.read_body()
            except ValueError:
                self.send_json(413, {"name": "TooLarge"})
                return
            path = urlsplit(self.path).path or "/"
            if self.command == "GET" and path in replay.timeline.sse_paths:
                self._stream(path)
                return
            exchange, live = replay.match(self.command, path)
            if exchange is None or live is None:
                self._unmatched(path)
                return
            while not live.answered.wait(WAIT_STEP):
                if replay.stopping:
                    return
            self._reply(live.response or {})

        def _unmatched(self, path: str) -> None:
            again = replay.repeat(self.command, path)
            if again is not None:
                self._reply(again)
                return
            replay.unexpected(self.command, path)
            self.send_json(404, {"name": "NotInRecording", "data": {"message": f"{self.command} {path}"}})

        def _reply(self, response: dict[str, Any]) -> None:
            if response.get(DROP):
                self.close_connection = True
                return
            status = int(response.get("status", 200))
            body = response.get("body")
            headers = _headers(response)
            if isinstance(body, str):
                self.send_bytes(status, body.encode("utf-8"), "text/plain; charset=utf-8", headers)
            else:
                self.send_json(status, body, headers)

        def _stream(self, path: str) -> None:
            stream = replay.open_stream(path)
            try:
                self.start_sse(replay.stream_headers(path))
                while not replay.stopping:
                    try:
                        event = stream.events.get(timeout=WAIT_STEP)
                    except queue.Empty:
                        continue
                    if event is None:
                        return
                    self.send_sse(event.data, event.event, event.event_id)
            except OSError:
                pass
            finally:
                replay.close_stream(stream)

    return Handler
