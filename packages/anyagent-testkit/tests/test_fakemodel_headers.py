"""Scripted response headers (``Reply.with_headers``): on streamed, JSON and failed answers, and from
``--script`` JSON — what a provider's rate-limit headers look like to the agent CLI."""

from __future__ import annotations

import httpx
import pytest

from anyagent_testkit.fakemodel import FakeModel, Reply, reply_from_json

HEADERS = {"x-codex-primary-used-percent": "42.5", "x-codex-primary-window-minutes": "300"}


@pytest.mark.parametrize("stream", [True, False])
def test_a_reply_answers_with_its_headers(stream: bool) -> None:
    reply = Reply.text("usage").with_headers(HEADERS)
    with FakeModel(script=[reply, Reply.text("plain")]) as fm:
        body = {"model": "m", "stream": stream, "input": "hi", "tools": [{"type": "function", "name": "t"}]}
        first = httpx.post(f"{fm.url}/v1/responses", json=body, timeout=10)
        second = httpx.post(f"{fm.url}/v1/responses", json=body, timeout=10)
    assert first.status_code == 200 and "usage" in first.text
    assert {key: first.headers.get(key) for key in HEADERS} == HEADERS
    assert "x-codex-primary-used-percent" not in second.headers, "headers belong to their reply only"


def test_a_failure_carries_its_headers_and_chained_replies_keep_both() -> None:
    reply = Reply.fail(429, "slow down").with_headers({"retry-after": "7"})
    chained = Reply.text("a").with_headers({"x-a": "1"}).then(Reply.text("b").with_headers({"x-b": "2"}))
    assert chained.headers == (("x-a", "1"), ("x-b", "2"))
    with FakeModel(script=[reply]) as fm:
        answer = httpx.post(
            f"{fm.url}/v1/responses",
            json={"model": "m", "input": "hi", "tools": [{"type": "function", "name": "t"}]},
            timeout=10,
        )
    assert answer.status_code == 429 and answer.headers.get("retry-after") == "7"


def test_script_json_takes_headers() -> None:
    reply = reply_from_json({"text": "hi", "headers": {"x-a": "1"}})
    assert reply == Reply.text("hi").with_headers({"x-a": "1"})
    with pytest.raises(ValueError, match="headers must be an object"):
        reply_from_json({"text": "hi", "headers": ["x-a"]})
