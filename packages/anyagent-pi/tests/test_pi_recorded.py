"""Recorded tier: every committed recording replayed through the real adapter (no Node needed).

The recordings were made by the live tier (``ANYAGENT_PI_RECORD=1 pytest --live``) driving pi
against the fake model: every scenario of pi 0.73.1 (``recordings/``), and pi 1.6.0's
(``recordings/1.6.0/``: the steering scenarios and a plain turn); the testkit replayer plays one
recorded process per launch.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pi_harness import PINS, Harness, recordings_of, replay_shim, runtime_with_env
from pi_scenarios import SCENARIOS

from anyagent import AgentInstallation
from anyagent_testkit.replay import replayer_launches

pytestmark = pytest.mark.anyio


RECORDED_NEWER = {"pi-node22": ("steer", "steer-cancel-clear-queue", "steer-cancel-keep-queue", "text-turn")}
"""The scenarios committed for the newer pins (0.73.1 has every scenario it runs)."""
CASES = [
    (cli, name)
    for cli in PINS
    for name in sorted(SCENARIOS)
    if cli in SCENARIOS[name].pins and (cli == "pi" or name in RECORDED_NEWER[cli])
]


@pytest.mark.parametrize(("cli", "name"), CASES, ids=[f"{cli}-{name}" for cli, name in CASES])
async def test_scenario_replays(cli: str, name: str, tmp_path: Path) -> None:
    recording = recordings_of(cli) / f"{name}.jsonl"
    if not recording.exists():
        pytest.fail(f"missing recording {recording}: run ANYAGENT_PI_RECORD=1 pytest --live")
    spec = SCENARIOS[name]
    shim = replay_shim(tmp_path / "bin", recording, spec.dies, realtime=spec.realtime)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with runtime_with_env(dict(os.environ)) as runtime:
        await spec.run(Harness(runtime, AgentInstallation.at("pi", shim), workspace, cli=cli))
    recorded = recording.read_text(encoding="utf-8").count('{"_meta":')
    launched = replayer_launches(tmp_path / "bin", "pi")
    assert launched == recorded - spec.live_only, "every recorded process was launched, no more"
