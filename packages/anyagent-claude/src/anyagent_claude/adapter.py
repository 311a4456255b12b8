"""The ``claude`` wire: ``ClaudeAdapter`` launches Claude Code, ``ClaudeDriver`` serves one session.

Flow::

    connect ─► spawn ``claude -p --input-format stream-json …`` ─► initialize (account, models,
            commands, mode) ─► DriverInfo (auth, capabilities, options, resume token)
    run     ─► reader task: stdout frames ─► Translator ─► link.send(...)
               command loop: StartTurn ─► user frame + TurnAck; AnswerRequest ─► control_response;
               Configure ─► set_model / apply_flag_settings / set_permission_mode (fast: respawn);
               Cancel ─► interrupt + deny open requests; Rollback ─► rewind_files + fork respawn;
               Compact ─► "/compact"; Close ─► stdin EOF, then signals.

The adapter mints the session id (``--session-id``) so the resume token exists at open. Every
``result`` is followed by ``get_usage`` (plan usage) until the CLI says it has no quota to report.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any

import anyio
import attrs

from anyagent import (
    AgentDetails,
    AgentError,
    AgentInstallation,
    AgentProfile,
    AuthRequired,
    AuthStatus,
    Cancelled,
    Capabilities,
    Capability,
    ConfigValue,
    DiagnosticLevel,
    Failed,
    LoginMethod,
    PlanUsage,
    PlanUsageUpdated,
    ProcessExited,
    RollbackScope,
    SessionOptions,
    SlashCommand,
    TerminalLogin,
    Unauthenticated,
    UnsupportedFeature,
    seam,
)
from anyagent.wire import BadLine, WireRecorder

from . import frames
from ._json import as_dict, as_list, opt_str
from .connection import Connection, ExitHints, Incoming
from .launch import Launch, argv, child_env
from .profile import PROFILE
from .prompt import prompt_content
from .settings import Model, auth_status, commands_of, config_options, models_of
from .translate import ControlReply, ModeSeen, SessionSeen, Translator, TurnFinished, TurnMark
from .usage import plan_usage

__all__ = ["CAPABILITIES", "ClaudeAdapter", "ClaudeDriver"]

CAPABILITIES = Capabilities.of(
    Capability.IMAGES,
    Capability.RESUME,
    Capability.PERMISSIONS,
    Capability.QUESTIONS,
    Capability.ROLLBACK,
    Capability.ROLLBACK_FILES,
    Capability.FORK,
    Capability.COMPACT,
    Capability.SLASH_COMMANDS,
    Capability.PLAN,
    Capability.SUBAGENTS,
    Capability.CONTEXT_USAGE,
    Capability.PLAN_USAGE,
    mcp_transports=("stdio", "http", "sse"),
)
"""What a Claude Code session reports (no ``STEER``: a mid-turn prompt waits for its own turn)."""


def _login(
    installation: AgentInstallation, profile: AgentProfile | None, options: SessionOptions
) -> tuple[LoginMethod, ...]:
    """The profile's login methods, run with this executable and this session's config home."""
    source = profile or PROFILE
    env: dict[str, str] = {}
    if options.config_home_dir is not None and source.config_home_env:
        env[source.config_home_env] = str(options.config_home_dir)
    methods: list[LoginMethod] = []
    for method in source.login:
        if isinstance(method, TerminalLogin):
            command = method.command
            if command and command[0] == "claude":
                command = (str(installation.executable_path), *command[1:])
            method = TerminalLogin(command, method.description, {**method.env, **env})
        methods.append(method)
    return tuple(methods)


def _hints(profile: AgentProfile | None, login: tuple[LoginMethod, ...]) -> ExitHints:
    source = profile or PROFILE
    resume = tuple(str(hint) for hint in as_list(PROFILE.quirks.get("resume_failed_hints")))
    return ExitHints(resume=resume, auth=source.auth_error_hints, login=login)


@attrs.define
class _Setup:
    """Everything needed to (re)launch this session's ``claude``."""

    installation: AgentInstallation
    profile: AgentProfile | None
    options: SessionOptions
    env: dict[str, str]
    recorder: WireRecorder | None
    login: tuple[LoginMethod, ...]
    hints: ExitHints

    async def open(self, launch: Launch) -> Connection:
        """Spawn ``claude`` for ``launch`` and handshake."""
        command = argv(self.installation, self.profile, self.options, launch)
        return await Connection.open(
            command,
            cwd=str(self.options.cwd),
            env=self.env,
            recorder=self.recorder,
            hints=self.hints,
            resuming=launch.resume is not None,
        )


