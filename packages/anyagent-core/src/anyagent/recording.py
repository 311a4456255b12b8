"""The wire recorder (``anyagent.wire.WireRecorder``): every raw frame of a session, both
directions, to a JSONL file.

Its own module so that ``process`` (which notes a process's start and exit), ``wire`` (JSON lines)
and ``http`` (HTTP exchanges) all use it without importing one another.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._codec import _dumps
from .values import JSON

__all__ = ["WireRecorder"]

_BATCH_LIMIT = 256 * 1024  # bytes of recorded frames batched before a write
_OPEN_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_APPEND
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO with no reader fails at once instead of blocking the loop
    | getattr(os, "O_NOFOLLOW", 0)  # a symlink is refused, never appended through
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _finite(value: Any) -> Any:
    """``value`` with every NaN and infinity replaced by None (null)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _strict(value: Any) -> bytes:
    """``_dumps`` as strict JSON: a non-finite float is written as null (msgspec already does so;
    the standard codec's fallback would write ``NaN``)."""
    data = _dumps(value)
    if b"NaN" in data or b"Infinity" in data:
        try:
            data = _dumps(_finite(value))
        except RecursionError:
            data = _dumps({"_raw": "(a frame nested too deeply to record)"})
    return data


def _open_problem(path: Path, exc: OSError) -> OSError:
    """The error to report for a failed open: what the path is when that is why."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return exc
    if stat.S_ISLNK(mode):
        return OSError(exc.errno, "it is a symbolic link (not followed)")
    if not stat.S_ISREG(mode):
        return OSError(exc.errno, "it is not a regular file")
    return exc


class WireRecorder:
    """Tees every raw frame, both directions, to a JSONL file created with mode 0600.

    Line shapes (``_t`` = seconds since the process was spawned, 3 decimals), as in the
    shared recordings:

    * agent → client: the frame itself plus ``_t`` (the agent's own bytes, ``_t`` spliced in);
    * client → agent: ``{"_sent": <frame>, "_t": …}``;
    * a stdout line that is not a JSON object: ``{"_raw": "<text>", "_t": …}`` (an over-long
      line keeps its first 4 KiB and adds ``"_size": <bytes>``);
    * a process start: ``{"_meta": {"cmd": [...], "cwd": "..."}, "_t": 0.0}``; its end:
      ``{"_note": {"exit": <code or status text>}, "_t": …}``;
    * every line is strict JSON: a ``NaN`` or infinity (an agent's own line included) is written
      as ``null``;
    * HTTP wires: ``{"_http": {...}, "_t": …}`` where the inner object has ``kind``:
      ``"request"`` (``id``, ``method``, ``url``, ``body``), ``"response"`` (``id``, ``status``,
      ``body`` or ``text``), ``"error"`` (``id``, ``error``), ``"sse_open"`` (``stream``, ``url``,
      ``status``), ``"sse"`` (``stream``, ``event``, ``id``, ``data`` or ``text``),
      ``"sse_end"`` (``stream``, ``error`` when it broke). Request and response share ``id``;
      events share ``stream``. Headers are not recorded (they carry the session secret).

    Only a regular file is recorded to: the path is opened non-blocking and without following a
    symlink, and a FIFO, a device, a socket or a symlink is refused as a failure (below), so
    opening never blocks the event loop and never writes through a link.

    Recording never fails a turn: the first write error (or a path that cannot be opened) stops
    the recording, sets ``failure``, and calls ``on_failure(message)`` once; ``take_failure()``
    hands the message out once, for an adapter to turn into a ``Diagnostic``. Frames ``JsonLines``
    reads are batched and written whenever it has handed out every line it had buffered (one
    ``write`` per stdout chunk, not per frame); everything else is written at once (``O_APPEND``).
    So the file is complete whenever the reader is idle, and a crash loses at most the frames of
    one chunk the adapter was still working through.
    """

    def __init__(self, path: Path, on_failure: Callable[[str], None] | None = None) -> None:
        """Use ``WireRecorder.open``."""
        self.path = path
        self._fd = -1
        self._t0 = time.monotonic()
        self._on_failure = on_failure
        self._failure: str | None = None
        self._taken = False
        self._finalizer: weakref.finalize[Any, WireRecorder] | None = None
        self._batch = bytearray()
        self._hidden: list[tuple[bytes, bytes]] = []

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, on_failure: Callable[[str], None] | None = None) -> WireRecorder:
        """Open (append, create 0600) the regular file ``path``. Never raises for I/O: a bad path
        (missing directory, a symlink, a FIFO, a device) gives a recorder whose ``failure`` is set
        (and ``on_failure`` has been called)."""
        recorder = cls(Path(path), on_failure)
        try:
            fd = os.open(recorder.path, _OPEN_FLAGS, 0o600)
        except OSError as exc:
            recorder._fail(_open_problem(recorder.path, exc))
            return recorder
        try:
            mode = os.fstat(fd).st_mode
        except OSError as exc:
            os.close(fd)
            recorder._fail(exc)
            return recorder
        if not stat.S_ISREG(mode):  # a FIFO with a reader, a device: writes could block or go nowhere
            os.close(fd)
            recorder._fail(OSError(errno.EINVAL, "it is not a regular file"))
            return recorder
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)  # an existing file would keep its old mode
        except OSError:
            pass
        recorder._fd = fd
        recorder._finalizer = weakref.finalize(recorder, os.close, fd)
        return recorder

    def redact(self, secrets: Iterable[str]) -> None:
        """Keep ``secrets`` out of every line written from now on (argv, frames, notes): a JSON
        string equal to a secret is written as ``"<redacted>"``, and a secret of 8 characters or
        more is replaced wherever it appears inside a string. For values an adapter passes on the
        wire that the file must not keep (MCP env values, header secrets)."""
        for secret in secrets:
            if not secret:
                continue
            for escaped in {json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}:
                data = escaped.encode("utf-8")
                self._hidden.append((b'"' + data + b'"', b'"<redacted>"'))
                if len(secret) >= 8:
                    self._hidden.append((data, b"<redacted>"))

    @property
    def failure(self) -> str | None:
        """Why recording stopped, or None while it works."""
        return self._failure

    def take_failure(self) -> str | None:
        """The failure message the first time it is asked for after a failure, else None."""
        if self._failure is None or self._taken:
            return None
        self._taken = True
        return self._failure

    @property
    def elapsed(self) -> float:
        """Seconds since the last process start (or since the recorder opened)."""
        return time.monotonic() - self._t0

    def process_started(self, argv: Sequence[str], cwd: str) -> None:
        """A new agent process: restart the clock and write its ``_meta`` line."""
        self._t0 = time.monotonic()
        self._write(_strict({"_meta": {"cmd": list(argv), "cwd": cwd}, "_t": 0.0}) + b"\n")

    def note(self, fields: Mapping[str, JSON]) -> None:
        """A recorder annotation ``{"_note": fields}`` (not protocol)."""
        self._wrap(b'{"_note":', _strict(dict(fields)))

    def received(self, frame: Mapping[str, JSON]) -> None:
        """An agent → client frame (use when you parsed it yourself; JsonLines records for you)."""
        self._received_line(_strict(dict(frame)), frame, self._stamp())
        self.flush()

    def received_raw(self, text: str, size: int | None = None) -> None:
        """A stdout line that is not a JSON object (``size``: its length when it was cut)."""
        record: dict[str, JSON] = {"_raw": text}
        if size is not None:
            record["_size"] = size
        record["_t"] = round(self.elapsed, 3)
        self._write(_strict(record) + b"\n")

    def sent(self, frame: JSON) -> None:
        """A client → agent frame."""
        self._sent_line(_strict(frame))

    def http(self, fields: Mapping[str, JSON]) -> None:
        """An HTTP exchange step: ``{"_http": fields}`` (see the class docstring for ``kind``)."""
        self._wrap(b'{"_http":', _strict(dict(fields)))

    def flush(self) -> None:
        """Write batched frames now."""
        if self._batch:
            data = bytes(self._batch)
            self._batch.clear()
            self._write(data)

    def close(self) -> None:
        """Write what is batched, stop recording and close the file (idempotent)."""
        self.flush()
        self._close_file()

    def _close_file(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
        self._fd = -1

    # -- fast paths used by JsonLines: the bytes are already serialized

    def _stamp(self) -> bytes:
        """The ``_t`` member that closes a recorded agent frame (one per stdout chunk)."""
        return b',"_t":%.3f}\n' % (time.monotonic() - self._t0)

    def _received_line(self, line: bytes, frame: Mapping[str, Any], stamp: bytes) -> None:
        """Batch an agent line with ``stamp`` spliced over its closing brace (call ``flush``)."""
        if self._fd < 0:
            return
        batch = self._batch
        if not frame:
            batch += b"{" + stamp[1:]
        else:
            # UTF-16/32 JSON cannot start and end with these bytes; padded or BOM lines re-serialize,
            # and so do lines that may hold the NaN or Infinity the standard codec accepted
            spliceable = line[:1] == b"{" and line[-1:] == b"}" and b"NaN" not in line and b"Infinity" not in line
            batch += line if spliceable else _strict(dict(frame))
            batch[-1:] = stamp
        if len(batch) > _BATCH_LIMIT:
            self.flush()

    def _sent_line(self, payload: bytes) -> None:
        if b"NaN" in payload or b"Infinity" in payload:  # the standard codec's fallback wrote them
            try:
                payload = _strict(json.loads(payload))
            except (ValueError, RecursionError):
                payload = _strict({"_raw": payload.decode("utf-8", "replace")})
        self._wrap(b'{"_sent":', payload)

    def _wrap(self, prefix: bytes, payload: bytes) -> None:
        self._write(prefix + payload + b',"_t":%.3f}\n' % self.elapsed)

    def _write(self, data: bytes) -> None:
        if self._fd < 0:
            return
        if self._batch:  # keep the file in wire order
            data, self._batch = bytes(self._batch) + data, bytearray()
        for secret, mask in self._hidden:
            if secret in data:
                data = data.replace(secret, mask)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: OSError) -> None:
        self._batch.clear()
        self._close_file()
        self._failure = f"wire recording to {self.path} stopped: {exc.strerror or exc}"
        if self._on_failure is not None:
            try:
                self._on_failure(self._failure)
            except Exception:
                pass  # a recording problem never fails a turn, not even through its callback
