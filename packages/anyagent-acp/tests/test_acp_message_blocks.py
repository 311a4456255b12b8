"""What an agent's messages hold besides text (issue 28 item 11's leftovers), and our own prompt
sent back in v1.

ACP message content is MCP's ``ContentBlock``; anyagent's message events carry Markdown text. A
``resource_link`` is shown as a Markdown link in the message's text; an image, audio, an embedded
resource (no anyagent event carries them) is reported dropped by a ``bad_frame`` diagnostic that
says what it was. v1 names no message ids, so an agent that sends our prompt back as user message
chunks (hermes) is recognised by content: never a ``UserMessage``. Scripted v1 and v2 agents
(``agents/versions_agent.py``) run as real subprocesses."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acpsupport import AGENTS, opened

from anyagent import (
    AgentInstallation,
    AgentOrigin,
    Diagnostic,
    DiagnosticCode,
    Event,
    Input,
    ReasoningDelta,
    SessionOptions,
    TextDelta,
    TurnStarted,
    UserMessage,
)
from anyagent_acp import translate
from anyagent_testkit.events import kinds, text_of

pytestmark = pytest.mark.anyio

_SUFFIX = "was dropped: anyagent's message events carry only text"


def _agent(versions: str) -> AgentInstallation:
    return AgentInstallation.acp("versions", sys.executable, [str(AGENTS / "versions_agent.py"), versions])


def _dropped(seen: list[Event]) -> list[str]:
    return [d.diagnostic.message for d in kinds(seen, Diagnostic) if d.diagnostic.code == DiagnosticCode.BAD_FRAME]


def _texts(seen: list[Event]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for delta in kinds(seen, TextDelta):
        texts[delta.message_id] = texts.get(delta.message_id, "") + delta.text
    return texts


@pytest.mark.parametrize("version", ["1", "2"])
async def test_resource_links_are_markdown_links_and_other_blocks_are_reported_exactly(
    version: str, tmp_path: Path
) -> None:
    async with opened(tmp_path, agent=_agent(version)) as (session, reader):
        await session.prompt("media")
        seen = await reader.turn()
    texts = _texts(seen)
    first = texts.pop("a1" if version == "2" else next(iter(texts)))
    assert first == "See [notes.md](file:///w/notes.md) and [The \\[draft\\]](<file:///w/my docs/a (1).md>)."
    assert not kinds(seen, ReasoningDelta) and not kinds(seen, UserMessage)  # they held nothing else
    expected = [
        f"an image (image/png, 70 bytes) in an agent message {_SUFFIX}",
        f"audio (audio/wav, 4 bytes) in an agent thought {_SUFFIX}",
        f"an embedded resource (text/plain, 5 characters of text, file:///w/a.txt) in a user message {_SUFFIX}",
    ]
    if version == "2":  # a whole message upserted three times: its link in the text, its image reported once
        assert texts == {"a2": "Read [notes.md](file:///w/notes.md)!"}
        expected.append(f"an image (image/png, 70 bytes) in an agent message {_SUFFIX}")
    else:
        assert texts == {}
    assert _dropped(seen) == expected
    raws = [d.diagnostic.raw for d in kinds(seen, Diagnostic)]
    assert all(raw and "session/update" in str(raw) for raw in raws)  # the frame rides along


def test_block_text_and_descriptions() -> None:
    assert translate.block_text({"type": "resource_link", "uri": "https://x.org/a b", "name": "a"}) == (
        "[a](<https://x.org/a b>)"
    )
    assert translate.block_text({"type": "resource_link", "uri": "file:///a.md"}) == "[file:///a.md](file:///a.md)"
    assert translate.block_text({"type": "resource_link", "name": "no uri"}) is None
    assert translate.block_text({"type": "image", "data": "AA=="}) is None
    assert translate.dropped_description({"type": "_vendor/chart"}) == "a content block of type '_vendor/chart'"
    assert translate.dropped_description({"type": "resource_link"}) == "a resource link without a uri"
    blob = {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA"}}
    assert translate.dropped_description(blob) == "an embedded resource (3 bytes, file:///b.bin)"


def _offer(echo: translate.PromptEcho, *texts: str) -> list[tuple[bool, str]]:
    return [echo.offer({"type": "text", "text": text}) for text in texts]


def test_the_echo_is_recognised_in_parts_cumulative_or_spaced_otherwise_and_only_once() -> None:
    prompt = [{"type": "text", "text": "fix the bug"}]
    assert _offer(translate.PromptEcho(prompt), "fix ", "the bug", "fix the bug") == [
        (True, ""),
        (True, ""),
        (False, ""),  # said again: the agent's own, shown
    ]
    assert _offer(translate.PromptEcho(prompt), "fix", "fix the", "fix the bug") == [(True, "")] * 3  # cumulative
    assert _offer(translate.PromptEcho(prompt), "fix the bug\n") == [(True, "")]
    assert _offer(translate.PromptEcho(prompt), "fix ", "it now") == [(True, ""), (False, "fix ")]  # handed back
    assert _offer(translate.PromptEcho(prompt), "hello", "fix the bug") == [(False, ""), (False, "")]  # watch over


async def test_v1_our_prompt_sent_back_is_never_a_user_message(tmp_path: Path) -> None:
    """hermes sends our prompt back as a ``user_message_chunk``: recognised by its content (text
    split over chunks, the inlined image between), once; the same text said again later in the
    turn is a user message of the agent's and is shown."""
    image = tmp_path / "shot.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\nfake")
    async with opened(tmp_path, agent=_agent("1")) as (session, reader):
        await session.prompt(Input.text("echo hello there").attach(image))
        seen = await reader.turn()
    assert [m.text for m in kinds(seen, UserMessage)] == ["echo hello there"]
    order = [type(e.kind) for e in seen if isinstance(e.kind, (TextDelta, UserMessage))]
    assert order == [TextDelta, UserMessage]  # only the one after the answer's text
    assert text_of(seen) == "Hello v1"
    assert not _dropped(seen)  # our own image in the echo is no dropped content either


async def test_v1_a_user_message_that_only_starts_like_our_prompt_is_shown_whole(tmp_path: Path) -> None:
    async with opened(tmp_path, agent=_agent("1")) as (session, reader):
        await session.prompt("near by")
        seen = await reader.turn()
    users = kinds(seen, UserMessage)
    assert "".join(m.text for m in users) == "nearly there" and len({m.message_id for m in users}) == 1


async def test_v1_our_earlier_prompt_said_again_after_the_turn_comes_through(tmp_path: Path) -> None:
    """A user message the agent sends outside our prompt's turn (history it replays, a parent's
    message) is never taken for an echo, though it says what we sent."""
    options = SessionOptions.in_dir(tmp_path).quiet_window(0.3)
    async with opened(tmp_path, options, agent=_agent("1")) as (session, reader):
        await session.prompt("replay")
        await reader.turn()
        later = await reader.turn()
    assert isinstance(kinds(later, TurnStarted)[0].origin, AgentOrigin)
    assert [m.text for m in kinds(later, UserMessage)] == ["replay"]
    assert text_of(later) == "replayed"
