"""Claude adapter throughput and open overhead, over a replayed stream (figures, not pass/fail).

A recording of 100k ``stream_event`` text deltas (built from the adapter's own recorded text turn)
is played by the testkit replayer as the agent process, and read three ways in the same run:

- anyagent: ``Runtime`` + the claude adapter + the engine, counting ``TextDelta`` events;
- bare: ``readline()`` + ``json.loads`` over the same child's stdout;
- claude-agent-sdk (if installed): its subprocess transport pointed at the same replaying child,
  counting its ``StreamEvent`` messages.

Targets: anyagent >= 50% of bare, >= 2x claude-agent-sdk. Also: the host-process overhead of
``Runtime.open`` beyond the agent's own startup and handshake (target <= 20 ms).

Run: ``python benchmarks/bench_claude.py [--n 100000]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from anyagent import AgentInstallation, Runtime, SessionOptions, TextDelta, TurnEnded
from anyagent_testkit.replay import replay_command, write_replayer_shim

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "packages/anyagent-claude/tests/recordings/text-turn.jsonl"


def build_recording(directory: Path, n: int) -> Path:
    """The recorded text turn with its deltas replaced by ``n`` synthetic ones."""
    lines = [json.loads(line) for line in SOURCE.read_text().splitlines()]
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
    path = directory / f"flood-{n}.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


def client_frames(recording: Path) -> list[dict[str, Any]]:
    return [json.loads(line)["_sent"] for line in recording.read_text().splitlines() if '"_sent"' in line]


def bare(recording: Path, n: int) -> tuple[float, float]:
    """Events/s of a readline+json.loads loop, and the seconds to spawn + finish the handshake."""
    sent = client_frames(recording)
    start = time.perf_counter()
    child = subprocess.Popen(replay_command(recording), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write((json.dumps(sent[0]) + "\n").encode())
    child.stdin.flush()
    while json.loads(child.stdout.readline()).get("type") != "control_response":
        pass
    handshake = time.perf_counter() - start
    child.stdin.write((json.dumps(sent[1]) + "\n").encode())
    child.stdin.flush()
    count = 0
    begin = time.perf_counter()
    for line in child.stdout:
        frame = json.loads(line)
        if frame.get("type") == "stream_event" and frame["event"].get("type") == "content_block_delta":
            count += 1
        elif frame.get("type") == "result":
            break
    elapsed = time.perf_counter() - begin
    child.stdin.close()
    child.wait()
    assert count == n, count
    return n / elapsed, handshake


async def anyagent_run(shim: Path, n: int) -> tuple[float, float]:
    """Events/s through the adapter and engine, and the seconds ``open`` took."""
    import anyagent_claude.plugin

    async with Runtime(plugins=[anyagent_claude.plugin]) as runtime:
        runtime.prewarm()  # what an app does at start-up: plugins load before the first open
        agent = AgentInstallation.at("claude", shim)
        start = time.perf_counter()
        session, events = await runtime.open(agent, SessionOptions.in_dir(tempfile.gettempdir()))
        opened = time.perf_counter() - start
        async with session:
            begin = time.perf_counter()
            await session.prompt("flood")
            count = 0
            async for event in events:
                if isinstance(event.kind, TextDelta):
                    count += 1
                elif isinstance(event.kind, TurnEnded):
                    break
            elapsed = time.perf_counter() - begin
    assert count == n, count
    return n / elapsed, opened


async def sdk_run(shim: Path, n: int) -> float | None:
    try:
        from claude_agent_sdk import ClaudeAgentOptions, query
        from claude_agent_sdk.types import StreamEvent
    except ImportError:
        return None
    options = ClaudeAgentOptions(cli_path=str(shim), include_partial_messages=True, cwd=tempfile.gettempdir())
    count = 0
    begin = time.perf_counter()
    async for message in query(prompt="flood", options=options):
        if isinstance(message, StreamEvent) and message.event.get("type") == "content_block_delta":
            count += 1
    elapsed = time.perf_counter() - begin
    assert count == n, count
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        recording = build_recording(directory, args.n)
        shim = write_replayer_shim(directory, recording)
        bare_rates, handshakes, ours, opens, sdk = [], [], [], [], []
        for _ in range(args.runs):
            rate, handshake = bare(recording, args.n)
            bare_rates.append(rate)
            handshakes.append(handshake)
            rate, opened = anyio.run(anyagent_run, shim, args.n)
            ours.append(rate)
            opens.append(opened)
            sdk_rate = anyio.run(sdk_run, shim, args.n)
            if sdk_rate is not None:
                sdk.append(sdk_rate)
        best_bare, best_ours = max(bare_rates), max(ours)
        print(f"claude wire, {args.n} stream_event text deltas (best of {args.runs})")
        print(f"  bare readline+json.loads  {best_bare:>10,.0f} ev/s")
        print(f"  anyagent (adapter+engine) {best_ours:>10,.0f} ev/s   {best_ours / best_bare:.0%} of bare")
        if sdk:
            print(f"  claude-agent-sdk          {max(sdk):>10,.0f} ev/s   anyagent is {best_ours / max(sdk):.1f}x")
        else:
            print("  claude-agent-sdk          not installed (pip install claude-agent-sdk)")
        # open overhead on a small recording, so the replayer's own start-up does not swamp it
        small = build_recording(directory, 10)
        (directory / "small").mkdir()
        small_shim = write_replayer_shim(directory / "small", small)
        for _ in range(7):
            handshakes.append(bare(small, 10)[1])
            opens.append(anyio.run(anyagent_run, small_shim, 10)[1])
        overhead = (statistics.median(opens[-7:]) - statistics.median(handshakes[-7:])) * 1000
        print(
            f"  open: {statistics.median(opens[-7:]) * 1000:.1f} ms vs bare spawn+initialize "
            f"{statistics.median(handshakes[-7:]) * 1000:.1f} ms -> host overhead {overhead:.1f} ms (median of 7)"
        )


if __name__ == "__main__":
    sys.exit(main())
