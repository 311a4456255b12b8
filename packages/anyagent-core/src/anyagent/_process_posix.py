"""The POSIX child (``process`` imports this module everywhere but Windows).

The agent is forked with ``subprocess.Popen`` into a new session (so it leads its own process
group), from a worker thread; on Linux the host's one guard process (see ``_GUARD_SRC``) kills
its group if the host dies (without pidfds: an exec shim sets its parent-death signal instead,
see ``_SHIM``). We
own every pipe end as a non-blocking anyio stream. One reactor thread per host process (not per
child: ``_Reactor``) feeds every child's stderr into its bounded tail and reaps each leader the
moment its pidfd says it exited, killing stragglers in its group first; the event loop waits for an
exit on a pidfd of its own (``wait_exited``), so a live, quiet session costs no wakeups.
Where the guard runs the agent is started under the reaper (``_REAPER``, a child subreaper) that
holds its whole process tree and kills what is left of it once the agent exits.
"""

from __future__ import annotations

import fcntl
import os
import select
import selectors
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import ByteReceiveStream, ByteSendStream

from ._process_base import (
    _LIVE,
    _LIVE_LOCK,
    _POLL_FIRST,
    _POLL_MAX,
    _close_fds,
    _discard,
    _NoStdin,
    _NoStdout,
    _spawn_message,
    _Tail,
    _unregister,
    exit_status_text,
)
from .errors import SpawnFailed

assert sys.platform != "win32"  # POSIX only; this also makes mypy --platform win32 skip the rest

_LINUX = sys.platform.startswith("linux")  # a constant, not a platform check mypy would narrow on

__all__ = ["start_child"]

_EXEC_WAIT = 30.0  # seconds the exec shim may take to exec the agent
_PIPE_SIZE = 1024 * 1024  # Linux: ask for 1 MiB stdout pipes (fewer wakeups); best effort


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


# ---- the reactor: one thread drains and reaps for every child


class _Reactor:
    """A single daemon thread (started on first use, again after a fork) that waits in one
    ``epoll`` for every child's drained pipes and pidfd: a readable pipe is read into its tail,
    a readable pidfd reaps its leader. Without pidfds (Linux < 5.3, other POSIX) the children
    still running are polled every ``_NO_PIDFD_POLL`` seconds; with them, nothing wakes the
    thread while nothing happens. Registrations run in the thread itself (``call``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._selector: selectors.BaseSelector | None = None
        self._wake_w = -1
        self._calls: list[Callable[[], None]] = []
        self.polled: set[_DrainJob] = set()
        self._uncounted: set[int] = set()

    def call(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the reactor thread, soon."""
        with self._lock:
            if self._thread is None:
                self._start_locked()
            self._calls.append(fn)
            wake = self._wake_w
        try:
            os.write(wake, b"!")
        except (BlockingIOError, InterruptedError):
            pass  # the pipe is full of wake-ups already

    def _start_locked(self) -> None:
        selector = selectors.DefaultSelector()
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        selector.register(wake_r, selectors.EVENT_READ, None)
        self._selector, self._wake_w = selector, wake_w
        thread = threading.Thread(target=self._run, args=(selector, wake_r), name="anyagent-reactor", daemon=True)
        thread.start()  # may raise (no thread can be started): the caller's spawn fails cleanly
        self._thread = thread

    def start(self) -> None:
        """Start the thread now (it starts on the first spawn anyway)."""
        self.call(lambda: None)

    def watched(self) -> int:
        """How many pipes and pidfds the reactor watches now (0 once every agent is reaped and
        drained)."""
        selector = self._selector
        return 0 if selector is None else max(0, len(selector.get_map()) - 1 - len(self._uncounted))

    def register(self, fd: int, callback: Callable[[int], None], *, counted: bool = True) -> None:
        """In the reactor thread: call ``callback(fd)`` whenever ``fd`` is readable. ``counted=False``:
        the host's own (the guard's socket), not an agent's: ``watched`` leaves it out."""
        assert self._selector is not None
        self._selector.register(fd, selectors.EVENT_READ, callback)
        if not counted:
            self._uncounted.add(fd)

    def unregister(self, fd: int) -> None:
        """In the reactor thread: stop watching ``fd`` (the caller closes it)."""
        assert self._selector is not None
        self._uncounted.discard(fd)
        try:
            self._selector.unregister(fd)
        except (KeyError, ValueError):
            pass

    def _run(self, selector: selectors.BaseSelector, wake_r: int) -> None:
        while True:
            timeout = _NO_PIDFD_POLL if self.polled else None
            for key, _ in selector.select(timeout):
                if key.data is None:
                    try:
                        while os.read(wake_r, 4096):
                            pass
                    except BlockingIOError:
                        pass
                    with self._lock:
                        calls, self._calls = self._calls, []
                    for fn in calls:
                        fn()
                elif selector.get_map().get(key.fd) is key:  # not unregistered earlier in this batch
                    key.data(key.fd)
            for job in list(self.polled):
                job.check_exit()

    def forget_after_fork(self) -> None:
        """A forked child has no reactor thread: the next use starts a fresh one."""
        self._lock = threading.Lock()
        self._thread = None
        self._selector = None
        self._wake_w = -1
        self._calls = []
        self.polled = set()
        self._uncounted = set()


