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

from anyagent import (
    AgentInstallation,
    Cancelled,
    Completed,
    Queued,
    SessionOptions,
    Steered,
    TextDelta,
    TurnEnded,
    TurnStarted,
)
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


async def test_a_cancel_codex_ignores_neither_wedges_the_session_nor_gets_the_next_prompt_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28 items 3a and 3b on codex's own wire: ``turn/interrupt`` is never answered, codex streams
    on past the engine's cancel deadline and ends the old turn itself 1.5 s later, and refuses a
    ``turn/start`` until then ("still running a turn"). The output after the deadline opens no turn,
    the next prompt is held (``Queued``) until codex's own end of the old turn, then runs."""
    import anyagent._engine as engine_module

    monkeypatch.setattr(engine_module, "CANCEL_GRACE", 0.3)
    env = {
        **os.environ,
        "FAKE_CODEX_IGNORE_INTERRUPT": "1.5",
        "FAKE_CODEX_START_DELAY": "0",
        "FAKE_CODEX_TURN_TIME": "0.4",
    }
    async with runtime_with_env(env) as runtime:
        session, events = await runtime.open(_old_codex(tmp_path), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events, timeout=20)
            await session.prompt("first")
            await reader.kind(TextDelta)
            await session.cancel()
            first = await reader.turn()
            assert [type(e.stop) for e in kinds(first, TurnEnded)] == [Cancelled]  # the engine's deadline
            await anyio.sleep(0.4)  # codex streams on into the idle session (~20 deltas)
            delivery = await session.prompt("second")  # codex still runs the old turn for ~0.8 s
            assert isinstance(delivery.kind, Queued), delivery
            second = await reader.turn()
            assert [type(e.stop) for e in kinds(second, TurnEnded)] == [Completed], kinds(second, TurnEnded)
            assert text_of(second).endswith("You said: second")
            origins = [type(e.origin).__name__ for e in kinds(reader.seen, TurnStarted)]
            assert origins == ["PromptOrigin", "PromptOrigin"]  # no agent turn opened by the late output
