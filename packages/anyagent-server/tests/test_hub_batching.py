"""The hub writes every line ready at a wakeup in one ``send`` to a peer whose transport joins
lines (stdio), and one line per ``send`` otherwise (a WebSocket: one frame per line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from anyagent import Runtime
from anyagent_server import Hub, Peer, mockscript

pytestmark = pytest.mark.anyio


BURSTS, BURST = 40, 50
# anyagent-rs's flood.json, shorter: bursts of 50 deltas with a pause between
FLOOD = {
    "turns": [
        [
            {
                "Repeat": {
                    "times": BURSTS,
                    "steps": [
                        {
                            "Repeat": {
                                "times": BURST,
                                "steps": [{"Emit": {"TextDelta": {"message_id": "m1", "text": "x"}}}],
                            }
                        },
                        {"Sleep": 5},
                    ],
                }
            },
            {"End": {"Completed": {"source": "Protocol"}}},
        ]
    ]
}


async def _flood(tmp_path: Path, joins_lines: bool) -> tuple[list[str], list[dict[str, Any]]]:
    script = tmp_path / "flood.json"
    script.write_text(json.dumps(FLOOD))
    sends: list[str] = []
    lines: list[dict[str, Any]] = []

    async def send(text: str) -> None:
        sends.append(text)
        lines.extend(json.loads(line) for line in text.split("\n"))

    peer = Peer(send, "test", joins_lines=joins_lines)
    async with (
        Runtime.with_mock(mockscript.load(script)) as runtime,
        Hub(runtime, replay=100_000) as hub,
    ):
        await hub.receive(peer, '{"id": 1, "cmd": "open", "agent": "mock", "dir": "."}')
        with anyio.fail_after(10):
            while not any(line.get("id") == 1 for line in lines):
                await anyio.sleep(0.01)
        await hub.receive(peer, '{"id": 2, "cmd": "prompt", "session": "s1", "text": "go"}')
        with anyio.fail_after(30):
            while not any("TurnEnded" in line.get("event", {}).get("kind", {}) for line in lines):
                await anyio.sleep(0.01)
        await hub.receive(peer, '{"id": 3, "cmd": "close", "session": "s1"}')
        with anyio.fail_after(10):
            while not any("closed" in line for line in lines):
                await anyio.sleep(0.01)
    return sends, [line["event"] for line in lines if "event" in line]


async def test_joining_peer_gets_ready_lines_in_few_sends_whole_and_in_order(tmp_path: Path) -> None:
    sends, events = await _flood(tmp_path, joins_lines=True)
    deltas = [e for e in events if "TextDelta" in e["kind"]]
    assert len(deltas) == BURSTS * BURST
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    # the flood comes in bursts of 50 deltas: each burst leaves in a handful of writes, not 50
    assert len(sends) < len(events) / 10, (len(sends), len(events))


async def test_message_peer_gets_one_line_per_send(tmp_path: Path) -> None:
    sends, events = await _flood(tmp_path, joins_lines=False)
    assert all("\n" not in text for text in sends)
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
