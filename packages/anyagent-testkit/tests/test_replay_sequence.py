"""``write_replayer_sequence``: one executable that plays process 1, then 2, … of a recording."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from anyagent_testkit.replay import replayer_launches, write_replayer_sequence

RECORDING = [
    {"_meta": {"cmd": ["agent"]}, "_t": 0.0},
    {"type": "hello", "process": 1},
    {"_meta": {"cmd": ["agent"]}, "_t": 0.0},
    {"type": "hello", "process": 2},
    {"_note": {"exit": 3}},
]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shim")
def test_each_launch_plays_the_next_process(tmp_path: Path) -> None:
    recording = tmp_path / "two.jsonl"
    recording.write_text("".join(json.dumps(line) + "\n" for line in RECORDING))
    shim = write_replayer_sequence(tmp_path / "bin", recording, name="agent", dies=[2])
    first = subprocess.run([str(shim), "--flag"], input="", capture_output=True, text=True, timeout=30)
    assert json.loads(first.stdout) == {"type": "hello", "process": 1} and first.returncode == 0
    second = subprocess.run([str(shim)], input="", capture_output=True, text=True, timeout=30)
    assert json.loads(second.stdout) == {"type": "hello", "process": 2}
    assert second.returncode == 3, "a process listed in dies exits as recorded"
    assert replayer_launches(tmp_path / "bin", "agent") == 2
