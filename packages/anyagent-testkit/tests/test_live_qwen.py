"""Live: the pinned Qwen Code CLI as an ACP agent (``qwen --acp``) over raw JSON-RPC against the
loopback fake model (OpenAI Chat Completions): a text prompt, and full turns with a permission
request (``write_file`` allowed, ``run_shell_command`` allowed and rejected). Run with ``--live``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from anyagent_testkit.fakemodel import ECHO_PREFIX, TOOL_DONE_PREFIX, FakeModel
from anyagent_testkit.live import LiveAgent
from anyagent_testkit.stdio import JsonlProcess

pytestmark = [pytest.mark.live, pytest.mark.anyio]
TIMEOUT = 120.0


async def _call(
    agent: JsonlProcess,
    request_id: int,
    method: str,
    params: dict[str, Any],
    *,
    permission: str | Callable[[dict[str, Any]], str] | None = None,
) -> list[Any]:
    """Send a request and return every frame up to our response. ``session/request_permission`` is
    answered with the option of kind ``permission`` (``allow_once``, ``reject_once``…; a callable
    gets the request frame and returns the kind) when given; any other agent→client request gets -32601."""
    await agent.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    frames: list[Any] = []
    while True:
        frame = await agent.receive(TIMEOUT)
        frames.append(frame)
        if not isinstance(frame, dict):
            continue
        if frame.get("id") == request_id and "method" not in frame:
            return frames
        if frame.get("method") == "session/request_permission" and "id" in frame and permission is not None:
            kind = permission(frame) if callable(permission) else permission
            option = next(o for o in frame["params"]["options"] if o["kind"] == kind)
            outcome = {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}
            await agent.send({"jsonrpc": "2.0", "id": frame["id"], "result": outcome})
        elif "method" in frame and "id" in frame:
            error = {"code": -32601, "message": f"not implemented by the test client: {frame['method']}"}
            await agent.send({"jsonrpc": "2.0", "id": frame["id"], "error": error})


def _updates(frames: list[Any], session_id: str, kind: str) -> list[dict[str, Any]]:
    """The ``session/update`` payloads of ``kind`` for ``session_id``."""
    return [
        frame["params"]["update"]
        for frame in frames
        if isinstance(frame, dict)
        and frame.get("method") == "session/update"
        and frame["params"]["sessionId"] == session_id
        and frame["params"]["update"].get("sessionUpdate") == kind
    ]


def _text(frames: list[Any], session_id: str) -> str:
    return "".join(u["content"]["text"] for u in _updates(frames, session_id, "agent_message_chunk"))


def _permission_requests(frames: list[Any]) -> list[dict[str, Any]]:
    return [f for f in frames if isinstance(f, dict) and f.get("method") == "session/request_permission"]


async def _open_session(qwen: JsonlProcess, workspace: str) -> str:
    """initialize (no fs/terminal: qwen writes and runs locally) and session/new; the session id."""
    capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    client = {"name": "anyagent-testkit", "version": "0.1.0"}
    init = await _call(
        qwen, 1, "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities, "clientInfo": client}
    )
    assert init[-1]["result"]["protocolVersion"] == 1
    created = await _call(qwen, 2, "session/new", {"cwd": workspace, "mcpServers": []})
    return str(created[-1]["result"]["sessionId"])


async def test_qwen_acp_text_prompt(live_agent: Callable[..., LiveAgent], fake_model: FakeModel) -> None:
    timings: dict[str, float] = {}
    started = time.monotonic()
    agent = live_agent("qwen")
    timings["install_s"] = round(time.monotonic() - started, 2)
    async with JsonlProcess.open(agent.command(), env=agent.env, cwd=agent.workspace) as qwen:
        t0 = time.monotonic()
        capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        client = {"name": "anyagent-testkit", "version": "0.1.0"}
        init = await _call(
            qwen, 1, "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities, "clientInfo": client}
        )
        assert init[-1]["result"]["protocolVersion"] == 1
        timings["initialize_s"] = round(time.monotonic() - t0, 2)

        t1 = time.monotonic()
        created = await _call(qwen, 2, "session/new", {"cwd": str(agent.workspace), "mcpServers": []})
        session_id = created[-1]["result"]["sessionId"]
        timings["session_new_s"] = round(time.monotonic() - t1, 2)

        t2 = time.monotonic()
        prompt = [{"type": "text", "text": "hello from the live test"}]
        frames = await _call(qwen, 3, "session/prompt", {"sessionId": session_id, "prompt": prompt})
        timings["text_turn_s"] = round(time.monotonic() - t2, 2)
        assert frames[-1]["result"]["stopReason"] == "end_turn"
        chunks = [
            frame["params"]["update"]["content"]["text"]
            for frame in frames
            if frame.get("method") == "session/update"
            and frame["params"]["sessionId"] == session_id
            and frame["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
        ]
        assert "".join(chunks) == ECHO_PREFIX + "hello from the live test"

    calls = fake_model.model_calls()
    assert len(calls) == 1
    assert calls[0].dialect == "openai-chat"
    assert calls[0].path == "/v1/chat/completions"
    assert calls[0].headers["authorization"].startswith("<redacted")
    print(f"qwen live timings: {timings}")


async def test_qwen_acp_permission_turns(live_agent: Callable[..., LiveAgent], fake_model: FakeModel) -> None:
    timings: dict[str, float] = {}
    agent = live_agent("qwen")
    async with JsonlProcess.open(agent.command(), env=agent.env, cwd=agent.workspace) as qwen:
        session_id = await _open_session(qwen, str(agent.workspace))

        # turn 1: the fake model calls write_file; qwen asks; we allow once; qwen writes the file
        target = agent.workspace / "hello.txt"

        def allow_once(request: dict[str, Any]) -> str:
            assert not target.exists(), "the file was written before the permission was answered"
            return "allow_once"

        t0 = time.monotonic()
        prompt = [{"type": "text", "text": f"please write a file\nWRITE {target} live bytes"}]
        frames = await _call(
            qwen, 3, "session/prompt", {"sessionId": session_id, "prompt": prompt}, permission=allow_once
        )
        timings["write_turn_s"] = round(time.monotonic() - t0, 2)
        assert frames[-1]["result"]["stopReason"] == "end_turn"
        [request] = _permission_requests(frames)
        tool_call = request["params"]["toolCall"]
        assert tool_call["status"] == "pending"
        assert tool_call["content"][0]["newText"] == "live bytes\n"
        assert {o["kind"] for o in request["params"]["options"]} >= {"allow_once", "reject_once"}
        assert target.read_text() == "live bytes\n"
        updates = [
            u for u in _updates(frames, session_id, "tool_call_update") if u["toolCallId"] == tool_call["toolCallId"]
        ]
        assert updates[-1]["status"] == "completed"
        assert _text(frames, session_id).endswith(
            TOOL_DONE_PREFIX + f"Successfully created and wrote to new file: {target}."
        )

        # turn 2: the shell tool, allowed: the command runs and its output flows back to the model
        t1 = time.monotonic()
        prompt = [{"type": "text", "text": "RUN touch marker.txt && echo made-it"}]
        frames = await _call(
            qwen, 4, "session/prompt", {"sessionId": session_id, "prompt": prompt}, permission="allow_once"
        )
        timings["run_turn_s"] = round(time.monotonic() - t1, 2)
        assert frames[-1]["result"]["stopReason"] == "end_turn"
        [request] = _permission_requests(frames)
        shell_id = request["params"]["toolCall"]["toolCallId"]
        done = [u for u in _updates(frames, session_id, "tool_call_update") if u["toolCallId"] == shell_id][-1]
        assert (done["status"], done["rawOutput"]) == ("completed", "made-it")
        assert (agent.workspace / "marker.txt").exists()
        assert _text(frames, session_id).endswith(TOOL_DONE_PREFIX + "Command: touch marker.txt && echo made-it")

        # turn 3: the shell tool, rejected: nothing runs, the rejection goes back to the model as the
        # tool's result (qwen 0.15.10 sends no tool_call_update for it), and the turn ends
        calls_before = len(fake_model.model_calls())
        t2 = time.monotonic()
        prompt = [{"type": "text", "text": "RUN touch rejected.txt"}]
        frames = await _call(
            qwen, 5, "session/prompt", {"sessionId": session_id, "prompt": prompt}, permission="reject_once"
        )
        timings["rejected_turn_s"] = round(time.monotonic() - t2, 2)
        assert frames[-1]["result"]["stopReason"] == "end_turn"
        [request] = _permission_requests(frames)
        rejected_id = request["params"]["toolCall"]["toolCallId"]
        statuses = [
            u.get("status") for u in _updates(frames, session_id, "tool_call_update") if u["toolCallId"] == rejected_id
        ]
        assert "completed" not in statuses
        assert not (agent.workspace / "rejected.txt").exists()
        assert _text(frames, session_id).endswith(
            TOOL_DONE_PREFIX + 'Tool "run_shell_command" was canceled by the user.'
        )
        assert len(fake_model.model_calls()) == calls_before + 2

    calls = fake_model.model_calls()
    tools = [[t["name"] for t in (call.reply or {}).get("tools", [])] for call in calls]
    assert tools == [["write_file"], [], ["run_shell_command"], [], ["run_shell_command"], []]
    results = [m for m in calls[1].body["messages"] if m.get("role") == "tool"]
    assert results and results[-1]["tool_call_id"] == tool_call["toolCallId"]
    print(f"qwen permission timings: {timings}")  # shown with -rP
