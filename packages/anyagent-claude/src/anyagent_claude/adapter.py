"""The ``claude`` wire: ``ClaudeAdapter`` launches Claude Code, ``ClaudeDriver`` serves one session.

Flow::

    connect ─► toolkit.launching: spawn ``claude -p --input-format stream-json …`` ─► initialize
               (account, models, commands, mode) ─► DriverInfo (auth, capabilities, options, token)
    run     ─► toolkit.DriverLoop: stdout frames ─► Translator ─► link.send(...); commands:
               StartTurn ─► user frame + TurnAck; AnswerRequest ─► control_response;
               Decline ─► deny that can_use_tool (once); Configure ─► set_model /
               apply_flag_settings / set_permission_mode (fast: a relaunch, between turns);
               Cancel ─► deny open requests, then interrupt; Rollback ─► rewind_files + a fork
               relaunch; Compact ─► "/compact"; Steer ─► refused (a mid-turn prompt is its own turn).

The adapter mints the session id (``--session-id``) so the resume token exists at open. Every
``result`` is followed by ``get_usage`` (plan usage) until the CLI says it has no quota to report.
Turn rules stay in the engine: it ends the tools still running at a turn's end, holds a ``fast``
change until the turn is over, and closes requests (``Decline``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
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
    Cancelled,
    Capabilities,
    Capability,
    DiagnosticCode,
    Failed,
    LoginMethod,
    PlanUsage,
    PlanUsageUpdated,
    RollbackScope,
    SessionOptions,
    SlashCommand,
    Unauthenticated,
    UnsupportedFeature,
    seam,
    toolkit,
)
from anyagent import jsonread as j

from . import frames
from .connection import CLOSE_GRACE, CONTROL_TIMEOUT, Connection, ExitHints, Incoming
from .launch import LaunchSpec, claude_args, mcp_config, remove_private_file, write_private_file
from .profile import BASE_ARGS, PROFILE
from .prompt import prompt_content
from .settings import Model, auth_status, commands_of, config_options, models_of, own_mode
from .tools import PLAN_TOOL
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
    Capability.SUBAGENTS,
    Capability.CONTEXT_USAGE,
    mcp_transports=("stdio", "http", "sse"),
)
"""What a Claude Code session reports (no ``STEER``: a mid-turn prompt waits for its own turn).

``PLAN_USAGE`` is added for a login that has a plan (a subscription: ``initialize.account`` names
its ``subscriptionType`` or a subscription token), as codex does: an API-key login has no plan
quota, so ``plan_usage`` would raise ``UnsupportedFeature``.

``PLAN`` is added once the CLI's ``system/init`` lists ``TodoWrite`` among the model's tools (and
dropped when a later one does not): claude 2.1.332 leaves ``TodoWrite`` out of SDK sessions, so a
plan never comes over the wire there."""

ENV_DEFAULTS: Mapping[str, str] = {str(k): str(v) for k, v in dict(PROFILE.quirks.get("env", {})).items()}
"""The adapter's own environment defaults (file checkpoints for ``rewind_files``), also for an
installation without a catalog profile; the profile's ``env`` quirk and the caller's win."""

_STOPPED = "Claude Code stopped reading its input"


def _login(
    installation: AgentInstallation, profile: AgentProfile | None, options: SessionOptions
) -> tuple[LoginMethod, ...]:
    """The profile's login methods, run with this executable and this session's config home."""
    return toolkit.login_methods(installation, profile or PROFILE, options)


def _hints(profile: AgentProfile | None, login: tuple[LoginMethod, ...]) -> ExitHints:
    source = profile or PROFILE
    resume = tuple(str(hint) for hint in j.arr(PROFILE.quirks.get("resume_failed_hints")))
    return ExitHints(resume=resume, auth=source.auth_error_hints, login=login)


@attrs.frozen
class _Setup:
    """Everything needed to (re)launch this session's ``claude``: the toolkit launch (protocol
    argv, environment, cwd, recorder), the login methods and the exit hints."""

    launch: toolkit.Launch
    login: tuple[LoginMethod, ...]
    hints: ExitHints
    mcp_file: Path | None = None
    """The private (0600) ``--mcp-config`` file, removed when the session ends."""

    @property
    def options(self) -> SessionOptions:
        """The session's options."""
        return self.launch.request.options

    async def open(self, spec: LaunchSpec) -> Connection:
        """Spawn ``claude`` for ``spec`` and handshake."""
        argv = [*self.launch.argv, *claude_args(self.options, spec, self.mcp_file)]
        return await Connection.open(self.launch, argv, hints=self.hints, resuming=spec.resume is not None)


