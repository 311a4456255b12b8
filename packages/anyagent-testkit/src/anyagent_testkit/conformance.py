"""The adapter conformance suite: the contract every adapter owes the engine, checked end to end.

An adapter author describes how to reach their agent for each scenario (a ``Subject``) — a
recording played by ``anyagent_testkit.replay``, or a live CLI talking to the fake model — and the
suite drives real sessions through ``anyagent.Runtime`` and checks what comes out:

- ``handshake``: ``open`` yields details and capabilities; close ends the stream cleanly;
- ``text_turn``: a prompt is acknowledged, its text streams grouped by message id, the turn ends
  exactly once;
- ``tool_snapshots``: tool calls arrive as whole snapshots replaced by id and finish;
- ``permission_round_trip``: a permission request offers real choices, an answer closes it;
- ``cancel``: cancel ends the turn as ``Cancelled`` and closes its open requests; every tool active
  at the cancel ends ``CANCELLED`` with exactly one final update;
- ``cancel_mid_request``: a cancel while a permission request waits closes it once — it is never
  answered twice, the adapter's wire does not complain — and the next turn completes;
- ``between_turns``: a ``ConfigOption.between_turns`` setting changed mid-turn leaves
  ``SessionInfo.configuration`` alone until the turn's ``TurnEnded``, then is confirmed or refused
  before the next prompt starts;
- ``close_reaps``: after ``close`` no process the session started is left (Linux);
- ``unsupported_calls``: a capability the adapter does not report raises ``UnsupportedFeature``;
- ``fuzzed_frames``: unknown and malformed frames never crash the adapter's translator;
- ``diagnostic_codes``: every diagnostic the translator makes, from real and fuzzed frames, carries
  a code from ``DiagnosticCode``.

Every check holds every turn it reads to the engine's uniform rules: one ``TurnEnded``, no request
left open, and no tool still active after it unless ``TurnEnded.background`` lists it; and every
diagnostic a session emits must carry a code from ``DiagnosticCode`` (an unknown code fails the
check that saw it: adapters use the table, so apps can match on it).

Runner-agnostic::

    report = await run_adapter_conformance(MySubject(), workdir)
    report.raise_for_failures()

and for pytest (``@pytest.mark.anyio`` runs it on every backend you parametrize)::

    from anyagent_testkit.conformance import pytest_suite
    test_conformance = pytest_suite(MySubject)

A scenario the subject cannot stage (``launch`` returns None) is skipped with a reason; optional
checks skip when the capability is absent (no ``Capability.PERMISSIONS``, no ``between_turns``
option, no ``translate`` hook) or the subject stages no ``follow_up`` turn they need.
"""

from __future__ import annotations

import contextvars
import enum
import functools
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

import anyio
import attrs

from anyagent import (
    AgentDetails,
    AgentError,
    AgentInstallation,
    AgentProfile,
    Answer,
    AuthStatus,
    BooleanKind,
    Cancelled,
    Capability,
    Completed,
    ConfigOption,
    ConfigValue,
    Diagnostic,
    DiagnosticCode,
    DiagnosticInfo,
    Event,
    Events,
    InvalidRequest,
    MessageEnded,
    PermissionChoice,
    PermissionRequest,
    PlanUpdated,
    PlanUsage,
    PromptOrigin,
    QuestionAnswer,
    QuestionRequest,
    ReasoningDelta,
    RequestClosed,
    RequestOpened,
    ResumeFailed,
    Runtime,
    SelectKind,
    Session,
    SessionInfo,
    SessionOptions,
    SessionStatus,
    SessionUpdated,
    Started,
    StatusChanged,
    TextDelta,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
    UnsupportedFeature,
    seam,
)

__all__ = [
    "CHECKS",
    "CheckResult",
    "ConformanceFailure",
    "ConformanceReport",
    "Launch",
    "Scenario",
    "Skip",
    "Subject",
    "pytest_suite",
    "run_adapter_conformance",
]

TURN_TIMEOUT = 120.0
"""Seconds any one turn may take before the check fails (live agents can be slow)."""


class Scenario(enum.Enum):
    """What the subject is asked to stage."""

    HANDSHAKE = "handshake"
    TEXT = "text"
    TOOL = "tool"
    PERMISSION = "permission"
    CANCEL = "cancel"
    CLOSE = "close"
    CAPABILITIES = "capabilities"


@attrs.frozen
class Launch:
    """How to reach the agent for one scenario.

    ``runtime`` must not be entered yet (the check enters it); ``prompt`` is what makes the agent do
    the scenario's thing (plain text for TEXT, a tool call for TOOL, a gated tool for PERMISSION, a
    long stream for CANCEL). ``follow_up`` is a plain prompt for the turn after: after the cancel
    (CANCEL), after a cancel while the permission request waits (PERMISSION: ``cancel_mid_request``
    needs it), after a held setting settled (TEXT). Stage the CANCEL and PERMISSION tools so they
    cannot finish on their own before the cancel lands (a tool waiting for permission, a long
    command): every tool active at a cancel must end ``CANCELLED``.
    """

    runtime: Runtime
    agent: AgentInstallation
    options: SessionOptions
    prompt: str = "hello"
    follow_up: str | None = None


@runtime_checkable
class Subject(Protocol):
    """What an adapter author supplies."""

    name: str

    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        """The launch for ``scenario`` in the empty directory ``workdir``; None to skip it."""
        ...


