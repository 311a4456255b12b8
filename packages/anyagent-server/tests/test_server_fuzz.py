"""Fuzzed command lines into the hub (in-process, the real engine over anyagent-rs's turn script):
truncated JSON, huge lines, wrong types, unknown commands, reused ids. Every line gets a typed
reply or none (blank), the server never raises, and the session opened first still works.

``ANYAGENT_FUZZ_FRAMES`` (default 300 here; ``nox -s fuzz`` runs 10 000) and ``ANYAGENT_FUZZ_SEED``.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from sidecar_client import SCRIPTS

from anyagent import Runtime
from anyagent_server import Hub, Peer, mockscript

pytestmark = pytest.mark.anyio

SEEDS = [
    {"id": 1, "cmd": "prompt", "session": "s1", "text": "hi"},
    {"id": 2, "cmd": "answer", "session": "s1", "request": "r1", "answer": {"Permission": "AllowOnce"}},
    {"id": 3, "cmd": "configure", "session": "s1", "option": "model", "value": "opus"},
    {"id": 4, "cmd": "rollback", "session": "s1", "turns": 1, "scope": "Conversation"},
    {"id": 5, "cmd": "open", "agent": "mock", "dir": ".", "mcp_servers": [], "configure": {}},
    {"id": 6, "cmd": "cancel", "session": "s1", "clear_queue": True},
    {"id": 7, "cmd": "info", "session": "s1"},
    {"id": 8, "cmd": "discover"},
    {"id": 9, "cmd": "probe", "agent": {"acp": {"name": "x", "path": "/nonexistent"}}},
]
WEIRD: list[Any] = [None, True, -1, 2**70, 1.5, "", "s1", [], {}, {"Permission": 3}, "x" * 1000]


def _mutate(rng: random.Random) -> str:
    frame = dict(rng.choice(SEEDS))
    roll = rng.random()
    if roll < 0.3 and frame:
        key = rng.choice(list(frame))
        frame[key] = rng.choice(WEIRD)
    elif roll < 0.4:
        frame.pop(rng.choice(list(frame)), None)
    elif roll < 0.5:
        frame["cmd"] = rng.choice(["", "opne", "PROMPT", "close ", "\u0000"])
    elif roll < 0.55:
        frame["id"] = 1  # reused
    text = json.dumps(frame)
    roll = rng.random()
    if roll < 0.15:
        text = text[: rng.randrange(len(text))]
    elif roll < 0.2:
        text = rng.choice(["[", "{}" * 5000, "\xff", "null", '"str"', "1e999", "{" * 2000])
    return text


async def test_fuzzed_command_lines() -> None:
    frames = int(os.environ.get("ANYAGENT_FUZZ_FRAMES", "300"))
    rng = random.Random(int(os.environ.get("ANYAGENT_FUZZ_SEED", "0")))
    out: list[dict[str, Any]] = []

    async def send(text: str) -> None:
        out.append(json.loads(text))

    peer = Peer(send, "fuzz")
    async with (
        Runtime.with_mock(mockscript.load(SCRIPTS / "configure.json")) as runtime,
        Hub(runtime, max_line=64 * 1024) as hub,
    ):
        await hub.receive(peer, '{"id": 100000, "cmd": "open", "agent": "mock", "dir": "."}')
        with anyio.fail_after(10):
            while not any(line.get("id") == 100000 for line in out):
                await anyio.sleep(0.01)
        for _ in range(frames):
            text = _mutate(rng)
            if len(text) > 64 * 1024:
                await hub.receive(peer, None, too_long=len(text))
            else:
                await hub.receive(peer, text.encode("utf-8", "surrogatepass"))
            await anyio.lowlevel.checkpoint()
        await anyio.sleep(0.5)
        kinds = {line["error"]["kind"] for line in out if "error" in line and "id" in line}
        assert kinds <= {
            "BadFrame",
            "UnknownSession",
            "InvalidRequest",
            "InvalidConfiguration",
            "SessionClosed",
            "SessionBusy",
            "UnsupportedFeature",
            "NotInstalled",
            "SpawnFailed",
            "ProtocolFailed",
            "NotController",
            "ProcessExited",
        }, kinds
        assert not any("failed in the server" in line.get("error", {}).get("message", "") for line in out)
        await hub.receive(peer, '{"id": 100001, "cmd": "discover"}')
        with anyio.fail_after(10):
            while not any(line.get("id") == 100001 for line in out):
                await anyio.sleep(0.01)
    assert any("closed" in line for line in out)
    print(f"fuzz: {frames} lines, {len(out)} lines out, error kinds {sorted(kinds)}")
