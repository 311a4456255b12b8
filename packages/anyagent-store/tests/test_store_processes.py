"""Real processes: a host killed with SIGKILL mid-turn, and two processes writing one SQLite store."""

from __future__ import annotations

import os
import selectors
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from anyagent import TextDelta
from anyagent_store import Store

HOST = Path(__file__).parent / "hosts" / "record_host.py"


def _line(proc: subprocess.Popen[str], prefix: str, timeout: float = 60.0) -> str:
    assert proc.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if selector.select(timeout=deadline - time.monotonic()):
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith(prefix):
                return line.split(maxsplit=1)[1].strip()
    proc.kill()
    raise AssertionError(f"the host never printed {prefix!r}: {proc.stderr.read() if proc.stderr else ''}")


async def _stored(path: Path, thread_id: str) -> tuple[int, str, int]:
    """(stored event count, the stored text deltas' text, the last stored delta's sequence)."""
    async with Store.sqlite(path) as store:
        thread = await store.thread(thread_id)
        history = await store.history(thread)
        deltas = [s.event for s in history if s.event is not None and isinstance(s.event.kind, TextDelta)]
        text = "".join(e.kind.text for e in deltas if isinstance(e.kind, TextDelta))
        return thread.event_count, text, deltas[-1].sequence if deltas else 0


def _wait_for_stored(path: Path, thread_id: str, last: bool, timeout: float = 60.0) -> int:
    """The thread's stored event count once the host has committed a first batch (``last``: the batch
    holding the "LAST" delta), polled read-only."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as conn:
            row = conn.execute("SELECT event_count FROM threads WHERE id = ?", (thread_id,)).fetchone()
            found = conn.execute(
                "SELECT count(*) FROM chunks WHERE thread_id = ? AND body LIKE '%LAST%'", (thread_id,)
            ).fetchone()
        conn.close()
        if row is not None and row[0] >= 1 and (found[0] or not last):
            return int(row[0])
        time.sleep(0.005)
    raise AssertionError(f"the host stored {'no LAST delta' if last else 'nothing'} in {timeout} s")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
@pytest.mark.parametrize("stalled", [False, True], ids=["at-once", "stalled"])
def test_sigkill_mid_turn_loses_at_most_the_unwritten_batches(tmp_path: Path, stalled: bool) -> None:
    path = tmp_path / "threads.db"
    proc = subprocess.Popen(
        [sys.executable, str(HOST), str(path), "kill", "3000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        thread_id = _line(proc, "THREAD")
        last_read = int(_line(proc, "READ"))
        # wait for real conditions, not times (a loaded machine is slow): a first batch committed, or (the
        # agent stalled mid-turn) everything read committed by the flush interval's timer
        written = _wait_for_stored(path, thread_id, last=stalled)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL
    count, text, last_stored = anyio.run(_stored, path, thread_id)
    read = "chunk " * 3000 + "LAST"
    if stalled:  # stalled mid-turn: the flush timer stored everything read (runs of deltas merged)
        assert written == count
        assert (text, last_stored) == (read, last_read)
    else:  # killed at once: the writes that began before the kill are whole, and in order
        assert 0 < written <= count
        assert read.startswith(text) and last_stored <= last_read
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_two_processes_on_one_sqlite_store_never_corrupt_it(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    threads, deltas = 25, 60
    procs = [
        subprocess.Popen(
            [sys.executable, str(HOST), str(path), "many", str(threads), str(deltas)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=180) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == "DONE"

    async def check() -> None:
        async with Store.sqlite(path) as store:
            page = await store.threads(limit=100)
            assert len(page.threads) == 2 * threads
            for thread in page.threads:
                history = await store.history(thread)
                assert [s.position for s in history] == list(range(1, thread.event_count + 1))
                said = [s.event.kind.text for s in history if s.event and isinstance(s.event.kind, TextDelta)]
                assert "".join(said) == "word " * deltas

    anyio.run(check)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_fresh_file_opens_while_another_process_holds_its_write_lock(tmp_path: Path) -> None:
    """Two processes opening one fresh file at once (an app and the CLI): the second one's switch to WAL
    meets the first one's write lock, where SQLite answers "locked" without waiting. It must wait."""
    path = tmp_path / "threads.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA user_version = 0")  # a fresh file in the default (rollback) journal mode
    holder.execute("BEGIN IMMEDIATE")  # what the other process holds while it switches or migrates

    def release() -> None:
        time.sleep(0.3)
        holder.execute("COMMIT")

    releaser = threading.Thread(target=release)
    releaser.start()

    async def open_it() -> int:
        async with Store.sqlite(path) as store:
            return len((await store.threads()).threads)

    try:
        assert anyio.run(open_it) == 0  # before the fix: StoreUnavailable "database is locked" at once
    finally:
        releaser.join()
        holder.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()
