"""Codex adapter throughput and open overhead, honestly measured (figures, not pass/fail).

The producer is a fake ``codex app-server`` (``_flood.codex_producer``): it answers the handshake
requests by method and, on ``turn/start``, writes the request's answer, ``turn/started``, ``n``
pre-rendered ``item/agentMessage/delta`` notifications, the message's ``item/completed`` and
``turn/completed`` in one write, so it is never the bottleneck. Every contender spawns it and is
timed spawn → turn end, in one run, in an order that rotates each round:

- bare: ``subprocess.Popen`` + ``readline()`` + ``json.loads``, pipelining the same requests (the ceiling);
- anyagent/asyncio and anyagent/trio: ``Runtime.open`` (the adapter's real handshake) + ``prompt``
  + the engine's events until ``TurnEnded``, asserting every character arrived.

Rates are deltas/s (wall, and per CPU-second of this host process); medians of ``--runs`` with
(min–max); ratios last. Then the open overhead: ``Runtime.open`` beside the fake's own spawn +
``initialize`` answer and beside spawn + the adapter's four handshake round trips made by a bare
blocking client (medians of ``--opens``, alternating).

Targets: anyagent >= 50% of bare; open overhead beyond spawn + ``initialize`` <= 20 ms.
Run: ``python benchmarks/bench_codex.py [--n 100000] [--runs 5] [--opens 15]``.
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

from _flood import alternate, anyagent_turn, codex_producer, installed, median, report

import anyagent_codex.plugin
from anyagent import AgentInstallation, Runtime, SessionOptions

HANDSHAKE: list[dict[str, Any]] = [
    {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "bare"}, "capabilities": {}}},
    {"method": "initialized"},
    {"id": 2, "method": "account/read", "params": {}},
    {"id": 3, "method": "model/list", "params": {}},
    {"id": 4, "method": "thread/start", "params": {"cwd": "/tmp"}},
]
TURN: dict[str, Any] = {"id": 6, "method": "turn/start", "params": {"threadId": "thr-bench", "input": []}}


def _line(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame).encode() + b"\n"


def bare(producer: Path, n: int) -> float:
    """A blocking ``readline()+json.loads`` loop, every request pipelined after ``initialize``."""
    start = time.perf_counter()
    child = subprocess.Popen([str(producer)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(_line(HANDSHAKE[0]))
    child.stdin.flush()
    json.loads(child.stdout.readline())
    child.stdin.write(b"".join(_line(frame) for frame in [*HANDSHAKE[1:], TURN]))
    child.stdin.flush()
    count = 0
    for line in child.stdout:
        frame = json.loads(line)
        method = frame.get("method")
        if method == "item/agentMessage/delta":
            count += 1
        elif method == "turn/completed":
            break
    elapsed = time.perf_counter() - start
    child.stdin.close()
    child.wait()
    assert count == n, count
    return n / elapsed


def bare_open(producer: Path, round_trips: int) -> float:
    """Seconds from spawn to the answer of the ``round_trips``-th handshake request, each request
    written after the previous answer (1: ``initialize`` only; 4: up to ``thread/start``)."""
    start = time.perf_counter()
    child = subprocess.Popen([str(producer)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    for frame in [f for f in HANDSHAKE if "id" in f][:round_trips]:
        child.stdin.write(_line(frame) + (_line(HANDSHAKE[1]) if frame["id"] == 1 and round_trips > 1 else b""))
        child.stdin.flush()
        json.loads(child.stdout.readline())
    elapsed = time.perf_counter() - start
    child.stdin.close()
    child.wait()
    return elapsed


async def anyagent_open(runtime: Runtime, producer: Path) -> float:
    start = time.perf_counter()
    session, _events = await runtime.open(
        AgentInstallation.at("codex", producer), SessionOptions.in_dir(tempfile.gettempdir())
    )
    elapsed = time.perf_counter() - start
    await session.close()
    return elapsed


async def anyagent_run(producer: Path, n: int) -> float:
    """Spawn → ``TurnEnded`` through ``Runtime`` + the codex adapter + the engine."""
    return await anyagent_turn(anyagent_codex.plugin, AgentInstallation.at("codex", producer), n)


async def opens(producer: Path, count: int) -> tuple[list[float], list[float], list[float]]:
    """Alternating: bare spawn+initialize, bare spawn+4 round trips, ``Runtime.open`` (seconds)."""
    init: list[float] = []
    handshake: list[float] = []
    opened: list[float] = []
    async with Runtime(plugins=[anyagent_codex.plugin]) as runtime:
        runtime.prewarm()
        await anyagent_open(runtime, producer)  # warm-up: first-open imports and caches
        for _ in range(count):
            init.append(bare_open(producer, 1))
            handshake.append(bare_open(producer, 4))
            opened.append(await anyagent_open(runtime, producer))
    return init, handshake, opened


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--opens", type=int, default=15)
    args = parser.parse_args()
    n = args.n
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        producer = codex_producer(directory / "flood", n)
        contenders: dict[str, Callable[[], float]] = {
            "bare readline+json.loads": lambda: bare(producer, n),
            "anyagent asyncio": lambda: anyio.run(anyagent_run, producer, n),
            "anyagent trio": lambda: anyio.run(anyagent_run, producer, n, backend="trio"),
        }
        installed("trio")  # the trio contender's first run does not pay for importing it
        if n:
            rates, cpu_rates = alternate(contenders, args.runs, n)
            what = f"{n:,} item/agentMessage/delta notifications"
            print(f"codex wire: {what}, spawn → turn end, median (min–max) of {args.runs}")
            report(rates, cpu_rates, "deltas", None)
        if args.opens:
            small = codex_producer(directory / "small", 10)
            init, handshake, opened = (
                [value * 1000 for value in values] for values in anyio.run(opens, small, args.opens)
            )

            def show(values: list[float]) -> str:
                return f"{median(values):6.1f} ms ({min(values):.1f}–{max(values):.1f})"

            print(f"codex open, median (min–max) of {args.opens}, alternating:")
            print(f"  bare spawn → initialize answer             {show(init)}")
            print(f"  bare spawn → 4 handshake round trips       {show(handshake)}")
            print(f"  Runtime.open (spawn → ready)               {show(opened)}")
            print(
                f"  overhead beyond spawn+initialize {median(opened) - median(init):+.1f} ms (target <= 20 ms); "
                f"beyond the bare 4-round-trip handshake {median(opened) - median(handshake):+.1f} ms"
            )


if __name__ == "__main__":
    main()
