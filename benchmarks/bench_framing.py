"""Framing throughput: anyagent.wire.JsonLines against a bare ``readline()`` + ``json.loads`` loop.

A child process writes N JSON lines (shaped like stream-json frames) as fast as it can; each
reader parses every line. Timing starts at the first line a reader gets and stops at EOF, so the
child's start-up is not counted. Best of ``--runs``. Prints lines/s per reader and the ratio to the
bare loop (the target is ≥ 0.5). Readers:

* ``bare``: ``subprocess.Popen`` + ``stdout.readline()`` + ``json.loads`` (blocking, no event loop);
* ``receive_until``: anyio ``open_process`` + ``BufferedByteReceiveStream.receive_until`` + loads;
* ``JsonLines/<backend>``: ``spawn`` + ``JsonLines`` (the adapters' reader), on asyncio and trio;
* ``JsonLines+record/<backend>``: the same with a ``WireRecorder`` writing every frame to a file.

Run: ``.venv/bin/python benchmarks/bench_framing.py [--lines 200000] [--runs 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from anyagent.process import spawn
from anyagent.wire import BadLine, JsonLines, WireRecorder

CHILD = r"""
import json, sys
n = int(sys.argv[1])
kinds = [
    {"type": "stream_event", "event": {"type": "content_block_delta", "index": 0,
     "delta": {"type": "text_delta", "text": "some streamed words of an answer "}},
     "session_id": "e9cd6df6-fd93-4757-bc16-09d3c63415ed", "parent_tool_use_id": None},
    {"method": "item/agentMessage/delta", "params": {"threadId": "t-1", "turnId": "u-2",
     "itemId": "msg-3", "delta": "more text", "emittedAtMs": 1766000000000}},
    {"type": "assistant", "message": {"id": "msg_1", "role": "assistant", "content": [
     {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {"file_path": "/work/a.txt",
     "content": "ALPHA"}}], "usage": {"input_tokens": 3, "output_tokens": 120}}},
]
block = "".join(json.dumps(kinds[i % 3], separators=(",", ":")) + "\n" for i in range(1000)).encode()
out = sys.stdout.buffer
for _ in range(n // 1000):
    out.write(block)
out.flush()
"""


def _child(lines: int) -> list[str]:
    return [sys.executable, "-c", CHILD, str(lines)]


def bare(lines: int) -> tuple[float, int]:
    """Blocking readline + json.loads: the reference loop."""
    proc = subprocess.Popen(_child(lines), stdout=subprocess.PIPE)
    assert proc.stdout is not None
    count = 0
    line = proc.stdout.readline()
    start = time.perf_counter()
    while line:
        json.loads(line)
        count += 1
        line = proc.stdout.readline()
    elapsed = time.perf_counter() - start
    proc.wait()
    return elapsed, count


async def receive_until(lines: int) -> tuple[float, int]:
    """anyio's own delimiter framing, for comparison."""
    async with await anyio.open_process(_child(lines), stderr=None) as proc:
        assert proc.stdout is not None
        buffered = BufferedByteReceiveStream(proc.stdout)
        count = 0
        start = 0.0
        try:
            while True:
                line = await buffered.receive_until(b"\n", 16 * 1024 * 1024)
                if not count:
                    start = time.perf_counter()
                json.loads(line)
                count += 1
        except (anyio.IncompleteRead, anyio.EndOfStream):
            pass
        return time.perf_counter() - start, count


async def json_lines(lines: int, record: Path | None = None) -> tuple[float, int]:
    """The adapters' reader: spawn + JsonLines (+ a WireRecorder)."""
    recorder = WireRecorder.open(record) if record is not None else None
    proc = await spawn(_child(lines), cwd=os.getcwd(), recorder=recorder)
    try:
        reader = JsonLines(proc)
        count = 0
        start = 0.0
        async for frame in reader:
            if not count:
                start = time.perf_counter()
            assert not isinstance(frame, BadLine)
            count += 1
        elapsed = time.perf_counter() - start
    finally:
        await proc.aclose()
        if recorder is not None:
            assert recorder.failure is None, recorder.failure
            recorder.close()
    return elapsed, count


def best(runs: int, measure: Callable[[], tuple[float, int]], lines: int) -> float:
    """Best lines/s over ``runs``."""
    rates = []
    for _ in range(runs):
        elapsed, count = measure()
        assert count == lines, f"read {count} of {lines} lines"
        rates.append(count / elapsed)
    return max(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    n, runs = args.lines, args.runs
    results: dict[str, float] = {"bare": best(runs, lambda: bare(n), n)}
    results["receive_until/asyncio"] = best(runs, lambda: anyio.run(receive_until, n), n)
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ("asyncio", "trio"):

            def run(record: Path | None = None, backend: str = backend) -> Any:
                return anyio.run(json_lines, n, record, backend=backend)

            results[f"JsonLines/{backend}"] = best(runs, run, n)
            rec = Path(tmp, f"{backend}.jsonl")
            results[f"JsonLines+record/{backend}"] = best(runs, lambda rec=rec, run=run: run(rec), n)  # type: ignore[misc]
            rec.unlink(missing_ok=True)
    reference = results["bare"]
    print(f"framing {n} JSON lines from a child process (best of {runs}; Python {sys.version.split()[0]})")
    print(f"{'reader':<28}{'lines/s':>12}{'ratio':>8}")
    for name, rate in results.items():
        print(f"{name:<28}{rate:>12,.0f}{rate / reference:>8.2f}")


if __name__ == "__main__":
    main()
