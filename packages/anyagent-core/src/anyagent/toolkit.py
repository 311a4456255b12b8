"""What every adapter needs under the seam (``anyagent.toolkit``): composable parts, no base class.

An adapter holds its profile, its translator and its wire-specific commands; the rest is here::

    class MyAdapter(seam.Adapter):
        wire = "mine"

        async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
            async with toolkit.launching(request) as launch:   # a failure reaps what it started
                process = await launch.spawn()                  # argv + env from the profile
                lines = JsonLines(process)
                hello = await read_hello(lines)                 # typed errors on a bad handshake
                return MyDriver(process, lines, launch.recorder, hello)

    class MyDriver(seam.Driver):
        def __init__(self, process, lines, recorder, hello):
            self.info = ...
            self.loop = toolkit.DriverLoop(self._on_frame, self._on_command, recorder=recorder)
            self.loop.attach(process, lines)

        async def run(self, link):
            await self.loop.run(link)                          # returns on Close or the agent's death

        async def aclose(self):
            await self.loop.shutdown()

        async def _on_frame(self, frame): ...                  # translate, then self.loop.link.send(...)
        async def _on_command(self, command): ...              # StartTurn, Steer, … (toolkit.refuse
                                                               # for what the wire cannot do)

What the loop does for every adapter: reads frames in one task and commands in another, in
order; a ``BadLine`` → ``Diagnostic(bad_line)``, a JSON-RPC ``Stray`` → ``Diagnostic(unknown_frame)``;
a frame whose handler raises → one ``Diagnostic(frame_error)`` with the frame in ``raw`` (an
agent request it could not handle is answered ``-32603``) and the session goes on; a command
whose handler raises is refused the way the engine expects (``command_failed``); the end of
the agent's output → the process reaped and ``Exited(status, stderr tail)`` sent once; a
recording failure → ``Diagnostic(record_wire)``; ``Close`` → the agent stopped (stdin EOF, then
signals), the adapter's ``cleanup`` run, the recorder closed — shielded and bounded, on every
path. ``attach`` swaps the connection under a running loop (Claude Code's relaunch for fast mode).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Generic, Protocol, TypeVar

import anyio
import anyio.abc
import attrs

from . import seam
from ._modes import PORTABLE_MODES, describe_modes, mode_aliases
from .attachments import FileTooLarge, NotRegularFile, read_attachment
from .errors import AgentError, ProcessExited, ProtocolFailed
from .history import JsonLinesSample, history_time, read_json_lines_sample, sample_json_lines, title_line, unreadable
from .installation import AgentInstallation, AgentProfile
from .options import SessionOptions
from .process import CLOSE_GRACE, AgentProcess, spawn
from .types import (
    JSON,
    Cancelled,
    DiagnosticCode,
    DiagnosticLevel,
    Failed,
    LoginMethod,
    TerminalLogin,
)
from .wire import (
    INTERNAL_ERROR,
    BadLine,
    IncomingRequest,
    Notification,
    Response,
    Stray,
    WireRecorder,
)

__all__ = [
    "PORTABLE_MODES",
    "DriverLoop",
    "FileTooLarge",
    "FrameSource",
    "JsonLinesSample",
    "Launch",
    "NotRegularFile",
    "RequestBook",
    "frame_json",
    "history_time",
    "launch_argv",
    "launch_env",
    "launching",
    "describe_modes",
    "mode_aliases",
    "login_methods",
    "open_recorder",
    "read_attachment",
    "read_json_lines_sample",
    "refuse",
    "sample_json_lines",
    "title_line",
    "unreadable",
    "wait_for_listening",
]

F = TypeVar("F")
F_co = TypeVar("F_co", covariant=True)
T = TypeVar("T")

LISTEN_TIMEOUT = 20.0
"""Seconds ``wait_for_listening`` waits for a server's "listening" line by default."""


# ---------------------------------------------------------------------------------------------
# launching


