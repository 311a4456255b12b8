"""The Windows child (``process`` imports this module only on Windows).

The agent starts through ``anyio.open_process`` in a new process group and is put in a
kill-on-close Job Object, so ``kill_group`` (``TerminateJobObject``) reaches what it started.
Never run by the Linux suite; mypy type-checks it on every platform (nothing here is guarded by
``sys.platform``; the one Windows-only ctypes name, ``WinDLL``, is looked up by name).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import threading
from collections.abc import Mapping
from ctypes import wintypes
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.abc import ByteReceiveStream, ByteSendStream

from ._process_base import _close_fds, _NoStdin, _NoStdout, _spawn_message, _Tail, _unregister
from .errors import SpawnFailed

__all__ = ["start_child"]

_CMD_FORBIDDEN = frozenset('"%!^&|<>()\r\n\x00')  # cmd.exe re-parses these inside a batch file's line
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
    k32 = getattr(ctypes, "WinDLL")("kernel32", use_last_error=True)  # noqa: B009 - typed off Windows too
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
    def agent_pid(self) -> int:
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

    def escapees(self) -> list[tuple[int, str]]:
        return []  # the Job Object holds every descendant

    def kill_escapees(self, escapees: list[tuple[int, str]]) -> None:
        pass

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


async def start_child(
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
