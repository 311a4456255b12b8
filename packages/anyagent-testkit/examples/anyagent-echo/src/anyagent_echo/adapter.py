"""The ``echo`` wire: launch echo-agent, handshake, and shuttle frames between it and the engine.

``EchoAdapter.connect(ConnectRequest)`` spawns ``<echo-agent> [--no-tools]`` with
``anyagent.process.spawn`` (its own process group, stderr drained, reaped on close), frames its
stdio with ``anyagent.wire.JsonLines`` (bounded lines; a bad line is a ``BadLine``, never an
exception), reads the ``hello`` frame and returns an ``EchoDriver``.

``EchoDriver.run(link)`` runs two loops until the session closes or the agent dies:

* the reader: every stdout frame → ``translate`` → ``link.send`` (a ``BadLine`` → a
  ``Diagnostic``); when stdout ends without a ``Close`` it reaps the agent and sends ``Exited``;
* the commands: ``StartTurn`` → a ``prompt`` frame (the agent's ``ack`` becomes ``TurnAck``, its
  ``done`` the one ``TurnEnd``), ``AnswerRequest`` → ``permission_answer``, ``Cancel`` →
  ``cancel``, ``Steer`` → ``SteerResult(False)`` (echo-agent cannot steer), ``Close`` → return.

It reports what echo-agent can do and nothing more: ``Capability.PERMISSIONS``. The engine owns
every turn rule (queueing, steering, request bookkeeping, the end of a cancelled turn).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import anyio

from anyagent import (
    AgentDetails,
    AgentError,
    Authenticated,
    AuthStatus,
    Capabilities,
    Capability,
    Diagnostic,
    DiagnosticInfo,
    DiagnosticLevel,
    Failed,
    PermissionAnswer,
    ProtocolFailed,
    SessionOptions,
    seam,
)
from anyagent.process import AgentProcess, spawn
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
        """Spawn echo-agent in ``options.cwd`` and read its hello (``ProtocolFailed`` if it is
        not one, ``ProcessExited`` if it died first). Cancelled or failed: the process is reaped."""
        options = request.options
        argv = [str(request.installation.executable_path), *_protocol_args(request)]
        if options.no_tools:
            argv.append("--no-tools")
        recorder = WireRecorder.open(options.record_wire_path) if options.record_wire_path is not None else None
        process: AgentProcess | None = None
        try:
            process = await spawn(argv, cwd=options.cwd, env=dict(request.env) or None, recorder=recorder)
            lines = JsonLines(process)
            hello = await _read_hello(process, lines)
        except BaseException:
            with anyio.CancelScope(shield=True):
                if process is not None:
                    await process.aclose(grace=CLOSE_GRACE)
                if recorder is not None:
                    recorder.close()
            raise
        return EchoDriver(process, lines, _driver_info(hello, options))

    async def probe_auth(self, request: seam.ConnectRequest) -> AuthStatus | None:
        """echo-agent needs no login, so there is nothing to check."""
        return Authenticated()


def _protocol_args(request: seam.ConnectRequest) -> tuple[str, ...]:
    """The installation's own args (a pinned binary), else the profile's."""
    if request.installation.args:
        return request.installation.args
    return request.profile.args if request.profile is not None else ()


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
    version = hello.get("version")
    details = AgentDetails(
        version=version if isinstance(version, str) else None,
        auth=Authenticated(),
        capabilities=Capabilities.of(Capability.PERMISSIONS),
    )
    return seam.DriverInfo(details=details, tools_disabled=options.no_tools and hello.get("tools") is False)


def _translated(frame: Frame) -> seam.DriverEvent:
    """``translate`` never raises (the conformance suite fuzzes it); should a bug slip through, one
    frame becomes an error diagnostic instead of ending the session."""
    try:
        return translate(frame)
    except Exception as exc:
        message = f"could not translate an echo-agent frame: {type(exc).__name__}: {exc}"
        return seam.Content(Diagnostic(DiagnosticInfo(message, DiagnosticLevel.ERROR, "translate_failed", frame)))


class EchoDriver(seam.Driver):
    """One running echo-agent. Made by ``EchoAdapter.connect``; the engine calls ``run`` once."""

    def __init__(self, process: AgentProcess, lines: JsonLines, info: seam.DriverInfo) -> None:
        self.info = info
        self._process = process
        self._lines = lines
        self._closing = False

    async def run(self, link: seam.DriverLink) -> None:
        """Serve the session until ``Close`` or the agent's death; always reap the agent."""
        try:
            await self._report_recording(link)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._read_wire, link, tg.cancel_scope)
                await self._serve(link)
                self._closing = True
                tg.cancel_scope.cancel()
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Stop and reap echo-agent, close the recording (shielded, bounded, idempotent)."""
        with anyio.CancelScope(shield=True):
            await self._process.aclose(grace=CLOSE_GRACE)
            if self._process.recorder is not None:
                self._process.recorder.close()

    # -- agent → engine

    async def _read_wire(self, link: seam.DriverLink, scope: anyio.CancelScope) -> None:
        """Every stdout frame, translated, in order; at the end of stdout, ``Exited``."""
        async for frame in self._lines:
            if isinstance(frame, BadLine):
                await link.diagnostic(f"echo-agent wrote {frame.reason}", code="bad_line", raw=frame.text)
            else:
                await link.send(_translated(frame))
            await self._report_recording(link)
        if not self._closing:
            status = await self._process.aclose(grace=CLOSE_GRACE)
            await link.exited(status, self._process.stderr_tail)
        scope.cancel()

    async def _report_recording(self, link: seam.DriverLink) -> None:
        recorder = self._process.recorder
        failure = recorder.take_failure() if recorder is not None else None
        if failure is not None:
            await link.diagnostic(failure, code="record_wire")

    # -- engine → agent

    async def _serve(self, link: seam.DriverLink) -> None:
        """Carry out commands until ``Close`` (or the engine drops the channel)."""
        async for command in link.commands:
            if isinstance(command, seam.Close):
                return
            await self._command(link, command)

    async def _command(self, link: seam.DriverLink, command: seam.DriverCommand) -> None:
        if isinstance(command, seam.StartTurn):
            await self._start_turn(link, command)
        elif isinstance(command, seam.AnswerRequest):
            await self._answer(link, command)
        elif isinstance(command, seam.Cancel):
            await self._write(link, {"type": "cancel"})
        elif isinstance(command, seam.Steer):
            await link.steered(False)  # echo-agent takes one prompt per turn: the engine queues it
        elif isinstance(command, seam.Compact):
            await link.diagnostic("echo-agent cannot compact its context", code="unsupported")
            await link.turn_end(Failed("echo-agent cannot compact its context"))
        else:  # Configure, Rollback: never sent, since echo-agent reports neither capability
            await link.diagnostic(f"echo-agent cannot {type(command).__name__.lower()}; ignored", code="unsupported")

    async def _start_turn(self, link: seam.DriverLink, command: seam.StartTurn) -> None:
        attachments = len(command.input.attachments)
        if attachments:
            await link.diagnostic(f"echo-agent reads text only: {attachments} attachment(s) not sent", code="text_only")
        prompt = {"type": "prompt", "turn": command.turn_id, "text": command.input.content}
        if not await self._write(link, prompt):
            await link.turn_ack()
            await link.turn_end(Failed("echo-agent no longer reads its input"))

    async def _answer(self, link: seam.DriverLink, command: seam.AnswerRequest) -> None:
        if not isinstance(command.answer, PermissionAnswer):
            await link.diagnostic("echo-agent asks no questions; the answer was dropped", code="unexpected_answer")
            return
        decision = wire_decision(command.answer.choice)
        await self._write(link, {"type": "permission_answer", "request": command.request_id, "decision": decision})

    async def _write(self, link: seam.DriverLink, frame: Frame) -> bool:
        """Send one frame; False (and a diagnostic) when the agent no longer reads."""
        try:
            await self._lines.send(frame)
        except AgentError as exc:
            await link.diagnostic(f"could not write to echo-agent: {exc}", code="write_failed")
            return False
        return True
