"""The driver's text fast path takes only the chunks whose full-path outcome is one ``TextDelta``
of the message already open, and then has the same effects; everything else is left untouched."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from anyagent import ReasoningDelta, TextDelta
from anyagent_acp.driver import AcpDriver


def driver(**overrides: Any) -> Any:
    state: dict[str, Any] = {
        "_message": (TextDelta, "m1"),
        "_quirks": SimpleNamespace(mode_text_prefix=None),
        "_prompt": SimpleNamespace(saw_content=False),
        "_effort": None,
        "_turn_chars": 0,
        "_parts": None,
    }
    state.update(overrides)
    return SimpleNamespace(**state)


def chunk(text: Any = "hi", kind: str = "agent_message_chunk", **extra: Any) -> dict[str, Any]:
    return {"sessionId": "s", "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}, **extra}}


def test_a_continuing_chunk_is_the_open_messages_text_delta() -> None:
    fake = driver()
    assert AcpDriver._next_text(fake, chunk("hi", messageId="m1")) == TextDelta("m1", "hi")
    assert AcpDriver._next_text(fake, chunk("yo", messageId=7)) == TextDelta("m1", "yo")  # odd id: none
    assert fake._turn_chars == 4 and fake._prompt.saw_content


def test_a_v2_chunk_on_the_fast_path_is_kept_for_the_upserts() -> None:
    """v2: the open message's text is what a later whole-message upsert is compared with."""
    fake = driver(_parts=["Hel"])
    assert AcpDriver._next_text(fake, chunk("lo", messageId="m1")) == TextDelta("m1", "lo")
    assert fake._parts == ["Hel", "lo"]


@pytest.mark.parametrize(
    ("params", "overrides"),
    [
        (chunk("hi"), {"_message": None}),  # the first chunk opens the message: full path
        (chunk("hi"), {"_message": (ReasoningDelta, "m1")}),  # text after thought: full path ends it
        (chunk("hi", messageId="m2"), {}),  # a new message id
        (chunk(""), {}),  # empty chunks are dropped by the full path
        (chunk(None), {}),  # non-text content is reported by the full path
        (chunk("hi", kind="agent_thought_chunk"), {}),
        (chunk("[mode] plan"), {"_quirks": SimpleNamespace(mode_text_prefix="[mode]")}),
        (chunk("hi"), {"_prompt": None, "_effort": object()}),  # the hidden /effort prompt's answer
        ({"update": "nope"}, {}),
        ([], {}),
    ],
)
def test_anything_else_takes_the_full_path_untouched(params: Any, overrides: dict[str, Any]) -> None:
    fake = driver(**overrides)
    before = dict(vars(fake))
    saw = fake._prompt.saw_content if fake._prompt is not None else None
    assert AcpDriver._next_text(fake, params) is None
    assert vars(fake) == before
    assert (fake._prompt.saw_content if fake._prompt is not None else None) == saw
