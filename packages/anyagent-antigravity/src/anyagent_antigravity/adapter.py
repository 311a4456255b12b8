"""The ``agy`` wire: ``AgyAdapter`` launches ``agy`` headless, ``AgyDriver`` serves one session.

Flow::

    connect ─► toolkit.launching: spawn ``agy --input-format=stream-json --output-format=stream-json
               [--conversation ID] [--model=M] [--mode=X] [--dangerously-skip-permissions]``
               ─► wait for ``init`` (a ``result`` first means a bad launch: logged out → AuthRequired,
               a bad model or flag → InvalidConfiguration) ─► DriverInfo
    run     ─► toolkit.DriverLoop: stdout frames ─► Translator ─► link.send(...); commands:
               StartTurn ─► ``{"event": "user", ...}`` + TurnAck; Cancel ─► kill agy, TurnEnd(Cancelled),
               relaunch on the same conversation (``--conversation``); Steer, Configure, answers ─►
               refused (the headless wire cannot steer, prompt, or change settings live).

What flows out: a connected ``AgyDriver``, or ``AuthRequired`` / ``InvalidConfiguration`` /
``ResumeFailed`` / ``SpawnFailed`` / ``ProcessExited`` / ``ProtocolFailed``.

The headless wire cannot prompt the user: in ``PermissionMode.ASK`` agy denies every
permission-gated tool itself (the tool shows as failed), ``AUTO_APPROVE`` launches with
``--dangerously-skip-permissions``, a question is skipped by agy (a warning diagnostic). ``model`` and
``mode`` are creation-time options: to change one, reopen with ``SessionOptions.resume(token)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import anyio

from anyagent import (
    AgentDetails,
    AgentError,
    Authenticated,
    AuthKind,
    AuthRequired,
    Capabilities,
    Capability,
    ConfigChoice,
    ConfigOption,
    ConfigValue,
    Failed,
    InvalidConfiguration,
    LoginMethod,
    PermissionMode,
    ProtocolFailed,
    ResumeFailed,
    SelectKind,
    SessionOptions,
    UnsupportedFeature,
    seam,
    toolkit,
)
from anyagent import jsonread as j
from anyagent.process import AgentProcess
from anyagent.wire import BadLine, Frame, JsonLines

from .profile import AUTH_ERROR_HINTS, BASE_ARGS, LOGIN, PROFILE, SKIP_PERMISSIONS
from .translate import Translator, result_error

__all__ = ["CANCEL_GRACE", "CAPABILITIES", "MODES", "AgyAdapter", "AgyDriver", "agy_args"]

CAPABILITIES = Capabilities.of(Capability.RESUME, Capability.CONTEXT_USAGE)
"""What the headless wire reports: no permissions, questions or steering (it cannot prompt)."""

MODES: tuple[str, ...] = tuple(str(mode) for mode in j.arr(PROFILE.quirks.get("modes")))
"""``mode`` values: ``default`` (no flag), ``accept-edits`` (spec only), ``plan`` (recorded)."""

CANCEL_GRACE = 0.2
"""Seconds between stdin EOF, SIGTERM and SIGKILL when a cancel kills agy."""

_REOPEN = "reopen the session with SessionOptions.resume(token) and the new value to change it"
_STOPPED = "agy stopped reading its input"


def agy_args(options: SessionOptions, resume: str | None) -> list[str]:
    """The flags after the protocol args for ``options``, resuming conversation ``resume``."""
    args: list[str] = []
    if resume is not None:
        args += ["--conversation", resume]
    model = options.configuration.get("model")
    if isinstance(model, str) and model:
        args.append(f"--model={model}")
    mode = options.configuration.get("mode")
    if isinstance(mode, str) and mode and mode != "default":
        args.append(f"--mode={mode}")
    if options.permissions is PermissionMode.AUTO_APPROVE:
        args.append(SKIP_PERMISSIONS)
    return args


def _login(request: seam.ConnectRequest) -> tuple[LoginMethod, ...]:
    return request.profile.login if request.profile is not None and request.profile.login else LOGIN


def _hints(request: seam.ConnectRequest) -> tuple[str, ...]:
    profile = request.profile
    return profile.auth_error_hints if profile is not None and profile.auth_error_hints else AUTH_ERROR_HINTS


def _mentions(text: str, hints: Sequence[str]) -> bool:
    lowered = text.lower()
    return any(hint.lower() in lowered for hint in hints)


class _Started:
    """A running agy that printed its ``init``."""

    def __init__(self, process: AgentProcess, lines: JsonLines, init: Frame) -> None:
        self.process, self.lines, self.init = process, lines, init

    @property
    def conversation_id(self) -> str | None:
        return j.nonempty(self.init.get("conversation_id"))


async def _start(launch: toolkit.Launch, resume: str | None) -> _Started:
    """Spawn agy (resuming ``resume``) and read up to its ``init``; the caller reaps on failure."""
    request = launch.request
    argv = [*launch.argv, *agy_args(request.options, resume)]
    process = await launch.spawn(argv)
    lines = JsonLines(process)
    while True:
        try:
            frame = await lines.receive()
        except anyio.EndOfStream:
            error = await process.exit_error()
            if _mentions(process.stderr_tail, _hints(request)):
                raise AuthRequired(_login(request), f"agy is not logged in: {process.stderr_tail.strip()}") from None
            raise error from None
        if isinstance(frame, BadLine):
            continue
        if frame.get("event") == "init":
            return _Started(process, lines, frame)
        failure = result_error(frame)
        if failure is not None:
            raise _launch_error(request, failure, resume, process.stderr_tail)


def _launch_error(request: seam.ConnectRequest, failure: str, resume: str | None, stderr: str) -> AgentError:
    """The typed error for a ``result`` agy printed instead of ``init`` (recorded: 09-config, 10-logged-out)."""
    if _mentions(failure, _hints(request)) or _mentions(stderr, _hints(request)):
        return AuthRequired(_login(request), f"agy is not logged in: {failure}")
    if "invalid model selection" in failure or "--mode" in failure:
        return InvalidConfiguration(f"agy refused its launch options: {failure}")
    if resume is not None:  # unverified: no recording of an unknown --conversation id
        return ResumeFailed(f"agy could not resume conversation {resume}: {failure}")
    return ProtocolFailed(f"agy failed to start: {failure}")


def _prompt_text(content: str, attachments: Sequence[Path]) -> str:
    """The prompt as agy's headless wire takes it (text only): attachments become their paths in
    the text, for agy's own tools to open (the spec's rule for a wire without images)."""
    if not attachments:
        return content
    listing = "\n".join(f"- {path}" for path in attachments)
    return f"{content}\n\nAttached files:\n{listing}" if content else f"Attached files:\n{listing}"


class AgyAdapter(seam.Adapter):
    """Antigravity's ``agy`` over its headless stream-json wire (wire ``"agy"``)."""

    wire = "agy"

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        """Launch agy, wait for its ``init``, and return the session's driver (module docstring)."""
        if request.options.fork_token is not None:
            raise UnsupportedFeature("agy's headless wire cannot fork a conversation")
        async with toolkit.launching(request, default_args=BASE_ARGS) as launch:
            started = await _start(launch, request.options.resume_token)
            return AgyDriver(launch, started)


