"""Codex's own history: ``thread/list`` over the real codex 0.171.0's app-server (live), and the
translation of its ``Thread`` objects (offline, a thread as codex 0.171.0 returned it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import attrs
import pytest
from codex_harness import runtime_with_env

from anyagent import AgentInstallation, SessionOptions
from anyagent_codex.history import entry_from
from anyagent_testkit.events import EventReader, text_of
from anyagent_testkit.live import LiveAgent

pytestmark = pytest.mark.anyio

THREAD = json.loads((Path(__file__).parent / "recordings" / "history-thread.json").read_text(encoding="utf-8"))


def test_a_thread_becomes_an_entry() -> None:
    made = entry_from(THREAD)
    assert made is not None
    assert made.resume_token == THREAD["id"]
    assert made.title == "first: explain the repo"
    assert made.cwd == THREAD["cwd"]
    assert made.created_at is not None and int(made.created_at.timestamp()) == THREAD["createdAt"]
    assert made.updated_at is not None and int(made.updated_at.timestamp()) == THREAD["updatedAt"]
    assert entry_from({**THREAD, "name": "Release notes"}).title == "Release notes"  # type: ignore[union-attr]
    assert entry_from({**THREAD, "parentThreadId": "019-parent"}) is None  # a subagent's thread
    assert entry_from({"preview": "no id"}) is None
    assert entry_from("not an object") is None


async def _turn(runtime: object, installation: AgentInstallation, options: SessionOptions, prompt: str) -> str:
    session, events = await runtime.open(installation, options)  # type: ignore[attr-defined]
    async with session:
        await session.prompt(prompt)
        assert text_of(await EventReader(events, timeout=120).turn())
        token = session.info().resume_token
    assert token
    return str(token)


@pytest.mark.live
async def test_live_threads_are_listed_and_resumed(live_agent: Callable[..., LiveAgent], fake_model: object) -> None:
    agent = live_agent("codex")
    workspace = agent.workspace / "my_proj.v2"
    workspace.mkdir()
    installation = attrs.evolve(AgentInstallation.at("codex", agent.executable), args=agent.args)
    async with runtime_with_env(agent.env) as runtime:
        first = await _turn(runtime, installation, SessionOptions.in_dir(workspace), "first: explain\nthe repo")
        await anyio.sleep(1.1)  # codex keeps whole seconds: a tie would hide the order asked for
        second = await _turn(runtime, installation, SessionOptions.in_dir(workspace), "second conversation")
        listed = await runtime.history(installation, workspace)
        assert [e.resume_token for e in listed] == [second, first]
        assert [e.title for e in listed] == ["second conversation", "first: explain the repo"]
        assert all(e.cwd == str(workspace) for e in listed)
        assert await runtime.history(installation, agent.workspace) == []
        await anyio.sleep(1.1)
        # resumed: last activity first (codex keeps whole seconds: in the same second as the second thread it tied)
        await _turn(runtime, installation, SessionOptions.in_dir(workspace).resume(first), "and again")
        again = await runtime.history(installation, workspace)
        assert [e.resume_token for e in again] == [first, second]
