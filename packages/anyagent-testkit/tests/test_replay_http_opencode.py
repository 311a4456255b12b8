"""HTTP mode on real opencode traffic: the live-tier research captures of ``opencode serve``
(HTTP exchanges + the ``/event`` SSE stream, recorded against the fake model) are merged into the
replayer's HTTP timeline format here, served, and a client that repeats the recorded requests must
get every recorded answer and every recorded event, in order. Skipped when the captures are absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from httpx_sse import aconnect_sse

from anyagent_testkit.replay import HttpReplayServer, parse_http_timeline

pytestmark = pytest.mark.anyio
RESEARCH = Path(os.environ.get("ANYAGENT_LIVE_RESEARCH", "/work/shared/research/live-tier"))
CAPTURES = RESEARCH / "codex-opencode" / "recordings" / "opencode" / "hardened"
TIMEOUT = 15.0


def _pairs() -> list[str]:
    if not CAPTURES.is_dir():
        return []
    return sorted(path.name.removesuffix(".http.jsonl") for path in CAPTURES.glob("*.http.jsonl"))


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _timeline(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(timeline lines, the client's requests with their recorded answers, the recorded SSE events)."""
    items: list[tuple[float, int, dict[str, Any]]] = []
    exchanges: list[dict[str, Any]] = []
    for order, record in enumerate(_read(CAPTURES / f"{name}.http.jsonl")):
        if "_sent" in record:
            request = record["_sent"]
            exchanges.append({"request": request})
            items.append((record["_t"], order, {"_http": {"method": request["method"], "path": request["path"]}}))
        else:
            exchanges[-1]["response"] = record["response"]
            items.append((record["_t"], order, {"_response": record["response"]}))
    events: list[dict[str, Any]] = []
    for order, record in enumerate(_read(CAPTURES / f"{name}.sse.jsonl"), start=10_000):
        if "_sse_open" in record:
            opened = record["_sse_open"]
            if opened["status"] == 200:
                items.append(
                    (record["_t"] - 1e-6, order, {"_http": {"method": "GET", "path": opened["path"], "sse": True}})
                )
            continue
        event = {key: value for key, value in record.items() if key != "_t"}
        events.append(event)
        items.append((record["_t"], order, {"_sse": {"path": "/event", "data": event}}))
    items.sort(key=lambda item: (item[0], item[1]))
    return [line for _, _, line in items], exchanges, events


async def _listen(url: str, count: int, into: list[dict[str, Any]], ready: anyio.Event) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as client, aconnect_sse(client, "GET", f"{url}/event") as source:
        ready.set()
        async for event in source.aiter_sse():
            into.append(json.loads(event.data))
            if len(into) == count:
                return


@pytest.mark.skipif(not CAPTURES.is_dir(), reason=f"{CAPTURES} does not exist (research captures not present)")
@pytest.mark.parametrize("name", _pairs())
async def test_recorded_opencode_sessions_replay_over_http(name: str) -> None:
    lines, exchanges, events = _timeline(name)
    timeline = parse_http_timeline([json.dumps(line) for line in lines])
    received: list[dict[str, Any]] = []
    with HttpReplayServer(timeline, sse_wait=TIMEOUT) as server:
        async with (
            anyio.create_task_group() as group,
            httpx.AsyncClient(base_url=server.url, timeout=TIMEOUT) as client,
        ):
            ready = anyio.Event()
            if events:
                group.start_soon(_listen, server.url, len(events), received, ready)
                await ready.wait()
            for exchange in exchanges:
                request = exchange["request"]
                answer = await client.request(request["method"], request["path"], json=request["body"])
                assert answer.status_code == exchange["response"]["status"], request["path"]
                expected_body = exchange["response"]["body"]
                assert (answer.json() if answer.content else None) == expected_body, request["path"]
            with anyio.fail_after(TIMEOUT):
                while len(received) < len(events):
                    await anyio.sleep(0.02)
        assert server.failures == []
    assert received == events