class Skip(Exception):
    """Raised by a check that does not apply; carries the reason."""


class ConformanceFailure(AssertionError):
    """One or more checks failed; the message lists them."""


@attrs.frozen
class CheckResult:
    """The outcome of one check: ``status`` is "passed", "skipped" or "failed"."""

    name: str
    status: str
    detail: str = ""


@attrs.frozen
class ConformanceReport:
    """Every check's result."""

    subject: str
    results: tuple[CheckResult, ...]

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        """The checks whose status is `failed`, in run order."""
        return tuple(r for r in self.results if r.status == "failed")

    def raise_for_failures(self) -> None:
        """Raise ``ConformanceFailure`` naming every failed check."""
        if self.failed:
            lines = "\n".join(f"- {r.name}: {r.detail}" for r in self.failed)
            raise ConformanceFailure(f"{self.subject} fails the adapter contract:\n{lines}")

    def summary(self) -> str:
        """One line per check."""
        return "\n".join(f"{r.status:7} {r.name}{': ' + r.detail if r.detail else ''}" for r in self.results)


# ---------------------------------------------------------------------------------------------
# helpers


def _launch(subject: Subject, scenario: Scenario, workdir: Path) -> Launch:
    launch = subject.launch(scenario, workdir)
    if launch is None:
        raise Skip(f"{subject.name} stages no {scenario.value} scenario")
    return launch


@functools.cache
def _table() -> frozenset[str]:
    return frozenset(DiagnosticCode.all())


def _require_table_code(info: DiagnosticInfo, where: str) -> None:
    """``info.code`` must be one of ``DiagnosticCode``'s: apps match on the table."""
    assert info.code in _table(), (
        f"{where} a diagnostic whose code {info.code!r} is not in anyagent.DiagnosticCode "
        f"(use the code that names the situation): {info.message!r}"
    )


class _Checked:
    """A session's ``Events`` whose every ``Diagnostic`` is held to the ``DiagnosticCode`` table as
    it is read (an ``AssertionError`` fails the check that reads it)."""

    def __init__(self, events: Events) -> None:
        self._events = events

    def __aiter__(self) -> _Checked:
        return self

    async def __anext__(self) -> Event:
        event = await self._events.__anext__()
        if isinstance(event.kind, Diagnostic):
            _require_table_code(event.kind.diagnostic, "the session emitted")
        return event


# ---------------------------------------------------------------------------------------------
# the contract watch: what the adapter sends the engine, held to the contract as it is sent, so a
# break fails its check at once, naming the cause, instead of a turn that never ends (the engine
# drops what breaks the contract, e.g. content before TurnAck, and the check would time out).

_TURN_CONTENT = (TextDelta, ReasoningDelta, MessageEnded, ToolUpdated, ToolOutputDelta, RequestOpened, PlanUpdated)


class _ContractWatch:
    """Follows one session's commands and driver events; ``broken`` is the first break seen."""

    def __init__(self) -> None:
        self.broken: str | None = None
        self.broke = anyio.Event()
        self._turn: str | None = None  # the turn started and not yet acknowledged
        self._settled = True  # every turn before it has sent its TurnEnd (nothing late can come)
        self._open_turn = False  # a turn was acknowledged and has not ended
        self._cancelled = False  # the unacknowledged turn was cancelled

    def _break(self, message: str) -> None:
        if self.broken is None:
            self.broken = message
            self.broke.set()

    def command(self, command: object) -> None:
        if isinstance(command, seam.StartTurn):
            self._settled = self._settled and not self._open_turn
            self._turn = command.turn_id
            self._open_turn = False
            self._cancelled = False
        elif isinstance(command, seam.Cancel) and self._turn is not None:
            self._cancelled = True  # a turn cancelled before its ack may end without one

    def event(self, event: object) -> None:
        turn = self._turn
        if isinstance(event, seam.TurnAck):
            if turn is not None:
                self._turn, self._open_turn = None, True
            return
        if isinstance(event, seam.TurnEnd) and event.parent_tool_id is None:
            if turn is not None and self._cancelled and (self._settled or event.turn_id == turn):
                self._turn = None  # the engine takes this end as the cancel's
                self._settled = True
            elif turn is not None and (self._settled or event.turn_id == turn):
                self._break(
                    f"the adapter sent TurnEnd({type(event.stop).__name__}) for turn {turn} before its TurnAck: "
                    "the engine ignores a turn end it has not seen acknowledged, so the turn never ends. "
                    "Send seam.TurnAck() as soon as the agent accepts the prompt, before anything of the turn"
                )
            elif turn is not None:
                self._settled = True  # the previous (cancelled) turn's own late end
            else:
                self._open_turn = False
                self._settled = True
            return
        if (
            isinstance(event, seam.Content)
            and isinstance(event.kind, _TURN_CONTENT)
            and turn is not None
            and self._settled
            and not self._cancelled
        ):
            self._break(
                f"the adapter sent {type(event.kind).__name__} for turn {turn} before its TurnAck: the engine drops "
                "a turn's content until the turn is acknowledged (it takes it for the previous turn's tail). "
                "Send seam.TurnAck() as soon as the agent accepts the prompt, before anything of the turn"
            )


_WATCH: contextvars.ContextVar[_ContractWatch | None] = contextvars.ContextVar("_WATCH", default=None)


