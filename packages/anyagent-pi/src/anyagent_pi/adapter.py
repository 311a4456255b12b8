"""The ``pi`` wire: ``PiAdapter`` launches ``pi --mode rpc``, ``PiDriver`` serves one session.

Flow::

    connect ─► toolkit.launching: spawn ``pi --mode rpc [--session F] [--no-tools --no-session]
               [-e gate.ts]`` ─► get_state, get_available_models, get_available_thinking_levels,
               get_commands, clear_queue (does this pi have it?) ─► DriverInfo
    run     ─► toolkit.DriverLoop: stdout frames ─► Translator / dialogs ─► link.send(...);
               StartTurn ─► ``prompt`` + TurnAck; Steer ─► ``steer`` (only while a run streams);
               AnswerRequest / Decline ─► ``extension_ui_response``; Configure ─► ``set_model`` /
               ``set_thinking_level``; Cancel ─► ``clear_queue`` then ``abort``; Compact ─►
               ``compact`` (its response ends the compaction turn); Rollback ─► refused.

Queue and steer: prompts anyagent queues stay in the engine and go out as plain ``prompt``s after
the turn ends (never pi's ``followUp``), so their order is the engine's. A steer goes out as pi's
``steer`` and is delivered by pi before its next model call in the same run. On cancel the adapter
empties pi's steering queue first: pi 0.73.1 and 1.6.0 were seen keeping a steer queued across
``abort`` and delivering it with the *next* prompt (neither starts a run by itself), so a steer
belongs to the turn it was folded into and is dropped with it. The echo of a delivered steer is
not a ``UserMessage`` (the translator drops the texts the driver steered). pi versions without
``clear_queue`` (0.73.1) get no ``Steer`` capability: the engine then queues mid-turn prompts
itself.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs

from anyagent import (
    AgentDetails,
    AgentError,
    AgentInstallation,
    AgentProfile,
    Authenticated,
    AuthKind,
    AuthRequired,
    AuthStatus,
    BooleanKind,
    Capabilities,
    Capability,
    Completed,
    ConfigChoice,
    ConfigOption,
    ConfigValue,
    Diagnostic,
    DiagnosticCode,
    DiagnosticLevel,
    Failed,
    LoginMethod,
    PermissionMode,
    RequestOpened,
    ResumeFailed,
    SelectKind,
    SessionOptions,
    SlashCommand,
    TerminalLogin,
    TextDelta,
    Unauthenticated,
    UnsupportedFeature,
    seam,
    toolkit,
)
from anyagent import jsonread as j

from .connection import CALL_TIMEOUT, CLOSE_GRACE, Connection, Incoming, Reply, failure
from .gate import GATE_OPTION, write_gate
from .profile import BASE_ARGS, PROFILE
from .prompt import prompt_fields
from .translate import Translator
from .ui import FIRE_AND_FORGET, Dialog, cancelled, dialog_of, notify_info

__all__ = ["CAPABILITIES", "PiAdapter", "PiDriver"]

CAPABILITIES = Capabilities.of(
    Capability.IMAGES,
    Capability.RESUME,
    Capability.QUESTIONS,
    Capability.COMPACT,
    Capability.SLASH_COMMANDS,
    Capability.CONTEXT_USAGE,
)
"""What every pi session reports. ``STEER`` is added when pi has ``clear_queue`` (a cancel must
be able to drop a steer), ``PERMISSIONS`` only while the opt-in permission gate is loaded, and
``RESUME`` is dropped for sessions without a transcript (``generate``)."""

_STOPPED = "pi stopped reading its input"
_DEFAULT_LEVELS = tuple(str(level) for level in j.arr(PROFILE.quirks.get("thinking_levels")))


def _login(installation: AgentInstallation, profile: AgentProfile | None) -> tuple[LoginMethod, ...]:
    methods: list[LoginMethod] = []
    for method in (profile or PROFILE).login:
        if isinstance(method, TerminalLogin) and method.command[:1] == ("pi",):
            method = TerminalLogin((str(installation.executable_path), *method.command[1:]), method.description)
        methods.append(method)
    return tuple(methods)


def installed_version(executable: Path) -> str | None:
    """The version of an npm-installed pi, from the ``package.json`` beside its resolved
    ``dist/cli.js`` (no process: ``pi --version`` takes about 2 s); None elsewhere."""
    try:
        resolved = executable.resolve()
        for folder in list(resolved.parents)[:3]:
            manifest = folder / "package.json"
            if manifest.is_file() and manifest.stat().st_size < 1_000_000:
                data = json.loads(manifest.read_text(encoding="utf-8"))
                if isinstance(data, dict) and str(data.get("name", "")).endswith("/pi-coding-agent"):
                    return j.nonempty(data.get("version"))
    except (OSError, ValueError):
        return None
    return None


def _gate_wanted(options: SessionOptions) -> bool:
    return options.permissions is PermissionMode.ASK and options.configuration.get(GATE_OPTION) is True


def _extra_args(options: SessionOptions, gate: Path | None) -> list[str]:
    args: list[str] = []
    if options.fork_token is not None:
        raise UnsupportedFeature("pi cannot fork a session over its RPC wire")
    if options.no_tools:
        args += ["--no-tools", "--no-session"]
    elif options.resume_token is not None:
        args += ["--session", options.resume_token]
    if gate is not None:
        args += ["-e", str(gate)]
    return args


@attrs.define
class _Handshake:
    """What pi said at start-up."""

    state: Mapping[str, Any]
    models: Sequence[Mapping[str, Any]]
    levels: tuple[str, ...] | None
    commands: tuple[SlashCommand, ...]
    clear_queue: bool


async def _handshake(connection: Connection) -> _Handshake:
    state = await connection.call("get_state")
    if state.get("success") is not True:
        raise AgentError(f"pi refused get_state: {j.text(state.get('error'), '')}")
    models_reply = await connection.call("get_available_models")
    models = [j.obj(model) for model in j.arr(j.obj(models_reply.get("data")).get("models"))]
    levels_reply = await connection.call("get_available_thinking_levels")
    levels: tuple[str, ...] | None = None
    if levels_reply.get("success") is True:
        levels = tuple(str(level) for level in j.arr(j.obj(levels_reply.get("data")).get("levels")))
    commands_reply = await connection.call("get_commands")
    commands = tuple(
        SlashCommand(name, j.text(command.get("description"), ""))
        for command in (j.obj(item) for item in j.arr(j.obj(commands_reply.get("data")).get("commands")))
        if (name := j.nonempty(command.get("name")))
    )
    queue_reply = await connection.call("clear_queue")
    return _Handshake(j.obj(state.get("data")), models, levels, commands, queue_reply.get("success") is True)


def _model_value(model: Mapping[str, Any]) -> str | None:
    provider, model_id = j.nonempty(model.get("provider")), j.nonempty(model.get("id"))
    if provider is None or model_id is None or provider == "unknown":
        return None
    return f"{provider}/{model_id}"


def _auth(handshake: _Handshake, login: tuple[LoginMethod, ...]) -> AuthStatus:
    if not handshake.models and _model_value(j.obj(handshake.state.get("model"))) is None:
        return Unauthenticated(login)
    return Authenticated(AuthKind.OTHER)


@attrs.frozen
class _Setup:
    launch: toolkit.Launch
    login: tuple[LoginMethod, ...]
    gate: Path | None

    async def open(self) -> Connection:
        argv = [*self.launch.argv, *_extra_args(self.launch.request.options, self.gate)]
        process = await self.launch.spawn(argv)
        return Connection(process)


@asynccontextmanager
async def _launching(request: seam.ConnectRequest, *, record: bool = True) -> AsyncIterator[_Setup]:
    gate = write_gate() if _gate_wanted(request.options) else None
    try:
        async with toolkit.launching(request, default_args=BASE_ARGS, record=record) as launch:
            yield _Setup(launch, _login(request.installation, request.profile), gate)
    except BaseException:
        _remove_gate(gate)
        raise


def _remove_gate(gate: Path | None) -> None:
    if gate is not None:
        shutil.rmtree(gate.parent, ignore_errors=True)


class PiAdapter(seam.Adapter):
    """pi over its JSON-lines RPC mode (wire ``"pi"``)."""

    wire = "pi"

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        """Launch ``pi --mode rpc``, handshake, apply the requested model and effort.

        Raises ``AuthRequired`` when pi has no usable model (no provider key, no login),
        ``ResumeFailed`` for a session file that does not exist, ``UnsupportedFeature`` for a fork,
        ``SpawnFailed``/``ProcessExited``/``ProtocolFailed`` when it will not start.
        """
        async with _launching(request) as setup:
            connection = await setup.open()
            resuming = request.options.resume_token is not None
            try:
                handshake = await _handshake(connection)
            except AgentError as exc:
                await connection.close(grace=0.5)
                stderr = connection.process.stderr_tail
                if resuming and "No session found" in stderr:
                    raise ResumeFailed(stderr.strip().splitlines()[-1]) from exc
                raise
            except BaseException:
                await connection.close(grace=0.5)
                raise
            if resuming and not handshake.state.get("messageCount"):
                # pi opens a new, empty session at a session-file path that does not exist
                await connection.close(grace=0.5)
                raise ResumeFailed(f"pi has no conversation in {request.options.resume_token}")
            auth = _auth(handshake, setup.login)
            if isinstance(auth, Unauthenticated):
                await connection.close(grace=0.5)
                raise AuthRequired(setup.login, "pi has no model it can use: log in or set a provider API key")
            version = request.installation.version or await anyio.to_thread.run_sync(
                installed_version, request.installation.executable_path
            )
            driver = PiDriver(setup, connection, handshake, auth, version)
            await driver.apply_initial(dict(request.options.configuration))
            return driver

    async def probe_auth(self, request: seam.ConnectRequest) -> AuthStatus | None:
        """Launch without tools or a session, read the models pi can use, stop (~2 s)."""
        options = attrs.evolve(request.options.without_tools(), configuration={})
        request = attrs.evolve(request, options=options)
        async with _launching(request, record=False) as setup:
            connection = await setup.open()
            try:
                handshake = await _handshake(connection)
            finally:
                await connection.close(grace=0.5)
        return _auth(handshake, setup.login)

    async def history(self, request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
        """pi's sessions from its session files (``anyagent_pi.history``); no launch."""
        from .history import history

        return await history(request, cwd)


