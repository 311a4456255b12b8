"""A scripted agent for testing apps: the real engine, turn rules and event shapes; only the agent is fake.

::

    from anyagent import Runtime
    from anyagent.mock import Script, Step, text, permission, completed

    script = Script().turn([
        Step.emit(text("m1", "hello")),
        Step.emit(permission("p1")),
        Step.await_answer(),
        Step.end(completed()),
    ])
    runtime = Runtime.with_mock(script)        # discovery reports the agent "mock"

A prompted turn plays the next ``.turn(...)`` entry. An ``.agent_turn(...)`` entry plays by
itself as soon as the entry before it finished (at connect when it comes first). Steps after
``Step.end`` play immediately: that is how trailing frames and agent continuations are modelled.

``Script`` flags model the wire shapes the engine must cope with:
``steer`` (reports ``Capability.STEER``), ``steer_rejects``, ``steer_ack`` (False leaves steers
unanswered), ``ends_turns`` / ``ends_agent_turns`` (False: no end frame, completion is inferred),
``stale_before_ack`` (a frame of the previous turn arrives before each ack), ``permissions``,
``options`` (config options; ``configure`` updates them), ``compact``, ``capabilities`` (more
``Capability`` values to report), ``buffer`` (the adapter's event buffer), ``ignore_close``
(a wedged agent), ``ignore_cancel`` (never confirms a cancel), ``refuses_prompt_while_busy`` (a
prompt that arrives while a turn still plays ends ``Failed("still running a turn")``, as codex and
pi do; reported as ``DriverInfo.refuses_prompt_while_busy``), ``logged_out`` (``open`` raises
``AuthRequired``), ``plan_usage`` (the ``PlanUsage`` ``Runtime.plan_usage`` returns for the agent,
reported as ``Capability.PLAN_USAGE``; None, the default, makes it raise ``UnsupportedFeature``),
``version``, ``history`` (``HistoryEntry`` values ``Runtime.history`` lists for the agent
``"mock"``, filtered by their ``cwd``; resuming one of their tokens opens a session with its title;
None, the default, makes ``history`` raise ``UnsupportedFeature``).
"""

from __future__ import annotations

import enum
import json
import os
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from . import seam
from ._frozen import _tuple
from .errors import AuthRequired, InvalidConfiguration, ResumeFailed, UnsupportedFeature
from .types import (
    JSON,
    Account,
    AgentDetails,
    Authenticated,
    AuthKind,
    Cancelled,
    Capabilities,
    Capability,
    Completed,
    ConfigOption,
    ConfigValue,
    ContextCompacted,
    ContextUsage,
    EnvVarLogin,
    EventKind,
    Failed,
    FileDiff,
    HistoryEntry,
    PermissionChoice,
    PermissionRequest,
    PlanEntry,
    PlanUpdated,
    PlanUsage,
    Question,
    QuestionChoice,
    QuestionRequest,
    ReasoningDelta,
    RequestOpened,
    SelectKind,
    StopReason,
    TerminalLogin,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolKindValue,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
)

if TYPE_CHECKING:
    from .installation import AgentInstallation, AgentProfile

__all__ = [
    "MockAdapter",
    "Script",
    "Step",
    "cancelled",
    "completed",
    "context_usage",
    "failed",
    "permission",
    "plan",
    "question",
    "reasoning",
    "text",
    "tool",
]


class _Op(enum.Enum):
    EMIT = "emit"
    AWAIT_ANSWER = "await_answer"
    END = "end"
    SLEEP = "sleep"
    DIE = "die"
    REPEAT = "repeat"
    SEND = "send"


