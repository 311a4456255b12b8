"""The stdio player: behave as the recorded agent process on stdin/stdout.

In: the recording's lines (one process, or all of them), options, stdin lines from a reader thread.
Out: agent frames on stdout (compact JSON, ids remapped), log lines on stderr, and an exit status:

* ``0`` — stdin closed after the recording was fully played (or at any point, when not strict);
* ``1`` — ``--strict`` and a client frame did not match (a diff is on stderr);
* ``3`` — ``--strict`` and stdin closed before the recording was fully played;
* the recorded status — ``--exit-as-recorded`` and the recording says the process exited.

Stdlib only, so the replayer starts fast; the stdin reader uses the raw file descriptor so that the
interpreter never waits on it at exit.
"""

from __future__ import annotations

import collections
import difflib
import json
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, BinaryIO, TextIO

import attrs

from ._recording import Line, LineKind
from ._wire import IdMap, describe_kind, error_reply, frame_kind

__all__ = ["EXIT_INCOMPLETE", "EXIT_MISMATCH", "MAX_LINE", "PlayOptions", "StdinReader", "StdioPlayer"]

EXIT_MISMATCH = 1
"""The replayer's exit status when the adapter wrote a frame the recording did not expect."""
EXIT_INCOMPLETE = 3
"""The replayer's exit status when its input ended before the recording did."""
MAX_LINE = 64 * 1024 * 1024
"""Longest stdin line accepted (bytes); a longer one is dropped whole and logged."""


@attrs.frozen
class PlayOptions:
    """How to play: ``strict`` mismatches fail, ``realtime`` honours ``_t`` gaps up to ``max_gap``
    seconds, ``exit_as_recorded`` ends the process where the recording says it exited."""

    strict: bool = False
    realtime: bool = False
    max_gap: float = 2.0
    exit_as_recorded: bool = False
    jsonrpc_key: bool = False


class _Finished(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


_EOF = object()
_OVERSIZED = object()


class StdinReader:
    """Reads lines from a file descriptor on a daemon thread; ``get`` returns bytes, or EOF/oversize markers."""

    def __init__(self, fd: int, max_line: int = MAX_LINE) -> None:
        self._fd = fd
        self._max_line = max_line
        self._lines: queue.Queue[object] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="replay-stdin", daemon=True)

    def start(self) -> StdinReader:
        """Begin reading."""
        self._thread.start()
        return self

    def get(self, timeout: float) -> object:
        """The next line (bytes without the newline), ``EOF``, ``OVERSIZED``, or None after ``timeout``."""
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def _run(self) -> None:
        pending = bytearray()
        dropping = False
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                if pending and not dropping:
                    self._lines.put(bytes(pending))
                self._lines.put(_EOF)
                return
            pending += chunk
            while True:
                cut = pending.find(b"\n")
                if cut < 0:
                    break
                if dropping:
                    dropping = False
                elif cut > self._max_line:
                    self._lines.put(_OVERSIZED)
                else:
                    self._lines.put(bytes(pending[:cut]))
                del pending[: cut + 1]
            if len(pending) > self._max_line:
                if not dropping:
                    self._lines.put(_OVERSIZED)
                dropping = True
                pending.clear()