class _WatchedCommands:
    """``link.commands`` as the driver reads it, each command shown to the watch first."""

    def __init__(self, inner: Any, watch: _ContractWatch) -> None:
        self._inner = inner
        self._watch = watch

    async def receive(self) -> seam.DriverCommand:
        command: seam.DriverCommand = await self._inner.receive()
        self._watch.command(command)
        return command

    def receive_nowait(self) -> seam.DriverCommand:
        command: seam.DriverCommand = self._inner.receive_nowait()
        self._watch.command(command)
        return command

    def __aiter__(self) -> _WatchedCommands:
        return self

    async def __anext__(self) -> seam.DriverCommand:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _WatchedLink(seam.DriverLink):
    def __init__(self, link: seam.DriverLink, watch: _ContractWatch) -> None:
        super().__init__(cast(Any, _WatchedCommands(link.commands, watch)), link._events)
        self._watch = watch

    async def send(self, event: seam.DriverEvent) -> None:
        self._watch.event(event)
        await super().send(event)


class _WatchedDriver(seam.Driver):
    def __init__(self, driver: seam.Driver, watch: _ContractWatch) -> None:
        self._driver = driver
        self._watch = watch
        self.info = driver.info

    async def run(self, link: seam.DriverLink) -> None:
        await self._driver.run(_WatchedLink(link, self._watch))

    async def aclose(self) -> None:
        await self._driver.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._driver, name)


class _WatchedAdapter(seam.Adapter):
    wire = ""

    def __init__(self, adapter: seam.Adapter) -> None:
        self._adapter = adapter
        self.wire = adapter.wire  # type: ignore[misc]

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        driver = await self._adapter.connect(request)
        watch = _WATCH.get()
        return driver if watch is None else _WatchedDriver(driver, watch)

    async def probe_auth(self, request: seam.ConnectRequest) -> AuthStatus | None:
        return await self._adapter.probe_auth(request)

    async def plan_usage(self, installation: AgentInstallation, profile: AgentProfile | None) -> PlanUsage:
        return await self._adapter.plan_usage(installation, profile)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._adapter, name)


def _watch_adapters(runtime: Runtime) -> None:
    """Every adapter the runtime makes from now on reports to the running check's watch."""
    adapters = runtime.registry().adapters
    for wire, factory in list(adapters.items()):
        if not getattr(factory, "_conformance_watched", False):

            def watched(factory: Any = factory) -> seam.Adapter:
                return _WatchedAdapter(factory())

            watched._conformance_watched = True  # type: ignore[attr-defined]
            adapters[wire] = watched


async def _guarded(check: Callable[[Subject, Path], Awaitable[None]], subject: Subject, workdir: Path) -> None:
    """Run ``check``; a contract break the watch sees fails it at once with the cause."""
    watch = _ContractWatch()
    error: Exception | None = None

    async def run_check() -> None:
        nonlocal error
        token = _WATCH.set(watch)
        try:
            await check(subject, workdir)
        except Exception as exc:  # re-raised below, bare (not in an exception group)
            error = exc
        finally:
            _WATCH.reset(token)
            tg.cancel_scope.cancel()

    async def stop_on_break() -> None:
        await watch.broke.wait()
        tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_on_break)
        tg.start_soon(run_check)
    if watch.broken is not None:
        raise AssertionError(f"contract break: {watch.broken}")
    if error is not None:
        raise error


async def _open(runtime: Runtime, launch: Launch, needs: Capability | None = None) -> tuple[Session, _Checked]:
    """Open the subject's session; with ``needs``, skip (closing it) unless it reports that capability."""
    _watch_adapters(runtime)
    session, events = await runtime.open(launch.agent, launch.options)
    if needs is not None and not session.info().details.capabilities.supports(needs):
        await session.close()
        raise Skip(f"the adapter reports no Capability.{needs.name}")
    return session, _Checked(events)


async def _turn(events: AsyncIterator[Event], session: Session, *, answer: bool = True) -> list[Event]:
    """Every event up to the end of the running (top-level) turn, answering requests if asked;
    the turn's tools must be settled at its end."""
    collected: list[Event] = []
    with anyio.fail_after(TURN_TIMEOUT):
        async for event in events:
            collected.append(event)
            kind = event.kind
            if answer and isinstance(kind, RequestOpened):
                await _answer(session, kind)
            if isinstance(kind, TurnEnded):
                _check_tools_settled(collected, event)
                return collected
    raise AssertionError("the event stream ended before the turn did")


async def _answer(session: Session, opened: RequestOpened) -> None:
    request = opened.request
    if isinstance(request, PermissionRequest):
        allow = [c for c in (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS) if c in request.options]
        await session.answer(request.id, Answer.permission(allow[0] if allow else request.options[0]))
    elif isinstance(request, QuestionRequest):
        answers = [
            QuestionAnswer.choices([q.choices[0].id]) if q.choices else QuestionAnswer.text("yes")
            for q in request.questions
        ]
        await session.answer(request.id, Answer.question(answers))