@asynccontextmanager
async def _launching(request: seam.ConnectRequest, *, record: bool = True, mcp: bool = True) -> AsyncIterator[_Setup]:
    """A ``_Setup`` whose processes, recorder and MCP config file are cleaned up if the block
    fails (on success the file belongs to the driver). ``mcp=False`` (side launches) passes no
    MCP servers."""
    async with toolkit.launching(request, default_args=BASE_ARGS, env_defaults=ENV_DEFAULTS, record=record) as launch:
        login = _login(request.installation, request.profile, request.options)
        servers = request.options.mcp_servers
        config = mcp_config(servers) if mcp and servers else None
        path = await anyio.to_thread.run_sync(write_private_file, "mcp.json", config) if config else None
        try:
            yield _Setup(launch, login, _hints(request.profile, login), path)
        except BaseException:
            if path is not None:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(remove_private_file, path)
            raise


async def _version(connection: Connection, hints: ExitHints) -> str | None:
    version = j.nonempty(connection.init.get("claude_code_version"))
    if version is not None:
        return version
    reply = await connection.call_during_handshake("get_binary_version", hints)
    return j.nonempty(reply.body.get("version")) if reply.ok else None


class ClaudeAdapter(seam.Adapter):
    """Claude Code over its stream-json wire and control protocol (wire ``"claude"``)."""

    wire = "claude"

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        """Launch ``claude``, handshake, and return the session's driver.

        Raises ``AuthRequired`` when logged out, ``ResumeFailed`` for an unknown resume or fork
        token, ``SpawnFailed``/``ProcessExited``/``ProtocolFailed`` when it will not start.
        """
        async with _launching(request) as setup:
            spec = _first_spec(request.options)
            connection = await setup.open(spec)
            return await ClaudeDriver.start(setup, connection, spec)

    async def probe_auth(self, request: seam.ConnectRequest) -> AuthStatus | None:
        """Launch without tools or a transcript, read the login from ``initialize``, stop (~0.5 s)."""
        request = attrs.evolve(request, options=request.options.without_tools())
        async with _launching(request, record=False, mcp=False) as setup:
            connection = await setup.open(LaunchSpec())
        try:
            return auth_status(j.obj(connection.init.get("account")), setup.launch.env, setup.login)
        finally:
            await connection.close(grace=0.5)

    def environment(self) -> Mapping[str, str]:
        """The environment side launches (``plan_usage``) start from: this process's."""
        return os.environ

    async def plan_usage(self, installation: AgentInstallation, profile: AgentProfile | None) -> PlanUsage:
        """Ask a throwaway ``claude`` for ``get_usage`` (about a second)."""
        options = SessionOptions.in_dir(os.getcwd()).without_tools()
        request = seam.ConnectRequest(installation, profile, options, "plan-usage", dict(self.environment()))
        async with _launching(request, record=False, mcp=False) as setup:
            connection = await setup.open(LaunchSpec())
        try:
            auth = auth_status(j.obj(connection.init.get("account")), setup.launch.env, setup.login)
            if isinstance(auth, Unauthenticated):
                raise AuthRequired(auth.login, "Claude Code is not logged in")
            reply = await connection.call_during_handshake("get_usage", setup.hints)
        finally:
            await connection.close(grace=0.5)
        usage = plan_usage(reply.body) if reply.ok else None
        if usage is None:
            raise UnsupportedFeature("Claude reports no plan quota for this login (plan usage needs a subscription)")
        return usage

    async def history(self, request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
        """Claude Code's sessions from its project transcripts (``anyagent_claude.history``); no launch."""
        from .history import history

        return await history(request, cwd)


def _first_spec(options: SessionOptions) -> LaunchSpec:
    configuration = dict(options.configuration)
    if "mode" in configuration:  # a portable name launches as Claude's own id
        configuration["mode"] = own_mode(configuration["mode"])
    if options.resume_token is not None:
        return LaunchSpec(resume=options.resume_token, configuration=configuration)
    if options.fork_token is not None:
        return LaunchSpec(
            session_id=str(uuid.uuid4()),
            resume=options.fork_token,
            fork=True,
            fork_at=options.fork_at,
            configuration=configuration,
        )
    return LaunchSpec(session_id=str(uuid.uuid4()), configuration=configuration)


class ClaudeDriver(seam.Driver):
    """One Claude Code session: see the module docstring. Built by ``ClaudeAdapter.connect``."""

    def __init__(self, setup: _Setup, connection: Connection, spec: LaunchSpec, version: str | None) -> None:
        self._setup = setup
        self._connection = connection
        self._translator = Translator(setup.login)
        self._version = version
        self._models: tuple[Model, ...] = models_of(connection.init)
        self._commands: tuple[SlashCommand, ...] = commands_of(connection.init)
        self._auth: AuthStatus = auth_status(j.obj(connection.init.get("account")), setup.launch.env, setup.login)
        configuration = dict(spec.configuration)
        if "mode" not in configuration:  # the user's settings may start it in another mode
            mode = j.nonempty(connection.init.get("current_permission_mode")) or "default"
            configuration["mode"] = "default" if mode == "manual" else mode
        self._bypass = configuration.get("mode") == "bypassPermissions"
        self._options, self._config = config_options(self._models, configuration, bypass=self._bypass)
        self._persistent = not setup.options.no_tools
        self._token: str | None = spec.session_id if spec.fork or spec.resume is None else spec.resume
        self._turn_user: str | None = None
        self._usage_wanted = True
        self._plan = False  # the model has TodoWrite (the CLI's system/init says so)
        self.info = self._driver_info()
        self.loop: toolkit.DriverLoop[Incoming] = toolkit.DriverLoop(
            self._on_frame,
            self._on_command,
            recorder=setup.launch.recorder,
            on_exit=self._on_exit,
            cleanup=self._cleanup,
            close_grace=CLOSE_GRACE,
            name="Claude Code",
            fast_frame=self._translator.text_delta,  # the flood's text deltas, without ``_on_frame``
        )
        self.loop.attach(connection.process, connection)

    @classmethod
    async def start(cls, setup: _Setup, connection: Connection, spec: LaunchSpec) -> ClaudeDriver:
        """Finish the handshake (version, login check) and build the driver."""
        version = await _version(connection, setup.hints)
        driver = cls(setup, connection, spec, version)
        if isinstance(driver._auth, Unauthenticated):
            raise AuthRequired(driver._auth.login, "Claude Code is not logged in")
        return driver

    # -----------------------------------------------------------------------------------------
    # info

    def _driver_info(self) -> seam.DriverInfo:
        details = AgentDetails(
            version=self._version,
            auth=self._auth,
            capabilities=self._capabilities(),
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

    def _capabilities(self) -> Capabilities:
        capabilities = CAPABILITIES.with_(Capability.PLAN) if self._plan else CAPABILITIES
        if isinstance(self._auth, Authenticated) and self._auth.kind is AuthKind.SUBSCRIPTION:
            capabilities = capabilities.with_(Capability.PLAN_USAGE)
        return capabilities

    async def _info_changed(self) -> None:
        self._options, self._config = config_options(self._models, self._config, bypass=self._bypass)
        self.info = self._driver_info()
        await self.loop.send(seam.InfoChanged(self.info))

    # -----------------------------------------------------------------------------------------
    # the session

    async def run(self, link: seam.DriverLink) -> None:
        """Read frames and commands until ``Close`` or the process dies (``toolkit.DriverLoop``)."""
        await self.loop.run(link)

    async def aclose(self) -> None:
        """Stop the process when the session never ran (``open`` failed after ``connect``)."""
        await self.loop.shutdown()

    async def _on_exit(self, error: AgentError) -> None:
        self._connection.fail(f"the Claude process exited: {error.message}")

    async def _cleanup(self) -> None:
        self._connection.fail("the session closed")
        path = self._setup.mcp_file
        if path is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(remove_private_file, path)

    # -- the wire

    async def _write(self, frame: Mapping[str, Any]) -> bool:
        """Write one frame to the current process; False when it no longer reads."""
        return await self.loop.write(self._connection.lines.send(frame))

    async def _request(
        self, subtype: str, on_reply: Callable[[ControlReply], Awaitable[None]] | None = None, **fields: Any
    ) -> str | None:
        """Send a control request (its answer goes to ``on_reply`` or a ``wait``); its id, or
        None when it could not be written."""
        control = self._connection.control
        request_id = control.open(subtype, on_reply)
        if not await self._write(frames.control_request(request_id, subtype, **fields)):
            control.cancel(request_id)
            return None
        return request_id

    async def _call(self, subtype: str, timeout: float = CONTROL_TIMEOUT, **fields: Any) -> ControlReply:
        """Send a control request and wait (bounded) for its answer."""
        control = self._connection.control
        request_id = await self._request(subtype, **fields)
        if request_id is None:
            return ControlReply("", False, {}, _STOPPED)
        reply = await control.wait(request_id, timeout)
        return reply or ControlReply(request_id, False, {}, f"no answer to {subtype} within {timeout:g} s")

    async def _on_frame(self, frame: Incoming) -> None:
        # only frames the loop's ``fast_frame`` (``text_delta``) declined come here; ``feed``
        # translates a text delta too, for a caller that skips it
        out = self._translator.feed(frame)
        for reply in out.replies:
            await self._connection.control.resolve(reply.request_id, reply)
        for write in out.writes:
            await self._write(write)
        # notes first: what they write (get_usage after a result) reaches the CLI before the app
        # hears the turn ended, so the order of writes never depends on how fast the app is
        for note in out.notes:
            await self._on_note(note)
        for event in out.events:
            await self.loop.send(event)

    async def _on_note(self, note: object) -> None:
        if isinstance(note, TurnFinished):
            self._turn_user = None
            if self._usage_wanted:
                await self._request("get_usage", on_reply=self._usage_reply)
        elif isinstance(note, SessionSeen):
            changed = False
            if self._persistent and note.session_id != self._token:
                self._token = note.session_id
                changed = True
            if note.tools is not None and (PLAN_TOOL in note.tools) != self._plan:
                self._plan = PLAN_TOOL in note.tools
                changed = True
            if changed:
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
        await self.loop.send(seam.Content(PlanUsageUpdated(usage)))

    # -- commands

    async def _on_command(self, command: seam.DriverCommand) -> None:
        if isinstance(command, seam.StartTurn):
            await self._start_turn(command)
        elif isinstance(command, seam.AnswerRequest):
            frame = self._translator.answer(command.request_id, command.answer)
            if frame is not None:
                await self._write(frame)
        elif isinstance(command, seam.Decline):
            frame = self._translator.decline(command.request_id)  # None: already answered or denied
            if frame is not None:
                await self._write(frame)
        elif isinstance(command, seam.Configure):
            await self._configure(command)
        elif isinstance(command, seam.Cancel):
            await self._cancel()
        elif isinstance(command, seam.Compact):
            await self._compact()
        elif isinstance(command, seam.Rollback):
            await self._rollback(command)
        else:  # Steer: Claude runs a prompt sent during a turn as a turn of its own
            await toolkit.refuse(self.loop.link, command)

    async def _start_turn(self, command: seam.StartTurn) -> None:
        content, problems = await prompt_content(command.input)
        user_uuid = str(uuid.uuid4())
        self._translator.begin_turn(user_uuid, command.turn_id)
        self._turn_user = user_uuid
        written = await self._write(frames.user_message(user_uuid, content))
        await self.loop.send(seam.TurnAck())
        for problem in problems:
            await self.loop.diagnostic(problem, DiagnosticCode.ATTACHMENT)
        if not written:
            self._translator.forget_prompt(user_uuid)
            await self.loop.send(seam.TurnEnd(Failed(_STOPPED), turn_id=command.turn_id))

    async def _compact(self) -> None:
        user_uuid = str(uuid.uuid4())
        self._translator.begin_turn(user_uuid)
        self._turn_user = user_uuid
        if not await self._write(frames.user_message(user_uuid, "/compact")):
            self._translator.forget_prompt(user_uuid)
            await self.loop.send(seam.TurnEnd(Failed(_STOPPED)))

    async def _cancel(self) -> None:
        for frame in self._translator.cancel():  # deny open requests first; their Declines are no-ops
            await self._write(frame)
        turn_user = self._turn_user

        async def receipt(reply: ControlReply) -> None:
            cancelled = [item for item in j.arr(reply.body.get("cancelled")) if isinstance(item, str)]
            if turn_user is not None and turn_user in cancelled and self._turn_user == turn_user:
                # the interrupt removed the prompt before it ran: no result will come
                turn_id = self._translator.turn_of(turn_user)
                self._translator.cancelled_without_result()
                self._turn_user = None
                await self.loop.send(seam.TurnEnd(Cancelled(), turn_id=turn_id))

        await self._request("interrupt", on_reply=receipt)

    # -- configuration

    async def _configure(self, command: seam.Configure) -> None:
        option_id, value = command.option_id, command.value
        if option_id == "fast":
            await self._switch_fast(command, value is True)
            return
        if option_id == "model":
            reply = await self._call("set_model", model=value)
        elif option_id == "effort":
            reply = await self._call("apply_flag_settings", settings={"effortLevel": value})
        elif option_id == "mode":
            value = own_mode(value)  # a portable name (accept-edits) as Claude's own id
            reply = await self._call("set_permission_mode", mode=value)
        else:
            await toolkit.refuse(self.loop.link, command, f"Claude has no setting {option_id!r}")
            return
        if not reply.ok:
            await toolkit.refuse(self.loop.link, command, f"Claude refused {option_id}={value!r}: {reply.error}")
            return
        self._config[option_id] = value
        await self._info_changed()

    async def _switch_fast(self, command: seam.Configure, fast: bool) -> None:
        """Relaunch on the same conversation with fast mode on or off (the engine sends this only
        between turns: ``fast`` is a ``between_turns`` option)."""
        if self._config.get("fast") is fast:
            await self._info_changed()  # already so: confirm without a relaunch
            return
        if self._token is None or not self._persistent:
            await toolkit.refuse(self.loop.link, command, "fast mode needs a resumable session")
            return
        configuration = {**self._config, "fast": fast}
        if await self._relaunch(LaunchSpec(resume=self._token, configuration=configuration)):
            self._config = configuration
            await self._info_changed()

    # -- rollback

    async def _rollback(self, command: seam.Rollback) -> None:
        turns, history = command.turns, self._translator.history
        if turns > len(history):
            reason = f"only the {len(history)} turn(s) this session ran can be rolled back, not {turns}"
            await toolkit.refuse(self.loop.link, command, reason)
            return
        gone, kept = history[len(history) - turns :], history[: len(history) - turns]
        if command.scope is RollbackScope.CONVERSATION_AND_FILES and not await self._rewind_files(command, gone):
            return
        fork_at = kept[-1].fork_point if kept else None
        new_id = str(uuid.uuid4())
        if fork_at is not None and self._token is not None:
            spec = LaunchSpec(
                session_id=new_id, resume=self._token, fork=True, fork_at=fork_at, configuration=dict(self._config)
            )
        else:
            spec = LaunchSpec(session_id=new_id, configuration=dict(self._config))
        if await self._fork(spec):
            self._translator.history = list(kept)
            self._token = new_id
            await self._info_changed()

    async def _rewind_files(self, command: seam.Rollback, gone: list[TurnMark]) -> bool:
        target = next((mark.user_uuid for mark in gone if mark.user_uuid is not None), None)
        if target is None:
            await toolkit.refuse(
                self.loop.link, command, "no prompt of the rolled-back turns is known; files were not restored"
            )
            return False
        reply = await self._call("rewind_files", user_message_id=target, dry_run=False)
        error = reply.error or j.nonempty(reply.body.get("error"))
        if not reply.ok or reply.body.get("canRewind") is False:
            await toolkit.refuse(self.loop.link, command, f"Claude could not restore the files: {error or 'refused'}")
            return False
        return True

    # -- relaunching under the same Session

    async def _relaunch(self, spec: LaunchSpec) -> bool:
        """Replace the process by one that resumes the same conversation; True on success. The old
        one is closed first (a conversation must not run in two processes), so a relaunch that
        fails ends the session (``Exited``)."""
        old = self._connection
        self.loop.detach()  # the old process's end is not the agent's death
        await old.close()
        try:
            connection = await self._setup.open(spec)
        except AgentError as exc:
            await self.loop.exit("relaunch failed", exc.message)
            return False
        self._adopt(connection)
        return True

    async def _fork(self, spec: LaunchSpec) -> bool:
        """Start a process on a fork while the old one keeps serving, then switch to it; True on
        success. A failed fork is a ``respawn_failed`` diagnostic and the session goes on."""
        try:
            connection = await self._setup.open(spec)
        except AgentError as exc:
            await self.loop.diagnostic(f"Claude could not be relaunched: {exc.message}", DiagnosticCode.RESPAWN_FAILED)
            return False
        old = self._connection
        self._adopt(connection)
        await old.close()
        return True

    def _adopt(self, connection: Connection) -> None:
        self._connection = connection
        self._translator.new_process()  # results of prompts the old process never answered won't come
        self._models = models_of(connection.init) or self._models
        self._commands = commands_of(connection.init) or self._commands
        self.loop.attach(connection.process, connection)
