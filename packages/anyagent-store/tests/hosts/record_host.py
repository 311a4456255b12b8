"""A host process that records mock turns into a store (the kill and two-process tests run it).

``record_host.py DB kill N``: one turn of N text deltas, then "LAST", then the agent stalls mid-turn;
prints ``THREAD id`` at the start and ``READ sequence`` (the sequence of the "LAST" delta) after it.
``record_host.py DB many THREADS DELTAS``: THREADS recorded sessions of one turn each, then ``DONE``.
"""

from __future__ import annotations

import sys

import anyio

from anyagent import Runtime, SessionOptions, TextDelta, TurnEnded
from anyagent.mock import Script, Step, completed, text
from anyagent_store import Store


async def kill(path: str, n: int) -> None:
    script = Script().turn(
        [Step.repeat(n, Step.emit(text("m1", "chunk "))), Step.emit(text("m1", "LAST")), Step.sleep(600)]
    )
    async with Store.sqlite(path) as store, Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("."))
        async with session, store.record(session, events, batch_size=64, flush_interval=0.05) as recording:
            print(f"THREAD {recording.thread.id}", flush=True)
            await recording.prompt("go")
            async for event in recording:
                if isinstance(event.kind, TextDelta) and event.kind.text == "LAST":
                    print(f"READ {event.sequence}", flush=True)


async def many(path: str, threads: int, deltas: int) -> None:
    script = Script().turn([Step.repeat(deltas, Step.emit(text("m1", "word "))), Step.end(completed())])
    async with Store.sqlite(path) as store, Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        for _ in range(threads):
            session, events = await runtime.open(agent, SessionOptions.in_dir("."))
            async with session, store.record(session, events, batch_size=16) as recording:
                await recording.prompt("count words")
                async for event in recording:
                    if isinstance(event.kind, TurnEnded):
                        break
            await store.threads(limit=20)  # a reader in between, as an app's list refresh
    print("DONE", flush=True)


if __name__ == "__main__":
    if sys.argv[2] == "kill":
        anyio.run(kill, sys.argv[1], int(sys.argv[3]))
    else:
        anyio.run(many, sys.argv[1], int(sys.argv[3]), int(sys.argv[4]))
