"""The ``echo`` wire: what an adapter author writes once ``anyagent.toolkit`` does the rest.

``EchoAdapter.connect`` launches ``echo-agent`` with ``toolkit.launching`` (argv from the profile,
the environment, wire recording, and the process reaped if the handshake fails) and reads its
``hello``. ``EchoDriver`` hands the connection to a ``toolkit.DriverLoop`` — which reads frames and
commands, reports bad lines, survives a frame or command that raises, sends ``Exited`` when the
agent dies and stops it on ``Close`` — and supplies the two wire-specific parts:

* ``_on_frame``: a frame → ``translate`` → the engine; a ``permission`` is kept in a
  ``toolkit.RequestBook`` until it is answered (``AnswerRequest``) or declined (``Decline``);
* ``_on_command``: ``StartTurn`` → ``prompt``, ``AnswerRequest`` / ``Decline`` →
  ``permission_answer``, ``Cancel`` → ``cancel``; ``toolkit.refuse`` answers the rest (echo-agent
  cannot steer, compact, configure or roll back), the way the engine expects.

Every turn rule (queueing, open requests, tools left running, a cancel never confirmed) is the
engine's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, cast

import anyio

from anyagent import (
    AgentDetails,
    Authenticated,
    AuthStatus,
    Capabilities,
    Capability,
    DiagnosticCode,
    PermissionAnswer,
    ProtocolFailed,
    RequestOpened,
    SessionOptions,
    jsonread,
    seam,
    toolkit,
)
from anyagent.process import AgentProcess
from anyagent.wire import BadLine, Frame, JsonLines, WireRecorder

from .translate import translate, wire_decision

__all__ = ["CLOSE_GRACE", "PROTOCOL", "EchoAdapter", "EchoDriver"]

PROTOCOL = 1
"""The echo-agent protocol version this adapter speaks (the hello frame's ``protocol``)."""

CLOSE_GRACE = 2.0
"""Seconds echo-agent gets to exit after stdin closes (then SIGTERM, then SIGKILL)."""


class EchoAdapter(seam.Adapter):
    """Speaks the ``echo`` wire: launches echo-agent and hands back an ``EchoDriver``."""

    wire: ClassVar[str] = "echo"

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        """Spawn echo-agent and read its hello (``ProtocolFailed`` if it is not one,
        ``ProcessExited`` if it died first)."""
        async with toolkit.launching(request) as launch:
            if request.options.no_tools:
                launch.argv.append("--no-tools")
            process = await launch.spawn()
            lines = JsonLines(process)
            hello = await _read_hello(process, lines)
            return EchoDriver(process, lines, launch.recorder, _driver_info(hello, request.options))

    async def probe_auth(self, request: seam.ConnectRequest) -> AuthStatus | None:
        """echo-agent needs no login, so there is nothing to check."""
        return Authenticated()


async def _read_hello(process: AgentProcess, lines: JsonLines) -> Frame:
    """The first frame, checked to be echo-agent's hello in the protocol we speak."""
    try:
        frame = await lines.receive()
    except anyio.EndOfStream:
        raise await process.exit_error() from None
    if isinstance(frame, BadLine):
        raise ProtocolFailed(f"echo-agent's first line is not a hello frame ({frame.reason}): {frame.text[:200]!r}")
    if frame.get("type") != "hello":
        raise ProtocolFailed(f"echo-agent's first frame is {frame.get('type')!r}, not 'hello'")
    if frame.get("protocol") != PROTOCOL:
        raise ProtocolFailed(f"echo-agent speaks protocol {frame.get('protocol')!r}; this adapter speaks {PROTOCOL}")
    return frame


def _driver_info(hello: Mapping[str, Any], options: SessionOptions) -> seam.DriverInfo:
    """What the connection reports: the version from the hello, and only what echo-agent can do."""
    details = AgentDetails(
        version=jsonread.text(hello.get("version")),
        auth=Authenticated(),
        capabilities=Capabilities.of(Capability.PERMISSIONS),
    )
    return seam.DriverInfo(details=details, tools_disabled=options.no_tools and hello.get("tools") is False)


class EchoDriver(seam.Driver):
    """One running echo-agent. Made by ``EchoAdapter.connect``; the engine calls ``run`` once."""

    def __init__(
        self, process: AgentProcess, lines: JsonLines, recorder: WireRecorder | None, info: seam.DriverInfo
    ) -> None:
        self.info = info
        self._lines = lines
        self._requests: toolkit.RequestBook[str] = toolkit.RequestBook(self._deny)
        self._loop: toolkit.DriverLoop[Frame] = toolkit.DriverLoop(
            self._on_frame, self._on_command, recorder=recorder, close_grace=CLOSE_GRACE, name="echo-agent"
        )
        self._loop.attach(process, cast("toolkit.FrameSource[Frame]", lines))  # the loop takes the BadLines

    async def run(self, link: seam.DriverLink) -> None:
        """Serve the session until ``Close`` or the agent's death (the loop always reaps it)."""
        await self._loop.run(link)

    async def aclose(self) -> None:
        """Stop echo-agent without running the session (``open`` failed after ``connect``)."""
        await self._loop.shutdown()

    # -- agent → engine

    async def _on_frame(self, frame: Frame) -> None:
        event = translate(frame)
        if isinstance(event, seam.Content) and isinstance(event.kind, RequestOpened):
            request_id = event.kind.request.id
            self._requests.add(request_id, request_id)  # the wire's id is the engine's
        elif isinstance(event, seam.TurnEnd):
            self._forget_requests()  # the turn is over: echo-agent waits for no answer any more
        await self._loop.send(event)

    # -- engine → agent

    async def _on_command(self, command: seam.DriverCommand) -> None:
        if isinstance(command, seam.StartTurn):
            await self._prompt(command)
        elif isinstance(command, seam.AnswerRequest) and isinstance(command.answer, PermissionAnswer):
            request = self._requests.take(command.request_id)
            if request is not None:
                await self._answer(request, wire_decision(command.answer.choice))
        elif isinstance(command, seam.Decline):
            await self._requests.decline(command.request_id)
        elif isinstance(command, seam.Cancel):
            self._forget_requests()  # echo-agent's cancel stops waiting for every answer itself
            await self._write({"type": "cancel"})
        else:  # Steer, Compact, Configure, Rollback, a question's answer: not on this wire
            await toolkit.refuse(self._loop.link, command)

    async def _prompt(self, command: seam.StartTurn) -> None:
        attachments = len(command.input.attachments)
        if attachments:
            message = f"echo-agent reads text only: {attachments} attachment(s) not sent"
            await self._loop.diagnostic(message, DiagnosticCode.ATTACHMENT)
        prompt = {"type": "prompt", "turn": command.turn_id, "text": command.input.content}
        if not await self._write(prompt):
            await toolkit.refuse(self._loop.link, command, "echo-agent no longer reads its input")

    async def _answer(self, request: str, decision: str) -> None:
        await self._write({"type": "permission_answer", "request": request, "decision": decision})

    async def _deny(self, request: str) -> None:
        await self._answer(request, "deny")

    def _forget_requests(self) -> None:
        for request_id in self._requests.find(lambda _: True):
            self._requests.take(request_id)

    async def _write(self, frame: Frame) -> bool:
        return await self._loop.write(self._lines.send(frame))
