"""Live tier: the pinned real ``claude`` (2.1.332) against the testkit's fake model.

Run with ``pytest --live``. With ``ANYAGENT_CLAUDE_RECORD=1`` each scenario also rewrites its
recording under ``tests/recordings/`` (the recorded tier replays those files).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from claude_harness import RECORDINGS, SANITIZED_ROOT, Harness, recording_wanted, runtime_with_env, sanitize
from claude_scenarios import SCENARIOS

from anyagent import AgentInstallation, AuthRequired, SessionOptions, Unauthenticated, UnsupportedFeature
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live, pytest.mark.anyio]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario(name: str, live_agent: Callable[..., LiveAgent], fake_model: object, tmp_path: Path) -> None:
    agent = live_agent("claude")
    record = tmp_path / f"{name}.jsonl" if recording_wanted() else None
    installation = AgentInstallation.at("claude", agent.executable)
    async with runtime_with_env(agent.env) as runtime:
        await SCENARIOS[name].run(Harness(runtime, installation, agent.workspace, fake_model, record, agent.home))
    if record is not None:
        sanitize(
            record,
            RECORDINGS / f"{name}.jsonl",
            {str(agent.root): SANITIZED_ROOT, str(agent.executable): "claude"},
        )


async def test_logged_out_is_auth_required_with_runnable_logins(live_agent: Callable[..., LiveAgent]) -> None:
    agent = live_agent("claude")
    env = {key: value for key, value in agent.env.items() if key != "ANTHROPIC_API_KEY"}
    installation = AgentInstallation.at("claude", agent.executable)
    async with runtime_with_env(env) as runtime:
        with pytest.raises(AuthRequired) as caught:
            await runtime.open(installation, SessionOptions.in_dir(agent.workspace))
        commands = [getattr(method, "command", None) for method in caught.value.login]
        assert (str(agent.executable), "auth", "login") in commands
        assert any(getattr(method, "name", None) == "ANTHROPIC_API_KEY" for method in caught.value.login)
        auth = await runtime.probe_auth(installation)
        assert isinstance(auth, Unauthenticated)


async def test_plan_usage_needs_a_subscription(live_agent: Callable[..., LiveAgent]) -> None:
    agent = live_agent("claude")
    installation = AgentInstallation.at("claude", agent.executable)
    async with runtime_with_env(agent.env) as runtime:
        with pytest.raises(UnsupportedFeature):
            await runtime.plan_usage(installation)
