"""Recorded tier: the real agy 1.1.x recordings (``recordings/``, see PROVENANCE.md) replayed
through the real adapter by the testkit replayer, one replayer process per agy launch.

Each test drives the public API and checks: every turn ends exactly once, with the recorded stop
reason; tools, text and usage are what the recording says.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from agy_support import RECORDINGS, WAIT, launched, processes, replay_shim, runtime

from anyagent import (
    AgentInstallation,
    Authenticated,
    AuthKind,
    AuthRequired,
    Capability,
    Completed,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    Events,
    Failed,
    InvalidConfiguration,
    MessageEnded,
    PermissionMode,
    Queued,
    Session,
    SessionOptions,
    TextDelta,
    ToolKind,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
)
from anyagent_testkit.events import EventReader, kinds, text_of

pytestmark = pytest.mark.anyio


def _frames(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (RECORDINGS / name).read_text(encoding="utf-8").splitlines() if line]


def _recorded_usage(name: str) -> list[int]:
    """The last agent_response usage (total_tokens) before each result, as recorded."""
    usages, last = [], None
    for frame in _frames(name):
        step = frame.get("step_update") or {}
        if step.get("step_type") == "agent_response" and "usage" in step:
            last = step["usage"]["total_tokens"]
        if frame.get("event") == "result":
            usages.append(last)
    return usages


def _recorded_text(name: str) -> list[str]:
    """Each result's ``response`` (the turn's text, as agy summed it)."""
    return [frame["result"]["response"] for frame in _frames(name) if frame.get("event") == "result"]


@asynccontextmanager
async def _open(
    tmp_path: Path,
    name: str,
    options: SessionOptions | None = None,
    *,
    dies: tuple[int, ...] = (),
    realtime: bool = False,
) -> AsyncIterator[tuple[Session, EventReader]]:
    shim = replay_shim(tmp_path / "bin", RECORDINGS / name, dies, realtime=realtime)
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    async with runtime() as rt:
        session, events = await rt.open(
            AgentInstallation.at("antigravity", shim), options or SessionOptions.in_dir(workspace)
        )
        async with session:
            yield session, EventReader(events, timeout=WAIT)


def _ended_once(turn: list[Any]) -> TurnEnded:
    ends = kinds(turn, TurnEnded)
    assert len(ends) == 1, ends
    return ends[0]


def _tools(turn: list[Any]) -> dict[str, list[Any]]:
    """Every tool's snapshots, by id, in order."""
    found: dict[str, list[Any]] = {}
    for update in kinds(turn, ToolUpdated):
        found.setdefault(update.tool.id, []).append(update.tool)
    return found


async def test_handshake_reports_the_conversation_and_the_headless_capabilities(tmp_path: Path) -> None:
    async with _open(tmp_path, "01-handshake.jsonl") as (session, _):
        info = session.info()
        assert info.resume_token == "34260617-a921-4320-bc93-abda0e560c75"
        caps = info.details.capabilities
        assert caps.supports(Capability.RESUME) and caps.supports(Capability.CONTEXT_USAGE)
        for missing in (Capability.PERMISSIONS, Capability.QUESTIONS, Capability.STEER, Capability.IMAGES):
            assert not caps.supports(missing)
        assert info.details.auth == Authenticated(AuthKind.SUBSCRIPTION)
        assert {o.id: o.live for o in info.details.config_options} == {"model": False, "mode": False}
    assert launched(tmp_path / "bin") == [["--input-format=stream-json", "--output-format=stream-json"]]


async def test_pong_is_one_text_turn_with_the_recorded_usage(tmp_path: Path) -> None:
    async with _open(tmp_path, "02-pong.jsonl") as (session, reader):
        await session.prompt("Reply with exactly the word pong and nothing else.")
        turn = await reader.turn()
        assert _ended_once(turn).stop == Completed()
        assert text_of(turn) == _recorded_text("02-pong.jsonl")[0] == "pong\n"
        assert kinds(turn, MessageEnded) == [MessageEnded("step-1")]
        assert kinds(turn, ContextUsage) == [ContextUsage(13763)] == [ContextUsage(_recorded_usage("02-pong.jsonl")[0])]


async def test_ask_mode_tools_are_denied_by_agy_and_show_failed(tmp_path: Path) -> None:
    async with _open(tmp_path, "03-tool-ask.jsonl") as (session, reader):
        await session.prompt("Create a file named probe.txt containing the word hello. Use your tools.")
        turn = await reader.turn()
        assert _ended_once(turn).stop == Completed()
        tools = _tools(turn)
        assert list(tools) == ["step-2", "step-4"]
        write, run = tools["step-2"], tools["step-4"]
        assert [t.status for t in write] == [ToolStatus.RUNNING, ToolStatus.FAILED]
        assert write[-1].kind is ToolKind.EDIT
        assert write[-1].input.path == "~/.gemini/antigravity-cli/scratch/probe.txt"
        assert [t.status for t in run] == [ToolStatus.RUNNING, ToolStatus.FAILED]
        assert run[-1].kind is ToolKind.EXECUTE
        assert run[-1].input.command is not None and run[-1].input.command.startswith("mkdir -p")
        assert "user denied permission" in (run[-1].output or "")
        assert text_of(turn) == ""  # the recorded turn said nothing
        assert kinds(turn, ContextUsage) == [ContextUsage(_recorded_usage("03-tool-ask.jsonl")[0])]
    assert launched(tmp_path / "bin")[0] == ["--input-format=stream-json", "--output-format=stream-json"]


