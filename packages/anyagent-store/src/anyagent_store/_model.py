"""The values the store hands out: threads, stored events, pages of a thread list."""

from __future__ import annotations

import enum
from datetime import datetime, timezone

import attrs

from anyagent import Event

__all__ = ["OriginKind", "StoredEvent", "Thread", "ThreadPage", "ThreadStatus", "from_micros", "to_micros"]


class ThreadStatus(enum.Enum):
    """The badge of a thread in a list: what its session was doing when last recorded."""

    IDLE = "idle"
    WORKING = "working"
    NEEDS_INPUT = "needs_input"
    FAILED = "failed"


class OriginKind(enum.Enum):
    """How a thread came to be when it is not a fresh conversation."""

    FORK = "fork"  # branched off ``origin_id`` (at ``origin_position``) through the agent's fork
    HANDOFF = "handoff"  # continued on another agent: its first prompt carries the earlier conversation
    IMPORT = "import"  # listed from the agent's own history (``Runtime.history``); no events stored yet


@attrs.frozen
class Thread:
    """One conversation in the store: what a thread list shows, and what resumes it.

    ``event_count`` counts the stored events (positions 1 … ``event_count``). ``used_tokens``,
    ``window_tokens`` and ``cost_usd`` are the last context usage the agent reported. A thread made by
    a fork or a hand-off names its ``origin_id``; ``origin_position`` is the event it forked at.
    """

    id: str
    agent_id: str
    status: ThreadStatus
    created_at: datetime
    updated_at: datetime
    wire: str | None = None
    cwd: str | None = None
    title: str | None = None
    resume_token: str | None = None
    archived: bool = False
    event_count: int = 0
    used_tokens: int | None = None
    window_tokens: int | None = None
    cost_usd: float | None = None
    origin_id: str | None = None
    origin_kind: OriginKind | None = None
    origin_position: int | None = None


@attrs.frozen
class StoredEvent:
    """One line of a thread's log. ``event`` is None when the stored JSON no longer decodes (an event
    kind this version of anyagent does not know, or a damaged line): ``raw`` keeps the text as stored
    and ``error`` says why it did not decode."""

    position: int
    raw: str
    event: Event | None
    error: str | None = None


@attrs.frozen
class ThreadPage:
    """One page of a thread list, newest activity first. Pass ``next_cursor`` back for the next page
    (None on the last one)."""

    threads: tuple[Thread, ...]
    next_cursor: str | None = None


def to_micros(value: datetime) -> int:
    """An aware datetime as microseconds since the epoch (how the store keeps times)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime:
    """The inverse of ``to_micros`` (aware, UTC)."""
    from datetime import timedelta

    return _EPOCH + timedelta(microseconds=value)


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
