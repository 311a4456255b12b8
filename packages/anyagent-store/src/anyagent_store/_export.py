"""A stored thread as Markdown."""

from __future__ import annotations

from collections.abc import Sequence

from ._handoff import turns
from ._model import StoredEvent, Thread

__all__ = ["markdown"]


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def markdown(thread: Thread, stored: Sequence[StoredEvent]) -> str:
    """A readable transcript: a heading, the thread's facts, then each turn (prompt, tools, reply).
    Lines that no longer decode are listed at the end, raw."""
    lines = [f"# {thread.title or 'Untitled thread'}", ""]
    facts = [
        f"- agent: `{thread.agent_id}`",
        f"- thread: `{thread.id}`",
        f"- started: {thread.created_at.isoformat(timespec='seconds')}",
        f"- last activity: {thread.updated_at.isoformat(timespec='seconds')}",
    ]
    if thread.cwd:
        facts.insert(1, f"- directory: `{thread.cwd}`")
    if thread.origin_id:
        kind = thread.origin_kind.value if thread.origin_kind else "origin"
        facts.append(f"- {kind} of: `{thread.origin_id}`")
    lines += [*facts, ""]
    for turn in turns(s.event for s in stored if s.event is not None):
        if turn.prompt is not None:
            lines += ["## You", "", turn.prompt.strip(), ""]
        lines += [f"## {thread.agent_id}", ""]
        lines += [f"- tool: {tool}" for tool in turn.tools]
        if turn.tools:
            lines.append("")
        reply = "".join(turn.reply).strip()
        if reply:
            lines += [reply, ""]
    broken = [s for s in stored if s.event is None]
    if broken:
        lines += ["## Stored lines that no longer decode", ""]
        for item in broken:
            lines += [f"Event {item.position} ({item.error}):", "", _fence(item.raw), ""]
    return "\n".join(lines).rstrip() + "\n"
