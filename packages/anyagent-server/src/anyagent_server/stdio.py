"""``anyagent serve`` over stdin/stdout: one JSON command per stdin line, one JSON line per output.

The hello line first; then commands are answered and sessions' lines written as they come. EOF on
stdin closes every session (an open still in flight too), writes their ``closed`` and returns 0.
A stdout that stops accepting writes (the reader closed it) ends serve: ``serve_stdio`` raises
``StdoutClosed`` carrying the ``OSError``.

Pipes and terminals are read and written without threads (non-blocking file descriptors polled by
the event loop, their flags restored on exit); regular files, and every file on Windows, go
through a worker thread. Reads are bounded: a line longer than ``max_line`` bytes is dropped as it
streams in (never buffered whole) and answered ``BadFrame``.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator

import anyio

from anyagent import AgentError, Runtime

from .hub import DEFAULT_MAX_LINE, DEFAULT_REPLAY, Hub, Peer

__all__ = ["StdoutClosed", "read_lines", "serve_stdio"]

_CHUNK = 256 * 1024


class StdoutClosed(AgentError):
    """The process reading serve's stdout stopped accepting writes (``__cause__`` says how)."""


def _pollable(fd: int) -> bool:
    if sys.platform == "win32":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class _Fd:
    """One file descriptor, read or written without blocking the event loop."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.poll = _pollable(fd)
        self._blocking: bool | None = None
        if self.poll:
            self._blocking = os.get_blocking(fd)
            os.set_blocking(fd, False)

    def restore(self) -> None:
        if self._blocking is not None:
            try:
                os.set_blocking(self.fd, self._blocking)
            except OSError:
                pass

    async def read(self) -> bytes:
        if not self.poll:
            return await anyio.to_thread.run_sync(os.read, self.fd, _CHUNK, abandon_on_cancel=True)
        while True:
            try:
                return os.read(self.fd, _CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)

    async def write(self, data: bytes) -> None:
        if not self.poll:
            await anyio.to_thread.run_sync(_write_all, self.fd, data)
            return
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            view = view[written:]
        await anyio.lowlevel.checkpoint_if_cancelled()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def read_lines(read: _Fd, max_line: int) -> AsyncIterator[tuple[bytes | None, int | None]]:
    """``(line, None)`` per line, ``(None, size)`` for a line longer than ``max_line`` (dropped)."""
    partial = bytearray()
    skipping = -1  # >= 0: bytes of an over-long line dropped so far
    while True:
        chunk = await read.read()
        if not chunk:
            if skipping >= 0:
                yield None, skipping
            elif partial:
                yield bytes(partial), None
            return
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                rest = len(chunk) - start
                if skipping >= 0:
                    skipping += rest
                elif len(partial) + rest > max_line:
                    skipping = len(partial) + rest
                    partial.clear()
                else:
                    partial += chunk[start:]
                break
            piece = chunk[start:newline]
            start = newline + 1
            if skipping >= 0:
                yield None, skipping + len(piece)
                skipping = -1
            elif len(partial) + len(piece) > max_line:
                yield None, len(partial) + len(piece)
                partial.clear()
            elif partial:
                partial += piece
                line = bytes(partial)
                partial.clear()
                yield line, None
            else:
                yield piece, None


async def serve_stdio(
    runtime: Runtime,
    *,
    stdin: int = 0,
    stdout: int = 1,
    max_line: int = DEFAULT_MAX_LINE,
    replay: int = DEFAULT_REPLAY,
) -> int:
    """Serve ``runtime`` (already entered) on ``stdin``/``stdout`` until stdin ends; returns 0.

    Raises ``StdoutClosed`` when stdout stops accepting writes.
    """
    reader = _Fd(stdin)
    writer = _Fd(stdout) if stdout != stdin else reader
    try:

        async def send(text: str) -> None:
            await writer.write(text.encode("utf-8", "surrogatepass") + b"\n")

        peer = Peer(send, "stdio", joins_lines=True)
        async with Hub(runtime, max_line=max_line, replay=replay) as hub:
            await peer.write(hub.hello())
            async with anyio.create_task_group() as tg:

                async def watch_broken() -> None:
                    await peer.broken.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(watch_broken)
                async for line, too_long in read_lines(reader, max_line):
                    await hub.receive(peer, line, too_long=too_long)
                    if peer.error is not None:
                        break
                with anyio.CancelScope(shield=True):
                    await hub.shutdown(peer)
                tg.cancel_scope.cancel()
        if peer.error is not None:
            raise StdoutClosed(f"stdout stopped accepting writes: {peer.error}") from peer.error
        return 0
    finally:
        reader.restore()
        if writer is not reader:
            writer.restore()
