"""Recorded tier: every committed recording replayed through the real adapter (no Node needed).

The recordings were made by the live tier (``ANYAGENT_CODEX_RECORD=1 pytest --live``) driving
codex 0.171.0 against the fake model; the testkit replayer (strict) plays one process per launch.
"""

from __future__ import annotations

import os
from pathlib import Path

import codex_usage_scenarios  # noqa: F401 (its scenarios join SCENARIOS)
import pytest
from codex_harness import RECORDINGS, Harness, launches, replay_shim, runtime_with_env
from codex_scenarios import SCENARIOS

from anyagent import AgentInstallation

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_scenario_replays(name: str, tmp_path: Path) -> None:
    recording = RECORDINGS / f"{name}.jsonl"
    if not recording.exists():
        pytest.fail(f"missing recording {recording.name}: run ANYAGENT_CODEX_RECORD=1 pytest --live")
    shim = replay_shim(tmp_path / "bin", recording)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with runtime_with_env(dict(os.environ), SCENARIOS[name].max_retries) as runtime:
        await SCENARIOS[name].run(Harness(runtime, AgentInstallation.at("codex", shim), workspace))
    recorded = recording.read_text(encoding="utf-8").count('{"_meta":')
    assert launches(tmp_path / "bin") == recorded, "every recorded process was launched, no more"
