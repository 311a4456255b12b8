"""The client methods an agent calls: ``fs/*`` and ``terminal/*``.

What flows in: the decoded params of one agent request. What flows out: its JSON result, or an
``RpcFailure`` carrying the JSON-RPC error to answer with. Files are read and written only inside
the session's directory; terminals are real processes (``anyagent.process.spawn``: own process
group, stderr merged into the output, always reaped on release or close).
"""

from __future__ import annotations

import codecs
import math
import os
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from anyagent import AgentError
from anyagent import jsonread as j
from anyagent.process import AgentProcess, spawn
from anyagent.toolkit import FileTooLarge, NotRegularFile, read_attachment
from anyagent.wire import JsonRpcCode

from .translate import AcpCode

__all__ = [
    "DEFAULT_OUTPUT_LIMIT",
    "MAX_FILE_BYTES",
    "STREAM_INTERVAL",
    "STREAM_LIMIT",
    "FileAccess",
    "RpcFailure",
    "TerminalStreams",
    "Terminals",
]

MAX_FILE_BYTES = 32 * 1024 * 1024
"""The largest file ``fs/read_text_file`` returns."""

DEFAULT_OUTPUT_LIMIT = 1024 * 1024
"""Bytes of terminal output kept when the agent names no ``outputByteLimit``."""

STREAM_INTERVAL = 0.05
"""Seconds between two streamed chunks of one terminal: what arrives meanwhile joins the next one
(at most 20 ``ToolOutputDelta``s a second per terminal; the output itself is read without delay)."""

STREAM_LIMIT = 1024 * 1024
"""Bytes of one terminal's output streamed as ``ToolOutputDelta``s; past it only the tool's
snapshots carry the output (its kept tail)."""

_STREAM_CHUNK = 64 * 1024

INVALID_PARAMS = JsonRpcCode.INVALID_PARAMS
INTERNAL_ERROR = JsonRpcCode.INTERNAL_ERROR
RESOURCE_NOT_FOUND = AcpCode.RESOURCE_NOT_FOUND


class RpcFailure(Exception):
    """Answer the agent's request with this JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


# ---------------------------------------------------------------------------------------------
# files


class FileAccess:
    """``fs/read_text_file`` and ``fs/write_text_file`` confined to ``root`` (symlinks resolved).

    ``missing_as_empty`` answers a read of a missing file with ``""`` instead of -32002 (gemini
    0.61 cannot create files otherwise).
    """

    def __init__(self, root: Path, *, missing_as_empty: bool = False) -> None:
        self.root = Path(os.path.realpath(root))
        self.missing_as_empty = missing_as_empty

    def _inside(self, params: Mapping[str, Any]) -> Path:
        raw = j.text(params.get("path"))
        if not raw:
            raise RpcFailure(INVALID_PARAMS, "Invalid params: path is required")
        path = Path(raw)
        if not path.is_absolute():
            raise RpcFailure(INVALID_PARAMS, f"Invalid params: path must be absolute: {raw}")
        resolved = Path(os.path.realpath(path))
        if resolved != self.root and self.root not in resolved.parents:
            raise RpcFailure(INVALID_PARAMS, f"Invalid params: {raw} is outside the session directory {self.root}")
        return resolved

    async def read(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``{content}`` of the file, sliced by the 1-based ``line`` and ``limit`` when given."""
        path = self._inside(params)
        try:
            data = await read_attachment(path, MAX_FILE_BYTES) or b""
        except FileTooLarge as exc:
            size = f"{exc.size} bytes" if exc.size is not None else f"over {MAX_FILE_BYTES} bytes"
            raise RpcFailure(INTERNAL_ERROR, f"{path} is {size}; the limit is {MAX_FILE_BYTES}") from None
        except NotRegularFile as exc:
            raise RpcFailure(INVALID_PARAMS, f"Invalid params: {path} is {exc.strerror}") from None
        except FileNotFoundError:
            if self.missing_as_empty:
                return {"content": ""}
            raise RpcFailure(RESOURCE_NOT_FOUND, "Resource not found", {"path": str(path)}) from None
        except IsADirectoryError:
            raise RpcFailure(INVALID_PARAMS, f"Invalid params: {path} is a directory") from None
        except OSError as exc:
            raise RpcFailure(INTERNAL_ERROR, f"cannot read {path}: {exc.strerror or exc}") from None
        content = data.decode("utf-8", "replace")
        line, limit = j.integer(params.get("line")), j.integer(params.get("limit"))
        if line is not None or limit is not None:
            lines = content.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            end = start + limit if limit is not None and limit >= 0 else None
            content = "".join(lines[start:end])
        return {"content": content}

    async def write(self, params: Mapping[str, Any]) -> None:
        """Write ``content`` to the file, creating it (and its parent directories) if missing."""
        path = self._inside(params)
        content = params.get("content")
        if not isinstance(content, str):
            raise RpcFailure(INVALID_PARAMS, "Invalid params: content must be a string")
        try:
            await anyio.Path(path.parent).mkdir(parents=True, exist_ok=True)
            await anyio.Path(path).write_text(content, encoding="utf-8")
        except IsADirectoryError:
            raise RpcFailure(INVALID_PARAMS, f"Invalid params: {path} is a directory") from None
        except OSError as exc:
            raise RpcFailure(INTERNAL_ERROR, f"cannot write {path}: {exc.strerror or exc}") from None


