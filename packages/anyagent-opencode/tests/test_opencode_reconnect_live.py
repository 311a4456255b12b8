"""Live tier: the real ``opencode serve`` (1.18.33) with its event stream cut mid-turn.

Run with ``pytest -m live --live``. The adapter's ``opencode`` is ``opencode_cutproxy.py``: the
real server behind a loopback TCP proxy the test tells to close the ``/event`` connection (at an
event boundary or at once), to hold or refuse the reconnect, while the real server carries on with
its turn against the fake model. opencode 1.18.33's ``/event`` has no replay (its SSE events carry
no ``id:`` and it reads no ``Last-Event-ID``), so what the gap hid comes from the adapter's resync
through the REST API; each scenario asserts the events the user sees: every piece of text once, a
request surfaced once, exactly one ``TurnEnded``, and a typed failure when the stream cannot be
reopened.
"""

from __future__ import annotations

import json
import shlex
import stat
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from opencode_harness import WAIT, runtime_with_env, server_password

from anyagent import (
    AgentInstallation,
    Answer,
    Cancelled,
    Completed,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    Failed,
    MessageEnded,
    PermissionChoice,
    PermissionRequest,
    ProcessExited,
    RequestOpened,
    Session,
    SessionOptions,
    TextDelta,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
)
from anyagent_opencode import OpencodeDriver, adapter
from anyagent_testkit.events import EventReader, kinds, text_of
from anyagent_testkit.fakemodel import ECHO_PREFIX, TOOL_DONE_PREFIX, FakeModel, Reply
from anyagent_testkit.live import LiveAgent

pytestmark = [pytest.mark.live, pytest.mark.anyio]

PROXY = Path(__file__).with_name("opencode_cutproxy.py")


@pytest.fixture
def anyio_backend() -> str:
    """The live tier runs on asyncio only (the wire tests cover trio): it keeps CI tight."""
    return "asyncio"


@attrs.define
class Cut:
    """The test's end of ``opencode_cutproxy.py``'s control connection."""

    control_file: Path

    async def __call__(self, command: str) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            while not self.control_file.exists():
                await anyio.sleep(0.02)
            port = int(self.control_file.read_text())
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(command.encode() + b"\n")
                line = await BufferedByteReceiveStream(stream).receive_until(b"\n", 65536)
        reply: dict[str, Any] = json.loads(line)
        return reply


@attrs.define
class Stage:
    session: Session
    reader: EventReader
    cut: Cut
    model: FakeModel