def _check_turn_shape(events: list[Event], prompt_id: str | None = None) -> None:
    """The invariants every turn keeps."""
    sequences = [e.sequence for e in events]
    assert sequences == sorted(set(sequences)), f"sequence numbers are not strictly increasing: {sequences[:20]}"
    starts = [e for e in events if isinstance(e.kind, TurnStarted)]
    ends = [e for e in events if isinstance(e.kind, TurnEnded)]
    assert len(ends) == 1, f"expected exactly one TurnEnded, got {len(ends)}"
    if prompt_id is not None:
        assert starts, "no TurnStarted before the turn's content"
        assert starts[0].kind == TurnStarted(PromptOrigin(prompt_id)), f"TurnStarted names {starts[0].kind}"
    opened = {e.kind.request.id for e in events if isinstance(e.kind, RequestOpened)}
    closed = {e.kind.request_id for e in events if isinstance(e.kind, RequestClosed)}
    assert opened <= closed, f"requests left open past their turn: {sorted(opened - closed)}"
    if starts and starts[0].turn_info is not None:
        turn_id = starts[0].turn_info.id
        stray = [e for e in events if e.turn_info is not None and e.turn_info.id != turn_id]
        assert not stray, f"events attributed to another turn: {[type(e.kind).__name__ for e in stray]}"
    _check_tools_settled(events, ends[0])


def _check_tools_settled(events: Sequence[Event], end: Event) -> None:
    """After ``end`` (a ``TurnEnded``) no tool of its turn is active unless it is listed in
    ``TurnEnded.background``: the engine ends the rest (``CANCELLED`` for a cancelled turn)."""
    ended = end.kind
    assert isinstance(ended, TurnEnded)
    turn_id = end.turn_info.id if end.turn_info is not None else None
    last: dict[str, ToolUpdate] = {}
    for event in events:
        if isinstance(event.kind, ToolUpdated) and (
            turn_id is None or (event.turn_info is not None and event.turn_info.id == turn_id)
        ):
            last[event.kind.tool.id] = event.kind.tool
    left = [
        f"{tool_id} ({tool.status.value})"
        for tool_id, tool in last.items()
        if tool.status.active and tool_id not in ended.background
    ]
    assert not left, f"tools still active after their turn ended, not listed in TurnEnded.background: {left}"


def _active_tools(events: Sequence[Event]) -> dict[str, ToolUpdate]:
    """The tools whose latest snapshot in ``events`` is pending or running."""
    last: dict[str, ToolUpdate] = {}
    for event in events:
        if isinstance(event.kind, ToolUpdated):
            last[event.kind.tool.id] = event.kind.tool
    return {tool_id: tool for tool_id, tool in last.items() if tool.status.active}


def _check_cancelled_tools(active: Mapping[str, ToolUpdate], after: Sequence[Event], background: Sequence[str]) -> None:
    """Every tool ``active`` at a cancel (and not left running in the background) gets exactly one
    final update in the events ``after`` the cancel, and it is ``CANCELLED``."""
    for tool_id, tool in active.items():
        if tool_id in background:
            continue
        finals = [
            e.kind.tool.status
            for e in after
            if isinstance(e.kind, ToolUpdated) and e.kind.tool.id == tool_id and not e.kind.tool.status.active
        ]
        assert finals, f"tool {tool_id} was {tool.status.value} at the cancel and never ended"
        assert len(finals) == 1, (
            f"tool {tool_id} got {len(finals)} final updates after the cancel: {[s.value for s in finals]}"
        )
        assert finals[0] is ToolStatus.CANCELLED, (
            f"tool {tool_id} was {tool.status.value} at the cancel and ended {finals[0].value}, not cancelled"
        )


