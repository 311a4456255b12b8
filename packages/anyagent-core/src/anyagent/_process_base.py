"""What every platform's agent child shares (``process`` and its two backends build on it).

``process`` is the public module; the OS-specific children live in ``_process_posix`` and
``_process_windows`` (one is imported, by ``sys.platform``). Both implement ``_Child`` and use the
pieces here: the bounded tail a drain thread feeds, the null streams, the exit-status text, the
bounded wait and discard of a half-started child, and the set of live children the ``atexit``
reaper in ``process`` walks.
"""

from __future__ import annotations

import collections
import os
import signal
import threading
from collections.abc import Callable, Mapping
from typing import Protocol

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["exit_status_text"]

_TAIL_LINE_CAP = 2048  # bytes kept of one stderr line
_KILL_WAIT = 5.0  # seconds to wait for a SIGKILLed leader to be reapable
_POLL_FIRST = 0.001
_POLL_MAX = 0.05


# ---------------------------------------------------------------------------------------------
# exit status


def exit_status_text(returncode: int | None) -> str:
    """Normalize a return code: ``"exit status: 1"``, ``"signal: 9 (SIGKILL)"``, or unknown."""
    if returncode is None:
        return "exit status: unknown"
    if returncode >= 0:
        return f"exit status: {returncode}"
    number = -returncode
    try:
        return f"signal: {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal: {number}"


# ---------------------------------------------------------------------------------------------
# the bounded tail of a drained pipe


class _Tail:
    """The last ``lines`` lines of a byte stream, each capped at ``cap`` bytes (thread-safe)."""

    def __init__(self, lines: int, cap: int = _TAIL_LINE_CAP) -> None:
        self._lines: collections.deque[str] = collections.deque(maxlen=max(1, lines))
        self._cap = cap
        self._partial = bytearray()
        self._cut = False
        self._lock = threading.Lock()
        self._listeners: tuple[Callable[[], None], ...] = ()

    def feed(self, data: bytes) -> None:
        """Add a chunk; whole lines beyond the window are never decoded. Then call the listeners."""
        parts = data.split(b"\n")
        with self._lock:
            self._extend(parts[0])
            if len(parts) > 1:
                self._push()
                middle = parts[1:-1]
                keep = self._lines.maxlen or 1
                for part in middle[-keep:]:
                    self._extend(part)
                    self._push()
                self._extend(parts[-1])
            for listener in self._listeners:
                listener()

    def listen(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every chunk fed: in the feeding thread, under the tail's lock
        (it must not block nor read the tail)."""
        with self._lock:
            self._listeners = (*self._listeners, listener)

    def unlisten(self, listener: Callable[[], None]) -> None:
        """Stop calling ``listener``; once this returns, no call of it is under way."""
        with self._lock:
            self._listeners = tuple(known for known in self._listeners if known is not listener)

    def lines(self) -> list[str]:
        """The finished lines of the tail (not the one still being written)."""
        with self._lock:
            return list(self._lines)

    def text(self) -> str:
        """The tail as text (lines joined by newlines, the unfinished line last)."""
        with self._lock:
            lines = list(self._lines)
            if self._partial or self._cut:
                lines.append(self._decode())
        return "\n".join(lines)

    def _extend(self, part: bytes) -> None:
        room = self._cap - len(self._partial)
        if len(part) > room:
            part = part[: max(0, room)]
            self._cut = True
        self._partial += part

    def _push(self) -> None:
        self._lines.append(self._decode())
        self._partial = bytearray()
        self._cut = False

    def _decode(self) -> str:
        text = self._partial.decode("utf-8", "replace").rstrip("\r")
        return text + " …" if self._cut else text


class _NoStdin(ByteSendStream):
    """stdin of a process spawned with ``stdin=False`` (it reads /dev/null)."""

    async def send(self, item: bytes) -> None:
        raise anyio.ClosedResourceError

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()


class _NoStdout(ByteReceiveStream):
    """stdout of a process spawned with ``drain_stdout=True`` (it goes to ``stdout_tail``)."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        raise anyio.ClosedResourceError

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()


# ---------------------------------------------------------------------------------------------
# the OS-specific child


class _Child(Protocol):
    """What ``AgentProcess`` needs from one spawned child, whatever the OS."""

    @property
    def pid(self) -> int:
        """The group leader's id (the reaper's on Linux, else the agent's)."""

    @property
    def agent_pid(self) -> int:
        """The agent's own process id."""

    @property
    def stdin(self) -> ByteSendStream: ...

    @property
    def stdout(self) -> ByteReceiveStream: ...

    def poll_exit(self) -> bool:
        """True once the leader has exited and been reaped (stragglers killed first)."""

    @property
    def returncode(self) -> int | None: ...

    def terminate_group(self) -> None:
        """Ask the whole group to exit (SIGTERM; on Windows this is the hard kill)."""

    def kill_group(self) -> None:
        """Kill the whole group (SIGKILL / TerminateJobObject). Never after the reap."""

    def escapees(self) -> list[tuple[int, str]]:
        """The live leader's descendants outside its group (Linux), to kill after the group."""

    def kill_escapees(self, escapees: list[tuple[int, str]]) -> None:
        """SIGKILL those of ``escapees`` that still run (never a reused process id)."""

    def close_streams(self) -> None:
        """Close our pipe ends and OS handles (after the reap, or when a launch is abandoned)."""

    def start_drain(self, tails: Mapping[str, _Tail]) -> _Drain:
        """Start draining stderr (and stdout when drained) into ``tails`` (and, POSIX, reaping)."""

    def stop_drain(self) -> None:
        """Let the drain go even if a pipe never reaches EOF (an escaped process holds it)."""


class _Drain(Protocol):
    """A running drain: a thread (Windows) or the POSIX reactor's job for one child."""

    def is_alive(self) -> bool:
        """False once every drained pipe reached EOF (and, POSIX, the leader was reaped)."""


def _close_fds(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            os.close(fd)


def _spawn_message(exe: str, cwd: str, exc: OSError) -> str:
    where = exc.filename if isinstance(exc.filename, str) else exe
    if where == cwd:
        return f"cannot start {exe}: working directory {cwd}: {exc.strerror or exc}"
    return f"cannot start {exe}: {exc.strerror or exc} ({where})"


async def _wait_exit(child: _Child) -> None:
    """Wait until the leader is reaped: the child's own ``wait_exited`` (a pidfd in the event
    loop, POSIX), else poll backing off to 50 ms."""
    waiter = getattr(child, "wait_exited", None)
    if waiter is not None:
        await waiter()
        return
    delay = _POLL_FIRST
    while not child.poll_exit():
        await anyio.sleep(delay)
        delay = min(delay * 2, _POLL_MAX)


async def _discard(child: _Child) -> None:
    """Kill a half-started child's group, reap it and close its pipes (shielded, bounded)."""
    with anyio.CancelScope(shield=True):
        child.kill_group()
        with anyio.move_on_after(_KILL_WAIT):
            await _wait_exit(child)
        child.close_streams()
        if not child.poll_exit():
            _register(child)  # the atexit reaper keeps trying


# ---------------------------------------------------------------------------------------------
# the live children (the atexit reaper in ``process`` kills what is left at exit)

_LIVE: set[_Child] = set()
_LIVE_LOCK = threading.Lock()


def _register(child: _Child) -> None:
    with _LIVE_LOCK:
        _LIVE.add(child)


def _unregister(child: _Child) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(child)