class PiDriver(seam.Driver):
    """One pi session: see the module docstring. Built by ``PiAdapter.connect``."""

    def __init__(
        self, setup: _Setup, connection: Connection, handshake: _Handshake, auth: AuthStatus, version: str | None
    ) -> None:
        self._setup = setup
        self._version = version
        self._connection = connection
        self._translator = Translator()
        self._auth = auth
        self._models = handshake.models
        self._levels = handshake.levels
        self._commands = handshake.commands
        self._steer = handshake.clear_queue
        self._gate = setup.gate is not None
        self._dialogs: toolkit.RequestBook[Dialog] = toolkit.RequestBook(self._dismiss)
        self._command_turn = False
        state = handshake.state
        self._model: Mapping[str, Any] = j.obj(state.get("model"))
        self._effort = j.text(state.get("thinkingLevel"), "off")
        self._translator.window = _window(self._model)
        persistent = not setup.launch.request.options.no_tools
        self._token = (
            (j.nonempty(state.get("sessionFile")) or j.nonempty(state.get("sessionId"))) if persistent else None
        )
        self.info = self._driver_info()
        self.loop: toolkit.DriverLoop[Incoming] = toolkit.DriverLoop(
            self._on_frame,
            self._on_command,
            recorder=setup.launch.recorder,
            on_exit=self._on_exit,
            cleanup=self._cleanup,
            close_grace=CLOSE_GRACE,
            name="pi",
            fast_frame=self._fast_frame,  # the flood's deltas, without ``_on_frame``
        )
        self.loop.attach(connection.process, connection)

    # -- info

    def _levels_of_model(self) -> tuple[str, ...]:
        if self._levels is not None:
            return self._levels
        if self._model.get("reasoning") is not True:
            return ("off",)
        mapping = j.obj(self._model.get("thinkingLevelMap"))
        if mapping:
            return tuple(level for level in _DEFAULT_LEVELS if level == "off" or mapping.get(level) is not None)
        return _DEFAULT_LEVELS

    def _options(self) -> tuple[ConfigOption, ...]:
        options: list[ConfigOption] = []
        values = [(value, j.text(model.get("name"), "")) for model in self._models if (value := _model_value(model))]
        current = _model_value(self._model)
        if current is not None and current not in [value for value, _ in values]:
            values.insert(0, (current, j.text(self._model.get("name"), "")))
        if values:
            choices = tuple(ConfigChoice(value, label or value) for value, label in values)
            options.append(ConfigOption("model", "Model", SelectKind(choices), current, category="model"))
        levels = self._levels_of_model()
        if len(levels) > 1:
            choices = tuple(ConfigChoice(level, level) for level in levels)
            options.append(
                ConfigOption("effort", "Thinking level", SelectKind(choices), self._effort, category="thought_level")
            )
        options.append(ConfigOption(GATE_OPTION, "Ask before every tool call", BooleanKind(), self._gate, live=False))
        return tuple(options)

    def _configuration(self) -> dict[str, ConfigValue]:
        configuration: dict[str, ConfigValue] = {GATE_OPTION: self._gate}
        model = _model_value(self._model)
        if model is not None:
            configuration["model"] = model
        configuration["effort"] = self._effort
        return configuration

    def _driver_info(self) -> seam.DriverInfo:
        caps = CAPABILITIES
        if self._steer:
            caps = caps.with_(Capability.STEER)
        if self._gate:
            caps = caps.with_(Capability.PERMISSIONS)
        if self._token is None:
            caps = Capabilities(caps.items - {Capability.RESUME}, caps.mcp_transports)
        details = AgentDetails(
            version=self._version,
            auth=self._auth,
            capabilities=caps,
            config_options=self._options(),
            commands=self._commands,
        )
        return seam.DriverInfo(
            details=details,
            configuration=self._configuration(),
            resume_token=self._token,
            ends_turns=True,
            ends_agent_turns=True,
            refuses_prompt_while_busy=True,  # pi answers a prompt mid-run "Agent is already processing"
            tools_disabled=self._setup.launch.request.options.no_tools,
        )

    async def _info_changed(self) -> None:
        self.info = self._driver_info()
        await self.loop.send(seam.InfoChanged(self.info))

    # -- the session

    async def run(self, link: seam.DriverLink) -> None:
        """Read frames and commands until ``Close`` or the process dies (``toolkit.DriverLoop``)."""
        await self.loop.run(link)

    async def aclose(self) -> None:
        """Stop the process when the session never ran."""
        await self.loop.shutdown()
        _remove_gate(self._setup.gate)

    async def _on_exit(self, error: AgentError) -> None:
        self._connection.fail(f"pi exited: {error.message}")

    async def _cleanup(self) -> None:
        self._connection.fail("the session closed")
        _remove_gate(self._setup.gate)

    async def apply_initial(self, configuration: Mapping[str, ConfigValue]) -> None:
        """Apply ``model`` and ``effort`` asked for at open (during the handshake)."""
        model = configuration.get("model")
        if isinstance(model, str) and model != _model_value(self._model):
            provider, _, model_id = model.partition("/")
            reply = await self._connection.call("set_model", provider=provider, modelId=model_id)
            if reply.get("success") is not True:
                raise AgentError(f"pi refused model {model!r}: {j.text(reply.get('error'), '')}")
            self._model = j.obj(reply.get("data")) or self._model
        effort = configuration.get("effort")
        if isinstance(effort, str) and effort != self._effort:
            await self._connection.call("set_thinking_level", level=effort)
            state = await self._connection.call("get_state")
            self._effort = j.text(j.obj(state.get("data")).get("thinkingLevel"), self._effort)
        self._translator.window = _window(self._model)
        self.info = self._driver_info()

    # -- the wire

    async def _send(self, command: str, on_reply: Any = None, **fields: Any) -> str | None:
        """Write one command; its id, or None when pi no longer reads."""
        request_id = self._connection.open(command, on_reply)
        if not await self.loop.write(self._connection.lines.send({"id": request_id, "type": command, **fields})):
            self._connection.forget(request_id)
            return None
        return request_id

    async def _call(self, command: str, **fields: Any) -> Reply:
        request_id = await self._send(command, **fields)
        if request_id is None:
            return failure(_STOPPED)
        reply = await self._connection.calls.wait(request_id, CALL_TIMEOUT)
        return reply or failure(f"pi did not answer {command} within {CALL_TIMEOUT:g} s")

    async def _write(self, frame: Mapping[str, Any]) -> bool:
        return await self.loop.write(self._connection.lines.send(frame))

    def _fast_frame(self, frame: Incoming) -> TextDelta | seam.Content | None:
        """The loop's ``fast_frame``: a ``message_update``'s text or thinking delta; None for
        anything else (then ``_on_frame``, which drops a ``message_update`` this declined)."""
        if type(frame) is dict and frame.get("type") == "message_update":
            return self._translator.delta(frame)
        return None

    async def _on_frame(self, frame: Incoming) -> None:
        if not isinstance(frame, dict):
            return
        kind = frame.get("type")
        if kind == "message_update" and type(frame) is dict:
            # ``_fast_frame`` (the loop's, first) found no delta in it: nothing to send. A dict
            # subclass is not one it takes: ``feed`` translates that one's delta
            return
        if kind == "response":
            if not await self._connection.resolve(frame) and frame.get("success") is False:
                await self.loop.diagnostic(
                    f"pi refused a command: {j.text(frame.get('error'), '')}",
                    DiagnosticCode.AGENT_ERROR,
                    raw=dict(frame),
                )
            return
        out = self._translator.feed(frame)
        for event in out.events:
            await self.loop.send(event)
        if out.ui_request is not None:
            await self._on_ui_request(out.ui_request)

    async def _on_ui_request(self, frame: Mapping[str, Any]) -> None:
        method = j.text(frame.get("method"), "")
        wire_id = j.nonempty(frame.get("id"))
        if method in FIRE_AND_FORGET:
            if method == "notify":
                await self.loop.send(seam.Content(Diagnostic(notify_info(frame))))
            return
        dialog = dialog_of(frame, wire_id or "", gate=self._gate) if wire_id else None
        if dialog is None:
            if wire_id is not None:
                await self._write(cancelled(wire_id))
            await self.loop.diagnostic(
                f"pi asked for an unknown dialog {method!r}; it was dismissed",
                DiagnosticCode.UNKNOWN_FRAME,
                DiagnosticLevel.INFO,
                dict(frame),
            )
            return
        if self._translator.cancelling:
            await self._write(cancelled(dialog.wire_id))
            return
        self._dialogs.add(dialog, dialog.request.id)
        await self.loop.send(seam.Content(RequestOpened(dialog.request)))

    async def _dismiss(self, dialog: Dialog) -> None:
        await self._write(cancelled(dialog.wire_id))

    # -- commands

    async def _on_command(self, command: seam.DriverCommand) -> None:
        if isinstance(command, seam.StartTurn):
            await self._start_turn(command)
        elif isinstance(command, seam.Steer):
            await self._steer_turn(command)
        elif isinstance(command, seam.AnswerRequest):
            dialog = self._dialogs.take(command.request_id)
            if dialog is None:
                return
            frame = dialog.answer(command.answer)
            if frame is None:
                await self._write(cancelled(dialog.wire_id))
                await toolkit.refuse(self.loop.link, command, "that answer does not fit pi's dialog; it was dismissed")
                return
            await self._write(frame)
        elif isinstance(command, seam.Decline):
            await self._dialogs.decline(command.request_id)
        elif isinstance(command, seam.Configure):
            await self._configure(command)
        elif isinstance(command, seam.Cancel):
            await self._cancel()
        elif isinstance(command, seam.Compact):
            await self._compact()
        else:  # Rollback: pi cuts history by entry id, never over RPC
            await toolkit.refuse(self.loop.link, command)

    async def _start_turn(self, command: seam.StartTurn) -> None:
        fields, problems = await prompt_fields(command.input)
        self._translator.begin_turn(command.turn_id)
        self._command_turn = command.input.content.startswith("/")
        turn_id = command.turn_id

        async def accepted(reply: Reply) -> None:
            if self._translator.turn_id != turn_id:
                return
            if reply.get("success") is not True:
                error = j.text(reply.get("error"), "") or "pi refused the prompt"
                if any(hint in error for hint in (self._setup.launch.request.profile or PROFILE).auth_error_hints):
                    self._translator.turn_id = None
                    await self.loop.send(seam.AuthLost(self._setup.login))
                    return
                await self.loop.send(self._translator.end_turn(Failed(error)))
            elif self._command_turn and not self._translator.running:
                # pi answers an extension command's prompt when the command is done, and that may
                # have run no model (no agent_start/agent_end): ask whether anything streams
                await self._send("get_state", on_reply=settled)

        async def settled(reply: Reply) -> None:
            streaming = j.obj(reply.get("data")).get("isStreaming") is True
            if self._translator.turn_id == turn_id and not self._translator.running and not streaming:
                await self.loop.send(self._translator.end_turn(Completed()))

        written = await self._send("prompt", on_reply=accepted, **fields)
        await self.loop.send(seam.TurnAck())
        for problem in problems:
            await self.loop.diagnostic(problem, DiagnosticCode.ATTACHMENT)
        if written is None:
            await self.loop.send(self._translator.end_turn(Failed(_STOPPED)))

    async def _steer_turn(self, command: seam.Steer) -> None:
        # pi reads its commands in order: a steer written after our prompt lands in that prompt's run
        # (a prompt that is an extension command runs no model: its steer would wait for the next)
        in_turn = self._translator.running or (self._translator.turn_id is not None and not self._command_turn)
        if not self._steer or not in_turn or self._translator.cancelling:
            await self.loop.send(seam.SteerResult(False))  # the engine queues it
            return
        fields, problems = await prompt_fields(command.input)
        for problem in problems:
            await self.loop.diagnostic(problem, DiagnosticCode.ATTACHMENT)

        text = str(fields.get("message", ""))
        self._translator.steers.append(text)  # before the write: pi may echo it before it answers

        async def answered(reply: Reply) -> None:
            accepted = reply.get("success") is True
            if not accepted and text in self._translator.steers:
                self._translator.steers.remove(text)
            await self.loop.send(seam.SteerResult(accepted))

        if await self._send("steer", on_reply=answered, **fields) is None:
            self._translator.steers.remove(text)
            await self.loop.send(seam.SteerResult(False))

    async def _cancel(self) -> None:
        self._translator.cancelling = True
        for request_id in self._dialogs.find(lambda _dialog: True):
            await self._dialogs.decline(request_id)  # pi waits for its dialogs before it stops
        if self._steer:
            await self._send("clear_queue")  # a steer dies with the turn it was folded into
            self._translator.steers.clear()
        await self._send("abort")

    async def _compact(self) -> None:
        self._translator.begin_turn(None)

        async def done(reply: Reply) -> None:
            if reply.get("success") is True:
                await self.loop.send(self._translator.end_turn(Completed()))
                return
            error = j.text(reply.get("error"), "") or "pi could not compact"
            if not self._translator.cancelling:
                await self.loop.diagnostic(f"pi could not compact: {error}", DiagnosticCode.COMPACT_FAILED)
            await self.loop.send(self._translator.end_turn(Failed(error)))

        if await self._send("compact", on_reply=done) is None:
            await self.loop.send(self._translator.end_turn(Failed(_STOPPED)))

    async def _configure(self, command: seam.Configure) -> None:
        option_id, value = command.option_id, command.value
        if option_id == "model" and isinstance(value, str):
            provider, _, model_id = value.partition("/")
            reply = await self._call("set_model", provider=provider, modelId=model_id)
            if reply.get("success") is not True:
                await toolkit.refuse(
                    self.loop.link, command, f"pi refused model {value!r}: {j.text(reply.get('error'), '')}"
                )
                return
            self._model = j.obj(reply.get("data")) or self._model
            self._translator.window = _window(self._model)
            levels = await self._call("get_available_thinking_levels")
            if levels.get("success") is True:
                self._levels = tuple(str(level) for level in j.arr(j.obj(levels.get("data")).get("levels")))
            await self._read_effort()
        elif option_id == "effort" and isinstance(value, str):
            reply = await self._call("set_thinking_level", level=value)
            if reply.get("success") is not True:
                await toolkit.refuse(
                    self.loop.link, command, f"pi refused effort {value!r}: {j.text(reply.get('error'), '')}"
                )
                return
            await self._read_effort()
            if self._effort != value:
                await toolkit.refuse(
                    self.loop.link, command, f"pi keeps thinking level {self._effort!r} for this model"
                )
                await self._info_changed()
                return
        else:
            await toolkit.refuse(self.loop.link, command, f"pi cannot change {option_id!r} during a session")
            return
        await self._info_changed()

    async def _read_effort(self) -> None:
        state = await self._call("get_state")
        if state.get("success") is True:
            self._effort = j.text(j.obj(state.get("data")).get("thinkingLevel"), self._effort)


def _window(model: Mapping[str, Any]) -> int | None:
    window = model.get("contextWindow")
    return window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None
