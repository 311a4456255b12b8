"""Live tier: the real ``opencode serve`` (1.18.33) with its event stream cut mid-turn.

Run with ``pytest -m live --live``. The adapter's ``opencode`` is ``opencode_cutproxy.py``: the
real server behind a loopback TCP proxy the test tells to close the ``/event`` connection (at an
event boundary or at once), to hold or refuse the reconnect, while the real server carries on with
its turn against the fake model. opencode 1.18.33's ``/event`` replays nothing (its SSE events
carry no ``id:`` and it reads no ``Last-Event-ID``), so what a gap hid comes from the adapter's
resync through the REST API. Each scenario asserts the events the user sees (``opencode_reconnects``).
With ``ANYAGENT_OPENCODE_RECORD=1`` the recorded scenario also rewrites
``tests/recordings/reconnects.jsonl`` (the recorded tier replays it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from opencode_harness import RECORDINGS, SANITIZED_ROOT, WAIT, recording_wanted, runtime_with_env, sanitize
from opencode_reconnects import Cut, Stage, deltas, one_end, reconnects, slow_text, write_cut_shim

from anyagent import (
    AgentInstallation,
    Completed,
    Diagnostic,
    DiagnosticCode,
    Failed,
    ProcessExited,
    Session,
    SessionOptions,
    TextDelta,
)
from anyagent_opencode import adapter
from anyagent_testkit.events import EventReader, kinds, text_of
from anyagent_testkit.fakemodel import FakeModel, Reply
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    """The live tier runs on asyncio only (the recorded tier covers trio): it keeps CI tight."""
    return "asyncio"


async def test_reconnects(live_agent: Callable[..., LiveAgent], fake_model: FakeModel, tmp_path: Path) -> None:
    """Scenarios (1)-(3): see ``opencode_reconnects.reconnects``; recorded for the recorded tier."""
    agent = live_agent("opencode")
    control = tmp_path / "cut-control"
    shim = write_cut_shim(agent.root / "bin", agent.executable, control)
    record = tmp_path / "reconnects.jsonl"
    async with runtime_with_env(agent.env) as runtime:
        options = SessionOptions.in_dir(agent.workspace).record_wire(record)
        session, events = await runtime.open(AgentInstallation.at("opencode", shim), options)
        async with session:
            await reconnects(Stage(session, EventReader(events, timeout=WAIT), Cut(control), fake_model))
    if recording_wanted():
        replacements = {str(agent.root): SANITIZED_ROOT, str(shim): "opencode", str(agent.executable): "opencode"}
        replacements[str(agent.root).lstrip("/")] = SANITIZED_ROOT.lstrip("/")  # opencode's relative "path"
        sanitize(record, RECORDINGS / "reconnects.jsonl", replacements)


async def _dropped_reply(
    session: Session, reader: EventReader, cut: Cut, model: FakeModel, *, chunks: int, drops: int
) -> None:
    """A slow reply whose stream drops ``drops`` times (each cut after the reconnect before it):
    all its text once, one ``Completed``."""
    start = len(reader.seen)
    model.queue(Reply.slow(chunks, 0.12))
    await session.prompt(f"a reply cut {drops} times")
    await reader.kind(TextDelta)
    opened = (await cut("stats"))["opened"]
    for count in range(1, drops + 1):  # a part that missed text streams no more deltas: cut by the clock
        assert (await cut("cut"))["cut"] == 1
        await cut.streams_opened(opened + count)
        await anyio.sleep(0.2)
    await reader.turn()
    seen = reader.seen[start:]
    assert text_of(seen) == slow_text(chunks), deltas(seen)
    assert isinstance(one_end(seen), Completed)


async def test_repeated_drops_lose_nothing_then_a_stream_that_stays_down_fails_typed(
    live_agent: Callable[..., LiveAgent], fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(4) Three drops in one turn lose and repeat nothing; a stream that cannot be reopened (the
    first reconnects refused, the rest left unanswered) fails the turn typed and ends the
    session, never hangs. Then the session resumed in a new server: a drop there catches up the
    new turn only, not the history."""
    agent = live_agent("opencode")
    control = tmp_path / "cut-control"
    shim = write_cut_shim(agent.root / "bin", agent.executable, control)
    cut = Cut(control)
    async with runtime_with_env(agent.env) as runtime:
        options = SessionOptions.in_dir(agent.workspace)
        session, events = await runtime.open(AgentInstallation.at("opencode", shim), options)
        reader = EventReader(events, timeout=WAIT)
        async with session:
            await _dropped_reply(session, reader, cut, fake_model, chunks=12, drops=3)

            monkeypatch.setattr(adapter, "REOPEN_TIMEOUT", 0.3)
            fake_model.queue(Reply.slow(40, 0.1))
            start = len(reader.seen)
            await session.prompt("never back")
            await reader.kind(TextDelta)
            for command in ("refuse 3", "hold", "cut"):
                await cut(command)
            with anyio.fail_after(20), pytest.raises(ProcessExited):  # the session ends: the server is stopped
                async for event in events:
                    reader.seen.append(event)
            seen: list[Any] = reader.seen[start:]
            stop = one_end(seen)
            assert isinstance(stop, Failed) and "could not be reopened" in stop.message, stop
            assert "no answer within 0.3 s" in stop.message, stop
            wire = [d.diagnostic for d in kinds(seen, Diagnostic) if d.diagnostic.code == DiagnosticCode.WIRE_FAILED]
            assert len(wire) == 1 and wire[0].message == stop.message, wire
            token = session.info().resume_token
        assert token is not None

        # resumed in a new server, a drop: the resync sends this turn's text, not the history's
        options = SessionOptions.in_dir(agent.workspace).resume(token)
        session, events = await runtime.open(AgentInstallation.at("opencode", shim), options)
        reader = EventReader(events, timeout=WAIT)
        async with session:
            await _dropped_reply(session, reader, cut, fake_model, chunks=8, drops=1)
