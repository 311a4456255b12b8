"""Recorded tier: every committed recording replayed through the real adapter (no Node needed).

The recordings were made by the live tier (``ANYAGENT_PI_RECORD=1 pytest --live``) driving pi
0.73.1 against the fake model; the testkit replayer plays one recorded process per launch.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pi_harness import RECORDINGS, Harness, replay_shim, runtime_with_env
from pi_scenarios import SCENARIOS

from anyagent import AgentInstallation
from anyagent_testkit.replay import replayer_launches

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario_replays(name: str, tmp_path: Path) -> None:
    recording = RECORDINGS / f"{name}.jsonl"
    if not recording.exists():
        pytest.fail(f"missing recording {recording.name}: run ANYAGENT_PI_RECORD=1 pytest --live")
    spec = SCENARIOS[name]
    shim = replay_shim(tmp_path / "bin", recording, spec.dies, realtime=spec.realtime)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with runtime_with_env(dict(os.environ)) as runtime:
        await spec.run(Harness(runtime, AgentInstallation.at("pi", shim), workspace))
    recorded = recording.read_text(encoding="utf-8").count('{"_meta":')
    launched = replayer_launches(tmp_path / "bin", "pi")
    assert launched == recorded - spec.live_only, "every recorded process was launched, no more"
