"""`anyagent fleet` as a real subprocess: a local Ray cluster, the global --mock script, a JSON-lines output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = {
    "turns": [
        {
            "steps": [
                {"emit": {"type": "TextDelta", "message_id": "m1", "text": "ok"}},
                {"end": {"type": "Completed", "source": "protocol"}},
            ]
        }
    ]
}


def test_fleet_command_runs_every_card(tmp_path: Path) -> None:
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT), encoding="utf-8")
    (tmp_path / "cards.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "prompt": "go"}) + "\n" for i in range(6)))
    command = [sys.executable, "-m", "anyagent", "--mock", "script.json", "fleet", "cards.jsonl", "--agent", "mock"]
    command += ["--concurrency", "3", "--num-cpus", "2", "--output", "out.jsonl"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "6 of 6 cards completed" in result.stdout
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == [f"c{i}" for i in range(6)]
    assert all(line["ok"] and line["text"] == "ok" and line["stop"] == "Completed" for line in lines)


def test_fleet_command_rejects_a_bad_card_file(tmp_path: Path) -> None:
    (tmp_path / "cards.jsonl").write_text("not json\n")
    command = [sys.executable, "-m", "anyagent", "fleet", "cards.jsonl", "--agent", "mock"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "cards.jsonl:1" in result.stderr
