"""One running ``claude`` process and its control channel (launch, handshake, requests, close).

In: an argv, cwd, env and optional wire recorder. Out: a ``Connection`` whose ``initialize``
answer is known, that can send frames and control requests, and that reads frames for whoever
drives it. A launch or handshake failure becomes a typed ``AgentError`` (``ResumeFailed``,
``AuthRequired``, ``ProcessExited``, ``ProtocolFailed``, ``SpawnFailed``).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Union

import anyio
import attrs

from anyagent import AgentError, AuthRequired, LoginMethod, ProcessExited, ProtocolFailed, ResumeFailed
from anyagent.process import AgentProcess, spawn
from anyagent.wire import BadLine, JsonLines, WireRecorder

from . import frames
from ._json import as_dict, as_list, as_str
from .translate import ControlReply

__all__ = ["CONTROL_TIMEOUT", "Connection", "ExitHints", "Incoming"]

CONTROL_TIMEOUT = 30.0
"""Seconds a control request may take before it is given up (the CLI answers in milliseconds)."""

CLOSE_GRACE = 2.0
"""Seconds ``claude`` gets after stdin EOF (it exits in about half a second) before SIGTERM."""

_ids = itertools.count(1)

Incoming = Union[dict[str, Any], BadLine]
OnReply = Callable[[ControlReply], Awaitable[None]]


@attrs.frozen
class ExitHints:
    """Stderr fragments that type an early exit: a dead resume token, a logged-out CLI."""

    resume: tuple[str, ...] = ()
    auth: tuple[str, ...] = ()
    login: tuple[LoginMethod, ...] = ()


@attrs.define
class _Slot:
    done: anyio.Event = attrs.Factory(anyio.Event)
    reply: ControlReply | None = None
    on_reply: OnReply | None = None


def next_request_id() -> str:
    """A control request id that cannot collide with the CLI's own (uuids)."""
    return f"anyagent-{next(_ids)}"


class Connection:
    """A spawned ``claude`` with its JSON-lines wire; ``open`` launches it and does ``initialize``."""

    def __init__(self, process: AgentProcess, lines: JsonLines) -> None:
        self.process = process
        self.lines = lines
        self.init: Mapping[str, Any] = {}
        self.backlog: list[Incoming] = []
        self._pending: dict[str, _Slot] = {}
        self.reader_scope: anyio.CancelScope | None = None

    @classmethod
    async def open(
        cls,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        recorder: WireRecorder | None,
        hints: ExitHints,
        resuming: bool,
    ) -> Connection:
        """Launch and handshake (``initialize``); on any failure the process is already gone."""
        process = await spawn(argv, cwd=cwd, env=env, recorder=recorder)
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

    async def call_during_handshake(
        self, subtype: str, hints: ExitHints, resuming: bool = False, **fields: Any
    ) -> ControlReply:
        """Send a control request and read frames until its answer (others wait in ``backlog``).

        For use before a reader task runs. An exit before the answer raises a typed error.
        """
        request_id = next_request_id()
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
            self.backlog.append(frame)

    async def _exit_error(self, hints: ExitHints, resuming: bool) -> AgentError:
        """Type an exit during the handshake by what the CLI said on stderr or in a result frame."""
        error = await self.process.exit_error()
        said = [self.process.stderr_tail]
        for frame in self.backlog:
            if isinstance(frame, dict) and frame.get("type") == "result":
                said.append(as_str(frame.get("result")))
                said += [error for error in as_list(frame.get("errors")) if isinstance(error, str)]
        text = "\n".join(part for part in said if part)
        if resuming and any(hint in text for hint in hints.resume):
            return ResumeFailed(_last_line(text) or "Claude could not find the conversation to resume")
        if any(hint in text for hint in hints.auth):
            return AuthRequired(hints.login, f"Claude Code is not logged in: {_last_line(text)}")
        return error

    # -- requests while a reader runs

    async def send(self, frame: Mapping[str, Any]) -> None:
        """Write one frame (``ProcessExited``/``ProtocolFailed`` when the CLI is gone)."""
        await self.lines.send(frame)

    async def request(self, subtype: str, on_reply: OnReply | None = None, **fields: Any) -> str:
        """Send a control request; its answer goes to ``on_reply`` (or ``wait``). Returns its id."""
        request_id = next_request_id()
        self._pending[request_id] = _Slot(on_reply=on_reply)
        try:
            await self.lines.send(frames.control_request(request_id, subtype, **fields))
        except BaseException:
            self._pending.pop(request_id, None)
            raise
        return request_id

    async def call(self, subtype: str, timeout: float = CONTROL_TIMEOUT, **fields: Any) -> ControlReply:
        """Send a control request and wait (bounded) for its answer; needs a running reader."""
        request_id = await self.request(subtype, **fields)
        slot = self._pending[request_id]
        with anyio.move_on_after(timeout):
            await slot.done.wait()
        self._pending.pop(request_id, None)
        if slot.reply is None:
            return ControlReply(request_id, False, {}, f"no answer to {subtype} within {timeout:g} s")
        return slot.reply

    async def resolve(self, reply: ControlReply) -> bool:
        """Deliver an answer to the request it belongs to; False for answers nobody waits for."""
        slot = self._pending.get(reply.request_id)
        if slot is None:
            return False
        slot.reply = reply
        slot.done.set()
        if slot.on_reply is not None:
            del self._pending[reply.request_id]
            await slot.on_reply(reply)
        return True

    def fail_pending(self, error: str) -> None:
        """The CLI is gone: every waiting request gets an error answer now."""
        for request_id, slot in list(self._pending.items()):
            if slot.reply is None:
                slot.reply = ControlReply(request_id, False, {}, error)
                slot.done.set()
        self._pending.clear()

    async def close(self, grace: float = CLOSE_GRACE) -> str:
        """Stop the process (stdin EOF, then signals); shielded and bounded. Returns its status."""
        if self.reader_scope is not None:
            self.reader_scope.cancel()
        self.fail_pending("the Claude process was closed")
        return await self.process.aclose(grace)


def _reply_to(frame: Incoming, request_id: str) -> ControlReply | None:
    if not isinstance(frame, dict) or frame.get("type") != "control_response":
        return None
    response = as_dict(frame.get("response"))
    if response.get("request_id") != request_id:
        return None
    return ControlReply(
        request_id,
        response.get("subtype") == "success",
        dict(as_dict(response.get("response"))),
        as_str(response.get("error")),
    )


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
