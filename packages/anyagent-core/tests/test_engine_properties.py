"""Property tests: random interleavings of prompts, answers, cancels and agent frames keep the invariants.

Invariants checked on every run's full event log:
- sequence is 1, 2, 3 … with no gap;
- turns never overlap, and each ``TurnStarted`` gets exactly one ``TurnEnded``;
- events inside a turn carry that turn's id; no turn-scoped event escapes its turn;
- ``StatusChanged`` never repeats the previous status;
- no request stays open past its turn's end (each ``RequestOpened`` is closed before ``TurnEnded``).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anyagent import (
    Answer,
    Event,
    PermissionChoice,
    RequestClosed,
    RequestOpened,
    Runtime,
    SessionClosed,
    SessionOptions,
    StatusChanged,
    ToolStatus,
    TurnEnded,
    TurnStarted,
)
from anyagent.mock import Script, Step, cancelled, completed, failed, permission, text, tool

_counter = iter(range(10**9))


def _step_strategy() -> st.SearchStrategy[list[Step]]:
    def request_steps(_: Any) -> list[Step]:
        return [Step.emit(permission(f"r{next(_counter)}")), Step.await_answer()]

    single = st.one_of(
        st.builds(lambda t: [Step.emit(text("m1", t))], st.text(max_size=3)),
        st.builds(request_steps, st.none()),
        st.builds(lambda i: [Step.emit(tool(f"tool{i}", ToolStatus.RUNNING))], st.integers(0, 2)),
        st.builds(lambda i: [Step.emit(tool(f"tool{i}", ToolStatus.COMPLETED))], st.integers(0, 2)),
        st.just([Step.sleep(0.002)]),
        st.sampled_from([[Step.end(completed())], [Step.end(cancelled())], [Step.end(failed("x"))]]),
    )
    return st.lists(single, max_size=6).map(lambda parts: [s for part in parts for s in part])


def _turn_strategy() -> st.SearchStrategy[list[Step]]:
    return st.tuples(_step_strategy(), st.booleans()).map(
        lambda pair: [*pair[0], Step.end(completed())] if pair[1] else pair[0]
    )


_ops = st.lists(
    st.sampled_from(["prompt", "answer", "cancel", "cancel_clear", "sleep", "dequeue"]), min_size=1, max_size=12
)


@st.composite
def _scenarios(draw: st.DrawFn) -> tuple[Script, list[str]]:
    script = Script(
        steer=draw(st.booleans()),
        steer_rejects=draw(st.booleans()),
        ends_turns=draw(st.booleans()),
        stale_before_ack=draw(st.booleans()),
    )
    for _ in range(draw(st.integers(0, 4))):
        turn = draw(_turn_strategy())
        script = script.agent_turn(turn) if draw(st.integers(0, 4)) == 0 else script.turn(turn)
    return script, draw(_ops)


def check_invariants(events: list[Event]) -> None:
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    current: str | None = None
    open_requests: set[str] = set()
    last_status = None
    for event in events:
        kind = event.kind
        if isinstance(kind, StatusChanged):
            assert kind.status != last_status, "StatusChanged repeated"
            last_status = kind.status
            continue
        if isinstance(kind, TurnStarted):
            assert current is None, "a turn started inside another turn"
            assert event.turn_info is not None
            current = event.turn_info.id
            continue
        if isinstance(kind, TurnEnded):
            assert current is not None, "TurnEnded without a turn"
            assert event.turn_info is not None and event.turn_info.id == current
            assert not open_requests, f"requests {open_requests} left open past their turn"
            current = None
            continue
        if isinstance(kind, RequestOpened):
            assert current is not None and event.turn_info is not None and event.turn_info.id == current
            open_requests.add(kind.request.id)
        elif isinstance(kind, RequestClosed):
            assert kind.request_id in open_requests, "RequestClosed for a request that was not open"
            open_requests.discard(kind.request_id)
        if event.turn_info is not None:
            assert event.turn_info.id == current, "an event carries a turn id outside that turn"
    assert current is None, "a turn never ended"


async def _play(script: Script, ops: list[str]) -> list[Event]:
    options = SessionOptions.in_dir(".").quiet_window(0.01)
    collected: list[Event] = []
    open_ids: list[str] = []
    queued: list[str] = []
    with anyio.fail_after(15):
        async with Runtime.with_mock(script) as runtime:
            agent = (await runtime.discover()).require("mock")
            session, events = await runtime.open(agent, options)

            async def consume() -> None:
                try:
                    async for event in events:
                        collected.append(event)
                        if isinstance(event.kind, RequestOpened):
                            open_ids.append(event.kind.request.id)
                except SessionClosed:
                    pass

            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                for op in ops:
                    try:
                        if op == "prompt":
                            delivery = await session.prompt("go")
                            queued.append(delivery.prompt_id)
                        elif op == "answer" and open_ids:
                            await session.answer(open_ids.pop(0), Answer.permission(PermissionChoice.ALLOW_ONCE))
                        elif op == "cancel":
                            await session.cancel()
                        elif op == "cancel_clear":
                            await session.cancel(clear_queue=True)
                        elif op == "dequeue" and queued:
                            await session.dequeue(queued.pop())
                        else:
                            await anyio.sleep(0.003)
                    except Exception as exc:  # typed rejections are expected; nothing else is
                        assert type(exc).__name__ in {"InvalidRequest"}, repr(exc)
                await anyio.sleep(0.03)
                await session.close()
    return collected


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_scenarios())
def test_random_interleavings_keep_the_invariants(backend: str, scenario: tuple[Script, list[str]]) -> None:
    script, ops = scenario
    events = anyio.run(_play, script, ops, backend=backend)
    check_invariants(events)
