"""Claude wire throughput, honestly measured (figures, not pass/fail).

The producer is a fake ``claude`` (``_flood.claude_producer``) that answers the handshake from
the recorded ``initialize`` and writes a whole pre-rendered turn of ``n`` ``stream_event`` text
deltas in one write, so it is never the bottleneck. Every contender spawns it and is timed the
same way, spawn → turn end, in the same run, in an order that rotates each round:

- bare: ``subprocess.Popen`` + ``readline()`` + ``json.loads`` (the ceiling);
- anyagent/asyncio and anyagent/trio: ``Runtime.open`` + the claude adapter + the engine,
  counting ``TextDelta`` events until ``TurnEnded``;
- claude-agent-sdk (if installed): ``query(..., include_partial_messages=True)`` with
  ``cli_path`` the same producer, counting its ``StreamEvent`` deltas until the ``ResultMessage``.

Rates are deltas/s over spawn → turn end; medians of ``--runs`` with (min–max); ratios last.
A separate "realistic recording" line plays the recorded turn through the testkit replayer (the
replayer, not the consumer, sets that pace: its bare rate is printed beside it).

Run: ``python benchmarks/bench_claude.py [--n 100000] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _flood import alternate, anyagent_turn, claude_producer, installed, report

import anyagent_claude.plugin
from anyagent import AgentInstallation


def bare(producer: Path, n: int) -> float:
    """A blocking ``readline()+json.loads`` loop: the rate no consumer in Python beats by much."""
    start = time.perf_counter()
    child = subprocess.Popen([str(producer)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    init = {"type": "control_request", "request_id": "b1", "request": {"subtype": "initialize", "hooks": {}}}
    child.stdin.write((json.dumps(init) + "\n").encode())
    child.stdin.flush()
    while json.loads(child.stdout.readline()).get("type") != "control_response":
        pass
    user = {"type": "user", "message": {"role": "user", "content": "flood"}, "parent_tool_use_id": None}
    child.stdin.write((json.dumps(user) + "\n").encode())
    child.stdin.flush()
    count = 0
    for line in child.stdout:
        frame = json.loads(line)
        if frame.get("type") == "stream_event" and frame["event"].get("type") == "content_block_delta":
            count += 1
        elif frame.get("type") == "result":
            break
    elapsed = time.perf_counter() - start
    child.stdin.close()
    child.wait()
    assert count == n, count
    return n / elapsed


async def anyagent_run(producer: Path, n: int) -> float:
    """Spawn → ``TurnEnded`` through ``Runtime`` + the adapter + the engine."""
    return await anyagent_turn(anyagent_claude.plugin, AgentInstallation.at("claude", producer), n)


async def sdk_run(producer: Path, n: int) -> float:
    from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
    from claude_agent_sdk.types import StreamEvent

    options = ClaudeAgentOptions(cli_path=str(producer), include_partial_messages=True, cwd=tempfile.gettempdir())
    count = 0
    start = time.perf_counter()
    elapsed = 0.0
    async for message in query(prompt="flood", options=options):
        if isinstance(message, StreamEvent) and message.event.get("type") == "content_block_delta":
            count += 1
        elif isinstance(message, ResultMessage):
            elapsed = time.perf_counter() - start
    assert count == n, count
    return n / elapsed


def sdk_available() -> bool:
    return installed("claude_agent_sdk")


def realistic(directory: Path, n: int) -> tuple[float, float]:
    """The recorded turn with ``n`` deltas played by the testkit replayer: (bare, anyagent) rates."""
    from anyagent_testkit.replay import replay_command, write_replayer_shim

    source = Path(__file__).resolve().parents[1] / "packages/anyagent-claude/tests/recordings/text-turn.jsonl"
    lines = [json.loads(line) for line in source.read_text().splitlines()]
    deltas = [
        i
        for i, f in enumerate(lines)
        if f.get("type") == "stream_event" and f["event"].get("type") == "content_block_delta"
    ]
    template = lines[deltas[0]]
    out: list[str] = []
    for index, frame in enumerate(lines):
        if index == deltas[0]:
            for k in range(n):
                event = {**template["event"], "delta": {"type": "text_delta", "text": f"w{k} "}}
                out.append(json.dumps({**template, "event": event, "uuid": f"u{k}"}))
        elif index in deltas or "_note" in frame:
            continue
        else:
            out.append(json.dumps(frame))
    recording = directory / f"replay-{n}.jsonl"
    recording.write_text("\n".join(out) + "\n")
    sent = [json.loads(line)["_sent"] for line in out if '"_sent"' in line]
    start = time.perf_counter()
    child = subprocess.Popen(replay_command(recording), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    for frame in sent[:2]:
        child.stdin.write((json.dumps(frame) + "\n").encode())
        child.stdin.flush()
    for line in child.stdout:
        if json.loads(line).get("type") == "result":
            break
    bare_rate = n / (time.perf_counter() - start)
    child.stdin.close()
    child.wait()
    (directory / "replay").mkdir(exist_ok=True)
    shim = write_replayer_shim(directory / "replay", recording)
    ours = anyio.run(anyagent_run, shim, n)
    return bare_rate, ours


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--replay-n", type=int, default=10_000)
    args = parser.parse_args()
    n = args.n
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        producer = claude_producer(directory / "flood", n)
        contenders: dict[str, Callable[[], float]] = {
            "bare readline+json.loads": lambda: bare(producer, n),
            "anyagent asyncio": lambda: anyio.run(anyagent_run, producer, n),
            "anyagent trio": lambda: anyio.run(anyagent_run, producer, n, backend="trio"),
        }
        if sdk_available():
            contenders["claude-agent-sdk (partial)"] = lambda: anyio.run(sdk_run, producer, n)
        installed("trio")  # the trio contender's first run does not pay for importing it
        rates, cpu_rates = alternate(contenders, args.runs, n)
        print(f"claude wire: {n:,} stream_event text deltas, spawn → turn end, median (min–max) of {args.runs}")
        report(rates, cpu_rates, "deltas", "claude-agent-sdk (partial)")
        if args.replay_n:
            replay_bare, replay_ours = realistic(directory, args.replay_n)
            print(
                f"  realistic recording (testkit replayer, {args.replay_n:,} deltas; the replayer sets the pace): "
                f"replayer read bare {replay_bare:,.0f}/s, anyagent {replay_ours:,.0f}/s"
            )


if __name__ == "__main__":
    sys.exit(main())
