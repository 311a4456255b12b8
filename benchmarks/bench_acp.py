"""ACP wire throughput, honestly measured (figures, not pass/fail).

The producer is a fake ACP agent (``_flood.acp_producer``): it answers ``initialize`` and
``session/new`` and, on ``session/prompt``, writes ``n`` pre-rendered ``session/update``
``agent_message_chunk`` notifications and the prompt's response in one write, so it is never the
bottleneck. Every contender spawns it and is timed spawn → turn end, in one run, in an order that
rotates each round:

- bare: ``subprocess.Popen`` + ``readline()`` + ``json.loads`` (the ceiling);
- anyagent/asyncio and anyagent/trio: ``Runtime.open`` + the ACP adapter + the engine, counting
  ``TextDelta`` events until ``TurnEnded``;
- the official ``agent-client-protocol`` SDK's client (``spawn_agent_process`` +
  ``ClientSideConnection``), counting ``session_update`` chunks until ``prompt`` returns.

Medians of ``--runs`` with (min–max); ratios last.

Run: ``python benchmarks/bench_acp.py [--n 100000] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _flood import acp_producer, alternate, anyagent_turn, installed, report

import anyagent_acp.plugin
from anyagent import AgentInstallation


def bare(producer: Path, n: int) -> float:
    start = time.perf_counter()
    child = subprocess.Popen([str(producer)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None

    def call(request_id: int, method: str, params: dict[str, Any]) -> None:
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        child.stdin.write((json.dumps(frame) + "\n").encode())  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]

    call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    json.loads(child.stdout.readline())
    call(2, "session/new", {"cwd": tempfile.gettempdir(), "mcpServers": []})
    json.loads(child.stdout.readline())
    call(3, "session/prompt", {"sessionId": "flood-1", "prompt": [{"type": "text", "text": "flood"}]})
    count = 0
    for line in child.stdout:
        frame = json.loads(line)
        if frame.get("method") == "session/update":
            if frame["params"]["update"].get("sessionUpdate") == "agent_message_chunk":
                count += 1
        elif frame.get("id") == 3:
            break
    elapsed = time.perf_counter() - start
    child.stdin.close()
    child.wait()
    assert count == n, count
    return n / elapsed


async def anyagent_run(producer: Path, n: int) -> float:
    """Spawn → ``TurnEnded`` through ``Runtime`` + the adapter + the engine."""
    return await anyagent_turn(anyagent_acp.plugin, AgentInstallation.acp("flood", str(producer), []), n)


async def sdk_run(producer: Path, n: int) -> float:
    from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
    from acp.schema import AgentMessageChunk

    count = 0

    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            nonlocal count
            if isinstance(update, AgentMessageChunk):
                count += 1

        async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    start = time.perf_counter()
    async with spawn_agent_process(Client(), str(producer)) as (conn, _process):  # type: ignore[arg-type]
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        created = await conn.new_session(cwd=tempfile.gettempdir(), mcp_servers=[])
        await conn.prompt(session_id=created.session_id, prompt=[text_block("flood")])
        elapsed = time.perf_counter() - start
    assert count == n, count
    return n / elapsed


def sdk_available() -> bool:
    return installed("acp")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    n = args.n
    with tempfile.TemporaryDirectory() as tmp:
        producer = acp_producer(Path(tmp), n)
        contenders: dict[str, Callable[[], float]] = {
            "bare readline+json.loads": lambda: bare(producer, n),
            "anyagent asyncio": lambda: anyio.run(anyagent_run, producer, n),
            "anyagent trio": lambda: anyio.run(anyagent_run, producer, n, backend="trio"),
        }
        if sdk_available():
            contenders["agent-client-protocol SDK"] = lambda: anyio.run(sdk_run, producer, n)
        installed("trio")  # the trio contender's first run does not pay for importing it
        rates, cpu_rates = alternate(contenders, args.runs, n)
        print(f"ACP wire: {n:,} agent_message_chunk updates, spawn → turn end, median (min–max) of {args.runs}")
        report(rates, cpu_rates, "chunks", "agent-client-protocol SDK")


if __name__ == "__main__":
    sys.exit(main())
