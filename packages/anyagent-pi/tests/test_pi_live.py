"""Live tier: the pinned real ``pi`` (0.73.1) against the testkit's fake model.

Run with ``pytest --live``. With ``ANYAGENT_PI_RECORD=1`` each scenario also rewrites its
recording under ``tests/recordings/`` (the recorded tier replays those files).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pi_harness import RECORDINGS, SANITIZED_ROOT, Harness, recording_wanted, runtime_with_env, sanitize
from pi_scenarios import SCENARIOS

from anyagent import AgentInstallation, Authenticated, AuthRequired, SessionOptions, Unauthenticated
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live, pytest.mark.anyio]

FIXTURES = Path(__file__).parent / "fixtures"


def installation(agent: LiveAgent, *extra: str) -> AgentInstallation:
    """The pinned pi with the live recipe's arguments (fake provider, session dir)."""
    return AgentInstallation(id="pi", name="pi", executable_path=agent.executable, args=(*agent.args, *extra))


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario(name: str, live_agent: Callable[..., LiveAgent], fake_model: object, tmp_path: Path) -> None:
    agent = live_agent("pi")
    spec = SCENARIOS[name]
    extra = ("-e", str(FIXTURES / "ask-colour.ts")) if spec.extension else ()
    record = tmp_path / f"{name}.jsonl" if recording_wanted() else None
    async with runtime_with_env(agent.env) as runtime:
        harness = Harness(runtime, installation(agent, *extra), agent.workspace, fake_model, record, agent.home)
        await spec.run(harness)
    if record is not None:
        sanitize(record, RECORDINGS / f"{name}.jsonl", {str(agent.root): SANITIZED_ROOT, str(agent.executable): "pi"})


async def test_no_provider_key_is_auth_required_with_the_logins(live_agent: Callable[..., LiveAgent]) -> None:
    """No models.json, no provider key: pi has no model it can use."""
    agent = live_agent("pi")
    empty = agent.root / "empty-agent-dir"
    empty.mkdir()
    env = {**agent.env, "PI_CODING_AGENT_DIR": str(empty)}
    bare = AgentInstallation.at("pi", agent.executable)  # the profile's own arguments only
    async with runtime_with_env(env) as runtime:
        with pytest.raises(AuthRequired) as caught:
            await runtime.open(bare, SessionOptions.in_dir(agent.workspace))
        commands = [getattr(method, "command", None) for method in caught.value.login]
        assert (str(agent.executable),) in commands
        assert any(getattr(method, "name", None) == "ANTHROPIC_API_KEY" for method in caught.value.login)
        assert isinstance(await runtime.probe_auth(bare), Unauthenticated)
    async with runtime_with_env(agent.env) as runtime:
        assert isinstance(await runtime.probe_auth(installation(agent)), Authenticated)
