"""A small client of the sidecar protocol for the tests: the wrapper rules of anyagent-rs's docs.

Lines are routed inside the reader (a session's events are buffered before ``open`` returns to
the caller), replies by ``id``, events by ``event.session_id``, then the session's ``error`` and
``closed``. Every received line is kept in ``lines`` so a test can validate it against the schemas.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

HERE = Path(__file__).parent
SCRIPTS = HERE / "mock-scripts"
TIMEOUT = 30.0


class ServerError(Exception):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(f"{body.get('kind')}: {body.get('message')}")
        self.body = body
        self.kind = body.get("kind")


class SessionView:
    def __init__(self, session_id: str) -> None:
        self.id = session_id
        self.events: list[dict[str, Any]] = []
        self.read = 0
        self.error: dict[str, Any] | None = None
        self.closed = False
        self.closed_count = 0
        self.changed = anyio.Event()

    def wake(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def next(self) -> dict[str, Any] | None:
        """The next event; None once closed (raises ServerError first if the session failed)."""
        with anyio.fail_after(TIMEOUT):
            while True:
                changed = self.changed
                if self.read < len(self.events):
                    self.read += 1
                    return self.events[self.read - 1]
                if self.error is not None and self.closed:
                    error, self.error = self.error, None
                    raise ServerError(error)
                if self.closed:
                    return None
                await changed.wait()

    async def until(self, kind: str) -> list[dict[str, Any]]:
        seen = []
        while True:
            event = await self.next()
            if event is None:
                raise AssertionError(f"closed before {kind}; saw {[kind_of(e) for e in seen]}")
            seen.append(event)
            if kind_of(event) == kind:
                return seen

    async def drain(self) -> list[dict[str, Any]]:
        seen = []
        while (event := await self.next()) is not None:
            seen.append(event)
        return seen

    async def wait_closed(self) -> None:
        with anyio.fail_after(TIMEOUT):
            while not self.closed:
                changed = self.changed
                await changed.wait()


def kind_of(event: dict[str, Any]) -> str:
    kind = event["kind"]
    return kind if isinstance(kind, str) else next(iter(kind))


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["kind"]["TextDelta"]["text"] for e in events if kind_of(e) == "TextDelta"]


class Client:
    """Protocol state over any transport: ``feed(line)`` from the reader, ``send`` to write."""

    def __init__(self, send: Callable[[str], Awaitable[None]]) -> None:
        self._send = send
        self.lines: list[dict[str, Any]] = []
        self.sent: list[str] = []
        self.hello: dict[str, Any] | None = None
        self.replies: dict[int, dict[str, Any]] = {}
        self.orphans: list[dict[str, Any]] = []  # replies with id null
        self.sessions: dict[str, SessionView] = {}
        self._next = 1
        self._changed = anyio.Event()
        self.ended = False

    def feed(self, raw: str) -> None:
        line = json.loads(raw)
        self.lines.append(line)
        if "hello" in line:
            self.hello = line["hello"]
        elif "event" in line:
            self.view(line["event"]["session_id"]).events.append(line["event"])
            self.view(line["event"]["session_id"]).wake()
        elif "closed" in line:
            view = self.view(line["closed"])
            view.closed = True
            view.closed_count += 1
            view.wake()
        elif "session" in line and "error" in line:
            view = self.view(line["session"])
            view.error = line["error"]
            view.wake()
        elif "id" in line:
            if line["id"] is None:
                self.orphans.append(line)
            else:
                self.replies[line["id"]] = line
        self._changed.set()
        self._changed = anyio.Event()

    def end(self) -> None:
        self.ended = True
        self._changed.set()

    def view(self, session_id: str) -> SessionView:
        if session_id not in self.sessions:
            self.sessions[session_id] = SessionView(session_id)
        return self.sessions[session_id]

    async def send_raw(self, text: str) -> None:
        await self._send(text)

    async def request(self, cmd: str, **fields: Any) -> int:
        """Send a well-formed command (kept in ``sent``: it must validate as a ``Frame``)."""
        cmd_id = self._next
        self._next += 1
        text = json.dumps({"id": cmd_id, "cmd": cmd, **fields})
        self.sent.append(text)
        await self._send(text)
        return cmd_id

    async def reply(self, cmd_id: int) -> dict[str, Any]:
        with anyio.fail_after(TIMEOUT):
            while cmd_id not in self.replies:
                if self.ended:
                    raise ConnectionError("the server went away")
                changed = self._changed
                await changed.wait()
        return self.replies.pop(cmd_id)

    async def call(self, cmd: str, **fields: Any) -> Any:
        line = await self.reply(await self.request(cmd, **fields))
        if "error" in line:
            raise ServerError(line["error"])
        return line["ok"]

    async def open(self, agent: Any = "mock", **fields: Any) -> tuple[dict[str, Any], SessionView]:
        info = await self.call("open", agent=agent, dir=fields.pop("dir", str(HERE)), **fields)
        return info, self.view(info["id"])

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        with anyio.fail_after(TIMEOUT):
            while not predicate():
                if self.ended:
                    raise ConnectionError("the server went away")
                changed = self._changed
                await changed.wait()


def serve_argv(*args: str) -> list[str]:
    """``anyagent serve ARGS`` with this interpreter (the console script of the tested install)."""
    return [sys.executable, "-c", "import sys; from anyagent.cli import main; sys.exit(main())", "serve", *args]


class Stdio:
    """A running ``anyagent serve`` subprocess and the client speaking to it."""

    def __init__(self, process: anyio.abc.Process, client: Client) -> None:
        self.process = process
        self.client = client
        self.stderr = b""
        self.running = anyio.Event()
        self.running.set()

    def pause(self) -> None:
        """Stop reading stdout (the pipe fills, serve's writes block)."""
        self.running = anyio.Event()

    def resume(self) -> None:
        self.running.set()

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()


@asynccontextmanager
async def stdio(
    *args: str,
    script: str | None = "turn",
    check: bool = True,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> AsyncIterator[Stdio]:
    """``anyagent serve --mock SCRIPTS/<script>.json`` (or ``args``); killed and reaped on exit.
    ``env`` replaces this process's environment (the live tier's isolated one)."""
    argv = serve_argv(*(("--mock", str(SCRIPTS / f"{script}.json")) if script else ()), *args)
    environment = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
    process = await anyio.open_process(argv, env=environment, cwd=cwd)
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None

    lock = anyio.Lock()

    async def send(text: str) -> None:
        assert process.stdin is not None
        async with lock:  # one writer at a time (trio refuses concurrent sends)
            await process.stdin.send(text.encode() + b"\n")

    client = Client(send)
    running = Stdio(process, client)

    async def reader() -> None:
        assert process.stdout is not None
        stream = BufferedByteReceiveStream(process.stdout)
        try:
            while True:
                await running.running.wait()
                line = await stream.receive_until(b"\n", 64 * 1024 * 1024)
                client.feed(line.decode())
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            client.end()

    async def errors() -> None:
        assert process.stderr is not None
        async for chunk in process.stderr:
            running.stderr += chunk

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(errors)
            try:
                await client.wait_for(lambda: client.hello is not None)
                yield running
            finally:
                with anyio.CancelScope(shield=True):
                    if process.returncode is None:
                        try:
                            await process.stdin.aclose()
                        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                            pass
                        with anyio.move_on_after(10):
                            await process.wait()
                    if process.returncode is None:
                        process.kill()
                        await process.wait()
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()
    if check:
        validate(client)


def validate(client: Client) -> None:
    """Every line the client saw is a ``Line`` and every line it sent that parses is a ``Frame``
    of the committed schema, and every output line also validates against anyagent-rs's schema."""
    from schema_check import check_lines

    check_lines(client.lines, client.sent)


class Server:
    """A running ``anyagent serve --listen 127.0.0.1:0`` subprocess."""

    def __init__(self, process: anyio.abc.Process, info: dict[str, Any]) -> None:
        self.process = process
        self.url: str = info["listening"]
        self.token: str = info["token"]
        self.token_file = Path(info["token_file"])


@asynccontextmanager
async def ws_server(*args: str, script: str | None = "turn", token_file: Path) -> AsyncIterator[Server]:
    argv = serve_argv(
        *(("--mock", str(SCRIPTS / f"{script}.json")) if script else ()),
        "--listen",
        "127.0.0.1:0",
        "--token-file",
        str(token_file),
        *args,
    )
    process = await anyio.open_process(argv)
    assert process.stdout is not None
    try:
        stream = BufferedByteReceiveStream(process.stdout)
        with anyio.fail_after(TIMEOUT):
            first = await stream.receive_until(b"\n", 65536)
        yield Server(process, json.loads(first))
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.terminate()
                with anyio.move_on_after(10):
                    await process.wait()
            if process.returncode is None:
                process.kill()
            await process.aclose()


class WsConnection:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.running = anyio.Event()
        self.running.set()

    def pause(self) -> None:
        self.running = anyio.Event()

    def resume(self) -> None:
        self.running.set()


@asynccontextmanager
async def ws_connect(
    server: Server,
    *,
    token: str | None = "",
    origin: str | None = None,
    subprotocols: list[str] | None = None,
    queue_size: int = 512,
    check: bool = True,
) -> AsyncIterator[WsConnection]:
    """A client connection (``token=""``: the server's token; None: no Authorization header)."""
    import httpx
    from httpx_ws import WebSocketDisconnect, aconnect_ws

    headers = {}
    if token is not None:
        headers["Authorization"] = f"Bearer {token or server.token}"
    if origin is not None:
        headers["Origin"] = origin
    async with (
        httpx.AsyncClient(timeout=TIMEOUT) as http,
        aconnect_ws(
            server.url,
            http,
            headers=headers,
            subprotocols=subprotocols,
            queue_size=queue_size,
            max_message_size_bytes=64 * 1024 * 1024,
            keepalive_ping_interval_seconds=None,
        ) as ws,
    ):
        lock = anyio.Lock()

        async def send(text: str) -> None:
            async with lock:
                await ws.send_text(text)

        conn = WsConnection(Client(send))

        async def reader() -> None:
            try:
                while True:
                    await conn.running.wait()
                    conn.client.feed(await ws.receive_text())
            except (WebSocketDisconnect, anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            finally:
                conn.client.end()

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await conn.client.wait_for(lambda: conn.client.hello is not None)
            try:
                yield conn
            finally:
                tg.cancel_scope.cancel()
    if check:
        validate(conn.client)
