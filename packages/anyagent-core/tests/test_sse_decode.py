"""``SseStream`` decodes an event stream exactly as httpx-sse does (the SSE spec: CRLF, LF or CR
line ends, comments, ``event``/``data``/``id``/``retry`` and unknown fields, blank-line dispatch,
the last id carried over, an unfinished event at the end dropped, events without data skipped),
whatever the chunking, and ``receive_nowait`` (and ``receive_data_nowait``, the data alone) hands
out exactly the events already read."""

from __future__ import annotations

import gc
import itertools
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import httpx_sse
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anyagent.recording import WireRecorder
from anyagent.wire import SseEvent, SseStream

_value = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=8)
_json_value = st.builds(lambda v: json.dumps({"t": v}), _value)
_line = st.one_of(
    st.builds(lambda v: f"data: {v}", st.one_of(_json_value, _value)),
    st.builds(lambda v: f"data:{v}", _json_value),
    st.just("data"),
    st.builds(lambda v: f"event: {v}", _value),
    st.builds(lambda v: f"id: {v}", st.one_of(_value, st.just("a\0b"))),
    st.builds(lambda v: f"retry: {v}", st.sampled_from(["10", "x"])),
    st.builds(lambda v: f": {v}", _value),
    st.builds(lambda v: f"other: {v}", _value),
    st.just(""),
)
_end = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def streams(draw: st.DrawFn) -> list[bytes]:
    """A stream's bytes cut into chunks at arbitrary points (inside CRLF and UTF-8 too)."""
    lines = draw(st.lists(st.tuples(_line, _end), max_size=30))
    text = "".join(line + end for line, end in lines) + draw(st.sampled_from(["", "data: unfinished"]))
    data = text.encode()
    cuts = sorted(draw(st.sets(st.integers(0, len(data)), max_size=8)))
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


def _response(chunks: list[bytes]) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_Chunks(chunks))


async def reference(chunks: list[bytes]) -> list[SseEvent]:
    """What the stream made of httpx-sse's events before it decoded itself."""
    out = []
    async for sse in httpx_sse.EventSource(_response(chunks)).aiter_sse():
        if sse.data:
            try:
                value = json.loads(sse.data)
            except ValueError:
                value = None
            out.append(SseEvent(sse.event or "message", value, sse.data, sse.id or None))
    return out


async def ours(chunks: list[bytes], nowait: bool) -> list[SseEvent]:
    stream = SseStream(_response(chunks), 1, None)
    out: list[SseEvent] = []
    while True:
        if nowait:
            try:
                out.append(stream.receive_nowait())
                continue
            except anyio.WouldBlock:
                pass
        try:
            out.append(await stream.__anext__())
        except StopAsyncIteration:
            break
    with pytest.raises(anyio.WouldBlock):
        stream.receive_nowait()
    return out


@settings(max_examples=400, deadline=None)
@given(chunks=streams(), nowait=st.booleans())
def test_decoding_equals_httpx_sse(chunks: list[bytes], nowait: bool) -> None:
    assert anyio.run(ours, chunks, nowait) == anyio.run(reference, chunks)


def test_receive_nowait_takes_what_one_chunk_held_then_waits() -> None:
    chunks = [b'data: {"n": 1}\n\ndata: {"n": 2}\r\n\r\ndata: {"n"', b": 3}\n\n"]

    async def read() -> None:
        stream = SseStream(_response(chunks), 1, None)
        with pytest.raises(anyio.WouldBlock):
            stream.receive_nowait()  # nothing read yet
        assert (await stream.__anext__()).data == {"n": 1}
        assert stream.receive_nowait().data == {"n": 2}
        with pytest.raises(anyio.WouldBlock):
            stream.receive_nowait()  # the third event is unfinished
        assert (await stream.__anext__()).data == {"n": 3}
        with pytest.raises(StopAsyncIteration):
            await stream.__anext__()

    anyio.run(read)


async def data_of(chunks: list[bytes]) -> list[Any]:
    """Every event through ``receive_data_nowait`` (``__anext__`` when none is buffered)."""
    stream = SseStream(_response(chunks), 1, None)
    out: list[Any] = []
    while True:
        try:
            out.append(stream.receive_data_nowait())
            continue
        except anyio.WouldBlock:
            pass
        try:
            event = await stream.__anext__()
        except StopAsyncIteration:
            break
        out.append(event.data if event.data is not None else event.text)
    return out


@settings(max_examples=300, deadline=None)
@given(chunks=streams())
def test_receive_data_nowait_is_the_data_or_the_text(chunks: list[bytes]) -> None:
    expected = [e.data if e.data is not None else e.text for e in anyio.run(reference, chunks)]
    assert anyio.run(data_of, chunks) == expected


