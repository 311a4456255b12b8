"""Bounded, cancellable reads of files a user attached or an agent asked for
(``anyagent.toolkit.read_attachment``), shared by every adapter.

A path can name anything: a FIFO nobody writes (an ``open`` that never returns), ``/dev/zero`` (a
read that never ends), a file that grows while it is read. So: the file is opened non-blocking and
only a regular file is read (``NotRegularFile`` for a FIFO, a device or a socket,
``IsADirectoryError`` for a directory); every read stops at ``limit`` bytes, whatever ``st_size``
says (``FileTooLarge``); the work runs in a worker thread the caller's cancellation abandons, so a
slow disk never holds the event loop or a cancel.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from functools import partial
from pathlib import Path

import anyio.to_thread

__all__ = ["FileTooLarge", "NotRegularFile", "read_attachment"]

_CHUNK = 1024 * 1024
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """The path names a FIFO, a device or a socket: never read (it may block or never end)."""


class FileTooLarge(OSError):
    """The file holds more than the limit; ``size`` is its size when known."""

    def __init__(self, path: Path, size: int | None, limit: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {limit} bytes", str(path))
        self.size = size
        self.limit = limit


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check(path: Path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    kind = _kind(mode)
    message = kind if kind == "not a regular file" else f"not a regular file ({kind})"
    raise NotRegularFile(errno.EINVAL, message, str(path))


def _read_upto(fd: int, count: int, into: bytearray) -> None:
    """Append up to ``count`` bytes of ``fd`` to ``into`` (fewer at end of file)."""
    while count > 0:
        chunk = os.read(fd, min(count, _CHUNK))
        if not chunk:
            return
        into += chunk
        count -= len(chunk)


def read_attachment_sync(
    path: Path, limit: int, accept: Callable[[bytes], bool] | None = None, head: int = 16
) -> bytes | None:
    """``read_attachment`` in the calling thread."""
    _check(path, os.stat(path).st_mode)  # refuse before an open that has side effects on a device
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)  # what was opened, not what the path named a moment ago
        _check(path, info.st_mode)
        if info.st_size > limit:
            raise FileTooLarge(path, info.st_size, limit)
        data = bytearray()
        if accept is not None:
            _read_upto(fd, min(head, limit + 1), data)
            if not accept(bytes(data)):
                return None
        _read_upto(fd, limit + 1 - len(data), data)
        if len(data) > limit:  # it grew, or st_size said less than there is
            raise FileTooLarge(path, None, limit)
        return bytes(data)
    finally:
        os.close(fd)


async def read_attachment(
    path: str | os.PathLike[str], limit: int, *, accept: Callable[[bytes], bool] | None = None, head: int = 16
) -> bytes | None:
    """The bytes of the regular file ``path``, at most ``limit`` of them, read in a worker thread.

    ``accept`` (optional) sees the first ``head`` bytes; when it returns False the rest is not
    read and the result is None (Claude's adapter sniffs image magic this way).

    Raises ``NotRegularFile`` (a FIFO, device or socket: refused without a blocking open),
    ``IsADirectoryError``, ``FileTooLarge`` (more than ``limit`` bytes, by ``st_size`` or by what
    a bounded read found) and any other ``OSError`` of the stat, open or read. Cancelling the
    caller abandons the thread at once; the thread finishes its bounded read and closes the file.
    """
    job = partial(read_attachment_sync, Path(path), limit, accept, head)
    return await anyio.to_thread.run_sync(job, abandon_on_cancel=True)