def launch_argv(request: seam.ConnectRequest, default_args: Sequence[str] = ()) -> list[str]:
    """``[executable, *args]``: the installation's own args (a pinned binary, a custom ACP agent)
    win over the profile's protocol args, which win over ``default_args``."""
    installation, profile = request.installation, request.profile
    args = installation.args or (profile.args if profile is not None and profile.args else tuple(default_args))
    return [str(installation.executable_path), *args]


def launch_env(request: seam.ConnectRequest, defaults: Mapping[str, str] | None = None) -> dict[str, str]:
    """The launch environment, in one precedence for every adapter, lowest first:

    1. ``defaults`` (the adapter's own), then the profile's ``env`` quirk, then its ``root_env``
       quirk when running as root — verified per-agent facts, used as defaults;
    2. the caller's environment: ``request.env`` (the host's environment plus the config-home
       variable ``SessionOptions.config_home`` asked for), or this process's when it is empty.

    So a variable the user exported always wins over a profile's default for it.
    """
    env: dict[str, str] = dict(defaults or {})
    quirks = request.profile.quirks if request.profile is not None else {}
    env.update(_str_map(quirks.get("env")))
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env.update(_str_map(quirks.get("root_env")))
    env.update(request.env or os.environ)
    return env


def login_methods(
    installation: AgentInstallation, profile: AgentProfile | None, options: SessionOptions
) -> tuple[LoginMethod, ...]:
    """The profile's login methods as this installation runs them: a ``TerminalLogin`` whose
    command starts with one of the profile's executable names runs this installation's executable,
    and carries the config-home variable ``options.config_home`` set (so the login lands there)."""
    if profile is None:
        return ()
    env: dict[str, str] = {}
    if options.config_home_dir is not None and profile.config_home_env:
        env[profile.config_home_env] = str(options.config_home_dir)
    methods: list[LoginMethod] = []
    for method in profile.login:
        if isinstance(method, TerminalLogin):
            command = method.command
            if command and command[0] in profile.executables:
                command = (str(installation.executable_path), *command[1:])
            method = TerminalLogin(command, method.description, {**method.env, **env})
        methods.append(method)
    return tuple(methods)


