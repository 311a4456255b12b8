"""``Translator.fast_delta`` (the flood's path) takes an event only when ``feed`` would make one
``Content(TextDelta)`` of it and nothing else, and then leaves the translator exactly as ``feed``
would (text counted, event id remembered); anything else it leaves untouched for ``feed``."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from anyagent import TextDelta, seam
from anyagent_opencode.translate import Translation, Translator

SESSION = "ses_1"
MISSING = object()

_odd = st.sampled_from([MISSING, None, "", 0, 3, True, [], {}])
_names = st.one_of(st.sampled_from([SESSION, "ses_child", "ses_other", "msg_1", "msg_u", "prt_1", "prt_r"]), _odd)


CANONICAL: dict[str, Any] = {
    "sessionID": SESSION,
    "messageID": "msg_1",
    "partID": "prt_1",
    "field": "text",
    "delta": "hi",
}
_changes = {
    "sessionID": _names,
    "messageID": _names,
    "partID": _names,
    "field": st.one_of(st.sampled_from(["reasoning", "metadata"]), _odd),
    "delta": st.one_of(st.text(max_size=5), _odd),
}


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    """The flood's event with a few things changed (none, often: the fast path must be taken)."""
    props = dict(CANONICAL)
    for key in draw(st.lists(st.sampled_from(sorted(_changes)), max_size=3)):
        value = draw(_changes[key])
        if value is MISSING:
            props.pop(key, None)
        else:
            props[key] = value
    frame: dict[str, Any] = {"type": "message.part.delta", "properties": props}
    if draw(st.integers(0, 5)) == 0:
        frame["type"] = draw(st.sampled_from(["message.part.updated", "session.idle"]))
    if draw(st.integers(0, 5)) == 0:
        frame["properties"] = draw(st.sampled_from([None, [], "x"]))
    event_id = draw(st.one_of(st.sampled_from(["evt_1", "evt_seen", "evt_2"]), _odd))
    if event_id is not MISSING:
        frame["id"] = event_id
    return frame


def translator() -> Translator:
    """A translator that has seen some of the session: a user message, a reasoning part, a child
    session, an event id."""
    t = Translator(SESSION)
    t.children["ses_child"] = "call_1"
    t.feed({"id": "evt_seen", "type": "message.updated", "properties": {"info": {"id": "msg_u", "role": "user"}}})
    t._kinds["prt_r"] = "reasoning"
    return t


@settings(max_examples=500, deadline=None)
@given(frame=events())
def test_fast_delta_equals_feed_or_leaves_the_event_to_it(frame: dict[str, Any]) -> None:
    fast, reference = translator(), translator()
    before = copy.deepcopy(vars(fast))
    taken = fast.fast_delta(frame)
    event("fast" if taken is not None else "full")
    if taken is None:
        assert vars(fast) == before
    else:
        assert reference.feed(frame) == Translation(events=[taken])
        assert type(taken.kind) is TextDelta
        assert vars(fast) == vars(reference)


def test_a_text_delta_of_our_session_is_fast_once() -> None:
    t = translator()
    frame = {
        "id": "evt_9",
        "type": "message.part.delta",
        "properties": {"sessionID": SESSION, "messageID": "msg_1", "partID": "prt_1", "field": "text", "delta": "hi"},
    }
    assert t.fast_delta(frame) == seam.Content(TextDelta("msg_1", "hi"))
    assert t.fast_delta(frame) is None  # the same event again (a reconnect replayed it)
    assert t.feed(frame) == Translation()  # which feed drops
