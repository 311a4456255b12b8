"""Flood producers for the benchmarks: fake agent processes that are never the bottleneck.

A producer is an executable script (stdlib only, started with ``python -S``) that answers the
handshake from a recorded frame and, when a prompt arrives, writes a whole pre-rendered turn
(``n`` text-delta lines plus the recorded frames around them) in one ``write`` of bytes the bench
rendered to a file beforehand: the producer costs a file read and a pipe write, so the rate a
consumer reaches is the consumer's own (the bare ``readline()+json.loads`` loop, printed beside
every contender, shows the ceiling).

Three wires:

* ``claude``: ``claude -p --input-format stream-json``: answers every ``control_request``
  (``initialize`` with the recorded body, anything else with an error), and on a ``user`` frame
  writes ``system/init`` … ``stream_event`` text deltas … ``assistant`` … ``result``;
* ``acp``: an ACP agent (JSON-RPC over stdio): answers ``initialize``, ``session/new`` and, on
  ``session/prompt``, writes ``n`` ``session/update`` ``agent_message_chunk`` notifications and
  then the prompt's response (``stopReason: end_turn``);
* ``codex``: ``codex app-server`` (JSON-RPC without ``jsonrpc``): answers the handshake requests
  by method and, on ``turn/start``, writes its answer and ``n`` ``item/agentMessage/delta``
  notifications up to ``turn/completed``.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLAUDE_RECORDING = ROOT / "packages/anyagent-claude/tests/recordings/text-turn.jsonl"

_PRELUDE = r"""
import json, sys
with open(sys.argv[1], "rb") as f:
    turn = f.read()
out = sys.stdout.buffer.raw
def write(data):
    view = memoryview(data)
    while view:
        view = view[out.write(view):]
def requests():
    for line in sys.stdin.buffer:
        if line.strip():
            frame = json.loads(line)
            yield frame.get("method"), frame.get("id")
"""

_CLAUDE_PRODUCER = (
    _PRELUDE
    + r"""
with open(sys.argv[2], "rb") as f:
    init = json.load(f)
def reply(request_id, ok, body):
    if ok:
        response = {"subtype": "success", "request_id": request_id, "response": body}
    else:
        response = {"subtype": "error", "request_id": request_id, "error": "not supported"}
    write((json.dumps({"type": "control_response", "response": response}) + "\n").encode())
for line in sys.stdin.buffer:
    if not line.strip():
        continue
    frame = json.loads(line)
    kind = frame.get("type")
    if kind == "control_request":
        subtype = frame["request"].get("subtype")
        reply(frame["request_id"], subtype == "initialize", init if subtype == "initialize" else {})
    elif kind == "user":
        write(turn)
"""
)

_ACP_PRODUCER = (
    _PRELUDE
    + r"""
