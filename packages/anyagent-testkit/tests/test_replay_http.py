"""HTTP mode: a recorded list of exchanges and SSE events served on 127.0.0.1 (opencode-style)."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from httpx_sse import aconnect_sse

from anyagent_testkit.replay import (
    HttpReplayServer,
    RecordingError,
    load_http_timeline,
    parse_http_timeline,
    replay_command,
)
from anyagent_testkit.stdio import JsonlProcess, RawLine

pytestmark = pytest.mark.anyio
TIMEOUT = 10.0

TIMELINE: list[dict[str, Any]] = [
    {"_http": {"method": "GET", "path": "/event", "sse": True}, "_t": 0.0},
    {"_response": {"status": 200, "headers": {"X-Accel-Buffering": "no"}}},
    {"_sse": {"path": "/event", "data": {"type": "server.connected", "properties": {}}}},
    {"_http": {"method": "POST", "path": "/session", "body": {"title": "t"}}},
    {"_response": {"status": 200, "headers": {"Content-Type": "application/json"}, "body": {"id": "ses_1"}}},
    {"_sse": {"path": "/event", "data": {"type": "session.created", "properties": {"sessionID": "ses_1"}}}},
    {"_http": {"method": "POST", "path": "/session/ses_1/message", "id": "blocking"}},
    {"_http": {"method": "GET", "path": "/session/status?directory=/w"}},
    {"_response": {"status": 200, "body": {"ses_1": {"type": "busy"}}}},
    {"_sse": {"path": "/event", "data": {"type": "message.part.delta", "properties": {"delta": "hi"}}}},
    {"_sse": {"path": "/event", "data": {"type": "session.idle", "properties": {"sessionID": "ses_1"}}}},
    {"_response": {"id": "blocking", "status": 200, "body": {"info": {"finish": "stop"}}}},
    {"_http": {"method": "GET", "path": "/global/health"}},
    {"_response": {"status": 200, "body": {"healthy": True, "version": "1.18.33"}}},
    {"_http": {"method": "POST", "path": "/session/ses_1/prompt_async"}},
    {"_response": {"status": 204, "body": None}},
]


def _write(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    path = tmp_path / "http.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


async def _collect_events(url: str, events: list[dict[str, Any]], done: anyio.Event) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client, aconnect_sse(client, "GET", f"{url}/event") as source:
        assert source.response.headers["x-accel-buffering"] == "no"
        async for event in source.aiter_sse():
            events.append(json.loads(event.data))
            if events[-1]["type"] == "session.idle":
                done.set()
                return


async def _drive(url: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play the client side of TIMELINE in its recorded order (the blocking prompt before the status poll)."""
    events: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    idle = anyio.Event()
    async with anyio.create_task_group() as group, httpx.AsyncClient(base_url=url, timeout=TIMEOUT) as client:
        group.start_soon(_collect_events, url, events, idle)
        created = await client.post("/session", json={"title": "mine"})
        assert created.json() == {"id": "ses_1"}

        async def prompt() -> None:
            answer = await client.post("/session/ses_1/message", json={"parts": [{"type": "text", "text": "x"}]})
            answers.append(answer.json())

        group.start_soon(prompt)
        await anyio.sleep(0.1)
        status = await client.get("/session/status", params={"directory": "/elsewhere"})
        assert status.json() == {"ses_1": {"type": "busy"}}
        with anyio.fail_after(TIMEOUT):
            await idle.wait()
            while not answers:
                await anyio.sleep(0.01)
        for _ in range(2):  # a health poll repeats the recorded answer
            health = await client.get("/global/health")
            assert health.json()["healthy"] is True
        accepted = await client.post("/session/ses_1/prompt_async", json={})
        assert accepted.status_code == 204
        assert accepted.content == b""
    return events, answers[0]


async def test_exchanges_and_events_are_served_in_recorded_order(tmp_path: Path) -> None:
    timeline = load_http_timeline(_write(tmp_path, TIMELINE))
    with HttpReplayServer(timeline) as server:
        events, answer = await _drive(server.url)
        assert answer == {"info": {"finish": "stop"}}
        assert [event["type"] for event in events] == [
            "server.connected",
            "session.created",
            "message.part.delta",
            "session.idle",
        ]
        assert server.failures == []
        with anyio.fail_after(TIMEOUT):
            while not server.fully_played:
                await anyio.sleep(0.02)


async def test_a_blocking_request_is_answered_only_after_the_events_before_its_answer(tmp_path: Path) -> None:
    timeline = load_http_timeline(_write(tmp_path, TIMELINE))
    with HttpReplayServer(timeline) as server:
        events: list[dict[str, Any]] = []
        idle = anyio.Event()
        async with anyio.create_task_group() as group, httpx.AsyncClient(base_url=server.url, timeout=TIMEOUT) as c:
            group.start_soon(_collect_events, server.url, events, idle)
            await c.post("/session", json={})
            waiting = anyio.Event()
            answered: list[float] = []

            async def blocking() -> None:
                waiting.set()
                await c.post("/session/ses_1/message", json={})
                answered.append(anyio.current_time())

            group.start_soon(blocking)
            await waiting.wait()
            await anyio.sleep(0.3)
            assert answered == []  # the timeline still waits for GET /session/status
            await c.get("/session/status")
            with anyio.fail_after(TIMEOUT):
                await idle.wait()
                while not answered:
                    await anyio.sleep(0.01)


async def test_requests_not_in_the_recording_get_404_and_are_reported(tmp_path: Path) -> None:
    timeline = load_http_timeline(_write(tmp_path, TIMELINE))
    with HttpReplayServer(timeline) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=TIMEOUT) as client:
            missing = await client.delete("/session/ses_1")
            assert missing.status_code == 404
            assert missing.json()["name"] == "NotInRecording"
            poll = await client.get("/config")
            assert poll.status_code == 404
    assert server.failures == ["DELETE /session/ses_1 is not in the recording", "GET /config is not in the recording"]


async def test_http_timelines_refuse_unpaired_responses() -> None:
    with pytest.raises(RecordingError, match="a response with no unanswered request"):
        parse_http_timeline([json.dumps({"_response": {"status": 200}})])


async def test_the_http_replayer_runs_as_an_opencode_style_process(tmp_path: Path) -> None:
    path = _write(tmp_path, TIMELINE)
    argv = [*replay_command(path, http=True, strict=True), "--", "serve", "--port", "0", "--hostname", "127.0.0.1"]
    async with JsonlProcess.open(argv) as server:
        banner = await server.receive(TIMEOUT)
        assert isinstance(banner, RawLine)
        assert banner.text.startswith("opencode server listening on http://127.0.0.1:")
        url = banner.text.rsplit(" ", 1)[1]
        events, answer = await _drive(url)
        assert answer == {"info": {"finish": "stop"}}
        assert len(events) == 4
        server.send_signal(signal.SIGTERM)
        assert await server.wait(TIMEOUT) == 0, server.stderr


async def test_a_strict_http_replay_exits_1_after_an_unexpected_request(tmp_path: Path) -> None:
    path = _write(tmp_path, TIMELINE)
    port_file = tmp_path / "port"
    argv = [*replay_command(path, http=True, strict=True), "--port-file", str(port_file)]
    async with JsonlProcess.open(argv) as server:
        await server.receive(TIMEOUT)
        port = int(port_file.read_text())
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            assert (await client.get(f"http://127.0.0.1:{port}/nowhere")).status_code == 404
        server.send_signal(signal.SIGTERM)
        assert await server.wait(TIMEOUT) == 1
    assert "GET /nowhere is not in the recording" in server.stderr
