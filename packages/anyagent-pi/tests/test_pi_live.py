"""Live tier: the pinned real ``pi`` against the testkit's fake model, on both pins.

``pi`` (0.73.1, Node 20) runs every scenario but the steering ones (it has no ``clear_queue``);
``pi-node22`` (1.6.0 on its own Node 22) runs every scenario but ``queue`` (a pi that steers takes
a mid-turn prompt into the turn; the steering scenarios cover the engine's queue there).

Run with ``pytest --live``. With ``ANYAGENT_PI_RECORD=1`` each scenario also rewrites its
recording under ``tests/recordings/`` (0.73.1) or ``tests/recordings/<version>/`` (newer pins),
which the recorded tier replays.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pi_harness import (
    PINS,
    SANITIZED_ROOT,
    Harness,
    recording_wanted,
    recordings_of,
    runtime_with_env,
    sanitize,
)
from pi_scenarios import SCENARIOS

from anyagent import AgentInstallation, Authenticated, AuthRequired, SessionOptions, Unauthenticated
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live, pytest.mark.anyio]

FIXTURES = Path(__file__).parent / "fixtures"


def installation(agent: LiveAgent, *extra: str) -> AgentInstallation:
    """The pinned pi with the live recipe's arguments (fake provider, session dir)."""
    return AgentInstallation(id="pi", name="pi", executable_path=agent.executable, args=(*agent.args, *extra))


CASES = [(cli, name) for cli in PINS for name in sorted(SCENARIOS) if cli in SCENARIOS[name].pins]


@pytest.mark.parametrize(("cli", "name"), CASES, ids=[f"{cli}-{name}" for cli, name in CASES])
async def test_scenario(
    cli: str,
    name: str,
    live_agent: Callable[..., LiveAgent],
    fake_model: object,
    tmp_path: Path,
) -> None:
    agent = live_agent(cli)
    spec = SCENARIOS[name]
    extra = ("-e", str(FIXTURES / "ask-colour.ts")) if spec.extension else ()
    record = tmp_path / f"{name}.jsonl" if recording_wanted() else None
    async with runtime_with_env(agent.env) as runtime:
        harness = Harness(
            runtime, installation(agent, *extra), agent.workspace, fake_model, record, agent.home, cli=cli
        )
        await spec.run(harness)
    if record is not None:
        prefix = agent.executable.parent.parent.parent  # <cache>/<pin>@<version>: pi 1.6.0 names its docs
        replacements = {
            str(agent.root): SANITIZED_ROOT,
            str(agent.executable): "pi",
            str(prefix): "/opt/pi",
            str(FIXTURES): "fixtures",
        }
        sanitize(record, recordings_of(cli) / f"{name}.jsonl", replacements)


@pytest.mark.parametrize("cli", PINS)
async def test_no_provider_key_is_auth_required_with_the_logins(cli: str, live_agent: Callable[..., LiveAgent]) -> None:
    """No models.json, no provider key: pi has no model it can use."""
    agent = live_agent(cli)
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
