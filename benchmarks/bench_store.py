"""anyagent-store: recording overhead, the SQLite driver choice, and a large store (figures, not pass/fail).

1. Record overhead — the app's reading speed with and without ``store.record`` in the same run, rounds
   alternating the order:
   - ``claude wire``: a fake ``claude`` process (``_flood.claude_producer``) floods ``--n`` text deltas
     through the real claude adapter and the engine (the fastest a real agent's wire can go);
   - ``in-process mock``: the scripted mock floods them with no wire at all (the worst case for the
     recorder: the whole path costs ~2 µs an event, and the loop never sleeps, so the recording's
     writer thread gets the GIL only where the stream's checkpoint lets it in).
   Both are timed from ``open`` to the reader having the ``TurnEnded`` (the recording's block end, which
   waits for the final write, is printed apart).
   Printed: events/s bare and recorded (median of ``--runs``), recorded/bare and each round's ratio; the
   event loop thread's CPU time an event (``time.thread_time``), bare against recorded: the reader's own
   cost, which a loaded machine inflates far less than wall time; and the other threads' CPU an event
   (process CPU less the loop's: the recording's writer thread, which encodes and writes; under the GIL its
   Python part is time the reader cannot run).
2. SQLite driver: stdlib ``sqlite3`` in a worker thread (``anyio.to_thread``, what the store uses) against
   ``aiosqlite`` (asyncio only; skipped when not installed), timed the same way: append 100 000 event
   rows in batches of 256, then 1 000 newest-50 thread-list queries.
3. A large store: ``--threads`` threads and ``--events`` events (one thread holds ``--big`` of them),
   bulk-inserted, then ``Store.threads(limit=50)`` p50/p95 over 200 calls and ``Store.history`` of the
   big thread (median of 3). SQLite always; PostgreSQL too when ``ANYAGENT_STORE_TEST_DSN`` is set.

Run: ``python benchmarks/bench_store.py [--n 20000] [--runs 5] [--threads 10000] [--events 1000000]
[--only overhead|drivers|large]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _flood import claude_producer

import anyagent_claude.plugin
from anyagent import AgentInstallation, Event, Runtime, SessionOptions, TextDelta, TurnEnded, TurnInfo
from anyagent.mock import Script, Step, completed, text
from anyagent_store import Store, Thread, ThreadStatus
from anyagent_store._codec import encode_batch


async def _read(runtime: Runtime, agent: AgentInstallation, store: Store | None) -> tuple[float, float, float, float]:
    """(events/s from open to the turn end read, the event loop thread's CPU µs an event up to it, the other
    threads' CPU µs an event up to the recording's block end: its writer, with the final write, and the worker
    threads; the fake claude process is not in it; the ms from the turn end to the block end: the final
    write the block's exit waits for, 0 bare). Both contenders stop the clock at the same point, when the
    reader has the ``TurnEnded``: what the app reads is what is timed."""
    start, cpu, process = time.perf_counter(), time.thread_time(), time.process_time()
    session, events = await runtime.open(agent, SessionOptions.in_dir(tempfile.gettempdir()))
    count = 0
    async with session:
        if store is None:
            await session.prompt("flood")
            async for event in events:
                count += 1
                if isinstance(event.kind, TurnEnded):
                    break
            ended, used = time.perf_counter(), time.thread_time() - cpu
            closed = ended
        else:
            async with store.record(session, events) as recording:
                await recording.prompt("flood")
                async for event in recording:
                    count += 1
                    if isinstance(event.kind, TurnEnded):
                        break
                ended, used = time.perf_counter(), time.thread_time() - cpu
            closed = time.perf_counter()
        others = time.process_time() - process - (time.thread_time() - cpu)
    rate = count / (ended - start)
    return rate, used / count * 1e6, max(0.0, others) / count * 1e6, (closed - ended) * 1e3


async def overhead(n: int, runs: int, workdir: Path) -> None:
    print(f"1. record overhead: {n} text deltas a turn, median of {runs} (events/s from open to turn end)")
    producer = claude_producer(workdir / "claude", n)
    claude = AgentInstallation.at("claude", producer)
    mock_script = Script(buffer=1024).turn([Step.repeat(n, Step.emit(text("m1", "w "))), Step.end(completed())])
    async with Store.sqlite(workdir / "overhead.db") as store:
        for label, make_runtime, agent_id in (
            ("claude wire", lambda: Runtime(plugins=[anyagent_claude.plugin]), "claude"),
            ("in-process mock", lambda: Runtime.with_mock(mock_script), "mock"),
        ):
            rates: dict[str, list[float]] = {"bare": [], "recorded": []}
            cpus: dict[str, list[float]] = {"bare": [], "recorded": []}
            others: dict[str, list[float]] = {"bare": [], "recorded": []}
            tails: list[float] = []
            async with make_runtime() as runtime:
                agent = claude if agent_id == "claude" else (await runtime.discover()).require("mock")
                await _read(runtime, agent, None)  # warm-up
                for round_ in range(runs):
                    order = ("bare", "recorded") if round_ % 2 == 0 else ("recorded", "bare")
                    for name in order:
                        rate, cpu, other, tail = await _read(runtime, agent, store if name == "recorded" else None)
                        rates[name].append(rate)
                        cpus[name].append(cpu)
                        others[name].append(other)
                        if name == "recorded":
                            tails.append(tail)
            bare, recorded = statistics.median(rates["bare"]), statistics.median(rates["recorded"])
            cpu_bare, cpu_recorded = statistics.median(cpus["bare"]), statistics.median(cpus["recorded"])
            ratios = sorted(r / b for b, r in zip(rates["bare"], rates["recorded"], strict=True))
            print(
                f"   {label:16} bare {bare:>10,.0f}/s   recorded {recorded:>10,.0f}/s"
                f"   recorded/bare {recorded / bare:.2f} (per round: {' '.join(f'{r:.2f}' for r in ratios)})"
            )
            print(
                f"   {'':16} loop-thread CPU an event: bare {cpu_bare:.2f} µs   recorded {cpu_recorded:.2f} µs"
                f"   bare/recorded {cpu_bare / cpu_recorded:.2f} (less load-dependent);"
                f" other threads {statistics.median(others['bare']):.2f} / {statistics.median(others['recorded']):.2f}"
                " µs (the recording's writer)"
            )
            print(
                f"   {'':16} after the turn end, the recording's block end waits {statistics.median(tails):.2f} ms"
                " for its final write (not in the rates: the app has read the turn)"
            )


def _event(position: int, when: datetime) -> Event:
    return Event(position, when, "s1", TextDelta(f"m{position // 50}", f"word {position} "), TurnInfo("t1"))


def _event_row(thread_id: str, position: int, when: datetime) -> tuple[str, int, str, str, str | None]:
    event = _event(position, when)
    lines, words = encode_batch([event])
    return (thread_id, position, type(event.kind).__name__, lines[0], words)


async def drivers(workdir: Path) -> None:
    print("2. SQLite driver, 100 000 event rows in batches of 256, then 1 000 newest-50 lists (asyncio)")
    now = datetime.now(timezone.utc)
    rows = [_event_row("thread-1", i, now) for i in range(1, 100_001)]
    threads = [(f"t{i:05d}", "claude", "idle", i, i) for i in range(2_000)]
    schema = (
        "CREATE TABLE threads (id TEXT PRIMARY KEY, agent_id TEXT, status TEXT, created_us BIGINT, updated_us BIGINT)",
        "CREATE INDEX by_activity ON threads (updated_us DESC, id DESC)",
        "CREATE TABLE events (thread_id TEXT, position INTEGER, kind TEXT, body TEXT, text TEXT,"
        " PRIMARY KEY (thread_id, position))",
    )
    insert = "INSERT INTO events VALUES (?, ?, ?, ?, ?)"
    newest = "SELECT * FROM threads ORDER BY updated_us DESC, id DESC LIMIT 50"

    async def stdlib() -> tuple[float, float]:
        import sqlite3

        path = workdir / "stdlib.db"
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        for statement in schema:
            conn.execute(statement)
        conn.executemany("INSERT INTO threads VALUES (?, ?, ?, ?, ?)", threads)
        limiter = anyio.CapacityLimiter(1)

        def append(batch: list[tuple[str, int, str, str, str | None]]) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(insert, batch)
            conn.execute("COMMIT")

        start = time.perf_counter()
        for i in range(0, len(rows), 256):
            await anyio.to_thread.run_sync(append, rows[i : i + 256], limiter=limiter)
        appended = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(1000):
            await anyio.to_thread.run_sync(lambda: conn.execute(newest).fetchall(), limiter=limiter)
        listed = time.perf_counter() - start
        conn.close()
        return appended, listed

    async def aiosqlite_run() -> tuple[float, float]:
        import aiosqlite

        async with aiosqlite.connect(workdir / "aiosqlite.db", isolation_level=None) as conn:
            await conn.execute("PRAGMA journal_mode = WAL")
            await conn.execute("PRAGMA synchronous = NORMAL")
            for statement in schema:
                await conn.execute(statement)
            await conn.executemany("INSERT INTO threads VALUES (?, ?, ?, ?, ?)", threads)
            start = time.perf_counter()
            for i in range(0, len(rows), 256):
                await conn.execute("BEGIN IMMEDIATE")
                await conn.executemany(insert, rows[i : i + 256])
                await conn.execute("COMMIT")
            appended = time.perf_counter() - start
            start = time.perf_counter()
            for _ in range(1000):
                async with conn.execute(newest) as cursor:
                    await cursor.fetchall()
            listed = time.perf_counter() - start
            return appended, listed

    contenders = [("sqlite3 + anyio.to_thread", stdlib)]
    try:
        import aiosqlite  # noqa: F401

        contenders.append(("aiosqlite", aiosqlite_run))
    except ImportError:
        print("   (aiosqlite not installed: pip install aiosqlite to compare)")
    for name, run in contenders:
        appended, listed = await run()
        print(f"   {name:26} append {100_000 / appended:>9,.0f} rows/s   list {listed / 1000 * 1e3:.3f} ms/query")
    print("   aiosqlite runs on asyncio only (trio has no asyncio loop), and the store supports both")


async def large(store: Store, label: str, n_threads: int, n_events: int, big: int) -> None:
    start = time.perf_counter()
    now = datetime.now(timezone.utc)
    rest = (n_events - big) // (n_threads - 1)
    threads: list[Thread] = []
    chunks: list[tuple[str, int, int, str, str | None]] = []
    for index in range(n_threads):
        count = big if index == 0 else rest
        updated = now - timedelta(seconds=n_threads - index)
        thread = Thread(
            id=uuid.uuid4().hex,
            agent_id=("claude", "codex", "opencode", "pi")[index % 4],
            status=ThreadStatus.IDLE,
            created_at=updated,
            updated_at=updated,
            cwd=f"/src/project-{index % 40}",
            title=f"thread number {index}",
            resume_token=f"tok-{index}",
            event_count=count,
        )
        threads.append(thread)
        for first in range(1, count + 1, 256):
            batch = [_event(position, updated) for position in range(first, min(count, first + 255) + 1)]
            lines, words = encode_batch(batch)
            chunks.append((thread.id, first, first + len(lines) - 1, "\n".join(lines), words))
        if len(chunks) >= 2_000:
            await store._call(store._backend.bulk_load, [_thread_row(t) for t in threads], chunks)
            threads, chunks = [], []
    await store._call(store._backend.bulk_load, [_thread_row(t) for t in threads], chunks)
    loaded = time.perf_counter() - start
    latencies = []
    for _ in range(200):
        begin = time.perf_counter()
        page = await store.threads(limit=50)
        latencies.append(time.perf_counter() - begin)
        assert len(page.threads) == 50
    latencies.sort()
    opens = []
    big_thread = (await store.threads(title="thread number 0", limit=1)).threads[0]
    cpu = []
    for _ in range(3):
        begin, begin_cpu = time.perf_counter(), time.process_time()
        history = await store.history(big_thread)
        opens.append(time.perf_counter() - begin)
        cpu.append(time.process_time() - begin_cpu)
        assert len(history) == big
    print(
        f"   {label:10} loaded {n_threads:,} threads / {n_events:,} events in {loaded:.1f} s;"
        f" newest-50 list p50 {latencies[100] * 1e3:.2f} ms, p95 {latencies[190] * 1e3:.2f} ms;"
        f" open a {big:,}-event history {statistics.median(opens):.2f} s wall, {statistics.median(cpu):.2f} s CPU"
        " (median of 3)"
    )


def _thread_row(thread: Thread) -> dict[str, object]:
    from anyagent_store._store import _row

    return _row(thread)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--only", choices=("overhead", "drivers", "large"), help="run one part")
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min)")
    workdir = Path(tempfile.mkdtemp(prefix="bench-store-"))
    try:
        if args.only in (None, "overhead"):
            await overhead(args.n, args.runs, workdir)
        if args.only in (None, "drivers"):
            await drivers(workdir)
        if args.only not in (None, "large"):
            return
        print(f"3. a large store: {args.threads:,} threads, {args.events:,} events")
        async with Store.sqlite(workdir / "large.db") as store:
            await large(store, "SQLite", args.threads, args.events, args.big)
        dsn = os.environ.get("ANYAGENT_STORE_TEST_DSN")
        if dsn:
            schema = f"bench_{uuid.uuid4().hex[:8]}"
            try:
                async with Store.postgres(dsn, schema=schema) as store:
                    await large(store, "PostgreSQL", args.threads, args.events, args.big)
            finally:
                import psycopg

                with psycopg.connect(dsn, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        else:
            print("   PostgreSQL: set ANYAGENT_STORE_TEST_DSN to include it")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    anyio.run(main)
