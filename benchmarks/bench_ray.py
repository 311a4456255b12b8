"""Events/s through RayRuntime vs in-process on the same flood, in one run; open overhead; driver memory.

The flood is the scripted mock emitting N text deltas in one turn. Printed side by side: the bare in-process
loop (the producer's own ceiling), then the same script in a Ray actor read by the driver. ``python
benchmarks/bench_ray.py [N] [SESSIONS]``.
"""

from __future__ import annotations

import functools
import resource
import sys
import time

import anyio
import ray

import anyagent
from anyagent.mock import Script, Step, completed, text
from anyagent_ray import RayRuntime


def _script(n: int) -> Script:
    return Script().turn([Step.repeat(n, Step.emit(text("m1", "x"))), Step.end(completed())])


async def _drain(events: object) -> tuple[int, int]:
    count = chars = 0
    async for event in events:  # type: ignore[attr-defined]
        count += 1
        if isinstance(event.kind, anyagent.TextDelta):
            chars += len(event.kind.text)
        if isinstance(event.kind, anyagent.TurnEnded):
            break
    return count, chars


async def main(n: int, sessions: int) -> None:
    script = _script(n)
    async with anyagent.Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        t0 = time.perf_counter()
        session, events = await runtime.open(agent, anyagent.SessionOptions.in_dir("."))
        t_open_local = time.perf_counter() - t0
        async with session:
            t0 = time.perf_counter()
            await session.prompt("go")
            local_events, local_chars = await _drain(events)
            t_local = time.perf_counter() - t0
    async with RayRuntime(runtime=functools.partial(anyagent.Runtime.with_mock, script)) as rt:
        await rt.discover()
        t0 = time.perf_counter()
        session2, events2 = await rt.open("mock", anyagent.SessionOptions.in_dir("."))
        t_open_ray = time.perf_counter() - t0
        async with session2:
            t0 = time.perf_counter()
            await session2.prompt("go")
            ray_events, ray_chars = await _drain(events2)
            t_ray = time.perf_counter() - t0
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        opened = []
        t0 = time.perf_counter()
        for _ in range(sessions):
            opened.append(await rt.open("mock", anyagent.SessionOptions.in_dir(".")))
        t_many = time.perf_counter() - t0
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for s, _ in opened:
            await s.close()
    print(f"flood of {n} deltas (chars {local_chars} in-process, {ray_chars} via Ray)")
    print(f"in-process: {local_chars / t_local:,.0f} deltas/s ({local_events} events after merging)")
    print(f"via Ray   : {ray_chars / t_ray:,.0f} deltas/s ({ray_events} events)  ratio {t_local / t_ray:.0%}")
    print(f"open: in-process {t_open_local * 1000:.1f} ms, Ray actor {t_open_ray * 1000:.0f} ms")
    print(
        f"{sessions} sessions opened in {t_many:.1f} s; driver max RSS +{(rss1 - rss0) / 1024:.1f} MiB"
        f" (= {(rss1 - rss0) / 1024 / sessions * 1000:.0f} MiB per 1000 sessions)"
    )


if __name__ == "__main__":
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 100_000, int(sys.argv[2]) if len(sys.argv) > 2 else 20)
    ray.shutdown()