async def test_auto_approve_launches_skipping_permissions_and_the_tool_completes(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).permission_mode(PermissionMode.AUTO_APPROVE)
    async with _open(tmp_path, "04-tool-skip.jsonl", options) as (session, reader):
        await session.prompt("Create a file named probe.txt containing the word hello. Use your tools.")
        turn = await reader.turn()
        assert _ended_once(turn).stop == Completed()
        [write] = _tools(turn).values()
        assert [t.status for t in write] == [ToolStatus.RUNNING, ToolStatus.COMPLETED]
        assert text_of(turn) == _recorded_text("04-tool-skip.jsonl")[0]
        assert kinds(turn, MessageEnded) == [MessageEnded("step-3")]  # two deltas, one message
    assert "--dangerously-skip-permissions" in launched(tmp_path / "bin")[0]


@pytest.mark.parametrize("name", ["05-question.jsonl", "05-question-answer.jsonl"])
async def test_a_question_is_skipped_by_agy_with_a_warning(tmp_path: Path, name: str) -> None:
    async with _open(tmp_path, name) as (session, reader):
        await session.prompt("Use your ask_question tool to ask me which colour I prefer, red or blue.")
        turn = await reader.turn()
        assert _ended_once(turn).stop == Completed()
        [warning] = [d.diagnostic for d in kinds(turn, Diagnostic) if d.diagnostic.code == DiagnosticCode.UNSUPPORTED]
        assert "ask_question" in warning.message
        assert "skipped" in text_of(turn)
        if name == "05-question-answer.jsonl":  # the answer comes as the next prompt
            await session.prompt("blue")
            second = await reader.turn()
            assert _ended_once(second).stop == Completed()
            assert text_of(second) == "You prefer **blue**!\n"
            assert kinds(second, ContextUsage) == [ContextUsage(_recorded_usage(name)[1])]


async def test_a_mid_turn_prompt_queues_and_runs_as_its_own_turn(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).permission_mode(PermissionMode.AUTO_APPROVE)
    async with _open(tmp_path, "06-steer.jsonl", options, realtime=True) as (session, reader):
        await session.prompt("Run the shell command `sleep 25` using your tool, then tell me the current date.")
        await reader.kind(ToolUpdated)
        delivery = await session.prompt("Actually, after the sleep, tell me the time instead of the date.")
        assert isinstance(delivery.kind, Queued)
        first = await reader.turn()
        assert _ended_once(first).stop == Completed()
        [run] = _tools(first).values()
        assert [t.status for t in run][-1] is ToolStatus.COMPLETED
        assert run[-1].output == "Wed Sep  2 21:09:10 CDT 2026\n"
        second = await reader.turn()
        assert _ended_once(second).stop == Completed()
        assert "21:09:10" in text_of(second)
        assert [u.used_tokens for u in kinds(first + second, ContextUsage)] == _recorded_usage("06-steer.jsonl")


async def test_cancel_kills_agy_and_resumes_the_same_conversation(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).permission_mode(PermissionMode.AUTO_APPROVE)
    async with _open(tmp_path, "07-cancel.jsonl", options) as (session, reader):
        await session.prompt("Run the shell command `sleep 25` using your tool, then tell me the current date.")
        running = await reader.kind(ToolUpdated)
        assert running.tool.status is ToolStatus.RUNNING
        await session.cancel()
        turn = await reader.turn()
        end = _ended_once(turn)
        assert type(end.stop).__name__ == "Cancelled"
        statuses = [u.tool.status for u in kinds(reader.seen, ToolUpdated) if u.tool.id == running.tool.id]
        assert statuses[-1] is ToolStatus.CANCELLED  # the engine ends the tool with the turn
        assert session.info().resume_token == "a63be2e1-bc91-4e0d-aeb7-52cb39883ea7"
    argvs = launched(tmp_path / "bin")
    assert len(argvs) == processes(RECORDINGS / "07-cancel.jsonl") == 2
    assert argvs[1][argvs[1].index("--conversation") + 1] == "a63be2e1-bc91-4e0d-aeb7-52cb39883ea7"
    assert "--dangerously-skip-permissions" in argvs[1]