@pytest.fixture
async def stage(live_agent: Callable[..., LiveAgent], fake_model: FakeModel, tmp_path: Path) -> AsyncIterator[Stage]:
    agent = live_agent("opencode")
    shim = tmp_path / "bin" / "opencode"
    shim.parent.mkdir()
    control = tmp_path / "cut-control"
    argv = [sys.executable, str(PROXY), "--real", str(agent.executable), "--control-file", str(control), "--"]
    shim.write_text(f'#!/bin/sh\nexec {shlex.join(argv)} "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    async with runtime_with_env(agent.env) as runtime:
        installation = AgentInstallation.at("opencode", shim)
        session, events = await runtime.open(installation, SessionOptions.in_dir(agent.workspace))
        async with session:
            yield Stage(session, EventReader(events, timeout=WAIT), Cut(control), fake_model)


def _slow_text(chunks: int) -> str:
    return "".join(f"slow{index} " for index in range(chunks))


def _deltas(events: list[Any]) -> list[str]:
    return [e.kind.text for e in events if isinstance(e.kind, TextDelta)]


async def _idle_upstream(stage: Stage) -> None:
    """Wait until the real server (asked directly, not through the proxy) reports the session idle."""
    driver = stage.session._engine.driver
    assert isinstance(driver, OpencodeDriver)
    port = (await stage.cut("stats"))["upstream"]
    auth = ("opencode", server_password(driver.process.pid).decode())
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", auth=auth, trust_env=False) as http:
        with anyio.fail_after(WAIT):
            while True:
                status = (await http.get("/session/status")).json()
                if status.get(driver.session_id, {}).get("type", "idle") == "idle":
                    return
                await anyio.sleep(0.05)


async def _opened_streams(stage: Stage, count: int) -> None:
    """Wait until the adapter has opened ``count`` event streams through the proxy."""
    with anyio.fail_after(WAIT):
        while (await stage.cut("stats"))["opened"] < count:
            await anyio.sleep(0.02)


def _one_end(events: list[Any]) -> Any:
    ends = kinds(events, TurnEnded)
    assert len(ends) == 1, ends
    return ends[0].stop


def _opened(events: list[Any]) -> list[Any]:
    return [k.request for k in kinds(events, RequestOpened)]


async def test_a_drop_mid_reply_loses_and_repeats_no_text(stage: Stage) -> None:
    """(1) The stream drops while the reply streams and stays down for about five chunks."""
    stage.model.queue(Reply.slow(16, 0.12))
    start = len(stage.reader.seen)
    await stage.session.prompt("stream something")
    await stage.reader.kind(TextDelta)
    await stage.reader.kind(TextDelta)
    await stage.cut("hold")
    assert (await stage.cut("cut"))["cut"] == 1
    await anyio.sleep(0.6)  # about five chunks stream while nobody listens
    assert (await stage.cut("release"))["released"] == 1
    await stage.reader.turn()
    events = stage.reader.seen[start:]
    assert text_of(events) == _slow_text(16), _deltas(events)
    assert isinstance(_one_end(events), Completed)
    assert len(kinds(events, MessageEnded)) == 1 and kinds(events, ContextUsage)
    assert await stage.cut("stats") == {**(await stage.cut("stats")), "opened": 2, "cut": 1}


async def test_a_drop_around_a_pending_permission_surfaces_it_once(stage: Stage) -> None:
    """(2) The stream drops just before opencode's ``permission.asked`` (so the event is lost),
    then just after it (so the resync lists it again); then a permission a cancel left listed
    must not come back after a later drop."""
    for cut, word in (("cut_before", "lost"), ("cut_after", "seen")):
        start = len(stage.reader.seen)
        await stage.cut(f"{cut} permission.asked")
        await stage.session.prompt(f"RUN echo {word}")
        await stage.cut("wait")
        request = await stage.reader.kind(RequestOpened)
        assert isinstance(request.request, PermissionRequest)
        await stage.session.answer(request.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        await stage.reader.turn()
        events = stage.reader.seen[start:]
        assert len(_opened(events)) == 1, (cut, _opened(events))
        assert isinstance(_one_end(events), Completed)
        assert text_of(events).endswith(TOOL_DONE_PREFIX + word), text_of(events)
        tools = [k.tool for k in kinds(events, ToolUpdated)]
        assert tools and tools[-1].status is ToolStatus.COMPLETED, tools
    assert (await stage.cut("stats"))["opened"] == 3

    await stage.session.prompt("RUN echo stale")
    request = await stage.reader.kind(RequestOpened)
    await stage.session.cancel()
    assert isinstance(kinds(await stage.reader.turn(), TurnEnded)[-1].stop, Cancelled)
    # opencode still lists that permission (GET /permission); a resync must not reopen it
    stage.model.queue(Reply.slow(6, 0.1))
    start = len(stage.reader.seen)
    await stage.session.prompt("more")
    await stage.reader.kind(TextDelta)
    await stage.cut("cut")
    await stage.reader.turn()
    events = stage.reader.seen[start:]
    assert _opened(events) == [], _opened(events)
    assert text_of(events) == _slow_text(6) and isinstance(_one_end(events), Completed)


async def test_an_idle_while_disconnected_ends_the_turn_once(stage: Stage) -> None:
    """(3) The turn's end (and in the second turn the whole turn) happens while the stream is down."""
    stage.model.queue(Reply.slow(5, 0.1))
    start = len(stage.reader.seen)
    await stage.session.prompt("end while away")
    await stage.reader.kind(TextDelta)
    await stage.cut("hold")
    await stage.cut("cut")
    await _idle_upstream(stage)
    await stage.cut("release")
    await stage.reader.turn()
    events = stage.reader.seen[start:]
    assert text_of(events) == _slow_text(5), _deltas(events)
    assert isinstance(_one_end(events), Completed)
    assert len(kinds(events, MessageEnded)) == 1 and kinds(events, ContextUsage)

    # down before the prompt: busy, text and idle all happen while nobody listens
    start = len(stage.reader.seen)
    await stage.cut("hold")
    await stage.cut("cut")
    await stage.session.prompt("all while away")
    await anyio.sleep(0.5)  # the prompt reaches the server, which answers and goes idle
    await _idle_upstream(stage)
    await stage.cut("release")
    await stage.reader.turn(timeout=20)
    await anyio.sleep(0.5)  # a second TurnEnded would come now
    events = stage.reader.seen[start:] + [e async for e in _drain(stage.reader)]
    assert text_of(events) == ECHO_PREFIX + "all while away", text_of(events)
    assert isinstance(_one_end(events), Completed)
    assert len(kinds(events, MessageEnded)) == 1


async def _drain(reader: EventReader) -> AsyncIterator[Any]:
    """The events already waiting (no wait)."""
    with anyio.move_on_after(0.2):
        while True:
            yield await reader.next(statuses=True)


async def test_repeated_drops_lose_nothing_until_the_budget_then_fail_typed(
    stage: Stage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(4) Three drops in one turn lose and repeat nothing; a stream that cannot be reopened (every
    reconnect refused, then every reconnect left unanswered) fails the turn typed, never hangs."""
    stage.model.queue(Reply.slow(12, 0.12))
    start = len(stage.reader.seen)
    await stage.session.prompt("three drops")
    await stage.reader.kind(TextDelta)
    for opened in (1, 2, 3):  # a part that missed text streams no more deltas: cut by the clock
        assert (await stage.cut("cut"))["cut"] == 1
        await _opened_streams(stage, opened + 1)
        await anyio.sleep(0.2)
    await stage.reader.turn()
    events = stage.reader.seen[start:]
    assert text_of(events) == _slow_text(12), _deltas(events)
    assert isinstance(_one_end(events), Completed)
    assert (await stage.cut("stats"))["opened"] == 4

    # every reconnect fails: the first three refused, the rest held unanswered past the timeout
    monkeypatch.setattr(adapter, "REOPEN_TIMEOUT", 0.3)
    stage.model.queue(Reply.slow(40, 0.1))
    start = len(stage.reader.seen)
    await stage.session.prompt("never back")
    await stage.reader.kind(TextDelta)
    await stage.cut("refuse 3")
    await stage.cut("hold")
    await stage.cut("cut")
    with anyio.fail_after(20), pytest.raises(ProcessExited):  # the session ends: the server is stopped
        async for _ in _rest(stage.reader):
            pass
    events = stage.reader.seen[start:]
    stop = _one_end(events)
    assert isinstance(stop, Failed) and "could not be reopened" in stop.message, stop
    assert "no answer within 0.3 s" in stop.message, stop
    wire = [d.diagnostic for d in kinds(events, Diagnostic) if d.diagnostic.code == DiagnosticCode.WIRE_FAILED]
    assert len(wire) == 1 and wire[0].message == stop.message, wire


async def _rest(reader: EventReader) -> AsyncIterator[Any]:
    async for event in reader.events:
        reader.seen.append(event)
        yield event
