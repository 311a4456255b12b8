"""`anyagent serve` against the same work in-process (figures, not pass/fail), side by side in one run.

1. Events/s: an unpaced mock flood of ``--events`` text deltas, read to ``TurnEnded``
   (a) in-process from ``Events`` (the bare loop), (b) through ``anyagent serve --mock`` over stdio by
   a client that parses every line. Printed: both rates and their ratio (goal: stdio >= 40%), and
   CPU seconds per event (in-process: this process's; stdio: the serve process's, from /proc), which
   moves far less than the rates on a shared machine.
   The replay buffer is set above the flood so the unpaced mock never trips the lag close.
2. Open round trip: ``--opens`` sequential opens (then close) of the mock, in-process vs a command
   line written and its reply read over stdio; median milliseconds each (goal: stdio <= +5 ms).

Run: ``python benchmarks/bench_server.py [--events 100000] [--opens 50]``. Prints ``uptime`` first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from anyagent import Runtime, SessionOptions, TextDelta, TurnEnded
from anyagent.mock import Script, Step, completed, text


def _rs_script(events: int) -> dict[str, object]:
    delta = {"Emit": {"TextDelta": {"message_id": "m1", "text": "x"}}}
    return {
        "turns": [[{"Repeat": {"times": events, "steps": [delta]}}, {"End": {"Completed": {"source": "Protocol"}}}]]
        * 200
    }


def _cpu(pid: int | None = None) -> float:
    """CPU seconds (user + system) of this process, or of ``pid`` read from /proc (Linux)."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


CPU: dict[str, float] = {}


async def in_process_flood(events: int) -> float:
    script = Script()
    for _ in range(3):
        script = script.turn([Step.repeat(events, Step.emit(text("m1", "x"))), Step.end(completed())])
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, stream = await runtime.open(agent, SessionOptions.in_dir("."))
        await session.prompt("go")
        start = time.perf_counter()
        cpu = _cpu()
        n = 0
        async for event in stream:
            if isinstance(event.kind, TextDelta):
                n += 1
            elif isinstance(event.kind, TurnEnded):
                break
        elapsed = time.perf_counter() - start
        CPU["in-process"] = (_cpu() - cpu) / events
        await session.close()
    assert n == events, n
    return events / elapsed


class Serve:
    def __init__(self, script: Path, replay: int) -> None:
        argv = [sys.executable, "-c", "import sys; from anyagent.cli import main; sys.exit(main())"]
        argv += ["serve", "--mock", str(script), "--replay", str(replay)]
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.out = self.p.stdout
        assert self.out is not None
        self.reader = open(self.out.fileno(), "rb", closefd=False, buffering=1 << 20)  # noqa: SIM115
        self.next = 1
        assert b"hello" in self.reader.readline()

    def send(self, **command: object) -> int:
        command_id = self.next
        self.next += 1
        assert self.p.stdin is not None
        self.p.stdin.write(json.dumps({"id": command_id, **command}).encode() + b"\n")
        return command_id

    def reply(self, command_id: int) -> dict[str, object]:
        while True:
            line = json.loads(self.reader.readline())
            if line.get("id") == command_id:
                return line  # type: ignore[no-any-return]

    def close(self) -> None:
        assert self.p.stdin is not None
        self.p.stdin.close()
        self.p.wait(30)


def stdio_flood(script: Path, events: int) -> float:
    serve = Serve(script, replay=events * 2)
    try:
        session = serve.reply(serve.send(cmd="open", agent="mock", dir="."))["ok"]["id"]  # type: ignore[index]
        cpu = _cpu(serve.p.pid)
        serve.reply(serve.send(cmd="prompt", session=session, text="go"))
        start = time.perf_counter()
        n = 0
        while True:
            line = json.loads(serve.reader.readline())
            kind = line.get("event", {}).get("kind")
            if isinstance(kind, dict):
                if "TextDelta" in kind:
                    n += 1
                elif "TurnEnded" in kind:
                    break
        elapsed = time.perf_counter() - start
        CPU["serve"] = (_cpu(serve.p.pid) - cpu) / events
    finally:
        serve.close()
    assert n == events, n
    return events / elapsed


async def in_process_opens(opens: int) -> list[float]:
    async with Runtime.with_mock(Script()) as runtime:
        agent = (await runtime.discover()).require("mock")
        times = []
        for _ in range(opens):
            start = time.perf_counter()
            session, _ = await runtime.open(agent, SessionOptions.in_dir("."))
            times.append((time.perf_counter() - start) * 1000)
            await session.close()
    return times


def stdio_opens(script: Path, opens: int) -> list[float]:
    serve = Serve(script, replay=4096)
    times = []
    try:
        for _ in range(opens):
            start = time.perf_counter()
            session = serve.reply(serve.send(cmd="open", agent="mock", dir="."))["ok"]["id"]  # type: ignore[index]
            times.append((time.perf_counter() - start) * 1000)
            serve.reply(serve.send(cmd="close", session=session))
    finally:
        serve.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)  # 20 000 lasts ~0.1 s: noisy
    parser.add_argument("--opens", type=int, default=50)
    args = parser.parse_args()
    print("load:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "flood.json"
        script.write_text(json.dumps(_rs_script(args.events)))
        bare = anyio.run(in_process_flood, args.events)
        piped = stdio_flood(script, args.events)
        print(
            f"flood of {args.events} deltas: in-process {bare:,.0f} events/s, stdio {piped:,.0f} events/s"
            f" ({piped / bare:.0%} of in-process; goal >= 40%)"
        )
        if "serve" in CPU:
            print(
                f"CPU per event: in-process {CPU['in-process'] * 1e6:.1f} us, serve process"
                f" {CPU['serve'] * 1e6:.1f} us (in-process / serve = {CPU['in-process'] / CPU['serve']:.0%})"
            )
        local = statistics.median(anyio.run(in_process_opens, args.opens))
        remote = statistics.median(stdio_opens(script, args.opens))
        print(
            f"open round trip (median of {args.opens}): in-process {local:.2f} ms, stdio {remote:.2f} ms"
            f" (+{remote - local:.2f} ms; goal <= +5 ms)"
        )


if __name__ == "__main__":
    main()
