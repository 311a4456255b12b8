"""Turn rules the engine keeps for every wire, seen through ACP: tools still running at a turn's
end, kiro's between-turns effort, requests the engine closes, and a connect that fails."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from acpsupport import AGENTS, opened, runtime, vendor_agent

from anyagent import (
    AgentInstallation,
    Answer,
    Cancelled,
    Completed,
    Diagnostic,
    DiagnosticCode,
    Event,
    PermissionChoice,
    ProtocolFailed,
    RequestOpened,
    SessionOptions,
    SessionUpdated,
    SpawnFailed,
    TextDelta,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
)
from anyagent_testkit.events import kinds, text_of

pytestmark = pytest.mark.anyio


# ---------------------------------------------------------------------------------------------
# (a) tools still running when the turn ends


async def test_a_tool_still_running_when_the_prompt_completes_ends_failed(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("DANGLE")
        seen = await reader.turn()
    updates = [k.tool for k in kinds(seen, ToolUpdated) if k.tool.id == "g1"]
    assert [t.status for t in updates] == [ToolStatus.RUNNING, ToolStatus.FAILED]
    end = kinds(seen, TurnEnded)[-1]
    assert end.stop == Completed() and end.background == ()
    assert text_of(seen) == "left running"


async def test_a_tool_still_running_when_the_prompt_is_cancelled_ends_cancelled(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("DANGLESLOW")
        await reader.until(TextDelta)
        await session.cancel()
        await reader.turn()
        seen = reader.seen
    updates = [k.tool for k in kinds(seen, ToolUpdated) if k.tool.id == "g2"]
    assert [t.status for t in updates] == [ToolStatus.RUNNING, ToolStatus.CANCELLED]
    assert kinds(seen, TurnEnded)[-1].stop == Cancelled()


# ---------------------------------------------------------------------------------------------
# (b) kiro's effort is a between-turns setting: the engine holds it and the prompts after it


async def test_kiro_effort_set_mid_turn_runs_after_the_turn_and_before_the_next_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "order.log"
    monkeypatch.setenv("VENDOR_LOG", str(log))
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "kiro", "kiro")) as (session, reader):
        effort = session.info().details.option("effort")
        assert effort is not None and effort.between_turns
        await session.prompt("HOLD")
        request = (await reader.kind(RequestOpened)).request
        await session.configure("effort", "high")  # mid-turn: held by the engine
        await session.prompt("hello")  # queued by the engine behind the turn and the setting
        await anyio.sleep(0.2)
        assert "prompt /effort high" not in log.read_text().splitlines()
        await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        first = await reader.turn()
        assert text_of(first) == "held proceed_once"
        second = await reader.turn()
        assert text_of(second) == "ok"
    # the setting is confirmed before the next prompt starts, and its hidden prompt says nothing
    events = [e.kind for e in reader.seen]
    confirmed = next(
        i
        for i, k in enumerate(events)
        if isinstance(k, SessionUpdated) and k.info.configuration.get("effort") == "high"
    )
    started = [i for i, k in enumerate(events) if isinstance(k, TurnStarted)]
    assert len(started) == 2 and started[0] < confirmed < started[1]
    assert "Effort set to" not in "".join(k.text for k in events if isinstance(k, TextDelta))
    lines = log.read_text().splitlines()
    prompts = [line for line in lines if line.startswith("prompt ")]
    assert prompts == ["prompt HOLD", "prompt /effort high", "prompt hello"]
    assert lines.index("prompt /effort high") > lines.index("answer session/request_permission")
    assert not [line for line in lines if line.startswith("early ")]  # nothing overtook the /effort answer


async def test_kiro_effort_set_to_its_current_value_still_confirms(tmp_path: Path) -> None:
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "kiro", "kiro")) as (session, reader):
        await session.configure("effort", "high")
        await reader.match(
            lambda e: isinstance(e.kind, SessionUpdated) and e.kind.info.configuration.get("effort") == "high"
        )
        await session.configure("effort", "high")  # no change: the engine still needs its answer
        mark = len(reader.seen)
        await session.prompt("hello")
        seen = await reader.turn(timeout=10)  # far below the engine's 30 s wait for an unanswered setting
        assert text_of(seen) == "ok"
    diagnostics = [k.diagnostic.code for k in kinds(reader.seen[mark:], Diagnostic)]
    assert DiagnosticCode.CONFIGURE_UNCONFIRMED not in diagnostics


# ---------------------------------------------------------------------------------------------
# (c) requests the engine closes are declined on the wire exactly once


def _replies(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("reply ")]


@pytest.mark.parametrize(("profile_id", "flavor"), [("plain", "plain"), ("hermes", "hermes")])
async def test_a_permission_closed_by_cancel_is_answered_cancelled_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile_id: str, flavor: str
) -> None:
    log = tmp_path / "order.log"
    monkeypatch.setenv("VENDOR_LOG", str(log))
    async with opened(tmp_path, agent=vendor_agent(tmp_path, profile_id, flavor)) as (session, reader):
        await session.prompt("HOLD")
        await reader.kind(RequestOpened)
        await session.cancel()
        assert kinds(await reader.turn(), TurnEnded)[-1].stop == Cancelled()
        await session.prompt("hello")  # the agent reads everything written before this prompt
        assert text_of(await reader.turn()) == "ok"
        assert _replies(log) == ['reply 101 {"outcome": {"outcome": "cancelled"}}']


async def test_a_permission_open_at_close_is_answered_cancelled_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "order.log"
    monkeypatch.setenv("VENDOR_LOG", str(log))
    async with opened(tmp_path, agent=vendor_agent(tmp_path, "plain", "plain")) as (session, reader):
        await session.prompt("HOLD")
        await reader.kind(RequestOpened)
    assert _replies(log) == ['reply 101 {"outcome": {"outcome": "cancelled"}}']


# ---------------------------------------------------------------------------------------------
# (d) a connect that fails leaves nothing open


def _open_fds(path: Path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                found.append(fd)
        except OSError:
            pass
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
async def test_a_spawn_that_fails_closes_the_wire_recording(tmp_path: Path) -> None:
    recording = tmp_path / "wire.jsonl"
    agent = AgentInstallation.acp("missing", tmp_path / "no-such-agent")
    options = SessionOptions.in_dir(tmp_path).record_wire(recording)
    async with runtime() as rt:
        with pytest.raises(SpawnFailed) as caught:
            await rt.open(agent, options)
        assert caught.value is not None  # the error (and its traceback) is still alive here
        assert _open_fds(recording) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
async def test_a_handshake_that_fails_after_spawn_reaps_the_agent_and_closes_the_recording(tmp_path: Path) -> None:
    recording = tmp_path / "wire.jsonl"
    pid_file = tmp_path / "pid"
    code = (
        "import json, os, sys, time\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "frame = json.loads(sys.stdin.readline())\n"
        "print(json.dumps({'jsonrpc': '2.0', 'id': frame['id'], 'result': {'protocolVersion': 3}}), flush=True)\n"
        "time.sleep(60)\n"
    )
    agent = AgentInstallation.acp("old", sys.executable, ["-c", code])
    options = SessionOptions.in_dir(tmp_path).record_wire(recording)
    async with runtime() as rt:
        with pytest.raises(ProtocolFailed) as caught:
            await rt.open(agent, options)
        assert "versions 3" in caught.value.message  # 2 would be initialized again, in v2
        assert _open_fds(recording) == []
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)
    assert '"initialize"' in recording.read_text()


async def test_a_prompt_after_a_cancel_the_agent_never_answers_still_reaches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyagent._engine as engine_module

    monkeypatch.setattr(engine_module, "CANCEL_GRACE", 0.3)
    async with opened(tmp_path) as (session, reader):
        await session.prompt("STUCK")
        await reader.until(TextDelta)
        await session.cancel()
        stuck = await reader.turn()
        assert kinds(stuck, TurnEnded) == [TurnEnded(Cancelled())]  # the engine stopped waiting
        for _ in range(3):  # every later prompt reaches the agent and ends on its own answer
            await session.prompt("hello")
            turn = await reader.turn()
            assert text_of(turn) == "Hello world"
            assert kinds(turn, TurnEnded) == [TurnEnded(Completed())]


async def _late_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: str, wait: float, version: str = "1"
) -> list[list[Event]]:
    """Issue 28 items 3a and 3b on ACP's wire (``agents/late_cancel_agent.py``): the agent leaves
    ``session/cancel`` unanswered, streams on for 1.2 s past the engine's cancel deadline (0.3 s),
    then answers the old ``session/prompt`` itself (``stop``); it answers in order, so a prompt sent
    meanwhile (``wait`` s after the engine ended the old turn) waits for it. Asserts that nothing
    wedges (ACP ends no agent turn itself: a turn opened by the late output would end only by the
    20 s quiet window, and the next prompt would stay Queued behind it) and that every prompt reached
    the agent and ended Completed; returns the three turns' events and, last, what came after the
    engine ended the first."""
    import anyagent._engine as engine_module

    monkeypatch.setattr(engine_module, "CANCEL_GRACE", 0.3)
    log = tmp_path / "late.log"
    monkeypatch.setenv("LATE_LOG", str(log))
    agent = AgentInstallation.acp("late", sys.executable, [str(AGENTS / "late_cancel_agent.py"), stop, version])
    async with opened(tmp_path, agent=agent) as (session, reader):
        await session.prompt("first")
        await reader.until(TextDelta)
        await session.cancel()
        first = await reader.turn()
        assert kinds(first, TurnEnded) == [TurnEnded(Cancelled())]  # the engine's deadline
        ended = len(reader.seen)  # what the agent streamed before the deadline is the old turn's
        await anyio.sleep(wait)  # the agent streams on into the idle session
        with anyio.fail_after(8):  # well below the 20 s quiet window: a wedge fails here
            await session.prompt("second")
            second = await reader.turn()
        assert kinds(second, TurnEnded) == [TurnEnded(Completed())], kinds(second, TurnEnded)
        assert text_of(second).endswith("echo: second")
        with anyio.fail_after(8):
            await session.prompt("third")
            third = await reader.turn()
        assert kinds(third, TurnEnded) == [TurnEnded(Completed())] and text_of(third) == "echo: third"
    origins = [type(e.origin).__name__ for e in kinds(reader.seen, TurnStarted)]
    assert origins == ["PromptOrigin"] * 3  # no agent turn opened by the late output
    methods = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    assert methods.count("session/prompt") == 3  # every prompt reached the agent
    return [first, second, third, reader.seen[ended:]]


_LATE_CASES = pytest.mark.parametrize(
    ("stop", "wait"),
    [("cancelled", 0.4), ("end_turn", 0.4), ("cancelled", 0.0), ("end_turn", 0.0)],
    ids=["cancelled-prompt-during-late-output", "end_turn-prompt-during-late-output",
         "cancelled-prompt-at-once", "end_turn-prompt-at-once"],
)  # fmt: skip


@_LATE_CASES
async def test_output_past_the_cancel_deadline_never_wedges_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: str, wait: float
) -> None:
    await _late_cancel(tmp_path, monkeypatch, stop, wait)


@pytest.mark.parametrize("version", ["1", "2"], ids=["v1", "v2"])
@_LATE_CASES
async def test_output_past_the_cancel_deadline_never_joins_the_next_prompts_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: str, wait: float, version: str
) -> None:
    """The next prompt's turn holds its own text only: what the agent streamed of the cancelled
    turn after the engine's deadline is dropped, never attributed to the next prompt (in v2 the
    old prompt ends with an idle ``state_update``, its answer long given)."""
    *_, second, _third, after = await _late_cancel(tmp_path, monkeypatch, stop, wait, version)
    assert text_of(second) == "echo: second"
    assert [d for d in kinds(after, TextDelta) if d.text.startswith("late")] == []
