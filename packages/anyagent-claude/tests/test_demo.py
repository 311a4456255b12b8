"""The demo agent (``anyagent_claude.demo``) through the real Claude adapter, and ``anyagent demo``.

The agent is a real subprocess launched by the adapter exactly like ``claude``; it edits a real
``calc.py`` on allow and leaves it alone on deny. The CLI tests run ``anyagent demo`` as a
subprocess: auto-allowed, denied interactively, and the mock fallback without anyagent-claude.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from claude_harness import WAIT

from anyagent import (
    Answer,
    Cancelled,
    Completed,
    ContextUsage,
    FileDiff,
    PermissionChoice,
    PermissionRequest,
    ReasoningDelta,
    RequestOpened,
    Runtime,
    Session,
    SessionOptions,
    ToolKind,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    TurnEnded,
)
from anyagent_claude import plugin
from anyagent_claude.demo import (
    CALC_PY,
    DONE,
    INTRO,
    LEFT_ALONE,
    NEW,
    OLD,
    THINKING,
    VERSION,
    demo_installation,
    demo_project,
)
from anyagent_testkit.events import EventReader, kinds, text_of

FIXED = CALC_PY.replace(OLD, NEW)


class Demo:
    """A session with the demo agent working on a fresh project in ``tmp_path``."""

    def __init__(self, tmp_path: Path) -> None:
        self.installation = demo_installation(tmp_path / "bin")
        self.project = demo_project(tmp_path / "project")
        self.calc = self.project / "calc.py"

    @asynccontextmanager
    async def open(self, options: SessionOptions | None = None) -> AsyncIterator[tuple[Session, EventReader]]:
        async with Runtime(plugins=[plugin]) as runtime:
            session, events = await runtime.open(self.installation, options or SessionOptions.in_dir(self.project))
            async with session:
                yield session, EventReader(events, timeout=WAIT)


async def play(session: Session, reader: EventReader, choice: PermissionChoice | None) -> list[Any]:
    """Prompt once and read the whole turn, answering a permission request with ``choice``."""
    start = len(reader.seen)
    await session.prompt("the test for add() fails; fix it")
    while True:
        event = await reader.next()
        if isinstance(event.kind, RequestOpened):
            assert choice is not None, "the agent asked although it should not have"
            await session.answer(event.kind.request.id, Answer.permission(choice))
        elif isinstance(event.kind, TurnEnded):
            return reader.seen[start:]


def last_tool(events: list[Any]) -> ToolUpdate:
    return kinds(events, ToolUpdated)[-1].tool


def reasoning_of(events: list[Any]) -> str:
    return "".join(kind.text for kind in kinds(events, ReasoningDelta))


# ---------------------------------------------------------------------------------------------
# through the adapter


@pytest.mark.anyio
async def test_allow_applies_the_edit_and_reports_diff_usage_and_completion(tmp_path: Path) -> None:
    demo = Demo(tmp_path)
    async with demo.open() as (session, reader):
        turn = await play(session, reader, PermissionChoice.ALLOW_ONCE)

    assert reasoning_of(turn) == THINKING
    assert text_of(turn) == INTRO + DONE
    (request,) = [opened.request for opened in kinds(turn, RequestOpened)]
    assert isinstance(request, PermissionRequest)
    assert request.tool.kind is ToolKind.EDIT
    assert request.tool.input.path == str(demo.calc)
    assert request.options == (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS, PermissionChoice.DENY_ONCE)
    tool = last_tool(turn)
    assert tool.status is ToolStatus.COMPLETED
    assert tool.diffs == (FileDiff(str(demo.calc), NEW, OLD),)
    assert kinds(turn, ContextUsage) == [ContextUsage(18_432, 200_000, 0.0123)]
    assert kinds(turn, TurnEnded)[-1].stop == Completed()
    assert demo.calc.read_text(encoding="utf-8") == FIXED


@pytest.mark.anyio
async def test_deny_leaves_the_file_alone_and_the_turn_completes(tmp_path: Path) -> None:
    demo = Demo(tmp_path)
    async with demo.open() as (session, reader):
        turn = await play(session, reader, PermissionChoice.DENY_ONCE)

    tool = last_tool(turn)
    assert tool.status is ToolStatus.FAILED
    assert tool.diffs == ()
    assert tool.output == "The user denied this tool use."
    assert text_of(turn) == INTRO + LEFT_ALONE
    assert kinds(turn, TurnEnded)[-1].stop == Completed()
    assert demo.calc.read_text(encoding="utf-8") == CALC_PY


@pytest.mark.anyio
async def test_a_second_prompt_finds_the_file_already_fixed(tmp_path: Path) -> None:
    demo = Demo(tmp_path)
    async with demo.open() as (session, reader):
        await play(session, reader, PermissionChoice.ALLOW_ONCE)
        second = await play(session, reader, PermissionChoice.ALLOW_ONCE)

    tool = last_tool(second)
    assert tool.status is ToolStatus.FAILED
    assert tool.output is not None and "String to replace not found" in tool.output
    assert "The edit did not apply" in text_of(second)
    assert kinds(second, TurnEnded)[-1].stop == Completed()
    # the session cost accumulates over turns, like the real CLI's total_cost_usd
    assert kinds(second, ContextUsage) == [ContextUsage(18_432, 200_000, 0.0246)]
    assert demo.calc.read_text(encoding="utf-8") == FIXED


@pytest.mark.anyio
async def test_accept_edits_mode_edits_without_asking(tmp_path: Path) -> None:
    demo = Demo(tmp_path)
    options = SessionOptions.in_dir(demo.project).configure("mode", "acceptEdits")
    async with demo.open(options) as (session, reader):
        turn = await play(session, reader, None)

    assert kinds(turn, RequestOpened) == []
    assert last_tool(turn).diffs == (FileDiff(str(demo.calc), NEW, OLD),)
    assert demo.calc.read_text(encoding="utf-8") == FIXED


@pytest.mark.anyio
async def test_cancel_during_the_permission_prompt_ends_the_turn_and_the_session_goes_on(tmp_path: Path) -> None:
    demo = Demo(tmp_path)
    async with demo.open() as (session, reader):
        await session.prompt("fix it")
        await reader.until(RequestOpened)
        mark = len(reader.seen)
        await session.cancel()
        ended = await reader.until(TurnEnded)
        assert isinstance(ended.kind, TurnEnded)
        assert ended.kind.stop == Cancelled()
        # the agent stopped at the interrupt: it never went on to say it left the file alone
        assert LEFT_ALONE not in text_of(reader.seen[mark:])
        assert demo.calc.read_text(encoding="utf-8") == CALC_PY
        again = await play(session, reader, PermissionChoice.ALLOW_ONCE)

    assert kinds(again, TurnEnded)[-1].stop == Completed()
    assert demo.calc.read_text(encoding="utf-8") == FIXED


@pytest.mark.anyio
async def test_cancel_while_streaming_stops_before_the_tool_call(tmp_path: Path) -> None:
    demo = Demo(tmp_path)
    async with demo.open() as (session, reader):
        await session.prompt("fix it")
        await reader.until(ReasoningDelta)
        await session.cancel()
        turn = await reader.turn()

    assert kinds(turn, TurnEnded)[-1].stop == Cancelled()
    assert kinds(turn, RequestOpened) == []
    assert kinds(turn, ToolUpdated) == []
    assert demo.calc.read_text(encoding="utf-8") == CALC_PY


# ---------------------------------------------------------------------------------------------
# the agent's own wire


def test_the_agent_answers_control_requests_and_ignores_unknown_flags(tmp_path: Path) -> None:
    launcher = demo_installation(tmp_path / "bin").executable_path
    requests = [
        {"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize", "hooks": {}}},
        {"type": "control_request", "request_id": "r2", "request": {"subtype": "get_binary_version"}},
        {"type": "control_request", "request_id": "r3", "request": {"subtype": "get_usage"}},
        {"type": "control_request", "request_id": "r4", "request": {"subtype": "rewind_files"}},
    ]
    stdin = "not json\n" + "".join(json.dumps(frame) + "\n" for frame in requests)
    result = subprocess.run(
        [str(launcher), "-p", "--no-such-flag", "value", "--session-id", "s-1"],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    answers = {
        frame["response"]["request_id"]: frame["response"] for frame in map(json.loads, result.stdout.splitlines())
    }
    assert answers["r1"]["subtype"] == "success"
    assert answers["r1"]["response"]["claude_code_version"] == VERSION
    assert answers["r2"]["response"] == {"version": VERSION}
    assert answers["r3"]["response"]["rate_limits_available"] is False
    assert answers["r4"]["subtype"] == "error"
    assert "rewind_files" in answers["r4"]["error"]
    assert "not JSON" in result.stderr


def test_the_launcher_runs_this_interpreter(tmp_path: Path) -> None:
    installation = demo_installation(tmp_path / "bin")
    assert installation.id == "claude"
    assert os.access(installation.executable_path, os.X_OK) or sys.platform == "win32"
    result = subprocess.run(
        [str(installation.executable_path), "--version"], capture_output=True, text=True, timeout=30
    )
    assert result.stdout.strip() == f"{VERSION} (Claude Code)"


# ---------------------------------------------------------------------------------------------
# `anyagent demo`


def anyagent(*args: str, stdin: str = "", code: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "ANYAGENT_NO_LOGIN_SHELL": "1"}
    command = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "anyagent.cli", *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60, env=env)


def test_demo_yes_runs_the_real_adapter_against_the_agent_process() -> None:
    result = anyagent("demo", "--yes")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for expected in (
        "the real Claude adapter talking to a scripted agent process",
        "thinking: " + THINKING,
        "? permission: Edit ",
        "answered: allow once",
        "✓ Edit ",
        "-    return a - b",
        "+    return a + b",
        DONE,
        "context: 18,432 of 200,000 tokens (9%), $0.0123",
        "— turn done",
        "calc.py on disk now: return a + b",
    ):
        assert expected in out, f"{expected!r} missing from:\n{out}"


def test_demo_asks_interactively_and_a_deny_leaves_the_file_alone() -> None:
    result = anyagent("demo", stdin="3\n")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "[1] allow once  [2] allow always  [3] deny > 3" in out
    assert "✗ Edit " in out
    assert "The user denied this tool use." in out
    assert LEFT_ALONE in out
    # the proposed diff is shown once, with the question; a denied edit shows no applied diff
    assert out.count("+    return a + b") == 1
    assert out.index("+    return a + b") < out.index("[3] deny > 3")
    assert "calc.py on disk now: return a - b" in out
    assert "— turn done" in out


def test_demo_falls_back_to_the_mock_without_anyagent_claude() -> None:
    hide_claude = "import sys; sys.modules['anyagent_claude'] = None; from anyagent.cli import main; sys.exit(main())"
    result = anyagent("demo", "--yes", code=hide_claude)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "pip install anyagent-claude" in out
    assert "real Claude adapter" not in out
    assert "+    return a + b" in out
    assert "— turn done" in out
