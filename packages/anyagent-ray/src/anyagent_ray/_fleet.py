"""The fleet helper: N cards, each one session and one turn, with a concurrency limit and retries."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import attrs

import anyagent

from ._runtime import RayRuntime

__all__ = ["Card", "CardResult", "load_cards", "run_fleet"]


@attrs.frozen
class Card:
    """One unit of work: a prompt for a fresh session of ``agent`` (None: the fleet's agent) in ``directory``."""

    id: str
    prompt: str
    agent: str | None = None
    directory: str = "."


@attrs.frozen
class CardResult:
    """What a card's last attempt gave: the final text, the stop reason (None if no turn ended), the last
    ``ContextUsage`` seen, every event (``transcript``), the attempts made, the error text of a failure and
    the Ray node the last attempt ran on (None if it did not open)."""

    card: Card
    text: str
    stop: anyagent.StopReason | None
    usage: anyagent.ContextUsage | None
    transcript: tuple[anyagent.Event, ...]
    attempts: int
    error: str | None = None
    node_id: str | None = None

    @property
    def ok(self) -> bool:
        """The turn completed."""
        return isinstance(self.stop, anyagent.Completed)


def load_cards(path: str | Path) -> list[Card]:
    """Cards from a JSON-lines file: one object per line with ``prompt`` and optional ``id``, ``agent``, ``directory``.

    A bad line raises ``anyagent.InvalidRequest`` naming it.
    """
    cards = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
                if not isinstance(value, dict) or not isinstance(value.get("prompt"), str):
                    raise ValueError("needs an object with a string 'prompt'")
                cards.append(
                    Card(
                        id=str(value.get("id", number)),
                        prompt=value["prompt"],
                        agent=value.get("agent"),
                        directory=str(value.get("directory", ".")),
                    )
                )
            except ValueError as exc:
                raise anyagent.InvalidRequest(f"{path}:{number}: {exc}") from None
    return cards


async def _attempt(runtime: RayRuntime, card: Card, agent: str, attempts: int, per_node: int | None) -> CardResult:
    text: list[str] = []
    stop: anyagent.StopReason | None = None
    usage: anyagent.ContextUsage | None = None
    transcript: list[anyagent.Event] = []
    node: str | None = None
    try:
        session, events = await runtime.open(agent, anyagent.SessionOptions.in_dir(card.directory), per_node=per_node)
        node = session.node_id
        async with session:
            await session.prompt(card.prompt)
            async for event in events:
                transcript.append(event)
                kind = event.kind
                if isinstance(kind, anyagent.TextDelta):
                    text.append(kind.text)
                elif isinstance(kind, anyagent.ContextUsage):
                    usage = kind
                elif isinstance(kind, anyagent.TurnEnded):
                    stop = kind.stop
                    break
    except anyagent.AgentError as exc:
        return CardResult(card, "".join(text), stop, usage, tuple(transcript), attempts, exc.message, node)
    error = stop.message if isinstance(stop, anyagent.Failed) else None
    return CardResult(card, "".join(text), stop, usage, tuple(transcript), attempts, error, node)


async def run_fleet(
    runtime: RayRuntime,
    cards: Sequence[Card],
    *,
    agent: str,
    concurrency: int = 8,
    per_node: int | None = None,
    retries: int = 1,
    retry: Callable[[CardResult], bool] = lambda result: not result.ok,
    on_result: Callable[[CardResult], None] | None = None,
) -> list[CardResult]:
    """Run every card (at most ``concurrency`` at once, and at most ``per_node`` on one Ray node: None leaves
    the runtime's own ``per_node``), retrying a card up to ``retries`` more times while
    ``retry(result)`` says so (default: it did not complete). Results come back in the cards' order;
    ``on_result`` is called as each card finishes."""
    if concurrency < 1 or retries < 0 or (per_node is not None and per_node < 1):
        raise anyagent.InvalidRequest("concurrency and per_node must be >= 1 and retries >= 0")
    limiter = anyio.CapacityLimiter(concurrency)
    results: list[CardResult | None] = [None] * len(cards)

    async def one(index: int, card: Card) -> None:
        async with limiter:
            attempts = 0
            while True:
                attempts += 1
                result = await _attempt(runtime, card, card.agent or agent, attempts, per_node)
                if attempts > retries or not retry(result):
                    break
        results[index] = result
        if on_result is not None:
            on_result(result)

    async with anyio.create_task_group() as tg:
        for index, card in enumerate(cards):
            tg.start_soon(one, index, card)
    return [r for r in results if r is not None]