def _str_map(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def open_recorder(request: seam.ConnectRequest) -> WireRecorder | None:
    """The wire recorder ``SessionOptions.record_wire`` asked for, or None. Never raises: a path
    that cannot be opened gives a recorder whose failure the loop reports as a diagnostic."""
    path = request.options.record_wire_path
    return WireRecorder.open(path) if path is not None else None


@attrs.define
class Launch:
    """One connect attempt: the request, its argv and environment, the recorder, and the processes
    started so far. ``launching`` reaps those and closes the recorder if the attempt fails."""

    request: seam.ConnectRequest
    argv: list[str]
    env: dict[str, str]
    recorder: WireRecorder | None
    processes: list[AgentProcess] = attrs.Factory(list)
    close_grace: float = CLOSE_GRACE

    async def spawn(self, argv: Sequence[str] | None = None, **kwargs: Any) -> AgentProcess:
        """Start ``argv`` (default: ``self.argv``) in the session's directory with this launch's
        environment and recorder; ``SpawnFailed`` if it cannot start. ``kwargs`` go to
        ``anyagent.process.spawn`` (``drain_stdout=True`` for HTTP servers)."""
        process = await spawn(
            list(argv) if argv is not None else self.argv,
            cwd=self.request.options.cwd,
            env=self.env,
            recorder=self.recorder,
            **kwargs,
        )
        self.processes.append(process)
        return process

    async def abandon(self) -> None:
        """Reap every process this launch started and close the recorder (shielded, bounded)."""
        with anyio.CancelScope(shield=True):
            for process in self.processes:
                await process.aclose(grace=min(self.close_grace, 0.5))
            if self.recorder is not None:
                self.recorder.close()


@asynccontextmanager
async def launching(
    request: seam.ConnectRequest,
    *,
    default_args: Sequence[str] = (),
    env_defaults: Mapping[str, str] | None = None,
    record: bool = True,
) -> AsyncIterator[Launch]:
    """A ``Launch`` for ``request`` whose processes and recorder are cleaned up if the block
    raises or is cancelled (a failed handshake, ``HANDSHAKE_TIMEOUT``); on success they belong to
    whatever the block returned. ``record=False`` for side launches (probes) that never record."""
    launch = Launch(
        request,
        launch_argv(request, default_args),
        launch_env(request, env_defaults),
        open_recorder(request) if record else None,
    )
    try:
        yield launch
    except BaseException:
        await launch.abandon()
        raise


async def wait_for_listening(
    process: AgentProcess,
    pattern: str | re.Pattern[str],
    *,
    timeout: float = LISTEN_TIMEOUT,
    stderr: bool = False,
) -> re.Match[str]:
    """Wait until the server ``process`` prints a line matching ``pattern`` (e.g.
    ``r"listening on (http://127\\.0\\.0\\.1:\\d+)"``) while watching it: spawn it with
    ``drain_stdout=True`` (stdout keeps draining afterwards, so the pipe never fills).

    Returns the match. Raises ``ProcessExited`` (with the stderr tail) if the process exits first
    and ``ProtocolFailed`` if ``timeout`` passes; the caller reaps the process either way.
    """
    regex = re.compile(pattern) if isinstance(pattern, str) else pattern
    with anyio.move_on_after(timeout):
        found = await process.wait_for_line(regex, stderr=stderr)  # woken by the output: no polling lag
        if found is not None:
            return found
        raise await process.exit_error()
    where = "stderr" if stderr else "stdout"
    raise ProtocolFailed(f"the agent printed no line matching {regex.pattern!r} on {where} within {timeout:g} s")


# ---------------------------------------------------------------------------------------------
# the run loop


class FrameSource(Protocol[F_co]):
    """What the loop reads: ``JsonLines``, ``JsonRpcPeer`` or anything with ``receive()`` that
    raises ``anyio.EndOfStream`` at the end."""

    async def receive(self) -> F_co:
        """The next frame; raises `anyio.EndOfStream` when the source is done."""


def frame_json(frame: object) -> JSON:
    """A wire message as the JSON it came as, for ``DiagnosticInfo.raw``."""
    if isinstance(frame, dict):
        return frame
    if isinstance(frame, Notification):
        return {"method": frame.method, "params": frame.params}
    if isinstance(frame, IncomingRequest):
        return {"id": frame.id, "method": frame.method, "params": frame.params}
    if isinstance(frame, Response):
        if frame.error is not None:
            error = {"code": frame.error.code, "message": frame.error.message, "data": frame.error.data}
            return {"id": frame.id, "error": error}
        return {"id": frame.id, "result": frame.result}
    if isinstance(frame, Stray):
        return frame.frame
    if isinstance(frame, BadLine):
        return frame.text
    return repr(frame)


EXIT_DRAIN = 0.5
"""Seconds the loop keeps reading after the agent's leader exited while its output stays open
(a grandchild in another session holds the pipe): each wait for a frame gets this long, all of
them together at most ``EXIT_DRAIN_MAX``; then the agent counts as gone (``Exited``)."""

EXIT_DRAIN_MAX = 5.0


class _Exit:
    """Watches a reader's process: once the leader exits, a wait for the next frame is bounded
    by ``EXIT_DRAIN`` (trailing output still drains) and the whole drain by ``EXIT_DRAIN_MAX``."""

    def __init__(self) -> None:
        self._gone_at: float | None = None
        self._scope: anyio.CancelScope | None = None

    def _deadline(self) -> float:
        if self._gone_at is None:
            return math.inf
        return min(anyio.current_time() + EXIT_DRAIN, self._gone_at + EXIT_DRAIN_MAX)

    @contextmanager
    def receiving(self) -> Iterator[anyio.CancelScope]:
        """A scope for one receive: cancelled when the leader is gone and no frame came in time."""
        with anyio.CancelScope(deadline=self._deadline()) as scope:
            self._scope = scope
            try:
                yield scope
            finally:
                self._scope = None

    async def watch(self, process: AgentProcess) -> None:
        # not ``wait()``: the recorder's exit note comes with ``Exited``; ``exited`` waits on a
        # pidfd where there is one, so a quiet session costs no wakeups
        exited = getattr(process, "exited", None)
        if exited is not None:
            await exited()
        else:
            delay = 0.005
            while process.status is None:
                await anyio.sleep(delay)
                delay = min(delay * 2, 0.1)
        self._gone_at = anyio.current_time()
        if self._scope is not None:
            self._scope.deadline = self._deadline()


class DriverLoop(Generic[F]):
    """The run loop of one driver; see the module docstring. Generic in the frame type ``F``.

    ``on_frame(frame)`` gets every frame but bad lines and strays, in wire order; ``fast_frame``
    (optional, synchronous) sees each of those frames first, and the event it returns for one is
    sent to the engine as is, in place of ``on_frame`` (the flood's path: no coroutine of the
    adapter's per text delta; None hands the frame to ``on_frame``; an exception in either is a
    frame the adapter could not handle; the event goes through ``DriverLink.offer``, the engine's
    in-place take without a coroutine, and ``send`` when that declines; a bare ``TextDelta`` is
    its ``Content``);
    ``on_command(command)`` every ``DriverCommand`` but ``Close``, in order. ``on_exit(error)``
    runs when the agent's output ends by itself, before ``Exited`` is sent (fail waiters
    there); ``cleanup()`` runs first in ``shutdown`` (stop terminals, side tasks). ``name`` is how
    messages call the agent ("Claude Code"). ``close_grace`` / ``eof_grace``: the stop ladder's
    waits (``AgentProcess.aclose``); ``eof_grace=0`` for an agent that ignores stdin EOF.
    """

    def __init__(
        self,
        on_frame: Callable[[F], Awaitable[None]],
        on_command: Callable[[seam.DriverCommand], Awaitable[None]],
        *,
        fast_frame: Callable[[F], seam.DriverEvent | None] | None = None,
        recorder: WireRecorder | None = None,
        on_exit: Callable[[AgentError], Awaitable[None]] | None = None,
        cleanup: Callable[[], Awaitable[None]] | None = None,
        close_grace: float = CLOSE_GRACE,
        eof_grace: float | None = None,
        name: str = "the agent",
    ) -> None:
        self._on_frame = on_frame
        self._fast_frame = fast_frame
        self._on_command = on_command
        self._on_exit = on_exit
        self._cleanup = cleanup
        self.recorder = recorder
        self.close_grace = close_grace
        self.eof_grace = eof_grace
        self.name = name
        self.process: AgentProcess | None = None
        self.source: FrameSource[F | BadLine | Stray] | None = None
        self._link: seam.DriverLink | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._generation = 0
        self._write_reported = -1
        self._shut = False
        self.closing = False
        """True once the session is closing (``Close`` arrived or ``run`` is ending)."""

    # -- the connection

    def attach(self, process: AgentProcess, source: FrameSource[F | BadLine | Stray]) -> None:
        """Read ``source`` (frames of ``process``) from now on. Under a running loop the previous
        connection's reader stops quietly: its end is not the agent's death. The caller closes the
        previous process (``await old.aclose()``) when it is done with it."""
        self._generation += 1
        self.process, self.source = process, source
        if self._tg is not None:
            self._tg.start_soon(self._read, process, source, self._generation)

    def detach(self) -> None:
        """Stop reading the current connection quietly, for a relaunch that must close the old
        process before it starts the new one (a resume of the same conversation must not run
        twice): its end is then not the agent's death. ``attach`` the new connection next, or
        ``exit`` when it cannot start."""
        self._generation += 1

    @property
    def link(self) -> seam.DriverLink:
        """The engine's link (only while ``run`` runs)."""
        if self._link is None:
            raise RuntimeError("the driver loop is not running")
        return self._link

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run ``func(*args)`` in the loop's task group (cancelled when the session ends)."""
        if self._tg is None:
            raise RuntimeError("the driver loop is not running")
        self._tg.start_soon(func, *args)

    # -- running

    async def run(self, link: seam.DriverLink) -> None:
        """Serve the session until ``Close`` or the agent's death; always shut down."""
        self._link = link
        self.send = link.send  # type: ignore[method-assign]  # the same (the link stays), one call less per event
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                if self.process is not None and self.source is not None:
                    tg.start_soon(self._read, self.process, self.source, self._generation)
                await self._report_recording()
                async for command in link.commands:
                    if isinstance(command, seam.Close):
                        break
                    try:
                        await self._on_command(command)
                    except Exception as exc:  # an adapter bug refuses one command, never the session
                        await self._command_failed(command, exc)
                self.closing = True
                tg.cancel_scope.cancel()
        finally:
            self.closing = True
            self._tg = None
            await self.shutdown()

    async def shutdown(self) -> None:
        """Run ``cleanup``, stop the agent, close the recorder. Shielded, bounded, idempotent; what
        ``Driver.aclose`` calls when ``open`` failed after ``connect``."""
        if self._shut:
            return
        self._shut = True
        self.closing = True
        with anyio.CancelScope(shield=True):
            if self._cleanup is not None:
                try:
                    await self._cleanup()
                except Exception:  # cleanup must not keep the agent alive
                    pass
            if self.process is not None:
                await self.process.aclose(self.close_grace, self.eof_grace)
            if self.recorder is not None:
                self.recorder.close()

    async def exit(self, status: str, stderr: str = "") -> None:
        """End the session now as if the agent died (``Exited``): a relaunch that failed."""
        await self.send(seam.Exited(status, stderr))
        self.closing = True
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    # -- reading

    async def _read(self, process: AgentProcess, source: FrameSource[F | BadLine | Stray], generation: int) -> None:
        """Read frames until the output ends or, once the leader exited, it falls quiet (``_Exit``)."""
        leader = _Exit()
        async with anyio.create_task_group() as watch:
            watch.start_soon(leader.watch, process)
            try:
                await self._read_frames(source, generation, leader)
            finally:
                watch.cancel_scope.cancel()
        if generation != self._generation or self.closing:
            return
        await self._died(process)

    async def _read_frames(self, source: FrameSource[F | BadLine | Stray], generation: int, leader: _Exit) -> None:
        on_frame = self._on_frame
        fast = self._fast_frame
        send = self.send  # the link's own while the loop runs (``run`` sets it before the readers start)
        link = self._link
        offer = link.offer if link is not None else None  # the engine's in-place take, no coroutine
        recorder = self.recorder
        # frames already read from the pipe are taken without a wait (and without a cancel scope:
        # only a wait for the pipe can outlast the leader)
        nowait: Callable[[], F | BadLine | Stray] | None = getattr(source, "receive_nowait", None)
        while True:
            try:
                try:
                    if nowait is None:
                        raise anyio.WouldBlock
                    frame = nowait()
                except anyio.WouldBlock:
                    with leader.receiving() as scope:
                        frame = await source.receive()
                    if scope.cancelled_caught:
                        break  # the leader is gone and its output fell quiet: something else holds the pipe
                    # looked up anew after each wait: a source may swap in a cheaper one (its own
                    # backlog drained)
                    nowait = getattr(source, "receive_nowait", None)
            except anyio.EndOfStream:
                break
            except Exception as exc:  # a wire broken mid-frame is the agent's end, not our crash
                await self.diagnostic(
                    f"reading from {self.name} failed: {type(exc).__name__}: {exc}",
                    DiagnosticCode.WIRE_FAILED,
                    DiagnosticLevel.ERROR,
                )
                break
            if generation != self._generation:
                return  # replaced while this frame was read: the new connection serves now
            kind = type(frame)
            if kind is BadLine or kind is Stray:
                odd: Any = frame
                if kind is BadLine:
                    what, code, raw = (
                        f"wrote a line anyagent cannot read ({odd.reason})",
                        DiagnosticCode.BAD_LINE,
                        odd.text,
                    )
                else:
                    what, code, raw = f"sent an unexpected frame: {odd.reason}", DiagnosticCode.UNKNOWN_FRAME, odd.frame
                await self.diagnostic(f"{self.name} {what}", code, DiagnosticLevel.INFO, raw)
            else:
                try:
                    # the flood's path: a synchronous translation and hand-over, no coroutine
                    event = fast(frame) if fast is not None else None  # type: ignore[arg-type]  # as below
                    if event is None:
                        await on_frame(frame)  # type: ignore[arg-type]  # not a BadLine or Stray here
                    elif offer is None or not offer(event):
                        await send(event)
                except Exception as exc:  # one frame we could not handle never ends the session
                    await self._frame_failed(frame, exc)
            if recorder is not None and recorder.failure is not None:
                await self._report_recording()

    async def _died(self, process: AgentProcess) -> None:
        status = await process.aclose(self.close_grace, self.eof_grace)
        if self._on_exit is not None:
            error = ProcessExited(status, process.stderr_tail)
            try:
                await self._on_exit(error)
            except Exception:
                pass
        await self.send(seam.Exited(status, process.stderr_tail))
        self.closing = True
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    async def _frame_failed(self, frame: object, exc: Exception) -> None:
        await self.diagnostic(
            f"could not handle a frame from {self.name}: {type(exc).__name__}: {exc}",
            DiagnosticCode.FRAME_ERROR,
            DiagnosticLevel.ERROR,
            frame_json(frame),
        )
        if isinstance(frame, IncomingRequest) and not frame.answered:
            try:
                await frame.reply_error(INTERNAL_ERROR, f"the client could not handle {frame.method}")
            except Exception:
                pass

    async def _report_recording(self) -> None:
        failure = self.recorder.take_failure() if self.recorder is not None else None
        if failure is not None:
            await self.diagnostic(failure, DiagnosticCode.RECORD_WIRE)

    async def _command_failed(self, command: seam.DriverCommand, exc: Exception) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        message = f"could not carry out {type(command).__name__}: {reason}"
        await self.diagnostic(message, DiagnosticCode.COMMAND_FAILED, DiagnosticLevel.ERROR)
        if isinstance(command, seam.StartTurn):
            await self.send(seam.TurnAck())
            await self.send(seam.TurnEnd(Failed(f"the prompt could not be sent: {reason}")))
        elif isinstance(command, seam.Steer):
            await self.send(seam.SteerResult(False))
        elif isinstance(command, seam.Compact):
            await self.send(seam.TurnEnd(Failed(f"compaction could not start: {reason}")))

    # -- writing and reporting

    async def send(self, event: seam.DriverEvent) -> None:
        """Hand an event to the engine (dropped when the loop is not running)."""
        if self._link is not None:
            await self._link.send(event)

    async def diagnostic(
        self,
        message: str,
        code: str,
        level: DiagnosticLevel = DiagnosticLevel.WARNING,
        raw: JSON = None,
    ) -> None:
        """Report a ``Diagnostic`` with a code from ``DiagnosticCode`` and the frame in ``raw``."""
        if self._link is not None:
            await self._link.diagnostic(message, level, code, raw)

    async def write(self, operation: Awaitable[object]) -> bool:
        """Await a write (``lines.send(frame)``, ``peer.notify(...)``, …); False when the agent no
        longer reads. The first failure per connection is one ``write_failed`` diagnostic; the
        reader reports the agent's exit."""
        try:
            await operation
        except (AgentError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            if self._write_reported != self._generation:
                self._write_reported = self._generation
                await self.diagnostic(f"could not write to {self.name}: {exc}", DiagnosticCode.WRITE_FAILED)
            return False
        return True


async def refuse(link: seam.DriverLink, command: seam.DriverCommand, reason: str | None = None) -> None:
    """The answer the engine expects to a command this wire cannot carry out: a steer is
    rejected (the engine queues the prompt), a compaction or a prompt ends its turn ``Failed``, a
    setting, rollback or answer gets its refusal diagnostic, a cancel ends the turn ``Cancelled``;
    ``Decline`` and ``Close`` need nothing. The engine already gates most of these by capability."""
    what = reason or f"this agent cannot {type(command).__name__.lower()}"
    if isinstance(command, seam.Steer):
        await link.steered(False)
    elif isinstance(command, seam.StartTurn):
        await link.turn_ack()
        await link.turn_end(Failed(what))
    elif isinstance(command, seam.Compact):
        await link.diagnostic(what, DiagnosticLevel.WARNING, DiagnosticCode.UNSUPPORTED)
        await link.turn_end(Failed(what))
    elif isinstance(command, seam.Configure):
        await link.diagnostic(what, DiagnosticLevel.WARNING, DiagnosticCode.CONFIGURE_REFUSED)
    elif isinstance(command, seam.Rollback):
        await link.diagnostic(what, DiagnosticLevel.WARNING, DiagnosticCode.ROLLBACK_REFUSED)
    elif isinstance(command, seam.AnswerRequest):
        await link.diagnostic(what, DiagnosticLevel.WARNING, DiagnosticCode.UNEXPECTED_ANSWER)
    elif isinstance(command, seam.Cancel):
        await link.turn_end(Cancelled())


# ---------------------------------------------------------------------------------------------
# requests


class RequestBook(Generic[T]):
    """The agent's requests that wait for an answer on the wire, keyed by the engine's request id.

    The engine decides which requests are open; the book only remembers how to answer each on
    the wire. ``add(handle)`` mints an id (``r1``, ``r2``, …) for ``RequestOpened``; on
    ``AnswerRequest`` ``take(id)`` hands the handle back exactly once; on ``Decline`` (and where a
    wire wants its own order, on ``Cancel``) ``decline(id)`` / ``decline_all()`` answer "no"
    through the ``decline`` callback — once per request, whoever asks first.
    """

    def __init__(self, decline: Callable[[T], Awaitable[None]], prefix: str = "r") -> None:
        self._decline = decline
        self._prefix = prefix
        self._count = 0
        self._open: dict[str, T] = {}

    def add(self, handle: T, request_id: str | None = None) -> str:
        """Remember ``handle``; returns its request id (``request_id`` when given)."""
        if request_id is None:
            self._count += 1
            request_id = f"{self._prefix}{self._count}"
        self._open[request_id] = handle
        return request_id

    def take(self, request_id: str) -> T | None:
        """The handle of ``request_id``, forgotten (None when unknown or already answered)."""
        return self._open.pop(request_id, None)

    def get(self, request_id: str) -> T | None:
        """The handle of ``request_id`` without forgetting it."""
        return self._open.get(request_id)

    def find(self, match: Callable[[T], bool]) -> list[str]:
        """The ids whose handles ``match``."""
        return [request_id for request_id, handle in self._open.items() if match(handle)]

    async def decline(self, request_id: str) -> bool:
        """Answer ``request_id`` "no" on the wire unless that already happened; True if it did now."""
        handle = self._open.pop(request_id, None)
        if handle is None:
            return False
        await self._decline(handle)
        return True

    async def decline_all(self) -> list[str]:
        """Decline every open request; returns their ids."""
        declined = list(self._open)
        for request_id in declined:
            await self.decline(request_id)
        return declined

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._open

    def __len__(self) -> int:
        return len(self._open)
