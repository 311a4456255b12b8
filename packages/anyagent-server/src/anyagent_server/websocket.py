"""The sidecar protocol over a WebSocket: ``anyagent serve --listen 127.0.0.1:PORT``.

One JSON line per text message, the same frames as over stdio. ``SidecarApp`` is a plain ASGI
application (mount it in any ASGI server or app); ``serve_websocket`` runs it under hypercorn,
on asyncio or trio, whichever runs the caller.

Security:

- every connection needs the bearer token (``Authorization: Bearer TOKEN``, or, from a browser,
  which cannot set headers, the subprotocol ``anyagent-token.TOKEN`` offered beside
  ``anyagent.v1``); without it the handshake is refused (HTTP 403) before any frame;
- a request carrying an ``Origin`` header is refused unless that origin is in the allow-list
  (empty by default), so a page of another site the user visits cannot drive agents;
- ``serve_websocket`` binds loopback addresses only unless ``allow_remote`` is set.

Sessions belong to the server, not to a connection: a connection that drops leaves them running,
and a client that reconnects sends ``{"cmd": "attach", "session": "s1", "after": LAST_SEQUENCE}`` to
get what it missed (or ``ReplayGap``). Several connections may watch one session; one holds its
control (see ``docs/sidecar.md``).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from anyagent import Runtime

from .hub import DEFAULT_MAX_LINE, DEFAULT_REPLAY, Hub, Peer

__all__ = ["SUBPROTOCOL", "TOKEN_PREFIX", "SidecarApp", "is_loopback", "serve_websocket", "write_token"]

SUBPROTOCOL = "anyagent.v1"
"""The subprotocol the server selects when a (browser) client offers it."""

TOKEN_PREFIX = "anyagent-token."
"""A browser passes the token as the offered subprotocol ``anyagent-token.TOKEN``."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class SidecarApp:
    """An ASGI app speaking the sidecar protocol on WebSocket connections to any path.

    ``hub`` must be entered (``async with Hub(runtime) as hub``) while the app serves. Plain HTTP
    requests get 426 (upgrade required), except ``GET /healthz`` (200, no token needed).
    """

    def __init__(self, hub: Hub, token: str, *, origins: Sequence[str] = ()) -> None:
        if not token:
            raise ValueError("a token is required")
        self.hub = hub
        self.token = token
        self.origins = frozenset(o.rstrip("/") for o in origins)
        self.connections = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if kind == "http":
            await self._http(scope, send)
            return
        if kind == "websocket":
            await self._websocket(scope, receive, send)

    async def _http(self, scope: Scope, send: Send) -> None:
        healthy = scope.get("path") == "/healthz"
        status, body = (200, b"ok\n") if healthy else (426, b"anyagent serve speaks WebSocket here\n")
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": body})

    def _authorized(self, scope: Scope) -> tuple[bool, str | None]:
        """(allowed, the subprotocol to select)."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/") not in self.origins:
            return False, None
        offered = list(scope.get("subprotocols") or [])
        presented = None
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            presented = auth[7:].strip()
        for proto in offered:
            if proto.startswith(TOKEN_PREFIX):
                presented = proto[len(TOKEN_PREFIX) :]
        if presented is None or not hmac.compare_digest(presented.encode(), self.token.encode()):
            return False, None
        return True, SUBPROTOCOL if SUBPROTOCOL in offered else None

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        allowed, subprotocol = self._authorized(scope)
        if not allowed:
            await send({"type": "websocket.close", "code": 1008})  # before accept: the server answers 403
            return
        accept: Message = {"type": "websocket.accept"}
        if subprotocol is not None:
            accept["subprotocol"] = subprotocol
        await send(accept)
        closed = False

        async def send_text(text: str) -> None:
            if closed:
                raise anyio.ClosedResourceError
            try:
                await send({"type": "websocket.send", "text": text})
            except Exception as exc:  # the server's own "client went away" errors
                raise anyio.BrokenResourceError from exc

        self.connections += 1
        peer = Peer(send_text, f"ws{self.connections}")
        try:
            await peer.write(self.hub.hello())
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    break
                if message["type"] != "websocket.receive":
                    continue
                text = message.get("text")
                if text is None and message.get("bytes") is not None:
                    text = message["bytes"]
                if text is None:
                    continue
                size = len(text)
                if size > self.hub.max_line:
                    await self.hub.receive(peer, None, too_long=size)
                else:
                    await self.hub.receive(peer, text)
        finally:
            closed = True
            self.hub.detach(peer)


def is_loopback(host: str) -> bool:
    """``localhost`` or an address in 127.0.0.0/8 or ::1."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _split(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen wants HOST:PORT, not {listen!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def write_token(token: str, path: str | os.PathLike[str] | None = None) -> Path:
    """Write ``token`` to ``path`` (default ``$XDG_RUNTIME_DIR`` or ``~/.anyagent``, ``serve-token``), 0600."""
    if path is None:
        base = os.environ.get("XDG_RUNTIME_DIR") or str(Path.home() / ".anyagent")
        path = Path(base) / "anyagent-serve-token"
    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)  # an existing file keeps its mode otherwise
        os.write(fd, token.encode() + b"\n")
    finally:
        os.close(fd)
    return target


