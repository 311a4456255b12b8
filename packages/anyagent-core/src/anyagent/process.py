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
  ``aclose`` reaches workers and wrappers it started. On Linux it also gets ``SIGKILL`` if the host
  dies (``PR_SET_PDEATHSIG``, set by a tiny exec shim; see ``_SHIM``).
* stderr is always drained (by a thread, so no task group has to outlive ``connect``) into a tail
  of the last ``stderr_tail_lines`` lines, each capped; the pipe can never fill up.
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
"""

from __future__ import annotations

import atexit
import collections
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.lowlevel
import attrs
from anyio.abc import ByteReceiveStream, ByteSendStream

from ._errors import AgentError, ProcessExited, ProtocolFailed, SpawnFailed

if TYPE_CHECKING:
    from ._recorder import WireRecorder

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

_TAIL_LINE_CAP = 2048  # bytes kept of one stderr line
_KILL_WAIT = 5.0  # seconds to wait for a SIGKILLed leader to be reapable
_DRAIN_JOIN = 2.0  # seconds to wait for the stderr drain after the group is gone
_EXEC_WAIT = 30.0  # seconds the exec shim may take to exec the agent
_READ_CHUNK = 1024 * 1024
_PIPE_SIZE = 1024 * 1024  # Linux: ask for 1 MiB stdout pipes (fewer wakeups); best effort
_POLL_FIRST = 0.001
_POLL_MAX = 0.05


# ---------------------------------------------------------------------------------------------
# exit status


def exit_status_text(returncode: int | None) -> str:
    """Normalize a return code: ``"exit status: 1"``, ``"signal: 9 (SIGKILL)"``, or unknown."""
    if returncode is None:
        return "exit status: unknown"
    if returncode >= 0:
        return f"exit status: {returncode}"
    number = -returncode
    try:
        return f"signal: {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal: {number}"


# ---------------------------------------------------------------------------------------------
# the bounded tail of a drained pipe


class _Tail:
    """The last ``lines`` lines of a byte stream, each capped at ``cap`` bytes (thread-safe)."""

    def __init__(self, lines: int, cap: int = _TAIL_LINE_CAP) -> None:
        self._lines: collections.deque[str] = collections.deque(maxlen=max(1, lines))
        self._cap = cap
        self._partial = bytearray()
        self._cut = False
        self._lock = threading.Lock()

    def feed(self, data: bytes) -> None:
        """Add a chunk; whole lines beyond the window are never decoded."""
        parts = data.split(b"\n")
        with self._lock:
            self._extend(parts[0])
            if len(parts) == 1:
                return
            self._push()
            middle = parts[1:-1]
            keep = self._lines.maxlen or 1
            for part in middle[-keep:]:
                self._extend(part)
                self._push()
            self._extend(parts[-1])

    def text(self) -> str:
        """The tail as text (lines joined by newlines, the unfinished line last)."""
        with self._lock:
            lines = list(self._lines)
            if self._partial or self._cut:
                lines.append(self._decode())
        return "\n".join(lines)

    def _extend(self, part: bytes) -> None:
        room = self._cap - len(self._partial)
        if len(part) > room:
            part = part[: max(0, room)]
            self._cut = True
        self._partial += part

    def _push(self) -> None:
        self._lines.append(self._decode())
        self._partial = bytearray()
        self._cut = False

    def _decode(self) -> str:
        text = self._partial.decode("utf-8", "replace").rstrip("\r")
        return text + " …" if self._cut else text


class _NoStdin(ByteSendStream):
    """stdin of a process spawned with ``stdin=False`` (it reads /dev/null)."""

    async def send(self, item: bytes) -> None:
        raise anyio.ClosedResourceError

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()


class _NoStdout(ByteReceiveStream):
    """stdout of a process spawned with ``drain_stdout=True`` (it goes to ``stdout_tail``)."""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        raise anyio.ClosedResourceError

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()


# ---------------------------------------------------------------------------------------------
# the OS-specific child


class _Child(Protocol):
    """What ``AgentProcess`` needs from one spawned child, whatever the OS."""

    @property
    def pid(self) -> int: ...

    @property
    def stdin(self) -> ByteSendStream: ...

    @property
    def stdout(self) -> ByteReceiveStream: ...

    def poll_exit(self) -> bool:
        """True once the leader has exited and been reaped (stragglers killed first)."""

    @property
    def returncode(self) -> int | None: ...

    def terminate_group(self) -> None:
        """Ask the whole group to exit (SIGTERM; on Windows this is the hard kill)."""

    def kill_group(self) -> None:
        """Kill the whole group (SIGKILL / TerminateJobObject). Never after the reap."""

    def close_streams(self) -> None:
        """Close our pipe ends and OS handles (after the reap, or when a launch is abandoned)."""

    def start_drain(self, tails: Mapping[str, _Tail]) -> threading.Thread:
        """Start the thread that drains stderr (and stdout when drained) into ``tails``."""

    def stop_drain(self) -> None:
        """Let the drain thread go even if a pipe never reaches EOF (an escaped process holds it)."""


def _close_fds(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            os.close(fd)


def _spawn_message(exe: str, cwd: str, exc: OSError) -> str:
    where = exc.filename if isinstance(exc.filename, str) else exe
    if where == cwd:
        return f"cannot start {exe}: working directory {cwd}: {exc.strerror or exc}"
    return f"cannot start {exe}: {exc.strerror or exc} ({where})"


async def _wait_exit(child: _Child) -> None:
    """Poll until the leader is reaped (backing off to 50 ms; the drain thread reaps on Linux)."""
    delay = _POLL_FIRST
    while not child.poll_exit():
        await anyio.sleep(delay)
        delay = min(delay * 2, _POLL_MAX)


async def _discard(child: _Child) -> None:
    """Kill a half-started child's group, reap it and close its pipes (shielded, bounded)."""
    with anyio.CancelScope(shield=True):
        child.kill_group()
        with anyio.move_on_after(_KILL_WAIT):
            await _wait_exit(child)
        child.close_streams()
        if not child.poll_exit():
            _register(child)  # the atexit reaper keeps trying


