"""Runtime and Session: validation of every public call, typed errors, lifecycle, one-off calls."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import anyio
import pytest
from coresupport import kinds, mock_session

import anyagent._engine as engine_module
from anyagent import (
    AgentError,
    AgentInstallation,
    Answer,
    AuthRequired,
    Capability,
    ConfigChoice,
    ConfigOption,
    Diagnostic,
    EnvVarLogin,
    Event,
    Events,
    HandshakeTimeout,
    Input,
    InvalidConfiguration,
    InvalidRequest,
    McpServer,
    PermissionChoice,
    PlanUsage,
    PlanUsageWindow,
    QuestionAnswer,
    Queued,
    RequestOpened,
    ResumeFailed,
    RollbackScope,
    Runtime,
    SelectKind,
    Session,
    SessionBusy,
    SessionClosed,
    SessionOptions,
    SessionStatus,
    SessionUpdated,
    TextDelta,
    ToolStatus,
    TurnEnded,
    UnsupportedFeature,
    seam,
)
from anyagent.mock import MockAdapter, Script, Step, completed, permission, question, select_option, text, tool

pytestmark = pytest.mark.anyio

MODEL = select_option("model", ["sonnet", "opus"])
FROZEN = select_option("region", ["eu", "us"], live=False)


async def test_open_needs_a_running_runtime() -> None:
    runtime = Runtime.with_mock(Script())
    agent = (await runtime.discover()).require("mock")
    with pytest.raises(InvalidRequest, match="async with Runtime"):
        await runtime.open(agent, SessionOptions.in_dir("."))


async def test_open_validates_its_arguments() -> None:
    async with Runtime.with_mock(Script()) as runtime:
        with pytest.raises(InvalidRequest):
            await runtime.open("mock", SessionOptions.in_dir("."))  # type: ignore[arg-type]
        agent = (await runtime.discover()).require("mock")
        with pytest.raises(InvalidRequest):
            await runtime.open(agent, ".")  # type: ignore[arg-type]
        unknown = AgentInstallation.at("nobody", "/bin/true")
        with pytest.raises(InvalidConfiguration, match="no catalog profile"):
            await runtime.open(unknown, SessionOptions.in_dir("."))
        custom = AgentInstallation.acp("mine", "/bin/true", ["acp"])
        with pytest.raises(InvalidConfiguration, match="'acp' wire"):
            await runtime.open(custom, SessionOptions.in_dir("."))


async def test_open_refuses_options_the_agent_cannot_honour() -> None:
    script = Script(options=(MODEL,))
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        base = SessionOptions.in_dir(".")
        with pytest.raises(InvalidConfiguration, match="no config option 'effort'"):
            await runtime.open(agent, base.configure("effort", "high"))
        with pytest.raises(
            InvalidConfiguration, match="not a valid value for 'model'; it takes one of 'sonnet', 'opus'"
        ):
            await runtime.open(agent, base.configure("model", "gpt"))
        with pytest.raises(ResumeFailed):
            await runtime.open(agent, base.resume("tok"))
        with pytest.raises(UnsupportedFeature, match="fork"):
            await runtime.open(agent, base.fork_from("tok"))
        with pytest.raises(UnsupportedFeature, match="stdio MCP"):
            await runtime.open(agent, base.mcp_server(McpServer.stdio("local", "/bin/cat")))
        with pytest.raises(InvalidConfiguration, match="config-home"):
            await runtime.open(agent, base.config_home("/tmp/other-login"))
        session, _ = await runtime.open(agent, base.configure("model", "opus"))
        async with session:
            assert session.info().configuration["model"] == "opus"


async def test_resume_keeps_the_token_when_the_agent_can_resume() -> None:
    async with Runtime.with_mock(Script(capabilities=(Capability.RESUME,))) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, _ = await runtime.open(agent, SessionOptions.in_dir(".").resume("mock-s9"))
        async with session:
            assert session.info().resume_token == "mock-s9"


async def test_handshake_timeout_is_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    class Slow(seam.Adapter):
        wire = "mock"

        async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
            await anyio.sleep(10)
            raise AssertionError("unreachable")

    monkeypatch.setattr(seam, "HANDSHAKE_TIMEOUT", 0.05)
    runtime = Runtime.with_mock(Script())
    runtime.registry().adapters["mock"] = Slow
    async with runtime:
        agent = (await runtime.discover()).require("mock")
        with pytest.raises(HandshakeTimeout):
            await runtime.open(agent, SessionOptions.in_dir("."))


async def test_prompt_rejects_what_is_not_a_prompt() -> None:
    async with mock_session(Script()) as (session, _reader):
        with pytest.raises(InvalidRequest):
            await session.prompt(42)  # type: ignore[arg-type]
        with pytest.raises(InvalidRequest):
            Input.text(b"bytes")  # type: ignore[arg-type]


async def test_configure_is_validated_then_confirmed_by_session_updated() -> None:
    script = Script(options=(MODEL, FROZEN))
    async with mock_session(script) as (session, reader):
        with pytest.raises(InvalidConfiguration, match="no config option"):
            await session.configure("effort", "high")
        with pytest.raises(InvalidConfiguration, match="creation-only"):
            await session.configure("region", "us")
        with pytest.raises(InvalidConfiguration, match="'gpt-9' is not a valid value for 'model'; it takes one of "):
            await session.configure("model", "gpt-9")
        with pytest.raises(InvalidConfiguration, match="not a valid value"):
            await session.configure("model", True)
        await session.configure("model", "opus")
        updated = await reader.kind(SessionUpdated)
        assert updated.info.configuration["model"] == "opus"
        option = updated.info.details.option("model")
        assert isinstance(option, ConfigOption) and option.current == "opus"
        assert session.info().configuration["model"] == "opus"


async def test_configure_hands_the_adapter_the_agents_own_id_for_a_portable_name() -> None:
    choices = (
        ConfigChoice("default", "Default", aliases=("ask",)),
        ConfigChoice("acceptEdits", "Accept edits", aliases=("accept-edits",)),
    )
    mode = ConfigOption("mode", "Mode", SelectKind(choices), "default", category="mode")
    async with mock_session(Script(options=(mode,))) as (session, reader):
        await session.configure("mode", "accept-edits")
        updated = await reader.kind(SessionUpdated)
        assert updated.info.configuration["mode"] == "acceptEdits"  # the mock agent took what it was sent


async def test_rollback_and_compact_are_gated_and_need_an_idle_session() -> None:
    async with mock_session(Script()) as (session, _reader):
        with pytest.raises(UnsupportedFeature):
            await session.rollback(1)
        with pytest.raises(UnsupportedFeature):
            await session.compact()

    script = Script(capabilities=(Capability.ROLLBACK,), compact=True).turn(
        [Step.emit(permission("r1")), Step.await_answer(), Step.end(completed())]
    )
    async with mock_session(script) as (session, reader):
        with pytest.raises(InvalidRequest):
            await session.rollback(0)
        with pytest.raises(UnsupportedFeature, match="files"):
            await session.rollback(1, RollbackScope.CONVERSATION_AND_FILES)
        await session.prompt("hi")
        opened = await reader.kind(RequestOpened)
        with pytest.raises(SessionBusy):
            await session.rollback(1)
        with pytest.raises(SessionBusy):
            await session.compact()
        await session.answer(opened.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        await reader.kind(TurnEnded)
        await session.rollback(2)
        updated = await reader.kind(SessionUpdated)
        assert updated.info.title == "rolled back 2"


async def test_question_answers_are_validated_against_what_was_offered() -> None:
    script = Script().turn(
        [
            Step.emit(question("q", choices=("a", "b"), allows_free_text=False)),
            Step.await_answer(),
            Step.end(completed()),
        ]
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("ask me")
        opened = await reader.kind(RequestOpened)
        rid = opened.request.id
        bad = [
            Answer.permission(PermissionChoice.ALLOW_ONCE),
            Answer.question([]),
            Answer.question([QuestionAnswer.text("free")]),
            Answer.question([QuestionAnswer.choices(["c"])]),
            Answer.question([QuestionAnswer.choices(["a", "b"])]),
            Answer.question([QuestionAnswer.choices([])]),
        ]
        for answer in bad:
            with pytest.raises(InvalidRequest):
                await session.answer(rid, answer)
        assert session.status() is SessionStatus.NEEDS_INPUT
        await session.answer(rid, Answer.question([QuestionAnswer.choices(["b"])]))
        assert (await reader.kind(TurnEnded)).stop == completed()


async def test_permission_answers_must_be_offered() -> None:
    script = Script().turn(
        [Step.emit(permission("r1", [PermissionChoice.ALLOW_ONCE])), Step.await_answer(), Step.end(completed())]
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("go")
        await reader.kind(RequestOpened)
        with pytest.raises(InvalidRequest, match="DENY_ONCE was not offered"):
            await session.answer("r1", Answer.permission(PermissionChoice.DENY_ONCE))
        await session.answer("r1", Answer.permission(PermissionChoice.ALLOW_ONCE))


async def test_every_call_after_close_raises_session_closed() -> None:
    async with mock_session(Script(compact=True)) as (session, _reader):
        await session.close()
        await session.close()  # idempotent
        calls = [
            session.prompt("x"),
            session.dequeue("p1"),
            session.answer("r1", Answer.permission(PermissionChoice.ALLOW_ONCE)),
            session.configure("model", "x"),
            session.rollback(1),
            session.compact(),
            session.cancel(),
        ]
        for call in calls:
            with pytest.raises(SessionClosed):
                await call
        assert session.status() is SessionStatus.IDLE


async def test_an_unanswered_steer_is_requeued_when_its_turn_ends() -> None:
    script = (
        Script(steer=True, steer_ack=False)
        .turn([Step.emit(text("m1", "a")), Step.sleep(0.1), Step.end(completed())])
        .turn([Step.end(completed())])
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("one")
        await reader.kind(text("m1", "a").__class__)
        delivery = await session.prompt("steer")
        assert delivery.kind == Queued(0)
        await reader.kind(TurnEnded)
        await reader.kind(TurnEnded)


async def test_auth_lost_fails_the_turn_and_raises_auth_required() -> None:
    login = (EnvVarLogin("MOCK_API_KEY"),)
    script = Script().turn([Step.emit(text("m1", "hi")), Step.send(seam.AuthLost(login))])
    async with mock_session(script) as (session, reader):
        await session.prompt("go")
        ended = await reader.kind(TurnEnded)
        assert ended.stop.__class__.__name__ == "Failed"
        with pytest.raises(AuthRequired) as info:
            await reader.rest()
        assert info.value.login == login


async def test_close_of_a_wedged_agent_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "CLOSE_GRACE", 0.1)
    async with mock_session(Script(ignore_close=True)) as (session, _reader):
        with anyio.fail_after(2):
            await session.close()


async def test_cancel_unconfirmed_by_the_agent_still_ends_the_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "CANCEL_GRACE", 0.1)
    script = Script(ignore_cancel=True).turn([Step.emit(text("m1", "a")), Step.sleep(30), Step.end(completed())])
    async with mock_session(script) as (session, reader):
        await session.prompt("go")
        await reader.kind(type(text("m", "")))
        await session.cancel()
        events = await reader.turn()
        codes = [e.kind.diagnostic.code for e in events if isinstance(e.kind, Diagnostic)]
        assert codes == ["cancel_unconfirmed"]
        assert events[-1].kind == TurnEnded(anyagent_cancelled())


def anyagent_cancelled() -> object:
    from anyagent import Cancelled

    return Cancelled()


async def test_a_users_exception_leaves_the_runtime_unwrapped() -> None:
    with pytest.raises(KeyError):
        async with Runtime.with_mock(Script()) as runtime:
            agent = (await runtime.discover()).require("mock")
            await runtime.open(agent, SessionOptions.in_dir("."))
            raise KeyError("mine")


async def test_events_aclose_closes_the_session() -> None:
    async with Runtime.with_mock(Script()) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        async with events:
            pass
        with pytest.raises(SessionClosed):
            await session.prompt("hello?")


async def test_generate_collects_text_and_declines_permissions() -> None:
    script = Script().turn(
        [
            Step.emit(text("m1", "Fix ")),
            Step.emit(permission("r1", [PermissionChoice.ALLOW_ONCE, PermissionChoice.DENY_ONCE])),
            Step.await_answer(),
            Step.emit(text("m1", "the parser")),
            Step.end(completed()),
        ]
    )
    runtime = Runtime.with_mock(script)
    agent = (await runtime.discover()).require("mock")
    title = await runtime.generate(agent, SessionOptions.in_dir("."), "a title")
    assert title == "Fix the parser"
    sent = [type(c).__name__ for c in runtime.registry().adapters["mock"]().sent]
    assert sent == []  # every factory call makes a fresh adapter; nothing leaks between them


async def test_generate_refuses_resume_and_stops_on_a_running_tool() -> None:
    runtime = Runtime.with_mock(Script().turn([Step.emit(tool("t1", ToolStatus.RUNNING)), Step.end(completed())]))
    agent = (await runtime.discover()).require("mock")
    with pytest.raises(InvalidConfiguration):
        await runtime.generate(agent, SessionOptions.in_dir(".").resume("x"), "hi")
    with pytest.raises(UnsupportedFeature, match="started a tool"):
        await runtime.generate(agent, SessionOptions.in_dir("."), "hi")


async def test_probe_and_probe_auth_and_plan_usage() -> None:
    runtime = Runtime.with_mock(Script(options=(MODEL,)))
    agent = (await runtime.discover()).require("mock")
    details = await runtime.probe(agent)
    assert details.version == "mock"
    assert details.capabilities.supports(Capability.PERMISSIONS)
    assert [o.id for o in details.config_options] == ["model"]
    auth = await runtime.probe_auth(agent)
    assert auth == details.auth
    with pytest.raises(UnsupportedFeature):
        await runtime.plan_usage(agent)
    entries = await runtime.plan_usage_all()
    assert len(entries) == 1 and entries[0].usage is None and "UnsupportedFeature" in (entries[0].error or "")


async def test_discover_reports_the_mock_and_require_raises_typed() -> None:
    runtime = Runtime.with_mock(Script())
    report = await runtime.discover()
    assert [a.id for a in report.agents] == ["mock"]
    with pytest.raises(anyagent_not_installed()):
        report.require("claude")


def anyagent_not_installed() -> type[Exception]:
    from anyagent import NotInstalled

    return NotInstalled


async def test_diagnostics_from_late_steer_answers_do_not_break_the_session() -> None:
    script = Script().turn([Step.send(seam.SteerResult(True)), Step.end(completed())])
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
        assert "Diagnostic" in kinds(events)
        assert any(isinstance(e.kind, Diagnostic) and e.kind.diagnostic.code == "late_steer_result" for e in events)


def test_session_options_are_immutable_and_validated(tmp_path: Path) -> None:
    base = SessionOptions.in_dir(tmp_path)
    derived = base.configure("model", "x").quiet_window(1).stall_after(2)
    assert base.configuration == {} and derived.configuration == {"model": "x"}
    assert derived.quiet_window_seconds == 1.0 and derived.stall_after_seconds == 2.0
    for bad in (0, -1, float("nan"), True, "3"):
        with pytest.raises(InvalidConfiguration):
            base.quiet_window(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidConfiguration):
        base.configure("model", 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidConfiguration):
        base.mcp_server(McpServer.stdio("a", "x")).mcp_server(McpServer.sse("a", "y"))
    assert base.fork_from("t", at="m1").resume("r").fork_token is None
    http = McpServer.http("h", "https://x").with_header("Authorization", "Bearer t")
    assert dict(http.headers) == {"Authorization": "Bearer t"}


class _OneCpuAdapter(MockAdapter):
    """A mock whose handshake needs the one shared "CPU" for 0.2 s: concurrent launches queue on it,
    as a burst of real agents starting at once queues on the machine's cores."""

    cpu: anyio.Lock

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        async with self.cpu:
            await anyio.sleep(0.2)
        return await super().connect(request)


