"""The recorded tier, part 2: permissions, cancel, fs, terminals against the scripted SDK agent."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from acpsupport import opened

from anyagent import (
    Answer,
    Cancelled,
    Completed,
    Failed,
    PermissionChoice,
    PermissionMode,
    PermissionRequest,
    QuestionAnswer,
    QuestionRequest,
    RequestClosed,
    RequestOpened,
    SessionOptions,
    TextDelta,
    ToolKind,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
)
from anyagent_testkit.events import kinds, text_of

pytestmark = pytest.mark.anyio


async def test_permission_allow_writes_through_fs(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    async with opened(tmp_path) as (session, reader):
        await session.prompt(f"WRITE {target}")
        request = (await reader.kind(RequestOpened)).request
        seen = reader.seen
        assert isinstance(request, PermissionRequest)
        # the tool first appears inside the permission request, and is surfaced before it
        tool_events = kinds(seen, ToolUpdated)
        assert tool_events and tool_events[-1].tool.id == "w1"
        assert request.tool.id == "w1" and request.tool.kind is ToolKind.EDIT
        assert request.tool.input.path == str(target)
        assert request.options == (
            PermissionChoice.ALLOW_ONCE,
            PermissionChoice.ALLOW_ALWAYS,
            PermissionChoice.DENY_ONCE,
        )
        await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        rest = await reader.turn()
    assert target.read_text() == "written by scripted\n"
    assert text_of(rest) == "allowed"
    assert kinds(rest, RequestClosed)[0].request_id == request.id
    assert kinds(rest, ToolUpdated)[-1].tool.status is ToolStatus.COMPLETED
    assert kinds(rest, TurnEnded)[-1].stop == Completed()


async def test_permission_reject_writes_nothing_and_the_unfinished_tool_ends_failed(tmp_path: Path) -> None:
    target = tmp_path / "no.txt"
    async with opened(tmp_path) as (session, reader):
        await session.prompt(f"WRITE {target}")
        request = (await reader.kind(RequestOpened)).request
        await session.answer(request.id, Answer.permission(PermissionChoice.DENY_ONCE))
        rest = await reader.turn()
    assert not target.exists()
    assert text_of(rest) == "rejected"
    # the agent never finished the tool it asked about: the engine ends it with the turn
    assert kinds(rest, ToolUpdated)[-1].tool.status is ToolStatus.FAILED
    assert kinds(rest, TurnEnded)[-1].background == ()


async def test_auto_approve_answers_with_the_agents_allow_option(tmp_path: Path) -> None:
    target = tmp_path / "auto.txt"
    options = SessionOptions.in_dir(tmp_path).permission_mode(PermissionMode.AUTO_APPROVE)
    async with opened(tmp_path, options) as (session, reader):
        await session.prompt(f"WRITE {target}")
        seen = await reader.turn()
    assert not kinds(seen, RequestOpened)
    assert target.exists() and text_of(seen) == "allowed"


async def test_cancel_mid_stream_then_next_turn(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("SLOW")
        await reader.until(TextDelta)
        await session.cancel()
        seen = await reader.turn()
        assert kinds(seen, TurnEnded)[-1].stop == Cancelled()
        assert "slow39" not in text_of(seen)
        await session.prompt("after")
        assert text_of(await reader.turn()) == "Hello world"


async def test_cancel_with_a_permission_pending_answers_it_cancelled(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("HOLD")
        request = (await reader.kind(RequestOpened)).request
        await session.cancel()
        seen = await reader.turn()
        assert kinds(seen, RequestClosed)[0].request_id == request.id
        assert kinds(seen, TurnEnded)[-1].stop == Cancelled()
        assert "chose" not in text_of(seen)
        await session.prompt("HOLD")
        request = (await reader.kind(RequestOpened)).request
        await session.answer(request.id, Answer.permission(PermissionChoice.ALLOW_ALWAYS))
        assert text_of(await reader.turn()) == "chose always"


async def test_fs_read_inside_and_outside_and_missing(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("inside")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret")
    try:
        async with opened(tmp_path) as (session, reader):
            await session.prompt(f"READ {tmp_path / 'in.txt'}")
            assert text_of(await reader.turn()) == "content='inside'"
            await session.prompt(f"READ {tmp_path / 'missing.txt'}")
            assert text_of(await reader.turn()) == "error=-32002"
            await session.prompt(f"READ {outside}")
            assert text_of(await reader.turn()) == "error=-32602"
    finally:
        outside.unlink()


async def test_terminal_runs_a_real_process_and_its_output_fills_the_tool(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("TERM")
        seen = await reader.turn()
    assert text_of(seen) == "exit=0 out=term-out"
    tools = [k.tool for k in kinds(seen, ToolUpdated)]
    assert tools[-1].id == "x1" and tools[-1].output == "term-out"


async def test_a_terminal_streams_its_output_into_the_running_tool(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("TERMSTREAM")
        seen = await reader.turn()
    tool_events = [e.kind for e in seen if isinstance(e.kind, (ToolUpdated, ToolOutputDelta))]
    first, last = tool_events[0], tool_events[-1]
    assert isinstance(first, ToolUpdated) and first.tool.status is ToolStatus.RUNNING
    assert isinstance(last, ToolUpdated) and last.tool.status is ToolStatus.COMPLETED
    deltas = [k for k in tool_events if isinstance(k, ToolOutputDelta)]
    assert len(deltas) >= 2 and {d.tool_id for d in deltas} == {"x2"}  # "two" and "three" came later
    assert tool_events.index(deltas[-1]) < len(tool_events) - 1  # all before the final snapshot
    # the first snapshot's output plus the deltas is the whole output, once; the final snapshot keeps it
    assert (first.tool.output or "") + "".join(d.text for d in deltas) == "one\ntwo\nthree\n"
    assert last.tool.output == "one\ntwo\nthree\n"


async def test_a_terminal_streams_at_most_its_byte_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import anyagent_acp.client

    monkeypatch.setattr(anyagent_acp.client, "STREAM_LIMIT", 5)
    async with opened(tmp_path) as (session, reader):
        await session.prompt("TERMSTREAM")
        seen = await reader.turn()
    first = kinds(seen, ToolUpdated)[0].tool
    streamed = "".join(d.text for d in kinds(seen, ToolOutputDelta))
    assert len(streamed.encode()) <= 5 and (first.output or "") + streamed != "one\ntwo\nthree\n"
    assert kinds(seen, ToolUpdated)[-1].tool.output == "one\ntwo\nthree\n"  # the snapshot still has it all


async def test_agent_turn_after_a_prompt_is_inferred_by_the_quiet_window(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).quiet_window(0.5)
    async with opened(tmp_path, options) as (session, reader):
        await session.prompt("AGENTTURN")
        first = await reader.turn()
        assert text_of(first) == "first"
        with anyio.fail_after(10):
            second = await reader.turn()
    assert text_of(second) == "by myself"
    stop = kinds(second, TurnEnded)[-1].stop
    assert stop == Completed(source=stop.source) and stop.source.value == "inferred"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell and signals")
async def test_close_stops_a_terminal_the_agent_left_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "terminal.pid"
    async with opened(tmp_path) as (session, reader):
        await session.prompt(f"TERMLONG {pid_file}")
        assert text_of(await reader.turn()) == "left a terminal running"
        with anyio.fail_after(10):
            while not pid_file.exists() or not pid_file.read_text().strip():
                await anyio.sleep(0.02)
        pid = int(pid_file.read_text())
        closing = anyio.current_time()
    # the session and its runtime are closed: nothing waited for the command's own end (60 s)
    assert anyio.current_time() - closing < 5
    # killed with its group; its reaper (Linux) or init takes the zombie a moment later
    with anyio.fail_after(3):
        while _living(pid):
            await anyio.sleep(0.02)


def _living(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_a_permission_whose_options_share_a_kind_is_a_question_with_every_option(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("CHOOSE")
        request = (await reader.kind(RequestOpened)).request
        assert isinstance(request, QuestionRequest)
        (question,) = request.questions
        assert question.text == "Which colour?"
        assert [(c.id, c.label) for c in question.choices] == [("red", "Red"), ("blue", "Blue"), ("neither", "Neither")]
        assert not question.multi_select and not question.allows_free_text
        await session.answer(request.id, Answer.question([QuestionAnswer.choices(["blue"])]))
        rest = await reader.turn()
        assert text_of(rest) == "picked blue"
        assert kinds(rest, RequestClosed)[0].request_id == request.id
        # the tool it asked about is still shown
        assert any(event.tool.id == "c1" for event in kinds(reader.seen, ToolUpdated))
        # declined by a cancel: the wire hears `cancelled`
        await session.prompt("CHOOSE")
        request = (await reader.kind(RequestOpened)).request
        await session.cancel()
        seen = await reader.turn()
        assert kinds(seen, RequestClosed)[0].request_id == request.id
        assert "picked red" not in text_of(seen) and "picked blue" not in text_of(seen)


async def test_auto_approve_leaves_a_choice_to_the_user(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).permission_mode(PermissionMode.AUTO_APPROVE)
    async with opened(tmp_path, options) as (session, reader):
        await session.prompt("CHOOSE")
        request = (await reader.kind(RequestOpened)).request
        assert isinstance(request, QuestionRequest)
        await session.answer(request.id, Answer.question([QuestionAnswer.choices(["red"])]))
        assert text_of(await reader.turn()) == "picked red"


async def test_the_agents_own_cancelled_after_a_denial_is_not_a_user_cancel(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("DENYSTOP")
        request = (await reader.kind(RequestOpened)).request
        await session.answer(request.id, Answer.permission(PermissionChoice.DENY_ONCE))
        seen = await reader.turn()
        assert kinds(seen, TurnEnded)[-1].stop == Completed()
        # a user cancel with the same request pending still reads Cancelled
        await session.prompt("DENYSTOP")
        await reader.kind(RequestOpened)
        await session.cancel()
        assert kinds(await reader.turn(), TurnEnded)[-1].stop == Cancelled()


async def test_the_agents_own_cancelled_without_a_cancel_or_a_denial_fails_the_turn(tmp_path: Path) -> None:
    async with opened(tmp_path) as (session, reader):
        await session.prompt("SELFSTOP")
        seen = await reader.turn()
    stop = kinds(seen, TurnEnded)[-1].stop
    assert isinstance(stop, Failed) and "cancelled" in stop.message
    assert text_of(seen) == "stopping"
