"""Recorded tier: the live tier's stream drops (``recordings/reconnects.jsonl``, the real server
behind the cut proxy) replayed through the real adapter by the testkit's HTTP replayer (``--strict``):
each recorded ``sse_end`` drops the stream, the adapter reconnects and resyncs against the recorded
REST answers, and the same assertions as live hold (``opencode_reconnects``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from opencode_harness import RECORDINGS, WAIT, replay_installation, runtime_with_env
from opencode_reconnects import Stage, reconnects

from anyagent import SessionOptions
from anyagent_testkit.events import EventReader

pytestmark = pytest.mark.anyio


async def test_recorded_reconnects(tmp_path: Path) -> None:
    recording = RECORDINGS / "reconnects.jsonl"
    if not recording.exists():
        pytest.skip("reconnects.jsonl not recorded yet (run the live tier with ANYAGENT_OPENCODE_RECORD=1)")
    installation = replay_installation(tmp_path / "bin", recording, strict=True)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    async with runtime_with_env(dict(os.environ)) as runtime:
        session, events = await runtime.open(installation, SessionOptions.in_dir(workspace))
        async with session:
            await reconnects(Stage(session, EventReader(events, timeout=WAIT), None, None))
