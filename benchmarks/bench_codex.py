"""Codex adapter throughput and open overhead, over a fake ``codex app-server`` (figures, not pass/fail).

The fake app server is a small stdlib Python program: it answers the handshake requests by method
and, on ``turn/start``, writes the ``turn/start`` answer, ``turn/started``, ``--n`` pre-rendered
``item/agentMessage/delta`` notifications, the message's ``item/completed`` and ``turn/completed``
in one write, so the producer is never the bottleneck. Two readers, timed the same way in one run,
spawn → turn end:

- bare: ``subprocess`` + ``readline()`` + ``json.loads``, pipelining the same requests;
- anyagent: ``Runtime.open`` (the codex adapter's real handshake) + ``prompt`` + the engine's
  events until ``TurnEnded``, counting ``TextDelta`` events.

Targets: anyagent >= 50% of bare (events/s); ``Runtime.open`` overhead beyond the fake's own
spawn + ``initialize`` <= 20 ms. Run: ``python benchmarks/bench_codex.py [--n 100000] [--runs 3]``.
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

import anyio
import attrs

from anyagent import AgentInstallation, Runtime, SessionOptions, TextDelta, TurnEnded

FAKE_APP_SERVER = r"""
import json, sys
THREAD, TURN = "thr-bench", "turn-bench"
flood = open(sys.argv[1], "rb").read()
out = sys.stdout.buffer
def send(frame):
    out.write(json.dumps(frame).encode() + b"\n")
    out.flush()
RESULTS = {
    "initialize": {"userAgent": "bench/0.171.0 (bench)", "codexHome": "/tmp", "platformFamily": "unix"},
    "account/read": {"account": None, "requiresOpenaiAuth": False},
    "model/list": {"data": [{"id": "fake", "model": "fake", "displayName": "Fake", "hidden": False,
                             "supportedReasoningEfforts": [], "isDefault": True}]},
    "thread/start": {"thread": {"id": THREAD}, "model": "fake", "approvalPolicy": "on-request",
                     "sandbox": {"type": "workspaceWrite"}},
    "skills/list": {"data": []},
}
for line in sys.stdin.buffer:
    message = json.loads(line)
    method, rid = message.get("method"), message.get("id")
    if rid is None:
        continue
    if method == "turn/start":
        out.write(json.dumps({"id": rid, "result": {"turn": {"id": TURN, "status": "inProgress"}}}).encode() + b"\n")
        out.write(flood)
        out.flush()
    else:
        send({"id": rid, "result": RESULTS.get(method, {})})
"""

REQUESTS = [
    {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "bare"}, "capabilities": {}}},
    {"method": "initialized"},
    {"id": 2, "method": "account/read", "params": {}},
    {"id": 3, "method": "model/list", "params": {}},
    {"id": 4, "method": "thread/start", "params": {"cwd": "/tmp"}},
    {"id": 5, "method": "skills/list", "params": {}},
    {"id": 6, "method": "turn/start", "params": {"threadId": "thr-bench", "input": []}},
]


def render_flood(path: Path, n: int) -> None:
    """``turn/started``, ``n`` deltas, the message's end and ``turn/completed``, as JSON lines."""
    ids = {"threadId": "thr-bench", "turnId": "turn-bench"}
    lines = [{"method": "turn/started", "params": {"threadId": "thr-bench", "turn": {"id": "turn-bench"}}}]
    lines += [
        {"method": "item/agentMessage/delta", "params": {**ids, "itemId": "msg-1", "delta": f"w{k} "}} for k in range(n)
    ]
    lines.append({"method": "item/completed", "params": {**ids, "item": {"type": "agentMessage", "id": "msg-1"}}})
    lines.append(
        {
            "method": "turn/completed",
            "params": {"threadId": "thr-bench", "turn": {"id": "turn-bench", "status": "completed"}},
        }
    )
    path.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in lines))


def bare(server: Path, flood: Path, n: int) -> tuple[float, float]:
    """Seconds spawn → turn end of a pipelined readline+json.loads client, and spawn → initialize answer."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, str(server), str(flood)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write((json.dumps(REQUESTS[0]) + "\n").encode())
    child.stdin.flush()
    json.loads(child.stdout.readline())
    initialized = time.perf_counter() - start
    child.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in REQUESTS[1:]))
    child.stdin.flush()
    count = 0
    for line in child.stdout:
        frame = json.loads(line)
        method = frame.get("method")
        if method == "item/agentMessage/delta":
            count += 1
        elif method == "turn/completed":
            break
    total = time.perf_counter() - start
    child.stdin.close()
    child.wait()
    assert count == n, count
    return total, initialized


async def anyagent_run(server: Path, flood: Path, n: int, workdir: Path) -> tuple[float, float]:
    """Seconds spawn → ``TurnEnded`` through the codex adapter and the engine, and what ``open`` took."""
    import anyagent_codex.plugin

    async with Runtime(plugins=[anyagent_codex.plugin]) as runtime:
        runtime.prewarm()
        agent = attrs.evolve(AgentInstallation.at("codex", sys.executable), args=(str(server), str(flood)))
        start = time.perf_counter()
        session, events = await runtime.open(agent, SessionOptions.in_dir(workdir))
        opened = time.perf_counter() - start
        async with session:
            await session.prompt("flood")
            count = 0
            async for event in events:
                if isinstance(event.kind, TextDelta):
                    count += 1
                elif isinstance(event.kind, TurnEnded):
                    break
            total = time.perf_counter() - start
    assert count == n, count
    return total, opened


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        server = directory / "fake_app_server.py"
        server.write_text(FAKE_APP_SERVER)
        flood, small = directory / "flood.jsonl", directory / "small.jsonl"
        render_flood(flood, args.n)
        render_flood(small, 10)
        bare_totals, ours = [], []
        for _ in range(args.runs):
            bare_totals.append(bare(server, flood, args.n)[0])
            ours.append(anyio.run(anyagent_run, server, flood, args.n, directory)[0])
        bare_rate, our_rate = args.n / min(bare_totals), args.n / min(ours)
        print(f"codex wire, {args.n} item/agentMessage/delta notifications, spawn -> turn end (best of {args.runs})")
        print(f"  bare readline+json.loads  {bare_rate:>10,.0f} ev/s  ({min(bare_totals):.2f} s)")
        share = our_rate / bare_rate
        print(f"  anyagent (adapter+engine) {our_rate:>10,.0f} ev/s  ({min(ours):.2f} s)  {share:.0%} of bare")
        inits, opens = [], []
        for _ in range(7):
            inits.append(bare(server, small, 10)[1])
            opens.append(anyio.run(anyagent_run, server, small, 10, directory)[1])
        overhead = (statistics.median(opens) - statistics.median(inits)) * 1000
        print(
            f"  open: {statistics.median(opens) * 1000:.1f} ms (initialize, account/read, model/list, thread/start) "
            f"vs bare spawn+initialize {statistics.median(inits) * 1000:.1f} ms "
            f"-> {overhead:.1f} ms beyond (median of 7)"
        )


if __name__ == "__main__":
    sys.exit(main())
