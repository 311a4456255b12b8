"""Opening an agent: spawn → first byte of a trivial agent, and how long spawning blocks the loop.

The agent is a ``dash`` script that writes one byte and then reads stdin to EOF (``cat``), so its
own start-up is a few milliseconds and the figure is the launcher's. Contenders, each timed the
same way (the clock starts just before the launch call and stops when the first byte of stdout
arrives; the agent is then closed and reaped outside the timing):

* ``plain``: ``anyio.open_process`` (no new session, no guard; the floor);
* ``core@REF``: ``anyagent.process.spawn`` from git ``REF`` (default ``main``: the code before this
  change, exported with ``git archive`` into a temporary directory);
* ``core``: ``anyagent.process.spawn`` from this tree.

Each contender runs in its own fresh interpreter (two versions of ``anyagent`` cannot share one),
``--spawns`` sequential opens per round after two warm-ups, the order of the contenders rotating
each round. A heartbeat task ticks every millisecond meanwhile; the longest gap between two ticks
during an open minus the tick is how long that open blocked the event loop. A second figure
opens ``--burst`` agents at once and times until every one has sent its first byte.

Printed per contender: median spawn → first byte with (min–max) and p90, the median and max loop
block, the burst's wall time; ratios to ``plain`` last.

Run: ``python benchmarks/bench_spawn.py [--rounds 5] [--spawns 20] [--burst 20] [--before main]
[--backend asyncio]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE_SRC = ROOT / "packages/anyagent-core/src"

AGENT = "#!/bin/sh\nprintf x\nexec cat >/dev/null\n"

CHILD = textwrap.dedent(
    r"""
    import json, os, sys, time
    import anyio

    kind, agent, spawns, burst = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if kind != "plain":
        from anyagent.process import spawn

    async def open_one():
        if kind == "plain":
            proc = await anyio.open_process([agent])
            return proc, proc.stdout
        proc = await spawn([agent], cwd=".")
        return proc, proc.stdout

    async def close(proc):
        if kind == "plain":
            await proc.stdin.aclose()
            await proc.wait()
            await proc.aclose()
        else:
            await proc.aclose()

    async def timed(gaps):
        mark = len(gaps)
        start = time.perf_counter()
        proc, out = await open_one()
        await out.receive(1)
        took = time.perf_counter() - start
        return proc, took, max(gaps[mark:], default=0.0)

    async def main():
        gaps = []
        ticking = True

        async def heartbeat():
            last = time.perf_counter()
            while ticking:
                await anyio.sleep(0.001)
                now = time.perf_counter()
                gaps.append(max(0.0, now - last - 0.001))
                last = now

        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat)
            results = []
            for index in range(spawns + 2):
                gaps.append(0.0)
                proc, took, block = await timed(gaps)
                gaps.append(0.0)
                await anyio.sleep(0.003)  # let the heartbeat record the gap that ended the open
                block = max(block, max(gaps[-3:]))
                await close(proc)
                if index >= 2:
                    results.append((took, block))
            start = time.perf_counter()
            procs = []

            async def one():
                proc, out = await open_one()
                procs.append(proc)
                await out.receive(1)

            async with anyio.create_task_group() as burst_group:
                for _ in range(burst):
                    burst_group.start_soon(one)
            burst_took = time.perf_counter() - start
            for proc in procs:
                await close(proc)
            ticking = False
        print(json.dumps({"spawns": results, "burst": burst_took}))

    anyio.run(main, backend=os.environ.get("BENCH_BACKEND", "asyncio"))
    """
)


def export_core(ref: str, into: Path) -> Path | None:
    """``packages/anyagent-core/src`` of git ``ref``, unpacked under ``into`` (None: no such ref)."""
    archive = into / "core.tar"
    with archive.open("wb") as out:
        done = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "packages/anyagent-core/src"], stdout=out)
    if done.returncode != 0:
        print(f"bench_spawn: no git ref {ref!r} here; the 'before' contender is skipped")
        return None
    with tarfile.open(archive) as tar:
        if sys.version_info >= (3, 12):
            tar.extractall(into, filter="data")
        else:
            tar.extractall(into)
    return into / "packages/anyagent-core/src"


def run_child(kind: str, src: Path | None, agent: Path, spawns: int, burst: int, backend: str) -> dict[str, object]:
    env = dict(os.environ, BENCH_BACKEND=backend)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), *filter(None, [os.environ.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(agent), str(spawns), str(burst)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(f"{kind}: the bench child failed:\n{done.stderr}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spawns", type=int, default=20)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--before", default="main", help="git ref of the 'before' core (empty: skip)")
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    args = parser.parse_args()
    if shutil.which("sh") is None:
        print("bench_spawn: no /bin/sh here (POSIX only); skipped")
        return
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp, "agent.sh")
        agent.write_text(AGENT)
        agent.chmod(0o755)
        contenders: list[tuple[str, Path | None]] = [("plain", None)]
        before = export_core(args.before, Path(tmp)) if args.before else None
        if before is not None:
            contenders.append((f"core@{args.before}", before))
        contenders.append(("core", CORE_SRC))
        firsts: dict[str, list[float]] = {name: [] for name, _ in contenders}
        blocks: dict[str, list[float]] = {name: [] for name, _ in contenders}
        bursts: dict[str, list[float]] = {name: [] for name, _ in contenders}
        for round_ in range(args.rounds):
            shift = round_ % len(contenders)
            for name, src in contenders[shift:] + contenders[:shift]:
                kind = "plain" if name == "plain" else "core"
                result = run_child(kind, src, agent, args.spawns, args.burst, args.backend)
                spawns = result["spawns"]
                assert isinstance(spawns, list)
                firsts[name] += [took for took, _ in spawns]
                blocks[name] += [block for _, block in spawns]
                burst = result["burst"]
                assert isinstance(burst, float)
                bursts[name].append(burst)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"bench_spawn ({args.backend}, {args.rounds} rounds x {args.spawns} opens, burst {args.burst},"
        f" load average {load:.1f}): ms, median (min–max) p90"
    )
    print(f"{'contender':<14} {'spawn → first byte':>28} {'loop blocked':>22} {'burst of ' + str(args.burst):>22}")
    for name, _ in contenders:
        first, block, burst = sorted(firsts[name]), sorted(blocks[name]), sorted(bursts[name])
        p90 = first[int(len(first) * 0.9)]
        print(
            f"{name:<14} {ms(statistics.median(first)):>8} ({ms(first[0])}–{ms(first[-1])}) p90 {ms(p90):<6}"
            f" {'median ' + ms(statistics.median(block)) + ' max ' + ms(block[-1]):>22}"
            f" {ms(statistics.median(burst)) + ' (' + ms(burst[0]) + '–' + ms(burst[-1]) + ')':>22}"
        )
    plain = statistics.median(firsts["plain"])
    for name, _ in contenders[1:]:
        median = statistics.median(firsts[name])
        print(f"{name}: {(median - plain) * 1000:+.1f} ms over plain per open (median), {median / plain:.1f}×")


if __name__ == "__main__":
    main()