@attrs.frozen
class Step:
    """One thing the scripted agent does. Build with the static constructors."""

    op: _Op
    kind: EventKind | None = None
    stop: StopReason | None = None
    seconds: float = 0.0
    status: str = ""
    times: int = 0
    steps: tuple[Step, ...] = ()
    parent_tool_id: str | None = None
    extensions: Mapping[str, JSON] | None = None
    event: seam.DriverEvent | None = None

    @staticmethod
    def emit(kind: EventKind, parent_tool_id: str | None = None, extensions: Mapping[str, JSON] | None = None) -> Step:
        """Send ``kind`` as content (from the subagent tool ``parent_tool_id`` when given)."""
        return Step(_Op.EMIT, kind=kind, parent_tool_id=parent_tool_id, extensions=extensions)

    @staticmethod
    def await_answer() -> Step:
        """Pause until the app answers a request."""
        return Step(_Op.AWAIT_ANSWER)

    @staticmethod
    def end(stop: StopReason, parent_tool_id: str | None = None) -> Step:
        """Send the wire's turn end (a subagent's end when ``parent_tool_id`` is given)."""
        return Step(_Op.END, stop=stop, parent_tool_id=parent_tool_id)

    @staticmethod
    def sleep(seconds: float) -> Step:
        """Wait ``seconds``."""
        return Step(_Op.SLEEP, seconds=seconds)

    @staticmethod
    def die(status: str = "exit status: 9") -> Step:
        """The agent process dies with ``status`` (stderr says "mock died")."""
        return Step(_Op.DIE, status=status)

    @staticmethod
    def repeat(times: int, step: Step | Sequence[Step]) -> Step:
        """Play ``step`` (or a list of steps) ``times`` times."""
        steps = (step,) if isinstance(step, Step) else tuple(step)
        return Step(_Op.REPEAT, times=times, steps=steps)

    @staticmethod
    def background(tool_id: str) -> Step:
        """Say that tool ``tool_id`` keeps running after the turn (``TurnEnded.background``)."""
        return Step(_Op.SEND, event=seam.ToolBackgrounded(tool_id))

    @staticmethod
    def send(event: seam.DriverEvent) -> Step:
        """Send any raw seam event (for testing how the engine treats odd adapters)."""
        return Step(_Op.SEND, event=event)


@attrs.frozen
class _Entry:
    steps: tuple[Step, ...]
    agent: bool


def _history(entries: Iterable[HistoryEntry] | None) -> tuple[HistoryEntry, ...] | None:
    return None if entries is None else tuple(entries)


@attrs.frozen
class Script:
    """A scripted agent: turns to play plus flags for the wire shape. Immutable; builders copy."""

    steer: bool = False
    steer_rejects: bool = False
    steer_ack: bool = True
    ends_turns: bool = True
    ends_agent_turns: bool = True
    stale_before_ack: bool = False
    permissions: bool = True
    compact: bool = False
    options: tuple[ConfigOption, ...] = attrs.field(default=(), converter=_tuple)
    capabilities: tuple[Capability, ...] = attrs.field(default=(), converter=_tuple)
    buffer: int = 64
    ignore_close: bool = False
    ignore_cancel: bool = False
    refuses_prompt_while_busy: bool = False
    logged_out: bool = False
    version: str = "mock"
    history: tuple[HistoryEntry, ...] | None = attrs.field(default=None, converter=_history)
    plan_usage: PlanUsage | None = None
    entries: tuple[_Entry, ...] = ()

    def turn(self, steps: Iterable[Step]) -> Script:
        """Append a turn played when the app prompts."""
        return attrs.evolve(self, entries=(*self.entries, _Entry(tuple(steps), agent=False)))

    def agent_turn(self, steps: Iterable[Step]) -> Script:
        """Append a turn the agent starts by itself, right after the entry before it."""
        return attrs.evolve(self, entries=(*self.entries, _Entry(tuple(steps), agent=True)))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Script:
        """A script from its JSON form (see ``load``); ``InvalidConfiguration`` when malformed."""
        return _script_from_json(data)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Script:
        """Read a script from a JSON file::

            {"steer": false, "ends_turns": true, "options": [<ConfigOption>...], "capabilities": ["resume"],
             "turns": [{"agent": false, "steps": [
                 {"emit": {"type": "TextDelta", "message_id": "m1", "text": "hi"}},
                 {"emit": {...}, "parent_tool_id": "task1"},
                 {"await_answer": true}, {"background": "tool1"}, {"sleep": 0.1}, {"die": "exit status: 9"},
                 {"repeat": 3, "steps": [...]},
                 {"end": {"type": "Completed", "source": "protocol"}}]}]}

        Event kinds, stop reasons and options use the ``anyagent.serialize`` JSON shape.
        """
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidConfiguration(f"cannot read mock script {path}: {exc}") from None
        if not isinstance(data, dict):
            raise InvalidConfiguration(f"mock script {path} must hold a JSON object")
        return _script_from_json(data)

    def capability_set(self) -> Capabilities:
        """What the scripted agent reports."""
        caps = {Capability.QUESTIONS, *self.capabilities}
        if self.permissions:
            caps.add(Capability.PERMISSIONS)
        if self.steer:
            caps.add(Capability.STEER)
        if self.compact:
            caps.add(Capability.COMPACT)
        if self.history is not None:
            caps.add(Capability.RESUME)
        if self.plan_usage is not None:
            caps.add(Capability.PLAN_USAGE)
        return Capabilities.of(*caps)

    def history_entry(self, token: str) -> HistoryEntry | None:
        """The ``history`` entry whose resume token is ``token``, if any."""
        return next((entry for entry in self.history or () if entry.resume_token == token), None)


