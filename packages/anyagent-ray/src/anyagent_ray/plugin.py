"""The ``anyagent fleet`` subcommand, registered through core's ``anyagent_commands`` hook."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from typing import Any

import anyio
import anyio.to_thread

import anyagent

__all__ = ["anyagent_commands"]


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "cards", metavar="CARDS.jsonl", help="one JSON object per line: prompt, optional id/agent/directory"
    )
    parser.add_argument("--agent", required=True, help="the agent each card's session runs (a card's 'agent' wins)")
    parser.add_argument("--concurrency", type=int, default=8, metavar="N", help="cards at once (default 8)")
    parser.add_argument(
        "--per-node", type=int, default=None, metavar="N", help="at most N cards on one Ray node (default: no limit)"
    )
    parser.add_argument(
        "--retries", type=int, default=1, metavar="N", help="more attempts for a failed card (default 1)"
    )
    parser.add_argument("--address", default=None, help="the Ray cluster (default: RAY_ADDRESS, else a local one)")
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local cluster started for the run")
    parser.add_argument("--output", metavar="PATH", help="write each card's result as a JSON line here")


async def _run(context: anyagent.CommandContext) -> int:
    from rich.progress import Progress

    from anyagent.mock import Script

    from ._fleet import CardResult, load_cards, run_fleet
    from ._runtime import RayRuntime

    args = context.args
    try:
        cards = await anyio.to_thread.run_sync(load_cards, args.cards)
        factory: Any = anyagent.Runtime
        if args.mock:  # the global --mock: every actor plays the same script
            factory = functools.partial(anyagent.Runtime.with_mock, Script.load(args.mock))
        if args.per_node is not None and args.per_node < 1:
            raise anyagent.InvalidRequest("--per-node must be >= 1")
    except (OSError, anyagent.AgentError) as exc:
        print(f"error: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    init: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if args.num_cpus is not None:
        init["num_cpus"] = args.num_cpus
    failed = 0
    lines: list[str] = []
    try:
        with Progress(transient=False) as progress:
            task = progress.add_task("cards", total=len(cards))

            def done(result: CardResult) -> None:
                nonlocal failed
                failed += 0 if result.ok else 1
                progress.advance(task)
                if args.output:
                    stop = type(result.stop).__name__ if result.stop is not None else None
                    line = {"id": result.card.id, "ok": result.ok, "stop": stop, "text": result.text}
                    line |= {"attempts": result.attempts, "error": result.error, "node": result.node_id}
                    lines.append(json.dumps(line) + "\n")

            async with RayRuntime(args.address, runtime=factory, init=init) as runtime:
                await run_fleet(
                    runtime,
                    cards,
                    agent=args.agent,
                    concurrency=args.concurrency,
                    per_node=args.per_node,
                    retries=args.retries,
                    on_result=done,
                )
    finally:
        if args.output:
            await anyio.Path(args.output).write_text("".join(lines), encoding="utf-8")
    print(f"{len(cards) - failed} of {len(cards)} cards completed")
    return 0 if failed == 0 else 1


@anyagent.hookimpl
def anyagent_commands(register: anyagent.Register) -> None:
    """Add `anyagent fleet CARDS.jsonl --agent A --concurrency N` (cards as sessions on a Ray cluster)."""
    register.command(
        anyagent.CliCommand(
            name="fleet",
            help="run a JSON-lines file of cards as agent sessions on a Ray cluster, with a progress bar",
            description="Each card is one session and one turn, at most --concurrency at once. See docs/ray.md.",
            run=_run,
            arguments=_arguments,
        )
    )
