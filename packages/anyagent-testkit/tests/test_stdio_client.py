"""JsonlProcess against real child processes: framing, stderr draining, and reaping the whole group."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import anyio
import pytest

from anyagent_testkit.stdio import JsonlProcess, ProcessEnded, RawLine

pytestmark = pytest.mark.anyio
TIMEOUT = 10.0


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "child.py"
    path.write_text(body, encoding="utf-8")
    return [sys.executable, str(path)]


async def test_frames_raw_lines_and_oversized_lines(tmp_path: Path) -> None:
    child = _script(
        tmp_path,
        "import sys, json\n"
        "sys.stderr.write('e' * 1_000_000 + 'TAIL')\n"
        "sys.stderr.flush()\n"
        "print('x' * 5000)\n"
        "print('not json')\n"
        "print(json.dumps({'echo': json.loads(sys.stdin.readline())}))\n",
    )
    async with JsonlProcess.open(child, max_line=1000) as proc:
        oversized = await proc.receive(TIMEOUT)
        assert isinstance(oversized, RawLine)
        assert oversized.truncated
        assert await proc.receive(TIMEOUT) == RawLine("not json")
        await proc.send({"n": 1})
        assert await proc.receive(TIMEOUT) == {"echo": {"n": 1}}
        with pytest.raises(ProcessEnded):
            await proc.receive(TIMEOUT)
        assert await proc.wait(TIMEOUT) == 0
    assert proc.stderr.endswith("TAIL")
    assert len(proc.stderr) <= 64 * 1024


async def test_a_stubborn_child_and_its_group_are_killed_and_reaped(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    child = _script(
        tmp_path,
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"p = subprocess.Popen(['sleep', '60'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "print('{\"ready\": true}', flush=True)\n"
        "while True:\n"
        "    time.sleep(1)\n",
    )
    started = time.monotonic()
    async with JsonlProcess.open(child, grace=0.3) as proc:
        assert await proc.receive(TIMEOUT) == {"ready": True}
    assert time.monotonic() - started < 5.0
    assert proc.process.returncode is not None
    grandchild = int(pid_file.read_text())
    with anyio.fail_after(5):
        while _alive(grandchild):
            await anyio.sleep(0.05)


async def test_receive_until_collects_frames_up_to_the_match(tmp_path: Path) -> None:
    child = _script(tmp_path, "for i in range(5):\n    print('{\"i\": %d}' % i, flush=True)\n")
    async with JsonlProcess.open(child) as proc:
        frames = await proc.receive_until(lambda frame: frame["i"] == 2, timeout=TIMEOUT)
        assert frames == [{"i": 0}, {"i": 1}, {"i": 2}]
        assert proc.received == frames


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False


async def test_wait_returns_with_everything_the_child_wrote_to_stderr(tmp_path: Path) -> None:
    """What a child writes to stderr just before it exits is in ``stderr`` once ``wait`` returns
    (the replayer's "fully played" line is read that way)."""
    child = _script(tmp_path, "import sys\nsys.stderr.write('s' * 200_000 + ' fully played')\n")
    for _ in range(5):
        async with JsonlProcess.open(child) as proc:
            assert await proc.wait(TIMEOUT) == 0
            assert proc.stderr.endswith(" fully played")
