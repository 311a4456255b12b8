"""Agent processes: spawn, drain, and always reap (``anyagent.process``).

Every stdio and HTTP adapter launches its agent through ``spawn``::

    proc = await spawn([str(exe), "app-server"], cwd=options.cwd, env=request.env, recorder=recorder)
    try:
        lines = JsonLines(proc)                 # anyagent.wire: frames in, frames out
        ...
    finally:
        status = await proc.aclose()            # shielded, bounded; returns "exit status: 0" etc.

What flows in: an argv (a bare name is looked up on the child's PATH), a working directory and an
environment. What flows out: an ``AgentProcess`` with byte streams for stdin/stdout, the tail of
its stderr, and its normalized exit status. Guarantees:

* The child leads its own process group (POSIX session; Windows process group + Job Object), so
  ``aclose`` reaches workers and wrappers it started. On Linux its whole group also gets
  ``SIGKILL`` if the host dies (SIGKILL or SIGTERM alike): one guard process per host (started at
  the first spawn, see ``_process_posix._GUARD_SRC``) holds a pidfd of the host and of every
  agent's leader and kills the group of each leader still running once the host is gone. The
  launch itself (pipes, fork/exec) runs in a worker thread, so it never blocks the event loop.
  (Linux without pidfds: a per-agent exec shim sets ``PR_SET_PDEATHSIG`` instead; see ``_SHIM``.)
* Descendants that left the group (``setsid``): on Linux ``aclose`` lists the leader's
  descendants outside its group from ``/proc`` while the leader still lives (at the start and
  before each signal) and SIGKILLs those still running once the group is gone (by pidfd, checked
  against the start time). Limits: one that was already orphaned (its parent exited, a
  daemonizing double fork) or that appears after the last listing is not ours to reach, nor is
  any when the leader exits on its own or the host dies; elsewhere none is. The session still
  ends when the leader exits (``toolkit.DriverLoop`` stops reading shortly after, whoever holds
  the pipe).
* stderr is always drained (POSIX: by one reactor thread shared by every agent of the host, so no
  task group has to outlive ``connect`` and no thread is started per agent; Windows: a thread per
  pipe) into a tail of the last ``stderr_tail_lines`` lines, each capped; the pipe can never fill up.
* When the group leader exits, the rest of its group is killed at once (the leader is still a
  zombie then, so its id cannot have been reused), then it is reaped: a grandchild holding the
  pipes can never keep a reader waiting. A reaped group is never signalled again.
* ``aclose`` runs the ladder: close stdin → wait ``grace`` → SIGTERM the group → wait ``grace`` →
  SIGKILL the group → reap → join the stderr drain. It is idempotent, shielded and bounded.
* An ``atexit`` reaper kills the groups of anything still alive when the interpreter exits.
* Launch problems (missing, not executable, exec error, bad cwd) raise ``SpawnFailed`` naming the
  path and the OS error.

``run_command`` runs short side commands (``--version``, ``auth status``) with a timeout, a null
stdin, an output cap and the same group kill.

This module is the platform-neutral part (launch checks, ``AgentProcess``, the close ladder, the
reaper). The child itself comes from ``_process_posix`` or ``_process_windows``, chosen once at
import by ``sys.platform``; what both share is in ``_process_base``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import attrs
from anyio.abc import ByteReceiveStream, ByteSendStream

from ._process_base import (
    _KILL_WAIT,
    _LIVE,
    _LIVE_LOCK,
    _POLL_FIRST,
    _POLL_MAX,
    _Child,
    _discard,
    _NoStdout,
    _register,
    _Tail,
    _wait_exit,
    exit_status_text,
)
from .errors import AgentError, InvalidConfiguration, ProcessExited, ProtocolFailed, SpawnFailed

if sys.platform == "win32":  # pragma: no cover - exercised only on Windows
    from ._process_windows import start_child
else:
    from ._process_posix import start_child

if TYPE_CHECKING:
    from .recording import WireRecorder

__all__ = [
    "CLOSE_GRACE",
    "MAX_LINE",
    "STDERR_TAIL_LINES",
    "AgentProcess",
    "CommandResult",
    "exit_status_text",
    "run_command",
    "spawn",
]

MAX_LINE = 16 * 1024 * 1024
"""Default bound, in bytes, of one stdout line (a longer line is reported, never buffered whole)."""

STDERR_TAIL_LINES = 20
"""Default number of stderr lines kept for ``ProcessExited`` and handshake errors."""

CLOSE_GRACE = 2.0
"""Default seconds ``aclose`` waits after stdin EOF, and again after SIGTERM."""

_DRAIN_JOIN = 1.0  # seconds to wait for the stderr drain after the group is gone
_READ_CHUNK = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# launch preparation


def _resolve_executable(program: str, cwd: str, env: Mapping[str, str]) -> str:
    """The absolute path to run, or SpawnFailed: missing, a directory, or not executable."""
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(cwd, program) if not Path(program).is_absolute() else Path(program)
    else:
        found = shutil.which(program, path=_env_path(env))
        if found is None:
            raise SpawnFailed(f"cannot start {program}: not found on PATH ({_env_path(env) or 'empty'})")
        path = Path(found)
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise SpawnFailed(f"cannot start {path}: {exc.strerror or exc}") from exc
    if not os.path.isfile(path):
        raise SpawnFailed(f"cannot start {path}: not a regular file (mode {oct(mode)})")
    if sys.platform != "win32" and not os.access(path, os.X_OK):
        raise SpawnFailed(f"cannot start {path}: not executable (permission denied)")
    return str(path.absolute())


def _path_key(env: Mapping[str, str]) -> str:
    if sys.platform == "win32":  # environment names are case-insensitive there
        return next((key for key in env if key.upper() == "PATH"), "PATH")
    else:
        return "PATH"


def _env_path(env: Mapping[str, str]) -> str:
    return env.get(_path_key(env), "")


def _prepare(
    argv: Sequence[str | os.PathLike[str]], cwd: str | os.PathLike[str], env: Mapping[str, str] | None
) -> tuple[list[str], str, str, dict[str, str]]:
    """Validate a launch: (argv, working directory, executable path, child environment)."""
    args = [os.fspath(part) for part in argv]
    if not args or not args[0]:
        raise SpawnFailed("cannot start an agent from an empty argv")
    workdir = os.fspath(cwd)
    source_env = dict(os.environ if env is None else env)
    _check_launch(args, workdir, source_env)
    if not os.path.isdir(workdir):
        raise SpawnFailed(f"cannot start {args[0]}: working directory {workdir} is not a directory")
    exe = _resolve_executable(args[0], workdir, source_env)
    child_env = _child_env(exe, source_env)
    _check_size(args, child_env)
    return args, workdir, exe, child_env


def _check_launch(args: Sequence[str], workdir: str, env: Mapping[str, str]) -> None:
    """``InvalidConfiguration`` for what no OS can pass to a process: a NUL byte anywhere, an
    environment name that is empty or holds ``=`` (checked before any pipe is opened)."""
    name = _short(args[0])
    for index, part in enumerate(args):
        if "\0" in part:
            raise InvalidConfiguration(f"cannot start {name}: argument {index} contains a NUL byte")
    if "\0" in workdir:
        raise InvalidConfiguration(f"cannot start {name}: the working directory contains a NUL byte")
    for key, value in env.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidConfiguration(f"cannot start {name}: environment variable {key!r} is not a str")
        if not key or "=" in (key[1:] if sys.platform == "win32" else key) or "\0" in key:
            raise InvalidConfiguration(f"cannot start {name}: invalid environment variable name {_short(key)!r}")
        if "\0" in value:
            raise InvalidConfiguration(f"cannot start {name}: environment variable {key} contains a NUL byte")


# Linux: one argument or environment string may hold at most 32 pages (MAX_ARG_STRLEN, with
# its NUL), and all of them together (plus a pointer each) at most ARG_MAX.
_ARG_STRLEN = 32 * 4096
_ARG_SLACK = 16 * 1024  # room for the exec shim's own arguments (its source is ~1.5 KiB)


def _check_size(args: Sequence[str], env: Mapping[str, str]) -> None:
    """``InvalidConfiguration`` before spawning when the launch would fail with E2BIG ("Argument
    list too long", which would name the exec shim's interpreter): one huge option value."""
    if sys.platform == "win32":  # pragma: no cover - CreateProcess has its own 32767-char bound
        line = sum(len(part) + 3 for part in args)
        if line > 32000:
            raise InvalidConfiguration(
                f"cannot start {_short(args[0])}: its command line is {line} characters (max 32000)"
            )
    else:
        _check_posix_size(args, env)


def _check_posix_size(args: Sequence[str], env: Mapping[str, str]) -> None:
    name = _short(args[0])
    total = 0
    for index, part in enumerate(args):
        size = len(os.fsencode(part)) + 1
        if size > _ARG_STRLEN:
            raise InvalidConfiguration(
                f"cannot start {name}: argument {index} is {size - 1} bytes (the OS passes at most {_ARG_STRLEN - 1})"
            )
        total += size + 8
    for key, value in env.items():
        size = len(os.fsencode(key)) + len(os.fsencode(value)) + 2
        if size > _ARG_STRLEN:
            raise InvalidConfiguration(
                f"cannot start {name}: environment variable {key} is {size - 2} bytes"
                f" (the OS passes at most {_ARG_STRLEN - 1})"
            )
        total += size + 8
    try:
        limit: int = getattr(os, "sysconf")("SC_ARG_MAX")  # noqa: B009 - POSIX only
    except (AttributeError, ValueError, OSError):
        limit = -1
    if limit > 0 and total + _ARG_SLACK > limit:
        raise InvalidConfiguration(
            f"cannot start {name}: its arguments and environment take {total} bytes (the OS passes at most {limit})"
        )


def _short(text: str, limit: int = 120) -> str:
    """``text`` cut for an error message (a 300k-character value is never quoted whole)."""
    text = text.replace("\0", "\\0")
    return text if len(text) <= limit else text[:limit] + "…"


def _child_env(exe: str, env: Mapping[str, str] | None) -> dict[str, str]:
    """The launch environment: ``env`` (or ours) with the executable's directory first on PATH."""
    result = dict(os.environ if env is None else env)
    key = _path_key(result)
    parts = [os.path.dirname(exe), *result.get(key, "").split(os.pathsep)]
    seen: set[str] = set()
    ordered = []
    for part in parts:
        if part and part not in seen:
            seen.add(part)
            ordered.append(part)
    result[key] = os.pathsep.join(ordered)
    return result


# ---------------------------------------------------------------------------------------------
# the public process


class AgentProcess:
    """One running agent: byte streams in and out, a stderr tail, and a guaranteed cleanup.

    ``stdin``/``stdout`` are anyio byte streams (use ``anyagent.wire.JsonLines`` to frame them).
    ``stderr_tail`` is the last lines of stderr so far. ``wait()`` returns the exit status text
    once the agent exits; ``aclose()`` makes it exit. Use ``async with`` when one task owns it.
    """

    def __init__(
        self,
        child: _Child,
        argv: Sequence[str],
        *,
        stderr_tail_lines: int,
        max_line: int,
        recorder: WireRecorder | None,
        drain_stdout: bool,
    ) -> None:
        """Made by ``spawn`` (which validates the launch); starts draining stderr."""
        self._child = child
        self.argv: tuple[str, ...] = tuple(argv)
        self.max_line = max_line
        self.recorder = recorder
        self._tails = {"stderr": _Tail(stderr_tail_lines)}
        if drain_stdout:
            self._tails["stdout"] = _Tail(stderr_tail_lines)
        self._drain = child.start_drain(self._tails)
        self._closing: anyio.Event | None = None
        self._status: str | None = None
        self._noted = False

    @property
    def pid(self) -> int:
        """The agent's process id. On POSIX the agent runs in a process group of its own; on
        Linux its leader is the reaper that holds the agent's whole tree (``group_id``), elsewhere
        the agent itself."""
        return self._child.agent_pid

    @property
    def group_id(self) -> int:
        """The id of the agent's process group (POSIX; the job's process on Windows): the
        reaper's on Linux (see the troubleshooting guide), else the agent's own id."""
        return self._child.pid

    @property
    def stdin(self) -> ByteSendStream:
        """Bytes to the agent. Closing it sends EOF."""
        return self._child.stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        """Bytes from the agent (closed when spawned with ``drain_stdout=True``)."""
        if "stdout" in self._tails:
            return _NoStdout()
        return self._child.stdout

    @property
    def returncode(self) -> int | None:
        """The raw return code once reaped (negative: killed by that signal), else None."""
        self._child.poll_exit()
        return self._child.returncode

    @property
    def status(self) -> str | None:
        """``"exit status: N"`` / ``"signal: N (NAME)"`` once the agent has exited, else None."""
        if not self._child.poll_exit():
            return None
        return exit_status_text(self._child.returncode)

    @property
    def stderr_tail(self) -> str:
        """The last lines the agent wrote to stderr (complete once ``aclose`` returned)."""
        return self._tails["stderr"].text()

    @property
    def stdout_tail(self) -> str:
        """With ``drain_stdout=True``: the last lines of stdout (for HTTP agents). Else empty."""
        tail = self._tails.get("stdout")
        return tail.text() if tail is not None else ""

    async def wait(self) -> str:
        """Wait until the agent exits on its own; return its status text."""
        await _wait_exit(self._child)
        return self._finished()

    async def exited(self) -> None:
        """Wait until the agent has exited, without noting it in the recording (``wait`` does).
        On Linux this waits on a pidfd in the event loop: no wakeups while the agent runs."""
        await _wait_exit(self._child)

    async def wait_for_line(self, pattern: re.Pattern[str], *, stderr: bool = False) -> re.Match[str] | None:
        """Wait until a finished line of the stdout tail (``stderr``: of the stderr tail) matches
        ``pattern`` and return the match (a line still being written is not matched, so a port
        cut between two chunks is never read short; once the agent exited, its unfinished last
        line counts); None once the agent has exited without printing one (its last output read
        first). Woken by the output and by the
        exit, never by a timer: the match returns the moment its chunk is drained. Bound it with
        a timeout (``toolkit.wait_for_listening`` does)."""
        tail = self._tails.get("stderr" if stderr else "stdout")
        if tail is None:  # stdout not drained: it never reaches a tail
            await self.exited()
            return None
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        theirs.setblocking(False)

        def poke() -> None:  # in the drain's thread (or ours, at exit): never blocks
            with contextlib.suppress(OSError):
                theirs.send(b"\0")

        async def poke_at_exit() -> None:
            await self.exited()
            poke()

        tail.listen(poke)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(poke_at_exit)
                while (found := _search(pattern, tail.lines())) is None and not self._child.poll_exit():
                    await anyio.wait_readable(ours)
                    with contextlib.suppress(OSError):
                        ours.recv(4096)
                tg.cancel_scope.cancel()
        finally:
            tail.unlisten(poke)
            ours.close()
            theirs.close()
        if found is None:  # it exited: what it printed last may still have been in the pipe
            await self._join_drain(stop=False)
            found = _search(pattern, tail.text().splitlines())
        return found

    async def exit_error(self, wait: float = 1.0) -> AgentError:
        """The error for "the agent's output ended": ``ProcessExited(status, stderr tail)`` if it
        exits within ``wait`` seconds, else ``ProtocolFailed`` (it closed stdout but lives on)."""
        with anyio.move_on_after(wait):
            await self.wait()
        if not self._child.poll_exit():
            return ProtocolFailed(f"the agent closed its output but is still running (pid {self.pid})")
        await self._join_drain(stop=False)
        return ProcessExited(self._finished(), self.stderr_tail)

    async def aclose(self, grace: float = CLOSE_GRACE, eof_grace: float | None = None) -> str:
        """Stop the agent and return its status: stdin EOF, ``eof_grace`` s (default ``grace``; 0
        for an agent that ignores EOF), SIGTERM to the group, ``grace`` s, SIGKILL, reap, join the
        drain. Shielded; idempotent (a second call waits for the first). Bounded by about
        ``2 * grace + 7`` seconds even if the kernel will not reap."""
        if self._closing is not None:
            with anyio.CancelScope(shield=True):
                await self._closing.wait()
            return self._status or exit_status_text(None)
        self._closing = anyio.Event()
        try:
            with anyio.CancelScope(shield=True):
                await self._ladder(grace, grace if eof_grace is None else eof_grace)
        finally:
            self._closing.set()
        return self._status or exit_status_text(None)

    async def _ladder(self, grace: float, eof_grace: float) -> None:
        child = self._child
        escaped = child.escapees()  # setsid descendants, found while the leader still holds them
        try:
            await child.stdin.aclose()  # EOF: the one portable "please exit"
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        if eof_grace > 0:
            with anyio.move_on_after(eof_grace):
                await _wait_exit(child)
        if not child.poll_exit():
            escaped += child.escapees()
            child.terminate_group()
            with anyio.move_on_after(grace):
                await _wait_exit(child)
        if not child.poll_exit():
            escaped += child.escapees()
            child.kill_group()
            with anyio.move_on_after(_KILL_WAIT):
                await _wait_exit(child)
        child.kill_escapees(escaped)
        if child.poll_exit():
            await self._join_drain()
            self._status = self._finished()
        else:
            self._status = "exit status: unknown (the agent could not be reaped)"
            child.stop_drain()
        child.close_streams()

    async def _join_drain(self, *, stop: bool = True) -> None:
        """Wait (bounded) until stderr reached EOF so the tail is complete."""
        with anyio.move_on_after(_DRAIN_JOIN):
            delay = _POLL_FIRST
            while self._drain.is_alive():
                await anyio.sleep(delay)
                delay = min(delay * 2, _POLL_MAX)
        if stop and self._drain.is_alive():
            self._child.stop_drain()  # a process outside the group holds the pipe: let the drain go

    def _finished(self) -> str:
        status = exit_status_text(self._child.returncode)
        if not self._noted and self.recorder is not None:
            self._noted = True
            code = self._child.returncode
            self.recorder.note({"exit": code if code is not None and code >= 0 else status})
        return status

    async def __aenter__(self) -> AgentProcess:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<AgentProcess pid={self.pid} {self.argv[0]!r} {self.status or 'running'}>"


async def spawn(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    stderr_tail_lines: int = STDERR_TAIL_LINES,
    max_line: int = MAX_LINE,
    recorder: WireRecorder | None = None,
    stdin: bool = True,
    drain_stdout: bool = False,
) -> AgentProcess:
    """Start an agent; raise ``SpawnFailed`` if it cannot start.

    ``argv[0]`` is a path (relative ones resolve against ``cwd``) or a name looked up on ``env``'s
    PATH. The child's PATH is the executable's directory, then ``env``'s PATH. ``env`` defaults to
    ours. ``max_line`` bounds one stdout line for ``JsonLines``. ``recorder`` gets a ``_meta``
    line now, the frames ``JsonLines`` moves, and an ``exit`` note. ``stdin=False`` gives the agent
    /dev/null; ``drain_stdout=True`` drains stdout into ``stdout_tail`` (HTTP agents).
    """
    args, workdir, exe, child_env = _prepare(argv, cwd, env)
    child: _Child = await start_child(exe, args, workdir, child_env, stdin=stdin, drain_stdout=drain_stdout)
    _register(child)
    try:
        proc = AgentProcess(
            child,
            args,
            stderr_tail_lines=stderr_tail_lines,
            max_line=max_line,
            recorder=recorder,
            drain_stdout=drain_stdout,
        )
    except BaseException:  # e.g. no thread could be started for the drain
        await _discard(child)
        raise
    if recorder is not None:
        recorder.process_started(args, workdir)
    return proc


def _search(pattern: re.Pattern[str], lines: Sequence[str]) -> re.Match[str] | None:
    """The first of ``lines`` that ``pattern`` matches."""
    for line in lines:
        found = pattern.search(line)
        if found is not None:
            return found
    return None


# ---------------------------------------------------------------------------------------------
# side commands


@attrs.frozen
class CommandResult:
    """What a side command did: ``status`` text, raw ``returncode`` (None if it could not be
    reaped), its ``stdout`` (cut at the cap; ``truncated`` says so), the tail of ``stderr``, and
    whether it hit the timeout (then it was killed)."""

    status: str
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """Exited 0 within the timeout."""
        return self.returncode == 0 and not self.timed_out


async def run_command(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 15.0,
    max_output: int = 1024 * 1024,
) -> CommandResult:
    """Run a short command (``claude --version``) with /dev/null stdin, killing its whole group
    after ``timeout`` seconds. Keeps ``max_output`` bytes of stdout and the last 200 stderr lines.
    Raises ``SpawnFailed`` if it cannot start; a timeout is reported, not raised."""
    proc = await spawn(argv, cwd=cwd if cwd is not None else os.getcwd(), env=env, stderr_tail_lines=200, stdin=False)
    kept = bytearray()
    truncated = timed_out = False
    try:
        with anyio.move_on_after(timeout) as scope:
            try:
                while True:
                    chunk = await proc.stdout.receive(_READ_CHUNK)
                    room = max_output - len(kept)
                    truncated = truncated or len(chunk) > room
                    kept += chunk[: max(0, room)]
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            await proc.wait()
        timed_out = scope.cancelled_caught
    finally:
        status = await proc.aclose(grace=0.0 if timed_out else CLOSE_GRACE)
    text = kept.decode("utf-8", "replace")
    return CommandResult(status, proc.returncode, text, proc.stderr_tail, timed_out, truncated)


# ---------------------------------------------------------------------------------------------
# the atexit reaper

_OWNER = os.getpid()


def _reap_all(patience: float = 0.5) -> None:
    """At interpreter exit: SIGTERM every live group, wait up to ``patience``, SIGKILL the rest,
    then the descendants that left a group (``setsid``; found before the SIGTERM too, so those of
    an agent that died of it are not missed)."""
    if os.getpid() != _OWNER:
        return
    with _LIVE_LOCK:
        children = list(_LIVE)
        _LIVE.clear()
    children = [child for child in children if not child.poll_exit()]
    # setsid descendants (Linux), found while the leader still holds them: one that dies of the
    # SIGTERM orphans them, and the walk from a reaped leader would find nothing
    escaped = {child: child.escapees() for child in children}
    for child in children:
        child.terminate_group()
    deadline = time.monotonic() + patience
    left = children
    while left and time.monotonic() < deadline:
        time.sleep(0.01)
        left = [child for child in left if not child.poll_exit()]
    for child in left:
        escaped[child] += child.escapees()
        child.kill_group()
    for child in children:
        child.kill_escapees(escaped[child])
        child.poll_exit()


def _forget_after_fork() -> None:
    """A forked host does not own its parent's agents."""
    global _OWNER
    _OWNER = os.getpid()
    with _LIVE_LOCK:
        _LIVE.clear()


atexit.register(_reap_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