# ---------------------------------------------------------------------------------------------
# the OS-specific launchers: Windows (typed and guarded; not exercised by the Linux suite), POSIX

_CMD_FORBIDDEN = frozenset('"%!^&|<>()\r\n\x00')

if sys.platform == "win32":  # pragma: no cover - exercised only on Windows
    import ctypes
    from ctypes import wintypes

    _CREATE_NEW_PROCESS_GROUP = 0x00000200
    _JOB_KILL_ON_CLOSE = 0x00002000
    _EXTENDED_LIMIT_INFORMATION = 9

    class _BasicLimit(ctypes.Structure):
        _fields_ = [
            ("PerProcessUserTimeLimit", ctypes.c_int64),
            ("PerJobUserTimeLimit", ctypes.c_int64),
            ("LimitFlags", wintypes.DWORD),
            ("MinimumWorkingSetSize", ctypes.c_size_t),
            ("MaximumWorkingSetSize", ctypes.c_size_t),
            ("ActiveProcessLimit", wintypes.DWORD),
            ("Affinity", ctypes.c_size_t),
            ("PriorityClass", wintypes.DWORD),
            ("SchedulingClass", wintypes.DWORD),
        ]

    class _IoCounters(ctypes.Structure):
        _fields_ = [
            (name, ctypes.c_uint64) for name in ("Reads", "Writes", "Others", "ReadBytes", "WriteBytes", "OtherBytes")
        ]

    class _ExtendedLimit(ctypes.Structure):
        _fields_ = [
            ("BasicLimitInformation", _BasicLimit),
            ("IoInfo", _IoCounters),
            ("ProcessMemoryLimit", ctypes.c_size_t),
            ("JobMemoryLimit", ctypes.c_size_t),
            ("PeakProcessMemoryUsed", ctypes.c_size_t),
            ("PeakJobMemoryUsed", ctypes.c_size_t),
        ]

    def _kernel32() -> Any:
        k32 = ctypes.WinDLL("kernel32", use_last_error=True)
        k32.CreateJobObjectW.restype = wintypes.HANDLE
        k32.CreateJobObjectW.argtypes = [ctypes.c_void_p, wintypes.LPCWSTR]
        k32.OpenProcess.restype = wintypes.HANDLE
        k32.OpenProcess.argtypes = [wintypes.DWORD, wintypes.BOOL, wintypes.DWORD]
        k32.SetInformationJobObject.argtypes = [wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD]
        k32.AssignProcessToJobObject.argtypes = [wintypes.HANDLE, wintypes.HANDLE]
        k32.TerminateJobObject.argtypes = [wintypes.HANDLE, wintypes.UINT]
        k32.CloseHandle.argtypes = [wintypes.HANDLE]
        return k32

    def _job_for(pid: int) -> Any:
        """A kill-on-close Job Object holding ``pid`` (None if Windows refuses). Children the
        process starts before the assignment escape the job: a small, documented race."""
        k32 = _kernel32()
        job = k32.CreateJobObjectW(None, None)
        if not job:
            return None
        info = _ExtendedLimit()
        info.BasicLimitInformation.LimitFlags = _JOB_KILL_ON_CLOSE
        k32.SetInformationJobObject(job, _EXTENDED_LIMIT_INFORMATION, ctypes.byref(info), ctypes.sizeof(info))
        handle = k32.OpenProcess(0x0101, False, pid)  # PROCESS_SET_QUOTA | PROCESS_TERMINATE
        if not handle or not k32.AssignProcessToJobObject(job, handle):
            if handle:
                k32.CloseHandle(handle)
            k32.CloseHandle(job)
            return None
        k32.CloseHandle(handle)
        return job

    class _WindowsChild:
        """A child from ``anyio.open_process`` in a new process group and a kill-on-close job."""

        def __init__(self, process: anyio.abc.Process, drain_fds: dict[str, int], job: Any) -> None:
            self._process = process
            self._drain_fds = drain_fds
            self._job = job
            self._lock = threading.Lock()
            self._reaped = False

        @property
        def pid(self) -> int:
            return self._process.pid

        @property
        def stdin(self) -> ByteSendStream:
            return self._process.stdin or _NoStdin()

        @property
        def stdout(self) -> ByteReceiveStream:
            return self._process.stdout or _NoStdout()

        @property
        def returncode(self) -> int | None:
            return self._process.returncode

        def poll_exit(self) -> bool:
            with self._lock:
                if self._reaped:
                    return True
                if self._process.returncode is None:
                    return False
                self._terminate_locked()  # stragglers in the job
                self._reaped = True
            _unregister(self)
            return True

        def terminate_group(self) -> None:
            self.kill_group()  # no polite group signal reaches console-less children

        def kill_group(self) -> None:
            with self._lock:
                if not self._reaped:
                    self._terminate_locked()

        def _terminate_locked(self) -> None:
            if self._job is not None:
                _kernel32().TerminateJobObject(self._job, 1)
            elif self._process.returncode is None:
                self._process.kill()

        def close_streams(self) -> None:
            _close_fds(*self._drain_fds.values())
            self._drain_fds = {}
            if self._job is not None:
                _kernel32().CloseHandle(self._job)
                self._job = None

        def start_drain(self, tails: Mapping[str, _Tail]) -> threading.Thread:
            fds, self._drain_fds = self._drain_fds, {}
            threads = [
                threading.Thread(target=self._drain, args=(fd, tails[name]), daemon=True) for name, fd in fds.items()
            ]
            for thread in threads:
                thread.start()
            return threads[0]  # stderr: the one whose tail ProcessExited carries

        def stop_drain(self) -> None:
            pass  # a blocking read on a Windows pipe cannot be interrupted; the threads are daemons

        @staticmethod
        def _drain(fd: int, tail: _Tail) -> None:
            try:
                while data := os.read(fd, 65536):
                    tail.feed(data)
            except OSError:
                pass
            finally:
                os.close(fd)

    def _cmd_line(exe: str, argv: list[str]) -> str:
        """A cmd.exe line for a ``.cmd``/``.bat`` shim that cmd cannot re-parse: every part quoted,
        and metacharacters refused (cmd expands ``%``/``!`` even inside quotes)."""
        for part in [exe, *argv[1:]]:
            bad = sorted(set(part) & (_CMD_FORBIDDEN if part is not exe else frozenset('"%!\r\n\x00')))
            if bad:
                raise SpawnFailed(
                    f"refusing to run the batch file {exe} with an argument containing {''.join(bad)!r}: "
                    "cmd.exe would re-parse it"
                )
        return " ".join(f'"{part}"' for part in [exe, *argv[1:]])

    async def _start_windows(
        exe: str, argv: list[str], cwd: str, env: dict[str, str], *, stdin: bool, drain_stdout: bool
    ) -> _WindowsChild:
        err_r, err_w = os.pipe()
        out_r, out_w = os.pipe() if drain_stdout else (-1, -1)
        command: str | list[str] = [exe, *argv[1:]]
        if Path(exe).suffix.lower() in (".cmd", ".bat"):
            # a str runs as ``cmd.exe /c "<line>"``; cmd strips the outer quotes, our line stays quoted
            command = _cmd_line(exe, argv)
        try:
            process = await anyio.open_process(
                command,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=out_w if drain_stdout else subprocess.PIPE,
                stderr=err_w,
                cwd=cwd,
                env=env,
                creationflags=_CREATE_NEW_PROCESS_GROUP,
            )
        except OSError as exc:
            _close_fds(err_r, out_r)
            raise SpawnFailed(_spawn_message(exe, cwd, exc)) from exc
        finally:
            _close_fds(err_w, out_w)
        drained = {"stderr": err_r, **({"stdout": out_r} if drain_stdout else {})}
        return _WindowsChild(process, drained, _job_for(process.pid))

