"""Many sessions per host (figures, not pass/fail).

1. ``--sessions 50,200,500,1000`` concurrent Claude sessions in one host process, each against
   its own fake ``claude`` (a ``dash`` script: answers ``initialize`` and writes a pre-rendered
   turn of ``--deltas`` text deltas with ``cat``), all opened at once, each prompted once and
   read to ``TurnEnded``, then closed. One fresh interpreter per row. Printed: completed
   sessions, lost deltas (characters expected minus received, must be 0), wall time, deltas/s,
   peak RSS per session, peak threads and fds, and RSS/threads/fds after every session closed
   against the baseline taken before the first open (after the plugins loaded).
2. A burst (``--burst 500``): that many opens at once, no pacing on the bench's side, each fake
   ``claude`` burning ~30 ms of CPU before it answers ``initialize`` (a ``dash`` busy loop), once with
   the runtime's default ``launch_limit`` (paced) and once with a limit so large nothing is paced
   (as before ``launch_limit``); opened, ``HandshakeTimeout`` failures and wall time side by side.
3. Idle cost: ``--idle`` sessions opened and left idle; the host's context switches (all its
   threads, ``/proc/self/task/*/status``) per second over ``--idle-seconds``.

Run: ``python benchmarks/bench_sessions.py [--sessions 50,200,500,1000] [--deltas 1000]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _flood import claude_init_body, claude_turn_bytes, rss_kb

from anyagent import AgentInstallation, Runtime, SessionOptions, TextDelta, TurnEnded

OPENS_IN_FLIGHT = 32
"""Opens at a time: every session is live before any streams, but 1000 agents are not all
started in the same instant (each start-up costs the machine ~20 ms of CPU)."""

BURN = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done\n"
"""~30 ms of CPU on this machine before the fake agent reads anything (a Node CLI takes 0.3-0.5 s)."""

DASH_PRODUCER = r"""#!/bin/dash
IFS= read -r init < "$2"
while IFS= read -r line; do
  case "$line" in
    *'"type":"control_request"'*)
      id=${line#*\"request_id\":\"}; id=${id%%\"*}
      case "$line" in
        *'"subtype":"initialize"'*)
          printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":%s}}\n' \
            "$id" "$init";;
        *)
          printf '{"type":"control_response","response":{"subtype":"error","request_id":"%s","error":"no"}}\n' \
            "$id";;
      esac;;
    *'"type":"user"'*) cat "$1";;
  esac