_NO_PIDFD_POLL = 0.2
_REACTOR = _Reactor()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_REACTOR.forget_after_fork)


class _DrainJob:
    """One child's work in the reactor: drain ``fds`` into their tails until EOF and reap the
    leader once it exits. ``is_alive`` until both are done (or ``stop``)."""

    def __init__(self, child: _PosixChild, fds: dict[int, _Tail]) -> None:
        self._child = child
        self._fds = fds
        self._pidfd: int | None = None
        self._exited = False
        self._done = threading.Event()

    def is_alive(self) -> bool:
        return not self._done.is_set()

    def start(self) -> None:
        """In the reactor thread."""
        for fd in self._fds:
            os.set_blocking(fd, False)
            _REACTOR.register(fd, self._readable)
        self._pidfd = _open_pidfd(self._child.pid)
        if self._pidfd is not None:
            _REACTOR.register(self._pidfd, self._exit_readable)
        else:
            _REACTOR.polled.add(self)
        self.check_exit()

    def _readable(self, fd: int) -> None:
        if not _PosixChild._drain_once(fd, self._fds[fd]):
            _REACTOR.unregister(fd)
            os.close(fd)
            del self._fds[fd]
            self._maybe_done()

    def _exit_readable(self, fd: int) -> None:
        self.check_exit()

    def check_exit(self) -> None:
        if self._exited or self._done.is_set():
            return
        self._exited = self._child.poll_exit()
        if self._exited:
            self._forget_exit()
            self._maybe_done()

    def _forget_exit(self) -> None:
        _REACTOR.polled.discard(self)
        if self._pidfd is not None:
            _REACTOR.unregister(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    def _maybe_done(self) -> None:
        if self._exited and not self._fds:
            self._done.set()

    def stop(self) -> None:
        """In the reactor thread: let go of everything now (a pipe held by an escaped process)."""
        if self._done.is_set():
            return
        for fd in list(self._fds):
            _REACTOR.unregister(fd)
            os.close(fd)
        self._fds.clear()
        self._forget_exit()
        self._done.set()


# waitid(WNOWAIT) sees a zombie without reaping it (not on every POSIX; then no straggler kill)
_WAITID: Any = getattr(os, "waitid", None) if hasattr(os, "WNOWAIT") else None


class _PosixChild:
    """A child started with ``subprocess.Popen`` in a new session; we own every pipe end.

    Reaping and group signals happen under one lock, so the group is never signalled after the
    leader was reaped (its id could then belong to someone else)."""

    def __init__(self, popen: subprocess.Popen[bytes], stdin_fd: int | None, stdout_fd: int, stderr_fd: int) -> None:
        self._pid = popen.pid
        self._agent_pid = popen.pid
        self._popen = popen
        self._lock = threading.Lock()
        self._reaped = False
        self._code: int | None = None
        self._stdin: ByteSendStream = _FdSendStream(stdin_fd) if stdin_fd is not None else _NoStdin()
        self._stdout_fd = stdout_fd  # -1 once a stream or the drain thread owns it
        self._stdout: _FdReceiveStream | None = None
        self._stderr_fd = stderr_fd  # -1 once the reactor owns it
        self._job: _DrainJob | None = None
        self._exit_fd = _open_pidfd(self._pid)  # the event loop's own, for ``wait_exited``
        self._exit_waiter: anyio.Event | None = None
        self.contained = False  # led by the reaper (``_REAPER``): the guard gives it time to clean up

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def agent_pid(self) -> int:
        """The agent's own id: the leader's, or under the reaper the reaper's child."""
        return self._agent_pid

    @agent_pid.setter
    def agent_pid(self, pid: int) -> None:
        self._agent_pid = pid

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

    def escapees(self) -> list[tuple[int, str]]:
        """Linux: the live leader's descendants that left its group (``setsid``), as (pid, start
        time), so ``kill_escapees`` can reach them after the group is gone. Empty elsewhere."""
        if self._reaped or not _LINUX:
            return []
        walked = self._walk_children()
        if walked is not None:
            return walked
        parents: dict[int, list[tuple[int, int, str]]] = {}
        try:
            entries = os.listdir("/proc")
        except OSError:
            return []
        for entry in entries:
            if entry.isdigit():
                fields = _proc_stat(int(entry))
                if fields is not None:
                    parents.setdefault(int(fields[1]), []).append((int(entry), int(fields[2]), fields[19]))
        found: list[tuple[int, str]] = []
        todo = [self._pid]
        while todo and len(found) < 4096:
            for pid, pgid, start in parents.get(todo.pop(), ()):
                todo.append(pid)
                if pgid != self._pid:
                    found.append((pid, start))
        return found

    def _walk_children(self) -> list[tuple[int, str]] | None:
        """``escapees`` through ``/proc/PID/task/TID/children`` (the leader's tree only, so a
        close costs the same with 1 or 1000 agents on the host); None where the kernel lacks
        those files (then every process in ``/proc`` is read)."""
        found: list[tuple[int, str]] = []
        todo = [self._pid]
        while todo and len(found) < 4096:
            kids = _children(todo.pop())
            if kids is None:
                return None
            for pid in kids:
                fields = _proc_stat(pid)
                if fields is None:
                    continue
                todo.append(pid)
                if int(fields[2]) != self._pid:
                    found.append((pid, fields[19]))
        return found

    @staticmethod
    def kill_escapees(escapees: list[tuple[int, str]]) -> None:
        """SIGKILL each still-running process of ``escapees`` (through a pidfd checked against its
        start time, so a reused id is never signalled)."""
        opener = getattr(os, "pidfd_open", None)
        sender = getattr(signal, "pidfd_send_signal", None)
        if opener is None or sender is None:
            return
        for pid, start in escapees:
            try:
                pidfd = opener(pid)
            except OSError:
                continue
            try:
                fields = _proc_stat(pid)
                if fields is not None and fields[19] == start:
                    sender(pidfd, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os.close(pidfd)

    def close_streams(self) -> None:
        if isinstance(self._stdin, _FdSendStream):
            self._stdin.close()
        if self._stdout is not None:
            self._stdout.close()
        _close_fds(self._stdout_fd, self._stderr_fd)
        self._stdout_fd = self._stderr_fd = -1
        with self._lock:  # the guard's ``_tell_all_locked`` dups it under this lock
            exit_fd, self._exit_fd = self._exit_fd, None
        if exit_fd is not None:
            if self._exit_waiter is not None:
                anyio.notify_closing(exit_fd)
            os.close(exit_fd)

    async def wait_exited(self) -> None:
        """Return once the leader is reaped: the event loop waits on a pidfd (one task at a
        time; others wait for it), so nothing wakes while the agent runs. Without a pidfd it
        polls, backing off to 50 ms."""
        delay = _POLL_FIRST
        while not self.poll_exit():
            waiter = self._exit_waiter
            if waiter is not None:
                await waiter.wait()
                continue
            exit_fd = self._exit_fd
            if exit_fd is None:
                await anyio.sleep(delay)
                delay = min(delay * 2, _POLL_MAX)
                continue
            waiter = self._exit_waiter = anyio.Event()
            try:
                await anyio.wait_readable(exit_fd)
            except (anyio.ClosedResourceError, OSError):
                await anyio.sleep(delay)  # closed under us (the streams closed): check again
                delay = min(delay * 2, _POLL_MAX)
            finally:
                self._exit_waiter = None
                waiter.set()

    def start_drain(self, tails: Mapping[str, _Tail]) -> _DrainJob:
        fds = {self._stderr_fd: tails["stderr"]}
        if "stdout" in tails:
            fds[self._stdout_fd] = tails["stdout"]
            self._stdout_fd = -1
        self._stderr_fd = -1  # the reactor closes what it was given
        job = self._job = _DrainJob(self, fds)
        try:
            _REACTOR.call(job.start)
        except BaseException:
            _close_fds(*fds)
            raise
        return job

    def stop_drain(self) -> None:
        job = self._job
        if job is not None:
            _REACTOR.call(job.stop)

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


def _children(pid: int) -> list[int] | None:
    """The children of every thread of ``pid`` (empty when it is gone); None when the kernel
    has no ``children`` files (``CONFIG_PROC_CHILDREN``)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    kids: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as file:
                kids += [int(part) for part in file.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # that thread ended meanwhile
            return None
        except OSError:
            continue
    return kids


def _proc_stat(pid: int) -> list[str] | None:
    """``/proc/PID/stat`` after the command name: [state, ppid, pgrp, …, starttime at 19]."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    return fields if len(fields) > 19 else None


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


# What the exec shim and the reaper share. Their start is kept small (each launch pays it): the
# C modules ``posix`` and ``_signal`` stand in for ``os`` and ``signal`` (``import signal`` alone
# brings enum, functools and collections: ~9 ms of CPU on a loaded 2-core machine; ``os`` ~1.5 ms)
# and ``prctl`` calls the C function through ``_ctypes`` (``import ctypes``: ~6 ms), falling back to
# ``ctypes``. ``exec_agent``, in the process that becomes the agent: restore what Python startup
# changed (ignored SIGPIPE/SIGXFSZ, the C-locale coercion of LC_CTYPE: ``putenv``/``unsetenv``
# reach the environment ``execv`` passes on), report ``hello`` on the status pipe (close-on-exec
# from here on, so the host reads EOF once the exec worked), exec ``argv``; an exec error goes back
# as ``errno:text`` (``_exec_error`` reads it).
_EXEC_AGENT = textwrap.dedent(
    """\
    import posix as os, _signal as signal, sys

    def prctl(option, value):
        try:
            import _ctypes

            class Int(_ctypes._SimpleCData):
                _type_ = "i"

            class Function(_ctypes.CFuncPtr):
                _flags_ = _ctypes.FUNCFLAG_CDECL
                _restype_ = Int

            return Function(_ctypes.dlsym(_ctypes.dlopen(None), "prctl"))(option, value, 0, 0, 0)
        except Exception:
            pass
        try:
            import ctypes
            return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
        except Exception:
            return -1

    def exec_agent(status, lc, argv, hello):
        for name in ("SIGPIPE", "SIGXFSZ"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        if lc == "-":
            os.unsetenv("LC_CTYPE")
        else:
            os.putenv("LC_CTYPE", lc[1:])
        os.set_inheritable(status, False)
        os.write(status, hello)
        try:
            os.execv(argv[0], argv[1:])
        except OSError as exc:
            os.write(status, ("%d:%s" % (exc.errno or 0, exc.strerror or exc)).encode())
        os._exit(127)
    """
)


def _lc_arg(env: Mapping[str, str]) -> str:
    """How ``exec_agent`` restores LC_CTYPE: ``=value``, or ``-`` (unset)."""
    return "=" + env["LC_CTYPE"] if "LC_CTYPE" in env else "-"


def _exec_error(report: bytes, exe: str) -> str:
    """The message for an ``errno:text`` exec error from ``exec_agent`` (the bytes after ``+``)."""
    code, _, text = report.decode("utf-8", "replace").partition(":")
    return f"cannot execute {exe}: {text} (errno {code})"


# The exec shim that gives the agent a parent-death signal on Linux.
#
# Why a shim: ``prctl(PR_SET_PDEATHSIG)`` has to run in the child between fork and exec.
# ``preexec_fn`` would do it, but it is unsafe with threads (we run drain threads, anyio runs
# worker threads) and disables vfork. Passing it through anyio is not possible (no preexec_fn),
# and trio even forks from a worker thread: PDEATHSIG fires when the *forking thread* exits,
# so a trio-forked agent would be killed when that idle worker thread retires. So we fork with
# ``subprocess.Popen`` from the event-loop thread, and exec this shim, which sets the signal,
# checks that the host did not die in between, and execs the agent (``exec_agent``). Exec errors
# come back through a close-on-exec status pipe, so a bad executable is still a precise ``SpawnFailed``.
# The shim also forks a guard into the agent's group before the exec (double fork, so the agent
# never sees it as a child; it holds none of the agent's pipes and ignores SIGTERM/SIGINT/SIGHUP):
# it blocks on a pidfd of the host and, when the host dies, SIGKILLs the group, so the agent's
# same-group children die with it (PDEATHSIG reaches only the leader). Being in the group, the
# guard dies with it at every ordinary close (the group is SIGKILLed when the leader is reaped).
# Without pidfds (Linux < 5.3) there is no guard.
# Now only the fallback where the host's guard cannot run (Linux without pidfds or ``send_fds``):
# it costs ~25 ms per spawn (``benchmarks/bench_spawn.py``: a Python start, ctypes, a double
# fork) and forks from the event-loop thread; the guard path costs ~1 ms over a bare spawn.
_SHIM = _EXEC_AGENT + textwrap.dedent(
    """\
    host, status, lc = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    try:
        pidfd = os.pidfd_open(host)
    except Exception:
        pidfd = -1
    if os.getppid() != host:
        os._exit(1)
    if pidfd >= 0 and os.fork() == 0:
        try:
            if os.fork() == 0:
                for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"):
                    signal.signal(getattr(signal, name), signal.SIG_IGN)
                null = os.open("/dev/null", os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.closerange(3, pidfd)
                os.closerange(pidfd + 1, 1 << 16)
                import select
                while True:
                    try:
                        select.select([pidfd], [], [])
                        break
                    except InterruptedError:
                        pass
                os.killpg(0, signal.SIGKILL)
        finally:
            os._exit(0)
    if pidfd >= 0:
        os.close(pidfd)
        while True:
            try:
                os.wait()
                break
            except InterruptedError:
                pass
            except ChildProcessError:
                break
    exec_agent(status, lc, sys.argv[4:], b"+")
    """
)


# The reaper: what contains an agent's whole process tree on Linux (issue 28 items 2 and 15).
#
# ``python -I -S`` started in a new session (it leads the group, so every group signal of the
# close ladder reaches it and the agent alike). It makes itself a child subreaper
# (``prctl(PR_SET_CHILD_SUBREAPER)``, Linux >= 3.4): a descendant orphaned anywhere below it
# (a double-fork daemon, the children of an agent that died) is re-parented to it, not to init,
# so it stays in the tree ``escapees`` walks from the leader, even after ``setsid``. It forks
# the agent (same group; signal dispositions restored, then ``exec_agent``), drops its own copies
# of the agent's stdio (so EOF still means the agent closed them), ignores
# SIGINT/SIGTERM/SIGHUP/SIGQUIT (the agent decides what those mean) and waits in ``poll`` on a
# pidfd of the host and on its SIGCHLD wake-up pipe, reaping the orphans it inherits. When the
# agent exits - on its own, from a signal, or SIGKILLed by anyone - or the host dies (however:
# the host's pidfd turns readable; the host's guard leaves a reaper's group alone for
# ``_REAPER_GRACE`` seconds so that it can do this), it SIGKILLs every process left below it, round
# after round until none is left (each round's victims are its own unreaped children, so no id is
# reused under it; an orphan of a killed process is re-parented to it for the next round), then
# exits with the agent's exact status (an exit code, or the same signal raised on itself).
# Cost: one more (small: see ``_EXEC_AGENT``) Python start per launch, ~17 ms of CPU over a bare
# launch at load 20 on 2 cores (~30 ms with ``os``, ``signal`` and ``ctypes``) and ~9 MB RSS per
# agent while it runs; ``ANYAGENT_CONTAIN=0`` turns it off (the bare launch: a
# process group and the ``/proc`` walk at close only).
_REAPER = _EXEC_AGENT + textwrap.dedent(
    """\
    import select
    status, host, lc = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    os.set_inheritable(host, False)
    prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
    inherited = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"):
        sig = getattr(signal, name)
        inherited[sig] = signal.getsignal(sig) == signal.SIG_IGN
        signal.signal(sig, signal.SIG_IGN)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda sig, frame: None)
    try:
        agent = os.fork()
    except OSError as exc:
        os.write(status, ("+%d:%s" % (exc.errno or 0, exc.strerror or exc)).encode())
        os._exit(127)
    if agent == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for sig, ignored in inherited.items():
            signal.signal(sig, signal.SIG_IGN if ignored else signal.SIG_DFL)
        exec_agent(status, lc, sys.argv[4:], b"+%d+" % os.getpid())
    os.close(status)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    waiting = select.poll()
    waiting.register(host, select.POLLIN)
    waiting.register(wake_r, select.POLLIN)
    code = None
    orphaned = False
    while code is None and not orphaned:
        try:
            while True:
                pid, st = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == agent:
                    code = st
        except ChildProcessError:
            break
        if code is not None:
            break
        for fd, _ in waiting.poll():
            if fd == host:
                orphaned = True
            else:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)

    def children():
        me = os.getpid()
        kids = []
        try:
            for tid in os.listdir("/proc/%d/task" % me):
                with open("/proc/%d/task/%s/children" % (me, tid), "rb") as file:
                    kids += [int(part) for part in file.read().split()]
            return kids
        except FileNotFoundError:
            pass
        except OSError:
            return kids
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open("/proc/%s/stat" % entry, "rb") as file:
                        if int(file.read().rsplit(b")", 1)[-1].split()[1]) == me:
                            kids.append(int(entry))
                except (OSError, ValueError, IndexError):
                    pass
        return kids

    for _ in range(1000):
        kids = children()
        if not kids:
            break
        for kid in kids:
            try:
                os.kill(kid, signal.SIGKILL)
            except OSError:
                pass
        for kid in kids:
            try:
                _, st = os.waitpid(kid, 0)
            except (ChildProcessError, InterruptedError):
                continue
            if kid == agent and code is None:
                code = st
    if code is None or orphaned:
        os._exit(1)
    if os.WIFSIGNALED(code):
        sig = os.WTERMSIG(code)
        try:
            import resource
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except Exception:
            pass
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(code))
    """
)


def _use_shim() -> bool:
    return sys.platform.startswith("linux") and bool(sys.executable) and not getattr(sys, "frozen", False)


# The host's guard: one process per host (not per agent) that kills every agent's group when the host dies.
#
# Started lazily at the first spawn (``python -I -S``, no ctypes, nothing waits for it to start: what
# the host sends is buffered in the socket), in a session of its own with an empty environment,
# ignoring the terminal's signals. It inherits a pidfd of the host and one end of a SOCK_SEQPACKET
# socket; for every agent the host sends its leader's pidfd (SCM_RIGHTS, so it names that exact
# process, never a reused id). It forgets a leader the moment that pidfd says it exited (the host
# kills the stragglers of a group itself, while the leader is a zombie). When the host's pidfd
# becomes readable (the host is gone, however it died) it reads what the host sent last and
# SIGKILLs the group of every leader still running, then exits; a leader that is a reaper (sent as
# ``rPID``) sees the host's death itself and kills its whole tree, setsid descendants included,
# which a group kill would not reach: its group is SIGKILLed only if it still runs
# ``_REAPER_GRACE`` seconds later. EOF on the socket alone is not
# enough: a dying host closes its files before its pidfd signals, so the guard waits up to 5 s for
# the pidfd, and exits quietly if the host still runs (it replaced this guard with a new one,
# which it told of every live agent). While a leader runs its id is pinned as the
# group's id (a session leader cannot leave its group), so the group kill reaches only that agent's
# group. Compared with the per-agent exec shim (below, still used where pidfds or ``send_fds`` are
# missing) the agent is exec'd straight by ``Popen`` (vfork, exact exec errors, no second Python
# start per agent), and since no parent-death signal is set, any thread may fork it: the launch
# runs in a worker thread, off the event loop.
# The one gap: an agent is registered just after ``Popen`` returns (the exec already happened), so
# a host killed within that instant leaves that one agent unguarded (it still reads EOF on stdin).
_GUARD_SRC = textwrap.dedent(
    """\
    import os, select, signal, socket, sys, time
    for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    try:
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    except Exception:
        pass
    host, sock, grace = int(sys.argv[1]), socket.socket(fileno=int(sys.argv[2])), float(sys.argv[3])
    leaders = {}
    reapers = set()
    poll = select.poll()
    poll.register(host, select.POLLIN)
    poll.register(sock.fileno(), select.POLLIN)

    def take():
        try:
            data, fds, _, _ = socket.recv_fds(sock, 64, 4)
        except OSError:
            return False
        for pidfd in fds:
            leaders[pidfd] = int(data[1:])
            if data[:1] == b"r":
                reapers.add(pidfd)
            poll.register(pidfd, select.POLLIN)
        return bool(data)

    open_ = True
    while open_:
        try:
            ready = dict(poll.poll())
        except InterruptedError:
            continue
        if host in ready:
            break
        for fd in ready:
            if fd in leaders:
                del leaders[fd]
                reapers.discard(fd)
                poll.unregister(fd)
                os.close(fd)
        if sock.fileno() in ready and not take():
            open_ = False
    if open_:
        sock.setblocking(False)
        while take():
            pass
    else:
        waiting = select.poll()
        waiting.register(host, select.POLLIN)
        if not waiting.poll(5000):
            sys.exit(0)
    exited = {fd for fd, _ in poll.poll(0)}
    for pidfd, pid in leaders.items():
        if pidfd not in exited and pidfd not in reapers:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
    left = select.poll()
    for pidfd in reapers - exited:
        left.register(pidfd, select.POLLIN)
    pending = reapers - exited
    deadline = time.monotonic() + grace
    while pending and time.monotonic() < deadline:
        try:
            done = {fd for fd, _ in left.poll(max(1, int((deadline - time.monotonic()) * 1000)))}
        except InterruptedError:
            continue
        for fd in done:
            left.unregister(fd)
        pending -= done
    for pidfd in pending:
        try:
            os.killpg(leaders[pidfd], signal.SIGKILL)
        except OSError:
            pass
    """
)


class _Guard:
    """The host side of the guard: starts it on first use (again after a fork, or at once from
    the reactor if it dies) and hands it every agent's pidfd."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._popen: subprocess.Popen[bytes] | None = None

    @staticmethod
    def usable() -> bool:
        """Linux with pidfds and ``send_fds``, from a real interpreter."""
        return _use_shim() and hasattr(os, "pidfd_open") and hasattr(socket, "send_fds")

    @property
    def pid(self) -> int | None:
        """The guard's process id while it runs (it is our child), else None."""
        popen = self._popen
        return popen.pid if popen is not None and popen.poll() is None else None

    def start(self) -> None:
        """Start the guard now (the first spawn starts it anyway)."""
        with self._lock:
            self._ensure_locked()

    def watch(self, pid: int, pidfd: int, *, reaper: bool = False) -> bool:
        """Hand the guard a pidfd of leader ``pid`` (``reaper``: it is a reaper, which cleans up
        its own tree when the host dies); False if no guard could take it."""
        with self._lock:
            for _ in range(2):  # a guard that died is replaced, and told of every live agent again
                try:
                    sock = self._ensure_locked()
                    socket.send_fds(sock, [_guard_message(pid, reaper)], [pidfd])
                    return True
                except OSError:
                    self._close_locked()
            return False

    def _ensure_locked(self) -> socket.socket:
        if self._sock is not None and self._popen is not None and self._popen.poll() is None:
            return self._sock
        self._close_locked()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            host: int = getattr(os, "pidfd_open")(os.getpid())  # noqa: B009 - Linux only (usable())
        except BaseException:
            ours.close()
            theirs.close()
            raise
        try:
            self._popen = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _GUARD_SRC, str(host), str(theirs.fileno()), str(_REAPER_GRACE)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},  # nothing of the host's environment (nor a test's marker) lingers in it
                start_new_session=True,
                pass_fds=(host, theirs.fileno()),
            )
        except BaseException:
            ours.close()
            raise
        finally:
            os.close(host)
            theirs.close()
        ours.settimeout(_GUARD_SEND_WAIT)
        self._sock = ours
        self._tell_all_locked(ours)
        fd = ours.fileno()
        _REACTOR.call(lambda: _REACTOR.register(fd, lambda _: self._revive(ours), counted=False))
        return ours

    def _tell_all_locked(self, sock: socket.socket) -> None:
        """A new guard learns of every agent still running (after the old one died)."""
        with _LIVE_LOCK:
            live = [child for child in _LIVE if isinstance(child, _PosixChild)]
        for child in live:
            with child._lock:  # never a pidfd the event loop is closing (its number could be reused)
                if child._exit_fd is None or child._reaped:
                    continue
                pidfd = os.dup(child._exit_fd)
            try:
                socket.send_fds(sock, [_guard_message(child.pid, child.contained)], [pidfd])
            finally:
                os.close(pidfd)

    def _revive(self, sock: socket.socket) -> None:
        """In the reactor thread: the guard's socket reached EOF (the guard died): start another."""
        _REACTOR.unregister(sock.fileno())
        with self._lock:
            if self._sock is sock:
                self._close_locked()
                try:
                    self._ensure_locked()
                except OSError:
                    self._close_locked()  # no process can be started now: the next spawn tries again

    def _close_locked(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:  # closed by the reactor, after it stopped watching it (never a reused fd)
            _REACTOR.call(lambda: _close_watched(sock))
        popen, self._popen = self._popen, None
        if popen is not None and popen.poll() is None:  # a guard we let go: reaped once it exits
            _REACTOR.call(lambda: _reap_later(popen))

    def forget_after_fork(self) -> None:
        """A forked host has its own agents: the next spawn starts its own guard."""
        self._lock = threading.Lock()
        if self._sock is not None:
            self._sock.close()  # our copy only: the parent keeps its guard
        self._sock = None
        self._popen = None


def _guard_message(pid: int, reaper: bool) -> bytes:
    """What the guard is told with a leader's pidfd: ``+PID``, or ``rPID`` for a reaper."""
    return b"%s%d" % (b"r" if reaper else b"+", pid)


def _close_watched(sock: socket.socket) -> None:
    """In the reactor thread: stop watching ``sock``, then close it."""
    if sock.fileno() >= 0:
        _REACTOR.unregister(sock.fileno())
    sock.close()


def _reap_later(popen: subprocess.Popen[bytes]) -> None:
    """In the reactor thread: ``wait`` for a process we let go (an old guard) once it exits."""
    pidfd = _open_pidfd(popen.pid)
    if pidfd is None:
        popen.poll()
        return

    def exited(fd: int) -> None:
        _REACTOR.unregister(fd)
        os.close(fd)
        popen.wait()

    _REACTOR.register(pidfd, exited, counted=False)


_GUARD_SEND_WAIT = 5.0  # seconds a registration may wait for room in the guard's socket
_REAPER_GRACE = 5.0  # seconds the guard leaves a reaper, once the host died, to kill its tree itself
_GUARD = _Guard()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_GUARD.forget_after_fork)


