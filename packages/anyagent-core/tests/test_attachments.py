"""``anyagent.toolkit.read_attachment``: only regular files, bounded by bytes, never a blocking open,
cancellable. asyncio and trio."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from anyagent.toolkit import FileTooLarge, NotRegularFile, read_attachment

pytestmark = pytest.mark.anyio

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def release(fifo: Path) -> None:
    """Open the writing end, so a reader blocked in ``open`` (the bug) returns."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


async def test_a_regular_file_is_read_up_to_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"x" * 100)
    assert await read_attachment(path, 100) == b"x" * 100
    with pytest.raises(FileTooLarge) as info:
        await read_attachment(path, 99)
    assert info.value.size == 100 and info.value.limit == 99
    assert await read_attachment(path, 100, accept=lambda head: head.startswith(b"y")) is None
    assert await read_attachment(path, 100, accept=lambda head: len(head) == 16) == b"x" * 100
    with pytest.raises(FileNotFoundError):
        await read_attachment(tmp_path / "gone", 10)
    with pytest.raises(IsADirectoryError):
        await read_attachment(tmp_path, 10)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs procfs")
async def test_reads_are_bounded_by_bytes_not_by_st_size() -> None:
    status = Path("/proc/self/status")  # a regular file whose st_size (0) says less than it holds
    assert os.stat(status).st_size == 0
    with pytest.raises(FileTooLarge) as info:
        await read_attachment(status, 10)
    assert info.value.size is None
    assert len(await read_attachment(status, 1 << 20) or b"") > 10


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
async def test_a_device_is_refused_before_any_read() -> None:
    with anyio.fail_after(5):
        with pytest.raises(NotRegularFile, match="character device"):
            await read_attachment("/dev/zero", 1 << 40)


@needs_fifo
async def test_a_fifo_nobody_writes_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    try:
        with anyio.fail_after(5):
            with pytest.raises(NotRegularFile, match="FIFO"):
                await read_attachment(fifo, 1024)
    finally:
        release(fifo)
    assert time.monotonic() - started < 5


@needs_fifo
async def test_a_fifo_swapped_in_after_the_stat_is_refused_without_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    path = tmp_path / "swap"
    path.write_bytes(b"data")
    real_stat = os.stat

    def stat_then_swap(target: os.PathLike[str] | str, *args: object, **kwargs: object) -> os.stat_result:
        result = real_stat(target)
        if Path(target) == path:
            os.replace(fifo, path)  # the path becomes a FIFO between the stat and the open
        return result

    monkeypatch.setattr("anyagent.attachments.os.stat", stat_then_swap)
    try:
        with anyio.fail_after(5):
            with pytest.raises(NotRegularFile):
                await read_attachment(path, 1024)
    finally:
        release(path)


async def test_cancelling_a_read_returns_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "slow"
    path.write_bytes(b"data")
    real_read = os.read

    def slow_read(fd: int, count: int) -> bytes:
        time.sleep(2)  # a hung disk
        return real_read(fd, count)

    monkeypatch.setattr("anyagent.attachments.os.read", slow_read)
    started = time.monotonic()
    with anyio.move_on_after(0.2):
        await read_attachment(path, 1024)
    assert time.monotonic() - started < 1.5
