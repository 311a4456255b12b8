"""opencode adapter: open latency and SSE throughput (figures, not pass/fail).

(a) Open latency against the real pinned ``opencode serve`` (from the live cache; skipped when it
is not installed), ``--opens`` alternating runs (the order flips each round): the bare sequence —
spawn the same server → its listening line → the same five handshake requests (health, a session,
providers, config, commands) from a bare httpx client — beside ``Runtime.open`` (spawn →
listening → the handshake → ready). Both are timed step by step in the same run (thin wrappers
around the launch, the line's arrival, the requests and the transport mark ``Runtime.open``'s
steps). The server's own time (spawn → listening line: ~1.3–2.5 s; the round trips: the first
ones boot opencode's project instance, ~1 s) varies by seconds from run to run, so the overhead
is the difference of the medians of each contender's time *minus the server's*; the difference
of the total medians is printed beside it. Target <= 50 ms.

(b) Events/s on a flood of ``message.part.delta`` text events from a loopback server that is never
the bottleneck (a stand-in ``opencode`` in a separate process: every event pre-serialized, written
in 256 KiB chunks). Every contender spawns its own server and is timed spawn → turn end (the
stream alone, prompt → turn end, is printed beside), in one run, in an order that rotates each
round; medians of ``--runs`` with (min–max), wall and per CPU-second of this host process:

- bare: an ``httpx-sse`` loop on the server's ``/event`` (spawn → listening line → stream → the
  prompt → idle), counting the parsed events (the ceiling);
- anyagent asyncio / trio: ``Runtime.open`` + the opencode adapter + the engine, counting
  ``TextDelta`` events until ``TurnEnded``;
- opencode-ai (if installed): the official Python client's ``event.list()`` stream, same timing.

Target: anyagent >= 50% of bare.

Run: ``python benchmarks/bench_opencode.py [--n 50000] [--runs 3] [--opens 10] [--no-open]`` (``--n 0``: the
open part alone).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx_sse

import anyagent
from anyagent import AgentInstallation, Runtime, SessionOptions, TextDelta, TurnEnded

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _flood import alternate, expected_chars, installed, report, spread

STREAM: dict[str, list[float]] = {}
"""Each contender's stream rate (prompt → turn end), beside the spawn → turn end rate."""


def _stream_rate(name: str, n: int, seconds: float) -> None:
    STREAM.setdefault(name, []).append(n / seconds)


FLOOD_SERVER = r"""
import json, re, socket, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

N = int(sys.argv[sys.argv.index("--events") + 1])
port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
SID = "ses_bench"
def ev(kind, **props):
    event = {"id": "evt_" + kind + str(props.get("status", "")), "type": kind, "properties": props}
    return ("data: " + json.dumps(event) + "\n\n").encode()
with open(sys.argv[sys.argv.index("--flood") + 1], "rb") as f:
    FLOOD = f.read()  # rendered by the bench beforehand: the server starts as fast as it can
streams = []
lock = threading.Condition()

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # a JSON reply is two writes (headers, body): without TCP_NODELAY the
    # body waits for the client's delayed ACK, ~40 ms a request (5 of them in the adapter's handshake)
    def log_message(self, *a): pass
    def _json(self, obj, status=200):
        data = json.dumps(obj).encode() if obj is not None else b""
        self.send_response(status); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def do_GET(self):
        p = self.path.split("?")[0]
        if p == "/event":
            self.send_response(200); self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache"); self.end_headers()
            self.wfile.write(ev("server.connected")); self.wfile.flush()
            with lock:
                streams.append(self.wfile); lock.notify_all()
                while self.wfile in streams:
                    lock.wait(0.5)
            return
        if p == "/global/health": return self._json({"healthy": True, "version": "bench"})
        if p == "/config/providers":
            models = {"m": {"name": "M", "limit": {"context": 1000}}}
            return self._json({"providers": [{"id": "fake", "models": models}], "default": {"fake": "m"}})
        if p == "/config": return self._json({"model": "fake/m"})
        if p == "/command": return self._json([])
        self._json({"name": "NotFound"}, 404)
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0); self.rfile.read(length)
        p = self.path.split("?")[0]
        if p == "/session": return self._json({"id": SID, "title": "bench"})
        if p.endswith("/prompt_async"):
            self.send_response(204); self.send_header("Content-Length", "0"); self.end_headers(); self.wfile.flush()
            with lock:
                targets = list(streams)
            for out in targets:
                view = memoryview(FLOOD)
                for start in range(0, len(view), 262144):
                    out.write(view[start:start + 262144])
                out.flush()
            return
        if p.endswith("/abort"): return self._json(True)
        self._json({"name": "NotFound"}, 404)

server = ThreadingHTTPServer(("127.0.0.1", port), H)
server.daemon_threads = True
print("opencode server listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
server.serve_forever()
"""


