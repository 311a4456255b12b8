"""The ``opencode`` wire: one ``opencode serve`` per session, driven over HTTP + SSE.

``connect`` starts the server on ``127.0.0.1`` and a free port with a fresh random password
(``OPENCODE_SERVER_PASSWORD``, HTTP Basic, passed in the environment only — never in argv, never
recorded), waits for its "listening" line, then creates (or resumes, or forks) the session and
reads the provider list for the ``model`` and ``effort`` options.

The driver keeps one ``/event`` subscription (read by the ``DriverLoop``'s reader task; reopened
when it drops or stalls — heartbeats missed — with a resync through the REST API so nothing is
lost or sent twice), sends prompts with ``prompt_async``, answers permissions (``once`` /
``always`` / ``reject``) and questions, and ends each turn once: when our session goes idle after
our prompt (``Cancelled`` when we aborted it — the abort itself runs beside the command loop,
bounded, since opencode may never answer it — ``Failed`` with opencode's message after a
``session.error``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import mimetypes
import secrets
import socket
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import attrs

from anyagent import (
    AgentDetails,
    Authenticated,
    AuthStatus,
    AuthUnknown,
    Cancelled,
    Capabilities,
    Capability,
    ChoicesAnswer,
    Completed,
    ConfigChoice,
    ConfigOption,
    DiagnosticCode,
    DiagnosticLevel,
    Failed,
    HistoryEntry,
    InvalidConfiguration,
    McpHttp,
    McpStdio,
    PermissionAnswer,
    PermissionChoice,
    ProtocolFailed,
    QuestionsAnswer,
    ResumeFailed,
    SelectKind,
    SlashCommand,
    TextAnswer,
    Unauthenticated,
    seam,
    toolkit,
)
from anyagent import jsonread as j
from anyagent.process import AgentProcess
from anyagent.wire import HttpReply, HttpWire, SseStream

from .profile import LISTENING, PROFILE, SERVE_ARGS, USERNAME
from .translate import Translation, Translator

__all__ = ["CAPABILITIES", "OpencodeAdapter", "OpencodeDriver"]

CAPABILITIES = Capabilities.of(
    Capability.IMAGES,
    Capability.RESUME,
    Capability.PERMISSIONS,
    Capability.QUESTIONS,
    Capability.ROLLBACK,
    Capability.FORK,
    Capability.COMPACT,
    Capability.SLASH_COMMANDS,
    Capability.PLAN,
    Capability.SUBAGENTS,
    Capability.CONTEXT_USAGE,
    mcp_transports=("stdio", "http"),
)
"""What an opencode session reports (no ``Steer``: mid-turn prompts queue in the engine; no plan usage)."""

LISTEN_TIMEOUT = 25.0
"""Seconds the server may take to print its listening line (about 2-8 s on a loaded 2-core box)."""

CONNECT_TIMEOUT = 10.0
"""Seconds a prompt waits for the event stream to be subscribed before it is sent."""

RECONNECTS = 5
"""Consecutive failed ``/event`` reconnects before the session counts as gone."""

REOPEN_TIMEOUT = 10.0
"""Seconds one attempt to (re)open ``/event`` may wait for the server's answer (a failure then)."""

ABORT_TIMEOUT = 10.0
"""Seconds a ``POST /abort`` may wait for its answer (it runs beside the command loop, never in it:
opencode sometimes stops the run without ever answering)."""

HEARTBEAT_TIMEOUT = 25.0
"""Seconds of silence on ``/event`` that count as a dropped stream, once the server has sent a
``server.heartbeat`` (opencode sends one every 10 s): the stream is then reopened and resynced."""

ATTACHMENT_LIMIT = 20 * 1024 * 1024

_REPLIES = {
    PermissionChoice.ALLOW_ONCE: "once",
    PermissionChoice.ALLOW_ALWAYS: "always",
    PermissionChoice.DENY_ONCE: "reject",
    PermissionChoice.DENY_ALWAYS: "reject",
}


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on right now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def mcp_config(request: seam.ConnectRequest) -> dict[str, Any]:
    """opencode's ``mcp`` config for the session's MCP servers (stdio → ``local``, HTTP → ``remote``)."""
    servers: dict[str, Any] = {}
    for server in request.options.mcp_servers:
        if isinstance(server, McpStdio):
            entry: dict[str, Any] = {"type": "local", "command": [server.command, *server.args], "enabled": True}
            if server.env:
                entry["environment"] = dict(server.env)
            servers[server.name] = entry
        elif isinstance(server, McpHttp):
            remote: dict[str, Any] = {"type": "remote", "url": server.url, "enabled": True}
            if server.headers:
                remote["headers"] = dict(server.headers)
            servers[server.name] = remote
        else:
            raise InvalidConfiguration(f"opencode takes stdio and HTTP MCP servers, not {server.transport}")
    return servers