_FLAGS = (
    "steer",
    "steer_rejects",
    "steer_ack",
    "ends_turns",
    "ends_agent_turns",
    "stale_before_ack",
    "permissions",
    "compact",
    "ignore_close",
    "ignore_cancel",
    "refuses_prompt_while_busy",
    "logged_out",
)


def _script_from_json(data: Mapping[str, Any]) -> Script:
    from . import serialize

    try:
        known = {*_FLAGS, "options", "capabilities", "buffer", "version", "history", "plan_usage", "turns"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidConfiguration(f"unknown mock script keys: {', '.join(unknown)}")
        flags: dict[str, Any] = {}
        for name in _FLAGS:
            if name in data:
                if not isinstance(data[name], bool):
                    raise InvalidConfiguration(f"mock script key {name!r} must be true or false")
                flags[name] = data[name]
        script = Script(
            **flags,
            options=tuple(serialize.structure(o, ConfigOption) for o in data.get("options", [])),
            capabilities=tuple(Capability(c) for c in data.get("capabilities", [])),
            buffer=int(data.get("buffer", 64)),
            version=str(data.get("version", "mock")),
            history=(None if data.get("history") is None else serialize.structure(data["history"], list[HistoryEntry])),
            plan_usage=(None if data.get("plan_usage") is None else serialize.structure(data["plan_usage"], PlanUsage)),
        )
        for turn in data.get("turns", []):
            steps = tuple(_step_from_json(step) for step in turn.get("steps", []))
            script = script.agent_turn(steps) if turn.get("agent", False) else script.turn(steps)
        return script
    except (serialize.SerializationError, ValueError, TypeError, AttributeError) as exc:
        raise InvalidConfiguration(f"malformed mock script: {exc}") from None


def _step_from_json(step: Mapping[str, Any]) -> Step:
    from . import serialize

    if "emit" in step:
        kind = serialize.structure(step["emit"], EventKind)
        return Step.emit(kind, step.get("parent_tool_id"), step.get("extensions"))
    if "end" in step:
        return Step.end(serialize.structure(step["end"], StopReason), step.get("parent_tool_id"))
    if "await_answer" in step:
        return Step.await_answer()
    if "background" in step:
        return Step.background(str(step["background"]))
    if "sleep" in step:
        return Step.sleep(float(step["sleep"]))
    if "die" in step:
        return Step.die(str(step["die"]))
    if "repeat" in step:
        return Step.repeat(int(step["repeat"]), [_step_from_json(s) for s in step.get("steps", [])])
    raise InvalidConfiguration(f"unknown mock step {dict(step)!r}")


# ---------------------------------------------------------------------------------------------
# helpers that build event kinds


def text(message_id: str, text: str) -> TextDelta:
    """A ``TextDelta``."""
    return TextDelta(message_id, text)


def reasoning(message_id: str, text: str) -> ReasoningDelta:
    """A ``ReasoningDelta``."""
    return ReasoningDelta(message_id, text)


def tool(
    tool_id: str,
    status: ToolStatus = ToolStatus.RUNNING,
    *,
    kind: ToolKindValue = ToolKind.EXECUTE,
    title: str | None = None,
    command: str | None = "cargo test",
    output: str | None = None,
    diffs: Iterable[FileDiff] = (),
) -> ToolUpdated:
    """A ``ToolUpdated`` snapshot (by default a running shell command)."""
    return ToolUpdated(
        ToolUpdate(
            id=tool_id,
            kind=kind,
            title=title if title is not None else (f"Run {command}" if command else tool_id),
            status=status,
            input=ToolInput(command=command),
            output=output,
            diffs=tuple(diffs),
        )
    )


def permission(
    request_id: str,
    options: Iterable[PermissionChoice] | None = None,
    *,
    tool_update: ToolUpdate | None = None,
    detail: str | None = None,
) -> RequestOpened:
    """A permission request (offering allow-once and deny-once unless ``options`` says otherwise)."""
    offered = tuple(options) if options is not None else (PermissionChoice.ALLOW_ONCE, PermissionChoice.DENY_ONCE)
    subject = tool_update or ToolUpdate(
        id=f"{request_id}-tool",
        kind=ToolKind.EXECUTE,
        title="Run cargo test",
        status=ToolStatus.PENDING,
        input=ToolInput(command="cargo test"),
    )
    return RequestOpened(PermissionRequest(request_id, subject, offered, detail))


def question(
    request_id: str,
    text: str = "Which one?",
    choices: Iterable[str] = ("yes", "no"),
    *,
    multi_select: bool = False,
    allows_free_text: bool = True,
    questions: Iterable[Question] | None = None,
) -> RequestOpened:
    """A question request (one question with ``choices`` unless ``questions`` is given)."""
    if questions is None:
        questions = (
            Question(
                id="q1",
                text=text,
                choices=tuple(QuestionChoice(c, c) for c in choices),
                multi_select=multi_select,
                allows_free_text=allows_free_text,
            ),
        )
    return RequestOpened(QuestionRequest(request_id, tuple(questions)))


def plan(*entries: str | PlanEntry) -> PlanUpdated:
    """A ``PlanUpdated`` from strings or entries."""
    return PlanUpdated(tuple(PlanEntry(e) if isinstance(e, str) else e for e in entries))


def context_usage(used_tokens: int, window_tokens: int | None = None, cost_usd: float | None = None) -> ContextUsage:
    """A ``ContextUsage``."""
    return ContextUsage(used_tokens, window_tokens, cost_usd)


def completed() -> Completed:
    """The wire's ``Completed`` stop."""
    return Completed()


def cancelled() -> Cancelled:
    """A ``Cancelled`` stop."""
    return Cancelled()


def failed(message: str) -> Failed:
    """A ``Failed`` stop."""
    return Failed(message)


def select_option(
    option_id: str, choices: Iterable[str], current: str | None = None, live: bool = True, between_turns: bool = False
) -> ConfigOption:
    """A select ``ConfigOption`` for ``Script(options=...)`` (``between_turns``: see ``ConfigOption``)."""
    from .types import ConfigChoice

    values = tuple(choices)
    return ConfigOption(
        id=option_id,
        name=option_id.capitalize(),
        kind=SelectKind(tuple(ConfigChoice(v, v) for v in values)),
        current=current if current is not None else (values[0] if values else None),
        live=live,
        between_turns=between_turns,
    )


# ---------------------------------------------------------------------------------------------
# the adapter

MOCK_LOGIN = (TerminalLogin(("mock-agent", "login"), "log in to the mock agent"), EnvVarLogin("MOCK_API_KEY"))
"""The login methods a ``Script(logged_out=True)`` agent reports."""


class MockAdapter(seam.Adapter):
    """The scripted agent behind ``Runtime.with_mock``. Wire name ``"mock"``."""

    wire = "mock"

    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self.sent: list[seam.DriverCommand] = []

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        """Validate the options the way a real wire would and return the scripted driver."""
        script = self.script
        caps = script.capability_set()
        if script.logged_out:
            raise AuthRequired(MOCK_LOGIN, "the mock agent is logged out")
        token = request.options.resume_token
        if token is not None and not caps.supports(Capability.RESUME):
            raise ResumeFailed("the mock agent cannot resume")
        kept = script.history_entry(token) if token is not None else None
        if token is not None and kept is None and Capability.RESUME not in script.capabilities:
            raise ResumeFailed(f"the mock agent keeps no conversation {token!r}")
        if request.options.config_home_dir is not None:
            raise InvalidConfiguration("the mock agent has no config-home variable; config_home cannot be honoured")
        options = list(script.options)
        for option_id, value in request.options.configuration.items():
            for index, option in enumerate(options):
                if option.id == option_id and option.accepts(value):
                    options[index] = attrs.evolve(option, current=value)
        configuration = {o.id: o.current for o in options if o.current is not None}
        info = seam.DriverInfo(
            details=AgentDetails(
                version=script.version,
                auth=Authenticated(AuthKind.API_KEY, Account(email="mock@example.invalid")),
                capabilities=caps,
                config_options=tuple(options),
            ),
            configuration=configuration,
            resume_token=request.options.resume_token or f"mock-{request.session_id}",
            title=kept.title if kept is not None else None,
            ends_turns=script.ends_turns,
            ends_agent_turns=script.ends_agent_turns,
            refuses_prompt_while_busy=script.refuses_prompt_while_busy,
            tools_disabled=request.options.no_tools,
            event_buffer=script.buffer,
        )
        await anyio.lowlevel.checkpoint()
        return _MockDriver(script, info, self.sent)

    async def plan_usage(self, installation: AgentInstallation, profile: AgentProfile | None) -> PlanUsage:
        """The script's ``plan_usage`` (``UnsupportedFeature`` when it has none, like an API-key login)."""
        await anyio.lowlevel.checkpoint()
        if self.script.plan_usage is None:
            raise UnsupportedFeature("this mock agent reports no plan usage (give Script(plan_usage=...))")
        return self.script.plan_usage

    async def history(self, request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
        """The script's ``history`` entries (those run in ``cwd`` when given)."""
        await anyio.lowlevel.checkpoint()
        if self.script.history is None:
            raise UnsupportedFeature("this mock agent keeps no history (give Script(history=[...]))")
        where = str(cwd) if cwd is not None else None
        return seam.HistoryListing(e for e in self.script.history if where is None or e.cwd == where)


class _MockDriver(seam.Driver):
    def __init__(self, script: Script, info: seam.DriverInfo, sent: list[seam.DriverCommand]) -> None:
        self.script = script
        self.info = info
        self._sent = sent
        self._entries = deque(script.entries)
        self._answered = anyio.Event()
        self._answers = 0
        self._consumed = 0
        self._play_scope: anyio.CancelScope | None = None
        self._playing = False
        self._died = False
        self._link: seam.DriverLink | None = None

    async def run(self, link: seam.DriverLink) -> None:
        self._link = link
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._play_agent_turns()
            async for command in link.commands:
                self._sent.append(command)
                if not await self._handle(command):
                    break
                if self._died:
                    break
            tg.cancel_scope.cancel()

    def _play_agent_turns(self) -> None:
        if self._entries and self._entries[0].agent and not self._playing:
            entry = self._entries.popleft()
            self._start_play(entry.steps)

    def _start_play(self, steps: tuple[Step, ...]) -> None:
        self._playing = True
        self._tg.start_soon(self._play, steps)

    async def _play(self, steps: tuple[Step, ...]) -> None:
        link = self._link
        assert link is not None
        with anyio.CancelScope() as scope:
            self._play_scope = scope
            await self._play_steps(link, steps)
        self._play_scope = None
        self._playing = False
        if not self._died:
            self._play_agent_turns()

    async def _play_steps(self, link: seam.DriverLink, steps: Iterable[Step]) -> None:
        for step in steps:
            if step.op is _Op.EMIT:
                assert step.kind is not None
                await link.content(step.kind, step.parent_tool_id, step.extensions)
            elif step.op is _Op.AWAIT_ANSWER:
                while self._answers <= self._consumed:
                    await self._answered.wait()
                self._consumed += 1
            elif step.op is _Op.END:
                assert step.stop is not None
                await link.turn_end(step.stop, step.parent_tool_id)
            elif step.op is _Op.SLEEP:
                await anyio.sleep(step.seconds)
            elif step.op is _Op.DIE:
                self._died = True
                await link.exited(step.status, "mock died")
                self._tg.cancel_scope.cancel()
                return
            elif step.op is _Op.REPEAT:
                for _ in range(step.times):
                    await self._play_steps(link, step.steps)
            elif step.op is _Op.SEND:
                assert step.event is not None
                await link.send(step.event)

    async def _handle(self, command: seam.DriverCommand) -> bool:
        link = self._link
        assert link is not None
        script = self.script
        if isinstance(command, seam.StartTurn):
            if script.stale_before_ack:
                await link.content(TextDelta("stale", "a frame of the previous turn"))
            await link.turn_ack()
            if script.refuses_prompt_while_busy and self._playing:
                await link.turn_end(Failed("still running a turn"), turn_id=command.turn_id)
            elif self._entries and not self._entries[0].agent:
                entry = self._entries.popleft()
                self._start_play(entry.steps)
            else:
                await link.turn_end(Failed("the mock script has no more turns"))
        elif isinstance(command, seam.Steer):
            if script.steer_rejects:
                await link.steered(False)
            elif script.steer_ack:
                await link.steered(True)
        elif isinstance(command, seam.AnswerRequest):
            self._answers += 1
            self._answered.set()
            self._answered = anyio.Event()
        elif isinstance(command, seam.Cancel):
            if self._play_scope is not None and not script.ignore_cancel:
                self._play_scope.cancel()
                await link.turn_end(Cancelled())
        elif isinstance(command, seam.Configure):
            await self._configure(link, command.option_id, command.value)
        elif isinstance(command, seam.Rollback):
            self.info = attrs.evolve(self.info, title=f"rolled back {command.turns}")
            await link.info_changed(self.info)
        elif isinstance(command, seam.Compact):
            await link.content(ContextCompacted())
            await link.turn_end(Completed())
        elif isinstance(command, seam.Close):
            return script.ignore_close
        return True

    async def _configure(self, link: seam.DriverLink, option_id: str, value: ConfigValue) -> None:
        details = self.info.details
        options = tuple(attrs.evolve(o, current=value) if o.id == option_id else o for o in details.config_options)
        configuration: dict[str, Any] = {**self.info.configuration, option_id: value}
        self.info = attrs.evolve(
            self.info, details=attrs.evolve(details, config_options=options), configuration=configuration
        )
        await link.info_changed(self.info)
