"""Live: the pinned Qwen Code CLI as an ACP agent (``qwen --acp``), one text prompt over raw JSON-RPC
against the loopback fake model (OpenAI Chat Completions). Run with ``--live``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from anyagent_testkit.fakemodel import ECHO_PREFIX, FakeModel
from anyagent_testkit.live import LiveAgent
from anyagent_testkit.stdio import JsonlProcess

pytestmark = [pytest.mark.live, pytest.mark.anyio]
TIMEOUT = 120.0


async def _call(agent: JsonlProcess, request_id: int, method: str, params: dict[str, Any]) -> list[Any]:
    """Send a request; answer any agent→client request with -32601; return frames up to our response."""
    await agent.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    frames: list[Any] = []
    while True:
        frame = await agent.receive(TIMEOUT)
        frames.append(frame)
        if not isinstance(frame, dict):
            continue
        if frame.get("id") == request_id and "method" not in frame:
            return frames
        if "method" in frame and "id" in frame:
            error = {"code": -32601, "message": f"not implemented by the test client: {frame['method']}"}
            await agent.send({"jsonrpc": "2.0", "id": frame["id"], "error": error})


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
