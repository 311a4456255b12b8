"""Live facts about pi's wire the adapter's design rests on, checked on both pinned pis.

Raw RPC, no adapter: what pi does with a queued steer when a run is aborted. The adapter cancels
with ``clear_queue`` then ``abort`` and reports ``Steer`` only when pi knows ``clear_queue``; this
test is the evidence for that rule. Both 0.73.1 and 1.6.0: the steer survives a bare ``abort``,
pi starts no run by itself, and the next prompt's run delivers the stale steer. 0.73.1 has no
``clear_queue`` (refused without an id); 1.6.0 has it, and it empties the queue before the abort.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest
from pi_harness import PINS, STEERING_PINS

from anyagent.process import spawn
from anyagent.wire import JsonLines
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live, pytest.mark.anyio]


@pytest.mark.parametrize("cli", PINS)
async def test_a_steer_survives_abort_and_pi_starts_no_run_by_itself(
    cli: str, live_agent: Callable[..., LiveAgent], fake_model: Any
) -> None:
    agent = live_agent(cli)
    process = await spawn(agent.command(), cwd=agent.workspace, env=agent.env)
    lines = JsonLines(process)
    seen: list[dict[str, Any]] = []

    async def until(predicate: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            while True:
                frame = await lines.receive()
                assert isinstance(frame, dict)
                seen.append(frame)
                if predicate(frame):
                    return frame

    try:
        await lines.send({"id": "q0", "type": "clear_queue"})
        answer = await until(lambda f: f.get("type") == "response")
        if cli in STEERING_PINS:
            assert answer == {
                "id": "q0",
                "type": "response",
                "command": "clear_queue",
                "success": True,
                "data": {"steering": [], "followUp": []},
            }
        else:
            assert answer["success"] is False and "Unknown command" in answer["error"] and "id" not in answer
        await lines.send({"id": "p1", "type": "prompt", "message": "SLOW 12"})
        await until(lambda f: f.get("assistantMessageEvent", {}).get("type") == "text_delta")
        await lines.send({"id": "s1", "type": "steer", "message": "STALE STEER"})
        await until(lambda f: f.get("id") == "s1")
        await lines.send({"id": "a1", "type": "abort"})
        await until(lambda f: f.get("id") == "a1")
        assert [f["type"] for f in seen].count("agent_end") == 1
        starts = len([f for f in seen if f.get("type") == "agent_start"])
        with anyio.move_on_after(2.0):
            await until(lambda f: f.get("type") == "agent_start")
        assert len([f for f in seen if f.get("type") == "agent_start"]) == starts, "pi started a run by itself"
        await lines.send({"id": "g1", "type": "get_state"})
        state = await until(lambda f: f.get("id") == "g1")
        assert state["data"]["pendingMessageCount"] == 1, "the steer is still queued after the abort"
        await lines.send({"id": "p2", "type": "prompt", "message": "next prompt"})
        end = await until(lambda f: f.get("type") == "agent_end")
        users = [m["content"][0]["text"] for m in end["messages"] if m.get("role") == "user"]
        assert users == ["next prompt", "STALE STEER"], "the next run delivers the stale steer"
        if cli in STEERING_PINS:  # clear_queue before abort: the steer is gone
            await until(lambda f: f.get("type") == "agent_settled")
            await lines.send({"id": "p3", "type": "prompt", "message": "SLOW 12"})
            await until(lambda f: f.get("assistantMessageEvent", {}).get("type") == "text_delta")
            await lines.send({"id": "s3", "type": "steer", "message": "DROPPED STEER"})
            await until(lambda f: f.get("id") == "s3")
            await lines.send({"id": "c3", "type": "clear_queue"})
            cleared = await until(lambda f: f.get("id") == "c3")
            assert cleared["data"] == {"steering": ["DROPPED STEER"], "followUp": []}
            await lines.send({"id": "a3", "type": "abort"})
            await until(lambda f: f.get("id") == "a3")
            await lines.send({"id": "g3", "type": "get_state"})
            state = await until(lambda f: f.get("id") == "g3")
            assert state["data"]["pendingMessageCount"] == 0, "clear_queue emptied pi's queue"
            await lines.send({"id": "p4", "type": "prompt", "message": "last prompt"})
            end = await until(lambda f: f.get("type") == "agent_end")
            users = [m["content"][0]["text"] for m in end["messages"] if m.get("role") == "user"]
            assert users == ["last prompt"], "nothing stale"
    finally:
        await process.aclose(grace=1.0)
