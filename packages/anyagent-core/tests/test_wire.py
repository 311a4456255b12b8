"""anyagent.wire: JSON-lines framing and writing over real child processes, and the HTTP + SSE helper
against a real local HTTP server (tests/fakes/http_agent.py). Every async test runs on asyncio and trio."""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import threading
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest
from anyio.abc import ByteReceiveStream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anyagent import ProcessExited, ProtocolFailed
from anyagent.process import AgentProcess, spawn
from anyagent.wire import BadLine, HttpWire, JsonLines, SseEvent

FAKES = Path(__file__).parent / "fakes"
WAIT = 15.0


def agent(*args: str) -> list[str]:
    return [sys.executable, str(FAKES / "stdio_agent.py"), *args]


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


@asynccontextmanager
async def running(argv: list[str], cwd: Path, **kwargs: Any) -> AsyncIterator[AgentProcess]:
    """A spawned process, closed afterwards; the test fails on a hang or an fd leak."""
    fds = fd_count()
    with anyio.fail_after(WAIT):
        proc = await spawn(argv, cwd=cwd, **kwargs)
        try:
            yield proc
        finally:
            await proc.aclose(grace=0.5)
    with anyio.fail_after(5):
        while fd_count() != fds:  # the reactor closes its pipe a moment after EOF
            await anyio.sleep(0.01)


async def collect(lines: JsonLines) -> list[dict[str, Any] | BadLine]:
    return [frame async for frame in lines]


# ---------------------------------------------------------------------------------------------
# reading


@pytest.mark.anyio
async def test_garbage_is_reported_never_fatal(tmp_path: Path) -> None:
    async with running(agent("garbage"), tmp_path) as proc:
        frames = await collect(JsonLines(proc))
    good = [frame for frame in frames if isinstance(frame, dict)]
    bad = [frame for frame in frames if isinstance(frame, BadLine)]
    assert good == [{"ready": proc.pid}, {"n": 1}, {"n": 2}, {"n": 3}]
    assert [frames.index(frame) for frame in good] == [0, 1, 7, 9]
    assert bad[0] == BadLine("this is not json", bad[0].reason, 16)
    assert bad[0].reason.startswith("not JSON (")
    assert "binary" in bad[1].text and "\ufffd" in bad[1].text
    assert bad[2].reason == "not a JSON object (list)" and bad[2].text == "[1, 2, 3]"
    assert bad[3].reason == "not a JSON object (str)"
    assert bad[4].size == 100_000 and bad[4].reason.startswith("not JSON")  # nesting beyond recursion
    assert len(bad[4].text) == 4097 and bad[4].text.endswith("…")
    assert bad[5].text == '{"unterminated": '
    assert len(bad) == 6  # blank lines are skipped silently


_BATCHES = (
    "import json\n"
    "print(json.dumps([{'n': 1}, {'n': 2}]))\n"
    "print(json.dumps({'n': 3}))\n"
    "print('[]')\n"
    "print(json.dumps([{'n': 4}, 5]))\n"
    "print(json.dumps([{'n': 6}]))\n"
)


@pytest.mark.anyio
@pytest.mark.parametrize("batches", [True, False])
async def test_a_batch_line_is_its_objects_only_when_asked(tmp_path: Path, batches: bool) -> None:
    """``batches``: a JSON array of objects (a JSON-RPC batch) is its objects, in order, on the
    awaited path and the buffered one alike; an empty array or one holding a non-object is a bad
    line. Off (the default), every array is a bad line."""
    async with running([sys.executable, "-c", _BATCHES], tmp_path) as proc:
        frames = await collect(JsonLines(proc, batches=batches))
    good = [frame for frame in frames if isinstance(frame, dict)]
    bad = [frame.text for frame in frames if isinstance(frame, BadLine)]
    if batches:
        assert good == [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 6}]
        assert bad == ["[]", '[{"n": 4}, 5]']
    else:
        assert good == [{"n": 3}]
        assert len(bad) == 4


@pytest.mark.anyio
async def test_a_32_mib_line_is_skipped_with_bounded_memory(tmp_path: Path) -> None:
    size = 32 * 1024 * 1024
    async with running(agent("longline", str(size)), tmp_path) as proc:
        lines = JsonLines(proc)
        assert await lines.receive() == {"ready": proc.pid}
        tracemalloc.start()
        try:
            bad = await lines.receive()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert isinstance(bad, BadLine)
        assert bad.reason == f"line longer than {16 * 1024 * 1024} bytes"
        assert bad.size == size
        assert bad.text.startswith('"xxx') and len(bad.text) <= 4097
        assert peak < 24 * 1024 * 1024  # never the whole 32 MiB line
        assert await lines.receive() == {"after": True}