@pytest.mark.parametrize("name", ["08-resume-b.jsonl", "08-resume-c.jsonl"])
async def test_resume_launches_with_the_conversation_and_continues_it(tmp_path: Path, name: str) -> None:
    # 08-resume-a made the conversation; b and c continue it (c was recorded with --continue)
    async with _open(tmp_path / "a", "08-resume-a.jsonl") as (session, reader):
        await session.prompt("Remember the word pineapple. Reply ok.")
        assert text_of(await reader.turn()) == "ok\n"
        token = session.info().resume_token
    assert token == "d3867aef-26bd-4510-bdcf-6f0ac6e265be"
    options = SessionOptions.in_dir(tmp_path).resume(token)
    async with _open(tmp_path / "b", name, options) as (session, reader):
        assert session.info().resume_token == token
        await session.prompt("What word did I ask you to remember?")
        turn = await reader.turn()
        assert _ended_once(turn).stop == Completed()
        assert "pineapple" in text_of(turn)
        assert text_of(turn) == _recorded_text(name)[0]
    argv = launched(tmp_path / "b" / "bin")[0]
    assert argv[argv.index("--conversation") + 1] == token


async def test_an_unknown_model_is_invalid_configuration_naming_agys_reason(tmp_path: Path) -> None:
    shim = replay_shim(tmp_path / "bin", RECORDINGS / "09-config.jsonl")
    async with runtime() as rt:
        agent = AgentInstallation.at("antigravity", shim)
        # process 1: a model whose effort conflicts; process 2: a model agy does not know
        for model in ("gemini-3.8-flash-low", "not-a-real-model"):
            options = SessionOptions.in_dir(tmp_path).configure("model", model)
            with pytest.raises(InvalidConfiguration, match="invalid model selection") as caught:
                await rt.open(agent, options)
            assert model in str(caught.value)
    assert [argv[2:] for argv in launched(tmp_path / "bin")] == [
        ["--model=gemini-3.8-flash-low"],
        ["--model=not-a-real-model"],
    ]


async def test_mode_is_a_creation_time_flag_and_configure_says_reopen(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).configure("mode", "plan")
    async with _open(tmp_path, "09-config-b.jsonl", options) as (session, reader):
        assert session.info().configuration["mode"] == "plan"
        with pytest.raises(InvalidConfiguration, match=r"creation-only.*reopen with SessionOptions\.resume"):
            await session.configure("mode", "default")
        await session.prompt("Reply with exactly the word pong and nothing else.")
        turn = await reader.turn()
        assert _ended_once(turn).stop == Completed()
        assert text_of(turn) == "pong\n"
    assert "--mode=plan" in launched(tmp_path / "bin")[0]


async def test_logged_out_is_auth_required_with_the_agy_login(tmp_path: Path) -> None:
    shim = replay_shim(tmp_path / "bin", RECORDINGS / "10-logged-out.jsonl")
    async with runtime() as rt:
        with pytest.raises(AuthRequired) as caught:
            await rt.open(AgentInstallation.at("antigravity", shim), SessionOptions.in_dir(tmp_path))
    assert "authentication failed" in str(caught.value)
    assert [method.command for method in caught.value.login] == [("agy",)]  # type: ignore[attr-defined]


async def test_a_subagent_shows_as_a_subagent_tool(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).permission_mode(PermissionMode.AUTO_APPROVE)
    async with _open(tmp_path, "12-subagent.jsonl", options) as (session, reader):
        await session.prompt("Define a subagent that replies pong, invoke it, and tell me what it said.")
        turn = await reader.turn()
        assert _ended_once(turn).stop == Completed()
        tools = _tools(turn)
        assert [t.kind for t in tools["step-2"]] == [ToolKind.OTHER, ToolKind.OTHER]  # define_subagent
        assert tools["step-2"][-1].output is not None and "defined successfully" in tools["step-2"][-1].output
        invoke = tools["step-4"]
        assert [t.status for t in invoke] == [ToolStatus.RUNNING, ToolStatus.COMPLETED]
        assert invoke[-1].kind is ToolKind.SUBAGENT and invoke[-1].input.description == "ping"
        assert text_of(turn) == _recorded_text("12-subagent.jsonl")[0]
        assert len(kinds(turn, MessageEnded)) == 2
        assert kinds(turn, ContextUsage) == [ContextUsage(_recorded_usage("12-subagent.jsonl")[0])]


async def test_a_slash_command_fails_the_turn_with_agys_reason(tmp_path: Path) -> None:
    async with _open(tmp_path, "13-slash.jsonl", dies=(1,)) as (session, reader):
        await session.prompt("/help")
        turn = await reader.turn()
        end = _ended_once(turn)
        assert isinstance(end.stop, Failed)
        assert "unavailable with --input-format stream-json" in end.stop.message
        assert kinds(turn, TextDelta) == []


def test_every_recording_is_replayed_by_a_test() -> None:
    used = {
        "01-handshake", "02-pong", "03-tool-ask", "04-tool-skip", "05-question", "05-question-answer", "06-steer",
        "07-cancel", "08-resume-a", "08-resume-b", "08-resume-c", "09-config", "09-config-b", "10-logged-out",
        "12-subagent", "13-slash", "acp-02-pong",
    }  # fmt: skip
    documented = {"acp-01-handshake", "acp-03-authenticate"}  # see PROVENANCE.md
    assert {path.stem for path in RECORDINGS.glob("*.jsonl")} == used | documented


def _unused(events: Events) -> None:  # keeps the import list honest for type checkers
    del events
