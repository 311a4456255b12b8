"""Shared helpers for the recorded tier: the scripted agent as an installation, event collection."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio

import anyagent_acp.plugin
from anyagent import AgentInstallation, Event, Events, RequestOpened, Runtime, Session, SessionOptions, TurnEnded

K = TypeVar("K")

AGENTS = Path(__file__).parent / "agents"
SCRIPTED = AGENTS / "scripted_agent.py"


def scripted() -> AgentInstallation:
    """The scripted SDK agent, launched as ``python scripted_agent.py``."""
    return AgentInstallation.acp("scripted", sys.executable, [str(SCRIPTED)])


def runtime() -> Runtime:
    """A runtime that loads exactly this package's plugin."""
    return Runtime(plugins=[anyagent_acp.plugin])


@asynccontextmanager
async def opened(
    tmp_path: Path, options: SessionOptions | None = None, agent: AgentInstallation | None = None
) -> AsyncIterator[tuple[Session, Events]]:
    """A runtime with one open session on the scripted agent (closed on exit)."""
    async with runtime() as rt:
        session, events = await rt.open(agent or scripted(), options or SessionOptions.in_dir(tmp_path))
        async with session:
            yield session, events


async def until(events: Events, stop: Callable[[Event], bool], timeout: float = 15.0) -> list[Event]:
    """Events up to and including the first one ``stop`` accepts."""
    seen: list[Event] = []
    with anyio.fail_after(timeout):
        async for event in events:
            seen.append(event)
            if stop(event):
                return seen
    raise AssertionError(f"the stream ended before the awaited event; saw {[type(e.kind).__name__ for e in seen]}")


async def turn(events: Events, timeout: float = 15.0) -> list[Event]:
    """Events up to and including the next ``TurnEnded``."""
    return await until(events, lambda e: isinstance(e.kind, TurnEnded), timeout)


async def next_request(events: Events, timeout: float = 15.0) -> Any:
    """The next opened request (a ``PermissionRequest`` or ``QuestionRequest``)."""
    seen = await until(events, lambda e: isinstance(e.kind, RequestOpened), timeout)
    last = seen[-1].kind
    assert isinstance(last, RequestOpened)
    return last.request


def kinds(seen: list[Event], kind: type[K]) -> list[K]:
    """The kinds of ``seen`` that are instances of ``kind``."""
    return [e.kind for e in seen if isinstance(e.kind, kind)]


def text(seen: list[Event]) -> str:
    """All assistant text in ``seen``."""
    from anyagent import TextDelta

    return "".join(k.text for k in kinds(seen, TextDelta))