done
"""


def producer(directory: Path, deltas: int, burn: bool = False) -> Path:
    turn = directory / "turn.jsonl"
    turn.write_bytes(claude_turn_bytes(deltas))
    init = directory / "init.json"
    init.write_text(json.dumps(claude_init_body(), separators=(",", ":")) + "\n")
    script = directory / "claude"
    body = DASH_PRODUCER.replace('"$1"', f'"{turn}"').replace('"$2"', f'"{init}"')
    if burn:
        body = body.replace("#!/bin/dash\n", "#!/bin/dash\n" + BURN, 1)
    script.write_text(body)
    script.chmod(0o755)
    return script


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def switches() -> int:
    total = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


async def one_row(
    count: int, deltas: int, backend_note: str, burst: bool = False, launch_limit: int | None = None
) -> dict[str, Any]:
    import anyagent_claude.plugin

    expected = sum(len(f"w{k} ") for k in range(deltas))
    with tempfile.TemporaryDirectory() as tmp:
        script = producer(Path(tmp), deltas, burn=burst)
        async with Runtime(plugins=[anyagent_claude.plugin], launch_limit=launch_limit) as runtime:
            runtime.prewarm()
            agent = AgentInstallation.at("claude", script)
            options = SessionOptions.in_dir(tmp)
            gc.collect()
            base = {"rss": rss_kb(), "threads": threads(), "fds": fds()}
            peak = dict(base)
            received = [0] * count
            opened = [False] * count
            completed = 0
            failures: list[str] = []
            all_open = anyio.Event()
            open_count = 0
            limiter = anyio.CapacityLimiter(count if burst else OPENS_IN_FLIGHT)
            open_times: list[float] = []
            usage = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)

            async def run(index: int) -> None:
                nonlocal completed, open_count
                try:
                    try:
                        asked = time.perf_counter()
                        async with limiter:
                            session, events = await runtime.open(agent, options)
                        open_times.append(time.perf_counter() - asked)
                        opened[index] = True
                    finally:
                        open_count += 1
                        if open_count == count:
                            all_open.set()
                    async with session:
                        await all_open.wait()  # every session is live before any streams
                        marks["stream"] = marks.get("stream") or time.perf_counter()
                        await session.prompt("flood")
                        async for event in events:
                            if isinstance(event.kind, TextDelta):
                                received[index] += len(event.kind.text)
                            elif isinstance(event.kind, TurnEnded):
                                break
                        marks["streamed"] = time.perf_counter()
                    completed += 1
                except Exception as exc:  # counted, not raised: the table shows it
                    failures.append(f"{type(exc).__name__}: {exc}")

            async def sample(done: anyio.Event) -> None:
                while not done.is_set():
                    peak["rss"] = max(peak["rss"], rss_kb())
                    peak["threads"] = max(peak["threads"], threads())
                    peak["fds"] = max(peak["fds"], fds())
                    with anyio.move_on_after(0.05):
                        await done.wait()

            marks: dict[str, float] = {}
            start = time.perf_counter()
            done = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(sample, done)
                async with anyio.create_task_group() as sessions:
                    for index in range(count):
                        sessions.start_soon(run, index)
                wall = time.perf_counter() - start
                done.set()
            stream_wall = marks.get("streamed", start) - marks.get("stream", start)
            gc.collect()
            await anyio.sleep(0.5)  # let the reactor reap the last agents
            gc.collect()
            after = {"rss": rss_kb(), "threads": threads(), "fds": fds()}
            spent = [
                (end.ru_utime - begin.ru_utime) + (end.ru_stime - begin.ru_stime)
                for begin, end in zip(
                    usage,
                    (resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)),
                    strict=True,
                )
            ]
    open_times.sort()
    return {
        "sessions": count,
        "backend": backend_note,
        "opened": sum(opened),
        "completed": completed,
        "lost": sum(expected - got for got, ok in zip(received, opened, strict=True) if ok),
        "wall": wall,
        "stream_wall": stream_wall,
        "events_per_s": completed * deltas / stream_wall if stream_wall > 0 else 0.0,
        "rss_per_session_kb": (peak["rss"] - base["rss"]) / count,
        "base": base,
        "peak": peak,
        "after": after,
        "failures": failures[:3],
        "timeouts": sum("HandshakeTimeout" in f for f in failures),
        "launch_limit": runtime.launch_limit,
        "open_s": [open_times[int(q * (len(open_times) - 1))] for q in (0.0, 0.5, 0.95, 1.0)] if open_times else [],
        "children_cpu_ms_per_launch": spent[0] * 1000 / count,
        "host_cpu_s": spent[1],
        "contain": os.environ.get("ANYAGENT_CONTAIN", "1") != "0",
    }


async def idle(count: int, seconds: float) -> dict[str, Any]:
    import anyagent_claude.plugin

    with tempfile.TemporaryDirectory() as tmp:
        script = producer(Path(tmp), 10)
        async with Runtime(plugins=[anyagent_claude.plugin]) as runtime:
            runtime.prewarm()
            agent = AgentInstallation.at("claude", script)
            options = SessionOptions.in_dir(tmp)
            opened = []
            for _ in range(count):
                opened.append(await runtime.open(agent, options))
            await anyio.sleep(1.0)  # let start-up settle
            before, t0 = switches(), time.perf_counter()
            await anyio.sleep(seconds)
            rate = (switches() - before) / (time.perf_counter() - t0)
            live_threads = threads()
            for session, _events in opened:
                await session.close()
    return {"sessions": count, "switches_per_s": rate, "threads": live_threads}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", default="50,200,500,1000")
    parser.add_argument("--deltas", type=int, default=1000)
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--burst", type=int, default=500)
    parser.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--one-burst", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--launch-limit", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--one-idle", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if shutil.which("dash") is None:
        print("many sessions per host: skipped (the fake agents are dash scripts; dash is not installed)")
        return
    if args.one:
        row = anyio.run(one_row, args.one, args.deltas, args.backend, backend=args.backend)
        print(json.dumps(row))
        return
    if args.one_burst:
        limit = args.launch_limit or None
        row = anyio.run(one_row, args.one_burst, args.deltas, args.backend, True, limit, backend=args.backend)
        print(json.dumps(row))
        return
    if args.one_idle:
        print(json.dumps(anyio.run(idle, args.one_idle, args.idle_seconds, backend=args.backend)))
        return

    def child(*extra: str, contain: bool = True) -> dict[str, Any]:
        command = [sys.executable, __file__, "--deltas", str(args.deltas), "--backend", args.backend, *extra]
        env = {**os.environ, "ANYAGENT_CONTAIN": "1" if contain else "0"}
        out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result

    print(
        f"many sessions per host ({args.backend}): each session streams {args.deltas} deltas; one interpreter per row"
    )
    header = (
        f"  {'sessions':>8} {'open':>5} {'done':>5} {'lost':>4} {'wall s':>7} {'stream s':>8} {'deltas/s':>9} "
        f"{'RSS/sess':>9} {'threads':>11} {'fds':>13} {'RSS base→after close':>22}"
    )
    print(header)
    for count in [int(part) for part in args.sessions.split(",") if part]:
        row = child("--one", str(count))
        base, peak, after = row["base"], row["peak"], row["after"]
        grew = (after["rss"] - base["rss"]) / base["rss"]
        print(
            f"  {count:>8} {row['opened']:>5} {row['completed']:>5} {row['lost']:>4} {row['wall']:>7.2f} "
            f"{row['stream_wall']:>8.2f} {row['events_per_s']:>9,.0f} "
            f"{row['rss_per_session_kb']:>7.0f}KB "
            f"{base['threads']:>3}/{peak['threads']:>3}/{after['threads']:>3} "
            f"{base['fds']:>4}/{peak['fds']:>4}/{after['fds']:>4} "
            f"{base['rss'] / 1024:>7.1f}→{after['rss'] / 1024:.1f} MB ({grew:+.0%})"
        )
        for failure in row["failures"]:
            print(f"           failure: {failure}")
    print(
        f"  (wall: first open → last close, {OPENS_IN_FLIGHT} opens in flight; stream: first prompt → last"
        " TurnEnded with every session live; deltas/s over the stream; threads and fds: before open / peak /"
        " after close)"
    )
    if args.burst:
        print(f"  burst: {args.burst} opens at once, each fake claude burning ~30 ms of CPU before its handshake")
        rows = (
            ("paced, reaper", 0, True),
            ("paced, ANYAGENT_CONTAIN=0", 0, False),
            ("unpaced (limit 100000), reaper", 100000, True),
        )
        for label, limit, contain in rows:
            row = child("--one-burst", str(args.burst), "--launch-limit", str(limit), contain=contain)
            base, after = row["base"], row["after"]
            times = "/".join(f"{t:.1f}" for t in row["open_s"])
            print(
                f"    {label:<31} limit {row['launch_limit']:>6}: opened {row['opened']:>4}/{args.burst}, "
                f"{row['timeouts']:>4} HandshakeTimeout, done {row['completed']:>4}, lost {row['lost']}, "
                f"wall {row['wall']:6.1f} s, open min/p50/p95/max {times} s, "
                f"agent+reaper CPU {row['children_cpu_ms_per_launch']:.1f} ms/launch, host CPU "
                f"{row['host_cpu_s']:.1f} s, RSS {base['rss'] / 1024:.0f}→{row['peak']['rss'] / 1024:.0f}→"
                f"{after['rss'] / 1024:.0f} MB (base→peak→after close)"
            )
    if args.idle:
        result = child("--one-idle", str(args.idle), "--idle-seconds", str(args.idle_seconds))
        print(
            f"  idle: {result['sessions']} open idle sessions: {result['switches_per_s']:.1f} context switches/s "
            f"(all host threads), {result['threads']} threads"
        )


if __name__ == "__main__":
    sys.exit(main())
