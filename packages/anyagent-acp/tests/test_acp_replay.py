"""Recordings made with ``record_wire`` against the real agents (``tests/recordings``), replayed
through the adapter by the testkit's replayer: the live scenario, offline, without Node."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_acp_live import PROFILE_IDS, RECORDED, scenario

from anyagent import AgentInstallation
from anyagent_testkit.replay import write_replayer_shim

pytestmark = pytest.mark.anyio

RECORDINGS = Path(__file__).parent / "recordings"


def _replayed(cli_id: str, phase: str, folder: Path) -> AgentInstallation:
    recording = RECORDINGS / f"{cli_id}-{phase}.jsonl"
    shim = write_replayer_shim(folder, recording, name=f"{cli_id}-{phase}", strict=True)
    return AgentInstallation(id=PROFILE_IDS[cli_id], name=cli_id, executable_path=shim, wire="acp")


@pytest.mark.parametrize("cli_id", RECORDED)
async def test_replayed_live_scenario(cli_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANYAGENT_ACP_RECORD", raising=False)
    first = _replayed(cli_id, "A", tmp_path)
    second = _replayed(cli_id, "B", tmp_path) if (RECORDINGS / f"{cli_id}-B.jsonl").exists() else first
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    await scenario(cli_id, first, second, workspace, real=False)