async def start_child(
    exe: str, argv: list[str], cwd: str, env: dict[str, str], *, stdin: bool, drain_stdout: bool
) -> _PosixChild:
    """Fork/exec the agent in a new session with our own pipes; SpawnFailed on any exec error.
    (``drain_stdout`` needs nothing at launch here: ``start_drain`` takes the stdout pipe.)
    Where the host's guard works (or no parent-death signal is needed: not Linux) the launch runs
    in a worker thread; else the exec shim is forked from the event-loop thread."""
    if _contain():
        child, report = await anyio.to_thread.run_sync(_launch_reaped, exe, argv, cwd, env, stdin, limiter=_launchers())
        try:
            await anyio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            await _discard(child)
            raise
        failure = _reaper_report(child, report, exe)
        if failure is not None:
            await _discard(child)
            raise SpawnFailed(failure)
        return child
    if _GUARD.usable() or not _use_shim():
        child = await anyio.to_thread.run_sync(_launch, exe, argv, cwd, env, stdin, limiter=_launchers())
        try:
            await anyio.lowlevel.checkpoint_if_cancelled()
        except BaseException:
            await _discard(child)
            raise
        return child
    return await _start_shimmed(exe, argv, cwd, env, stdin=stdin)


_LAUNCH_THREADS = 4  # launches at a time (each holds a worker thread ~1 ms): a constant, whatever the load
_LAUNCHERS: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar("anyagent_launchers")


