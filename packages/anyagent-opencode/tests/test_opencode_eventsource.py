"""``EventSource`` on a flood: a buffered event costs the source one Python call and the stream one
(no ``SseEvent``, no per-event check once no reconnect failed, heartbeats seen or not); the
heartbeat watch and the failed-reconnect count still see what they did. ``Translator.fast_delta``
takes any frame and leaves the ones that are not its case; the remembered event ids stay bounded."""

from __future__ import annotations

import gc
import sys
from typing import Any, cast

import anyio
import httpx
import pytest

from anyagent.wire import HttpWire, SseStream
from anyagent_opencode import adapter as adapter_module
from anyagent_opencode.adapter import EventSource
from anyagent_opencode.translate import _SEEN, Translator

SID = "ses_1"


def _delta(k: int) -> str:
    props = f'"sessionID":"{SID}","messageID":"msg_1","partID":"prt_1","field":"text","delta":"w{k} "'
    return f'data: {{"id":"evt_{k}","type":"message.part.delta","properties":{{{props}}}}}\n\n'


def _source(text: str) -> EventSource:
    source = EventSource(cast(HttpWire, None), lambda: False, cast(Any, None))
    stream = SseStream(httpx.Response(200, content=b""), 1, None)
    stream._decode(text)
    source._stream = stream
    return source


def test_a_buffered_event_costs_two_python_calls() -> None:
    """Fails before: six (``receive_nowait`` twice, ``_hand_out``, the ``SseEvent``, ``_frame`` and
    ``jsonread.obj``: the source checked every event for a heartbeat until it saw one)."""
    n = 100
    source = _source("".join(_delta(k) for k in range(n)))
    calls: list[str] = []

    def count(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.endswith(("http.py", "adapter.py")):
            calls.append(frame.f_code.co_name)

    take = source.receive_nowait
    got: list[Any] = []
    gc.disable()  # no finalizer of an earlier test's garbage runs inside the count
    sys.setprofile(count)
    try:
        for _ in range(n):
            got.append(take())
    finally:
        sys.setprofile(None)
        gc.enable()
    assert [frame["properties"]["delta"] for frame in got] == [f"w{k} " for k in range(n)]
    assert sorted(set(calls)) == ["receive_data_nowait", "receive_nowait"] and len(calls) == 2 * n
    with pytest.raises(anyio.WouldBlock):
        take()


def test_heard_arms_the_watch_and_ends_a_run_of_failures() -> None:
    source = _source('data: {"type":"server.connected"}\n\n' + _delta(1) + "data: not json\n\n")
    source._failures = 2
    assert source.receive_nowait() == {"type": "server.connected"}
    assert source._failures == 2  # the reopened stream's greeting proves nothing yet
    assert source.receive_nowait()["type"] == "message.part.delta"
    assert source._failures == 0 and not source._heartbeats
    source.heard({"type": "server.heartbeat", "properties": {}})
    assert source._heartbeats
    assert source.receive_nowait() == "not json"  # not JSON: its text


def test_a_heartbeat_read_in_a_flood_arms_the_watch() -> None:
    """The driver hands every event it reads in full (all but the text deltas the loop's
    ``fast_frame`` took) to ``heard``: a heartbeat among buffered deltas arms the stall watch
    (before: the source checked each event itself)."""
    heard: list[object] = []
    driver = object.__new__(adapter_module.OpencodeDriver)
    driver.translator = Translator(SID)
    driver.events = cast(EventSource, type("E", (), {"heard": staticmethod(heard.append)})())
    applied: list[Any] = []

    async def apply(out: Any) -> None:
        applied.append(out.events)

    driver._apply = apply  # type: ignore[method-assign]
    beat = {"type": "server.heartbeat", "properties": {}}
    props = {"sessionID": "ses_child", "messageID": "m", "partID": "p", "field": "text", "delta": "hi"}
    delta = {"type": "message.part.delta", "properties": props}  # not ours: not fast

    async def main() -> None:
        assert driver.translator.fast_delta(delta) is None
        await driver._on_frame(delta)
        await driver._on_frame(beat)

    anyio.run(main)
    assert heard == [delta, beat] and applied == [[], []]


@pytest.mark.parametrize("frame", [None, 3, "x", [], ["properties"], {}, {"properties": None}, object()])
def test_fast_delta_leaves_any_other_frame(frame: object) -> None:
    translator = Translator(SID)
    assert translator.fast_delta(frame) is None
    assert translator._sent == {} and translator._seen == {}


def test_remembered_event_ids_stay_bounded_and_a_recent_repeat_is_dropped() -> None:
    translator = Translator(SID)
    for k in range(5 * _SEEN):
        frame = {"id": f"evt_{k}", "type": "message.part.delta", "properties": {}}
        frame["properties"] = dict(sessionID=SID, messageID="m", partID="p", field="text", delta="x")
        assert translator.fast_delta(frame) is not None
        if k % 997 == 0:
            assert translator.fast_delta(frame) is None  # the same event again
            assert translator.feed(frame).events == []  # which feed drops
        recent = {**frame, "id": f"evt_{max(0, k - _SEEN + 1)}"}
        assert translator.fast_delta(recent) is None  # any of the last _SEEN ids is remembered
    assert len(translator._seen) + len(translator._seen_before) <= 2 * _SEEN
