"""Whole sessions over a real subprocess: a small adapter built on anyagent.process and
anyagent.wire, driven through Runtime and the engine, under faults."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path

import anyio
import pytest
from linessupport import SPAWNED, Plugin, agent
from procsupport import live_members

from anyagent import (
    AgentInstallation,
    Completed,
    Diagnostic,
    Failed,
    HandshakeTimeout,
    ProcessExited,
    Runtime,
    SessionOptions,
    SpawnFailed,
    TextDelta,
    TurnEnded,
    seam,
)

pytestmark = pytest.mark.anyio


def assert_reaped(pid: int) -> None:
    """The leader is reaped and nothing of its group runs on (killed members die within ms)."""
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    deadline = time.monotonic() + 2.0
    while live_members(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not live_members(pid)


async def test_a_turn_over_a_real_process_and_close_reaps_it(tmp_path: Path) -> None:
    async with Runtime(plugins=[Plugin()]) as runtime:
        session, events = await runtime.open(agent("normal"), SessionOptions.in_dir(tmp_path))
        pid = SPAWNED[-1]
        async with session:
            await session.prompt("hello")
            texts = []
            with anyio.fail_after(10):
                async for event in events:
                    if isinstance(event.kind, TextDelta):
                        texts.append(event.kind.text)
                    if isinstance(event.kind, TurnEnded):
                        assert event.kind.stop == Completed()
                        break
            assert texts == ["echo: hello"]
    assert_reaped(pid)


async def test_an_agent_dying_mid_turn_fails_the_turn_once_then_raises_with_stderr(tmp_path: Path) -> None:
    async with Runtime(plugins=[Plugin()]) as runtime:
        session, events = await runtime.open(agent("die"), SessionOptions.in_dir(tmp_path))
        pid = SPAWNED[-1]
        await session.prompt("hello")
        ends = []
        with anyio.fail_after(10), pytest.raises(ProcessExited) as info:
            async for event in events:
                if isinstance(event.kind, TurnEnded):
                    ends.append(event.kind.stop)
        assert ends == [Failed("the agent exited during the turn")]
        assert info.value.status == "exit status: 3"
        assert "fatal: the model crashed" in info.value.stderr
    assert_reaped(pid)


@pytest.mark.parametrize("mode", ["garbage", "fast-garbage"])
async def test_a_garbage_line_is_a_diagnostic_and_the_turn_goes_on(tmp_path: Path, mode: str) -> None:
    """``fast-garbage``: the driver's loop has a ``fast_frame`` (the text, as a bare ``TextDelta``;
    it raises on the ``boom`` frame): the same events in the same order."""
    async with Runtime(plugins=[Plugin()]) as runtime:
        session, events = await runtime.open(agent(mode), SessionOptions.in_dir(tmp_path))
        async with session:
            await session.prompt("hello")
            seen = []
            with anyio.fail_after(10):
                async for event in events:
                    seen.append(event.kind)
                    if isinstance(event.kind, TurnEnded):
                        break
            diagnostics = [k.diagnostic for k in seen if isinstance(k, Diagnostic)]
            assert [d.code for d in diagnostics] == ["bad_line", "frame_error"]
            assert diagnostics[1].raw == {"boom": True}  # the frame a translator choked on, in raw
            assert diagnostics[0].raw == "this is not json"
            assert isinstance(seen[-1], TurnEnded) and seen[-1].stop == Completed()
            texts = [k for k in seen if isinstance(k, TextDelta)]
            assert texts == [TextDelta("m1", "echo: hello")]
            order = [type(k).__name__ for k in seen if isinstance(k, (TextDelta, Diagnostic, TurnEnded))]
            assert order == ["TextDelta", "Diagnostic", "Diagnostic", "TurnEnded"]  # the wire's order


async def test_cancelling_open_mid_handshake_leaves_no_process(tmp_path: Path) -> None:
    async with Runtime(plugins=[Plugin()]) as runtime:
        with anyio.move_on_after(0.5) as scope:
            await runtime.open(agent("hang"), SessionOptions.in_dir(tmp_path))
        assert scope.cancelled_caught
    assert_reaped(SPAWNED[-1])


async def test_a_handshake_that_never_finishes_times_out_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seam, "HANDSHAKE_TIMEOUT", 0.5)
    async with Runtime(plugins=[Plugin()]) as runtime:
        with pytest.raises(HandshakeTimeout):
            await runtime.open(agent("hang"), SessionOptions.in_dir(tmp_path))
    assert_reaped(SPAWNED[-1])


async def test_a_missing_executable_is_spawn_failed(tmp_path: Path) -> None:
    missing = AgentInstallation(id="lines", name="Lines", executable_path=tmp_path / "nope", args=())
    async with Runtime(plugins=[Plugin()]) as runtime:
        with pytest.raises(SpawnFailed, match="nope"):
            await runtime.open(missing, SessionOptions.in_dir(tmp_path))


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return not live_members(pid)
    return False


@pytest.mark.parametrize("turn", [True, False], ids=["after-a-turn", "never-prompted"])
@pytest.mark.parametrize("drop", ["both", "events", "session"])
async def test_dropping_the_handles_of_an_idle_session_reaps_its_agent(tmp_path: Path, drop: str, turn: bool) -> None:
    # never-prompted: no deadline is pending at all, so only the drop itself can wake the engine
    async with Runtime(plugins=[Plugin()]) as runtime:
        session, events = await runtime.open(agent("normal"), SessionOptions.in_dir(tmp_path))
        pid = SPAWNED[-1]
        if turn:
            await session.prompt("hello")
            with anyio.fail_after(10):
                async for event in events:
                    if isinstance(event.kind, TurnEnded):
                        break
        # idle now: nothing will arrive from the agent to notice the drop
        if drop in ("both", "events"):
            del events
        if drop in ("both", "session"):
            del session
        gc.collect()
        with anyio.fail_after(2):
            while not process_gone(pid):
                await anyio.sleep(0.02)
