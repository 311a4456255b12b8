"""Live tier: ``anyagent serve`` over stdio driving the pinned real ``claude`` CLI against the
testkit's fake model: open, prompt, the turn's text and its end, close, EOF -> exit 0; and a
file write the CLI asks permission for, relayed as RequestOpened and answered over the wire.

Run with ``pytest -m live --live``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import anyio
import pytest
from sidecar_client import kind_of, stdio, texts

from anyagent_testkit.fakemodel import ECHO_PREFIX, FakeModel
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live, pytest.mark.anyio]


async def test_serve_drives_the_real_claude_cli(live_agent: Callable[..., LiveAgent], fake_model: FakeModel) -> None:
    agent = live_agent("claude")
    env = {
        **agent.env,
        "PATH": os.pathsep.join([str(agent.executable.parent), agent.env["PATH"]]),
        "ANYAGENT_NO_LOGIN_SHELL": "1",
    }
    async with stdio(script=None, env=env, cwd=agent.workspace) as sc:
        c = sc.client
        with anyio.fail_after(120):
            report = await c.call("discover")
            assert "claude" in [a["id"] for a in report["agents"]], report
            info, s = await c.open("claude", dir=str(agent.workspace))
            assert info["agent"]["id"] == "claude"
            delivery = await c.call("prompt", session=s.id, text="hi")
            assert set(delivery["kind"]) <= {"Started", "Queued"}
            events = await s.until("TurnEnded")
        ended = events[-1]["kind"]["TurnEnded"]["stop"]
        assert isinstance(ended, dict) and "Completed" in ended, ended
        assert "".join(texts(events)) == f"{ECHO_PREFIX}hi"
        sequences = [e["sequence"] for e in events]
        assert sequences == sorted(sequences)
        await c.call("close", session=s.id)
        with anyio.fail_after(30):
            await s.wait_closed()
        assert s.closed_count == 1
        await sc.close_stdin()
        with anyio.fail_after(30):
            assert await sc.process.wait() == 0


async def test_serve_relays_the_real_claude_cli_permission_request_and_the_answer(
    live_agent: Callable[..., LiveAgent], fake_model: FakeModel
) -> None:
    agent = live_agent("claude")
    env = {
        **agent.env,
        "PATH": os.pathsep.join([str(agent.executable.parent), agent.env["PATH"]]),
        "ANYAGENT_NO_LOGIN_SHELL": "1",
    }
    async with stdio(script=None, env=env, cwd=agent.workspace) as sc:
        c = sc.client
        with anyio.fail_after(120):
            _, s = await c.open("claude", dir=str(agent.workspace), permission_mode="Ask")
            await c.call("prompt", session=s.id, text="WRITE note.txt from serve")
            opened = await s.until("RequestOpened")
            request = opened[-1]["kind"]["RequestOpened"]["Permission"]
            assert "AllowOnce" in request["options"]
            await c.call("answer", session=s.id, request=request["id"], answer={"Permission": "AllowOnce"})
            events = await s.until("TurnEnded")
        assert "Completed" in events[-1]["kind"]["TurnEnded"]["stop"]
        assert any(kind_of(e) == "RequestClosed" for e in events)
        assert (agent.workspace / "note.txt").read_text().startswith("from serve")
        await c.call("close", session=s.id)
        with anyio.fail_after(30):
            await s.wait_closed()
