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
    DiagnosticCode,
    DiagnosticLevel,
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
from anyagent.process import AgentProcess, run_command
from anyagent.wire import BadLine, Frame, JsonLines

from .profile import AUTH_ERROR_HINTS, BASE_ARGS, LOGIN, PROFILE, SKIP_PERMISSIONS
from .translate import Translator, result_error

__all__ = [
    "CANCEL_GRACE",
    "CAPABILITIES",
    "MODELS_WAIT",
    "MODES",
    "AgyAdapter",
    "AgyDriver",
    "agy_args",
    "parse_models",
]

CAPABILITIES = Capabilities.of(Capability.RESUME, Capability.CONTEXT_USAGE)
"""What the headless wire reports: no permissions, questions or steering (it cannot prompt)."""

MODES: tuple[str, ...] = tuple(str(mode) for mode in j.arr(PROFILE.quirks.get("modes")))
"""``mode`` values: ``default`` (no flag), ``accept-edits`` (spec only), ``plan`` (recorded)."""

CANCEL_GRACE = 0.2
"""Seconds between stdin EOF, SIGTERM and SIGKILL when a cancel kills agy."""

MODELS_WAIT = 10.0
"""Seconds ``agy models`` may take at open (it is killed after; the option then lists only the
configured model, with a warning diagnostic)."""

_MODELS_OUTPUT = 256 * 1024
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


def parse_models(text: str) -> tuple[ConfigChoice, ...]:
    """The models ``agy models`` prints, one a line: header lines (ending in ``:``) and blank
    lines are skipped, a leading ``-``/``*`` bullet is dropped. A line ``ID  Name`` (an id without
    spaces, then two or more spaces) is the choice ``ID`` named ``Name``; any other line is a
    choice whose value is the whole line (what agy's own "Available models:" list shows,
    recorded: 09-config). Unverified: no recording of ``agy models`` itself."""
    choices: list[ConfigChoice] = []
    seen: set[str] = set()
    for raw in text.splitlines()[:500]:
        line = raw.strip()
        if line[:2] in ("- ", "* "):
            line = line[2:].strip()
        if not line or line.endswith(":"):
            continue
        head, sep, rest = line.partition("  ")
        if sep and head and " " not in head and rest.strip():
            value, name = head, rest.strip()
        else:
            value, name = line, line
        if value not in seen:
            seen.add(value)
            choices.append(ConfigChoice(value, name))
    return tuple(choices)


async def _models(launch: toolkit.Launch) -> tuple[tuple[ConfigChoice, ...], str | None]:
    """``agy models`` run once per open (bounded by ``MODELS_WAIT``, stdout by 256 KiB): its
    choices, or none and why it failed (the caller falls back to the configured model)."""
    argv = [launch.argv[0], "models"]
    try:
        result = await run_command(
            argv, cwd=launch.request.options.cwd, env=launch.env, timeout=MODELS_WAIT, max_output=_MODELS_OUTPUT
        )
    except AgentError as exc:
        return (), f"`agy models` could not run: {exc}"
    if not result.ok:
        tail = (result.stderr or result.stdout).strip().splitlines()
        detail = f"timed out after {MODELS_WAIT:g} s" if result.timed_out else (tail[-1] if tail else result.status)
        return (), f"`agy models` failed ({detail})"
    choices = parse_models(result.stdout)
    if not choices:
        return (), "`agy models` printed no models"
    return choices, None


class AgyAdapter(seam.Adapter):
    """Antigravity's ``agy`` over its headless stream-json wire (wire ``"agy"``)."""

    wire = "agy"

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        """Launch agy, wait for its ``init``, and return the session's driver (module docstring)."""
        if request.options.fork_token is not None:
            raise UnsupportedFeature("agy's headless wire cannot fork a conversation")
        async with toolkit.launching(request, default_args=BASE_ARGS) as launch:
            models, problem = await _models(launch)
            started = await _start(launch, request.options.resume_token)
            return AgyDriver(launch, started, models, problem)


def _config_options(
    configuration: Mapping[str, ConfigValue], listed: tuple[ConfigChoice, ...] = ()
) -> tuple[ConfigOption, ...]:
    """``model`` and ``mode``: creation-time (``live=False``). ``model`` lists what ``agy models``
    printed at open (``listed``), with the configured model added when agy did not list it; agy
    checks the model itself at launch (recorded: 09-config)."""
    model = configuration.get("model")
    models = listed
    if isinstance(model, str) and all(choice.value != model for choice in listed):
        models = (*listed, ConfigChoice(model))
    modes = tuple(ConfigChoice(mode) for mode in MODES)
    return (
        ConfigOption("model", "Model", SelectKind(models), model, live=False, category="model"),
        ConfigOption("mode", "Mode", SelectKind(modes), configuration.get("mode", "default"), live=False),
    )


class AgyDriver(seam.Driver):
    """One headless agy session: see the module docstring. Built by ``AgyAdapter.connect``."""

    relaunch_timeout: float = seam.HANDSHAKE_TIMEOUT
    """Seconds the relaunch after a cancel may take to print ``init`` (the open's own bound)."""

    def __init__(
        self,
        launch: toolkit.Launch,
        started: _Started,
        models: tuple[ConfigChoice, ...] = (),
        models_problem: str | None = None,
    ) -> None:
        self._launch = launch
        self._models = models  # ``agy models`` at open: kept for the session (relaunches reuse it)
        self._models_problem = models_problem
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
            config_options=_config_options(self._configuration, self._models),
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
        """Read frames and commands until ``Close`` or agy dies (``toolkit.DriverLoop``); first a
        warning when ``agy models`` failed at open (the model option lists the configured one)."""
        if self._models_problem is not None:
            message = f"{self._models_problem}; the model option lists only the configured model"
            await link.diagnostic(message, DiagnosticLevel.WARNING, DiagnosticCode.AGENT_WARNING, None)
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