def _launchers() -> anyio.CapacityLimiter:
    """This event loop's limiter of launch threads."""
    try:
        return _LAUNCHERS.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(_LAUNCH_THREADS)
        _LAUNCHERS.set(limiter)
        return limiter


def _launch(exe: str, argv: list[str], cwd: str, env: dict[str, str], stdin: bool) -> _PosixChild:
    """In a worker thread: ``Popen`` the agent itself, then hand its pidfd to the guard."""
    popen, in_w, out_r, err_r = _popen_agent(argv, exe, exe, cwd, env, stdin=stdin, exec_errors=True)
    child = _PosixChild(popen, in_w if stdin else None, out_r, err_r)
    if child._exit_fd is not None and _GUARD.usable():
        _GUARD.watch(child.pid, child._exit_fd)
    return child


def _contain() -> bool:
    """Linux with the guard: start each agent under the reaper (``_REAPER``), unless
    ``ANYAGENT_CONTAIN=0`` asks for the bare launch (read at each launch)."""
    return _GUARD.usable() and os.environ.get("ANYAGENT_CONTAIN", "1") != "0"


def _launch_reaped(
    exe: str, argv: list[str], cwd: str, env: dict[str, str], stdin: bool
) -> tuple[_PosixChild, bytes | None]:
    """In a worker thread: ``Popen`` the reaper (which forks and execs the agent), hand its pidfd
    to the guard, and wait (real time, off the loop: no event-loop clock is involved) for the
    exec report; (child, the report, or None if none came within ``_EXEC_WAIT``)."""
    host: int = getattr(os, "pidfd_open")(os.getpid())  # noqa: B009 - Linux only (_contain())
    try:
        status_r, status_w = os.pipe()
    except BaseException:
        os.close(host)
        raise
    command = [sys.executable, "-I", "-S", "-c", _REAPER, str(status_w), str(host), _lc_arg(env), exe, *argv]
    popen, in_w, out_r, err_r = _popen_agent(
        command, None, exe, cwd, env, stdin=stdin, passed=(status_w, host), ours=status_r
    )
    try:
        child = _PosixChild(popen, in_w if stdin else None, out_r, err_r)
        child.contained = True
        if child._exit_fd is not None:
            _GUARD.watch(child.pid, child._exit_fd, reaper=True)
        return child, _read_report(status_r, _EXEC_WAIT)
    finally:
        os.close(status_r)