def answer(request_id, result):
    write((json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n").encode())
for method, request_id in requests():
    if method is None:
        continue
    if method == "initialize":
        answer(request_id, {"protocolVersion": 1, "agentCapabilities": {"loadSession": False,
               "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False}},
               "authMethods": []})
    elif method == "session/new":
        answer(request_id, {"sessionId": "flood-1"})
    elif method == "session/prompt":
        write(turn.replace(b"@ID@", json.dumps(request_id).encode()))
    elif request_id is not None:
        write((json.dumps({"jsonrpc": "2.0", "id": request_id,
               "error": {"code": -32601, "message": "method not found"}}) + "\n").encode())
"""
)


_CODEX_PRODUCER = (
    _PRELUDE
    + r"""
RESULTS = {
    "initialize": {"userAgent": "bench/0.171.0 (bench)", "codexHome": "/tmp", "platformFamily": "unix"},
    "account/read": {"account": None, "requiresOpenaiAuth": False},
    "model/list": {"data": [{"id": "fake", "model": "fake", "displayName": "Fake", "hidden": False,
                             "supportedReasoningEfforts": [], "isDefault": True}]},
    "thread/start": {"thread": {"id": "thr-bench"}, "model": "fake", "approvalPolicy": "on-request",
                     "sandbox": {"type": "workspaceWrite"}},
    "skills/list": {"data": []},
}
for method, request_id in requests():
    if request_id is None:
        continue
    if method == "turn/start":
        write(turn.replace(b"@ID@", json.dumps(request_id).encode()))
    else:
        write((json.dumps({"id": request_id, "result": RESULTS.get(method, {})}) + "\n").encode())
"""
)


def _executable(path: Path, source: str, *args: Path) -> Path:
    """``path`` as an executable that runs ``source`` with ``args`` (and the caller's args)."""
    script = path.with_suffix(".py")
    script.write_text(source)
    quoted = " ".join(f"'{arg}'" for arg in (script, *args))
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S -I {quoted}\n')
    path.chmod(0o755)
    return path


def claude_frames() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CLAUDE_RECORDING.read_text().splitlines()]


def claude_turn_bytes(n: int, text: str = "w{k} ") -> bytes:
    """The recorded text turn (everything the CLI wrote after the prompt) with its deltas
    replaced by ``n`` pre-rendered ones."""
    frames = claude_frames()
    start = next(i for i, f in enumerate(frames) if f.get("_sent", {}).get("type") == "user")
    turn = [f for f in frames[start + 1 :] if "_sent" not in f and "_note" not in f and "_meta" not in f]
    deltas = [
        i for i, f in enumerate(turn) if f.get("type") == "stream_event" and f["event"]["type"] == "content_block_delta"
    ]
    template = turn[deltas[0]]
    out: list[str] = []
    for index, frame in enumerate(turn):
        frame = {k: v for k, v in frame.items() if k != "_t"}
        if index == deltas[0]:
            for k in range(n):
                event = {**template["event"], "delta": {"type": "text_delta", "text": text.format(k=k)}}
                line = {**frame, "event": event, "uuid": f"00000000-0000-4000-8000-{k:012d}"}
                out.append(json.dumps(line, separators=(",", ":")))
        elif index in deltas:
            continue
        else:
            out.append(json.dumps(frame, separators=(",", ":")))
    return ("\n".join(out) + "\n").encode()


def claude_init_body() -> dict[str, Any]:
    for frame in claude_frames():
        if frame.get("type") == "control_response":
            body: dict[str, Any] = frame["response"]["response"]
            return body
    raise AssertionError("the recording has no initialize answer")


def claude_producer(directory: Path, n: int, text: str = "w{k} ") -> Path:
    """A fake ``claude`` executable in ``directory`` flooding ``n`` text deltas per prompt."""
    directory.mkdir(parents=True, exist_ok=True)
    turn = directory / f"claude-turn-{n}.jsonl"
    turn.write_bytes(claude_turn_bytes(n, text))
    init = directory / "claude-init.json"
    init.write_text(json.dumps(claude_init_body()))
    return _executable(directory / f"claude-flood-{n}", _CLAUDE_PRODUCER, turn, init)


def acp_turn_bytes(n: int) -> bytes:
    lines = []
    for k in range(n):
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"w{k} "}}
        note = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "flood-1", "update": update}}
        lines.append(json.dumps(note, separators=(",", ":")))
    lines.append('{"jsonrpc":"2.0","id":@ID@,"result":{"stopReason":"end_turn"}}')
    return ("\n".join(lines) + "\n").encode()


def acp_producer(directory: Path, n: int) -> Path:
    """A fake ACP agent executable in ``directory`` flooding ``n`` message chunks per prompt."""
    directory.mkdir(parents=True, exist_ok=True)
    turn = directory / f"acp-turn-{n}.jsonl"
    turn.write_bytes(acp_turn_bytes(n))
    return _executable(directory / f"acp-flood-{n}", _ACP_PRODUCER, turn)


def codex_turn_bytes(n: int) -> bytes:
    """``turn/start``'s answer, ``turn/started``, ``n`` ``item/agentMessage/delta`` notifications,
    the message's ``item/completed`` and ``turn/completed`` (``@ID@``: the request id)."""
    ids = '"threadId":"thr-bench","turnId":"turn-bench"'
    lines = ['{"id":@ID@,"result":{"turn":{"id":"turn-bench","status":"inProgress"}}}']
    lines.append('{"method":"turn/started","params":{"threadId":"thr-bench","turn":{"id":"turn-bench"}}}')
    for k in range(n):
        params = {"threadId": "thr-bench", "turnId": "turn-bench", "itemId": "msg-1", "delta": f"w{k} "}
        lines.append(json.dumps({"method": "item/agentMessage/delta", "params": params}, separators=(",", ":")))
    lines.append(f'{{"method":"item/completed","params":{{{ids},"item":{{"type":"agentMessage","id":"msg-1"}}}}}}')
    done = '{"threadId":"thr-bench","turn":{"id":"turn-bench","status":"completed"}}'
    lines.append(f'{{"method":"turn/completed","params":{done}}}')
    return ("\n".join(lines) + "\n").encode()