@attrs.frozen
class Model:
    """One model from ``GET /config/providers``: ``provider/id``, its context window, its variants."""

    provider: str
    id: str
    name: str
    context: int | None
    variants: tuple[str, ...]

    @property
    def value(self) -> str:
        return f"{self.provider}/{self.id}"


def read_models(body: object) -> tuple[list[Model], str | None]:
    """The models in a ``GET /config/providers`` reply and the default ``provider/id`` (if any)."""
    reply = j.obj(body)
    models: list[Model] = []
    for provider in j.arr(reply.get("providers")):
        entry = j.obj(provider)
        provider_id = j.text(entry.get("id"), "")
        for model_id, model in j.obj(entry.get("models")).items():
            info = j.obj(model)
            limit = j.integer(j.obj(info.get("limit")).get("context"))
            variants = tuple(sorted(j.obj(info.get("variants"))))
            models.append(Model(provider_id, str(model_id), j.text(info.get("name"), str(model_id)), limit, variants))
    defaults = j.obj(reply.get("default"))
    default = next((f"{p}/{m}" for p, m in defaults.items() if isinstance(m, str)), None)
    return models, default


class OpencodeAdapter(seam.Adapter):
    """Speaks ``opencode serve``'s HTTP + SSE API."""

    wire = "opencode"

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        """Start `opencode serve` on a loopback port with a fresh password; open or resume the session; its driver."""
        if request.options.config_home_dir is not None:
            raise InvalidConfiguration("opencode has no config-home variable (it follows the XDG base dirs)")
        mcp = mcp_config(request)
        async with toolkit.launching(request, default_args=SERVE_ARGS) as launch:
            secret = secrets.token_urlsafe(32)
            launch.env["OPENCODE_SERVER_PASSWORD"] = secret
            launch.env["OPENCODE_SERVER_USERNAME"] = USERNAME
            if mcp:
                launch.env["OPENCODE_CONFIG_CONTENT"] = json.dumps({"mcp": mcp})
            process = await launch.spawn([*launch.argv, "--port", str(free_port())], drain_stdout=True)
            found = await toolkit.wait_for_listening(process, LISTENING, timeout=LISTEN_TIMEOUT)
            http = HttpWire(found[1], auth=(USERNAME, secret), recorder=launch.recorder, timeout=60.0)
            try:
                return await OpencodeDriver.start(request, launch, process, http)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await http.aclose()
                raise

    async def probe_auth(self, request: seam.ConnectRequest) -> AuthStatus | None:
        """Providers configured (``GET /config/providers`` lists at least one model) → authenticated."""
        async with _side_server(request) as http:
            reply = await http.request("GET", "/config/providers")
        if not reply.ok:
            return AuthUnknown()
        models, _ = read_models(reply.body)
        return Authenticated() if models else Unauthenticated(PROFILE.login)

    async def history(self, request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
        """``GET /session?directory=…`` on a short-lived ``opencode serve``: the sessions opencode keeps
        for ``cwd``'s project (opencode lists per project: ``cwd=None`` lists the launch directory's).
        Child sessions (a subagent's, ``parentID``) are left out; the title is opencode's."""
        where = str(cwd) if cwd is not None else str(request.options.cwd)
        async with _side_server(request) as http:
            reply = await _ok(http, "GET", "/session?directory=" + urllib.parse.quote(where, safe=""))
        entries = []
        for item in j.arr(reply.body):
            session = j.obj(item)
            session_id = j.nonempty(session.get("id"))
            if session_id is None or j.nonempty(session.get("parentID")) is not None:
                continue
            times = j.obj(session.get("time"))
            directory = j.nonempty(session.get("directory"))
            if cwd is not None and directory is not None and directory != where:
                continue
            entries.append(
                HistoryEntry(
                    request.installation.id,
                    session_id,
                    toolkit.title_line(session.get("title")),
                    directory,
                    created_at=toolkit.history_time(j.integer(times.get("created"))),
                    updated_at=toolkit.history_time(j.integer(times.get("updated"))),
                )
            )
        return seam.HistoryListing(entries)


@contextlib.asynccontextmanager
async def _side_server(request: seam.ConnectRequest) -> AsyncIterator[HttpWire]:
    """A short-lived ``opencode serve`` (never recorded) for ``probe_auth`` and ``history``, reaped on
    every path."""
    async with toolkit.launching(request, default_args=SERVE_ARGS, record=False) as launch:
        secret = secrets.token_urlsafe(32)
        launch.env["OPENCODE_SERVER_PASSWORD"] = secret
        process = await launch.spawn([*launch.argv, "--port", str(free_port())], drain_stdout=True)
        try:
            found = await toolkit.wait_for_listening(process, LISTENING, timeout=LISTEN_TIMEOUT)
            async with HttpWire(found[1], auth=(USERNAME, secret)) as http:
                yield http
        finally:
            await process.aclose(0.5, eof_grace=0.0)


class OpencodeDriver(seam.Driver):
    """One session on one ``opencode serve``; see the module docstring."""

    def __init__(
        self,
        request: seam.ConnectRequest,
        launch: toolkit.Launch,
        process: AgentProcess,
        http: HttpWire,
        session: dict[str, Any],
        version: str | None,
        models: list[Model],
        model: str | None,
        commands: tuple[SlashCommand, ...],
    ) -> None:
        self.request = request
        self.process = process
        self.http = http
        self.session_id = j.text(session.get("id"), "")
        self.models = {m.value: m for m in models}
        self.version = version
        self.commands = commands
        self.configuration: dict[str, str] = {}
        self.title = j.nonempty(session.get("title"))
        if model is not None:
            self.configuration["model"] = model
        for key in ("model", "effort"):
            value = request.options.configuration.get(key)
            if isinstance(value, str):
                self.configuration[key] = value
        current = self.models.get(self.configuration.get("model", ""))
        servers = [server.name for server in request.options.mcp_servers]
        self.translator = Translator(self.session_id, current.context if current else None, servers)
        self.info = self._info()
        self.requests: toolkit.RequestBook[tuple[str, str]] = toolkit.RequestBook(self._decline)
        self.loop: toolkit.DriverLoop[object] = toolkit.DriverLoop(
            self._on_frame,
            self._on_command,
            fast_frame=self.translator.fast_delta,
            recorder=launch.recorder,
            cleanup=self._cleanup,
            eof_grace=0.0,  # opencode's server ignores stdin EOF: SIGTERM at once (it exits in ~50 ms)
            name="opencode",
        )
        self.events = EventSource(http, self._gone, self.loop)
        self.loop.attach(process, self.events)
        self.subscribed = anyio.Event()
        self._turn: str | None = None
        self._in_turn = False
        self._busy = False
        self._cancelled = False
        self._error: str | None = None
        self._known: set[str] = set()  # the message ids known when the current turn started
        # messages older than this (epoch ms) are history, never caught up: a new or forked
        # session's creation (a fork's copies keep their times), or now for a resumed one
        # (opencode stamps messages with this machine's clock)
        created = j.integer(j.obj(session.get("time")).get("created"))
        resumed = request.options.resume_token is not None
        self._since = created if created is not None and not resumed else int(time.time() * 1000)

    @classmethod
    async def start(
        cls, request: seam.ConnectRequest, launch: toolkit.Launch, process: AgentProcess, http: HttpWire
    ) -> OpencodeDriver:
        """The handshake: health, the session (new, resumed or forked), providers, commands."""
        health = await _ok(http, "GET", "/global/health")
        options = request.options
        if options.resume_token is not None:
            reply = await http.request("GET", f"/session/{options.resume_token}")
            if not reply.ok:
                raise ResumeFailed(f"opencode has no session {options.resume_token!r} ({reply.status})")
            session = j.obj(reply.body)
        elif options.fork_token is not None:
            body: dict[str, Any] = {"messageID": options.fork_at} if options.fork_at else {}
            reply = await http.request("POST", f"/session/{options.fork_token}/fork", json=body)
            if not reply.ok:
                raise ResumeFailed(
                    f"opencode could not fork {options.fork_token!r} ({reply.status}): {reply.text[:300]}"
                )
            session = j.obj(reply.body)
        else:
            session = j.obj((await _ok(http, "POST", "/session", {})).body)
        if not j.nonempty(session.get("id")):
            raise ProtocolFailed(f"opencode answered a session without an id: {session!r}")
        models, default = read_models((await _ok(http, "GET", "/config/providers")).body)
        config = j.obj((await _ok(http, "GET", "/config")).body)
        model = j.nonempty(config.get("model")) or default
        listed = await http.request("GET", "/command")
        commands = tuple(
            SlashCommand(j.text(j.obj(c).get("name"), ""), j.text(j.obj(c).get("description"), ""))
            for c in (j.arr(listed.body) if listed.ok else [])
            if j.nonempty(j.obj(c).get("name"))
        )
        driver = cls(
            request,
            launch,
            process,
            http,
            session,
            j.nonempty(j.obj(health.body).get("version")),
            models,
            model,
            commands,
        )
        for key in ("model", "effort"):
            value = options.configuration.get(key)
            if isinstance(value, str) and driver._invalid(key, value):
                raise InvalidConfiguration(driver._invalid(key, value) or "")
        return driver

    # -- info

    def _options(self) -> tuple[ConfigOption, ...]:
        current = self.configuration.get("model")
        choices = [ConfigChoice(m.value, m.name) for m in self.models.values()]
        options = [ConfigOption("model", "Model", SelectKind(choices), current, category="model")] if choices else []
        model = self.models.get(current or "")
        if model is not None and model.variants:
            variants = SelectKind([ConfigChoice(v, v) for v in model.variants])
            options.append(
                ConfigOption("effort", "Effort", variants, self.configuration.get("effort"), category="thought_level")
            )
        return tuple(options)

    def _info(self) -> seam.DriverInfo:
        details = AgentDetails(
            version=self.version, capabilities=CAPABILITIES, config_options=self._options(), commands=self.commands
        )
        return seam.DriverInfo(
            details=details,
            configuration=dict(self.configuration),
            resume_token=self.session_id,
            title=self.title,
            ends_agent_turns=False,
        )

    def _invalid(self, key: str, value: str) -> str | None:
        if key == "model":
            return (
                None if value in self.models else f"opencode has no model {value!r} (known: {', '.join(self.models)})"
            )
        model = self.models.get(self.configuration.get("model", ""))
        variants = model.variants if model is not None else ()
        return (
            None
            if value in variants
            else f"the model has no variant {value!r} (known: {', '.join(variants) or 'none'})"
        )

    # -- running

    async def run(self, link: seam.DriverLink) -> None:
        """Drive the opencode server: its event stream and the engine's commands through `link` until closed."""
        await self.loop.run(link)

    async def aclose(self) -> None:
        """Stop the `opencode serve` process (SIGTERM at once: it ignores stdin EOF) and reap it."""
        await self.loop.shutdown()

    async def _cleanup(self) -> None:
        await self.events.aclose()
        await self.http.aclose()

    def _gone(self) -> bool:
        return self.loop.closing or self.process.status is not None

    # -- frames

    async def _on_frame(self, frame: object) -> None:
        """Every frame but the text deltas ``Translator.fast_delta`` takes (the loop's
        ``fast_frame``: the flood's path, sent to the engine as they come)."""
        if type(frame) is dict and frame.get("type") == "message.part.delta":
            props = frame.get("properties")
            if type(props) is dict and props.get("partID") in self.translator.snapshot_only:
                return  # after a resync this part's text comes from its snapshots only
        elif isinstance(frame, _Resync):
            await self._resync()
            return
        elif isinstance(frame, _GaveUp):
            await self._gave_up(frame.reason)
            return
        self.events.heard(frame)  # a heartbeat is never a text delta: the fast path skips this
        await self._apply(self.translator.feed(frame))

    async def _apply(self, out: Translation) -> None:
        if out.connected:
            self.subscribed.set()
        for event in out.events:
            await self.loop.send(event)
        if out.asked is not None:
            self.requests.add((out.asked.kind, out.asked.wire_id), out.asked.wire_id)
        if out.settled is not None and self.requests.take(out.settled.wire_id) is not None:
            await self.loop.send(seam.RequestWithdrawn(out.settled.wire_id))
        if out.session_info is not None:
            await self._session_info(out.session_info)
        if out.busy and self._in_turn:
            self._busy = True
        if out.error is not None:
            if self._in_turn:
                if not (self._cancelled and out.error_name == "MessageAbortedError"):
                    self._error = out.error
                if not self._busy:  # refused before it started (a bad attachment): no idle follows
                    await self._end_turn()
            else:
                await self.loop.diagnostic(f"opencode reported an error: {out.error}", DiagnosticCode.AGENT_ERROR)
        if out.idle and self._in_turn and (self._busy or self._error is not None or self._cancelled):
            await self._end_turn()

    async def _end_turn(self) -> None:
        stop = Cancelled() if self._cancelled else Failed(self._error) if self._error is not None else Completed()
        turn = self._turn
        self._turn, self._in_turn, self._busy, self._cancelled, self._error = None, False, False, False, None
        self.translator.settle_active_tools()  # opencode's late "aborted" updates are the engine's to decide
        await self.loop.send(seam.TurnEnd(stop, turn_id=turn))

    async def _session_info(self, info: Mapping[str, Any]) -> None:
        title = j.nonempty(info.get("title"))
        if title is not None and title != self.title:
            self.title = title
            self.info = self._info()
            await self.loop.send(seam.InfoChanged(self.info))

    async def _resync(self) -> None:
        """After a reconnect, what the gap hid. opencode's ``/event`` replays nothing (its events
        carry no SSE id, it reads no ``Last-Event-ID``), but the new stream was subscribed before
        its headers came: every later event is in it. So: the session's status first (once idle,
        the messages read next are final for this turn), then the text, tools and finished
        messages of the turns this driver ran (``GET /session/{id}/message``, and the same for
        each Task-tool child session), the permissions and questions still open, and the turn's
        end when it ended meanwhile. opencode stores no text of a part still streaming (it reads
        empty), so such a part's text comes from its final snapshot: its later deltas are dropped
        (what the gap hid cannot go before them)."""
        status = await self.http.request("GET", "/session/status")
        state = j.text(j.obj(j.obj(status.body).get(self.session_id)).get("type"), "idle") if status.ok else "busy"
        known, active = set(self.translator.children), self.translator.active_children()
        recent = await self._catch_up(self.session_id)  # may finish a subagent's tool, or find one
        for child in [c for c in self.translator.children if c in active or c not in known]:
            await self._catch_up(child)
        for kind, path in (("permission", "/permission"), ("question", "/question")):
            pending = await self.http.request("GET", path)
            for item in j.arr(pending.body) if pending.ok else []:
                await self._apply(self.translator.feed({"type": f"{kind}.asked", "properties": item}))
        if not self._in_turn:
            return
        infos = [j.obj(j.obj(m).get("info")) for m in recent]
        answers = [i for i in infos if i.get("role") == "assistant" and i.get("id") not in self._known]
        if state == "busy" or answers:
            self._busy = True  # the turn started while the stream was down
        if state == "idle" and (self._busy or self._cancelled or self._error is not None):
            error = j.obj(answers[-1].get("error")) if answers else {}
            name = j.text(error.get("name"), "")
            if name and self._error is None and not (self._cancelled and name == "MessageAbortedError"):
                self._error = j.text(j.obj(error.get("data")).get("message"), "") or name
            await self._end_turn()

    async def _catch_up(self, session: str) -> list[Any]:
        """Send what ``session`` (ours or a child's) said while the stream was down; its messages
        newer than the history."""
        messages = await self.http.request("GET", f"/session/{session}/message")
        recent = [m for m in j.arr(messages.body) if _created(m) >= self._since] if messages.ok else []
        for entry in recent:
            for part in j.arr(j.obj(entry).get("parts")):
                part_id = j.nonempty(j.obj(part).get("id"))
                if part_id is not None:
                    self.translator.snapshot_only.add(part_id)  # its later deltas may repeat what the snapshot holds
        for event in self.translator.catch_up(recent, session):
            await self.loop.send(event)
        return recent

    async def _gave_up(self, reason: str) -> None:
        """The event stream cannot be reopened: say so, and fail the turn with that reason (the
        stream's end then ends the session)."""
        await self.loop.diagnostic(reason, DiagnosticCode.WIRE_FAILED, DiagnosticLevel.ERROR)
        if self._in_turn:
            self._error = self._error or reason
            await self._end_turn()

    def _turn_starts(self) -> None:
        self._known = self.translator.known_messages()

    # -- commands

    async def _on_command(self, command: seam.DriverCommand) -> None:
        if isinstance(command, seam.StartTurn):
            await self._prompt(command)
        elif isinstance(command, seam.AnswerRequest):
            await self._answer(command)
        elif isinstance(command, seam.Decline):
            await self.requests.decline(command.request_id)
        elif isinstance(command, seam.Cancel):
            await self._cancel()
        elif isinstance(command, seam.Configure):
            await self._configure(command)
        elif isinstance(command, seam.Rollback):
            await self._rollback(command)
        elif isinstance(command, seam.Compact):
            await self._compact()
        else:  # Steer: opencode cannot fold text into a running turn
            await toolkit.refuse(self.loop.link, command)

    def _model_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        model = self.configuration.get("model")
        if model is not None and "/" in model:
            provider, model_id = model.split("/", 1)
            fields["model"] = {"providerID": provider, "modelID": model_id}
        if "effort" in self.configuration:
            fields["variant"] = self.configuration["effort"]
        return fields

    async def _prompt(self, command: seam.StartTurn) -> None:
        parts: list[dict[str, Any]] = [{"type": "text", "text": command.input.content}]
        for path in command.input.attachments:
            part = await self._attachment(path)
            if part is not None:
                parts.append(part)
        with anyio.move_on_after(CONNECT_TIMEOUT):
            await self.subscribed.wait()
        await self.loop.send(seam.TurnAck())
        self._turn, self._in_turn, self._busy, self._cancelled, self._error = command.turn_id, True, False, False, None
        self._turn_starts()
        slash = self._slash(command.input.content)
        if slash is not None:  # a slash command: its own route, which answers when the turn is over
            self.loop.start_soon(self._command, command.turn_id, *slash)
            return
        body = {"parts": parts, **self._model_fields()}
        try:
            reply = await self.http.request("POST", f"/session/{self.session_id}/prompt_async", json=body)
        except ProtocolFailed as exc:
            reply = HttpReply(0, None, str(exc))
        await self._refused(command.turn_id, reply)

    def _slash(self, text: str) -> tuple[str, str] | None:
        """``("name", "arguments")`` when ``text`` is ``/name args`` and ``name`` is a listed command."""
        if not text.startswith("/"):
            return None
        name, _, arguments = text[1:].partition(" ")
        return (name, arguments.strip()) if name in {c.name for c in self.commands} else None

    async def _command(self, turn_id: str, name: str, arguments: str) -> None:
        body: dict[str, Any] = {"command": name, "arguments": arguments}
        model = self.configuration.get("model")
        if model is not None:
            body["model"] = model
        try:
            reply = await self.http.request("POST", f"/session/{self.session_id}/command", json=body, timeout=3600.0)
        except ProtocolFailed as exc:
            reply = HttpReply(0, None, str(exc))
        await self._refused(turn_id, reply)

    async def _refused(self, turn_id: str, reply: HttpReply) -> None:
        """End turn ``turn_id`` ``Failed`` when opencode refused its prompt (and it is still running)."""
        if not reply.ok and self._turn == turn_id:
            self._turn, self._in_turn = None, False
            await self.loop.send(
                seam.TurnEnd(
                    Failed(f"opencode refused the prompt ({reply.status}): {reply.text[:300]}"), turn_id=turn_id
                )
            )

    async def _attachment(self, path: Path) -> dict[str, Any] | None:
        try:
            data = await toolkit.read_attachment(path, ATTACHMENT_LIMIT) or b""
        except (OSError, toolkit.NotRegularFile, toolkit.FileTooLarge) as exc:
            await self.loop.diagnostic(f"attachment {path} not sent: {exc}", DiagnosticCode.ATTACHMENT)
            return None
        mime = mimetypes.guess_type(str(path))[0] or "application/octet-stream"
        url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        return {"type": "file", "mime": mime, "filename": Path(path).name, "url": url}

    async def _answer(self, command: seam.AnswerRequest) -> None:
        handle = self.requests.take(command.request_id)
        if handle is None:
            return
        kind, wire_id = handle
        answer = command.answer
        if kind == "permission" and isinstance(answer, PermissionAnswer):
            await self._reply_permission(wire_id, _REPLIES[answer.choice])
        elif kind == "question" and isinstance(answer, QuestionsAnswer):
            answers: list[list[str]] = []
            for item in answer.answers:
                if isinstance(item, ChoicesAnswer):
                    answers.append(list(item.ids))
                elif isinstance(item, TextAnswer):
                    answers.append([item.value])
                else:
                    answers.append([])
            await self._post(f"/question/{wire_id}/reply", {"answers": answers}, DiagnosticCode.AGENT_ERROR)
        else:
            self.requests.add(handle, command.request_id)
            await toolkit.refuse(self.loop.link, command, f"a {kind} of opencode's cannot take that answer")

    async def _reply_permission(self, wire_id: str, reply: str) -> None:
        await self._post(f"/permission/{wire_id}/reply", {"reply": reply}, DiagnosticCode.AGENT_ERROR)

    async def _decline(self, handle: tuple[str, str]) -> None:
        kind, wire_id = handle
        if kind == "permission":
            await self._reply_permission(wire_id, "reject")
        else:
            await self._post(f"/question/{wire_id}/reject", None, DiagnosticCode.AGENT_ERROR)

    async def _post(self, path: str, body: Any, code: str) -> HttpReply | None:
        try:
            reply = await self.http.request("POST", path, json=body)
        except ProtocolFailed as exc:
            await self.loop.diagnostic(f"POST {path} failed: {exc}", DiagnosticCode.WRITE_FAILED)
            return None
        if not reply.ok:
            await self.loop.diagnostic(f"opencode refused POST {path} ({reply.status}): {reply.text[:300]}", code)
        return reply

    async def _cancel(self) -> None:
        if not self._in_turn:
            await toolkit.refuse(self.loop.link, seam.Cancel())
            return
        self._cancelled = True
        # opencode's abort settles the tool, but leaves its pending permissions and questions listed:
        # forget them here (the engine's Declines that follow then find nothing to answer)
        for request_id in self.requests.find(lambda handle: True):
            self.requests.take(request_id)
        # never in the command loop: a server that stops the run but leaves the abort unanswered
        # must not hold up the next prompt (or close) until the HTTP timeout
        self.loop.start_soon(self._abort)

    async def _abort(self) -> None:
        path = f"/session/{self.session_id}/abort"
        try:
            reply = await self.http.request("POST", path, timeout=ABORT_TIMEOUT)
        except ProtocolFailed as exc:
            await self.loop.diagnostic(f"POST {path} failed: {exc}", DiagnosticCode.WRITE_FAILED)
            return
        if not reply.ok:
            await self.loop.diagnostic(
                f"opencode refused POST {path} ({reply.status}): {reply.text[:300]}", DiagnosticCode.AGENT_ERROR
            )

    async def _configure(self, command: seam.Configure) -> None:
        value = command.value
        problem = self._invalid(command.option_id, value) if isinstance(value, str) else "not a string"
        if command.option_id not in ("model", "effort") or problem is not None or not isinstance(value, str):
            await toolkit.refuse(self.loop.link, command, problem or f"opencode has no setting {command.option_id!r}")
            return
        self.configuration[command.option_id] = value
        if command.option_id == "model":
            model = self.models[value]
            self.translator.context_window = model.context
            if self.configuration.get("effort") not in model.variants:
                self.configuration.pop("effort", None)
        self.info = self._info()
        await self.loop.send(seam.InfoChanged(self.info))

    async def _rollback(self, command: seam.Rollback) -> None:
        messages = await self.http.request("GET", f"/session/{self.session_id}/message")
        users = [
            j.text(j.obj(j.obj(entry).get("info")).get("id"), "")
            for entry in (j.arr(messages.body) if messages.ok else [])
            if j.obj(j.obj(entry).get("info")).get("role") == "user"
        ]
        if len(users) < command.turns:
            await toolkit.refuse(
                self.loop.link, command, f"opencode holds {len(users)} turns, cannot roll back {command.turns}"
            )
            return
        reply = await self._post(
            f"/session/{self.session_id}/revert", {"messageID": users[-command.turns]}, DiagnosticCode.ROLLBACK_REFUSED
        )
        if reply is not None and reply.ok:
            await self.loop.send(seam.InfoChanged(self.info))

    async def _compact(self) -> None:
        model = self.configuration.get("model", "")
        if "/" not in model:
            await self.loop.diagnostic("opencode needs a model to compact with", DiagnosticCode.COMPACT_FAILED)
            await self.loop.send(seam.TurnEnd(Failed("no model to compact with")))
            return
        provider, model_id = model.split("/", 1)
        self._turn, self._in_turn, self._busy, self._cancelled, self._error = None, True, False, False, None
        self._turn_starts()
        self.loop.start_soon(self._summarize, provider, model_id)

    async def _summarize(self, provider: str, model_id: str) -> None:
        body = {"providerID": provider, "modelID": model_id}
        try:
            reply = await self.http.request("POST", f"/session/{self.session_id}/summarize", json=body, timeout=600.0)
        except ProtocolFailed as exc:
            reply = HttpReply(0, None, str(exc))
        if not reply.ok and self._in_turn and self._turn is None:
            await self.loop.diagnostic(f"opencode could not compact: {reply.text[:300]}", DiagnosticCode.COMPACT_FAILED)
            self._in_turn = False
            await self.loop.send(seam.TurnEnd(Failed(f"compaction failed ({reply.status})")))


class _Resync:
    """What ``EventSource`` hands the loop first after a reconnect."""


@attrs.frozen
class _GaveUp:
    """What ``EventSource`` hands the loop once it cannot reopen the stream (then it ends)."""

    reason: str


class EventSource:
    """The loop's frame source: the events of ``/event``, read in the loop's reader task (no
    hand-off between tasks per event). When the stream drops it is reopened (at most
    ``RECONNECTS`` failures in a row, with back-off; an attempt the server leaves unanswered
    fails after ``REOPEN_TIMEOUT``) and a ``_Resync`` comes first. A stream that stays silent for
    ``HEARTBEAT_TIMEOUT`` after the server has sent heartbeats counts as dropped (a stall with the
    connection open). Out of retries, a ``_GaveUp``
    comes, then the end (``anyio.EndOfStream``: the loop ends the session); it ends at once when
    ``gone()``."""

    def __init__(self, http: HttpWire, gone: Callable[[], bool], loop: toolkit.DriverLoop[object]) -> None:
        self._http = http
        self._gone = gone
        self._loop = loop
        self._stack: contextlib.AsyncExitStack | None = None
        self._stream: SseStream | None = None
        self._opened = 0
        self._failures = 0
        self._problem = "it ended"
        self._done = False
        self._heartbeats = False  # once the server sent one, silence past HEARTBEAT_TIMEOUT is a drop

    async def receive(self) -> object:
        while True:
            if self._stream is None:
                if self._gone() or self._done:
                    raise anyio.EndOfStream
                if self._failures > RECONNECTS:
                    self._done = True
                    return _GaveUp(
                        f"opencode's event stream dropped and could not be reopened ({RECONNECTS} tries; "
                        f"last: {self._problem})"
                    )
                if self._failures:
                    await anyio.sleep(min(0.05 * 2**self._failures, 1.0))
                stack = contextlib.AsyncExitStack()
                try:
                    with anyio.fail_after(REOPEN_TIMEOUT):
                        self._stream = await stack.enter_async_context(self._http.events("/event"))
                except (ProtocolFailed, TimeoutError) as exc:
                    await stack.aclose()
                    self._failures += 1
                    self._problem = str(exc) or f"no answer within {REOPEN_TIMEOUT:g} s"
                    continue
                self._stack = stack
                self._opened += 1
                if self._opened > 1:
                    return _Resync()
            try:
                with anyio.fail_after(HEARTBEAT_TIMEOUT if self._heartbeats else None):
                    event = await self._stream.__anext__()
            except (StopAsyncIteration, ProtocolFailed, TimeoutError) as exc:
                await self.aclose()
                self._failures += 1
                stalled = f"no event or heartbeat for {HEARTBEAT_TIMEOUT:g} s"
                self._problem = stalled if isinstance(exc, TimeoutError) else str(exc) or "the server ended it"
                continue
            frame = event.data if event.data is not None else event.text
            if self._failures:
                self.heard(frame)
            return frame

    def receive_nowait(self) -> object:
        """The next event already read from the stream, without waiting (the loop's reader takes
        a flood this way: no wait per event, no ``SseEvent`` built); ``anyio.WouldBlock`` when
        ``receive`` must wait, reopen the stream or end."""
        if self._stream is None:
            raise anyio.WouldBlock
        frame = self._stream.receive_data_nowait()
        if self._failures:
            self.heard(frame)
        return frame

    def heard(self, frame: object) -> None:
        """An event the driver reads in full (every one but a text delta of our session, which is
        never a heartbeat; every one while ``_failures``): a ``server.heartbeat`` arms the stall
        watch, any event but ``server.connected`` ends a run of failed reconnects."""
        if type(frame) is dict:
            kind = frame.get("type")
            if kind == "server.heartbeat":
                self._heartbeats = True
            if self._failures and kind != "server.connected":
                self._failures = 0
        elif self._failures:
            self._failures = 0

    async def aclose(self) -> None:
        """Close the open stream (shielded)."""
        stack, self._stack, self._stream = self._stack, None, None
        if stack is not None:
            with anyio.CancelScope(shield=True):
                await stack.aclose()


def _created(message: object) -> int:
    """When a ``GET /session/{id}/message`` entry was created (epoch ms; 0 if unknown)."""
    return j.integer(j.obj(j.obj(j.obj(message).get("info")).get("time")).get("created")) or 0


async def _ok(http: HttpWire, method: str, path: str, body: Any = None) -> HttpReply:
    reply = await http.request(method, path, json=body)
    if not reply.ok:
        raise ProtocolFailed(f"opencode answered {method} {path} with {reply.status}: {reply.text[:300]}")
    return reply
