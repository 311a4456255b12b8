"""Recorded tier: the real adapter against the testkit's HTTP replayer standing in for
``opencode serve``, playing this package's own recordings (``tests/recordings``, made by the live
tier with ``record_wire`` against the real server and the fake model). Each scenario asserts the
same events it asserted live; the replayer runs ``--strict`` (a request the recording does not
hold ends the session)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from opencode_harness import RECORDINGS, WAIT, replay_installation, runtime_with_env
from opencode_scenarios import SCENARIOS, Stage

from anyagent import SessionOptions
from anyagent_testkit.events import EventReader

pytestmark = pytest.mark.anyio


def _recorded(name: str) -> Path:
    path = RECORDINGS / f"{name}.jsonl"
    if not path.exists():
        pytest.skip(f"{path.name} not recorded yet (run the live tier with ANYAGENT_OPENCODE_RECORD=1)")
    return path


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_recorded_scenario(name: str, tmp_path: Path) -> None:
    installation = replay_installation(tmp_path / "bin", _recorded(name), strict=True)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with runtime_with_env(dict(os.environ)) as runtime:
        session, events = await runtime.open(installation, SessionOptions.in_dir(workspace))
        async with session:
            await SCENARIOS[name](Stage(session, EventReader(events, timeout=WAIT), None))


def test_recordings_hold_no_secret_and_no_machine_paths() -> None:
    """The password never reaches a recording (the recorder never sees headers), nor the live
    tier's temporary paths (sanitized)."""
    found = sorted(RECORDINGS.glob("*.jsonl"))
    if not found:
        pytest.skip("no recordings yet")
    for path in found:
        text = path.read_text(encoding="utf-8")
        assert "b3BlbmNvZGU6" not in text, path.name  # base64("opencode:"), how a Basic header starts
        for line in text.splitlines():
            http = json.loads(line).get("_http") or {}
            assert "headers" not in http and "auth" not in http, path.name
        assert "/tmp/pytest-of-" not in text, path.name
        first = json.loads(text.splitlines()[0])
        assert first["_meta"]["cmd"][0] == "opencode", path.name
