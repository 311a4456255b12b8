"""Transcripts as plain text: the turns of a stored thread, and the hand-off prompt built from them."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from anyagent import Event, TextDelta, ToolUpdated, TurnEnded, UserMessage

from ._model import Thread

__all__ = ["HANDOFF_BUDGET", "Turn", "handoff_prompt", "turns"]

HANDOFF_BUDGET = 24_000
"""The default size of a hand-off prompt's conversation part, in characters (about 6 000 tokens)."""

_SUMMARY_SHARE = 4  # older turns' one-line summaries may take up to 1/4 of the budget
_SUMMARY_LINE = 160


@attrs.define
class Turn:
    """One exchange: the user's prompt (None for a turn the agent began) and what the agent said and did."""

    prompt: str | None = None
    reply: list[str] = attrs.Factory(list)
    tools: list[str] = attrs.Factory(list)

    def text(self, agent: str = "Assistant") -> str:
        """The turn as plain text: `User: <prompt>`, its tool lines, then `<agent>: <reply>`."""
        lines = []
        if self.prompt is not None:
            lines.append(f"User: {self.prompt}")
        for tool in self.tools:
            lines.append(f"[{agent} used a tool: {tool}]")
        reply = "".join(self.reply).strip()
        if reply:
            lines.append(f"{agent}: {reply}")
        return "\n".join(lines)


def turns(events: Iterable[Event]) -> list[Turn]:
    """Group a thread's events into turns: a ``UserMessage`` opens one, text deltas are the reply
    (subagents' output left out), each tool counts once by title."""
    result: list[Turn] = []
    current: Turn | None = None
    tools_seen: set[str] = set()
    for event in events:
        kind = event.kind
        nested = event.turn_info is not None and event.turn_info.parent_tool_id is not None
        if isinstance(kind, UserMessage) and not nested:
            current = Turn(prompt=kind.text)
            result.append(current)
            continue
        if current is None:
            current = Turn()
            result.append(current)
        if isinstance(kind, TextDelta) and not nested:
            current.reply.append(kind.text)
        elif isinstance(kind, ToolUpdated) and not nested and kind.tool.id not in tools_seen:
            tools_seen.add(kind.tool.id)
            current.tools.append(kind.tool.title or kind.tool.kind.__str__())
        elif isinstance(kind, TurnEnded) and not nested:
            current = None
    return [t for t in result if t.prompt is not None or t.reply or t.tools]


def _summary(turn: Turn) -> str:
    said = turn.prompt if turn.prompt is not None else "".join(turn.reply)
    said = " ".join(said.split())
    if len(said) > _SUMMARY_LINE:
        said = said[: _SUMMARY_LINE - 1] + "…"
    return f"- {'the user asked' if turn.prompt is not None else 'the assistant said'}: {said}"


def handoff_prompt(
    thread: Thread, events: Iterable[Event], budget: int = HANDOFF_BUDGET, instruction: str | None = None
) -> str:
    """The first prompt of a hand-off, its conversation part at most ``budget`` characters.

    The rule: the newest turns are carried whole, going back in time while they fit; the turns before
    those are summarised one line each (the prompt's first 160 characters), newest first, while the
    summaries fit in a quarter of the budget; anything older is cut and counted ("N earlier turns
    omitted"). A newest turn longer than the whole budget keeps its last ``budget`` characters.
    """
    all_turns = turns(events)
    verbatim: list[str] = []
    used = 0
    index = len(all_turns)
    while index > 0:
        text = all_turns[index - 1].text()
        if used + len(text) + 2 > budget:
            if not verbatim:  # the newest turn alone is too long: keep its end
                verbatim.append("…" + text[-(budget - 1) :])
                index -= 1
            break
        verbatim.append(text)
        used += len(text) + 2
        index -= 1
    verbatim.reverse()
    summaries: list[str] = []
    summary_budget = budget // _SUMMARY_SHARE
    summary_used = 0
    while index > 0:
        line = _summary(all_turns[index - 1])
        if summary_used + len(line) + 1 > summary_budget:
            break
        summaries.append(line)
        summary_used += len(line) + 1
        index -= 1
    summaries.reverse()
    parts = [
        f"This conversation continues one held with the agent {thread.agent_id!r}"
        + (f" in {thread.cwd}" if thread.cwd else "")
        + (f", titled {thread.title!r}" if thread.title else "")
        + ". Here is what was said so far."
    ]
    if index > 0:
        parts.append(f"({index} earlier turn{'s' if index != 1 else ''} omitted)")
    if summaries:
        parts.append("Earlier turns, in brief:\n" + "\n".join(summaries))
    if verbatim:
        parts.append("The latest turns:\n\n" + "\n\n".join(verbatim))
    parts.append(instruction or "Carry on from where the conversation stopped; say briefly what you understood first.")
    return "\n\n".join(parts)