@pytest.mark.anyio
async def test_max_line_boundary(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "def obj(n): return '{\"k\":\"' + 'a' * (n - 8) + '\"}'\n"
        "sys.stdout.write(obj(100) + '\\n' + obj(101) + '\\n' + obj(99) + '\\n')\n"
    )
    async with running([sys.executable, "-c", code], tmp_path, max_line=100) as proc:
        frames = await collect(JsonLines(proc))
    assert isinstance(frames[0], dict) and len(frames[0]["k"]) == 92
    assert isinstance(frames[1], BadLine) and frames[1].size == 101
    assert isinstance(frames[2], dict) and len(frames[2]["k"]) == 91


@pytest.mark.anyio
async def test_last_line_without_newline_is_delivered(tmp_path: Path) -> None:
    async with running(agent("noeol"), tmp_path) as proc:
        assert await collect(JsonLines(proc)) == [{"last": True}]


@pytest.mark.anyio
async def test_reading_after_the_end_keeps_saying_end(tmp_path: Path) -> None:
    async with running(agent("exit", "0"), tmp_path) as proc:
        lines = JsonLines(proc)
        for _ in range(2):
            with pytest.raises(anyio.EndOfStream):
                await lines.receive()


# ---------------------------------------------------------------------------------------------
# writing


@pytest.mark.anyio
async def test_concurrent_sends_never_interleave(tmp_path: Path) -> None:
    async with running(agent("echo"), tmp_path) as proc:
        lines = JsonLines(proc)
        await lines.receive()
        big = "z" * 200_000  # larger than a pipe buffer: written in several pieces

        seen = set()

        async def send(n: int) -> None:
            await lines.send({"n": n, "pad": big})

        async def read() -> None:  # read while writing: the echoes would fill the pipe otherwise
            for _ in range(20):
                frame = await lines.receive()
                assert isinstance(frame, dict) and frame["echo"]["pad"] == big
                seen.add(frame["echo"]["n"])

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            for n in range(20):
                tg.start_soon(send, n)
        assert seen == set(range(20))


@pytest.mark.anyio
async def test_send_is_compact_utf8_and_survives_lone_surrogates(tmp_path: Path) -> None:
    async with running(agent("echo"), tmp_path) as proc:
        lines = JsonLines(proc)
        await lines.receive()
        await lines.send({"text": "grüße → ok", "multi\nline": 1})
        assert await lines.receive() == {"echo": {"text": "grüße → ok", "multi\nline": 1}}
        await lines.send({"bad": "\ud800"})
        assert await lines.receive() == {"echo": {"bad": "\ud800"}}


@pytest.mark.anyio
async def test_send_to_a_dead_agent_is_process_exited(tmp_path: Path) -> None:
    async with running(agent("exit", "5"), tmp_path) as proc:
        await proc.wait()
        with pytest.raises(ProcessExited) as caught:
            await JsonLines(proc).send({"too": "late"})
        assert caught.value.status == "exit status: 5"
        assert caught.value.stderr == "dying 5"


@pytest.mark.anyio
@pytest.mark.skipif(sys.platform == "win32", reason="the POSIX reactor thread drains stderr")
async def test_send_to_a_dead_agent_carries_its_whole_stderr_when_the_drain_lags(tmp_path: Path) -> None:
    """The exit is seen before the stderr drain has read the agent's last words (as under load):
    the error waits for the drain (bounded) instead of carrying an empty tail. The reactor thread
    is held so that it lags every time."""
    from anyagent._process_posix import _REACTOR

    gate = threading.Event()
    _REACTOR.call(lambda: gate.wait(10))
    try:
        async with running(agent("exit", "5"), tmp_path) as proc:
            await proc.wait()
            assert proc.stderr_tail == ""  # the premise: nothing drained yet
            async with anyio.create_task_group() as tg:

                async def release() -> None:
                    await anyio.sleep(0.2)
                    gate.set()

                tg.start_soon(release)
                with pytest.raises(ProcessExited) as caught:
                    await JsonLines(proc).send({"too": "late"})
            assert caught.value.status == "exit status: 5"
            assert caught.value.stderr == "dying 5"
    finally:
        gate.set()


@pytest.mark.anyio
async def test_send_after_close_is_typed(tmp_path: Path) -> None:
    async with running(agent("echo"), tmp_path) as proc:
        lines = JsonLines(proc)
        await proc.aclose()
        with pytest.raises(ProcessExited):
            await lines.send({"after": "close"})


# ---------------------------------------------------------------------------------------------
# the splitter, property-tested over arbitrary chunkings (an in-memory stream stands in for the pipe)


class _Chunks(ByteReceiveStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.lowlevel.checkpoint()
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)

    async def aclose(self) -> None:
        pass


