"""The adapter conformance suite: the contract every adapter owes the engine, checked end to end.

An adapter author describes how to reach their agent for each scenario (a ``Subject``) — a
recording played by ``anyagent_testkit.replay``, or a live CLI talking to the fake model — and the
suite drives real sessions through ``anyagent.Runtime`` and checks what comes out:

- ``handshake``: ``open`` yields details and capabilities; close ends the stream cleanly;
- ``text_turn``: a prompt is acknowledged, its text streams grouped by message id, the turn ends
  exactly once;
- ``tool_snapshots``: tool calls arrive as whole snapshots replaced by id and finish;
- ``permission_round_trip``: a permission request offers real choices, an answer closes it;
- ``cancel``: cancel ends the turn as ``Cancelled`` and closes its open requests;
- ``close_reaps``: after ``close`` no process the session started is left (Linux);
- ``unsupported_calls``: a capability the adapter does not report raises ``UnsupportedFeature``;
- ``fuzzed_frames``: unknown and malformed frames never crash the adapter's translator.

Runner-agnostic::

    report = await run_adapter_conformance(MySubject(), workdir)
    report.raise_for_failures()

and for pytest (``@pytest.mark.anyio`` runs it on every backend you parametrize)::

    from anyagent_testkit.conformance import pytest_suite
    test_conformance = pytest_suite(MySubject)

A scenario the subject cannot stage (``launch`` returns None) is skipped with a reason; optional
checks skip when the capability is absent.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
import attrs

from anyagent import (
    AgentDetails,
    AgentError,
    AgentInstallation,
    Answer,
    Cancelled,
    Capability,
    Completed,
    Diagnostic,
    Event,
    Events,
    MessageEnded,
    PermissionChoice,
    PermissionRequest,
    PromptOrigin,
    QuestionAnswer,
    QuestionRequest,
    ReasoningDelta,
    RequestClosed,
    RequestOpened,
    ResumeFailed,
    Runtime,
    Session,
    SessionOptions,
    SessionStatus,
    Started,
    StatusChanged,
    TextDelta,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
    UnsupportedFeature,
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
    long stream for CANCEL). ``follow_up`` (CANCEL) is a prompt for a turn after the cancel.
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


async def _turn(events: Events, session: Session, *, answer: bool = True) -> list[Event]:
    """Every event up to the end of the running (top-level) turn, answering requests if asked."""
    collected: list[Event] = []
    with anyio.fail_after(TURN_TIMEOUT):
        async for event in events:
            collected.append(event)
            kind = event.kind
            if answer and isinstance(kind, RequestOpened):
                await _answer(session, kind)
            if isinstance(kind, TurnEnded):
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
        session, events = await runtime.open(launch.agent, launch.options)
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
        session, events = await runtime.open(launch.agent, launch.options)
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
        session, events = await runtime.open(launch.agent, launch.options)
        async with session:
            delivery = await session.prompt(launch.prompt)
            turn = await _turn(events, session)
            _check_turn_shape(turn, delivery.prompt_id)
            updates = [e.kind.tool for e in turn if isinstance(e.kind, ToolUpdated)]
            assert updates, "the tool scenario produced no ToolUpdated"
            last: dict[str, Any] = {}
            for tool in updates:
                assert tool.id, "a tool snapshot without an id"
                assert tool.title, f"tool {tool.id} has no title to show"
                last[tool.id] = tool
            ended = turn[-1].kind
            assert isinstance(ended, TurnEnded)
            for tool_id, tool in last.items():
                assert not tool.status.active or tool_id in ended.background, (
                    f"tool {tool_id} is still {tool.status.value} after its turn and not listed as background"
                )


async def check_permission_round_trip(subject: Subject, workdir: Path) -> None:
    """A permission request offers real choices; answering closes it and the turn goes on to its end."""
    launch = _launch(subject, Scenario.PERMISSION, workdir)
    async with launch.runtime as runtime:
        session, events = await runtime.open(launch.agent, launch.options)
        if not session.info().details.capabilities.supports(Capability.PERMISSIONS):
            await session.close()
            raise Skip("the adapter reports no Capability.PERMISSIONS")
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
    """Cancel ends the running turn as ``Cancelled``, closing its requests; the session survives."""
    launch = _launch(subject, Scenario.CANCEL, workdir)
    async with launch.runtime as runtime:
        session, events = await runtime.open(launch.agent, launch.options)
        async with session:
            delivery = await session.prompt(launch.prompt)
            collected: list[Event] = []
            cancelled = False
            with anyio.fail_after(TURN_TIMEOUT):
                async for event in events:
                    collected.append(event)
                    kind = event.kind
                    working = isinstance(kind, (TextDelta, ReasoningDelta, ToolUpdated, RequestOpened))
                    if working and not cancelled:
                        cancelled = True
                        with anyio.fail_after(5):
                            await session.cancel()
                    if isinstance(kind, TurnEnded):
                        break
            assert cancelled, "the turn ended before it produced anything to cancel"
            _check_turn_shape(collected, delivery.prompt_id)
            ended = collected[-1].kind
            assert isinstance(ended, TurnEnded) and isinstance(ended.stop, Cancelled), f"turn ended {ended}"
            unconfirmed = [
                e
                for e in collected
                if isinstance(e.kind, Diagnostic) and e.kind.diagnostic.code == "cancel_unconfirmed"
            ]
            assert not unconfirmed, "the adapter never ended the cancelled turn; the engine had to give up on it"
            if launch.follow_up is not None:
                await session.prompt(launch.follow_up)
                after = await _turn(events, session)
                stop = after[-1].kind
                assert isinstance(stop, TurnEnded) and isinstance(stop.stop, Completed), f"after a cancel: {stop}"


async def check_close_reaps(subject: Subject, workdir: Path) -> None:
    """After ``close`` no process the session started is left."""
    if not sys.platform.startswith("linux"):
        raise Skip("process accounting uses /proc")
    launch = _launch(subject, Scenario.CLOSE, workdir)
    before = _children()
    async with launch.runtime as runtime:
        session, events = await runtime.open(launch.agent, launch.options)
        await session.prompt(launch.prompt)
        await _turn(events, session)
        await session.close()
    with anyio.fail_after(15):
        while _children() - before:
            await anyio.sleep(0.05)


async def check_unsupported_calls(subject: Subject, workdir: Path) -> None:
    """Calls that need a capability the adapter does not report fail typed, never misbehave."""
    launch = _launch(subject, Scenario.CAPABILITIES, workdir)
    async with launch.runtime as runtime:
        session, _events = await runtime.open(launch.agent, launch.options)
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


async def check_fuzzed_frames(subject: Subject, workdir: Path) -> None:
    """Random and near-miss frames through the adapter's translator never raise.

    The subject opts in with a ``translate(frame: dict) -> object`` attribute (and optionally
    ``sample_frames``: real frames to mutate).
    """
    translate = getattr(subject, "translate", None)
    if translate is None:
        raise Skip("the subject offers no translate(frame) hook")
    samples: Sequence[Mapping[str, Any]] = getattr(subject, "sample_frames", ())
    await anyio.to_thread.run_sync(_fuzz, translate, list(samples))


def _fuzz(translate: Callable[[dict[str, Any]], object], samples: list[Mapping[str, Any]]) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

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
    def never_raises(frame: dict[str, Any]) -> None:
        try:
            translate(frame)
        except Exception as exc:
            raise AssertionError(f"translate raised {type(exc).__name__}: {exc} for the frame {frame!r}") from exc

    never_raises()


CHECKS: tuple[Callable[[Subject, Path], Awaitable[None]], ...] = (
    check_handshake,
    check_text_turn,
    check_tool_snapshots,
    check_permission_round_trip,
    check_cancel,
    check_close_reaps,
    check_unsupported_calls,
    check_fuzzed_frames,
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
            await check(subject, directory)
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
            await check(make_subject(), tmp_path)
        except Skip as skip:
            pytest.skip(str(skip))

    return test_adapter_conformance