def flood_bytes(n: int) -> bytes:
    """busy, ``n`` ``message.part.delta`` text events, idle: the SSE bytes the server writes."""

    def event(event_id: str, kind: str, props: dict[str, Any]) -> bytes:
        return ("data: " + json.dumps({"id": event_id, "type": kind, "properties": props}) + "\n\n").encode()

    body = [event("evt_busy", "session.status", {"sessionID": "ses_bench", "status": {"type": "busy"}})]
    for k in range(n):
        props = {"sessionID": "ses_bench", "messageID": "msg_1", "partID": "prt_1", "field": "text", "delta": f"w{k} "}
        body.append(event(f"evt_{k}", "message.part.delta", props))
    body.append(event("evt_idle", "session.status", {"sessionID": "ses_bench", "status": {"type": "idle"}}))
    return b"".join(body)


def write_flood_opencode(directory: Path, n: int) -> Path:
    """An executable ``opencode`` that serves the flood (``serve --port P`` as the adapter launches it)."""
    script = directory / "flood_server.py"
    script.write_text(FLOOD_SERVER)
    flood = directory / f"flood-{n}.sse"
    flood.write_bytes(flood_bytes(n))
    exe = directory / "opencode"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} {script} --events {n} --flood {flood} "$@"\n')
    exe.chmod(0o755)
    return exe


class _Plugin:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    @anyagent.hookimpl
    def anyagent_adapters(self, register: Any) -> None:
        import attrs

        from anyagent_opencode.adapter import OpencodeAdapter

        env = self.env

        class Isolated(OpencodeAdapter):
            async def connect(self, request: Any) -> Any:
                return await super().connect(attrs.evolve(request, env=env))

        register.adapter(Isolated, wire="opencode")

    @anyagent.hookimpl
    def anyagent_agents(self, register: Any) -> None:
        from anyagent_opencode.profile import PROFILE

        register.profile(PROFILE)


async def anyagent_flood(exe: Path, workdir: Path, n: int, name: str = "anyagent") -> float:
    async with Runtime(plugins=[_Plugin(dict(os.environ))]) as runtime:
        runtime.prewarm()  # what an app does at start-up: plugins load before the first open
        spawned = time.perf_counter()
        session, events = await runtime.open(AgentInstallation.at("opencode", exe), SessionOptions.in_dir(workdir))
        async with session:
            chars = 0
            start = time.perf_counter()
            await session.prompt("flood")
            async for event in events:
                kind = event.kind
                if isinstance(kind, TextDelta):
                    chars += len(kind.text)
                elif isinstance(kind, TurnEnded):
                    break
            end = time.perf_counter()
    expected = expected_chars(n)
    assert chars == expected, f"anyagent saw {chars} characters of {expected}"  # merged when it lags, never lost
    _stream_rate(name, n, end - start)
    return n / (end - spawned)