# ---------------------------------------------------------------------------------------------
# terminals


def _signal_name(returncode: int) -> str:
    import signal

    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return str(-returncode)


class _Terminal:
    """One running command: its process, the kept tail of its output, and its exit."""

    def __init__(self, process: AgentProcess, limit: int) -> None:
        self.process = process
        self.limit = max(0, limit)
        self.output = bytearray()
        self.fed = 0  # bytes received in all, kept or not
        self.truncated = False
        self.exited = anyio.Event()

    def feed(self, data: bytes) -> None:
        self.fed += len(data)
        self.output += data
        if len(self.output) > self.limit:
            cut = len(self.output) - self.limit
            # never start in the middle of a UTF-8 sequence
            while cut < len(self.output) and (self.output[cut] & 0xC0) == 0x80:
                cut += 1
            del self.output[:cut]
            self.truncated = True

    def text(self) -> str:
        return self.output.decode("utf-8", "replace")

    def exit_status(self) -> dict[str, Any] | None:
        if not self.exited.is_set():
            return None
        code = self.process.returncode
        if code is None:
            return {"exitCode": None, "signal": None}
        if code < 0:
            return {"exitCode": None, "signal": _signal_name(code)}
        return {"exitCode": code, "signal": None}


def _argv(command: str, args: list[str]) -> list[str]:
    """The argv for a terminal, stderr folded into stdout. Without args the command is a shell line."""
    if sys.platform == "win32":  # pragma: no cover - no POSIX shell to merge the streams
        return [command, *args] if args else ["cmd.exe", "/c", command]
    if args:
        return ["/bin/sh", "-c", 'exec 2>&1; exec "$0" "$@"', command, *args]
    return ["/bin/sh", "-c", f"exec 2>&1\n{command}"]


StartSoon = Callable[..., None]
"""Starts ``func(*args)`` as a task of the session (``DriverLoop.start_soon``)."""

OnOutput = Callable[[str, bytes, int], Awaitable[None]]
"""Told ``(terminal_id, data, fed)`` as a terminal's output arrives; ``fed`` counts the bytes the
terminal received up to the end of ``data``."""


