"""``python -m anyagent_testkit.replay`` — see the package docstring for the options."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from ._http import HttpReplayServer, load_http_timeline
from ._recording import RecordingError, load_recording
from ._stdio import EXIT_INCOMPLETE, EXIT_MISMATCH, PlayOptions, run_stdio

USAGE_ERROR = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m anyagent_testkit.replay",
        description="Behave as the agent process recorded in RECORDING (stdio), or serve an HTTP recording.",
        epilog="Arguments after -- are ignored (HTTP mode reads --port/--hostname from them).",
    )
    parser.add_argument("recording", type=Path, help="the JSONL wire recording")
    parser.add_argument("--strict", action="store_true", help="a mismatch or unexpected frame fails (exit 1)")
    parser.add_argument("--realtime", action="store_true", help="honour the recorded _t gaps")
    parser.add_argument("--max-gap", type=float, default=2.0, help="longest pause --realtime makes (seconds)")
    parser.add_argument("--process", type=int, default=None, help="play only the N-th process (1-based)")
    parser.add_argument("--exit-as-recorded", action="store_true", help="exit where the recording notes an exit")
    parser.add_argument("--http", action="store_true", help="serve an HTTP+SSE recording on 127.0.0.1")
    parser.add_argument("--port", type=int, default=None, help="HTTP mode: port to bind (0 = any free port)")
    parser.add_argument("--port-file", type=Path, default=None, help="HTTP mode: write the bound port here")
    parser.add_argument(
        "--banner",
        default="opencode server listening on {url}",
        help="HTTP mode: the stdout line printed once listening ({url} is replaced)",
    )
    return parser


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        cut = list(argv).index("--")
        return list(argv[:cut]), list(argv[cut + 1 :])
    return list(argv), []


def _port_from(agent_args: Sequence[str]) -> int | None:
    for index, arg in enumerate(agent_args):
        if arg == "--port" and index + 1 < len(agent_args):
            value = agent_args[index + 1]
        elif arg.startswith("--port="):
            value = arg.split("=", 1)[1]
        else:
            continue
        try:
            return int(value)
        except ValueError:
            return None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the replayer; returns the exit status."""
    own, agent_args = _split(sys.argv[1:] if argv is None else argv)
    options = _parser().parse_args(own)
    try:
        if options.http:
            return _serve_http(options, agent_args)
        recording = load_recording(options.recording)
        lines = recording.segment(options.process)
    except RecordingError as exc:
        print(f"[replay] {exc}", file=sys.stderr)
        return USAGE_ERROR
    play = PlayOptions(
        strict=options.strict,
        realtime=options.realtime,
        max_gap=options.max_gap,
        exit_as_recorded=options.exit_as_recorded,
        jsonrpc_key=recording.agent_uses_jsonrpc_key,
    )
    return run_stdio(lines, play)


def _serve_http(options: argparse.Namespace, agent_args: Sequence[str]) -> int:
    timeline = load_http_timeline(options.recording)
    port = options.port if options.port is not None else (_port_from(agent_args) or 0)
    server = HttpReplayServer(
        timeline, strict=options.strict, realtime=options.realtime, max_gap=options.max_gap, port=port, log=sys.stderr
    )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda number, frame: stop.set())
    with server:
        if options.port_file is not None:
            _write_atomically(options.port_file, str(server.port))
        print(options.banner.replace("{url}", server.url), flush=True)
        while not stop.wait(0.2):
            pass
    if server.failures and options.strict:
        return EXIT_MISMATCH
    if options.strict and not server.fully_played:
        print("[replay-http] stopped before the timeline was fully played", file=sys.stderr)
        return EXIT_INCOMPLETE
    return 0


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def _exit(status: int) -> None:
    """Flush and leave without waiting on the stdin reader thread."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


if __name__ == "__main__":
    _exit(main())
