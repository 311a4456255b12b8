"""One running ``claude`` process and its control channel (launch, handshake, replies, close).

In: a ``toolkit.Launch`` (environment, cwd, recorder) and the argv of this process. Out: a
``Connection`` whose ``initialize`` answer is known, whose frames the driver loop reads
(``receive``: what the handshake read past first, then the wire), and whose ``control``
correlator matches the CLI's ``control_response`` frames to anyagent's control requests. A
launch or handshake failure becomes a typed ``AgentError`` (``ResumeFailed``, ``AuthRequired``,
``ProcessExited``, ``ProtocolFailed``, ``SpawnFailed``) and the process is gone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, Union

import anyio
import attrs

from anyagent import AgentError, AuthRequired, LoginMethod, ProcessExited, ProtocolFailed, ResumeFailed, toolkit
from anyagent import jsonread as j
from anyagent.process import AgentProcess
from anyagent.wire import BadLine, Correlator, JsonLines

from . import frames
from .translate import ControlReply

__all__ = ["CLOSE_GRACE", "CONTROL_TIMEOUT", "Connection", "ExitHints", "Incoming"]

CONTROL_TIMEOUT = 30.0
"""Seconds a control request may take before it is given up (the CLI answers in milliseconds)."""

CLOSE_GRACE = 2.0
"""Seconds ``claude`` gets after stdin EOF (it exits in about half a second) before SIGTERM."""

Incoming = Union[dict[str, Any], BadLine]
"""One line read from claude's stdout: the decoded JSON object, or a `BadLine` when it was not one."""


@attrs.frozen
class ExitHints:
    """Stderr fragments that type an early exit: a dead resume token, a logged-out CLI."""

    resume: tuple[str, ...] = ()
    auth: tuple[str, ...] = ()
    login: tuple[LoginMethod, ...] = ()


class Connection:
    """A spawned ``claude`` with its JSON-lines wire; ``open`` launches it and does ``initialize``."""

    def __init__(self, process: AgentProcess, lines: JsonLines) -> None:
        self.process = process
        self.lines = lines
        self.init: Mapping[str, Any] = {}
        self.backlog: deque[Incoming] = deque()
        self.control: Correlator[ControlReply] = Correlator()

    @classmethod
    async def open(cls, launch: toolkit.Launch, argv: Sequence[str], *, hints: ExitHints, resuming: bool) -> Connection:
        """Spawn ``argv`` with ``launch``'s environment and handshake (``initialize``); on any
        failure the process is already gone."""
        process = await launch.spawn(argv)
        connection = cls(process, JsonLines(process))
        try:
            reply = await connection.call_during_handshake("initialize", hints, resuming, hooks={})
            if not reply.ok:
                raise ProtocolFailed(f"Claude refused initialize: {reply.error or 'no reason given'}")
            connection.init = reply.body
        except BaseException:
            await connection.close(grace=0.5)
            raise
        return connection

    async def receive(self) -> Incoming:
        """The next frame for the driver loop: what the handshake read past first, then the wire
        (``anyio.EndOfStream`` at its end)."""
        if self.backlog:
            return self.backlog.popleft()
        return await self.lines.receive()

    def receive_nowait(self) -> Incoming:
        """``receive`` without waiting: a frame already read, else ``anyio.WouldBlock``. Once the
        backlog is empty this is the wire's own ``receive_nowait`` (one call less a frame; the
        driver loop looks it up again after every wait) until the handshake fills it again."""
        if self.backlog:
            return self.backlog.popleft()
        self.receive_nowait = self.lines.receive_nowait  # type: ignore[method-assign]
        return self.lines.receive_nowait()

    async def call_during_handshake(
        self, subtype: str, hints: ExitHints, resuming: bool = False, **fields: Any
    ) -> ControlReply:
        """Send a control request and read frames until its answer (others wait in ``backlog``).

        For use before the driver loop reads this connection. An exit before the answer raises
        a typed error.
        """
        request_id = self.control.open(subtype)
        try:
            try:
                await self.lines.send(frames.control_request(request_id, subtype, **fields))
            except (ProcessExited, ProtocolFailed):
                raise await self._exit_error(hints, resuming) from None
            while True:
                try:
                    frame = await self.lines.receive()
                except anyio.EndOfStream:
                    raise await self._exit_error(hints, resuming) from None
                reply = _reply_to(frame, request_id)
                if reply is not None:
                    return reply
                self.__dict__.pop("receive_nowait", None)  # the backlog is read first again
                self.backlog.append(frame)
        finally:
            self.control.cancel(request_id)

    async def _exit_error(self, hints: ExitHints, resuming: bool) -> AgentError:
        """Type an exit during the handshake by what the CLI said on stderr or in a result frame."""
        error = await self.process.exit_error()
        said = [self.process.stderr_tail]
        for frame in self.backlog:
            if isinstance(frame, dict) and frame.get("type") == "result":
                said.append(j.text(frame.get("result"), ""))
                said += [error for error in j.arr(frame.get("errors")) if isinstance(error, str)]
        text = "\n".join(part for part in said if part)
        if resuming and any(hint in text for hint in hints.resume):
            return ResumeFailed(_last_line(text) or "Claude could not find the conversation to resume")
        if any(hint in text for hint in hints.auth):
            return AuthRequired(hints.login, f"Claude Code is not logged in: {_last_line(text)}")
        return error

    def fail(self, error: str) -> None:
        """The CLI is gone: every control request still waiting gets an error answer now."""
        self.control.fail_all(lambda request_id, _label: ControlReply(request_id, False, {}, error))

    async def close(self, grace: float = CLOSE_GRACE) -> str:
        """Stop the process (stdin EOF, then signals); shielded and bounded. Returns its status."""
        self.fail("the Claude process was closed")
        return await self.process.aclose(grace)


def _reply_to(frame: Incoming, request_id: str) -> ControlReply | None:
    if not isinstance(frame, dict) or frame.get("type") != "control_response":
        return None
    response = j.obj(frame.get("response"))
    if response.get("request_id") != request_id:
        return None
    return ControlReply(
        request_id,
        response.get("subtype") == "success",
        dict(j.obj(response.get("response"))),
        j.text(response.get("error"), ""),
    )


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
