"""``anyagent ui``: a local web app over every agent, served by the sidecar's WebSocket mode.

One ASGI app on 127.0.0.1 serves the static files (``anyagent_server/static``), a small JSON API
over the store (the thread list, a thread's events) and, on ``/ws``, the sidecar protocol itself
(``SidecarApp`` over a ``Hub``), so the page speaks to agents exactly as any sidecar client does.
Every session the page opens is recorded into the store (``Store.record`` through the hub's ``Tee``).

Security: the URL printed (and opened) carries the token once; ``GET /?token=…`` answers with an
HttpOnly, SameSite=Strict cookie and a redirect to ``/``. Every later request needs that cookie, a
``Host`` of the bound loopback address, and, when the browser sends one, an ``Origin`` equal to the
page's own; anything else is refused with 403 before any data.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import mimetypes
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Callable
from http.cookies import SimpleCookie
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import anyio

from anyagent import (
    AgentError,
    Delivery,
    Event,
    Events,
    Runtime,
    Session,
    SessionOptions,
    Steered,
    UnsupportedFeature,
    UserMessage,
)

from . import wire
from .hub import Hub
from .websocket import Receive, Scope, Send, SidecarApp, announce, host_asgi

if TYPE_CHECKING:
    from anyagent_store import Recording

__all__ = ["COOKIE", "StoreTee", "UiApp", "serve_ui"]

COOKIE = "anyagent_ui"
"""The session cookie's name (HttpOnly, SameSite=Strict, Path=/)."""

MAX_EVENTS = 20_000
"""Stored events one ``/api/threads/ID/events`` answer carries at most."""


