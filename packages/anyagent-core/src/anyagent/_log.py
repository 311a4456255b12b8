"""anyagent's stdlib ``logging``, kept off the import and the hot path.

Loggers: ``anyagent.wire`` (DEBUG: every frame read and written, per agent process, redacted and
cut at 2000 characters; HTTP requests by method, path and status), ``anyagent.runtime`` (INFO:
sessions opened and closed), ``anyagent.engine`` (INFO: turns started and ended). Secrets never
reach a record: values under keys that name credentials, bearer tokens and ``sk-…`` keys are
replaced by ``<redacted>``.

``import anyagent`` does not import ``logging``: ``enabled(name, level)`` looks for it in
``sys.modules`` — an app that never imported it configured no handler, so there is nothing to
emit — and the callers ask once per chunk read or per lifecycle step, never per character.
"""

from __future__ import annotations

import re
import sys
from typing import Any

DEBUG = 10
INFO = 20
LIMIT = 2000  # characters of one frame in a record

_loggers: dict[str, Any] = {}

_SECRET_KEY = re.compile(r"(?i)(api[_-]?key|token|secret|password|passwd|authori[sz]ation|cookie|credential)")
_SECRET_TEXT = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}|\b(sk-[A-Za-z0-9_-]{6})[A-Za-z0-9_-]+")


def enabled(name: str, level: int) -> Any | None:
    """The logger ``name`` when it would emit at ``level``, else None (and None when ``logging`` was
    never imported: nothing is configured to hear it)."""
    log = _loggers.get(name)
    if log is None:
        logging = sys.modules.get("logging")
        if logging is None:
            return None
        log = _loggers[name] = logging.getLogger(name)
    return log if log.isEnabledFor(level) else None


def redact(value: Any, depth: int = 0) -> Any:
    """``value`` (a decoded frame) with every credential replaced by ``<redacted>``."""
    if depth > 32:
        return "…"
    if type(value) is dict:
        # a credential is a string under a key that names one ("input_tokens": 12 is a count, kept)
        return {
            k: "<redacted>" if type(v) is str and v and _SECRET_KEY.search(str(k)) else redact(v, depth + 1)
            for k, v in value.items()
        }
    if type(value) is list:
        return [redact(item, depth + 1) for item in value]
    if type(value) is str:
        return redact_text(value)
    return value


def redact_text(text: str) -> str:
    return _SECRET_TEXT.sub(lambda m: (m[1] or m[2] or "") + "<redacted>", text)


def frame_text(frame: Any) -> str:
    """A frame for a DEBUG record: redacted compact JSON, cut at ``LIMIT`` characters."""
    import json

    try:
        text = json.dumps(redact(frame), ensure_ascii=False, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):
        text = redact_text(repr(frame))
    return text if len(text) <= LIMIT else text[:LIMIT] + f"… ({len(text)} chars)"
