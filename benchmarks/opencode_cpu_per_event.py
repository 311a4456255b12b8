"""CPU time of this process per opencode flood event, bare httpx-sse loop vs anyagent (asyncio,
trio): each contender runs spawn → turn end at 1 and at ``--n`` events (``--rounds`` rounds,
in turn); the medians give the fixed cost (open, close) and the marginal cost of one event,
which, unlike wall time, hardly moves with the machine's load (the server is another process).

Run: ``python benchmarks/opencode_cpu_per_event.py [--n 100000] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_opencode
from _flood import expected_chars, installed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    installed("trio")
    contenders = {
        "bare httpx-sse loop": (bench_opencode.bare_flood, "asyncio"),
        "anyagent asyncio": (bench_opencode.anyagent_flood, "asyncio"),
        "anyagent trio": (bench_opencode.anyagent_flood, "trio"),
    }
    cpu: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        exes = {}
        for n in (1, args.n):
            directory = Path(tmp) / str(n)
            directory.mkdir()
            exes[n] = bench_opencode.write_flood_opencode(directory, n)
            expected_chars(n)  # computed before timing, as the flood bench does
        for _ in range(args.rounds):
            for n in (1, args.n):
                for name, (run, backend) in contenders.items():
                    start = time.process_time()
                    anyio.run(run, exes[n], exes[n].parent, n, backend=backend)
                    cpu.setdefault((name, n), []).append(time.process_time() - start)
    print(f"CPU of this process, medians of {args.rounds}: fixed (1 event) and per event (1 → {args.n:,})")
    bare = None
    for name in contenders:
        fixed, whole = statistics.median(cpu[(name, 1)]), statistics.median(cpu[(name, args.n)])
        per = (whole - fixed) / (args.n - 1) * 1e6
        bare = bare or whole
        print(
            f"  {name:<22} fixed {fixed * 1000:6.1f} ms  per event {per:5.2f} µs  total {whole * 1000:5.0f} ms"
            f"  ({bare / whole:4.0%} of bare)"
        )


if __name__ == "__main__":
    main()