async def test_a_burst_of_opens_is_paced_and_the_handshake_clock_starts_at_the_launch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Six opens at once, 0.2 s of "CPU" each, a 0.5 s handshake timeout: before, the queue on the
    CPU counted against the handshake and the later opens raised HandshakeTimeout. Now each waits
    for a launch slot first (not counted) and says so with a ``launch_queued`` diagnostic."""
    from coresupport import _OneAdapter

    monkeypatch.setattr(seam, "HANDSHAKE_TIMEOUT", 0.5)
    adapter = _OneCpuAdapter(Script())
    adapter.cpu = anyio.Lock()
    assert Runtime().launch_limit >= 2  # sized to the machine by default
    runtime = Runtime(plugins=[], launch_limit=1, _builtins=[_OneAdapter(adapter)])
    opened: list[tuple[Session, Events]] = []
    async with runtime:
        agent = (await runtime.discover()).require("mock")

        async def open_one() -> None:
            opened.append(await runtime.open(agent, SessionOptions.in_dir(".")))

        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(open_one)
        assert len(opened) == 6
        queued = 0
        for session, events in opened:
            await session.close()
            codes = [e.kind.diagnostic.code for e in [e async for e in events] if isinstance(e.kind, Diagnostic)]
            queued += codes == ["launch_queued"]
        assert queued >= 3  # they waited 0, 0.2, 0.4, 0.6, 0.8, 1.0 s: those past 0.5 s said so


def test_launch_limit_must_be_a_positive_int() -> None:
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(InvalidRequest):
            Runtime(launch_limit=bad)  # type: ignore[arg-type]


async def test_a_mock_with_plan_usage_reports_it_and_the_capability() -> None:
    usage = PlanUsage(
        plan="Max",
        windows=(
            PlanUsageWindow("5 hours", 42.5, datetime(2030, 1, 1, 15, 0, tzinfo=timezone.utc)),
            PlanUsageWindow("week", 7.0, None),
        ),
    )
    runtime = Runtime.with_mock(Script(plan_usage=usage))
    agent = (await runtime.discover()).require("mock")
    assert (await runtime.probe(agent)).capabilities.supports(Capability.PLAN_USAGE)
    assert await runtime.plan_usage(agent) == usage
    entries = await runtime.plan_usage_all()
    assert [(e.usage, e.error) for e in entries] == [(usage, None)]
    loaded = Script.from_dict(
        {"plan_usage": {"plan": "Pro", "windows": [{"label": "5h", "used_percent": 10.0, "resets_at": None}]}}
    )
    assert loaded.plan_usage == PlanUsage(plan="Pro", windows=(PlanUsageWindow("5h", 10.0),))
    assert not Script().capability_set().supports(Capability.PLAN_USAGE)


def _flood_then_quiet(deltas: int, buffer: int) -> Script:
    """A turn of ``deltas`` text deltas taken without a wait, a quiet stretch (the reader waits), one more
    delta ("x") and the end."""
    return Script(buffer=buffer).turn(
        [
            Step.repeat(deltas, Step.emit(text("m1", "w "))),
            Step.sleep(0.05),
            Step.emit(text("m1", "x")),
            Step.end(completed()),
        ]
    )


async def test_events_tap_sees_every_event_the_reader_gets_in_order() -> None:
    # a flood (taken without a wait), a quiet stretch (an awaited receive) and the end: the sink gets
    # exactly what the reader gets, from the moment it is set until it is removed
    async with Runtime.with_mock(_flood_then_quiet(300, buffer=64)) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        async with session:
            tapped: list[Event] = []
            read: list[Event] = []
            await session.prompt("go")
            first = await events.__anext__()  # before the tap: not handed to the sink
            events.tap(tapped.append)
            with anyio.fail_after(10):
                async for event in events:
                    read.append(event)
                    if isinstance(event.kind, TurnEnded):
                        break
            events.tap(None)
            await session.prompt("again")
            with anyio.fail_after(10):
                async for event in events:
                    if isinstance(event.kind, TurnEnded):
                        break
    assert first not in tapped
    assert tapped == read and len(read) > 300
    assert [e.sequence for e in tapped] == sorted(e.sequence for e in tapped)


async def test_events_tap_checkpoint_runs_at_least_every_64_events_and_before_each_wait() -> None:
    # the checkpoint is where a recorder lets its thread in: a flood must reach it every 64 events at
    # most, a reader that caught up must reach it before it waits, and removing the sink removes it
    async with Runtime.with_mock(_flood_then_quiet(1000, buffer=1024)) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        async with session:
            marks: list[object] = []  # the sink's events and the checkpoint's marks, in the order they came
            checkpoint = object()
            events.tap(marks.append, checkpoint=lambda: marks.append(checkpoint))
            await session.prompt("go")
            with anyio.fail_after(10):
                async for event in events:
                    if isinstance(event.kind, TextDelta) and event.kind.text == "x":
                        assert marks[-2] is checkpoint  # the reader waited for it: a checkpoint came first
                    if isinstance(event.kind, TurnEnded):
                        break
            events.tap(None, checkpoint=lambda: marks.append(checkpoint))  # no sink: no checkpoint either
            count = len(marks)
            await session.prompt("again")
            with anyio.fail_after(10):
                async for event in events:
                    if isinstance(event.kind, TurnEnded):
                        break
            assert len(marks) == count
    gaps, run = [], 0
    for mark in marks:
        if mark is checkpoint:
            gaps.append(run)
            run = 0
        else:
            run += 1
    assert sum(gaps) + run > 1000 and max(gaps) <= 64  # never more than 64 events between two checkpoints


async def test_events_failure_names_the_error_once_the_reader_got_it() -> None:
    script = Script().turn([Step.emit(text("m1", "partial")), Step.die("exit status: 9")])
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        async with session:
            await session.prompt("go")
            assert events.failure is None
            with pytest.raises(AgentError) as raised, anyio.fail_after(10):
                async for _ in events:
                    pass
            assert events.failure is raised.value