def _children() -> set[int]:
    """Live descendants of this process (Linux /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


# ---------------------------------------------------------------------------------------------
# the checks


async def check_handshake(subject: Subject, workdir: Path) -> None:
    """``open`` yields details and capabilities; ``close`` ends the stream without an error."""
    launch = _launch(subject, Scenario.HANDSHAKE, workdir)
    async with launch.runtime as runtime:
        session, events = await _open(runtime, launch)
        info = session.info()
        assert isinstance(info.details, AgentDetails)
        assert info.session_id == session.id
        assert info.status is SessionStatus.IDLE
        for option in info.details.config_options:
            assert option.id and option.name, f"config option without id or name: {option}"
        closing = datetime.now(timezone.utc)  # events before this (e.g. commands listed late) are fine
        await session.close()
        with anyio.fail_after(10):
            rest = [e async for e in events]
        late = [e for e in rest if e.occurred_at >= closing and not isinstance(e.kind, StatusChanged)]
        assert not late, f"events after close: {[type(e.kind).__name__ for e in late]}"


async def check_text_turn(subject: Subject, workdir: Path) -> None:
    """A prompt starts a turn whose text streams grouped by message id and which ends once."""
    launch = _launch(subject, Scenario.TEXT, workdir)
    async with launch.runtime as runtime:
        session, events = await _open(runtime, launch)
        async with session:
            delivery = await session.prompt(launch.prompt)
            assert isinstance(delivery.kind, Started), f"an idle session must start the turn, got {delivery}"
            turn = await _turn(events, session)
            _check_turn_shape(turn, delivery.prompt_id)
            deltas = [e.kind for e in turn if isinstance(e.kind, (TextDelta, ReasoningDelta))]
            texts = [k for k in deltas if isinstance(k, TextDelta)]
            assert texts, "the turn streamed no text"
            assert all(k.message_id for k in deltas), "a delta without a message id"
            ended = {e.kind.message_id for e in turn if isinstance(e.kind, MessageEnded)}
            assert {k.message_id for k in deltas} <= ended, "a message never ended before its turn did"
            stop = turn[-1].kind
            assert isinstance(stop, TurnEnded) and isinstance(stop.stop, Completed), f"turn ended {stop}"
            with anyio.fail_after(10):
                while session.status() is not SessionStatus.IDLE:
                    await anyio.sleep(0.01)


async def check_tool_snapshots(subject: Subject, workdir: Path) -> None:
    """Tool calls arrive as whole snapshots, replaced by id, and finish (or run on in the background)."""
    launch = _launch(subject, Scenario.TOOL, workdir)
    async with launch.runtime as runtime:
        session, events = await _open(runtime, launch)
        async with session:
            delivery = await session.prompt(launch.prompt)
            turn = await _turn(events, session)
            _check_turn_shape(turn, delivery.prompt_id)  # settled: finished or listed as background
            updates = [e.kind.tool for e in turn if isinstance(e.kind, ToolUpdated)]
            assert updates, "the tool scenario produced no ToolUpdated"
            for tool in updates:
                assert tool.id, "a tool snapshot without an id"
                assert tool.title, f"tool {tool.id} has no title to show"


async def check_permission_round_trip(subject: Subject, workdir: Path) -> None:
    """A permission request offers real choices; answering closes it and the turn goes on to its end."""
    launch = _launch(subject, Scenario.PERMISSION, workdir)
    async with launch.runtime as runtime:
        session, events = await _open(runtime, launch, needs=Capability.PERMISSIONS)
        async with session:
            delivery = await session.prompt(launch.prompt)
            collected: list[Event] = []
            request: PermissionRequest | None = None
            with anyio.fail_after(TURN_TIMEOUT):
                async for event in events:
                    collected.append(event)
                    kind = event.kind
                    if isinstance(kind, RequestOpened) and isinstance(kind.request, PermissionRequest) and not request:
                        request = kind.request
                        assert request.options, "a permission request that offers nothing"
                        assert request.tool.id, "a permission request without its tool"
                        assert session.status() is SessionStatus.NEEDS_INPUT
                        await _answer(session, kind)
                    elif isinstance(kind, RequestOpened):
                        await _answer(session, kind)
                    if isinstance(kind, TurnEnded):
                        break
            assert request is not None, "the permission scenario opened no permission request"
            assert any(isinstance(e.kind, RequestClosed) and e.kind.request_id == request.id for e in collected)
            _check_turn_shape(collected, delivery.prompt_id)


async def check_cancel(subject: Subject, workdir: Path) -> None:
    """Cancel ends the running turn as ``Cancelled``, closing its requests and ending every tool
    active at the cancel as ``CANCELLED`` (one final update each); the session survives."""
    launch = _launch(subject, Scenario.CANCEL, workdir)
    async with launch.runtime as runtime:
        session, events = await _open(runtime, launch)
        async with session:
            delivery = await session.prompt(launch.prompt)
            collected: list[Event] = []
            active: dict[str, ToolUpdate] | None = None
            cut = 0
            with anyio.fail_after(TURN_TIMEOUT):
                async for event in events:
                    collected.append(event)
                    kind = event.kind
                    working = isinstance(kind, (TextDelta, ReasoningDelta, ToolUpdated, RequestOpened))
                    if working and active is None:
                        active, cut = _active_tools(collected), len(collected)
                        with anyio.fail_after(5):
                            await session.cancel()
                    if isinstance(kind, TurnEnded):
                        break
            assert active is not None, "the turn ended before it produced anything to cancel"
            _check_turn_shape(collected, delivery.prompt_id)
            ended = collected[-1].kind
            assert isinstance(ended, TurnEnded) and isinstance(ended.stop, Cancelled), f"turn ended {ended}"
            unconfirmed = [
                e
                for e in collected
                if isinstance(e.kind, Diagnostic) and e.kind.diagnostic.code == DiagnosticCode.CANCEL_UNCONFIRMED
            ]
            assert not unconfirmed, "the adapter never ended the cancelled turn; the engine had to give up on it"
            after: list[Event] = []
            if launch.follow_up is not None:
                await session.prompt(launch.follow_up)
                after = await _turn(events, session)
                stop = after[-1].kind
                assert isinstance(stop, TurnEnded) and isinstance(stop.stop, Completed), f"after a cancel: {stop}"
            _check_cancelled_tools(active, collected[cut:] + after, ended.background)


_WIRE_COMPLAINTS = frozenset(
    {
        DiagnosticCode.AGENT_ERROR,
        DiagnosticCode.UNEXPECTED_ANSWER,
        DiagnosticCode.COMMAND_FAILED,
        DiagnosticCode.FRAME_ERROR,
        DiagnosticCode.WRITE_FAILED,
        DiagnosticCode.DUPLICATE_REQUEST,
    }
)
"""Diagnostics that show a request answered twice: the agent (or the adapter's wire) refusing an
answer to a request that no longer waits, or the adapter failing on the engine's ``Decline``."""


async def check_cancel_mid_request(subject: Subject, workdir: Path) -> None:
    """A cancel while a permission request waits closes it exactly once: the engine sends
    ``Decline`` and the adapter answers the wire at most once (no complaint from the agent, no
    answer accepted afterwards), the tools active at the cancel end ``CANCELLED``, and the next
    turn completes.

    Staged by the PERMISSION scenario plus its ``follow_up`` prompt (no ``follow_up``: skipped).
    """
    launch = _launch(subject, Scenario.PERMISSION, workdir)
    if launch.follow_up is None:
        raise Skip(f"{subject.name} stages no follow_up turn after the permission scenario")
    async with launch.runtime as runtime:
        session, events = await _open(runtime, launch, needs=Capability.PERMISSIONS)
        async with session:
            delivery = await session.prompt(launch.prompt)
            collected: list[Event] = []
            request: PermissionRequest | None = None
            active: dict[str, ToolUpdate] = {}
            cut = 0
            with anyio.fail_after(TURN_TIMEOUT):
                async for event in events:
                    collected.append(event)
                    kind = event.kind
                    if isinstance(kind, RequestOpened) and isinstance(kind.request, PermissionRequest) and not request:
                        request = kind.request
                        active, cut = _active_tools(collected), len(collected)
                        await session.cancel()
                    elif isinstance(kind, RequestOpened) and request is None:
                        await _answer(session, kind)
                    if isinstance(kind, TurnEnded):
                        break
            assert request is not None, "the permission scenario opened no permission request"
            _check_turn_shape(collected, delivery.prompt_id)
            ended = collected[-1].kind
            assert isinstance(ended, TurnEnded) and isinstance(ended.stop, Cancelled), f"turn ended {ended}"
            closed = [e for e in collected if isinstance(e.kind, RequestClosed) and e.kind.request_id == request.id]
            assert len(closed) == 1, f"request {request.id} was closed {len(closed)} times"
            try:
                await session.answer(request.id, Answer.permission(request.options[0]))
            except InvalidRequest:
                pass
            else:
                raise AssertionError(f"request {request.id} took an answer after the cancel closed it")
            await session.prompt(launch.follow_up)
            after = await _turn(events, session)
            stop = after[-1].kind
            assert isinstance(stop, TurnEnded) and isinstance(stop.stop, Completed), f"after the cancel: {stop}"
            complaints = [
                f"{e.kind.diagnostic.code}: {e.kind.diagnostic.message}"
                for e in collected[cut:] + after
                if isinstance(e.kind, Diagnostic) and e.kind.diagnostic.code in _WIRE_COMPLAINTS
            ]
            assert not complaints, f"after the cancel closed request {request.id}: {complaints}"
            _check_cancelled_tools(active, collected[cut:] + after, ended.background)


_CONFIG_SETTLED = frozenset(
    {DiagnosticCode.CONFIGURE_REFUSED, DiagnosticCode.UNSUPPORTED, DiagnosticCode.COMMAND_FAILED}
)
"""The diagnostics that refuse a setting (the engine then lets the next prompt start)."""


def _between_turns_change(info: SessionInfo) -> tuple[ConfigOption, ConfigValue] | None:
    """A ``between_turns`` option and a value other than its current one, or None."""
    for option in info.details.config_options:
        if not (option.live and option.between_turns):
            continue
        current = info.configuration.get(option.id, option.current)
        if isinstance(option.kind, SelectKind):
            other = [choice.value for choice in option.kind.choices if choice.value != current]
            if other:
                return option, other[0]
        elif isinstance(option.kind, BooleanKind):
            return option, current is not True
    return None


async def check_between_turns(subject: Subject, workdir: Path) -> None:
    """A ``ConfigOption.between_turns`` setting changed mid-turn waits for the turn: until its
    ``TurnEnded`` the session's configuration keeps the old value; then the adapter confirms it
    (``SessionUpdated``) or refuses it (``configure_refused``) before the next prompt starts.

    Staged by the TEXT scenario (and its ``follow_up``, when given, as the next prompt); skipped when
    the adapter reports no ``between_turns`` option.
    """
    launch = _launch(subject, Scenario.TEXT, workdir)
    async with launch.runtime as runtime:
        session, events = await _open(runtime, launch)
        change = _between_turns_change(session.info())
        if change is None:
            await session.close()
            raise Skip("the adapter reports no between_turns option with a second value")
        option, value = change
        old = session.info().configuration.get(option.id)
        async with session:
            delivery = await session.prompt(launch.prompt)
            await session.configure(option.id, value)  # mid-turn: the engine holds it
            assert session.info().configuration.get(option.id) == old, f"{option.id} changed mid-turn"
            turn = await _turn(events, session)
            _check_turn_shape(turn, delivery.prompt_id)
            early = [
                e.kind.info.configuration.get(option.id)
                for e in turn
                if isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get(option.id) != old
            ]
            assert not early, f"{option.id} changed from {old!r} to {early[0]!r} before the turn's TurnEnded"
            if launch.follow_up is not None:
                await session.prompt(launch.follow_up)  # waits for the setting to settle
            settled = await _settled(events, option.id, value)
            if launch.follow_up is not None:
                after = await _turn(events, session)
                stop = after[-1].kind
                assert isinstance(stop, TurnEnded) and isinstance(stop.stop, Completed), f"after the setting: {stop}"
            assert settled is not None


async def _settled(events: AsyncIterator[Event], option_id: str, value: ConfigValue) -> Event:
    """The event that settles a held setting: a ``SessionUpdated`` showing ``value`` or a refusal."""
    with anyio.fail_after(TURN_TIMEOUT):
        async for event in events:
            kind = event.kind
            if isinstance(kind, SessionUpdated) and kind.info.configuration.get(option_id) == value:
                return event
            if isinstance(kind, Diagnostic) and kind.diagnostic.code in _CONFIG_SETTLED:
                return event
            assert not (
                isinstance(kind, Diagnostic) and kind.diagnostic.code == DiagnosticCode.CONFIGURE_UNCONFIRMED
            ), f"the adapter neither confirmed (InfoChanged) nor refused (configure_refused) {option_id}={value!r}"
            assert not isinstance(kind, TurnStarted), (
                f"a turn started before {option_id}={value!r} was confirmed or refused"
            )
    raise AssertionError(f"the event stream ended before {option_id}={value!r} was confirmed or refused")


async def check_close_reaps(subject: Subject, workdir: Path) -> None:
    """After ``close`` no process the session started is left."""
    if not sys.platform.startswith("linux"):
        raise Skip("process accounting uses /proc")
    launch = _launch(subject, Scenario.CLOSE, workdir)
    before = _children()
    async with launch.runtime as runtime:
        session, events = await _open(runtime, launch)
        await session.prompt(launch.prompt)
        await _turn(events, session)
        await session.close()
    with anyio.fail_after(15):
        while _children() - before:
            await anyio.sleep(0.05)


async def check_dropped_handles_reap(subject: Subject, workdir: Path) -> None:
    """Dropping every handle of an idle session (its ``Session`` and its ``Events``, never closed)
    ends it: no process it started is left. Idle means no deadline is pending in the engine, so only
    the drop itself can end it."""
    if not sys.platform.startswith("linux"):
        raise Skip("process accounting uses /proc")
    import gc

    from anyagent.process import run_command

    await run_command([sys.executable, "-c", "pass"])  # the host's own guard (first spawn) is not the session's
    launch = _launch(subject, Scenario.CLOSE, workdir)
    before = _children()
    async with launch.runtime as runtime:
        session, events = await _open(runtime, launch)
        await anyio.sleep(0.5)  # settled after open (an HTTP agent's event stream is open by then)
        del session, events
        gc.collect()
        with anyio.fail_after(15):
            while _children() - before:
                await anyio.sleep(0.05)


async def check_dropped_handles_reap_after_a_turn(subject: Subject, workdir: Path) -> None:
    """Dropping every handle of a session that ran one turn and settled (never closed) ends it: no
    process it started is left. Settled means the turn's deadlines are spent (its stall deadline,
    shortened to 1 s here, has passed), so nothing is pending in the engine and only the drop itself
    can end it."""
    if not sys.platform.startswith("linux"):
        raise Skip("process accounting uses /proc")
    import gc

    from anyagent.process import run_command

    await run_command([sys.executable, "-c", "pass"])  # the host's own guard (first spawn) is not the session's
    launch = _launch(subject, Scenario.CLOSE, workdir)
    launch = attrs.evolve(launch, options=launch.options.stall_after(1.0))
    before = _children()
    async with launch.runtime as runtime:
        session, events = await _open(runtime, launch)
        await session.prompt(launch.prompt)
        await _turn(events, session)
        with anyio.fail_after(TURN_TIMEOUT):
            while session.status() is not SessionStatus.IDLE:
                await anyio.sleep(0.05)
        await anyio.sleep(1.5)  # past the turn's last deadline: nothing more arrives to notice the drop
        del session, events
        gc.collect()
        with anyio.fail_after(15):
            while _children() - before:
                await anyio.sleep(0.05)


async def check_unsupported_calls(subject: Subject, workdir: Path) -> None:
    """Calls that need a capability the adapter does not report fail typed, never misbehave."""
    launch = _launch(subject, Scenario.CAPABILITIES, workdir)
    async with launch.runtime as runtime:
        session, _events = await _open(runtime, launch)
        caps = session.info().details.capabilities
        async with session:
            if not caps.supports(Capability.ROLLBACK):
                try:
                    await session.rollback(1)
                except UnsupportedFeature:
                    pass
                else:
                    raise AssertionError("rollback without Capability.ROLLBACK did not raise UnsupportedFeature")
            if not caps.supports(Capability.COMPACT):
                try:
                    await session.compact()
                except UnsupportedFeature:
                    pass
                else:
                    raise AssertionError("compact without Capability.COMPACT did not raise UnsupportedFeature")
        if not caps.supports(Capability.FORK):
            try:
                await runtime.open(launch.agent, launch.options.fork_from("conformance-no-such-session"))
            except (UnsupportedFeature, ResumeFailed):
                pass
            else:
                raise AssertionError("fork_from without Capability.FORK opened a session")


def _translator(subject: Subject) -> tuple[Callable[[dict[str, Any]], object], list[Mapping[str, Any]]]:
    translate = getattr(subject, "translate", None)
    if translate is None:
        raise Skip("the subject offers no translate(frame) hook")
    return translate, list(getattr(subject, "sample_frames", ()))


async def check_fuzzed_frames(subject: Subject, workdir: Path) -> None:
    """Random and near-miss frames through the adapter's translator never raise.

    The subject opts in with a ``translate(frame: dict) -> object`` attribute (and optionally
    ``sample_frames``: real frames to mutate).
    """
    translate, samples = _translator(subject)
    await anyio.to_thread.run_sync(_fuzz, translate, samples, _never_raises)


async def check_diagnostic_codes(subject: Subject, workdir: Path) -> None:
    """Every diagnostic the translator makes from the sample frames and from fuzzed ones carries
    a code from ``DiagnosticCode`` (a frame whose translation raises is ``fuzzed_frames``' concern).

    Diagnostics are found anywhere in what ``translate`` returns: a ``seam.Content``, a list of
    them, or an attrs object holding them. Sessions are held to the same table in every check.
    """
    translate, samples = _translator(subject)
    await anyio.to_thread.run_sync(_fuzz, translate, samples, _codes_from_the_table)


def _never_raises(translate: Callable[[dict[str, Any]], object], frame: dict[str, Any]) -> None:
    try:
        translate(frame)
    except Exception as exc:
        raise AssertionError(f"translate raised {type(exc).__name__}: {exc} for the frame {frame!r}") from exc


def _codes_from_the_table(translate: Callable[[dict[str, Any]], object], frame: dict[str, Any]) -> None:
    try:
        translated = translate(frame)
    except Exception:
        return
    for info in _diagnostics_in(translated):
        _require_table_code(info, f"for the frame {frame!r} the translator made")


def _diagnostics_in(value: object, depth: int = 0) -> Iterator[DiagnosticInfo]:
    """The ``DiagnosticInfo``s inside a translator's result (JSON payloads are not searched)."""
    if depth > 8:
        return
    if isinstance(value, DiagnosticInfo):
        yield value
    elif isinstance(value, Diagnostic):
        yield value.diagnostic
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _diagnostics_in(item, depth + 1)
    else:
        cls = type(value)
        if attrs.has(cls):
            for field in attrs.fields(cls):
                yield from _diagnostics_in(getattr(value, field.name), depth + 1)


def _fuzz(
    translate: Callable[[dict[str, Any]], object],
    samples: list[Mapping[str, Any]],
    verify: Callable[[Callable[[dict[str, Any]], object], dict[str, Any]], None],
) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    for sample in samples:  # every real frame as it is, then the fuzzer's
        verify(translate, dict(sample))
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
    values = st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=12,
    )
    vocabulary = st.sampled_from(
        [
            "type",
            "subtype",
            "method",
            "id",
            "params",
            "result",
            "error",
            "message",
            "content",
            "request_id",
            "session_id",
            "uuid",
            "event",
            "delta",
            "update",
            "sessionUpdate",
            "toolCallId",
            "status",
            "text",
        ]
    )
    random_frames = st.dictionaries(st.one_of(vocabulary, st.text(max_size=8)), values, max_size=6)
    if samples:
        mutated = st.tuples(st.sampled_from(samples), st.sampled_from(sorted({k for s in samples for k in s})), values)
        near_miss = mutated.map(lambda t: {**t[0], t[1]: t[2]})
        frames = st.one_of(random_frames, near_miss, st.sampled_from(samples).map(dict))
    else:
        frames = random_frames

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(frames)
    def holds(frame: dict[str, Any]) -> None:
        verify(translate, frame)

    holds()


