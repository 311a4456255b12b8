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

    async def call(request_id: str, command: str, **fields: Any) -> dict[str, Any]:
        await lines.send({"id": request_id, "type": command, **fields})
        return await until(lambda f: f.get("id") == request_id)

    async def steer_while_streaming(n: int, text: str) -> None:
        await lines.send({"id": f"p{n}", "type": "prompt", "message": "SLOW 12"})
        await until(lambda f: f.get("assistantMessageEvent", {}).get("type") == "text_delta")
        await call(f"s{n}", "steer", message=text)

    async def users_of_next_run(n: int, text: str) -> list[str]:
        await lines.send({"id": f"n{n}", "type": "prompt", "message": text})
        end = await until(lambda f: f.get("type") == "agent_end")
        return [m["content"][0]["text"] for m in end["messages"] if m.get("role") == "user"]

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
        await steer_while_streaming(1, "STALE STEER")
        await call("a1", "abort")
        assert [f["type"] for f in seen].count("agent_end") == 1
        starts = len([f for f in seen if f.get("type") == "agent_start"])
        with anyio.move_on_after(2.0):
            await until(lambda f: f.get("type") == "agent_start")
        assert len([f for f in seen if f.get("type") == "agent_start"]) == starts, "pi started a run by itself"
        state = await call("g1", "get_state")
        assert state["data"]["pendingMessageCount"] == 1, "the steer is still queued after the abort"
        users = await users_of_next_run(1, "next prompt")
        assert users == ["next prompt", "STALE STEER"], "the next run delivers the stale steer"
        if cli in STEERING_PINS:  # clear_queue before abort: the steer is gone
            await until(lambda f: f.get("type") == "agent_settled")
            await steer_while_streaming(2, "DROPPED STEER")
            cleared = await call("c2", "clear_queue")
            assert cleared["data"] == {"steering": ["DROPPED STEER"], "followUp": []}
            await call("a2", "abort")
            state = await call("g2", "get_state")
            assert state["data"]["pendingMessageCount"] == 0, "clear_queue emptied pi's queue"
            assert await users_of_next_run(2, "last prompt") == ["last prompt"], "nothing stale"
    finally:
        await process.aclose(grace=1.0)