class StdioPlayer:
    """Plays ``lines`` to ``out``, waiting for the client at every ``_sent`` line."""

    def __init__(
        self, lines: Sequence[Line], options: PlayOptions, stdin: StdinReader, out: BinaryIO, err: TextIO
    ) -> None:
        self._lines = lines
        self._options = options
        self._stdin = stdin
        self._out = out
        self._err = err
        self._ids = IdMap()
        self._signals: list[str] = []
        self._ahead: collections.deque[object] = collections.deque()
        self._last_t: float | None = None
        self._last_wall = time.monotonic()
        self._failed = False
        self._flush_now = True

    def install_signal_handlers(self) -> None:
        """Turn SIGINT into an event the recording can wait for (a ``_note`` ``signal``)."""
        signal.signal(signal.SIGINT, lambda signum, frame: self._signals.append("SIGINT"))

    def play(self) -> int:
        """Play everything, then serve until stdin closes; returns the exit status."""
        upcoming = _next_client_lines(self._lines)
        try:
            output = (LineKind.AGENT, LineKind.RAW)
            for index, (line, next_client) in enumerate(zip(self._lines, upcoming, strict=True)):
                if line.kind in output:
                    self._pace(line.t, next_client)
                    # a run of agent frames goes out in one write unless the recording is paced
                    following = self._lines[index + 1] if index + 1 < len(self._lines) else None
                    self._flush_now = self._options.realtime or following is None or following.kind not in output
                self._step(line)
            self._log(f"recording fully played ({len(self._lines)} lines); waiting for stdin to close")
            self._drain_after_end()
        except _Finished as finished:
            return finished.status
        return EXIT_MISMATCH if self._failed else 0

    # -- one line ------------------------------------------------------------------------------

    def _step(self, line: Line) -> None:
        if line.kind is LineKind.AGENT:
            text = json.dumps(line.value, separators=(",", ":"), ensure_ascii=False)
            if self._ids.touches(line.value, text):
                text = json.dumps(self._ids.rewrite(line.value), separators=(",", ":"), ensure_ascii=False)
            self._write_line(text)
        elif line.kind is LineKind.RAW:
            self._write_line(str(line.value))
        elif line.kind is LineKind.CLIENT:
            self._await_client(line)
        elif line.kind is LineKind.STDERR:
            self._err.write(f"{line.value}\n")
            self._err.flush()
        elif line.signal_name is not None:
            self._await_signal(line)
        elif line.exit_status is not None and self._options.exit_as_recorded:
            self._log(f"line {line.number}: the recorded process exited with status {line.exit_status}")
            raise _Finished(line.exit_status)

    def _pace(self, t: float | None, next_client: Line | None) -> None:
        """Wait out the recorded gap before an agent frame (``--realtime``), answering client frames
        that cannot be the next expected one meanwhile."""
        deadline = time.monotonic()
        if self._options.realtime and t is not None and self._last_t is not None:
            deadline = self._last_wall + min(max(t - self._last_t, 0.0), self._options.max_gap)
        self._answer_early(next_client, deadline)
        self._mark(t)

    def _mark(self, t: float | None) -> None:
        if t is not None:
            self._last_t = t
        self._last_wall = time.monotonic()

    def _write_line(self, text: str) -> None:
        try:
            self._out.write(_encode(text) + b"\n")
            if self._flush_now:
                self._out.flush()
        except (BrokenPipeError, ValueError, OSError):
            self._log("stdout closed by the client")
            raise _Finished(self._end_status(complete=False)) from None

    # -- waiting for the client ----------------------------------------------------------------

    def _take(self, timeout: float) -> object:
        """The next stdin item, read-ahead items first (None after ``timeout``)."""
        if self._ahead:
            return self._ahead.popleft()
        return self._stdin.get(timeout)

    def _answer_early(self, next_client: Line | None, deadline: float) -> None:
        """Until ``deadline``, answer client frames that cannot be the next expected one; a frame that
        can (or EOF) is kept for later and ends the early answering."""
        while True:
            remaining = deadline - time.monotonic()
            if self._ahead:
                if remaining > 0:
                    time.sleep(remaining)
                return
            item = self._stdin.get(timeout=max(0.0, remaining))
            if item is None:
                return
            if item is _EOF or item is _OVERSIZED:
                self._ahead.append(item)
                continue
            frame = self._parse(item, "while the agent was writing")
            if frame is _NOT_JSON:
                continue
            if next_client is not None and frame_kind(frame) == frame_kind(next_client.value):
                self._ahead.append(item)
                continue
            if next_client is None:
                self._complain(
                    f"unexpected client frame {describe_kind(frame_kind(frame))} after the last recorded one"
                )
                self._answer_unexpected(frame)
            else:
                self._mismatch(next_client, next_client.value, frame)

    def _await_client(self, line: Line) -> None:
        expected = line.value
        want = frame_kind(expected)
        while True:
            live = self._next_frame(line, f"client frame ({describe_kind(want)})")
            if frame_kind(live) == want:
                self._ids.learn(expected, live)
                self._mark(line.t)
                return
            self._mismatch(line, expected, live)

    def _await_signal(self, line: Line) -> None:
        name = line.signal_name
        while name not in self._signals:
            item = self._take(timeout=0.05)
            if item is None:
                continue
            if item is _EOF:
                self._log(f"line {line.number}: stdin closed while waiting for {name}")
                raise _Finished(self._end_status(complete=False))
            self._unexpected(item, f"while waiting for {name} (line {line.number})")
        self._signals.remove(str(name))
        self._mark(line.t)

    def _next_frame(self, line: Line, waiting_for: str) -> Any:
        while True:
            item = self._take(timeout=0.05)
            if item is None:
                if self._signals:
                    self._log(f"line {line.number}: {self._signals[0]} arrived while waiting for a {waiting_for}")
                    raise _Finished(130)
                continue
            if item is _EOF:
                self._log(f"line {line.number}: stdin closed while waiting for a {waiting_for}")
                raise _Finished(self._end_status(complete=False))
            frame = self._parse(item, f"line {line.number}")
            if frame is not _NOT_JSON:
                return frame

    def _parse(self, item: object, where: str) -> Any:
        if item is _OVERSIZED:
            self._complain(f"{where}: the client wrote a line longer than {MAX_LINE} bytes; dropped")
            return _NOT_JSON
        assert isinstance(item, bytes)
        text = item.decode("utf-8", errors="replace").strip()
        if not text:
            return _NOT_JSON
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            self._complain(f"{where}: the client wrote a line that is not JSON: {text[:200]!r}")
            return _NOT_JSON

    def _mismatch(self, line: Line, expected: Any, live: Any) -> None:
        if self._options.strict:
            self._err.write(_diff(line, expected, live))
            self._err.flush()
            raise _Finished(EXIT_MISMATCH)
        self._log(
            f"line {line.number}: expected a {describe_kind(frame_kind(expected))} frame, "
            f"got {describe_kind(frame_kind(live))}; treating it as unexpected"
        )
        self._answer_unexpected(live)

    def _unexpected(self, item: object, where: str) -> None:
        frame = self._parse(item, where)
        if frame is _NOT_JSON:
            return
        self._complain(f"unexpected client frame {describe_kind(frame_kind(frame))} {where}")
        self._answer_unexpected(frame)

    def _answer_unexpected(self, frame: Any) -> None:
        reply = error_reply(frame, jsonrpc_key=self._options.jsonrpc_key)
        if reply is not None:
            self._log(f"answered with an error: {json.dumps(reply)[:300]}")
            self._write_line(json.dumps(reply, separators=(",", ":"), ensure_ascii=False))

    def _drain_after_end(self) -> None:
        while True:
            item = self._take(timeout=0.05)
            if item is None:
                if self._signals:
                    self._log(f"signal {self._signals[0]} after the end of the recording")
                    raise _Finished(130 if not self._failed else EXIT_MISMATCH)
                continue
            if item is _EOF:
                raise _Finished(self._end_status(complete=True))
            self._unexpected(item, "after the end of the recording")

    # -- reporting -----------------------------------------------------------------------------

    def _end_status(self, *, complete: bool) -> int:
        if self._failed:
            return EXIT_MISMATCH
        if not complete and self._options.strict:
            return EXIT_INCOMPLETE
        return 0

    def _complain(self, message: str) -> None:
        if self._options.strict:
            self._failed = True
        self._log(message)

    def _log(self, message: str) -> None:
        try:
            self._err.write(f"[replay] {message}\n")
            self._err.flush()
        except (OSError, ValueError):
            pass


