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

from anyagent import AgentInstallation
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