class StoreTee:
    """Records every hub session into ``store`` (a ``Store`` of anyagent-store, already open)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.recordings: dict[str, Any] = {}
        self.threads: dict[str, str] = {}  # session id -> thread id
        self.starts: dict[str, int] = {}  # session id -> events its thread held before it (the page reads those)
        self.early: dict[str, list[tuple[str, Delivery]]] = {}  # prompts delivered before the thread existed
        self.steered: dict[str, set[str]] = {}  # session id -> ids of its prompts that joined a running turn

    @contextlib.asynccontextmanager
    async def record(self, session: Session, events: Events, options: SessionOptions) -> AsyncIterator[Any]:
        """``Store.record`` the session (a new thread in the session's directory)."""
        async with self.store.record(session, events, cwd=str(options.cwd)) as recording:
            self._register(recording)
            for text, delivery in self.early.pop(session.id, []):
                recording.note_prompt(text, delivery)  # before any event: none was read yet
            try:
                yield recording
            finally:
                self.forget(session.id)

    def reopened(self, recording: Any) -> contextlib.AbstractAsyncContextManager[AsyncIterator[Event]]:
        """The source ``Hub.adopt`` reads for a session that ``Store.reopen``/``Store.handoff`` opened:
        the recording, registered now (its thread is live from this call), entered in the pump task."""
        self._register(recording)

        @contextlib.asynccontextmanager
        async def entered() -> AsyncIterator[AsyncIterator[Event]]:
            try:
                async with recording:
                    yield recording
            finally:
                self.forget(recording.session.id)

        return entered()

    def _register(self, recording: Any) -> None:
        session = recording.session.id
        self.recordings[session] = recording
        self.threads[session] = recording.thread.id
        self.starts[session] = recording.thread.event_count

    def forget(self, session: str) -> None:
        """The session's recording ended (or never began): its thread is no longer live."""
        self.recordings.pop(session, None)
        self.threads.pop(session, None)
        self.starts.pop(session, None)
        self.steered.pop(session, None)

    def prompted(self, session: Session, text: str, delivery: Delivery) -> None:
        """Store the prompt (it titles a new thread)."""
        if isinstance(delivery.kind, Steered):
            self.steered.setdefault(session.id, set()).add(str(delivery.prompt_id))
        recording = self.recordings.get(session.id)
        if recording is not None:
            recording.note_prompt(text, delivery)
        else:  # the pump has not made the thread yet (a prompt right after ``open``)
            self.early.setdefault(session.id, []).append((text, delivery))


def _static(name: str) -> bytes | None:
    base = resources.files("anyagent_server") / "static"
    target = base
    for part in name.split("/"):
        if part in ("", ".", ".."):
            return None
        target = target / part
    try:
        return target.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _thread_json(thread: Any, live: dict[str, str]) -> dict[str, Any]:
    return {
        "id": thread.id,
        "agent": thread.agent_id,
        "title": thread.title,
        "cwd": thread.cwd,
        "status": thread.status.value,
        "updated_at": thread.updated_at.isoformat(),
        "events": thread.event_count,
        "used_tokens": thread.used_tokens,
        "window_tokens": thread.window_tokens,
        "cost_usd": thread.cost_usd,
        "resume_token": thread.resume_token,
        "session": live.get(thread.id),
    }


class UiApp:
    """The ``anyagent ui`` ASGI app: static files, ``/api/...`` over ``store``, ``/ws`` (the sidecar)."""

    def __init__(self, hub: Hub, store: Any, tee: StoreTee, token: str, hosts: set[str]) -> None:
        self.hub = hub
        self.store = store
        self.tee = tee
        self.token = token
        self.hosts = hosts
        self.sidecar = SidecarApp(hub, token, origins=[f"http://{h}" for h in hosts])
        self._continuing = anyio.Lock()  # one reopen at a time: a thread is never recorded by two sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.sidecar(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        origin = headers.get("origin")
        if host not in self.hosts or (origin is not None and origin.rstrip("/") != f"http://{host}"):
            await self._refuse(scope, receive, send)
            return
        path = scope.get("path", "/")
        if scope["type"] == "http" and path == "/" and scope.get("method") == "GET":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0]
            if given:
                if not hmac.compare_digest(given.encode(), self.token.encode()):
                    await _respond(send, 403, b"wrong token\n")
                    return
                cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                await _respond(send, 303, b"", extra=[(b"location", b"/"), (b"set-cookie", cookie.encode())])
                return
        if not self._has_cookie(headers):
            await self._refuse(scope, receive, send)
            return
        if scope["type"] == "websocket":
            if path != "/ws":
                await self._refuse(scope, receive, send)
                return
            inner = dict(scope)
            inner["headers"] = [
                *[(k, v) for k, v in scope.get("headers", []) if k.lower() != b"authorization"],
                (b"authorization", f"Bearer {self.token}".encode()),
            ]
            await self.sidecar(inner, receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            if scope.get("method") == "POST":
                await self._post(path, scope, receive, send)
            else:
                await self._http(path, scope, send)
        except AgentError as exc:  # typed: a store error, NotInstalled, ResumeFailed, UnsupportedFeature...
            await _respond(send, 409, json.dumps({"error": wire.encode_error(exc)}).encode(), "json")
        except Exception as exc:  # a bug answers 500 with its message
            await _respond(send, 500, json.dumps({"error": type(exc).__name__, "message": str(exc)}).encode(), "json")

    def _has_cookie(self, headers: dict[str, str]) -> bool:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:
            return False
        morsel = jar.get(COOKIE)
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), self.token.encode())

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await receive()
            await send({"type": "websocket.close", "code": 1008})
        else:
            await _respond(send, 403, b"forbidden: open the URL anyagent ui printed\n")

    async def _http(self, path: str, scope: Scope, send: Send) -> None:
        if path == "/":
            body = _static("index.html")
            assert body is not None
            await _respond(send, 200, body, "text/html; charset=utf-8")
            return
        if path.startswith("/static/"):
            body = _static(path[len("/static/") :])
            if body is None:
                await _respond(send, 404, b"not found\n")
                return
            kind = mimetypes.guess_type(path)[0] or "application/octet-stream"
            if path.endswith(".js"):
                kind = "text/javascript"
            await _respond(send, 200, body, f"{kind}; charset=utf-8" if kind.startswith("text") else kind)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        live = {thread: session for session, thread in self.tee.threads.items()}
        if path == "/api/threads":
            text = (query.get("q") or [""])[0] or None
            page = await self.store.threads(text=text, limit=200)
            await _json(send, {"threads": [_thread_json(t, live) for t in page.threads]})
            return
        if path.startswith("/api/threads/") and path.endswith("/events"):
            key = path[len("/api/threads/") : -len("/events")]
            thread = await self.store.thread(key)
            session = live.get(thread.id)
            # a live thread's events since its session began come from the session (the sidecar's replay)
            upto = self.tee.starts.get(session, 0) if session is not None else None
            events = []
            if upto != 0:
                async for stored in self.store.events(thread, upto=upto):
                    if stored.event is not None:
                        events.append(wire.encode_event(stored.event))
                    if len(events) >= MAX_EVENTS:
                        break
            answer: dict[str, Any] = {"thread": _thread_json(thread, live), "events": events}
            if session is None:
                answer["resume"] = await self._resumable(thread)
            else:  # the session's events do not hold the page's prompts: their text by prompt id, and
                # for a prompt steered into a running turn (no TurnStarted names it) the sequence of the
                # session's event it followed, where the page shows it
                from anyagent_store import PROMPT_EXTENSION as PROMPT_MARK

                prompts: dict[str, str] = {}
                steers: dict[str, int] = {}
                answer["prompts"], answer["steers"] = prompts, steers
                steered = self.tee.steered.get(session, set())
                recording = self.tee.recordings.get(session)
                if recording is not None:  # the prompts noted so far reach the store first (it writes in batches)
                    with contextlib.suppress(AgentError):  # a failed recording (StoreFull, ...) shows what it holds
                        await recording.flush()
                last = 0
                async for stored in self.store.events(thread, after=upto or 0):
                    event = stored.event
                    if event is None:
                        continue
                    if isinstance(event.kind, UserMessage) and PROMPT_MARK in event.extensions:
                        prompt_id = str(event.extensions[PROMPT_MARK])
                        prompts[prompt_id] = event.kind.text
                        if prompt_id in steered:
                            steers[prompt_id] = last
                    else:
                        last = event.sequence
            await _json(send, answer)
            return
        await _respond(send, 404, b"not found\n")

    async def _resumable(self, thread: Any) -> dict[str, Any] | None:
        """None when the page may continue ``thread``, else why not (a typed error body)."""
        if not thread.resume_token:
            return wire.encode_error(UnsupportedFeature(f"thread {thread.id} has no resume token: the agent gave none"))
        try:
            await self.hub.installation(thread.agent_id)
        except AgentError as exc:
            return wire.encode_error(exc)
        return None

    async def _post(self, path: str, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body") or len(body) > 65536:
                break
        if path.startswith("/api/threads/") and path.endswith("/continue"):
            session = await self.continue_thread(path[len("/api/threads/") : -len("/continue")])
            await _json(send, {"session": session})
            return
        if path.startswith("/api/threads/") and path.endswith("/handoff"):
            try:
                agent = json.loads(body or b"{}").get("agent")
            except (ValueError, AttributeError):
                agent = None
            if not isinstance(agent, str):
                await _respond(send, 400, b'{"error": {"kind": "InvalidRequest", "message": "no agent"}}', "json")
                return
            session, thread = await self.handoff_thread(path[len("/api/threads/") : -len("/handoff")], agent)
            await _json(send, {"session": session, "thread": thread})
            return
        await _respond(send, 404, b"not found\n")

    async def continue_thread(self, key: str) -> str:
        """Reopen stored thread ``key`` through ``Store.reopen`` (its resume token; the agent's replays
        of the history dropped) and serve the session on the hub, recorded on into the same thread.
        Returns the session id (the thread's live session when it already has one)."""
        async with self._continuing:
            thread = await self.store.thread(key)
            for session, thread_id in self.tee.threads.items():
                if thread_id == thread.id:
                    return session
            # no resume token: the store refuses (UnsupportedFeature) before starting anything
            agent = await self.hub.installation(thread.agent_id) if thread.resume_token else None
            recording = await self.store.reopen(self.hub.runtime, thread, agent=agent, history=False)
            return await self._serve(recording)

    async def handoff_thread(self, key: str, agent_id: str) -> tuple[str, str]:
        """Continue stored thread ``key`` on agent ``agent_id`` through ``Store.handoff``: a new thread
        linked to it, whose first prompt (sent when the session's pump enters the recording) carries
        the conversation so far; served on the hub like ``continue_thread``'s. Returns the session id
        and the new thread's id."""
        thread = await self.store.thread(key)
        agent = await self.hub.installation(agent_id)
        recording = await self.store.handoff(self.hub.runtime, thread, agent)
        return await self._serve(recording), str(recording.thread.id)

    async def _serve(self, recording: Recording) -> str:
        """Serve ``recording``'s session on the hub, its events recorded on through the tee; a session
        the hub cannot take is closed (shielded) and forgotten. Returns the session id."""
        session = recording.session
        try:
            self.hub.adopt(session, self.tee.reopened(recording))
        except BaseException:
            self.tee.forget(session.id)
            with anyio.CancelScope(shield=True):
                await session.close()
            raise
        return str(session.id)


_CSP = b"default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'"


async def _json(send: Send, value: Any) -> None:
    await _respond(send, 200, json.dumps(value, ensure_ascii=False).encode(), "json")


async def _respond(
    send: Send, status: int, body: bytes, kind: str = "text/plain", extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    if kind == "json":
        kind = "application/json"
    headers = [
        (b"content-type", kind.encode()),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"no-referrer"),
        (b"content-security-policy", _CSP),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def serve_ui(
    runtime: Runtime,
    store: Any,
    *,
    port: int = 0,
    open_browser: bool = True,
    ready: Callable[[dict[str, Any]], None] | None = None,
    shutdown: anyio.Event | None = None,
) -> int:
    """Serve the web app for ``runtime`` with threads in ``store`` (open) on 127.0.0.1:``port`` until
    ``shutdown`` is set or SIGINT/SIGTERM arrives. Prints ``{"url": URL}`` (the URL with the token)
    on stdout once listening (``ready`` gets the dict instead), and opens the browser on it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        print(f"error: cannot listen on 127.0.0.1:{port}: {exc}", file=sys.stderr)
        return 2
    sock.listen(128)
    sock.setblocking(False)
    bound = sock.getsockname()[1]
    token = secrets.token_urlsafe(32)
    hosts = {f"127.0.0.1:{bound}", f"localhost:{bound}"}
    url = f"http://127.0.0.1:{bound}/?token={token}"
    info = {"url": url, "store": store.location}
    stop = shutdown or anyio.Event()
    tee = StoreTee(store)
    try:
        async with Hub(runtime, tee=tee) as hub:
            app = UiApp(hub, store, tee, token, hosts)

            async def started() -> None:
                announce(info, ready)
                if open_browser:
                    import webbrowser

                    await anyio.to_thread.run_sync(webbrowser.open, url)

            await host_asgi(app, sock, stop, started)
    finally:
        sock.close()
    return 0
