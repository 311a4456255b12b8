"""The HTTP replayer reads what the project's own recorder writes: a session driven through
``anyagent.wire.HttpWire`` with a ``WireRecorder`` (``record_wire``'s ``{"_http": {"kind": ...}}``
lines) is replayed from that file, and the same client gets the same answers and events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from anyagent_testkit.replay import HttpReplayServer, load_http_timeline, parse_http_timeline

wire = pytest.importorskip("anyagent.wire")
if not all(hasattr(wire, name) for name in ("HttpWire", "WireRecorder")):
    pytest.skip("anyagent.wire has no HttpWire/WireRecorder yet", allow_module_level=True)

pytestmark = pytest.mark.anyio
TIMEOUT = 10.0

SERVED: list[dict[str, Any]] = [
    {"_http": {"method": "GET", "path": "/event", "sse": True}},
    {"_sse": {"path": "/event", "data": {"type": "server.connected", "properties": {}}}},
    {"_http": {"method": "POST", "path": "/session"}},
    {"_response": {"status": 200, "body": {"id": "ses_1", "title": "t"}}},
    {"_http": {"method": "POST", "path": "/session/ses_1/message", "id": "m"}},
    {"_http": {"method": "GET", "path": "/session/status"}},
    {"_response": {"status": 200, "body": {"ses_1": {"type": "busy"}}}},
    {"_sse": {"path": "/event", "data": {"type": "message.part.delta", "properties": {"delta": "hi"}}}},
    {"_sse": {"path": "/event", "data": "not json but fine"}},
    {"_sse": {"path": "/event", "data": {"type": "session.idle", "properties": {}}}},
    {"_response": {"id": "m", "status": 200, "body": {"info": {"finish": "stop"}}}},
    {"_http": {"method": "POST", "path": "/session/ses_1/prompt_async"}},
    {"_response": {"status": 204, "body": None}},
]


async def _drive(url: str, recorder: Any = None) -> tuple[list[Any], list[tuple[int, Any]]]:
    """The client: events until idle, a session, a blocking prompt, a status poll, an async prompt."""
    events: list[Any] = []
    replies: list[tuple[int, Any]] = []
    async with wire.HttpWire(url, recorder=recorder) as client, anyio.create_task_group() as group:
        idle = anyio.Event()

        async def listen() -> None:
            async with client.events("/event") as stream:
                async for event in stream:
                    events.append(event.data if event.data is not None else event.text)
                    if isinstance(event.data, dict) and event.data.get("type") == "session.idle":
                        idle.set()
                        return

        group.start_soon(listen)
        created = await client.request("POST", "/session", json={"title": "t"})
        replies.append((created.status, created.body))
        answered = anyio.Event()

        async def prompt() -> None:
            reply = await client.request("POST", "/session/ses_1/message", json={"parts": []})
            replies.append((reply.status, reply.body))
            answered.set()

        group.start_soon(prompt)
        await anyio.sleep(0.1)
        status = await client.request("GET", "/session/status", params={"directory": "/w"})
        replies.append((status.status, status.body))
        with anyio.fail_after(TIMEOUT):
            await idle.wait()
            await answered.wait()
        accepted = await client.request("POST", "/session/ses_1/prompt_async", json={})
        replies.append((accepted.status, accepted.text))
    return events, replies


async def test_a_record_wire_http_recording_replays_the_same_session(tmp_path: Path) -> None:
    recording = tmp_path / "wire.jsonl"
    with HttpReplayServer(parse_http_timeline([json.dumps(line) for line in SERVED])) as first:
        recorder = wire.WireRecorder.open(recording)
        events, replies = await _drive(first.url, recorder)
        recorder.close()
    assert replies[-1] == (204, "")
    kinds = {json.loads(line)["_http"]["kind"] for line in recording.read_text().splitlines()}
    assert {"request", "response", "sse_open", "sse"} <= kinds

    with HttpReplayServer(load_http_timeline(recording), strict=True) as second:
        replayed_events, replayed_replies = await _drive(second.url)
        assert second.failures == []
    assert replayed_events == events
    assert sorted(map(repr, replayed_replies)) == sorted(map(repr, replies))