class Terminals:
    """The ``terminal/*`` methods. ``bind`` gives them the session's ``start_soon`` (for the output
    readers) before the first ``create``; ``aclose`` kills and reaps every terminal still alive."""

    def __init__(self, cwd: Path, env: Mapping[str, str]) -> None:
        self._cwd = cwd
        self._env = dict(env)
        self._terminals: dict[str, _Terminal] = {}
        self._counter = 0
        self._start_soon: StartSoon | None = None
        self._on_output: OnOutput | None = None

    def bind(self, start_soon: StartSoon, on_output: OnOutput | None = None) -> None:
        """Start the output readers with ``start_soon`` (cancelled when the session ends) and tell
        ``on_output`` what they read, at most every ``STREAM_INTERVAL`` seconds per terminal."""
        self._start_soon = start_soon
        self._on_output = on_output

    def text(self, terminal_id: str) -> str | None:
        """The kept output of ``terminal_id`` (for tool snapshots that embed it)."""
        terminal = self._terminals.get(terminal_id)
        return terminal.text() if terminal is not None else None

    def kept(self, terminal_id: str) -> tuple[bytes, int] | None:
        """The kept output of ``terminal_id`` as bytes, and the bytes it received in all."""
        terminal = self._terminals.get(terminal_id)
        return (bytes(terminal.output), terminal.fed) if terminal is not None else None

    def _get(self, params: Mapping[str, Any]) -> _Terminal:
        terminal_id = j.text(params.get("terminalId")) or ""
        terminal = self._terminals.get(terminal_id)
        if terminal is None:
            raise RpcFailure(INVALID_PARAMS, f"Invalid params: unknown terminal {terminal_id!r}")
        return terminal

    async def create(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Start ``command args`` in ``cwd`` with ``env`` added; returns ``{terminalId}``."""
        if self._start_soon is None:
            raise RpcFailure(INTERNAL_ERROR, "terminals are not available yet")
        command = j.text(params.get("command"))
        if not command:
            raise RpcFailure(INVALID_PARAMS, "Invalid params: command is required")
        args = [a for a in j.arr(params.get("args")) if isinstance(a, str)]
        env = dict(self._env)
        for var in map(j.obj, j.arr(params.get("env"))):
            name, value = j.text(var.get("name")), j.text(var.get("value"))
            if name and value is not None:
                env[name] = value
        cwd = Path(j.text(params.get("cwd")) or self._cwd)
        limit = j.integer(params.get("outputByteLimit"))
        try:
            process = await spawn(_argv(command, args), cwd=cwd, env=env, stdin=False)
        except AgentError as exc:
            raise RpcFailure(INTERNAL_ERROR, exc.message) from None
        self._counter += 1
        terminal_id = f"term-{self._counter}"
        terminal = _Terminal(process, limit if limit is not None else DEFAULT_OUTPUT_LIMIT)
        self._terminals[terminal_id] = terminal
        self._start_soon(self._pump, terminal_id, terminal)
        return {"terminalId": terminal_id}

    async def _pump(self, terminal_id: str, terminal: _Terminal) -> None:
        """Keep the output until the command closes it, then note its exit; tell ``on_output``
        what arrived, what came within ``STREAM_INTERVAL`` of the last telling joined into one
        chunk (the output is kept at once either way). Cancelled (the session ends), it just
        stops: ``aclose`` kills and reaps the command after."""
        stream = terminal.process.stdout
        told = -math.inf
        ended = False
        while not ended:
            pending = bytearray()
            try:
                data = await stream.receive()
                terminal.feed(data)
                pending += data
                wait = told + STREAM_INTERVAL - anyio.current_time()
                if wait > 0 and self._on_output is not None:
                    with anyio.move_on_after(wait):
                        while len(pending) < _STREAM_CHUNK:
                            more = await stream.receive()
                            terminal.feed(more)
                            pending += more
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                ended = True
            if pending and self._on_output is not None:
                told = anyio.current_time()
                await self._on_output(terminal_id, bytes(pending), terminal.fed)
        await terminal.process.wait()
        terminal.exited.set()

    async def output(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``{output, truncated, exitStatus?}`` so far."""
        terminal = self._get(params)
        result: dict[str, Any] = {"output": terminal.text(), "truncated": terminal.truncated}
        status = terminal.exit_status()
        if status is not None:
            result["exitStatus"] = status
        return result

    async def wait_for_exit(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Wait until the command exits; ``{exitCode, signal}``."""
        terminal = self._get(params)
        await terminal.exited.wait()
        return terminal.exit_status() or {"exitCode": None, "signal": None}

    async def kill(self, params: Mapping[str, Any]) -> None:
        """Kill the command's process group; the terminal stays readable until released."""
        terminal = self._get(params)
        await terminal.process.aclose(grace=0.0)

    async def release(self, params: Mapping[str, Any]) -> None:
        """Kill the command if it still runs and forget the terminal."""
        terminal = self._get(params)
        terminal_id = j.text(params.get("terminalId")) or ""
        self._terminals.pop(terminal_id, None)
        await terminal.process.aclose(grace=0.0)

    async def aclose(self) -> None:
        """Kill and reap every terminal (shielded)."""
        terminals = list(self._terminals.values())
        self._terminals.clear()
        with anyio.CancelScope(shield=True):
            for terminal in terminals:
                await terminal.process.aclose(grace=0.0)


class _Stream:
    """One terminal streamed into one tool: from byte ``start`` on, ``left`` bytes to go."""

    def __init__(self, tool_id: str, start: int, kept: bytes) -> None:
        self.tool_id = tool_id
        self.start = start
        self.left = STREAM_LIMIT
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.decoder.decode(kept)  # a character cut at the end of the kept output completes later


class TerminalStreams:
    """Which tool shows which client terminal, for ``ToolOutputDelta``s.

    ``attach`` links a terminal to the tool that embeds it (``{type: terminal}``) at the moment
    the tool's snapshot reads the terminal's output: what the terminal receives after that is
    ``chunk``ed out as text (UTF-8 decoded across chunk boundaries), up to ``STREAM_LIMIT`` bytes
    per terminal. A terminal streams into the first tool that embeds it; ``clear`` forgets all
    (a turn's end).
    """

    def __init__(self) -> None:
        self._streams: dict[str, _Stream] = {}

    def attach(self, terminal_id: str, tool_id: str, kept: tuple[bytes, int] | None) -> None:
        """Stream ``terminal_id`` into ``tool_id`` from now on (``kept``: ``Terminals.kept``)."""
        if kept is None or terminal_id in self._streams:
            return
        output, fed = kept
        self._streams[terminal_id] = _Stream(tool_id, fed, output)

    def chunk(self, terminal_id: str, data: bytes, fed: int) -> tuple[str, str] | None:
        """``(tool_id, text)`` for the part of ``data`` (ending at byte ``fed``) that arrived after
        ``attach``; None when there is nothing to stream."""
        stream = self._streams.get(terminal_id)
        if stream is None or stream.left <= 0:
            return None
        new = data[max(0, stream.start - (fed - len(data))) :]
        if not new:
            return None
        new = new[: stream.left]
        stream.left -= len(new)
        text = stream.decoder.decode(new, final=stream.left <= 0)
        return (stream.tool_id, text) if text else None

    def clear(self) -> None:
        """Forget every link."""
        self._streams.clear()