def _config_options(configuration: Mapping[str, ConfigValue]) -> tuple[ConfigOption, ...]:
    """``model`` and ``mode``: creation-time (``live=False``). agy checks the model itself at launch
    (recorded: 09-config); its list comes from ``agy models``, which this adapter does not run."""
    model = configuration.get("model")
    models = (ConfigChoice(model),) if isinstance(model, str) else ()
    modes = tuple(ConfigChoice(mode) for mode in MODES)
    return (
        ConfigOption("model", "Model", SelectKind(models), model, live=False, category="model"),
        ConfigOption("mode", "Mode", SelectKind(modes), configuration.get("mode", "default"), live=False),
    )


class AgyDriver(seam.Driver):
    """One headless agy session: see the module docstring. Built by ``AgyAdapter.connect``."""

    relaunch_timeout: float = seam.HANDSHAKE_TIMEOUT
    """Seconds the relaunch after a cancel may take to print ``init`` (the open's own bound)."""

    def __init__(self, launch: toolkit.Launch, started: _Started) -> None:
        self._launch = launch
        self._started = started
        self._translator = Translator(started.conversation_id)
        self._token = started.conversation_id or launch.request.options.resume_token
        self._turn: str | None = None
        configuration = dict(launch.request.options.configuration)
        configuration.setdefault("mode", "default")
        self._configuration = configuration
        self.info = self._driver_info()
        self.loop: toolkit.DriverLoop[Frame] = toolkit.DriverLoop(
            self._on_frame, self._on_command, recorder=launch.recorder, name="agy"
        )
        self._attach(started)

    def _driver_info(self) -> seam.DriverInfo:
        details = AgentDetails(
            auth=Authenticated(AuthKind.SUBSCRIPTION),  # it started: the personal Google login works
            capabilities=CAPABILITIES,
            config_options=_config_options(self._configuration),
        )
        return seam.DriverInfo(details=details, configuration=dict(self._configuration), resume_token=self._token)

    def _attach(self, started: _Started) -> None:
        self._started = started
        self.loop.attach(started.process, cast("toolkit.FrameSource[Any]", started.lines))

    @property
    def conversation_id(self) -> str | None:
        """The conversation this session drives (its resume token)."""
        return self._token

    async def run(self, link: seam.DriverLink) -> None:
        """Read frames and commands until ``Close`` or agy dies (``toolkit.DriverLoop``)."""
        await self.loop.run(link)

    async def aclose(self) -> None:
        """Stop agy when the session never ran (``open`` failed after ``connect``)."""
        await self.loop.shutdown()

    # -- frames

    async def _on_frame(self, frame: Frame) -> None:
        for event in self._translator.feed(frame):
            if isinstance(event, seam.TurnEnd):
                turn, self._turn = self._turn, None
                event = seam.TurnEnd(event.stop, turn_id=turn)
            await self.loop.send(event)
        conversation = self._translator.conversation_id
        if conversation is not None and conversation != self._token:
            self._token = conversation
            self.info = self._driver_info()
            await self.loop.send(seam.InfoChanged(self.info))

    # -- commands

    async def _on_command(self, command: seam.DriverCommand) -> None:
        if isinstance(command, seam.StartTurn):
            await self._start_turn(command)
        elif isinstance(command, seam.Cancel):
            await self._cancel()
        elif isinstance(command, seam.Configure):
            reason = f"{command.option_id!r} is fixed when agy starts; {_REOPEN}"
            await toolkit.refuse(self.loop.link, command, reason)
        else:  # Steer (a mid-turn prompt queues in the engine), answers, rollback, compact
            await toolkit.refuse(self.loop.link, command)

    async def _start_turn(self, command: seam.StartTurn) -> None:
        self._turn = command.turn_id
        frame = {
            "event": "user",
            "message": {"content": _prompt_text(command.input.content, command.input.attachments)},
        }
        written = await self.loop.write(self._started.lines.send(frame))
        await self.loop.send(seam.TurnAck())
        if not written:
            self._turn = None
            await self.loop.send(seam.TurnEnd(Failed(_STOPPED), turn_id=command.turn_id))

    async def _cancel(self) -> None:
        """Kill agy (it has no in-band cancel), end the turn, and resume the conversation in a
        fresh agy under the same session. A relaunch that fails ends the session (``Exited``)."""
        if self._turn is None:
            return
        turn, self._turn = self._turn, None
        old = self._started.process
        self.loop.detach()  # the killed process's end is not the agent's death
        await old.aclose(grace=CANCEL_GRACE)
        for event in self._translator.cancelled():
            if isinstance(event, seam.TurnEnd):
                event = seam.TurnEnd(event.stop, turn_id=turn)
            await self.loop.send(event)
        before = len(self._launch.processes)
        try:
            with anyio.fail_after(self.relaunch_timeout):
                started = await _start(self._launch, self._token)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                for process in self._launch.processes[before:]:
                    await process.aclose(grace=CANCEL_GRACE)
            if isinstance(exc, (AgentError, TimeoutError)):
                reason = exc.message if isinstance(exc, AgentError) else "no init within the handshake bound"
                await self.loop.exit("relaunch after cancel failed", reason)
                return
            raise
        self._launch.processes[:] = [started.process]  # the killed ones are reaped
        self._attach(started)
