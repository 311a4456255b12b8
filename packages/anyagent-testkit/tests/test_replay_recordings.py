"""Play every shared recording through the replayer, as a real subprocess, with a lock-step client.

The client sends each recorded ``_sent`` frame with fresh ids and must receive every recorded
agent frame, in order, with the answers readdressed to its ids. ``--strict`` makes the replayer
fail on any kind mismatch, so a wrong frame kind shows up as a non-zero exit.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from testkit_wire_client import FreshIds

from anyagent_testkit.replay import LineKind, load_recording, replay_command
from anyagent_testkit.stdio import JsonlProcess, RawLine

pytestmark = pytest.mark.anyio

RECORDINGS = Path(os.environ.get("ANYAGENT_RECORDINGS", "/work/shared/recordings"))
FRAME_TIMEOUT = 10.0


def _cases() -> list[tuple[Path, int]]:
    if not RECORDINGS.is_dir():
        return []
    cases = []
    for path in sorted(RECORDINGS.rglob("*.jsonl")):
        for number in range(1, len(load_recording(path).segments) + 1):
            cases.append((path, number))
    return cases


CASES = _cases()


def _case_id(case: tuple[Path, int]) -> str:
    path, number = case
    return f"{path.relative_to(RECORDINGS)}#{number}"


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason=f"{RECORDINGS} does not exist (shared recordings not present)")
def test_the_shared_recordings_are_all_found() -> None:
    names = {path.parent.name for path, _ in CASES}
    assert {"claude", "codex", "pi", "antigravity"} <= names
    assert len({path for path, _ in CASES}) >= 40


@pytest.mark.skipif(not CASES, reason=f"{RECORDINGS} does not exist (shared recordings not present)")
@pytest.mark.parametrize("case", CASES, ids=[_case_id(case) for case in CASES])
async def test_a_lock_step_client_receives_every_agent_frame_readdressed(case: tuple[Path, int]) -> None:
    path, number = case
    lines = load_recording(path).segment(number)
    ids = FreshIds()
    received = 0
    async with JsonlProcess.open(replay_command(path, strict=True, process=number)) as agent:
        for line in lines:
            if line.kind is LineKind.AGENT:
                frame = await agent.receive(FRAME_TIMEOUT)
                assert frame == ids.expected(line.value), f"{path.name}:{line.number}"
                received += 1
            elif line.kind is LineKind.RAW:
                assert await agent.receive(FRAME_TIMEOUT) == RawLine(line.value)
                received += 1
            elif line.kind is LineKind.CLIENT:
                await agent.send(ids.freshen(line.value))
            elif line.signal_name == "SIGINT":
                agent.send_signal(signal.SIGINT)
        await agent.close_stdin()
        status = await agent.wait(FRAME_TIMEOUT)
        assert status == 0, agent.stderr
        assert "fully played" in agent.stderr
    assert received == sum(1 for line in lines if line.kind in (LineKind.AGENT, LineKind.RAW))
