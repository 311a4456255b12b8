"""opencode's own history: ``GET /session`` on the real opencode 1.18.33's server (live)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from opencode_harness import runtime_with_env

from anyagent import AgentInstallation, SessionOptions
from anyagent_testkit.events import EventReader, text_of
from anyagent_testkit.live import LiveAgent

pytestmark = pytest.mark.anyio


@pytest.mark.live
async def test_live_sessions_are_listed_and_resumed(live_agent: Callable[..., LiveAgent], fake_model: object) -> None:
    agent = live_agent("opencode")
    workspace = agent.workspace
    installation = AgentInstallation.at("opencode", agent.executable)
    tokens = []
    async with runtime_with_env(agent.env) as runtime:
        for prompt in ("first: explain the repo", "second conversation"):
            session, events = await runtime.open(installation, SessionOptions.in_dir(workspace))
            async with session:
                await session.prompt(prompt)
                assert text_of(await EventReader(events, timeout=120).turn())
                tokens.append(session.info().resume_token)
        listed = await runtime.history(installation, workspace)
        assert sorted(e.resume_token for e in listed) == sorted(tokens)
        assert all(e.cwd == str(workspace) and e.title for e in listed)
        assert listed[0].last_activity is not None and listed[0].last_activity >= listed[-1].last_activity  # type: ignore[operator]
        session, events = await runtime.open(installation, SessionOptions.in_dir(workspace).resume(tokens[0]))
        async with session:
            await session.prompt("and again")
            assert text_of(await EventReader(events, timeout=120).turn())
        again = await runtime.history(installation, workspace)
        assert again[0].resume_token == tokens[0]
