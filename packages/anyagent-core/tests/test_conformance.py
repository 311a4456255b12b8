"""The engine conformance suite: the contract every adapter gets for free, run over the mock.

Each test is one named contract; every test runs on asyncio and trio.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone, tzinfo

import anyio
import attrs
import pytest
from coresupport import Reader, _OneAdapter, kinds, mock_session, recording_runtime, statuses

from anyagent import (
    AgentOrigin,
    Answer,
    Cancelled,
    Completed,
    CompletionSource,
    ContextCompacted,
    Diagnostic,
    DiagnosticInfo,
    DiagnosticLevel,
    InvalidRequest,
    MessageEnded,
    PermissionChoice,
    PermissionMode,
    ProcessExited,
    PromptOrigin,
    Queued,
    RequestClosed,
    RequestOpened,
    Runtime,
    SessionClosed,
    SessionOptions,
    SessionStatus,
    SessionUpdated,
    Started,
    StatusChanged,
    Steered,
    TextDelta,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
    seam,
)
from anyagent.mock import MockAdapter, Script, Step, completed, permission, text, tool

pytestmark = pytest.mark.anyio


def parked_turn(request_id: str = "r1") -> list[Step]:
    """A turn that opens a permission request and waits for the answer."""
    return [Step.emit(permission(request_id)), Step.await_answer(), Step.end(completed())]


def text_turn(message_id: str, body: str) -> list[Step]:
    return [Step.emit(text(message_id, body)), Step.end(completed())]


async def test_01_prompt_request_answer_and_completion_share_one_contract() -> None:
    script = Script().turn(
        [
            Step.emit(text("m1", "hel")),
            Step.emit(permission("r1")),
            Step.await_answer(),
            Step.emit(text("m1", "lo")),
            Step.end(completed()),
        ]
    )
    async with mock_session(script) as (session, reader):
        delivery = await session.prompt("hi")
        assert isinstance(delivery.kind, Started)
        started = await reader.event_of(TurnStarted)
        assert started.kind == TurnStarted(PromptOrigin(delivery.prompt_id))
        assert started.turn_info is not None and started.turn_info.id == delivery.kind.turn_id
        assert await reader.kind(TextDelta) == TextDelta("m1", "hel")
        opened = await reader.kind(RequestOpened)
        assert session.status() is SessionStatus.NEEDS_INPUT
        await session.answer(opened.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        assert await reader.kind(RequestClosed) == RequestClosed("r1")
        assert await reader.kind(TextDelta) == TextDelta("m1", "lo")
        ended = await reader.kind(TurnEnded)
        assert ended.stop == Completed(CompletionSource.PROTOCOL)
        await session.close()
        rest = await reader.rest()
        assert all(isinstance(e.kind, StatusChanged) for e in rest)
    sequences = [e.sequence for e in reader.seen]
    assert sequences == list(range(1, len(sequences) + 1))


async def test_02_queued_prompt_is_promoted_after_turn_end() -> None:
    script = Script().turn(parked_turn()).turn(text_turn("m2", "second"))
    async with mock_session(script) as (session, reader):
        first = await session.prompt("one")
        second = await session.prompt("two")
        assert second.kind == Queued(0)
        third_turn_prompt = await session.prompt("three")
        assert third_turn_prompt.kind == Queued(1)
        await session.dequeue(third_turn_prompt.prompt_id)
        opened = await reader.kind(RequestOpened)
        await session.answer(opened.request.id, Answer.permission(PermissionChoice.DENY_ONCE))
        events = await reader.turn()
        assert isinstance(events[-1].kind, TurnEnded)
        started = await reader.kind(TurnStarted)
        assert started.origin == PromptOrigin(second.prompt_id)
        assert await reader.kind(TextDelta) == TextDelta("m2", "second")
        await reader.kind(TurnEnded)
        assert first.prompt_id != second.prompt_id


async def test_03_steer_is_reported_when_accepted_and_requeued_at_head_when_rejected() -> None:
    accepting = Script(steer=True).turn(parked_turn())
    async with mock_session(accepting) as (session, reader):
        first = await session.prompt("one")
        await reader.kind(RequestOpened)
        steered = await session.prompt("also this")
        assert isinstance(first.kind, Started)
        assert steered.kind == Steered(first.kind.turn_id)

    rejecting = Script(steer=True, steer_rejects=True).turn(parked_turn()).turn(text_turn("m2", "next"))
    async with mock_session(rejecting) as (session, reader):
        await session.prompt("one")
        opened = await reader.kind(RequestOpened)
        queued_behind = None
        rejected = await session.prompt("steer me")
        assert rejected.kind == Queued(0)
        queued_behind = await session.prompt("later")
        assert queued_behind.kind == Queued(1)
        await session.answer(opened.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        await reader.kind(TurnEnded)
        started = await reader.kind(TurnStarted)
        assert started.origin == PromptOrigin(rejected.prompt_id)


async def test_04_quiet_agent_gets_inferred_completion() -> None:
    script = Script(ends_turns=False).turn([Step.emit(text("m1", "quiet"))])
    options = SessionOptions.in_dir(".").quiet_window(0.05)
    async with mock_session(script, options) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
        assert kinds(events)[-2:] == ["MessageEnded", "TurnEnded"]
        assert events[-1].kind == TurnEnded(Completed(CompletionSource.INFERRED))


async def test_04_deltas_taken_in_place_still_keep_the_quiet_window_open() -> None:
    """A text delta of the running turn skips the engine's channel (``DriverLink.send`` hands it to
    the engine in the adapter's task), yet it is activity like any event: a trickle of deltas closer
    together than the quiet window, lasting longer than it, stays one turn that ends a window after
    the last delta (it ended mid-trickle when only the channel's events re-armed the window)."""
    script = Script(ends_turns=False).turn(
        [Step.emit(text("m1", "a")), Step.repeat(8, [Step.sleep(0.1), Step.emit(text("m1", "b"))])]
    )
    options = SessionOptions.in_dir(".").quiet_window(0.5)
    async with mock_session(script, options) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
        assert events[-1].kind == TurnEnded(Completed(CompletionSource.INFERRED))
        assert "".join(e.kind.text for e in events if isinstance(e.kind, TextDelta)) == "a" + "b" * 8
        assert [type(e.kind.origin).__name__ for e in reader.seen if isinstance(e.kind, TurnStarted)] == [
            "PromptOrigin"
        ]


class _RelinkedDriver(seam.Driver):
    """Runs its driver over a ``DriverLink`` of its own on the engine's channel (``link._events``),
    as the testkit's contract watch does."""

    def __init__(self, inner: seam.Driver) -> None:
        self.inner = inner
        self.info = inner.info

    async def run(self, link: seam.DriverLink) -> None:
        await self.inner.run(seam.DriverLink(link.commands, link._events))


class _RelinkingAdapter(MockAdapter):
    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        return _RelinkedDriver(await super().connect(request))


async def test_04_a_driver_on_a_link_of_its_own_over_the_engine_channel_gets_every_turn() -> None:
    """Before: the engine counted what its own link sent to tell whether text may skip the channel,
    the pump counted down everything it took, the count went below zero and the queued prompt
    never started (the testkit's conformance checks wrap the link this way)."""
    script = Script().turn([Step.emit(text("m1", "one")), Step.sleep(0.1), Step.end(completed())])
    script = script.turn([Step.emit(text("m2", "two")), Step.emit(text("m2", "!")), Step.end(completed())])
    async with Runtime(plugins=[], _builtins=[_OneAdapter(_RelinkingAdapter(script))]) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        reader = Reader(events)
        async with session:
            await session.prompt("first")
            queued = await session.prompt("second")
            assert queued.kind == Queued(0)
            first = await reader.turn()
            assert first[-1].kind == TurnEnded(Completed())
            second = await reader.turn()
            assert second[-1].kind == TurnEnded(Completed())
            assert "".join(e.kind.text for e in second if isinstance(e.kind, TextDelta)) == "two!"


async def test_05_answering_a_request_rearms_inferred_completion() -> None:
    script = Script(ends_turns=False).turn([Step.emit(permission("r1")), Step.await_answer()])
    options = SessionOptions.in_dir(".").quiet_window(0.05)
    async with mock_session(script, options) as (session, reader):
        await session.prompt("hi")
        opened = await reader.kind(RequestOpened)
        await anyio.sleep(0.2)  # an open request pauses the quiet window
        assert session.status() is SessionStatus.NEEDS_INPUT
        await session.answer(opened.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        events = [e for e in await reader.turn() if not isinstance(e.kind, StatusChanged)]
        assert kinds(events)[0] == "RequestClosed"
        assert events[-1].kind == TurnEnded(Completed(CompletionSource.INFERRED))


async def test_06_content_after_turn_end_opens_an_agent_turn() -> None:
    script = Script().turn([Step.end(completed()), Step.emit(text("late", "woke up")), Step.end(completed())])
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        await reader.kind(TurnEnded)
        events = await reader.turn()
        turn_events = [e for e in events if not isinstance(e.kind, StatusChanged)]
        assert turn_events[0].kind == TurnStarted(AgentOrigin())
        assert kinds(turn_events) == ["TurnStarted", "TextDelta", "MessageEnded", "TurnEnded"]
        assert len({e.turn_info.id for e in turn_events if e.turn_info}) == 1


async def test_06b_a_subagent_speaking_alone_after_the_turn_ends_that_agent_turn_with_its_end() -> None:
    script = (
        Script()
        .turn(
            [
                Step.emit(tool("spawn", ToolStatus.COMPLETED)),
                Step.end(completed()),
                Step.emit(text("child", "still working"), parent_tool_id="spawn"),
                Step.end(completed(), parent_tool_id="spawn"),
            ]
        )
        .turn(text_turn("m2", "next"))
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        await reader.kind(TurnEnded)
        agent_turn = [e for e in await reader.turn() if not isinstance(e.kind, StatusChanged)]
        assert agent_turn[0].kind == TurnStarted(AgentOrigin())
        assert agent_turn[1].turn_info is not None and agent_turn[1].turn_info.parent_tool_id == "spawn"
        assert agent_turn[-1].kind == TurnEnded(Completed())
        with anyio.fail_after(5):
            delivery = await session.prompt("two")  # before the rule this waited on a turn nobody ended
        assert isinstance(delivery.kind, Started)
        await reader.kind(TurnEnded)


async def test_06c_a_subagents_end_does_not_end_an_agent_turn_someone_else_spoke_in() -> None:
    script = Script().turn(
        [
            Step.end(completed()),
            Step.emit(text("child", "child says"), parent_tool_id="spawn"),
            Step.emit(text("main", "main says")),
            Step.end(completed(), parent_tool_id="spawn"),
            Step.sleep(0.2),
            Step.emit(text("main", " more")),
            Step.end(completed()),
        ]
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        await reader.kind(TurnEnded)
        events = [e for e in await reader.turn() if not isinstance(e.kind, StatusChanged)]
        assert events[0].kind == TurnStarted(AgentOrigin())
        assert TextDelta("main", " more") in [e.kind for e in events]  # the subagent's end did not end it
        assert events[-1].kind == TurnEnded(Completed())
        assert len({e.turn_info.id for e in events if e.turn_info}) == 1


async def test_07_trailing_content_beats_a_queued_prompt_to_the_next_turn() -> None:
    script = (
        Script()
        .turn(
            [
                Step.emit(permission("r1")),
                Step.await_answer(),
                Step.end(completed()),
                Step.emit(text("trail", "one more thing")),
                Step.end(completed()),
            ]
        )
        .turn(text_turn("m2", "queued turn"))
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("one")
        opened = await reader.kind(RequestOpened)
        queued = await session.prompt("two")
        assert isinstance(queued.kind, Queued)
        await session.answer(opened.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        await reader.kind(TurnEnded)
        agent_turn = await reader.kind(TurnStarted)
        assert agent_turn.origin == AgentOrigin()
        assert await reader.kind(TextDelta) == TextDelta("trail", "one more thing")
        await reader.kind(TurnEnded)
        prompted = await reader.kind(TurnStarted)
        assert prompted.origin == PromptOrigin(queued.prompt_id)


async def test_08_bookkeeping_after_turn_end_is_not_a_turn_and_late_stops_are_diagnostics() -> None:
    script = Script().turn(
        [
            Step.emit(tool("bg", ToolStatus.RUNNING)),
            Step.background("bg"),
            Step.end(completed()),
            Step.emit(tool("bg", ToolStatus.COMPLETED)),
            Step.end(completed()),
        ]
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        ended = await reader.kind(TurnEnded)
        assert ended.background == ("bg",)
        late_tool = await reader.event_of(ToolUpdated)
        assert late_tool.turn_info is None
        diagnostic = await reader.event_of(Diagnostic)
        assert diagnostic.turn_info is None
        assert isinstance(diagnostic.kind, Diagnostic)
        assert diagnostic.kind.diagnostic.code == "late_turn_end"
        assert session.status() is SessionStatus.IDLE


async def test_09_status_flips_working_needs_input_and_back_and_never_flashes_idle() -> None:
    script = Script().turn(parked_turn())
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        opened = await reader.kind(RequestOpened)
        await session.answer(opened.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        await reader.kind(TurnEnded)
        await reader.kind(StatusChanged)
        assert statuses(reader.seen) == ["WORKING", "NEEDS_INPUT", "WORKING", "IDLE"]

    two = Script().turn(text_turn("m1", "a")).turn(text_turn("m2", "b"))
    async with mock_session(two) as (session, reader):
        await session.prompt("one")
        await session.prompt("two")
        await reader.kind(TurnEnded)
        await reader.kind(TurnEnded)
        await reader.kind(StatusChanged)
        assert statuses(reader.seen) == ["WORKING", "IDLE"]


async def test_10_a_close_with_a_queued_prompt_reads_idle_not_working() -> None:
    script = Script().turn(parked_turn()).turn(text_turn("m2", "never"))
    async with mock_session(script) as (session, reader):
        await session.prompt("one")
        await reader.kind(RequestOpened)
        await session.prompt("two")
        await session.close()
        assert session.status() is SessionStatus.IDLE
        rest = await reader.rest()
        assert statuses(rest)[-1] == "IDLE"
        assert "TurnStarted" not in kinds(rest)


async def test_11_trailing_events_do_not_flash_idle_past_a_queued_prompt() -> None:
    usage = [Step.emit(tool("t1", ToolStatus.COMPLETED)) for _ in range(5)]
    script = (
        Script(buffer=64)
        .turn([Step.emit(permission("r1")), Step.await_answer(), Step.end(completed()), *usage])
        .turn(text_turn("m2", "next"))
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("one")
        opened = await reader.kind(RequestOpened)
        await session.prompt("two")
        await session.answer(opened.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        await reader.kind(TurnEnded)
        await reader.kind(TurnEnded)
        await reader.kind(StatusChanged)
        assert statuses(reader.seen) == ["WORKING", "NEEDS_INPUT", "WORKING", "IDLE"]


async def test_12_a_stalled_consumer_is_disconnected_instead_of_growing_memory() -> None:
    # events that cannot merge (a message each): the 1025th waiting one disconnects the consumer
    script = Script().turn([*(Step.emit(text(f"m{i}", "x")) for i in range(1300)), Step.end(completed())])
    async with mock_session(script) as (session, reader):
        await session.prompt("flood")
        with anyio.fail_after(3):
            while session.status() is not SessionStatus.IDLE:
                await anyio.sleep(0.01)
        with pytest.raises(SessionClosed, match="fell 1024 events behind"):
            await reader.rest()
        assert len(reader.seen) <= 1024
        with pytest.raises(SessionClosed):
            await session.prompt("anyone?")


async def test_13_frames_losing_the_promotion_race_are_dropped_not_reattributed() -> None:
    script = Script(stale_before_ack=True).turn(text_turn("m1", "one")).turn(text_turn("m2", "two"))
    async with mock_session(script) as (session, reader):
        await session.prompt("one")
        first = await reader.turn()
        await session.prompt("two")
        second = await reader.turn()
        texts = [e.kind.text for e in first + second if isinstance(e.kind, TextDelta)]
        assert texts == ["one", "two"]


async def test_14_slow_consumer_does_not_lose_events() -> None:
    script = Script(buffer=8).turn([Step.repeat(1000, Step.emit(text("m1", "x"))), Step.end(completed())])
    async with mock_session(script) as (session, reader):
        await session.prompt("flood")
        count = seen = 0
        with anyio.fail_after(10):
            while True:
                event = await reader.next(statuses=True)
                seen += 1
                if seen % 100 == 0:
                    await anyio.sleep(0.001)
                if isinstance(event.kind, TextDelta):
                    count += len(event.kind.text)
                if isinstance(event.kind, TurnEnded):
                    break
        assert count == 1000  # every character arrives (deltas merge while the consumer lags)
        sequences = [e.sequence for e in reader.seen]
        assert sequences == sorted(set(sequences))


async def test_15_cancel_is_not_blocked_by_full_event_buffer() -> None:
    script = Script().turn([Step.repeat(500, Step.emit(text("m1", "x"))), Step.sleep(30), Step.end(completed())])
    async with mock_session(script) as (session, reader):
        await session.prompt("flood")
        with anyio.fail_after(3):
            while len(reader.events._receive) < 250:  # deltas merge past 256 queued
                await anyio.sleep(0.01)
        with anyio.fail_after(1):
            await session.cancel()
        ended = await reader.kind(TurnEnded, timeout=5)
        assert ended.stop == Cancelled()
        sequences = [e.sequence for e in reader.seen]
        assert sequences == list(range(1, len(sequences) + 1))


async def test_16_cancel_closes_requests_and_keeps_or_clears_the_queue() -> None:
    script = Script().turn(parked_turn()).turn(text_turn("m2", "kept")).turn(parked_turn("r3"))
    async with mock_session(script) as (session, reader):
        await session.prompt("one")
        await reader.kind(RequestOpened)
        kept = await session.prompt("two")
        await session.cancel(clear_queue=False)
        events = await reader.turn()
        assert kinds([e for e in events if not isinstance(e.kind, StatusChanged)]) == ["RequestClosed", "TurnEnded"]
        assert events[-1].kind == TurnEnded(Cancelled())
        started = await reader.kind(TurnStarted)
        assert started.origin == PromptOrigin(kept.prompt_id)
        await reader.kind(TurnEnded)

        await session.prompt("three")
        await reader.kind(RequestOpened)
        await session.prompt("dropped")
        await session.cancel(clear_queue=True)
        assert (await reader.kind(TurnEnded)).stop == Cancelled()
        fresh = await session.prompt("after clear")
        assert isinstance(fresh.kind, Started)
        assert fresh.prompt_id == "p5"


async def test_17_auto_approve_answers_permissions_without_the_caller() -> None:
    script = Script().turn([*parked_turn(), Step.emit(text("m9", "unused"))])
    options = SessionOptions.in_dir(".").permission_mode(PermissionMode.AUTO_APPROVE)
    async with mock_session(script, options) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
        assert "RequestOpened" not in kinds(events)
        assert "RequestClosed" not in kinds(events)
        assert events[-1].kind == TurnEnded(Completed())


async def test_18_close_during_a_turn_ends_it_and_closes_requests() -> None:
    script = Script().turn(parked_turn())
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        await reader.kind(RequestOpened)
        await session.close()
        rest = await reader.rest()
        assert kinds([e for e in rest if not isinstance(e.kind, StatusChanged)]) == ["RequestClosed", "TurnEnded"]
        assert rest[-2].kind == TurnEnded(Cancelled()) or rest[-1].kind == TurnEnded(Cancelled())
        with pytest.raises(SessionClosed):
            await session.prompt("again")


async def test_19_unknown_requests_and_prompts_are_rejected() -> None:
    script = Script().turn(parked_turn()).turn(text_turn("m2", "second"))
    async with mock_session(script) as (session, reader):
        await session.prompt("one")
        opened = await reader.kind(RequestOpened)
        with pytest.raises(InvalidRequest):
            await session.answer("nope", Answer.permission(PermissionChoice.ALLOW_ONCE))
        queued = await session.prompt("two")
        await session.dequeue(queued.prompt_id)
        with pytest.raises(InvalidRequest):
            await session.dequeue(queued.prompt_id)
        await session.answer(opened.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        with pytest.raises(InvalidRequest):
            await session.answer(opened.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        await reader.kind(TurnEnded)
        await anyio.sleep(0.05)
        assert session.status() is SessionStatus.IDLE
        assert not any(
            isinstance(e.kind, TurnStarted) and e.kind.origin == PromptOrigin(queued.prompt_id) for e in reader.seen
        )


async def test_20_compact_runs_on_an_idle_session_and_reports_the_compaction() -> None:
    script = Script(compact=True)
    async with mock_session(script) as (session, reader):
        await session.compact()
        events = await reader.turn()
        body = [e for e in events if not isinstance(e.kind, StatusChanged)]
        assert body[0].kind == TurnStarted(AgentOrigin())
        assert isinstance(body[1].kind, ContextCompacted)
        assert isinstance(body[-1].kind, TurnEnded)


# ---------------------------------------------------------------------------------------------
# contracts beyond the Rust original's twenty


async def test_21_an_agent_death_mid_turn_fails_the_turn_once_then_raises_process_exited() -> None:
    script = Script().turn([Step.emit(text("m1", "partial")), Step.die("exit status: 9")])
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
        assert isinstance(events[-1].kind, TurnEnded)
        assert events[-1].kind.stop.__class__.__name__ == "Failed"
        with pytest.raises(ProcessExited) as info:
            await reader.rest()
        assert info.value.status == "exit status: 9"
        assert "mock died" in info.value.stderr
        assert sum(isinstance(e.kind, TurnEnded) for e in reader.seen) == 1
        with pytest.raises(SessionClosed):
            await session.prompt("again")


async def test_22_a_subagents_end_never_ends_its_parents_turn() -> None:
    script = Script().turn(
        [
            Step.emit(tool("task1", ToolStatus.RUNNING)),
            Step.emit(text("c1", "child says"), parent_tool_id="task1"),
            Step.end(completed(), parent_tool_id="task1"),
            Step.emit(tool("task1", ToolStatus.COMPLETED)),
            Step.emit(text("m1", "parent says")),
            Step.end(completed()),
        ]
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
        assert sum(isinstance(e.kind, TurnEnded) for e in events) == 1
        child = next(e for e in events if e.kind == TextDelta("c1", "child says"))
        assert child.turn_info is not None and child.turn_info.parent_tool_id == "task1"
        assert TextDelta("m1", "parent says") in [e.kind for e in events]


async def test_23_engine_owned_kinds_from_an_adapter_are_dropped_with_a_diagnostic() -> None:
    script = Script().turn(
        [Step.emit(TurnEnded(Completed())), Step.emit(StatusChanged(SessionStatus.IDLE)), Step.end(completed())]
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
        codes = [e.kind.diagnostic.code for e in events if isinstance(e.kind, Diagnostic)]
        assert codes == ["engine_owned_event", "engine_owned_event"]
        assert sum(isinstance(e.kind, TurnEnded) for e in events) == 1
        assert statuses(events) == ["WORKING"]


async def test_24_a_stall_is_a_diagnostic_and_never_ends_the_turn() -> None:
    script = Script().turn([Step.emit(text("m1", "thinking")), Step.sleep(0.4), Step.end(completed())])
    options = SessionOptions.in_dir(".").stall_after(0.1)
    async with mock_session(script, options) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
        stalls = [e for e in events if isinstance(e.kind, Diagnostic) and e.kind.diagnostic.code == "stall"]
        assert len(stalls) == 1
        assert events[-1].kind == TurnEnded(Completed())


async def test_25_each_turn_ends_exactly_once_and_messages_are_closed() -> None:
    script = Script().turn([Step.emit(text("m1", "a")), Step.emit(text("m2", "b")), Step.end(completed())])
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
        ended = [e.kind.message_id for e in events if isinstance(e.kind, MessageEnded)]
        assert sorted(ended) == ["m1", "m2"]
        assert kinds(events).count("TurnEnded") == 1


async def test_26_a_tool_still_active_at_turn_end_is_ended_by_the_engine_unless_backgrounded() -> None:
    script = (
        Script()
        .turn(
            [
                Step.emit(tool("fg", ToolStatus.RUNNING)),
                Step.emit(tool("child", ToolStatus.PENDING), parent_tool_id="fg"),
                Step.emit(tool("bg", ToolStatus.RUNNING)),
                Step.background("bg"),
                Step.end(completed()),
            ]
        )
        .turn([Step.emit(tool("slow", ToolStatus.RUNNING)), Step.sleep(5)])
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
        updates = [e for e in events if isinstance(e.kind, ToolUpdated)]
        finals = {e.kind.tool.id: e for e in updates if not e.kind.tool.status.active}  # type: ignore[union-attr]
        assert set(finals) == {"fg", "child"}
        assert all(e.kind.tool.status is ToolStatus.FAILED for e in finals.values())  # type: ignore[union-attr]
        assert finals["child"].turn_info is not None and finals["child"].turn_info.parent_tool_id == "fg"
        assert finals["fg"].kind.tool.title == "Run cargo test"  # type: ignore[union-attr]  # the last snapshot, ended
        assert events[-1].kind == TurnEnded(Completed(), ("bg",))
        await session.prompt("again")
        await reader.kind(ToolUpdated)
        await session.cancel()
        events = await reader.turn()
        cancelled = [e.kind.tool for e in events if isinstance(e.kind, ToolUpdated)]
        assert [(t.id, t.status) for t in cancelled] == [("slow", ToolStatus.CANCELLED)]
        assert isinstance(events[-1].kind, TurnEnded) and events[-1].kind.background == ()


async def test_27_a_between_turns_setting_waits_for_the_turn_and_holds_the_next_prompt() -> None:
    from anyagent import SessionUpdated
    from anyagent.mock import select_option

    fast = select_option("fast", ["on", "off"], "off", between_turns=True)
    script = Script(options=(fast,)).turn([Step.emit(text("m1", "a")), Step.sleep(0.2), Step.end(completed())])
    script = script.turn(text_turn("m2", "b"))
    runtime, mock = recording_runtime(script)
    async with runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        reader = Reader(events)
        await session.prompt("first")
        await reader.kind(TextDelta)
        await session.configure("fast", "on")
        queued = await session.prompt("second")
        assert queued.kind == Queued(0)
        sent = mock.sent
        assert not any(isinstance(c, seam.Configure) for c in sent)  # held while the turn runs
        events_seen = await reader.turn()
        assert events_seen[-1].kind == TurnEnded(Completed())
        updated = await reader.kind(SessionUpdated)
        assert updated.info.configuration["fast"] == "on"
        started = await reader.kind(TurnStarted)
        assert started.origin == PromptOrigin(queued.prompt_id)
        await reader.turn()
        order = [type(c).__name__ for c in sent if isinstance(c, (seam.Configure, seam.StartTurn))]
        assert order == ["StartTurn", "Configure", "StartTurn"]
        await session.close()


async def test_28_requests_the_engine_closes_unanswered_are_declined_to_the_adapter_once() -> None:
    script = (
        Script()
        .turn([Step.emit(permission("r1")), Step.emit(permission("r2")), Step.await_answer(), Step.sleep(5)])
        .turn([Step.emit(permission("r3")), Step.end(completed())])
    )
    runtime, mock = recording_runtime(script)
    async with runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        reader = Reader(events)
        await session.prompt("hi")
        await reader.kind(RequestOpened)
        await reader.kind(RequestOpened)
        await session.answer("r1", Answer.permission(PermissionChoice.ALLOW_ONCE))
        await session.cancel()
        await reader.turn()
        await session.prompt("again")
        await reader.turn()
        await session.close()  # the mock has read every command by now
        sent = mock.sent
        after_cancel = sent[[type(c) for c in sent].index(seam.Cancel) :]
        assert [c for c in after_cancel if isinstance(c, seam.Decline)][:1] == [seam.Decline("r2")]
        assert [c for c in sent if isinstance(c, seam.Decline)] == [seam.Decline("r2"), seam.Decline("r3")]
        await session.close()


async def test_29_dropping_every_session_handle_closes_and_the_reader_still_sees_the_end() -> None:
    import copy
    import gc

    script = Script().turn([Step.emit(text("m1", "working")), Step.sleep(30)])
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        reader = Reader(events)
        await session.prompt("hi")
        await reader.kind(TextDelta)
        copy_of = copy.copy(session)
        del session
        gc.collect()
        assert copy_of.status() is SessionStatus.WORKING  # a copy still holds the session open
        del copy_of
        gc.collect()
        rest = await reader.rest()
        ended = [e.kind for e in rest if isinstance(e.kind, TurnEnded)]
        assert ended == [TurnEnded(Cancelled())]


class _SlowSettingDriver(seam.Driver):
    """Confirms a between-turns setting late, after an unrelated info update, and records when
    each prompt reached it."""

    def __init__(self, log: list[str]) -> None:
        from anyagent import AgentDetails, Capabilities
        from anyagent.mock import select_option

        option = select_option("effort", ["low", "high"], "low", between_turns=True)
        self.info = seam.DriverInfo(
            details=AgentDetails(capabilities=Capabilities(), config_options=(option,)),
            configuration={"effort": "low"},
        )
        self.log = log

    async def run(self, link: seam.DriverLink) -> None:
        async with anyio.create_task_group() as tg:
            async for command in link.commands:
                if isinstance(command, seam.Close):
                    await link.info_changed(attrs.evolve(self.info, title="late news"))  # while closing
                    break
                await self._handle(link, command, tg)
            tg.cancel_scope.cancel()

    async def _confirm_later(self, link: seam.DriverLink, value: str) -> None:
        await anyio.sleep(0.3)  # a relaunch or a hidden prompt, while commands keep flowing
        self.info = attrs.evolve(self.info, configuration={"effort": value})
        self.log.append("confirmed")
        await link.info_changed(self.info)

    async def _handle(self, link: seam.DriverLink, command: seam.DriverCommand, tg: anyio.abc.TaskGroup) -> None:
        if isinstance(command, seam.Configure):
            self.log.append(f"configure {command.value}")
            await link.info_changed(attrs.evolve(self.info, title="renamed"))  # unrelated
            tg.start_soon(self._confirm_later, link, str(command.value))
        elif isinstance(command, seam.StartTurn):
            self.log.append(f"prompt {command.input.content}")
            await link.turn_ack()
            await link.turn_end(Completed())


async def test_30_only_the_confirmation_of_a_between_turns_setting_releases_the_next_prompt() -> None:
    from anyagent import AgentProfile, Register, hookimpl

    log: list[str] = []

    class SlowAdapter(seam.Adapter):
        wire = "slow"

        async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
            return _SlowSettingDriver(log)

    class Plugin:
        @hookimpl
        def anyagent_adapters(self, register: Register) -> None:
            register.adapter(SlowAdapter)

        @hookimpl
        def anyagent_agents(self, register: Register) -> None:
            register.profile(AgentProfile(id="slow", name="Slow", wire="slow", executables=()))

    async with Runtime(plugins=[], _builtins=[Plugin()]) as runtime:
        agent = (await runtime.discover()).require("slow")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        reader = Reader(events)
        await session.configure("effort", "high")
        delivery = await session.prompt("next")
        assert delivery.kind == Queued(0)
        await reader.turn()
        assert log == ["configure high", "confirmed", "prompt next"]
        await session.close()
        after_close = await reader.rest()
        assert not [e for e in after_close if isinstance(e.kind, SessionUpdated)]  # news while closing is moot


async def test_31_a_late_end_of_a_cancelled_turn_never_ends_the_next_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    import anyagent._engine as engine_module

    monkeypatch.setattr(engine_module, "CANCEL_GRACE", 0.1)
    script = (
        Script(ignore_cancel=True)
        .turn([Step.emit(text("m1", "slow")), Step.sleep(0.5), Step.send(seam.TurnEnd(Cancelled(), turn_id="t1"))])
        .turn([Step.sleep(1.0), Step.emit(text("m2", "the real answer")), Step.end(completed())])
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("first")
        await reader.kind(TextDelta)
        await session.cancel()
        first = await reader.turn()
        assert first[-1].kind == TurnEnded(Cancelled())  # the engine gave up waiting
        await session.prompt("second")
        second = await reader.turn()
        assert second[-1].kind == TurnEnded(Completed())
        assert TextDelta("m2", "the real answer") in [e.kind for e in second]
        late = [e.kind.diagnostic.code for e in second if isinstance(e.kind, Diagnostic)]
        assert late == ["late_turn_end"]
        assert kinds(second).count("MessageEnded") == 1


async def test_32_closing_during_a_burst_emits_no_content_after_the_last_turn_ended() -> None:
    script = Script().turn([Step.repeat(3000, Step.emit(text("m1", "x")))])
    async with mock_session(script) as (session, reader):
        await session.prompt("go")
        for _ in range(20):
            await reader.kind(TextDelta)
        await session.close()
        rest = await reader.rest()
        ended = next(i for i, e in enumerate(rest) if isinstance(e.kind, TurnEnded))
        after = [type(e.kind).__name__ for e in rest[ended + 1 :] if not isinstance(e.kind, StatusChanged)]
        assert after == [], after
        assert all(e.turn_info is not None for e in rest if isinstance(e.kind, TextDelta))


async def test_33_every_event_round_trips_through_json_whatever_the_adapter_copied() -> None:
    from anyagent import ContextUsage, DiagnosticInfo, ToolInput, ToolUpdate, serialize

    deep: dict[str, object] = {}
    cursor = deep
    for _ in range(600):
        cursor["a"] = {}
        cursor = cursor["a"]  # type: ignore[assignment]
    tool = ToolUpdate("t1", raw={"deep": deep, "nan": math.nan}, input=ToolInput(arguments={"x": [math.inf]}))
    script = Script().turn(
        [
            Step.emit(ContextUsage(10, None, math.inf)),
            Step.emit(Diagnostic(DiagnosticInfo("odd", raw={"deep": deep, "big": 2**70, "obj": object()}))),
            Step.emit(ToolUpdated(tool)),
            Step.emit(text("m1", "hi"), extensions={"x/nan": math.nan}),
            Step.end(completed()),
        ]
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("go")
        turn = await reader.turn()
        for event in turn:
            assert serialize.loads(serialize.dumps(event)).kind == event.kind
        usage = next(e.kind for e in turn if isinstance(e.kind, ContextUsage))
        assert usage == ContextUsage(10, None, None)
        assert next(e for e in turn if isinstance(e.kind, TextDelta)).extensions == {"x/nan": None}


async def test_34_a_burst_merges_deltas_for_a_lagging_consumer_and_bytes_bound_a_paused_one() -> None:
    import anyagent._engine as engine_module

    burst = Script().turn([Step.repeat(5000, Step.emit(text("m1", "x"))), Step.end(completed())])
    async with mock_session(burst) as (session, reader):
        await session.prompt("flood")
        seen_text = 0
        with anyio.fail_after(20):
            while True:
                event = await reader.next(statuses=True)
                await anyio.sleep(0.00005)  # a consumer spending 0.05 ms per event
                if isinstance(event.kind, TextDelta):
                    seen_text += len(event.kind.text)
                if isinstance(event.kind, TurnEnded):
                    break
        assert seen_text == 5000  # merged while it lagged, never dropped nor disconnected
        sequences = [e.sequence for e in reader.seen]
        assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))  # gapless
    big = "y" * (8 * 1024 * 1024)
    flood = Script().turn([*(Step.emit(text(f"b{i}", big)) for i in range(60)), Step.end(completed())])
    async with mock_session(flood) as (session, reader):
        await session.prompt("flood")
        with anyio.fail_after(10):
            while session.status() is not SessionStatus.IDLE:
                await anyio.sleep(0.01)
        queued = reader.events._receive
        assert queued.bytes <= engine_module.EVENT_BUFFER_BYTES  # the paused reader's backlog stays bounded
        with pytest.raises(SessionClosed, match="MiB of events behind"):
            await reader.rest()


def _ignores_cancel_then_streams_on(end_after: float, deltas: int = 80) -> list[Step]:
    """A turn whose agent ignores the cancel, streams ``deltas`` more past the engine's deadline,
    then ends the old turn itself (stamped with its id, as the codex and pi drivers do)."""
    return [
        Step.emit(text("m1", "slow")),
        Step.sleep(0.3),
        Step.repeat(deltas, [Step.emit(text("m1", "x")), Step.sleep(end_after / deltas)]),
        Step.send(seam.TurnEnd(Cancelled(), turn_id="t1")),
    ]


@pytest.mark.parametrize("busy", [False, True], ids=["takes-prompts", "refuses-while-busy"])
async def test_34_output_streamed_past_the_cancel_deadline_never_wedges_the_session(
    monkeypatch: pytest.MonkeyPatch, busy: bool
) -> None:
    """Before: the late deltas opened an agent-originated turn, the agent's end of the old turn was
    dropped as late, nothing ended the new turn, and the next prompt stayed Queued forever."""
    import anyagent._engine as engine_module

    monkeypatch.setattr(engine_module, "CANCEL_GRACE", 0.1)
    script = (
        Script(ignore_cancel=True, refuses_prompt_while_busy=busy)
        .turn(_ignores_cancel_then_streams_on(0.4))
        .turn([Step.emit(text("m2", "the real answer")), Step.end(completed())])
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("first")
        await reader.kind(TextDelta)
        await session.cancel()
        first = await reader.turn()
        assert first[-1].kind == TurnEnded(Cancelled())  # the engine gave up at its deadline
        after_first = len(reader.seen)
        # the agent streams on past the deadline, then ends the old turn: wait for that end (not a
        # fixed sleep, which a loaded machine outran) before the next prompt
        await reader.match(lambda e: isinstance(e.kind, Diagnostic) and e.kind.diagnostic.code == "late_turn_end")
        await session.prompt("second")
        second = await reader.turn()
        assert second[-1].kind == TurnEnded(Completed())
        assert TextDelta("m2", "the real answer") in [e.kind for e in second]
        seen = reader.seen
        origins = [e.kind.origin for e in seen if isinstance(e.kind, TurnStarted)]
        assert [type(o).__name__ for o in origins] == ["PromptOrigin", "PromptOrigin"]  # no agent turn
        assert TextDelta("m1", "x") not in [e.kind for e in seen]  # the cancelled turn's output: dropped
        codes = [e.kind.diagnostic.code for e in seen[after_first:] if isinstance(e.kind, Diagnostic)]
        assert codes == ["cancel_unconfirmed", "late_turn_end"]


async def test_35_a_prompt_after_a_late_confirmed_cancel_waits_for_the_agent_to_be_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An agent that refuses a prompt while it runs a turn (codex, pi) confirms the cancel after the
    engine's deadline. Before: the next prompt was sent at once and ended Failed("still running a
    turn"); now it is held (Queued) until the agent's own end of the old turn, then runs."""
    import anyagent._engine as engine_module

    monkeypatch.setattr(engine_module, "CANCEL_GRACE", 0.1)
    script = (
        Script(ignore_cancel=True, refuses_prompt_while_busy=True)
        .turn([Step.emit(text("m1", "slow")), Step.sleep(0.6), Step.send(seam.TurnEnd(Cancelled(), turn_id="t1"))])
        .turn([Step.emit(text("m2", "the real answer")), Step.end(completed())])
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("first")
        await reader.kind(TextDelta)
        await session.cancel()
        first = await reader.turn()
        assert first[-1].kind == TurnEnded(Cancelled())
        delivery = await session.prompt("second")
        assert delivery.kind == Queued(0)  # held: the agent still runs the old turn
        assert session.status() is SessionStatus.WORKING
        second = await reader.turn()
        assert second[-1].kind == TurnEnded(Completed()), second[-1].kind
        assert TextDelta("m2", "the real answer") in [e.kind for e in second]


async def test_36_a_cancelled_turn_the_agent_never_ends_holds_the_next_prompt_only_so_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import anyagent._engine as engine_module

    monkeypatch.setattr(engine_module, "CANCEL_GRACE", 0.1)
    monkeypatch.setattr(engine_module, "CANCEL_SETTLE", 0.3)
    script = (
        Script(ignore_cancel=True, refuses_prompt_while_busy=True)
        .turn([Step.emit(text("m1", "slow"))])  # the play ends: the agent is idle, but never said so
        .turn([Step.emit(text("m2", "the real answer")), Step.end(completed())])
    )
    async with mock_session(script) as (session, reader):
        await session.prompt("first")
        await reader.kind(TextDelta)
        await session.cancel()
        await reader.turn()
        assert (await session.prompt("second")).kind == Queued(0)
        second = await reader.turn()
        assert second[-1].kind == TurnEnded(Completed())
        codes = [e.kind.diagnostic.code for e in second if isinstance(e.kind, Diagnostic)]
        assert codes == ["cancel_unconfirmed"]


class _TickingClock(datetime):
    """``datetime`` whose ``now(utc)`` moves on one microsecond at every call (the engine's clock)."""

    ticks = 0

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> _TickingClock:  # type: ignore[override]
        assert tz is timezone.utc
        cls.ticks += 1
        return cls(2026, 12, 4, tzinfo=timezone.utc) + timedelta(microseconds=cls.ticks)  # type: ignore[return-value]


async def test_37_text_deltas_of_one_batch_share_a_time_and_a_sessions_times_never_go_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deltas the engine takes in one run of the adapter's task (no wait between them: they
    were read at once) share the time of the first; a new batch takes the time anew, an event the
    engine stamps meanwhile (the diagnostic, through the channel) never comes before them. Every
    time is aware (UTC). A bare ``TextDelta`` is its ``Content``. Before: a clock call per delta."""
    import anyagent._engine as engine_module

    monkeypatch.setattr(engine_module, "datetime", _TickingClock)
    burst = [Step.emit(text("m1", "a"))] * 4 + [Step.send(TextDelta("m1", "b"))] * 4
    note = Step.emit(Diagnostic(DiagnosticInfo("a note", DiagnosticLevel.INFO, "note")))
    script = Script().turn([*burst, Step.sleep(0.05), *burst, note, *burst, Step.end(completed())])
    async with mock_session(script) as (session, reader):
        await session.prompt("hi")
        events = await reader.turn()
    deltas = [e for e in events if isinstance(e.kind, TextDelta)]
    assert "".join(e.kind.text for e in deltas) == "aaaabbbb" * 3
    times = [e.occurred_at for e in reader.seen]
    assert all(t.utcoffset() == timedelta(0) for t in times)
    assert times == sorted(times)  # never back, whatever stamped them
    first, second = {e.occurred_at for e in deltas[:8]}, {e.occurred_at for e in deltas[8:16]}
    assert len(first) == 1 and len(second) == 1 and first != second  # one time per batch
    stamped = next(e for e in events if isinstance(e.kind, Diagnostic)).occurred_at
    assert all(e.occurred_at >= stamped for e in deltas[16:])