def codex_producer(directory: Path, n: int) -> Path:
    """A fake ``codex app-server`` executable in ``directory``: answers the handshake requests by
    method and floods ``n`` agent-message deltas per ``turn/start``."""
    directory.mkdir(parents=True, exist_ok=True)
    turn = directory / f"codex-turn-{n}.jsonl"
    turn.write_bytes(codex_turn_bytes(n))
    return _executable(directory / f"codex-flood-{n}", _CODEX_PRODUCER, turn)


def spread(values: list[float]) -> str:
    """``median (min–max)`` of rates."""
    ordered = sorted(values)
    return f"{median(values):>10,.0f} ({ordered[0]:,.0f}–{ordered[-1]:,.0f})"


def median(values: list[float]) -> float:
    ordered = sorted(values)
    half = len(ordered) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


def rss_kb() -> int:
    """This process's resident set size in KiB (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except OSError:
        return 0


def report(rates: dict[str, list[float]], cpu_rates: dict[str, list[float]], unit: str, peer: str | None) -> None:
    """Print each contender's wall rate (spawn → turn end) and its rate per CPU-second of the
    consuming process (what the host spends; steadier than wall time on a shared machine), as
    median (min–max), then the ratios of the medians: to the bare loop (first) and to ``peer``."""
    names = list(rates)
    print(f"  {'':<28} {'wall: ' + unit + '/s':>30}   {'per CPU-second of the host':>30}")
    for name in names:
        print(f"  {name:<28} {spread(rates[name]):>30}   {spread(cpu_rates[name]):>30}")
    base, cpu_base = median(rates[names[0]]), median(cpu_rates[names[0]])
    print("  ratios of the medians (wall | CPU):")
    for name in names[1:]:
        wall, cpu = median(rates[name]) / base, median(cpu_rates[name]) / cpu_base
        print(f"    {name:<26} {wall:6.0%} | {cpu:4.0%} of bare")
    if peer is not None and peer in rates:
        peer_wall, peer_cpu = median(rates[peer]), median(cpu_rates[peer])
        for name in names[1:]:
            if name != peer:
                wall, cpu = median(rates[name]) / peer_wall, median(cpu_rates[name]) / peer_cpu
                print(f"    {name:<26} {wall:5.2f}x | {cpu:4.2f}x {peer}")
    elif peer is not None:
        print(f"    {peer}: not installed")


def alternate(
    contenders: dict[str, Callable[[], float]], runs: int, n: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run every contender ``runs`` times, the order rotating each round; each returns its wall
    rate, and the rate per CPU-second of this process (``n`` over its CPU time) is taken beside."""
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    cpu_rates: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    expected_chars(n)
    for round_ in range(runs):
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            gc.collect()
            cpu = time.process_time()
            rates[name].append(contenders[name]())
            cpu_rates[name].append(n / (time.process_time() - cpu))
    return rates, cpu_rates


@functools.cache
def expected_chars(n: int) -> int:
    """The characters of a flood of ``n`` deltas ``w{k} `` (what a contender checks it received);
    cached, and computed by ``alternate`` before any timing, so no contender's CPU time pays for
    the check (it cost ~0.2 µs a delta, as much as a few per-delta calls of the consumer)."""
    return sum(len(f"w{k} ") for k in range(n))


def installed(module: str) -> bool:
    """Whether ``module`` (a peer under comparison) can be imported; imports it, so no contender's
    first timed run pays for its imports."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


async def anyagent_turn(plugin: ModuleType, agent: Any, n: int) -> float:
    """Deltas/s from before ``Runtime.open`` to ``TurnEnded`` through the runtime, ``plugin``'s
    adapter and the engine, for one prompt to ``agent`` (an ``AgentInstallation``); asserts that
    every character of the flood arrived (a lagging reader may see deltas merged, never lost)."""
    from anyagent import Runtime, SessionOptions, TextDelta, TurnEnded

    async with Runtime(plugins=[plugin]) as runtime:
        runtime.prewarm()  # what an app does at start-up: plugins load before the first open
        start = time.perf_counter()
        session, events = await runtime.open(agent, SessionOptions.in_dir(tempfile.gettempdir()))
        async with session:
            await session.prompt("flood")
            chars = 0
            async for event in events:
                kind = event.kind
                if isinstance(kind, TextDelta):
                    chars += len(kind.text)
                elif isinstance(kind, TurnEnded):
                    break
            elapsed = time.perf_counter() - start
    expected = expected_chars(n)
    assert chars == expected, (chars, expected)
    return n / elapsed