async def _version(connection: Connection, hints: ExitHints) -> str | None:
    version = opt_str(connection.init.get("claude_code_version"))
    if version is not None:
        return version
    reply = await connection.call_during_handshake("get_binary_version", hints)
    return opt_str(reply.body.get("version")) if reply.ok else None


class ClaudeAdapter(seam.Adapter):
    """Claude Code over its stream-json wire and control protocol (wire ``"claude"``)."""

    wire = "claude"

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        """Launch ``claude``, handshake, and return the session's driver.

        Raises ``AuthRequired`` when logged out, ``ResumeFailed`` for an unknown resume or fork
        token, ``SpawnFailed``/``ProcessExited``/``ProtocolFailed`` when it will not start.
        """
        options = request.options
        setup = self._setup(request)
        launch = _first_launch(options)
        try:
            connection = await setup.open(launch)
        except BaseException:
            if setup.recorder is not None:
                setup.recorder.close()
            raise
        try:
            driver = await ClaudeDriver.start(setup, connection, launch)
        except BaseException:
            await connection.close(grace=0.5)
            if setup.recorder is not None:
                setup.recorder.close()
            raise
        return driver

    def _setup(self, request: seam.ConnectRequest, record: bool = True) -> _Setup:
        options = request.options
        login = _login(request.installation, request.profile, options)
        recorder = None
        if record and options.record_wire_path is not None:
            recorder = WireRecorder.open(options.record_wire_path)
        return _Setup(
            installation=request.installation,
            profile=request.profile,
            options=options,
            env=child_env(request.env or os.environ, request.profile),
            recorder=recorder,
            login=login,
            hints=_hints(request.profile, login),
        )

    async def probe_auth(self, request: seam.ConnectRequest) -> AuthStatus | None:
        """Launch without tools or a transcript, read the login from ``initialize``, stop (~0.5 s)."""
        setup = self._setup(request, record=False)
        setup.options = setup.options.without_tools()
        connection = await setup.open(Launch())
        try:
            return auth_status(as_dict(connection.init.get("account")), setup.env, setup.login)
        finally:
            await connection.close(grace=0.5)

    def environment(self) -> Mapping[str, str]:
        """The environment side launches (``plan_usage``) start from: this process's."""
        return os.environ

    async def plan_usage(self, installation: AgentInstallation, profile: AgentProfile | None) -> PlanUsage:
        """Ask a throwaway ``claude`` for ``get_usage`` (about a second)."""
        options = SessionOptions.in_dir(os.getcwd()).without_tools()
        request = seam.ConnectRequest(installation, profile, options, "plan-usage", dict(self.environment()))
        setup = self._setup(request, record=False)
        connection = await setup.open(Launch())
        try:
            auth = auth_status(as_dict(connection.init.get("account")), setup.env, setup.login)
            if isinstance(auth, Unauthenticated):
                raise AuthRequired(auth.login, "Claude Code is not logged in")
            reply = await connection.call_during_handshake("get_usage", setup.hints)
        finally:
            await connection.close(grace=0.5)
        usage = plan_usage(reply.body) if reply.ok else None
        if usage is None:
            raise UnsupportedFeature("Claude reports no plan quota for this login (plan usage needs a subscription)")
        return usage


def _first_launch(options: SessionOptions) -> Launch:
    configuration = dict(options.configuration)
    if options.resume_token is not None:
        return Launch(resume=options.resume_token, configuration=configuration)
    if options.fork_token is not None:
        return Launch(
            session_id=str(uuid.uuid4()),
            resume=options.fork_token,
            fork=True,
            fork_at=options.fork_at,
            configuration=configuration,
        )
    return Launch(session_id=str(uuid.uuid4()), configuration=configuration)