async def serve_websocket(
    runtime: Runtime,
    listen: str,
    *,
    allow_remote: bool = False,
    origins: Sequence[str] = (),
    token_file: str | os.PathLike[str] | None = None,
    token: str | None = None,
    replay: int = DEFAULT_REPLAY,
    max_line: int = DEFAULT_MAX_LINE,
    ready: Callable[[dict[str, Any]], None] | None = None,
    shutdown: anyio.Event | None = None,
) -> int:
    """Serve ``runtime`` over a WebSocket on ``listen`` (``HOST:PORT``, port 0 picks one) until
    ``shutdown`` is set or SIGINT/SIGTERM arrives; returns the exit status (2 for a refused bind).

    Prints one JSON line to stdout once listening: ``{"listening": URL, "token": TOKEN,
    "token_file": PATH}`` (``ready`` gets the same dict instead, when given).
    """
    try:
        host, port = _split(listen)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not is_loopback(host):
        if not allow_remote:
            print(
                f"error: refusing to listen on {host}: it is not a loopback address. Anyone who reaches it and"
                " holds the token can run agents with your files and accounts; pass --allow-remote to do it anyway.",
                file=sys.stderr,
            )
            return 2
        print(f"warning: listening on {host}, reachable from other machines", file=sys.stderr)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        print(f"error: cannot listen on {listen}: {exc}", file=sys.stderr)
        return 2
    sock.listen(128)
    sock.setblocking(False)
    bound = sock.getsockname()[1]
    token = token or secrets.token_urlsafe(32)
    path = write_token(token, token_file)
    url_host = f"[{host}]" if ":" in host else host
    info = {"listening": f"ws://{url_host}:{bound}/", "token": token, "token_file": str(path)}

    stop = shutdown or anyio.Event()
    try:
        async with Hub(runtime, replay=replay, max_line=max_line) as hub:
            app = SidecarApp(hub, token, origins=origins)

            async def started() -> None:
                announce(info, ready)

            await host_asgi(app, sock, stop, started, max_message=max_line)
    finally:
        sock.close()
    return 0


def announce(info: dict[str, Any], ready: Callable[[dict[str, Any]], None] | None) -> None:
    """Hand ``info`` (where the server listens) to ``ready``, else print it as one JSON line on stdout."""
    if ready is not None:
        ready(info)
    else:
        sys.stdout.write(json.dumps(info) + "\n")
        sys.stdout.flush()


async def host_asgi(
    app: Any,
    sock: socket.socket,
    stop: anyio.Event,
    started: Callable[[], Awaitable[None]],
    *,
    max_message: int | None = None,
) -> None:
    """Serve the ASGI ``app`` with hypercorn (asyncio or trio, whichever runs) on ``sock`` (bound and
    listening; hypercorn gets a duplicate of it) until ``stop`` is set or SIGINT/SIGTERM arrives.
    ``started`` runs once the server task is started (announce the address there)."""
    import sniffio
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"fd://{os.dup(sock.fileno())}"]  # hypercorn owns (and closes) the descriptor it is given
    if max_message is not None:
        config.websocket_max_message_size = max_message
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 2.0
    async with anyio.create_task_group() as tg:

        async def on_signal() -> None:
            import signal

            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    stop.set()
                    return

        async def run_server() -> None:
            # in a task of its own: hypercorn's shutdown must not touch the caller's task
            if sniffio.current_async_library() == "trio":
                from hypercorn.trio import serve as trio_serve

                await trio_serve(app, config, shutdown_trigger=stop.wait)
            else:
                from hypercorn.asyncio import serve as asyncio_serve

                await asyncio_serve(app, config, shutdown_trigger=stop.wait)
            tg.cancel_scope.cancel()

        if sys.platform != "win32":
            tg.start_soon(on_signal)
        tg.start_soon(run_server)
        await started()
