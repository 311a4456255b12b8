"""Python calls per text delta on every flood wire (load-independent; cProfile, asyncio or trio).

For each wire: one ``anyagent_turn`` (spawn → turn end, the bench's own consumer loop included)
under ``cProfile`` at ``--n`` deltas and at ``--n``/2; the difference over the difference in
deltas is the marginal cost of one delta (the open and the turn's fixed frames cancel out); the
total over ``--n`` is printed beside it (the figure earlier READMEs gave). The ten functions
called most per delta follow with ``--top``.

Run: ``python benchmarks/calls_per_delta.py [--n 20000] [--wires claude,acp,codex,pi,opencode]``.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _runner(wire: str, directory: Path, n: int) -> Callable[[], Awaitable[float]]:
    from _flood import acp_producer, anyagent_turn, claude_producer, codex_producer

    from anyagent import AgentInstallation

    if wire == "claude":
        import anyagent_claude.plugin

        producer = claude_producer(directory / f"claude-{n}", n)
        return lambda: anyagent_turn(anyagent_claude.plugin, AgentInstallation.at("claude", producer), n)
    if wire == "acp":
        import anyagent_acp.plugin

        producer = acp_producer(directory / f"acp-{n}", n)
        return lambda: anyagent_turn(anyagent_acp.plugin, AgentInstallation.acp("flood", str(producer), []), n)
    if wire == "codex":
        import anyagent_codex.plugin

        producer = codex_producer(directory / f"codex-{n}", n)
        return lambda: anyagent_turn(anyagent_codex.plugin, AgentInstallation.at("codex", producer), n)
    if wire == "pi":
        import bench_pi

        blob = directory / f"pi-{n}.jsonl"
        blob.write_bytes(bench_pi.render(n))
        script = directory / "fake_pi.py"
        script.write_text(bench_pi.FAKE_PI)
        argv = [sys.executable, str(script), str(blob)]
        return lambda: bench_pi.anyagent_run(argv, n)
    if wire == "opencode":
        import bench_opencode

        workdir = directory / f"opencode-{n}"
        workdir.mkdir()
        exe = bench_opencode.write_flood_opencode(workdir, n)
        return lambda: bench_opencode.anyagent_flood(exe, workdir, n)
    raise SystemExit(f"unknown wire {wire}")


def _profile(run: Callable[[], Awaitable[float]], backend: str) -> pstats.Stats:
    profile = cProfile.Profile()

    async def main() -> None:
        profile.enable()
        try:
            await run()
        finally:
            profile.disable()

    anyio.run(main, backend=backend)
    return pstats.Stats(profile)


def _calls(stats: pstats.Stats) -> dict[tuple[str, int, str], int]:
    raw: dict[tuple[str, int, str], Any] = stats.stats  # type: ignore[attr-defined]
    return {func: value[1] for func, value in raw.items()}  # primitive + recursive calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--wires", default="claude,acp,codex,pi,opencode")
    parser.add_argument("--backend", default="asyncio")
    parser.add_argument("--top", type=int, default=0)
    args = parser.parse_args()
    n, half = args.n, args.n // 2
    from _flood import expected_chars

    expected_chars(n), expected_chars(half)  # the bench's own check, outside the count (as ``alternate`` does)
    with tempfile.TemporaryDirectory() as tmp:
        print(f"Python calls per delta ({args.backend}, cProfile; marginal = (calls@{n} - calls@{half}) / {n - half})")
        for wire in args.wires.split(","):
            directory = Path(tmp) / wire
            directory.mkdir()
            small = _calls(_profile(_runner(wire, directory, half), args.backend))
            large = _calls(_profile(_runner(wire, directory, n), args.backend))
            total = sum(large.values())
            marginal = (total - sum(small.values())) / (n - half)
            print(f"  {wire:<9} marginal {marginal:6.1f}   total/n {total / n:6.1f}")
            if args.top:
                per = {f: (c - small.get(f, 0)) / (n - half) for f, c in large.items()}
                for func, value in sorted(per.items(), key=lambda item: -item[1])[: args.top]:
                    name = f"{os.path.basename(func[0])}:{func[1]}({func[2]})"
                    print(f"      {value:5.2f}  {name}")


if __name__ == "__main__":
    main()