def _start_flood(exe: Path, workdir: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([str(exe), "serve", "--port", "0"], stdout=subprocess.PIPE, text=True, cwd=workdir)
    assert process.stdout is not None
    found = re.search(r"(http://\S+)", process.stdout.readline())
    assert found is not None
    return process, found[1]


async def bare_flood(exe: Path, workdir: Path, n: int) -> float:
    spawned = time.perf_counter()
    process, url = await anyio.to_thread.run_sync(_start_flood, exe, workdir)
    try:
        async with (
            httpx.AsyncClient(base_url=url, timeout=None, trust_env=False) as client,
            httpx_sse.aconnect_sse(client, "GET", "/event") as source,
        ):
            stream = source.aiter_sse()
            await stream.__anext__()  # server.connected
            count = 0
            start = time.perf_counter()
            await client.post("/session/ses_bench/prompt_async", json={"parts": []})
            async for sse in stream:
                event = json.loads(sse.data)
                kind = event["type"]
                if kind == "message.part.delta":
                    count += 1
                elif kind == "session.status" and event["properties"]["status"]["type"] == "idle":
                    break
            end = time.perf_counter()
    finally:
        process.terminate()
        process.wait()
    assert count == n, f"bare saw {count} deltas of {n}"
    _stream_rate("bare", n, end - start)
    return n / (end - spawned)


async def bare_open(exe: Path, env: dict[str, str], workdir: Path) -> Timeline:
    """The server's own time: spawn the same ``opencode serve`` → its listening line → the
    handshake the adapter makes (health, a session, providers, config, commands), answered to a
    bare httpx client (its TLS context built beforehand, as ``HttpWire`` shares one)."""
    timeline = Timeline.begin()
    secret = "bench-password"
    argv = [str(exe), "serve", "--hostname", "127.0.0.1", "--port", str(_free_port())]
    env = {**env, "OPENCODE_SERVER_PASSWORD": secret}
    timeline.mark("spawn call")
    process = await anyio.open_process(argv, env=env, cwd=workdir, stderr=subprocess.DEVNULL)
    timeline.mark("spawned")
    timeline.pid = process.pid
    try:
        assert process.stdout is not None
        buffer = b""
        while b"listening on" not in buffer:
            buffer += await process.stdout.receive()
        timeline.mark("line read")
        found = re.search(rb"(http://127\.0\.0\.1:\d+)", buffer)
        assert found is not None
        async with httpx.AsyncClient(
            base_url=found[1].decode(), auth=("opencode", secret), trust_env=False, verify=_tls()
        ) as client:
            for method, path in HANDSHAKE:
                timeline.request_sent()
                (await client.request(method, path, json={} if method == "POST" else None)).raise_for_status()
                timeline.request_answered()
        timeline.mark("ready")
        return timeline
    finally:
        process.terminate()
        await process.wait()


HANDSHAKE = (
    ("GET", "/global/health"),
    ("POST", "/session"),
    ("GET", "/config/providers"),
    ("GET", "/config"),
    ("GET", "/command"),
)


async def official_flood(exe: Path, workdir: Path, n: int) -> float | None:
    """The same flood through the official ``opencode-ai`` client's ``event.list()`` stream (None when
    that package is not installed)."""
    try:
        from opencode_ai import AsyncOpencode
    except ImportError:
        return None
    spawned = time.perf_counter()
    process, url = await anyio.to_thread.run_sync(_start_flood, exe, workdir)
    try:
        async with AsyncOpencode(base_url=url, timeout=None) as client, httpx.AsyncClient(base_url=url) as poster:
            stream = await client.event.list()
            iterator = stream.__aiter__()
            await iterator.__anext__()  # server.connected
            count = 0
            start = time.perf_counter()
            await poster.post("/session/ses_bench/prompt_async", json={"parts": []})
            async for event in iterator:
                kind = getattr(event, "type", None)
                if kind == "message.part.delta":
                    count += 1
                elif kind == "session.status" and "idle" in str(getattr(event, "properties", "")):
                    break
            end = time.perf_counter()
    finally:
        process.terminate()
        process.wait()
    assert count == n, f"opencode-ai saw {count} deltas of {n}"
    _stream_rate("opencode-ai", n, end - start)
    return n / (end - spawned)


def _free_port() -> int:
    from anyagent_opencode.adapter import free_port

    return free_port()


class Timeline:
    """One open's timestamps (``time.perf_counter``), marked by the bare sequence itself and, for
    ``Runtime.open``, by thin wrappers around the launch, the listening line's arrival, the HTTP
    requests and the event stream (``instrument``); the server's share of each HTTP round trip is
    what httpx's transport spent on it (the same wrapper times both contenders)."""

    current: Timeline | None = None

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}
        self.server = 0.0  # seconds inside the transport: the server answering (both contenders)
        self.requests = 0.0  # seconds from each request sent to its reply parsed
        self.pid: int | None = None  # the server's, for its CPU time (Linux)
        self.cpu: dict[str, float] = {}
        self._sent = 0.0

    @classmethod
    def begin(cls) -> Timeline:
        timeline = cls.current = cls()
        timeline.mark("start")
        return timeline

    def mark(self, name: str) -> None:
        if name not in self.marks:
            self.marks[name] = time.perf_counter()
            if name in ("line read", "ready") and self.pid is not None:
                self.cpu[name] = _cpu_ms(self.pid)

    def request_sent(self) -> None:
        self._sent = time.perf_counter()
        self.mark("first request")

    def request_answered(self) -> None:
        now = time.perf_counter()
        self.requests += now - self._sent
        self.marks["last answer"] = now

    def steps(self) -> dict[str, float]:
        """Milliseconds per step; the ``*`` rows are the server's own time."""
        m = self.marks

        def span(a: str, b: str) -> float:
            return (m[b] - m[a]) * 1000

        steps = {
            "launch prep (argv, env, port, secret)": span("start", "spawn call"),
            "spawn (call → process started)": span("spawn call", "spawned"),
            "* server: started → listening line": span("spawned", "line read"),
            "listening line → 1st request sent": span("line read", "first request"),
            "* server: 5 round trips (transport)": self.server * 1000,
            "client side of the 5 requests": (self.requests - self.server) * 1000,
            "between requests": span("first request", "last answer") - self.requests * 1000,
            "last answer → ready": span("last answer", "ready"),
            "total: spawn → ready": span("start", "ready"),
        }
        server = steps["* server: started → listening line"] + steps["* server: 5 round trips (transport)"]
        steps["total minus the server's time"] = steps["total: spawn → ready"] - server
        if "line read" in self.cpu and "ready" in self.cpu:  # the same work takes the same CPU
            steps["* server CPU: started → listening line"] = self.cpu["line read"]
            steps["* server CPU: listening → ready"] = self.cpu["ready"] - self.cpu["line read"]
        if "subscribed" in m:
            steps["ready → /event subscribed (after open)"] = span("ready", "subscribed")
        return steps