CHECKS: tuple[Callable[[Subject, Path], Awaitable[None]], ...] = (
    check_handshake,
    check_text_turn,
    check_tool_snapshots,
    check_permission_round_trip,
    check_cancel,
    check_cancel_mid_request,
    check_between_turns,
    check_close_reaps,
    check_dropped_handles_reap,
    check_dropped_handles_reap_after_a_turn,
    check_unsupported_calls,
    check_fuzzed_frames,
    check_diagnostic_codes,
)
"""Every check, in the order ``run_adapter_conformance`` runs them."""


def _check_name(check: Callable[..., Any]) -> str:
    return check.__name__.removeprefix("check_")


async def run_adapter_conformance(
    subject: Subject, workdir: Path, *, only: Sequence[str] | None = None
) -> ConformanceReport:
    """Run every check (or the ``only`` named ones) against ``subject``; each gets a fresh
    subdirectory of ``workdir``. Failures are collected, not raised: see ``raise_for_failures``."""
    results: list[CheckResult] = []
    for check in CHECKS:
        name = _check_name(check)
        if only is not None and name not in only:
            continue
        directory = Path(workdir) / name
        directory.mkdir(parents=True, exist_ok=True)
        try:
            await _guarded(check, subject, directory)
        except Skip as skip:
            results.append(CheckResult(name, "skipped", str(skip)))
        except (AssertionError, AgentError, TimeoutError) as exc:
            results.append(CheckResult(name, "failed", f"{type(exc).__name__}: {exc}"))
        else:
            results.append(CheckResult(name, "passed"))
    return ConformanceReport(subject.name, tuple(results))


def pytest_suite(make_subject: Callable[[], Subject]) -> Any:
    """A pytest test function running every check as its own test case (skips become skips).

    ``test_conformance = pytest_suite(MySubject)`` in a test module; it is an ``anyio`` test, so
    it runs on the backends the module's ``anyio_backend`` fixture names.
    """
    import pytest

    @pytest.mark.anyio
    @pytest.mark.parametrize("check", CHECKS, ids=[_check_name(c) for c in CHECKS])
    async def test_adapter_conformance(check: Callable[[Subject, Path], Awaitable[None]], tmp_path: Path) -> None:
        try:
            await _guarded(check, make_subject(), tmp_path)
        except Skip as skip:
            pytest.skip(str(skip))

    return test_adapter_conformance
