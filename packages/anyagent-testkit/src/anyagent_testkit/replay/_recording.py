"""Reading a wire recording into typed lines.

In: the text of a JSONL recording (the shared ``recordings/`` format, which is also what
``SessionOptions.record_wire()`` writes). Out: a ``Recording`` — a list of ``Line``s split into
processes ("segments") at each ``_meta`` line.

Line shapes understood:

* ``{"_sent": obj, "_t": s}`` — the client wrote ``obj`` to the agent's stdin (``CLIENT``).
* ``{"_raw": "text", "_t": s}`` — the agent wrote a non-JSON stdout line (``RAW``).
* ``{"_meta": {...}}`` — a process started (``META``; starts a new segment).
* ``{"_note": {...}}`` — recorder annotation (``NOTE``); ``{"exit": n}`` and ``{"signal": "SIGINT"}``
  are acted on by the player, the rest is bookkeeping.
* ``{"_stderr": "text"}`` / ``{"_exit": n}`` — stderr text and exit status (another recorder's spelling).
* anything else — one frame the agent wrote to stdout (``AGENT``), recorder keys stripped.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

__all__ = ["RECORDER_KEYS", "Line", "LineKind", "Recording", "RecordingError", "load_recording", "parse_recording"]

RECORDER_KEYS = frozenset({"_t", "_sent", "_raw", "_meta", "_note", "_stderr", "_exit"})
"""Top-level keys a recorder adds; they are never part of a frame the agent wrote."""


class RecordingError(ValueError):
    """The recording cannot be read (a line that is not JSON, an unknown segment, a missing file)."""


class LineKind(enum.Enum):
    """What one recording line stands for."""

    AGENT = "agent"
    CLIENT = "client"
    RAW = "raw"
    META = "meta"
    NOTE = "note"
    STDERR = "stderr"
    EXIT = "exit"


@attrs.frozen
class Line:
    """One recording line: its 1-based ``number`` in the file, ``kind``, ``value`` and ``_t`` (or None).

    ``value`` is the agent frame (recorder keys stripped), the client frame under ``_sent``, the raw
    text, the ``_meta``/``_note`` object, the stderr text, or the exit status.
    """

    number: int
    kind: LineKind
    value: Any
    t: float | None = None

    @property
    def exit_status(self) -> int | None:
        """The exit status this line records (``_note.exit`` or ``_exit``), else None."""
        if self.kind is LineKind.EXIT and isinstance(self.value, int):
            return self.value
        if self.kind is LineKind.NOTE and isinstance(self.value, dict):
            status = self.value.get("exit")
            if isinstance(status, int) and not isinstance(status, bool):
                return status
        return None

    @property
    def signal_name(self) -> str | None:
        """The signal the client sent at this point (``_note.signal``), else None."""
        if self.kind is LineKind.NOTE and isinstance(self.value, dict):
            name = self.value.get("signal")
            if isinstance(name, str) and name:
                return name
        return None


@attrs.frozen
class Recording:
    """A parsed recording: ``lines`` in file order, grouped into ``segments`` (one per process)."""

    path: Path | None
    lines: tuple[Line, ...]
    segments: tuple[tuple[Line, ...], ...]

    def segment(self, number: int | None) -> tuple[Line, ...]:
        """Lines of process ``number`` (1-based), or every line when ``number`` is None."""
        if number is None:
            return self.lines
        if not 1 <= number <= len(self.segments):
            raise RecordingError(f"the recording has {len(self.segments)} process(es); there is no process {number}")
        return self.segments[number - 1]

    @property
    def agent_uses_jsonrpc_key(self) -> bool:
        """Whether the agent's own frames carry ``"jsonrpc": "2.0"`` (ACP does, codex does not)."""
        return any(
            line.kind is LineKind.AGENT and isinstance(line.value, dict) and "jsonrpc" in line.value
            for line in self.lines
        )


def load_recording(path: str | Path) -> Recording:
    """Read and parse the recording at ``path`` (UTF-8 JSONL)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordingError(f"cannot read recording {file}: {exc}") from exc
    return parse_recording(text.splitlines(), path=file)


def parse_recording(lines: Iterable[str], path: Path | None = None) -> Recording:
    """Parse recording text lines; blank lines are ignored, a non-JSON line is a ``RecordingError``."""
    parsed: list[Line] = []
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            where = f"{path}:{number}" if path else f"line {number}"
            raise RecordingError(f"{where} is not JSON ({exc.msg})") from exc
        parsed.append(_classify(number, obj))
    return Recording(path=path, lines=tuple(parsed), segments=_split_segments(parsed))


def _classify(number: int, obj: Any) -> Line:
    if not isinstance(obj, dict):
        return Line(number, LineKind.AGENT, obj)
    t = obj.get("_t")
    stamp = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
    for key, kind in (
        ("_sent", LineKind.CLIENT),
        ("_raw", LineKind.RAW),
        ("_meta", LineKind.META),
        ("_note", LineKind.NOTE),
        ("_stderr", LineKind.STDERR),
        ("_exit", LineKind.EXIT),
    ):
        if key in obj:
            return Line(number, kind, obj[key], stamp)
    frame = {key: value for key, value in obj.items() if key not in RECORDER_KEYS}
    return Line(number, LineKind.AGENT, frame, stamp)


def _split_segments(lines: list[Line]) -> tuple[tuple[Line, ...], ...]:
    segments: list[list[Line]] = [[]]
    for line in lines:
        starts_process = line.kind is LineKind.META
        if starts_process and any(item.kind is not LineKind.NOTE for item in segments[-1]):
            segments.append([])
        segments[-1].append(line)
    return tuple(tuple(segment) for segment in segments)
