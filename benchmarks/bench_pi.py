"""pi adapter throughput: a flood of ``message_update`` text deltas, spawn → turn end (figures).

A fake ``pi --mode rpc`` (a small Python program, standalone: no Node, no recording) answers the
adapter's handshake commands and, on ``prompt``, writes a pre-rendered blob — ``agent_start``,
``n`` ``message_update`` text-delta frames shaped like pi 0.73.1's (each carries its ``partial``
and ``message`` snapshots, ~0.9 KB a line), ``message_end``, ``agent_end`` — in one write, so the
producer is never the bottleneck. The contenders, side by side in one run in an order that rotates
each round, each timed from spawn to the turn's end:

- bare: ``subprocess`` + ``readline()`` + ``json.loads`` of every line until ``agent_end``;
- anyagent asyncio and anyagent trio: ``Runtime.open`` + ``prompt`` + the events until
  ``TurnEnded`` (``_flood.anyagent_turn``: every character of the flood must arrive).

Wall rates and rates per CPU-second, medians (min–max), ratios last (``_flood.report``).
Target: anyagent >= 50% of bare. Run: ``python benchmarks/bench_pi.py [--n 20000] [--runs 3]``.
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

from _flood import alternate, anyagent_turn, installed, report

import anyagent_pi.plugin
from anyagent import AgentInstallation

FAKE_PI = r"""
import json, sys
blob = open(sys.argv[1], "rb").read()
out = sys.stdout.buffer
model = {"id": "fake-1", "name": "Fake", "api": "anthropic-messages", "provider": "fake", "reasoning": False,
         "input": ["text"], "contextWindow": 128000, "maxTokens": 16384}
data = {
    "get_state": {"model": model, "thinkingLevel": "off", "isStreaming": False, "sessionFile": "/tmp/bench.jsonl",
                  "sessionId": "bench", "messageCount": 0},
    "get_available_models": {"models": [model]},
    "get_commands": {"commands": []},
}
for line in sys.stdin.buffer:
    command = json.loads(line)
    kind, cid = command.get("type"), command.get("id")
    if kind == "prompt":
        out.write(json.dumps({"id": cid, "type": "response", "command": "prompt", "success": True}).encode() + b"\n")
        out.write(blob)
    elif kind in data:
        reply = {"id": cid, "type": "response", "command": kind, "success": True, "data": data[kind]}
        out.write(json.dumps(reply).encode() + b"\n")
    else:  # what pi 0.73.1 says to a command it does not know (no id)
        reply = {"type": "response", "command": kind, "success": False, "error": "Unknown command: " + str(kind)}
        out.write(json.dumps(reply).encode() + b"\n")
    out.flush()
"""


def render(n: int) -> bytes:
    """The frames of one streamed reply of ``n`` text deltas, one JSON line each."""
    usage = {"input": 1423, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1424}
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello from the fake model", "index": 0}],
        "api": "anthropic-messages",
        "provider": "fake",
        "model": "fake-1",
        "usage": {**usage, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "stop",
        "timestamp": 1796141579052,
        "responseId": "msg_fake_1",
    }
    lines = [{"type": "agent_start"}, {"type": "turn_start"}, {"type": "message_start", "message": message}]
    for k in range(n):
        event = {"type": "text_delta", "contentIndex": 0, "delta": f"w{k} ", "partial": message}
        lines.append({"type": "message_update", "assistantMessageEvent": event, "message": message})
    lines += [
        {"type": "message_end", "message": message},
        {"type": "turn_end", "message": message, "toolResults": []},
        {"type": "agent_end", "messages": [message]},
    ]
    return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)


def bare(argv: list[str], n: int) -> float:
    """Events/s of a readline+json.loads loop, spawn → ``agent_end``."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(b'{"id":"p1","type":"prompt","message":"flood"}\n')
    child.stdin.flush()
    count = 0
    for line in child.stdout:
        frame = json.loads(line)
        kind = frame.get("type")
        if kind == "message_update" and frame["assistantMessageEvent"].get("type") == "text_delta":
            count += 1
        elif kind == "agent_end":
            break
    elapsed = time.perf_counter() - start
    child.stdin.close()
    child.wait()
    assert count == n, count
    return n / elapsed


async def anyagent_run(argv: list[str], n: int) -> float:
    """Events/s through the adapter and the engine, spawn (``open``) → ``TurnEnded``."""
    agent = AgentInstallation(id="pi", name="pi", executable_path=Path(argv[0]), args=tuple(argv[1:]))
    return await anyagent_turn(anyagent_pi.plugin, agent, n)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        blob = Path(tmp) / "blob.jsonl"
        blob.write_bytes(render(args.n))
        script = Path(tmp) / "fake_pi.py"
        script.write_text(FAKE_PI)
        argv = [sys.executable, str(script), str(blob)]
        contenders: dict[str, Callable[[], float]] = {
            "bare readline+json.loads": lambda: bare(argv, args.n),
            "anyagent asyncio": lambda: anyio.run(anyagent_run, argv, args.n),
            "anyagent trio": lambda: anyio.run(anyagent_run, argv, args.n, backend="trio"),
        }
        installed("trio")  # the trio contender's first run does not pay for importing it
        rates, cpu_rates = alternate(contenders, args.runs, args.n)
    size = max(len(line) for line in render(1).splitlines())
    what = f"{args.n:,} message_update text deltas (~{size} B/line)"
    print(f"pi: {what}, spawn → turn end, median (min–max) of {args.runs} (target: anyagent >= 50% of bare)")
    report(rates, cpu_rates, "deltas", None)


if __name__ == "__main__":
    main()
