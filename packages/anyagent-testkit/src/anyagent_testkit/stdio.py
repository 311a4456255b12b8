"""``JsonlProcess``: a raw JSON-lines client for an agent process (anyio; asyncio and trio).

In: an argv, environment and working directory. Out: a running process you ``send`` JSON objects
to and ``receive`` parsed stdout lines from (non-JSON lines arrive as ``RawLine``). Stderr is
drained all the time into a bounded tail; stdout lines are bounded by ``max_line``. Leaving the
``async with`` closes stdin, waits ``grace`` seconds, then SIGTERMs and finally SIGKILLs the whole
process group, and reaps it — nothing outlives the test.

::

    async with JsonlProcess.open([exe, "--acp"], env=env, cwd=workdir) as agent:
        await agent.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {...}})
        reply = await agent.receive_until(lambda frame: frame.get("id") == 1, timeout=60)
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs
from anyio.abc import Process, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["DEFAULT_MAX_LINE", "JsonlProcess", "ProcessEnded", "RawLine"]

DEFAULT_MAX_LINE = 64 * 1024 * 1024
"""The longest stdio line (64 MiB) read before the line is reported as too long."""
_SIGKILL = getattr(signal, "SIGKILL", signal.SIGTERM)
STDERR_TAIL = 64 * 1024
STDERR_SETTLE = 2.0
"""Seconds ``wait`` allows stderr to reach its end after the process exited."""


@attrs.frozen
class RawLine:
    """A stdout line that was not JSON (or was longer than ``max_line``: ``truncated``)."""

    text: str
    truncated: bool = False


class ProcessEnded(Exception):
    """Stdout closed (the process exited) while a frame was awaited; carries the stderr tail."""

    def __init__(self, message: str, stderr: str) -> None:
        super().__init__(f"{message}\n--- stderr tail ---\n{stderr[-4000:]}" if stderr else message)
        self.stderr = stderr


class JsonlProcess:
    """A child process spoken to in JSON lines. Build it with ``JsonlProcess.open(...)``."""

    def __init__(self, process: Process, max_line: int) -> None:
        self.process = process
        self.received: list[Any] = []
        self._max_line = max_line
        self._stderr = bytearray()
        self._stderr_ended = anyio.Event()
        send, receive = anyio.create_memory_object_stream[Any](math.inf)
        self._inbox_send: MemoryObjectSendStream[Any] = send
        self._inbox: MemoryObjectReceiveStream[Any] = receive
        self._write_lock = anyio.Lock()

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        argv: Sequence[str | Path],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        max_line: int = DEFAULT_MAX_LINE,
        grace: float = 5.0,
    ) -> AsyncIterator[JsonlProcess]:
        """Start ``argv`` in its own process group; stop and reap it on exit."""
        process = await anyio.open_process(
            [str(arg) for arg in argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=str(cwd) if cwd is not None else None,
            start_new_session=True,
        )
        client = cls(process, max_line)
        try:
            async with anyio.create_task_group() as group:
                client._start_readers(group)
                try:
                    yield client
                finally:
                    with anyio.CancelScope(shield=True):
                        await client._shutdown(grace)
                    group.cancel_scope.cancel()
        finally:
            client._inbox.close()
            client._inbox_send.close()
            with anyio.CancelScope(shield=True):
                await process.aclose()

    def _start_readers(self, group: TaskGroup) -> None:
        group.start_soon(self._read_stdout)
        group.start_soon(self._read_stderr)

    # -- talking -------------------------------------------------------------------------------

    async def send(self, frame: Any) -> None:
        """Write one frame as a compact JSON line."""
        await self.send_line(json.dumps(frame, separators=(",", ":"), ensure_ascii=False))

    async def send_line(self, text: str) -> None:
        """Write ``text`` plus a newline to stdin."""
        if self.process.stdin is None:
            raise RuntimeError("stdin is not a pipe")
        async with self._write_lock:
            await self.process.stdin.send(text.encode("utf-8") + b"\n")

    async def close_stdin(self) -> None:
        """Close stdin (the portable "please exit")."""
        if self.process.stdin is not None:
            await self.process.stdin.aclose()

    async def receive(self, timeout: float = 30.0) -> Any:
        """The next stdout frame (parsed JSON, or ``RawLine``). Raises ``ProcessEnded`` / ``TimeoutError``."""
        with anyio.fail_after(timeout):
            try:
                frame = await self._inbox.receive()
            except anyio.EndOfStream:
                raise ProcessEnded("the process closed its stdout", self.stderr) from None
        self.received.append(frame)
        return frame

    async def receive_until(self, predicate: Callable[[Any], bool], timeout: float = 30.0) -> list[Any]:
        """Frames up to and including the first one matching ``predicate`` (all within ``timeout``)."""
        frames: list[Any] = []
        with anyio.fail_after(timeout):
            while True:
                frame = await self.receive(timeout=math.inf)
                frames.append(frame)
                if _safe(predicate, frame):
                    return frames

    async def wait(self, timeout: float = 30.0) -> int:
        """Wait for the process to exit; its return code (negative: killed by that signal). Its
        stderr is read to the end first (up to ``STDERR_SETTLE`` s, in case a child keeps it open),
        so ``stderr`` holds what it wrote last."""
        with anyio.fail_after(timeout):
            status = await self.process.wait()
        with anyio.move_on_after(STDERR_SETTLE):
            await self._stderr_ended.wait()
        return status

    def send_signal(self, signum: signal.Signals) -> None:
        """Signal the process (just the leader)."""
        self.process.send_signal(signum)

    @property
    def stderr(self) -> str:
        """The last ``STDERR_TAIL`` bytes of stderr, decoded."""
        return self._stderr.decode("utf-8", errors="replace")

    # -- background readers --------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        pending = bytearray()
        skipping = False
        try:
            async for chunk in stream:
                pending += chunk
                skipping = await self._split(pending, skipping)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            if pending and not skipping:
                await self._deliver(bytes(pending))
            self._inbox_send.close()

    async def _split(self, pending: bytearray, skipping: bool) -> bool:
        while (cut := pending.find(b"\n")) >= 0:
            line = bytes(pending[:cut])
            del pending[: cut + 1]
            if skipping:
                skipping = False
            elif len(line) > self._max_line:
                await self._inbox_send.send(RawLine(line[:200].decode("utf-8", errors="replace"), truncated=True))
            else:
                await self._deliver(line)
        if len(pending) > self._max_line and not skipping:
            await self._inbox_send.send(RawLine(pending[:200].decode("utf-8", errors="replace"), truncated=True))
            pending.clear()
            return True
        if skipping:
            pending.clear()
        return skipping

    async def _deliver(self, line: bytes) -> None:
        text = line.decode("utf-8", errors="replace").rstrip("\r")
        if not text.strip():
            return
        try:
            frame: Any = json.loads(text)
        except json.JSONDecodeError:
            frame = RawLine(text)
        await self._inbox_send.send(frame)

    async def _read_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        try:
            async for chunk in stream:
                self._stderr += chunk
                del self._stderr[:-STDERR_TAIL]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            self._stderr_ended.set()

    async def _shutdown(self, grace: float) -> None:
        try:
            await self.close_stdin()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        for next_signal in (signal.SIGTERM, _SIGKILL):
            with anyio.move_on_after(grace):
                await self.process.wait()
                break
            self._signal_group(next_signal)
        await self.process.wait()
        self._signal_group(_SIGKILL)  # stragglers the leader left behind (node re-execs)

    def _signal_group(self, signum: signal.Signals) -> None:
        try:
            if hasattr(os, "killpg"):
                os.killpg(self.process.pid, signum)
            elif self.process.returncode is None:  # pragma: no cover - Windows: no process groups
                self.process.kill()
        except (ProcessLookupError, PermissionError):
            pass


def _safe(predicate: Callable[[Any], bool], frame: Any) -> bool:
    try:
        return bool(predicate(frame))
    except (AttributeError, KeyError, TypeError, IndexError):
        return False