@pytest.mark.parametrize(
    "chunks",
    [
        [b"event: x\n", b'data: {"a": 1}\n\ndata: {"b": 2}\n\n'],  # a named event split before its data
        [b'data: {"a": 1}\n', b'\ndata: {"b": 2}\n\n'],  # cut between the two newlines
        [b"data: 1\n", b"data: 2\n\n", b"data: 3\n\n\n\ndata: 4\n\n"],  # two data lines, spare blanks
        [b"id: 7\n\ndata: a\n\n", b"data: b\n\n:c\n\ndata:\n\ndata: \n\n"],  # id carried, empty data
        [b"data: x\r\n\r", b"\ndata: y\r\rdata: z\n\n"],  # CRLF cut after CR, lone CRs
        [b"data: {", b'"n": 1}\n\n'],  # a line cut in two
    ],
)
def test_whole_data_blocks_decode_as_the_lines_do(chunks: list[bytes]) -> None:
    assert anyio.run(ours, chunks, True) == anyio.run(reference, chunks)


_HTTP = sys.modules[SseStream.__module__].__file__


def _c_calls(run: Any) -> list[str]:
    calls: list[str] = []

    def count(frame: Any, event: str, arg: Any) -> None:
        if event in ("call", "c_call") and frame.f_code.co_filename in (__file__, _HTTP):
            calls.append(frame.f_code.co_name if event == "call" else getattr(arg, "__name__", "?"))

    gc.disable()  # no finalizer of an earlier test's garbage runs inside the count
    sys.setprofile(count)
    try:
        run()
    finally:
        sys.setprofile(None)
        gc.enable()
    return calls


def test_a_chunk_of_one_line_events_costs_two_builtin_calls_an_event() -> None:
    """The flood's decode: an event that is one ``data: `` line and its blank line takes no Python
    call and two builtin ones (its length, the append), whatever the chunk holds (fails before:
    seven, the line loop's ``startswith``, appends, join and clear). Counted with
    ``sys.setprofile``, so the figure does not depend on the load."""
    n = 200
    chunk = "".join(f'data: {{"n": {k}}}\n\n' for k in range(n)) + 'data: {"n"'
    stream = SseStream(_response([]), 1, None)
    calls = _c_calls(lambda: stream._decode(chunk))
    assert len(calls) <= 2 * n + 10, sorted(set(calls))
    assert [c for c in calls if c in ("_decode", "_lines", "_dispatch")] == ["_decode", "_lines"]
    assert [stream.receive_data_nowait() for _ in range(n)] == [{"n": k} for k in range(n)]
    with pytest.raises(anyio.WouldBlock):
        stream.receive_data_nowait()  # the last event is unfinished


def test_receive_data_nowait_hands_out_in_one_python_call_and_records() -> None:
    """One Python call per event and no ``SseEvent`` (fails before: no such method; the event path
    is three calls: ``receive_nowait``, ``_hand_out``, the ``SseEvent``); with a recorder the
    events are recorded as ``receive_nowait`` records them."""
    stream = SseStream(_response([]), 1, None)
    stream._decode("".join(f'data: {{"n": {k}}}\n\n' for k in range(50)) + "data: not json\n\n")
    take = stream.receive_data_nowait
    calls = _c_calls(lambda: [take() for _ in range(50)])
    assert calls.count("receive_data_nowait") == 50
    assert set(calls) - {"<lambda>", "<listcomp>", "setprofile"} == {"receive_data_nowait", "decode", "popleft"}
    assert take() == "not json"

    class Recorder:
        def __init__(self) -> None:
            self.lines: list[Any] = []

        def http(self, fields: Any) -> None:
            self.lines.append(fields)

    for method in ("receive_nowait", "receive_data_nowait"):
        recorder = Recorder()
        recorded = SseStream(_response([]), 3, cast_recorder(recorder))
        recorded._decode('id: 9\nevent: e\ndata: {"a": 1}\n\ndata: x\n\n')
        got = [getattr(recorded, method)(), getattr(recorded, method)()]
        assert recorder.lines == [
            {"kind": "sse", "stream": 3, "event": "e", "id": "9", "data": {"a": 1}},
            {"kind": "sse", "stream": 3, "event": "message", "id": "9", "text": "x"},
        ]
        if method == "receive_data_nowait":
            assert got == [{"a": 1}, "x"]


def cast_recorder(recorder: object) -> WireRecorder:
    return recorder  # type: ignore[return-value]  # duck-typed: only ``http`` is called
