"""Engine throughput and import cost (figures, not pass/fail).

1. Events/s delivered through ``Events`` for a 100k-``TextDelta`` flood from the mock adapter,
   beside a bare anyio memory-object-stream pass-through of the same objects in the same run.
   Targets: >= 200k events/s and >= 40% of the bare stream's rate.
2. ``import anyagent`` plus plugin loading, beside ``import httpx``, each in a fresh interpreter.

Run: ``python benchmarks/bench_engine.py [--n 100000] [--backend asyncio|trio|both]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import anyio

from anyagent import Runtime, SessionOptions, TextDelta, TurnEnded
from anyagent.mock import Script, Step, completed, text


async def engine_flood(n: int) -> float:
    script = Script(buffer=256).turn([Step.repeat(n, Step.emit(text("m1", "x"))), Step.end(completed())])
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        async with session:
            start = time.perf_counter()
            await session.prompt("flood")
            count = 0
            async for event in events:
                if isinstance(event.kind, TextDelta):
                    count += 1
                elif isinstance(event.kind, TurnEnded):
                    break
            elapsed = time.perf_counter() - start
    assert count == n, count
    return n / elapsed


async def bare_stream(n: int) -> float:
    item = text("m1", "x")
    send, receive = anyio.create_memory_object_stream[TextDelta](1024)

    async def produce() -> None:
        async with send:
            for _ in range(n):
                await send.send(item)

    start = time.perf_counter()
    count = 0
    async with anyio.create_task_group() as tg:
        tg.start_soon(produce)
        async with receive:
            async for _ in receive:
                count += 1
    elapsed = time.perf_counter() - start
    assert count == n
    return n / elapsed


def import_cost(statement: str, runs: int = 7) -> float:
    """Median wall time (ms) of running ``statement`` in a fresh interpreter, minus bare startup."""

    def once(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return (time.perf_counter() - start) * 1000

    base = statistics.median(once("pass") for _ in range(runs))
    return statistics.median(once(statement) for _ in range(runs)) - base


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--backend", default="both", choices=["asyncio", "trio", "both"])
    args = parser.parse_args()
    backends = ["asyncio", "trio"] if args.backend == "both" else [args.backend]
    print(f"engine throughput, {args.n} TextDelta events")
    for backend in backends:
        engine = max(anyio.run(engine_flood, args.n, backend=backend) for _ in range(3))
        bare = max(anyio.run(bare_stream, args.n, backend=backend) for _ in range(3))
        print(
            f"  {backend:7}  engine {engine:>10,.0f} ev/s   bare stream {bare:>10,.0f} ev/s   ratio {engine / bare:.0%}"
        )
    anyagent_ms = import_cost("import anyagent; anyagent.Runtime().registry()")
    httpx_ms = import_cost("import httpx")
    print(f"import anyagent + plugin load: {anyagent_ms:.1f} ms   import httpx: {httpx_ms:.1f} ms")


if __name__ == "__main__":
    main()