line_text = st.text(alphabet=st.characters(blacklist_characters="\n\r", codec="utf-8"), max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(line_text, max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=30),
    max_line=st.integers(min_value=8, max_value=120),
)
def test_any_chunking_yields_the_same_frames(values: list[str], cuts: list[int], max_line: int) -> None:
    encoded = [json.dumps({"v": value}, ensure_ascii=False).encode() for value in values]
    stream = b"".join(line + b"\n" for line in encoded)
    points = sorted({0, len(stream), *(cut % (len(stream) + 1) for cut in cuts)})
    chunks = [stream[a:b] for a, b in itertools.pairwise(points) if b > a]
    fake = SimpleNamespace(stdout=_Chunks(chunks), max_line=max_line, recorder=None)

    async def read() -> list[dict[str, Any] | BadLine]:
        return await collect(JsonLines(cast(AgentProcess, fake)))

    frames = anyio.run(read)
    assert len(frames) == len(encoded)
    for line, value, frame in zip(encoded, values, frames, strict=True):
        if len(line) > max_line:
            assert isinstance(frame, BadLine) and frame.size == len(line)
            assert frame.reason == f"line longer than {max_line} bytes"
        else:
            assert frame == {"v": value}


# ---------------------------------------------------------------------------------------------
# HTTP + SSE against a real local server


@asynccontextmanager
async def http_agent(tmp_path: Path) -> AsyncIterator[str]:
    async with running([sys.executable, str(FAKES / "http_agent.py"), "0"], tmp_path, drain_stdout=True) as proc:
        with anyio.fail_after(10):
            while not (found := re.search(r"listening on (\d+)", proc.stdout_tail)):
                await anyio.sleep(0.02)
        yield f"http://127.0.0.1:{found.group(1)}"


@pytest.mark.anyio
async def test_http_request_reply_shapes(tmp_path: Path) -> None:
    async with http_agent(tmp_path) as url, HttpWire(url, auth=("opencode", "s3cret")) as http:
        health = await http.request("GET", "/health")
        assert (health.status, health.body, health.ok) == (200, {"healthy": True}, True)
        echoed = await http.request("POST", "/echo", json={"parts": [{"type": "text", "text": "hi"}]})
        assert echoed.body["body"] == {"parts": [{"type": "text", "text": "hi"}]}
        assert echoed.body["auth"].startswith("Basic ")
        text = await http.request("GET", "/text")
        assert (text.body, text.text) == (None, "plain words")
        missing = await http.request("GET", "/missing")
        assert (missing.status, missing.ok, missing.body) == (404, False, {"error": "not found"})


@pytest.mark.anyio
async def test_http_transport_errors_are_protocol_failed(tmp_path: Path) -> None:
    async with http_agent(tmp_path) as url, HttpWire(url) as http:
        with pytest.raises(ProtocolFailed, match="timed out"):
            await http.request("GET", "/slow", timeout=0.3)
    async with HttpWire(url, connect_timeout=2) as gone:  # the server has exited
        with pytest.raises(ProtocolFailed, match="cannot connect"):
            await gone.request("GET", "/health")
        with pytest.raises(ProtocolFailed, match="cannot connect"):
            async with gone.events("/event"):
                pass


@pytest.mark.anyio
async def test_sse_events_as_sent_unknown_names_and_bad_data(tmp_path: Path) -> None:
    async with http_agent(tmp_path) as url, HttpWire(url) as http, http.events("/event") as stream:
        assert stream.status == 200
        events = [event async for event in stream]
    assert events == [
        SseEvent("message", {"type": "server.connected"}, '{"type": "server.connected"}'),
        SseEvent(  # an envelope is the agent's own shape: its adapter unwraps it, not core
            "message",
            {"directory": "/w", "payload": {"type": "session.idle", "id": 1}},
            '{"directory": "/w", "payload": {"type": "session.idle", "id": 1}}',
        ),
        SseEvent("brand.new", {"type": "x"}, '{"type": "x"}', "7"),
        SseEvent("message", None, "not json at all", "7"),  # the last event id carries over
        SseEvent("message", {"type": "multi", "n": 2}, '{"type": "multi",\n "n": 2}', "7"),
    ]


@pytest.mark.anyio
async def test_sse_refuses_what_is_not_an_event_stream(tmp_path: Path) -> None:
    async with http_agent(tmp_path) as url, HttpWire(url, max_line=1024 * 1024) as http:
        with pytest.raises(ProtocolFailed, match="status 404"):
            async with http.events("/nope"):
                pass
        with pytest.raises(ProtocolFailed, match="expected an event stream"):
            async with http.events("/event_bad_type"):
                pass
        with pytest.raises(ProtocolFailed, match="longer than 1048576 bytes"):
            async with http.events("/event_longline") as stream:
                async for _ in stream:
                    pass
        assert (await http.request("GET", "/health")).ok  # the client still works


