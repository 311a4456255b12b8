"""Live: the pinned Claude Code CLI, installed from npm, one text turn and one Write permission turn
over stdio (stream-json) against the loopback fake model. Run with ``--live``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from anyagent_testkit.fakemodel import ECHO_PREFIX, TOOL_DONE_PREFIX, FakeModel
from anyagent_testkit.live import LiveAgent
from anyagent_testkit.stdio import JsonlProcess

pytestmark = [pytest.mark.live, pytest.mark.anyio]
TURN_TIMEOUT = 90.0


def _is(kind: str, subtype: str | None = None) -> Callable[[Any], bool]:
    return lambda frame: frame.get("type") == kind and (subtype is None or frame.get("subtype") == subtype)


def _user(text: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None, "session_id": ""}


async def test_claude_text_turn_and_write_permission_flow(
    live_agent: Callable[..., LiveAgent], fake_model: FakeModel
) -> None:
    timings: dict[str, float] = {}
    record_property = timings.__setitem__
    started = time.monotonic()
    agent = live_agent("claude")
    record_property("install_s", round(time.monotonic() - started, 2))
    async with JsonlProcess.open(agent.command(), env=agent.env, cwd=agent.workspace) as claude:
        t0 = time.monotonic()
        await claude.send(
            {"type": "control_request", "request_id": "init-1", "request": {"subtype": "initialize", "hooks": {}}}
        )
        init = await claude.receive_until(lambda f: f.get("type") == "control_response", TURN_TIMEOUT)
        assert init[-1]["response"]["subtype"] == "success"
        assert init[-1]["response"]["request_id"] == "init-1"
        record_property("initialize_s", round(time.monotonic() - t0, 2))

        # turn 1: plain text, streamed
        t1 = time.monotonic()
        await claude.send(_user("hello from the live test"))
        frames = await claude.receive_until(_is("result"), TURN_TIMEOUT)
        record_property("text_turn_s", round(time.monotonic() - t1, 2))
        expected = ECHO_PREFIX + "hello from the live test"
        assert any(_is("system", "init")(frame) for frame in frames)
        deltas = [
            f["event"]["delta"]["text"]
            for f in frames
            if f.get("type") == "stream_event" and f["event"].get("type") == "content_block_delta"
        ]
        assert "".join(deltas) == expected
        assistant = [f for f in frames if f.get("type") == "assistant"]
        assert assistant[-1]["message"]["content"][-1] == {"type": "text", "text": expected}
        result = frames[-1]
        assert (result["subtype"], result["is_error"], result["result"]) == ("success", False, expected)

        # turn 2: the fake model asks for Claude's Write tool; Claude asks us; we allow; the file lands
        target = agent.workspace / "hello.txt"
        t2 = time.monotonic()
        await claude.send(_user(f"please write a file\nWRITE {target} live bytes"))
        frames = await claude.receive_until(_is("control_request"), TURN_TIMEOUT)
        record_property("permission_request_s", round(time.monotonic() - t2, 2))
        request = frames[-1]
        assert request["request"]["subtype"] == "can_use_tool"
        assert request["request"]["tool_name"] == "Write"
        assert request["request"]["input"] == {"file_path": str(target), "content": "live bytes\n"}
        assert not target.exists()
        allow = {"behavior": "allow", "updatedInput": request["request"]["input"]}
        await claude.send(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request["request_id"], "response": allow},
            }
        )
        frames = await claude.receive_until(_is("result"), TURN_TIMEOUT)
        record_property("write_turn_s", round(time.monotonic() - t2, 2))
        assert target.read_text() == "live bytes\n"
        tool_results = [
            block
            for f in frames
            if f.get("type") == "user" and isinstance(f["message"].get("content"), list)
            for block in f["message"]["content"]
            if block.get("type") == "tool_result"
        ]
        assert tool_results
        assert tool_results[0].get("is_error") in (None, False)
        assert frames[-1]["subtype"] == "success"
        assert frames[-1]["result"].startswith(TOOL_DONE_PREFIX)

        t3 = time.monotonic()
        await claude.close_stdin()
        assert await claude.wait(30) == 0, claude.stderr
        record_property("exit_after_eof_s", round(time.monotonic() - t3, 2))
    print(f"claude live timings: {timings}")  # shown with -rP; the figures the report quotes

    calls = fake_model.model_calls()
    assert [call.reply.get("tools", [{}])[0].get("name") if call.reply else None for call in calls] == [
        None,
        "Write",
        None,
    ]
    assert all(call.headers.get("x-api-key", "").startswith("<redacted") for call in calls)