def _cpu_ms(pid: int) -> float:
    """The CPU time ``pid`` has used so far, in ms (Linux ``/proc``; NaN elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _mark(name: str) -> None:
    if Timeline.current is not None:
        Timeline.current.mark(name)


def instrument() -> None:
    """Wrap the few calls ``Runtime.open`` makes that the steps need (microseconds each)."""
    import contextlib

    from anyagent import _process_base, toolkit
    from anyagent.wire import HttpWire

    spawn = toolkit.Launch.spawn

    async def spawned(self: toolkit.Launch, *args: Any, **kwargs: Any) -> Any:
        _mark("spawn call")
        process = await spawn(self, *args, **kwargs)
        _mark("spawned")
        if Timeline.current is not None:
            Timeline.current.pid = process.pid
        return process

    toolkit.Launch.spawn = spawned  # type: ignore[method-assign]

    feed = _process_base._Tail.feed

    def fed(self: Any, data: bytes) -> None:  # in the drain's thread: the moment the line is read
        if b"listening on" in data:
            _mark("line read")
        feed(self, data)

    _process_base._Tail.feed = fed  # type: ignore[method-assign]

    request = HttpWire.request

    async def timed_request(self: HttpWire, *args: Any, **kwargs: Any) -> Any:
        timeline = Timeline.current
        if timeline is not None:
            timeline.request_sent()
        reply = await request(self, *args, **kwargs)
        if timeline is not None:
            timeline.request_answered()
        return reply

    HttpWire.request = timed_request  # type: ignore[method-assign]
    events = HttpWire.events

    @contextlib.asynccontextmanager
    async def subscribed(self: HttpWire, *args: Any, **kwargs: Any) -> Any:
        async with events(self, *args, **kwargs) as stream:
            _mark("subscribed")
            yield stream

    HttpWire.events = subscribed  # type: ignore[method-assign]
    transport = httpx.AsyncHTTPTransport.handle_async_request

    async def round_trip(self: httpx.AsyncHTTPTransport, request: httpx.Request) -> httpx.Response:
        start = time.perf_counter()
        response = await transport(self, request)
        timeline = Timeline.current
        if timeline is not None and request.url.path != "/event":
            await response.aread()  # the body too: the server's whole answer
            timeline.server += time.perf_counter() - start
        return response

    httpx.AsyncHTTPTransport.handle_async_request = round_trip  # type: ignore[method-assign]


def _tls() -> Any:
    from anyagent.http import _tls as shared

    return shared()


async def anyagent_open(runtime: Runtime, exe: Path, workdir: Path) -> Timeline:
    timeline = Timeline.begin()
    session, _events = await runtime.open(AgentInstallation.at("opencode", exe), SessionOptions.in_dir(workdir))
    timeline.mark("ready")
    with anyio.move_on_after(5):
        while "subscribed" not in timeline.marks:
            await anyio.sleep(0.001)
    Timeline.current = None
    await session.close()
    return timeline


async def open_latency(runs: int) -> dict[str, list[dict[str, float]]] | None:
    """Alternating (the order flips each round): the bare sequence and ``Runtime.open``, each
    run's steps in milliseconds."""
    from anyagent_testkit import live
    from anyagent_testkit.fakemodel import FakeModel

    if live.installed_executable("opencode") is None:
        return None
    instrument()
    results: dict[str, list[dict[str, float]]] = {"bare": [], "anyagent": []}
    with FakeModel() as model, tempfile.TemporaryDirectory() as tmp:
        agent = live.prepare("opencode", model.url, Path(tmp))
        env = dict(agent.env)
        exe, workspace = agent.executable, agent.workspace
        async with Runtime(plugins=[_Plugin(env)]) as runtime:
            runtime.prewarm()
            await bare_open(exe, env, workspace)  # warm-ups: the page cache, the data dirs, the
            await anyagent_open(runtime, exe, workspace)  # host's guard, first-open imports
            for round_ in range(runs):
                for name in ("bare", "anyagent") if round_ % 2 == 0 else ("anyagent", "bare"):
                    if name == "bare":
                        timeline = await bare_open(exe, env, workspace)
                    else:
                        timeline = await anyagent_open(runtime, exe, workspace)
                    results[name].append(timeline.steps())
    return results