_NOT_JSON = object()


def _encode(text: str) -> bytes:
    """UTF-8; lone surrogates ``\\udc80``-``\\udcff`` become those raw bytes (how a recording spells
    invalid UTF-8), other lone surrogates their (invalid) UTF-8 encoding."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return text.encode("utf-8", "surrogatepass")


def _next_client_lines(lines: Sequence[Line]) -> list[Line | None]:
    """For each position, the next ``_sent`` line at or after it (None past the last one)."""
    upcoming: list[Line | None] = []
    following: Line | None = None
    for line in reversed(lines):
        if line.kind is LineKind.CLIENT:
            following = line
        upcoming.append(following)
    upcoming.reverse()
    return upcoming


def _diff(line: Line, expected: Any, live: Any) -> str:
    want, got = describe_kind(frame_kind(expected)), describe_kind(frame_kind(live))
    left = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    right = json.dumps(live, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    body = "\n".join(difflib.unified_diff(left, right, "recorded", "received", lineterm=""))
    return f"[replay] mismatch at recording line {line.number}: expected {want}, received {got}\n{body}\n"


def run_stdio(lines: Sequence[Line], options: PlayOptions) -> int:
    """Play ``lines`` on this process's stdin/stdout; returns the exit status."""
    reader = StdinReader(sys.stdin.fileno()).start()
    player = StdioPlayer(lines, options, reader, sys.stdout.buffer, sys.stderr)
    player.install_signal_handlers()
    return player.play()
