"""Subagent frames in orders and company the live run did not produce, made from the real
``subagent-spawn-and-wait`` recording: a child whose frames come before codex names its thread,
and a thread no spawn of ours named (its frames, its turn end) amid the turn."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from codex_harness import RECORDINGS, Harness, replay_shim, runtime_with_env
from codex_scenarios import CHILD_TASK, ECHO, opened

from anyagent import (
    AgentInstallation,
    Answer,
    Completed,
    McpTool,
    PermissionChoice,
    PermissionRequest,
    RequestOpened,
    ToolUpdated,
    TurnEnded,
    UserMessage,
)
from anyagent_testkit.events import kinds, text_of

pytestmark = pytest.mark.anyio

STRANGER = "thread-nobody-spawned"


def _frames() -> list[dict[str, Any]]:
    lines = (RECORDINGS / "subagent-spawn-and-wait.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _is(frame: dict[str, Any], method: str, item_type: str | None = None, tool: str | None = None) -> bool:
    item = (frame.get("params") or {}).get("item") or {}
    return (
        frame.get("method") == method
        and (item_type is None or item.get("type") == item_type)
        and (tool is None or item.get("tool") == tool)
    )


def _child_thread(frames: list[dict[str, Any]]) -> str:
    spawned = next(f for f in frames if _is(f, "item/completed", "collabAgentToolCall", "spawnAgent"))
    [thread] = spawned["params"]["item"]["receiverThreadIds"]
    return str(thread)


async def _replay(frames: list[dict[str, Any]], tmp_path: Path) -> tuple[list[Any], list[Any]]:
    recording = tmp_path / "derived.jsonl"
    recording.write_text("".join(json.dumps(frame) + "\n" for frame in frames), encoding="utf-8")
    shim = replay_shim(tmp_path / "bin", recording)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with runtime_with_env(dict(os.environ)) as runtime:
        h = Harness(runtime, AgentInstallation.at("codex", shim), workspace)
        async with opened(h) as (session, reader):
            await session.prompt("SPAWN a helper")
            turn = await reader.turn()
            await session.prompt("after the helper")
            await reader.turn()
            return turn, reader.seen


async def test_child_frames_before_codex_names_the_thread_go_to_the_spawn_in_flight(tmp_path: Path) -> None:
    frames = _frames()
    child = _child_thread(frames)
    named = next(i for i, f in enumerate(frames) if _is(f, "item/completed", "collabAgentToolCall", "spawnAgent"))
    spawn_completed = frames.pop(named)
    answered = next(
        i
        for i, f in enumerate(frames)
        if _is(f, "item/completed", "agentMessage") and f["params"].get("threadId") == child
    )
    frames.insert(answered + 1, spawn_completed)  # codex names the child only after it answered
    turn, _seen = await _replay(frames, tmp_path)
    spawn_id = spawn_completed["params"]["item"]["id"]
    under_spawn = [e for e in turn if e.turn_info is not None and e.turn_info.parent_tool_id == spawn_id]
    assert [m.text for m in kinds(under_spawn, UserMessage)] == [CHILD_TASK]
    assert text_of(turn, spawn_id) == ECHO + CHILD_TASK


async def test_a_thread_no_spawn_named_never_shows_nor_ends_the_turn(tmp_path: Path) -> None:
    frames = _frames()
    child = _child_thread(frames)
    strangers = []
    for frame in frames:
        params = frame.get("params") or {}
        if params.get("threadId") == child and frame.get("method") != "thread/tokenUsage/updated":
            text = json.dumps(frame).replace(child, STRANGER).replace(CHILD_TASK, "STRANGER")
            strangers.append(json.loads(text.replace('"msg_fake_', '"msg_stranger_')))
    assert any(_is(f, "turn/completed") for f in strangers)
    waited = next(i for i, f in enumerate(frames) if _is(f, "item/completed", "collabAgentToolCall", "wait"))
    frames[waited + 1 : waited + 1] = strangers  # no spawn in flight then: nobody's subagent
    turn, seen = await _replay(frames, tmp_path)
    assert "STRANGER" not in json.dumps([str(e.kind) for e in seen])
    assert text_of(turn).startswith("The tool finished") and CHILD_TASK in text_of(turn)
    assert [type(e.kind) for e in turn].count(TurnEnded) == 1
    assert isinstance(kinds(turn, TurnEnded)[0].stop, Completed)
    assert len(kinds(seen, TurnEnded)) == 2, "the stranger's turn end ended nothing"


async def test_a_subagents_mcp_tool_approval_comes_under_its_spawn_call(tmp_path: Path) -> None:
    frames = _frames()
    child = _child_thread(frames)
    started = next(i for i, f in enumerate(frames) if _is(f, "turn/started") and f["params"].get("threadId") == child)
    meta = {"codex_approval_kind": "mcp_tool_call", "persist": ["session"], "tool_name": "lookup"}
    params = {"threadId": child, "serverName": "catalogue", "mode": "form", "_meta": meta, "message": "Allow?"}
    asked = {"method": "mcpServer/elicitation/request", "id": 900, "params": params}
    declined = {"_sent": {"id": 900, "result": {"action": "decline", "content": None}}}
    frames[started + 1 : started + 1] = [asked, declined]
    recording = tmp_path / "derived.jsonl"
    recording.write_text("".join(json.dumps(frame) + "\n" for frame in frames), encoding="utf-8")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with runtime_with_env(dict(os.environ)) as runtime:
        h = Harness(runtime, AgentInstallation.at("codex", replay_shim(tmp_path / "bin", recording)), workspace)
        async with opened(h) as (session, reader):
            await session.prompt("SPAWN a helper")
            event = await reader.until(RequestOpened)
            request = event.kind.request
            assert isinstance(request, PermissionRequest) and request.tool.kind == McpTool("catalogue", "lookup")
            spawn = next(u.tool for u in kinds(reader.seen, ToolUpdated) if u.tool.title == "spawnAgent")
            assert event.turn_info is not None and event.turn_info.parent_tool_id == spawn.id
            await session.answer(request.id, Answer.permission(PermissionChoice.DENY_ONCE))
            turn = await reader.turn()
            assert isinstance(kinds(turn, TurnEnded)[0].stop, Completed)