else:  # POSIX
    import fcntl
    import select

    # ---- non-blocking pipe ends as anyio streams

    class _FdEnd:
        """One non-blocking end of a pipe, closed at most once (a waiting task is woken)."""

        def __init__(self, fd: int) -> None:
            os.set_blocking(fd, False)
            self._fd = fd
            self._closed = False

        async def aclose(self) -> None:
            self.close()
            await anyio.lowlevel.checkpoint()

        def close(self) -> None:
            """Close now: a waiting reader gets ``ClosedResourceError``, the agent reads EOF."""
            if not self._closed:
                self._closed = True
                anyio.notify_closing(self._fd)
                os.close(self._fd)

    class _FdReceiveStream(_FdEnd, ByteReceiveStream):
        """The read end of a pipe. ``receive`` checkpoints before reading, so a cancellation never
        drops bytes that were already read from the pipe."""

        async def receive(self, max_bytes: int = 65536) -> bytes:
            await anyio.lowlevel.checkpoint()
            while True:
                if self._closed:
                    raise anyio.ClosedResourceError
                try:
                    data = os.read(self._fd, max_bytes)
                except BlockingIOError:
                    await anyio.wait_readable(self._fd)
                    continue
                except OSError as exc:
                    raise anyio.BrokenResourceError from exc
                if not data:
                    raise anyio.EndOfStream
                return data

    class _FdSendStream(_FdEnd, ByteSendStream):
        """The write end of a pipe. A frame is written whole or the stream is marked broken: a send
        cancelled after part of it went out breaks the stream rather than corrupt the next frame."""

        def __init__(self, fd: int) -> None:
            super().__init__(fd)
            self._broken = False

        async def send(self, item: bytes) -> None:
            await anyio.lowlevel.checkpoint()
            view = memoryview(item)
            try:
                while view:
                    if self._closed:
                        raise anyio.ClosedResourceError
                    if self._broken:
                        raise anyio.BrokenResourceError
                    try:
                        written = os.write(self._fd, view)
                    except BlockingIOError:
                        await anyio.wait_writable(self._fd)
                        continue
                    except OSError as exc:
                        self._broken = True
                        raise anyio.BrokenResourceError from exc
                    view = view[written:]
            except anyio.get_cancelled_exc_class():
                if len(view) != len(item):
                    self._broken = True
                raise

    # waitid(WNOWAIT) sees a zombie without reaping it (not on every POSIX; then no straggler kill)
    _WAITID: Any = getattr(os, "waitid", None) if hasattr(os, "WNOWAIT") else None

    class _PosixChild:
        """A child started with ``subprocess.Popen`` in a new session; we own every pipe end.

        Reaping and group signals happen under one lock, so the group is never signalled after the
        leader was reaped (its id could then belong to someone else)."""

        def __init__(
            self, popen: subprocess.Popen[bytes], stdin_fd: int | None, stdout_fd: int, stderr_fd: int
        ) -> None:
            self._pid = popen.pid
            self._popen = popen
            self._lock = threading.Lock()
            self._reaped = False
            self._code: int | None = None
            self._stdin: ByteSendStream = _FdSendStream(stdin_fd) if stdin_fd is not None else _NoStdin()
            self._stdout_fd = stdout_fd  # -1 once a stream or the drain thread owns it
            self._stdout: _FdReceiveStream | None = None
            self._stderr_fd = stderr_fd  # -1 once the drain thread owns it
            self._stop = threading.Event()

        @property
        def pid(self) -> int:
            return self._pid

        @property
        def stdin(self) -> ByteSendStream:
            return self._stdin

        @property
        def stdout(self) -> ByteReceiveStream:
            if self._stdout is None:
                if self._stdout_fd < 0:
                    return _NoStdout()
                self._stdout = _FdReceiveStream(self._stdout_fd)
                self._stdout_fd = -1
            return self._stdout

        @property
        def returncode(self) -> int | None:
            return self._code

        def poll_exit(self) -> bool:
            if self._reaped:
                return True
            with self._lock:
                reaped = self._reap_locked()
            if reaped:
                _unregister(self)
            return reaped

        def _reap_locked(self) -> bool:
            if self._reaped:
                return True
            if _WAITID is not None:
                try:
                    info = _WAITID(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                except ChildProcessError:
                    # reaped behind our back (someone called waitpid(-1)): status unknown
                    self._reaped = True
                    return True
                if info is None:
                    return False
                # the leader is a zombie: its id still pins the group, so this reaches only ours
                self._signal_locked(signal.SIGKILL)
            code = self._popen.poll()
            if code is None:
                return False
            self._code = code
            self._reaped = True
            return True

        def terminate_group(self) -> None:
            with self._lock:
                self._signal_locked(signal.SIGTERM)

        def kill_group(self) -> None:
            with self._lock:
                self._signal_locked(signal.SIGKILL)

        def _signal_locked(self, sig: int) -> None:
            if self._reaped:
                return
            try:
                os.killpg(self.pid, sig)
            except OSError:
                pass
            try:
                if os.getpgid(self.pid) != self.pid:  # the leader left its group: reach it directly
                    os.kill(self.pid, sig)
            except OSError:
                pass

        def close_streams(self) -> None:
            if isinstance(self._stdin, _FdSendStream):
                self._stdin.close()
            if self._stdout is not None:
                self._stdout.close()
            _close_fds(self._stdout_fd, self._stderr_fd)
            self._stdout_fd = self._stderr_fd = -1

        def start_drain(self, tails: Mapping[str, _Tail]) -> threading.Thread:
            fds = {self._stderr_fd: tails["stderr"]}
            if "stdout" in tails:
                fds[self._stdout_fd] = tails["stdout"]
                self._stdout_fd = -1
            self._stderr_fd = -1  # the drain thread closes what it was given
            thread = threading.Thread(target=self._drain, args=(fds,), name=f"anyagent-drain-{self.pid}", daemon=True)
            thread.start()
            return thread

        def stop_drain(self) -> None:
            self._stop.set()

        def _drain(self, fds: dict[int, _Tail]) -> None:
            """Drain pipes into tails; notice the leader's exit (pidfd on Linux, else a 200 ms poll)
            and reap it, killing stragglers first, even when nobody is waiting for it."""
            pidfd = _open_pidfd(self.pid)
            poller = select.poll()
            for fd in fds:
                os.set_blocking(fd, False)
                poller.register(fd, select.POLLIN)
            if pidfd is not None:
                poller.register(pidfd, select.POLLIN)
            exited = False
            try:
                while (fds or not exited) and not self._stop.is_set():
                    ready = [fd for fd, _ in poller.poll(1000 if pidfd is not None or exited else 200)]
                    for fd in ready:
                        if fd in fds and not self._drain_once(fd, fds[fd]):
                            poller.unregister(fd)
                            os.close(fd)
                            del fds[fd]
                    if not exited and (pidfd is None or pidfd in ready):
                        exited = self.poll_exit()
                        if exited and pidfd is not None:
                            poller.unregister(pidfd)
            finally:
                _close_fds(*fds, -1 if pidfd is None else pidfd)

        @staticmethod
        def _drain_once(fd: int, tail: _Tail) -> bool:
            """Read what is there; False at EOF or on an error."""
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            tail.feed(data)
            return True

    def _open_pidfd(pid: int) -> int | None:
        """A pidfd (Linux ≥ 5.3) that becomes readable when ``pid`` exits, else None (then poll)."""
        opener = getattr(os, "pidfd_open", None)
        if opener is None:
            return None
        try:
            fd: int = opener(pid)
        except OSError:
            return None
        return fd

    # The exec shim that gives the agent a parent-death signal on Linux.
    #
    # Why a shim: ``prctl(PR_SET_PDEATHSIG)`` has to run in the child between fork and exec.
    # ``preexec_fn`` would do it, but it is unsafe with threads (we run drain threads, anyio runs
    # worker threads) and disables vfork. Passing it through anyio is not possible (no preexec_fn),
    # and trio even forks from a worker thread: PDEATHSIG fires when the *forking thread* exits,
    # so a trio-forked agent would be killed when that idle worker thread retires. So we fork with
    # ``subprocess.Popen`` from the event-loop thread, and exec this shim, which sets the signal,
    # checks that the host did not die in between, restores what Python startup changed (ignored
    # SIGPIPE/SIGXFSZ, the C-locale coercion of LC_CTYPE), and execs the agent. Exec errors come back
    # through a close-on-exec status pipe, so a bad executable is still a precise ``SpawnFailed``.
    # Measured cost on the dev VM: about 9 ms per spawn (Python ``-I -S`` start + ctypes import),
    # against hundreds of ms for any agent CLI to start; ``setpriv --pdeathsig`` would cost ~1 ms but
    # is not always installed and cannot report exec errors.
    _SHIM = textwrap.dedent(
        """\
        import os, signal, sys
        host, status, lc = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
        try:
            import ctypes
            ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)
        except Exception:
            pass
        if os.getppid() != host:
            os._exit(1)
        for name in ("SIGPIPE", "SIGXFSZ"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        if lc == "-":
            os.environ.pop("LC_CTYPE", None)
        else:
            os.environ["LC_CTYPE"] = lc[1:]
        os.set_inheritable(status, False)
        os.write(status, b"+")
        try:
            os.execv(sys.argv[4], sys.argv[5:])
        except OSError as exc:
            os.write(status, ("%d:%s" % (exc.errno or 0, exc.strerror or exc)).encode())
            os._exit(127)
        """
    )

    def _use_shim() -> bool:
        return sys.platform.startswith("linux") and bool(sys.executable) and not getattr(sys, "frozen", False)

    async def _start_posix(exe: str, argv: list[str], cwd: str, env: dict[str, str], *, stdin: bool) -> _PosixChild:
        """Fork/exec the agent in a new session with our own pipes; SpawnFailed on any exec error."""
        shim = _use_shim()
        in_r, in_w = os.pipe() if stdin else (-1, -1)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        status_r, status_w = os.pipe() if shim else (-1, -1)
        _grow_pipe(out_r)
        lc = "=" + env["LC_CTYPE"] if "LC_CTYPE" in env else "-"
        command = (
            [sys.executable, "-I", "-S", "-c", _SHIM, str(os.getpid()), str(status_w), lc, exe, *argv] if shim else argv
        )
        try:
            # forked from the event-loop thread on purpose (see _SHIM); vfork keeps this ~1 ms
            popen = subprocess.Popen(  # noqa: ASYNC220
                command,
                executable=None if shim else exe,
                stdin=in_r if stdin else subprocess.DEVNULL,
                stdout=out_w,
                stderr=err_w,
                cwd=cwd,
                env=env,
                start_new_session=True,
                pass_fds=(status_w,) if shim else (),
            )
        except OSError as exc:
            _close_fds(in_w, out_r, err_r, status_r)
            raise SpawnFailed(_spawn_message(exe, cwd, exc)) from exc
        finally:
            _close_fds(in_r, out_w, err_w, status_w)
        child = _PosixChild(popen, in_w if stdin else None, out_r, err_r)
        if shim:
            await _await_exec(child, status_r, exe)
        return child

    async def _await_exec(child: _PosixChild, status_r: int, exe: str) -> None:
        """Wait for the shim's report: ``+`` then EOF (exec worked), ``+errno:text`` (exec failed),
        or nothing (the shim died). On failure or cancellation kill, reap and close the child."""
        try:
            with anyio.move_on_after(_EXEC_WAIT) as scope:
                report = await _read_to_eof(status_r)
        except BaseException:
            await _discard(child)
            raise
        finally:
            os.close(status_r)
        if report == b"+" and not scope.cancelled_caught:
            return
        await _discard(child)
        if scope.cancelled_caught:
            raise SpawnFailed(f"cannot start {exe}: it did not start within {_EXEC_WAIT:g} s")
        if not report:
            raise SpawnFailed(f"cannot start {exe}: the exec shim exited first ({exit_status_text(child.returncode)})")
        code, _, text = report[1:].decode("utf-8", "replace").partition(":")
        raise SpawnFailed(f"cannot execute {exe}: {text} (errno {code})")

    async def _read_to_eof(fd: int) -> bytes:
        """Everything a (small) pipe delivers until EOF."""
        os.set_blocking(fd, False)
        data = b""
        while True:
            try:
                chunk = os.read(fd, 4096)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            if not chunk:
                return data
            data += chunk

    def _grow_pipe(fd: int) -> None:
        """Ask Linux for a bigger pipe: fewer wakeups per megabyte of agent output (best effort)."""
        if sys.platform.startswith("linux"):
            try:
                fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), _PIPE_SIZE)
            except OSError:
                pass


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
    if not os.path.isdir(workdir):
        raise SpawnFailed(f"cannot start {args[0]}: working directory {workdir} is not a directory")
    source_env = dict(os.environ if env is None else env)
    exe = _resolve_executable(args[0], workdir, source_env)
    return args, workdir, exe, _child_env(exe, source_env)


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
        """Made by ``spawn`` (which validates the launch); starts the drain thread."""
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
        """The agent's process id (also its process group id on POSIX)."""
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

    async def exit_error(self, wait: float = 1.0) -> AgentError:
        """The error for "the agent's output ended": ``ProcessExited(status, stderr tail)`` if it
        exits within ``wait`` seconds, else ``ProtocolFailed`` (it closed stdout but lives on)."""
        with anyio.move_on_after(wait):
            await self.wait()
        if not self._child.poll_exit():
            return ProtocolFailed(f"the agent closed its output but is still running (pid {self.pid})")
        await self._join_drain(stop=False)
        return ProcessExited(self._finished(), self.stderr_tail)

    async def aclose(self, grace: float = CLOSE_GRACE) -> str:
        """Stop the agent and return its status: stdin EOF, ``grace`` s, SIGTERM to the group,
        ``grace`` s, SIGKILL, reap, join the drain. Shielded; idempotent (a second call waits for
        the first). Bounded by about ``2 * grace + 7`` seconds even if the kernel will not reap."""
        if self._closing is not None:
            with anyio.CancelScope(shield=True):
                await self._closing.wait()
            return self._status or exit_status_text(None)
        self._closing = anyio.Event()
        try:
            with anyio.CancelScope(shield=True):
                await self._ladder(grace)
        finally:
            self._closing.set()
        return self._status or exit_status_text(None)

    async def _ladder(self, grace: float) -> None:
        child = self._child
        try:
            await child.stdin.aclose()  # EOF: the one portable "please exit"
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        with anyio.move_on_after(grace):
            await _wait_exit(child)
        if not child.poll_exit():
            child.terminate_group()
            with anyio.move_on_after(grace):
                await _wait_exit(child)
        if not child.poll_exit():
            child.kill_group()
            with anyio.move_on_after(_KILL_WAIT):
                await _wait_exit(child)
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
            self._child.stop_drain()  # a process outside the group holds the pipe: let the thread go

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
    if sys.platform == "win32":  # pragma: no cover
        child: _Child = await _start_windows(exe, args, workdir, child_env, stdin=stdin, drain_stdout=drain_stdout)
    else:
        child = await _start_posix(exe, args, workdir, child_env, stdin=stdin)
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

_LIVE: set[_Child] = set()
_LIVE_LOCK = threading.Lock()
_OWNER = os.getpid()


def _register(child: _Child) -> None:
    with _LIVE_LOCK:
        _LIVE.add(child)


def _unregister(child: _Child) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(child)


def _reap_all(patience: float = 0.5) -> None:
    """At interpreter exit: SIGTERM every live group, wait up to ``patience``, SIGKILL the rest."""
    if os.getpid() != _OWNER:
        return
    with _LIVE_LOCK:
        children = list(_LIVE)
        _LIVE.clear()
    children = [child for child in children if not child.poll_exit()]
    for child in children:
        child.terminate_group()
    deadline = time.monotonic() + patience
    while children and time.monotonic() < deadline:
        time.sleep(0.01)
        children = [child for child in children if not child.poll_exit()]
    for child in children:
        child.kill_group()
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