def print_open(results: dict[str, list[dict[str, float]]]) -> None:
    bare, ours = results["bare"], results["anyagent"]
    print(f"opencode open latency, ms, median (min–max) of {len(bare)} alternating runs; * = the server's own time")
    print(f"  {'step':<40} {'bare (httpx)':>24} {'Runtime.open':>24} {'Δ median':>9}")

    def cell(rows: list[dict[str, float]], key: str) -> str:
        values = sorted(row[key] for row in rows if key in row)
        if not values:
            return f"{'—':>24}"
        return f"{statistics.median(values):>8.1f} ({values[0]:.1f}–{values[-1]:.1f})".rjust(24)

    for key in ours[0]:
        delta = ""
        if key in bare[0]:
            delta = f"{statistics.median(r[key] for r in ours) - statistics.median(r[key] for r in bare):+9.1f}"
        print(f"  {key:<40} {cell(bare, key)} {cell(ours, key)} {delta}")
    client = "total minus the server's time"
    overhead = statistics.median(r[client] for r in ours) - statistics.median(r[client] for r in bare)
    total = "total: spawn → ready"
    naive = statistics.median(r[total] for r in ours) - statistics.median(r[total] for r in bare)
    print(f"  open overhead (our time beyond the bare client's): {overhead:+.1f} ms (target <= 50 ms)")
    print(f"  (difference of the total medians: {naive:+.0f} ms — the server's own boot varies by seconds run to run)")


def flood(n: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        exe = write_flood_opencode(directory, n)
        contenders: dict[str, Callable[[], float]] = {
            "bare httpx-sse loop": lambda: anyio.run(bare_flood, exe, directory, n),
            "anyagent asyncio": lambda: anyio.run(anyagent_flood, exe, directory, n, "anyagent asyncio"),
            "anyagent trio": lambda: anyio.run(anyagent_flood, exe, directory, n, "anyagent trio", backend="trio"),
        }
        if installed("opencode_ai"):
            contenders["opencode-ai client"] = lambda: anyio.run(official_flood, exe, directory, n) or 0.0
        installed("trio")  # the trio contender's first run does not pay for importing it
        rates, cpu_rates = alternate(contenders, runs, n)
    print(f"opencode SSE flood: {n:,} message.part.delta events, spawn → turn end, median (min–max) of {runs}")
    report(rates, cpu_rates, "events", "opencode-ai client")
    names = {"bare httpx-sse loop": "bare", "opencode-ai client": "opencode-ai"}
    print("  the stream alone (prompt → turn end), events/s:")
    bare_stream = statistics.median(STREAM["bare"])
    for name in rates:
        values = STREAM[names.get(name, name)]
        print(f"    {name:<26} {spread(values)}  {statistics.median(values) / bare_stream:4.0%} of bare")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000, help="text deltas in the flood")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--opens", type=int, default=10, help="alternating runs of the open-latency part")
    parser.add_argument("--no-open", action="store_true", help="skip the open-latency part (real opencode)")
    args = parser.parse_args()
    if args.n:
        flood(args.n, args.runs)
    if args.no_open:
        return
    latency = anyio.run(open_latency, args.opens)
    if latency is None:
        print("open latency: the pinned opencode is not installed (ANYAGENT_LIVE_CACHE); skipped")
        return
    print_open(latency)


if __name__ == "__main__":
    main()
