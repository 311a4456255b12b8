"""WireRecorder: the JSONL shape of the shared recordings, mode 0600, and failures that never fail a
session. Real agent processes (tests/fakes/), asyncio and trio."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from anyagent import SessionOptions
from anyagent.process import AgentProcess, spawn
from anyagent.wire import BadLine, HttpWire, JsonLines, WireRecorder

pytestmark = pytest.mark.anyio

FAKES = Path(__file__).parent / "fakes"


def agent(*args: str) -> list[str]:
    return [sys.executable, str(FAKES / "stdio_agent.py"), *args]


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@asynccontextmanager
async def running(argv: list[str], cwd: Path, **kwargs: Any) -> AsyncIterator[AgentProcess]:
    with anyio.fail_after(15):
        proc = await spawn(argv, cwd=cwd, **kwargs)
        try:
            yield proc
        finally:
            await proc.aclose(grace=0.5)


async def test_both_directions_in_the_shared_recordings_shape(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder.open(path)
    argv = agent("echo")
    async with running(argv, tmp_path, recorder=recorder) as proc:
        lines = JsonLines(proc)
        received = [await lines.receive()]
        for n in range(3):
            await lines.send({"type": "user", "n": n, "text": "héllo"})
            received.append(await lines.receive())
    recorder.close()
    got = records(path)
    assert got[0] == {"_meta": {"cmd": argv, "cwd": str(tmp_path)}, "_t": 0.0}
    assert got[-1]["_note"] == {"exit": 0}
    body = got[1:-1]
    assert [{k: v for k, v in r.items() if k != "_t"} for r in body] == [
        received[0],
        *[frame for n in range(3) for frame in ({"_sent": {"type": "user", "n": n, "text": "héllo"}}, received[n + 1])],
    ]
    stamps = [r["_t"] for r in got]
    assert stamps == sorted(stamps) and all(isinstance(t, float) and round(t, 3) == t for t in stamps)
    assert path.read_text(encoding="utf-8").splitlines()[2] == '{"_sent":{"type":"user","n":0,"text":"héllo"},"_t":' + (
        f"{got[2]['_t']:.3f}" + "}"
    )


async def test_agent_bytes_are_kept_and_raw_lines_recorded(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder.open(path)
    async with running(agent("garbage"), tmp_path, recorder=recorder, max_line=50_000) as proc:
        frames = [frame async for frame in JsonLines(proc)]
    recorder.close()
    got = records(path)
    text = path.read_text(encoding="utf-8").splitlines()
    assert text[2].startswith('{"n": 1,"_t":')  # the agent's own serialization, _t spliced in
    raws = [r for r in got if "_raw" in r]
    bad = [frame for frame in frames if isinstance(frame, BadLine)]
    assert [r["_raw"] for r in raws if "_size" not in r] == [b.text for b in bad if b.size <= 50_000]
    oversize = [r for r in raws if "_size" in r]
    assert len(oversize) == 1 and oversize[0]["_size"] == 100_000 and len(oversize[0]["_raw"]) == 4096


async def test_recording_is_complete_whenever_the_reader_is_idle(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder.open(path)
    async with running(agent("echo"), tmp_path, recorder=recorder) as proc:
        lines = JsonLines(proc)
        ready = await lines.receive()
        assert isinstance(ready, dict)
        assert records(path)[-1] == {**ready, "_t": records(path)[-1]["_t"]}  # on disk before we wait again
        await lines.send({"x": 1})
        await lines.receive()
        assert list(records(path)[-1]) == ["echo", "_t"]
    recorder.close()


async def test_file_is_created_0600_and_appended(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    old = os.umask(0)
    try:
        recorder = WireRecorder.open(path)
    finally:
        os.umask(old)
    recorder.note({"step": "one"})
    recorder.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o644)
    again = WireRecorder.open(path)
    again.note({"step": "two"})
    again.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [r["_note"] for r in records(path)] == [{"step": "one"}, {"step": "two"}]


async def test_a_bad_path_is_reported_once_and_the_session_runs(tmp_path: Path) -> None:
    reports: list[str] = []
    recorder = WireRecorder.open(tmp_path / "missing" / "wire.jsonl", on_failure=reports.append)
    assert recorder.failure is not None and "No such file" in recorder.failure
    assert reports == [recorder.failure]
    async with running(agent("echo"), tmp_path, recorder=recorder) as proc:
        lines = JsonLines(proc)
        await lines.receive()
        await lines.send({"ok": True})
        assert await lines.receive() == {"echo": {"ok": True}}
    assert recorder.take_failure() == recorder.failure
    assert recorder.take_failure() is None
    assert reports == [recorder.failure]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
async def test_disk_full_stops_recording_once_and_never_fails_a_turn(tmp_path: Path) -> None:
    mode = os.stat("/dev/full").st_mode
    reports: list[str] = []

    def explode(message: str) -> None:
        reports.append(message)
        raise RuntimeError("a broken callback is swallowed too")

    recorder = WireRecorder.open(tmp_path / "wire.jsonl", on_failure=explode)
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        os.dup2(full, recorder._fd)  # the disk fills up under an open recording
    finally:
        os.close(full)
    assert not reports
    async with running(agent("echo"), tmp_path, recorder=recorder) as proc:
        lines = JsonLines(proc)
        await lines.receive()
        for n in range(20):
            await lines.send({"n": n})
            assert await lines.receive() == {"echo": {"n": n}}
    assert len(reports) == 1 and "No space left on device" in reports[0]
    assert recorder.failure == reports[0]
    assert os.stat("/dev/full").st_mode == mode


async def test_session_options_path_feeds_the_recorder(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).record_wire(tmp_path / "rec.jsonl")
    assert options.record_wire_path is not None
    recorder = WireRecorder.open(options.record_wire_path)
    async with running(agent("exit", "2"), tmp_path, recorder=recorder) as proc:
        await proc.wait()
    recorder.close()
    assert records(tmp_path / "rec.jsonl")[-1]["_note"] == {"exit": 2}


async def test_http_exchanges_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "http.jsonl"
    recorder = WireRecorder.open(path)
    argv = [sys.executable, str(FAKES / "http_agent.py"), "0"]
    async with running(argv, tmp_path, drain_stdout=True, recorder=recorder) as proc:
        with anyio.fail_after(10):
            while not (found := re.search(r"listening on (\d+)", proc.stdout_tail)):
                await anyio.sleep(0.02)
        url = f"http://127.0.0.1:{found.group(1)}"
        async with HttpWire(url, auth=("u", "secret"), recorder=recorder) as http:
            await http.request("POST", "/echo", json={"a": 1})
            await http.request("GET", "/text")
            async with http.events("/event") as stream:
                events = [event async for event in stream]
    recorder.close()
    shapes = [r["_http"] for r in records(path) if "_http" in r]
    assert "secret" not in path.read_text()  # headers are not recorded
    assert shapes[0] == {"kind": "request", "id": 1, "method": "POST", "url": f"{url}/echo", "body": {"a": 1}}
    assert shapes[1]["kind"] == "response" and shapes[1]["id"] == 1 and shapes[1]["status"] == 200
    assert shapes[1]["body"]["body"] == {"a": 1}
    assert shapes[3] == {"kind": "response", "id": 2, "status": 200, "text": "plain words"}
    assert shapes[4] == {"kind": "sse_open", "stream": 3, "url": f"{url}/event", "status": 200}
    sse = [s for s in shapes if s["kind"] == "sse"]
    assert len(sse) == len(events) == 5
    assert sse[1]["data"] == {"directory": "/w", "payload": {"type": "session.idle", "id": 1}}  # as sent
    assert sse[3] == {"kind": "sse", "stream": 3, "event": "message", "id": "7", "text": "not json at all"}
    assert shapes[-1] == {"kind": "sse_end", "stream": 3}


# ---------------------------------------------------------------------------------------------
# only a regular file, strict JSON


def strict_records(path: Path) -> list[dict[str, Any]]:
    def refuse(name: str) -> Any:
        raise ValueError(f"non-strict JSON: {name}")

    return [json.loads(line, parse_constant=refuse) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "wire.fifo"
    os.mkfifo(fifo)
    reports: list[str] = []
    try:
        with anyio.fail_after(5):  # before: the open blocked (the event loop) until someone read the FIFO
            recorder = await anyio.to_thread.run_sync(
                lambda: WireRecorder.open(fifo, on_failure=reports.append), abandon_on_cancel=True
            )
    finally:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # frees an open that blocked
    assert recorder.failure is not None and "not a regular file" in recorder.failure
    assert reports == [recorder.failure]
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # with a reader the open succeeds: still refused
    try:
        again = WireRecorder.open(fifo)
        assert again.failure is not None and "not a regular file" in again.failure
        again.note({"never": "written"})
        assert os.read(reader, 100) == b""  # nothing written; the writer is gone
    finally:
        os.close(reader)
    async with running(agent("echo"), tmp_path, recorder=recorder) as proc:
        lines = JsonLines(proc)
        await lines.receive()
        await lines.send({"ok": True})
        assert await lines.receive() == {"echo": {"ok": True}}


async def test_a_device_is_refused(tmp_path: Path) -> None:
    recorder = WireRecorder.open(os.devnull)
    assert recorder.failure is not None and "not a regular file" in recorder.failure


async def test_a_symlink_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    target.chmod(0o644)
    link = tmp_path / "wire.jsonl"
    link.symlink_to(target)
    reports: list[str] = []
    recorder = WireRecorder.open(link, on_failure=reports.append)
    assert recorder.failure is not None and "symbolic link" in recorder.failure
    assert reports == [recorder.failure]
    recorder.process_started(["agent"], str(tmp_path))
    recorder.note({"x": 1})
    recorder.close()
    assert target.read_text() == "keep me\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "created-through-the-link.jsonl")
    assert WireRecorder.open(dangling).failure is not None
    assert not (tmp_path / "created-through-the-link.jsonl").exists()


async def test_recordings_are_strict_json_even_when_the_agent_writes_nan(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder.open(path)
    script = (
        "import sys\n"
        'sys.stdout.write(\'{"cost": NaN, "n": [Infinity, -Infinity, 1.5]}\\n\')\n'
        'sys.stdout.write(\'{"text": "NaN stays a string", "ok": true}\\n\')\n'
        "sys.stdout.flush()\n"
    )
    async with running([sys.executable, "-c", script], tmp_path, recorder=recorder) as proc:
        assert len([frame async for frame in JsonLines(proc)]) == 2
        await proc.wait()
    recorder.received({"late": float("nan")})
    recorder.note({"ratio": float("inf")})
    recorder.sent({"sent": float("-inf"), "bad": "\ud800"})  # a lone surrogate: the standard codec path
    recorder.received_raw("raw")
    recorder.http({"kind": "response", "body": {"v": float("nan"), "s": "\udc80"}})
    recorder.close()
    got = strict_records(path)
    bodies = [{k: v for k, v in r.items() if k != "_t"} for r in got]
    assert {"cost": None, "n": [None, None, 1.5]} in bodies
    assert {"text": "NaN stays a string", "ok": True} in bodies
    assert {"late": None} in bodies
    assert {"_note": {"ratio": None}} in bodies
    assert {"_sent": {"sent": None, "bad": "\ud800"}} in bodies
    assert {"_http": {"kind": "response", "body": {"v": None, "s": "\udc80"}}} in bodies


async def test_redacted_values_never_reach_the_file(tmp_path: Path) -> None:
    """``redact``: a JSON string equal to a secret becomes ``"<redacted>"`` in both directions (the
    agent's echo too); a long secret also inside other strings; other strings are kept."""
    path = tmp_path / "wire.jsonl"
    recorder = WireRecorder.open(path)
    recorder.redact(["t", "Bearer sk-long-secret", "", 'q"uoté'])
    async with running(agent("echo"), tmp_path, recorder=recorder) as proc:
        lines = JsonLines(proc)
        await lines.receive()
        secret = "Bearer sk-long-secret"
        frame = {"env": {"TOKEN": "t"}, "h": secret, "said": f"the {secret}", "q": 'q"uoté'}
        await lines.send({**frame, "keep": "t is a letter"})
        echoed = await lines.receive()
    recorder.close()
    assert isinstance(echoed, dict) and echoed["echo"]["env"] == {"TOKEN": "t"}  # the agent got the values
    text = path.read_text(encoding="utf-8")
    assert "sk-long-secret" not in text and '"t"' not in text and "uot" not in text
    sent, back = [r for r in records(path) if "_sent" in r or "echo" in r][-2:]
    redacted = {"env": {"TOKEN": "<redacted>"}, "h": "<redacted>", "said": "the <redacted>", "q": "<redacted>"}
    assert sent["_sent"] == {**redacted, "keep": "t is a letter"}
    assert back["echo"] == {**redacted, "keep": "t is a letter"}