@pytest.mark.anyio
async def test_lines_the_fast_codec_refuses_parse_as_the_standard_codec_would_with_non_finite_numbers_as_null(
    tmp_path: Path,
) -> None:
    lines = [
        rb'{"lone": "\ud800 half"}',
        b'{"n": NaN, "i": -Infinity, "big": 1e999, "ok": 1.5}',
        b'{"big": 123456789012345678901234567890}',
        b'{"plain": "caf\xc3\xa9"}',
    ]
    script = "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())"
    async with running([sys.executable, "-c", script], tmp_path) as proc:
        await proc.stdin.send(b"\n".join(lines) + b"\n")
        await proc.stdin.aclose()
        frames = await collect(JsonLines(proc))
    expected = [json.loads(line) for line in lines]
    expected[1] = {"n": None, "i": None, "big": None, "ok": 1.5}  # no float strict JSON cannot write back
    assert frames == expected


def test_receive_nowait_hands_out_buffered_frames_without_waiting() -> None:
    """``receive_nowait`` takes what one read already buffered (blank lines skipped, bad lines
    reported), then says ``WouldBlock``; the next ``receive`` reads on."""
    chunks = [b'{"a":1}\n\n[1]\n{"b":2}\n{"c"', b":3}\n"]
    fake = SimpleNamespace(stdout=_Chunks(chunks), max_line=1024, recorder=None)

    async def read() -> list[Any]:
        lines = JsonLines(cast(AgentProcess, fake))
        with pytest.raises(anyio.WouldBlock):
            lines.receive_nowait()  # nothing read yet
        got: list[Any] = [await lines.receive()]
        got += [lines.receive_nowait(), lines.receive_nowait()]
        with pytest.raises(anyio.WouldBlock):
            lines.receive_nowait()  # the unfinished line waits for the next chunk
        got.append(await lines.receive())
        with pytest.raises(anyio.EndOfStream):
            await lines.receive()
        return got

    got = anyio.run(read)
    assert got[0] == {"a": 1} and isinstance(got[1], BadLine) and got[1].reason == "not a JSON object (list)"
    assert got[2:] == [{"b": 2}, {"c": 3}]


def test_receive_nowait_takes_a_buffered_frame_in_one_python_call() -> None:
    """The flood's path: a frame already read is decoded and handed out by ``receive_nowait``
    itself, with no further Python call per frame (fails before: each frame also went through
    ``_parse``). Counted with ``sys.setprofile``, so the figure does not depend on the load."""
    chunk = b"".join(b'{"type":"delta","text":"w%d "}\n' % k for k in range(100))
    fake = SimpleNamespace(stdout=_Chunks([chunk]), max_line=1024, recorder=None)
    calls: list[str] = []

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(frame.f_code.co_name)

    async def read() -> list[Any]:
        lines = JsonLines(cast(AgentProcess, fake))
        got: list[Any] = [await lines.receive()]
        take = lines.receive_nowait
        sys.setprofile(count)
        try:
            for _ in range(99):
                got.append(take())
        finally:
            sys.setprofile(None)
        return got

    got = anyio.run(read)
    assert got == [{"type": "delta", "text": f"w{k} "} for k in range(100)]
    assert calls.count("receive_nowait") == 99 and len(calls) == 99, sorted(set(calls))


def test_peer_receive_nowait_takes_a_buffered_notification_without_asking_the_lock() -> None:
    """``JsonRpcPeer.receive_nowait`` on notifications already read: per message one call into
    ``JsonLines``, nothing else (fails before: it also called the read lock's ``locked()`` for
    each; the ``Notification`` is built without its ``__init__`` call since the third flood step).
    Counted with ``sys.setprofile``."""
    from anyagent.wire import JsonRpcPeer, Notification

    chunk = b"".join(b'{"method":"delta","params":{"k":%d}}\n' % k for k in range(50))
    fake = SimpleNamespace(stdout=_Chunks([chunk]), max_line=1024, recorder=None)
    calls: list[str] = []

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(frame.f_code.co_name)

    async def read() -> list[Any]:
        peer = JsonRpcPeer(JsonLines(cast(AgentProcess, fake)))
        got: list[Any] = [await peer.receive()]
        take = peer.receive_nowait
        sys.setprofile(count)
        try:
            for _ in range(49):
                got.append(take())
        finally:
            sys.setprofile(None)
        return got

    got = anyio.run(read)
    assert got == [Notification("delta", {"k": k}) for k in range(50)]
    assert "locked" not in calls and len(calls) == 49 * 2, sorted(set(calls))
