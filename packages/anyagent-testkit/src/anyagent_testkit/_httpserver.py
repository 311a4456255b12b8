"""A small threaded HTTP server on 127.0.0.1 that can be stopped at once (stdlib only).

In: a ``BaseHTTPRequestHandler`` subclass. Out: a server bound to ``127.0.0.1:<port>`` serving on a
background thread; ``close()`` stops accepting, cuts every open connection (keep-alive or SSE), and
joins the handler threads, so tests never leak sockets or threads. It is plain threads and
sockets, so it works the same under asyncio, trio, or no event loop at all.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LOOPBACK", "LoopbackServer", "RequestHandler"]

LOOPBACK = "127.0.0.1"
MAX_BODY = 256 * 1024 * 1024
"""Largest request body read (bytes); bigger requests are refused with 413."""


class LoopbackServer(ThreadingHTTPServer):
    """A ``ThreadingHTTPServer`` on loopback that tracks its connections so ``close`` is prompt."""

    daemon_threads = True
    block_on_close = True
    allow_reuse_address = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        super().__init__((LOOPBACK, port), handler)
        self.stopping = threading.Event()
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{LOOPBACK}:{self.port}"

    def start(self, name: str = "loopback-http") -> None:
        """Serve on a daemon thread."""
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving, cut open connections, join the handler threads (idempotent)."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        if self._thread is not None:
            self.shutdown()
            self._thread.join(timeout=5)
        with self._open_lock:
            connections = list(self._open)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.server_close()

    def process_request(self, request: Any, client_address: Any) -> None:
        """Track the connection before handing it to a handler thread."""
        if isinstance(request, socket.socket):
            with self._open_lock:
                self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        """Forget the connection once its handler is done."""
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)


class RequestHandler(BaseHTTPRequestHandler):
    """Shared plumbing: HTTP/1.1, quiet logs, body reading, JSON and SSE writing."""

    protocol_version = "HTTP/1.1"
    server: LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request stderr log."""

    def read_body(self) -> bytes:
        """The request body (Content-Length or chunked; gzip/deflate decoded). Raises ValueError if too big."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self._read_chunked()
        else:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                raise ValueError(f"request body of {length} bytes is over the limit")
            raw = self.rfile.read(length) if length > 0 else b""
        encoding = self.headers.get("Content-Encoding", "").lower()
        if encoding == "gzip":
            return gzip.decompress(raw)
        if encoding == "deflate":
            return zlib.decompress(raw)
        return raw

    def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            size_line = self.rfile.readline(1024)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(body)
            if len(body) + size > MAX_BODY:
                raise ValueError("chunked request body is over the limit")
            body += self.rfile.read(size)
            self.rfile.readline(16)

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        """Answer with ``payload`` as JSON (or an empty body when ``payload`` is None)."""
        data = b"" if payload is None else json.dumps(payload).encode("utf-8")
        self.send_bytes(status, data, "application/json" if payload is not None else None, headers)

    def send_bytes(
        self, status: int, data: bytes, content_type: str | None, headers: dict[str, str] | None = None
    ) -> None:
        """Answer with ``data`` and a Content-Length (HEAD gets the headers only)."""
        self.send_response(status)
        sent = {key.lower() for key in (headers or {})}
        for key, value in (headers or {}).items():
            if key.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                self.send_header(key, value)
        if content_type and "content-type" not in sent:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD" and data:
            self.wfile.write(data)
        self.wfile.flush()

    def start_sse(self, headers: dict[str, str] | None = None) -> None:
        """Send the headers of a server-sent-events stream; the connection closes when it ends."""
        self.send_response(200)
        for key, value in (headers or {}).items():
            if key.lower() not in (
                "content-length",
                "transfer-encoding",
                "connection",
                "date",
                "server",
                "content-type",
            ):
                self.send_header(key, value)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True

    def send_sse(self, data: Any, event: str | None = None, event_id: str | None = None) -> None:
        """Write one SSE event (``data`` as JSON unless it is already a str)."""
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        parts = []
        if event_id is not None:
            parts.append(f"id: {event_id}\n")
        if event:
            parts.append(f"event: {event}\n")
        parts.extend(f"data: {piece}\n" for piece in text.split("\n"))
        parts.append("\n")
        self.wfile.write("".join(parts).encode("utf-8"))
        self.wfile.flush()