def _read_report(fd: int, wait: float) -> bytes | None:
    """In a worker thread: what the (blocking) status pipe ``fd`` delivers until EOF, or None if
    EOF does not come within ``wait`` seconds."""
    deadline = time.monotonic() + wait
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        if not poller.poll(left * 1000):
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            return data
        data += chunk


def _reaper_report(child: _PosixChild, report: bytes | None, exe: str) -> str | None:
    """Read the reaper's report into ``child.agent_pid``: None if the agent was exec'd (``+PID+``
    then EOF), else why not (``+PID+errno:text``: the exec failed; ``+errno:text``: the fork did;
    empty: the reaper died; None: no report in time)."""
    if report is None:
        return f"cannot start {exe}: it did not start within {_EXEC_WAIT:g} s"
    if not report:
        return f"cannot start {exe}: the reaper exited first ({exit_status_text(child.returncode)})"
    number, plus, rest = report[1:].partition(b"+")
    if plus and number.isdigit():
        child.agent_pid = int(number)
        if not rest:
            return None
        report = b"+" + rest
    return _exec_error(report[1:], exe)


async def _start_shimmed(exe: str, argv: list[str], cwd: str, env: dict[str, str], *, stdin: bool) -> _PosixChild:
    """Linux without pidfds: the agent through the exec shim (parent-death signal), forked from
    the event-loop thread on purpose (see ``_SHIM``); vfork keeps the fork ~1 ms."""
    status_r, status_w = os.pipe()
    command = [sys.executable, "-I", "-S", "-c", _SHIM, str(os.getpid()), str(status_w), _lc_arg(env), exe, *argv]
    popen, in_w, out_r, err_r = _popen_agent(
        command, None, exe, cwd, env, stdin=stdin, passed=(status_w,), ours=status_r
    )
    child = _PosixChild(popen, in_w if stdin else None, out_r, err_r)
    await _await_exec(child, status_r, exe)
    return child


