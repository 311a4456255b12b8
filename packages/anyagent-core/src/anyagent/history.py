"""What every ``Adapter.history`` needs: bounded JSONL sampling off the event loop, times, titles.

An agent's own transcript files can be large (a claude session carries its system prompts) and
many; a listing reads only a head and a tail of each, in one worker thread, and skips a file it
cannot read with a diagnostic instead of failing the whole list.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import attrs

from .types import DiagnosticInfo, DiagnosticLevel

__all__ = [
    "HEAD_BYTES",
    "MAX_FILES",
    "TAIL_BYTES",
    "JsonLinesSample",
    "history_time",
    "read_json_lines_sample",
    "sample_json_lines",
    "title_line",
    "unreadable",
]

HEAD_BYTES = 64 * 1024
"""Bytes ``sample_json_lines`` reads from the start of each file by default."""

TAIL_BYTES = 64 * 1024
"""Bytes ``sample_json_lines`` reads from the end of each file by default."""

MAX_FILES = 5000
"""Files ``sample_json_lines`` reads at most (the most recently modified); the rest are skipped."""

UNREADABLE = "history_unreadable"
"""The diagnostic code of a history file that was skipped."""


@attrs.frozen(repr=False)
class JsonLinesSample:
    """The JSON objects on the whole lines of a file's first ``head_bytes`` (``head``) and, when
    the file is longer, of its last ``tail_bytes`` (``tail``, never overlapping ``head``).

    ``complete``: every line of the file is in ``head`` + ``tail``. ``bad_lines``: lines read
    that were not JSON objects (a line cut at a window's edge is not read, so not counted).
    ``modified`` is the file's modification time (UTC)."""

    path: Path
    head: tuple[dict[str, Any], ...]
    tail: tuple[dict[str, Any], ...]
    complete: bool
    size: int
    modified: datetime
    bad_lines: int = 0

    @property
    def lines(self) -> tuple[dict[str, Any], ...]:
        """``head`` then ``tail``."""
        return self.head + self.tail


def _decode(chunk: bytes) -> tuple[list[dict[str, Any]], int]:
    values: list[dict[str, Any]] = []
    bad = 0
    for raw in chunk.split(b"\n"):
        raw = raw.strip()
        if not raw:
            continue
        try:
            value = json.loads(raw.decode("utf-8", errors="replace"))
        except (ValueError, RecursionError):
            bad += 1
            continue
        if isinstance(value, dict):
            values.append(value)
        else:
            bad += 1
    return values, bad


def read_json_lines_sample(
    path: str | os.PathLike[str], head_bytes: int = HEAD_BYTES, tail_bytes: int = TAIL_BYTES
) -> JsonLinesSample:
    """Read a JSONL file's head and tail, at most ``head_bytes + tail_bytes`` bytes (blocking:
    call it from a worker thread). Raises ``OSError`` for a file that cannot be read; a FIFO or
    device is refused (``OSError``) instead of read."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as file:
        stat = os.fstat(file.fileno())
        if not _regular(stat.st_mode):
            raise OSError(f"{path} is not a regular file")
        size = stat.st_size
        modified = datetime.fromtimestamp(stat.st_mtime, tz=timezone.utc)
        head = file.read(max(0, head_bytes))
        if len(head) >= size:  # the whole file (it may have grown: read no further)
            values, bad = _decode(head)
            return JsonLinesSample(path, tuple(values), (), True, size, modified, bad)
        head_end = head.rfind(b"\n") + 1
        values, bad = _decode(head[:head_end])
        tail_start = max(head_end, size - max(0, tail_bytes))
        complete = tail_start == head_end
        if not complete:
            tail_start -= 1  # one byte earlier: a tail that starts on a line's first byte keeps it
        file.seek(tail_start)
        tail = file.read(size - tail_start)
        if not complete:
            tail = tail[tail.find(b"\n") + 1 :] if b"\n" in tail else b""
        tail_values, tail_bad = _decode(tail)
        return JsonLinesSample(path, tuple(values), tuple(tail_values), complete, size, modified, bad + tail_bad)


def _regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _sample_all(
    find: Callable[[], Iterable[Path]], head_bytes: int, tail_bytes: int, max_files: int
) -> tuple[list[JsonLinesSample], list[DiagnosticInfo]]:
    samples: list[JsonLinesSample] = []
    diagnostics: list[DiagnosticInfo] = []
    try:
        paths = list(find())
    except OSError as exc:
        return [], [DiagnosticInfo(f"cannot list the history files: {exc}", DiagnosticLevel.WARNING, UNREADABLE)]
    if len(paths) > max_files:
        paths.sort(key=_modified, reverse=True)
        diagnostics.append(
            DiagnosticInfo(
                f"{len(paths) - max_files} older history files skipped (more than {max_files})",
                DiagnosticLevel.INFO,
                "history_truncated",
            )
        )
        paths = paths[:max_files]
    for path in paths:
        try:
            samples.append(read_json_lines_sample(path, head_bytes, tail_bytes))
        except OSError as exc:
            diagnostics.append(DiagnosticInfo(f"skipped {path}: {exc}", DiagnosticLevel.WARNING, UNREADABLE))
    return samples, diagnostics


async def sample_json_lines(
    find: Callable[[], Iterable[Path]],
    *,
    head_bytes: int = HEAD_BYTES,
    tail_bytes: int = TAIL_BYTES,
    max_files: int = MAX_FILES,
) -> tuple[list[JsonLinesSample], list[DiagnosticInfo]]:
    """Call ``find`` (it lists the files, e.g. with ``Path.glob``) and sample each file it names,
    all in one worker thread: the samples, and a diagnostic (code ``history_unreadable``) for
    each file that could not be read. At most ``max_files`` files (the newest) are read."""
    return await anyio.to_thread.run_sync(_sample_all, find, head_bytes, tail_bytes, max_files)


def unreadable(path: Path, why: str) -> DiagnosticInfo:
    """The diagnostic for a history file skipped because its content is not what it should be."""
    return DiagnosticInfo(f"skipped {path}: {why}", DiagnosticLevel.WARNING, UNREADABLE)


def history_time(value: object) -> datetime | None:
    """A UTC datetime from what agents store: an RFC 3339 / ISO 8601 string (``Z`` or an offset;
    none means UTC), or a Unix time in seconds or (when above 10^11) milliseconds. None for
    anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if abs(value) > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    text = re.sub(r"(\.\d{6})\d+", r"\1", text)  # finer than microseconds: truncated
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.utcoffset() is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def title_line(text: object, limit: int = 200) -> str | None:
    """A title from free text: whitespace runs (newlines too) as one space, trimmed, cut to
    ``limit`` characters with an ellipsis. None for empty or non-text input."""
    if not isinstance(text, str):
        return None
    line = " ".join(text.split())
    if not line:
        return None
    return line if len(line) <= limit else line[:limit].rstrip() + "\u2026"
