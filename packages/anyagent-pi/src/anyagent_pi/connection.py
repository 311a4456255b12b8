"""One running ``pi --mode rpc`` and its command channel (spawn, handshake calls, replies, close).

In: a ``toolkit.Launch`` and the argv of this process. Out: a ``Connection`` whose frames the
driver loop reads (``receive``: what the handshake read past first, then the wire) and whose
``calls`` correlator matches pi's ``response`` frames to anyagent's commands. pi echoes a
command's ``id`` in its ``response``; a command pi does not know is answered *without* an id
(``Unknown command: <type>``), so such a response goes to the oldest waiting command of that
type.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Union

import anyio

from anyagent import ProcessExited, ProtocolFailed
from anyagent import jsonread as j
from anyagent.process import AgentProcess
from anyagent.wire import BadLine, Correlator, JsonLines

__all__ = ["CALL_TIMEOUT", "CLOSE_GRACE", "Connection", "Incoming", "Reply"]

CALL_TIMEOUT = 30.0
"""Seconds a command may take before it is given up (pi answers queries in milliseconds)."""

CLOSE_GRACE = 2.0
"""Seconds pi gets after stdin EOF (it exits in about half a second) before SIGTERM."""

Incoming = Union[dict[str, Any], BadLine]
"""One line read from pi's stdout: the decoded JSON object, or a `BadLine` when it was not one."""
Reply = Mapping[str, Any]
"""A ``response`` frame: ``success``, ``data`` or ``error``."""


def failure(error: str) -> Reply:
    """A local stand-in for a response pi never sent."""
    return {"type": "response", "success": False, "error": error}


class Connection:
    """A spawned ``pi --mode rpc`` with its JSON-lines wire."""

    def __init__(self, process: AgentProcess) -> None:
        self.process = process
        self.lines = JsonLines(process)
        self.backlog: deque[Incoming] = deque()
        self.calls: Correlator[Reply] = Correlator(prefix="anyagent-")
        self._labels: dict[str, str] = {}

    async def receive(self) -> Incoming:
        """The next frame for the driver loop (``anyio.EndOfStream`` at the wire's end)."""
        if self.backlog:
            return self.backlog.popleft()
        return await self.lines.receive()

    def receive_nowait(self) -> Incoming:
        """``receive`` without waiting (no checkpoint): a frame already read, else
        ``anyio.WouldBlock``. The driver loop takes buffered frames this way; without it every
        frame paid a cancel scope and an awaited read. Once the backlog is empty this is the
        wire's own ``receive_nowait`` (one call less a frame; the driver loop looks it up again
        after every wait) until a handshake call fills it again."""
        if self.backlog:
            return self.backlog.popleft()
        self.receive_nowait = self.lines.receive_nowait  # type: ignore[method-assign]
        return self.lines.receive_nowait()

    def open(self, command: str, on_reply: Callable[[Reply], Awaitable[None]] | None = None) -> str:
        """A new command id (its response goes to ``on_reply`` or a ``wait``)."""
        request_id = self.calls.open(command, on_reply)
        self._labels[request_id] = command
        return request_id

    def forget(self, request_id: str) -> None:
        """Stop waiting for ``request_id``."""
        self._labels.pop(request_id, None)
        self.calls.cancel(request_id)

    async def resolve(self, frame: Mapping[str, Any]) -> bool:
        """Route a ``response`` frame to its waiter; False when nobody waits for it."""
        request_id = j.nonempty(frame.get("id"))
        if request_id is None or request_id not in self._labels:
            command = j.text(frame.get("command"), "")
            request_id = next((rid for rid, label in self._labels.items() if label == command), None)
            if request_id is None:
                return False
        self._labels.pop(request_id, None)
        return await self.calls.resolve(request_id, frame)

    async def call(self, command: str, *, timeout: float = CALL_TIMEOUT, **fields: Any) -> Reply:
        """Send a command during the handshake and read frames until its response (other frames
        wait in ``backlog``). An exit first raises the process's typed error."""
        request_id = self.open(command)
        try:
            try:
                await self.lines.send({"id": request_id, "type": command, **fields})
            except (ProcessExited, ProtocolFailed):
                raise await self.process.exit_error() from None
            with anyio.fail_after(timeout):
                while True:
                    try:
                        frame = await self.lines.receive()
                    except anyio.EndOfStream:
                        raise await self.process.exit_error() from None
                    if _answers(frame, request_id, command):
                        return frame  # type: ignore[return-value]
                    self.__dict__.pop("receive_nowait", None)  # the backlog is read first again
                    self.backlog.append(frame)
        except TimeoutError:
            raise ProtocolFailed(f"pi did not answer {command} within {timeout:g} s") from None
        finally:
            self.forget(request_id)

    def fail(self, error: str) -> None:
        """pi is gone: every command still waiting gets a failure now."""
        self._labels.clear()
        self.calls.fail_all(lambda _request_id, _label: failure(error))

    async def close(self, grace: float = CLOSE_GRACE) -> str:
        """Stop the process (stdin EOF, then signals); shielded and bounded."""
        self.fail("the pi process was closed")
        return await self.process.aclose(grace)


def _answers(frame: Incoming, request_id: str, command: str) -> bool:
    if not isinstance(frame, dict) or frame.get("type") != "response":
        return False
    if frame.get("id") is None:
        return frame.get("command") == command
    return j.nonempty(frame.get("id")) == request_id