def _popen_agent(
    command: list[str],
    executable: str | None,
    exe: str,
    cwd: str,
    env: dict[str, str],
    *,
    stdin: bool,
    passed: tuple[int, ...] = (),
    ours: int = -1,
    exec_errors: bool = False,
) -> tuple[subprocess.Popen[bytes], int, int, int]:
    """``Popen`` in a new session with fresh pipes: (popen, stdin's write end or -1, stdout's and
    stderr's read ends). ``passed`` (fds) go to the child and are closed here; ``ours`` is closed if the
    launch fails. ``exec_errors``: the OS error is the agent's own exec's (no shim in between)."""
    in_r, in_w = os.pipe() if stdin else (-1, -1)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    _grow_pipe(out_r)
    try:
        popen = subprocess.Popen(
            command,
            executable=executable,
            stdin=in_r if stdin else subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=passed,
        )
    except OSError as exc:
        _close_fds(in_w, out_r, err_r, ours)
        if exec_errors and exc.filename != cwd and exc.errno is not None:
            raise SpawnFailed(f"cannot execute {exe}: {exc.strerror or exc} (errno {exc.errno})") from exc
        raise SpawnFailed(_spawn_message(exe, cwd, exc)) from exc
    except BaseException as exc:  # ValueError (an embedded NUL the checks missed), MemoryError, …
        _close_fds(in_w, out_r, err_r, ours)
        if isinstance(exc, ValueError):
            raise SpawnFailed(f"cannot start {exe}: {exc}") from exc
        raise
    finally:
        _close_fds(in_r, out_w, err_w, *passed)
    return popen, in_w, out_r, err_r


async def _await_exec(child: _PosixChild, status_r: int, exe: str) -> None:
    """Wait for the shim's report: ``+`` then EOF (exec worked), ``+errno:text`` (exec failed),
    or nothing (the shim died). On failure or cancellation kill, reap and close the child."""
    report = b""
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
    raise SpawnFailed(_exec_error(report[1:], exe))


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
