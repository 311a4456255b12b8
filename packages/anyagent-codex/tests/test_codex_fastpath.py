"""The driver's text fast path (the loop's ``fast_frame``: ``CodexDriver._fast_frame`` →
``Translator.text_delta``) takes an ``item/agentMessage/delta`` of our thread only when the full
path (``_on_frame`` → ``_on_notification`` → ``Translator.feed``) would make one
``Content(TextDelta)`` of it, and then has the same effects; every other notification reaches the
full path untouched."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from anyagent import TextDelta, seam
from anyagent.wire import Notification
from anyagent_codex.driver import CodexDriver
from anyagent_codex.translate import Translator

THREAD = "thr-1"
MISSING = object()

_values = st.sampled_from([MISSING, None, "", 0, 7, 1.5, True, [], {}, ["x"], {"id": "x"}])
_ids = st.one_of(st.sampled_from([THREAD, "thr-other", "msg-1"]), st.text(max_size=4), _values)
_deltas = st.one_of(st.text(max_size=6), _values)


CANONICAL: dict[str, Any] = {"threadId": THREAD, "turnId": "turn-1", "itemId": "msg-1", "delta": "hi "}


@st.composite
def notifications(draw: st.DrawFn) -> Notification:
    """The flood's notification with a few things changed (none, often: the fast path must be taken)."""
    params: Any = dict(CANONICAL)
    for key in draw(st.lists(st.sampled_from(["threadId", "itemId", "delta", "thread"]), max_size=3)):
        value = draw(_deltas if key == "delta" else _ids)
        if value is MISSING:
            params.pop(key, None)
        else:
            params[key] = {"id": value} if key == "thread" else value
    if draw(st.integers(0, 5)) == 0:
        params = draw(st.sampled_from([None, [], "text", 3]))
    method = "item/agentMessage/delta"
    if draw(st.integers(0, 5)) == 0:
        method = draw(st.sampled_from(["item/reasoning/textDelta", "turn/started"]))
    return Notification(method, params)


def fake_driver(full: list[Notification] | None) -> Any:
    """What ``_fast_frame`` / ``_on_frame`` / ``_on_notification`` touch for these notifications;
    ``full`` collects what reaches the full path (None: run the real full path)."""
    sent: list[seam.DriverEvent] = []

    async def send(event: seam.DriverEvent) -> None:
        sent.append(event)

    loop = SimpleNamespace(send=send, link=SimpleNamespace(send=send))
    fake = SimpleNamespace(_thread_id=THREAD, _translator=Translator(), _loop=loop, sent=sent)
    if full is not None:

        async def on_notification(note: Notification) -> None:
            full.append(note)

        fake._on_notification = on_notification
    return fake


async def deliver(driver: Any, note: Notification) -> None:
    """What ``toolkit.DriverLoop`` does with a frame: ``fast_frame`` first, its event sent; only a
    frame it declined (None) reaches ``on_frame``."""
    event = CodexDriver._fast_frame(driver, note)
    if event is None:
        await CodexDriver._on_frame(driver, note)
    else:
        await driver._loop.send(event)


def outcomes(note: Notification, backend: str) -> tuple[Any, list[Notification], Any]:
    """(the fast path's driver, what it passed to the full path, the full path's driver: run
    only when the fast path took the frame)."""
    full: list[Notification] = []
    fast = fake_driver(full)
    reference = fake_driver(None)
    anyio.run(deliver, fast, note, backend=backend)
    if not full:  # taken: what would the full path have done?
        anyio.run(CodexDriver._on_notification, reference, note, backend=backend)
    return fast, full, reference


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=300, deadline=None)
@given(note=notifications())
def test_the_fast_path_equals_the_full_path_or_leaves_the_frame_to_it(backend: str, note: Notification) -> None:
    fast, full, reference = outcomes(note, backend)
    event("full" if full else "fast")
    if full:  # not taken: nothing done, the frame handed on as it came
        assert full == [note] and fast.sent == [] and fast._translator._streamed == set()
    else:  # taken: exactly the full path's events (a bare TextDelta is its Content) and translator state
        assert [seam.Content(e) for e in fast.sent] == reference.sent
        assert len(fast.sent) == 1 and type(fast.sent[0]) is TextDelta
        assert fast._translator._streamed == reference._translator._streamed


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_delta_of_our_thread_takes_the_fast_path(backend: str) -> None:
    params = {"threadId": THREAD, "turnId": "turn-1", "itemId": "msg-1", "delta": "hi "}
    fast, full, reference = outcomes(Notification("item/agentMessage/delta", params), backend)
    assert full == []
    assert fast.sent == [TextDelta("msg-1", "hi ")]  # bare: the engine takes it as its Content
    assert reference.sent == [seam.Content(TextDelta("msg-1", "hi "))]
    assert fast._translator._streamed == {"msg-1"}


@pytest.mark.parametrize(
    "params",
    [
        {"threadId": "thr-other", "itemId": "msg-1", "delta": "hi"},  # a subagent's thread: dropped
        {"itemId": "msg-1", "delta": "hi"},  # no thread id: the full path decides
        {"threadId": THREAD, "itemId": "", "delta": "hi"},  # bad: a diagnostic
        {"threadId": THREAD, "itemId": "msg-1", "delta": 5},
        {"threadId": THREAD, "itemId": "msg-1"},
        ["not", "an", "object"],
    ],
)
def test_anything_else_reaches_the_full_path(params: Any) -> None:
    note = Notification("item/agentMessage/delta", params)
    fast, full, _reference = outcomes(note, "asyncio")
    assert full == [note] and fast.sent == []


def test_text_delta_equals_feed_on_the_translator() -> None:
    fast, slow = Translator(), Translator()
    params = {"threadId": THREAD, "itemId": "m", "delta": ""}
    assert [seam.Content(fast.text_delta(params))] == slow.feed("item/agentMessage/delta", params)  # empty text too
    assert fast.text_delta({"itemId": "m", "delta": None}) is None
    assert fast._streamed == slow._streamed == {"m"}