class ClaudeDriver(seam.Driver):
    """One Claude Code session: see the module docstring. Built by ``ClaudeAdapter.connect``."""

    def __init__(self, setup: _Setup, connection: Connection, launch: Launch, version: str | None) -> None:
        self._setup = setup
        self._connection = connection
        self._translator = Translator(setup.login)
        self._version = version
        self._models: tuple[Model, ...] = models_of(connection.init)
        self._commands: tuple[SlashCommand, ...] = commands_of(connection.init)
        self._auth: AuthStatus = auth_status(as_dict(connection.init.get("account")), setup.env, setup.login)
        configuration = dict(launch.configuration)
        if "mode" not in configuration:  # the user's settings may start it in another mode
            mode = opt_str(connection.init.get("current_permission_mode")) or "default"
            configuration["mode"] = "default" if mode == "manual" else mode
        self._bypass = configuration.get("mode") == "bypassPermissions"
        self._options, self._config = config_options(self._models, configuration, bypass=self._bypass)
        self._persistent = not setup.options.no_tools
        self._token: str | None = launch.session_id if launch.fork or launch.resume is None else launch.resume
        self._busy = False
        self._turn_user: str | None = None
        self._usage_wanted = True
        self._link: seam.DriverLink | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._closing = False
        self.info = self._driver_info()

    @classmethod
    async def start(cls, setup: _Setup, connection: Connection, launch: Launch) -> ClaudeDriver:
        """Finish the handshake (version, login check) and build the driver."""
        version = await _version(connection, setup.hints)
        driver = cls(setup, connection, launch, version)
        if isinstance(driver._auth, Unauthenticated):
            raise AuthRequired(driver._auth.login, "Claude Code is not logged in")
        return driver

    # -----------------------------------------------------------------------------------------
    # info

    def _driver_info(self) -> seam.DriverInfo:
        details = AgentDetails(
            version=self._version,
            auth=self._auth,
            capabilities=CAPABILITIES,
            config_options=self._options,
            commands=self._commands,
        )
        return seam.DriverInfo(
            details=details,
            configuration=dict(self._config),
            resume_token=self._token if self._persistent else None,
            ends_turns=True,
            ends_agent_turns=True,
            tools_disabled=self._setup.options.no_tools,
        )

    async def _info_changed(self) -> None:
        self._options, self._config = config_options(self._models, self._config, bypass=self._bypass)
        self.info = self._driver_info()
        await self._send(seam.InfoChanged(self.info))

    # -----------------------------------------------------------------------------------------
    # the session

    async def run(self, link: seam.DriverLink) -> None:
        """Read frames and commands until ``Close`` or the process dies."""
        self._link = link
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._read, self._connection)
                async for command in link.commands:
                    if isinstance(command, seam.Close):
                        break
                    await self._handle(command)
                self._closing = True
                tg.cancel_scope.cancel()
        finally:
            self._closing = True
            await self._shutdown()

    async def aclose(self) -> None:
        """Stop the process when the session never ran (``open`` failed after ``connect``)."""
        await self._shutdown()

    async def _shutdown(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._connection.close()
            if self._setup.recorder is not None:
                self._setup.recorder.close()

    async def _send(self, event: seam.DriverEvent) -> None:
        if self._link is not None:
            await self._link.send(event)

    async def _diagnostic(self, message: str, code: str, level: DiagnosticLevel = DiagnosticLevel.WARNING) -> None:
        if self._link is not None:
            await self._link.diagnostic(message, level, code)

    # -- reading

    async def _read(self, connection: Connection) -> None:
        with anyio.CancelScope() as scope:
            connection.reader_scope = scope
            backlog, connection.backlog = connection.backlog, []
            for frame in backlog:
                await self._dispatch(connection, frame)
            while True:
                try:
                    frame = await connection.lines.receive()
                except anyio.EndOfStream:
                    break
                await self._dispatch(connection, frame)
        if scope.cancel_called or self._closing or connection is not self._connection:
            return
        await self._died(connection)

    async def _died(self, connection: Connection) -> None:
        error = await connection.process.exit_error()
        connection.fail_pending("the Claude process exited")
        if isinstance(error, ProcessExited):
            await self._send(seam.Exited(error.status, error.stderr))
        else:
            await self._send(seam.Exited("unknown", error.message))
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def _dispatch(self, connection: Connection, frame: Incoming) -> None:
        if isinstance(frame, BadLine):
            await self._diagnostic(
                f"Claude wrote a line anyagent cannot read ({frame.reason})", "bad_line", DiagnosticLevel.INFO
            )
            return
        out = self._translator.feed(frame)
        for reply in out.replies:
            await connection.resolve(reply)
        for write in out.writes:
            await self._write(connection, write)
        # notes first: what they write (get_usage after a result) reaches the CLI before the app
        # hears the turn ended, so the order of writes never depends on how fast the app is
        for note in out.notes:
            await self._on_note(connection, note)
        for event in out.events:
            await self._send(event)
        recorder = self._setup.recorder
        if recorder is not None:
            failure = recorder.take_failure()
            if failure is not None:
                await self._diagnostic(failure, "record_wire")

    async def _write(self, connection: Connection, frame: Mapping[str, Any]) -> bool:
        try:
            await connection.send(frame)
        except AgentError:
            return False  # the process is gone; the reader reports the exit
        return True

    async def _on_note(self, connection: Connection, note: object) -> None:
        if isinstance(note, TurnFinished):
            self._busy = False
            self._turn_user = None
            if self._usage_wanted:
                try:
                    await connection.request("get_usage", on_reply=self._usage_reply)
                except AgentError:
                    pass
        elif isinstance(note, SessionSeen):
            if self._persistent and note.session_id != self._token:
                self._token = note.session_id
                await self._info_changed()
        elif isinstance(note, ModeSeen):
            mode = "default" if note.mode == "manual" else note.mode
            if mode != self._config.get("mode"):
                self._bypass = self._bypass or mode == "bypassPermissions"
                self._config["mode"] = mode
                await self._info_changed()

    async def _usage_reply(self, reply: ControlReply) -> None:
        usage = plan_usage(reply.body) if reply.ok else None
        if usage is None:
            self._usage_wanted = False  # an API key (or an old CLI): nothing to report, stop asking
            return
        await self._send(seam.Content(PlanUsageUpdated(usage)))

    # -- commands

    async def _handle(self, command: seam.DriverCommand) -> None:
        if isinstance(command, seam.StartTurn):
            await self._start_turn(command)
        elif isinstance(command, seam.Steer):
            await self._send(seam.SteerResult(False))  # Claude runs a mid-turn prompt as its own turn
        elif isinstance(command, seam.AnswerRequest):
            frame = self._translator.answer(command.request_id, command.answer)
            if frame is not None:
                await self._write(self._connection, frame)
        elif isinstance(command, seam.Configure):
            await self._configure(command.option_id, command.value)
        elif isinstance(command, seam.Cancel):
            await self._cancel()
        elif isinstance(command, seam.Compact):
            await self._compact()
        elif isinstance(command, seam.Rollback):
            await self._rollback(command.turns, command.scope)

    async def _start_turn(self, command: seam.StartTurn) -> None:
        content, problems = await prompt_content(command.input)
        user_uuid = str(uuid.uuid4())
        self._translator.begin_turn(user_uuid)
        self._busy = True
        self._turn_user = user_uuid
        written = await self._write(self._connection, frames.user_message(user_uuid, content))
        await self._send(seam.TurnAck())
        for problem in problems:
            await self._diagnostic(problem, "attachment")
        if not written:
            await self._send(seam.TurnEnd(Failed("Claude Code stopped reading its input")))

    async def _compact(self) -> None:
        user_uuid = str(uuid.uuid4())
        self._translator.begin_turn(user_uuid)
        self._busy = True
        self._turn_user = user_uuid
        if not await self._write(self._connection, frames.user_message(user_uuid, "/compact")):
            await self._send(seam.TurnEnd(Failed("Claude Code stopped reading its input")))

    async def _cancel(self) -> None:
        connection = self._connection
        for frame in self._translator.cancel():
            await self._write(connection, frame)
        turn_user = self._turn_user

        async def receipt(reply: ControlReply) -> None:
            cancelled = [item for item in as_list(reply.body.get("cancelled")) if isinstance(item, str)]
            if turn_user is not None and turn_user in cancelled and self._turn_user == turn_user:
                # the interrupt removed the prompt before it ran: no result will come
                self._translator.cancelled_without_result()
                self._busy = False
                self._turn_user = None
                await self._send(seam.TurnEnd(Cancelled()))

        try:
            await connection.request("interrupt", on_reply=receipt)
        except AgentError:
            pass

    # -- configuration

    async def _configure(self, option_id: str, value: ConfigValue) -> None:
        if option_id == "fast":
            await self._switch_fast(value is True)
            return
        if option_id == "model":
            reply = await self._connection.call("set_model", model=value)
        elif option_id == "effort":
            reply = await self._connection.call("apply_flag_settings", settings={"effortLevel": value})
        elif option_id == "mode":
            reply = await self._connection.call("set_permission_mode", mode=value)
        else:
            await self._diagnostic(f"Claude has no setting {option_id!r}", "configure_refused")
            return
        if not reply.ok:
            await self._diagnostic(f"Claude refused {option_id}={value!r}: {reply.error}", "configure_refused")
            return
        self._config[option_id] = value
        await self._info_changed()

    async def _switch_fast(self, fast: bool) -> None:
        if self._config.get("fast") is fast:
            await self._info_changed()  # already so: confirm without a relaunch
            return
        if self._busy:
            await self._diagnostic(
                "fast mode can only change between turns; try again when the turn ends", "configure_refused"
            )
            return
        if self._token is None or not self._persistent:
            await self._diagnostic("fast mode needs a resumable session", "configure_refused")
            return
        configuration = {**self._config, "fast": fast}
        if await self._respawn(Launch(resume=self._token, configuration=configuration), close_first=True):
            self._config = configuration
            await self._info_changed()

    # -- rollback

    async def _rollback(self, turns: int, scope: RollbackScope) -> None:
        history = self._translator.history
        if turns > len(history):
            await self._diagnostic(
                f"only the {len(history)} turn(s) this session ran can be rolled back, not {turns}", "rollback_refused"
            )
            return
        gone, kept = history[len(history) - turns :], history[: len(history) - turns]
        if scope is RollbackScope.CONVERSATION_AND_FILES and not await self._rewind_files(gone):
            return
        fork_at = kept[-1].fork_point if kept else None
        new_id = str(uuid.uuid4())
        if fork_at is not None and self._token is not None:
            launch = Launch(
                session_id=new_id, resume=self._token, fork=True, fork_at=fork_at, configuration=dict(self._config)
            )
        else:
            launch = Launch(session_id=new_id, configuration=dict(self._config))
        if await self._respawn(launch, close_first=False):
            self._translator.history = list(kept)
            self._token = new_id
            await self._info_changed()

    async def _rewind_files(self, gone: list[TurnMark]) -> bool:
        target = next((mark.user_uuid for mark in gone if mark.user_uuid is not None), None)
        if target is None:
            await self._diagnostic(
                "no prompt of the rolled-back turns is known; files were not restored", "rollback_refused"
            )
            return False
        reply = await self._connection.call("rewind_files", user_message_id=target, dry_run=False)
        error = reply.error or opt_str(reply.body.get("error"))
        if not reply.ok or reply.body.get("canRewind") is False:
            await self._diagnostic(f"Claude could not restore the files: {error or 'refused'}", "rollback_refused")
            return False
        return True

    # -- respawn

    async def _respawn(self, launch: Launch, *, close_first: bool) -> bool:
        """Replace the process under the same Session; True on success.

        ``close_first`` (a resume of the same conversation, which must not run twice): a failed
        relaunch ends the session (``Exited``). Otherwise (a fork) the old process keeps serving
        and a diagnostic says why the relaunch failed.
        """
        old = self._connection
        if close_first:
            await old.close()
        try:
            connection = await self._setup.open(launch)
        except AgentError as exc:
            if not close_first:
                await self._diagnostic(f"Claude could not be relaunched: {exc.message}", "respawn_failed")
                return False
            await self._send(seam.Exited("relaunch failed", exc.message))
            if self._tg is not None:
                self._tg.cancel_scope.cancel()
            return False
        self._connection = connection
        if not close_first:
            await old.close()
        self._models = models_of(connection.init) or self._models
        self._commands = commands_of(connection.init) or self._commands
        assert self._tg is not None
        self._tg.start_soon(self._read, connection)
        return True
