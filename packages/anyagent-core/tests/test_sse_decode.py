"""``SseStream`` decodes an event stream exactly as httpx-sse does (the SSE spec: CRLF, LF or CR
line ends, comments, ``event``/``data``/``id``/``retry`` and unknown fields, blank-line dispatch,
the last id carried over, an unfinished event at the end dropped, events without data skipped),
whatever the chunking, and ``receive_nowait`` hands out exactly the events already read."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator

import anyio
import httpx
import httpx_sse
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
