"""The window between the ``turn/start`` answer and ``turn/started``: codex 0.171 takes a steer or an
interrupt there, older releases (0.147 was seen) refuse both ("no active turn to …"). The adapter
holds them until ``turn/started``, so a steer still joins the turn and a cancel still stops it —
proven against a stand-in that refuses them in that window (``fake_old_codex.py``); the recorded
``steer-as-the-turn-starts`` scenario shows the same with the real 0.171."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from codex_harness import runtime_with_env

from anyagent import AgentInstallation, Cancelled, Completed, SessionOptions, Steered, TurnEnded
from anyagent_testkit.events import EventReader, kinds, text_of

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).parent / "fake_old_codex.py"


def _old_codex(tmp_path: Path) -> AgentInstallation:
    shim = tmp_path / "codex"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return AgentInstallation.at("codex", shim)


async def test_a_steer_before_turn_started_waits_for_it_and_joins_the_turn(tmp_path: Path) -> None:
    env = {**os.environ, "FAKE_CODEX_START_DELAY": "1.5"}
    async with runtime_with_env(env) as runtime:
        session, events = await runtime.open(_old_codex(tmp_path), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events, timeout=20)
            await session.prompt("first")
            await anyio.sleep(0.3)  # the engine has the turn's ack (it steers only then), codex its turn/start
            delivery = await session.prompt("steered")  # answered turn/start; turn/started is > 1 s off
            assert isinstance(delivery.kind, Steered), delivery
            turn = await reader.turn()
            assert [type(e.stop) for e in kinds(turn, TurnEnded)] == [Completed]
            assert text_of(turn) == "You said: first + steered"


async def test_a_cancel_before_turn_started_still_stops_the_turn(tmp_path: Path) -> None:
    env = {**os.environ, "FAKE_CODEX_TURN_TIME": "5"}
    async with runtime_with_env(env) as runtime:
        session, events = await runtime.open(_old_codex(tmp_path), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events, timeout=20)
            await session.prompt("first")
            await session.cancel()
            turn = await reader.turn()
            assert [type(e.stop) for e in kinds(turn, TurnEnded)] == [Cancelled]
            assert text_of(turn) == ""  # it was interrupted, not run to its end
