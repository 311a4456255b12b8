"""pi's own history: its session files, read the way its session list reads them (pi 1.6.0).

pi writes each session to ``<sessions>/--<cwd>--/<time>_<id>.jsonl``: ``<sessions>`` is the
``sessionDir`` of ``<agent dir>/settings.json`` when set, else ``<agent dir>/sessions``; the agent
dir is ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``; ``<cwd>`` is the working directory without
its leading separator, every ``/``, ``\\`` and ``:`` as ``-``. The first line is the header
(``{"type": "session", "id", "timestamp", "cwd"}``); a file without one is skipped with a
diagnostic. The title is the latest ``session_info`` name, else the first user message's text;
``updated_at`` the newest message's time; ``message_count`` the ``message`` entries (given when the
file was read whole: head and tail, 64 KiB each). The resume token is the file's path, which
``pi --session`` takes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from anyagent import DiagnosticInfo, HistoryEntry, seam, toolkit
from anyagent import jsonread as j

__all__ = ["agent_dir", "history", "session_dir_name", "sessions_dirs"]


def agent_dir(env: Mapping[str, str]) -> Path:
    """``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent`` (``HOME`` from ``env`` when it has one)."""
    configured = env.get("PI_CODING_AGENT_DIR")
    if configured:
        return Path(configured).expanduser()
    home = env.get("HOME") or env.get("USERPROFILE")
    return (Path(home) if home else Path.home()) / ".pi" / "agent"


def session_dir_name(cwd: str) -> str:
    """The folder pi keeps ``cwd``'s sessions in (under its sessions folder)."""
    trimmed = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + trimmed.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def sessions_dirs(env: Mapping[str, str]) -> Path:
    """Where pi keeps its sessions: ``settings.json``'s ``sessionDir``, else ``<agent dir>/sessions``
    (blocking: reads the settings file)."""
    base = agent_dir(env)
    try:
        settings = json.loads((base / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        settings = {}
    configured = j.nonempty(j.obj(settings).get("sessionDir"))
    return Path(configured).expanduser() if configured else base / "sessions"


def _files(env: Mapping[str, str], cwd: Path | None) -> list[Path]:
    sessions = sessions_dirs(env)
    if not sessions.is_dir():
        return []
    folders = [sessions / session_dir_name(str(cwd))] if cwd is not None else [sessions, *sessions.iterdir()]
    found: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            found.extend(path for path in folder.glob("*.jsonl") if path.is_file())
    return found


def _text(message: Mapping[str, Any]) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        return toolkit.title_line(content)
    texts = [j.text(j.obj(block).get("text"), "") for block in j.arr(content) if j.obj(block).get("type") == "text"]
    return toolkit.title_line(" ".join(texts))


def _name(values: Iterable[Mapping[str, Any]]) -> str | None:
    name: str | None = None
    found = False
    for value in values:
        if value.get("type") == "session_info":
            found = True
            name = j.nonempty((j.text(value.get("name")) or "").strip())
    return name if found else None


def entry_from(sample: toolkit.JsonLinesSample, agent_id: str = "pi") -> HistoryEntry | DiagnosticInfo:
    """The history entry one session file makes, or a diagnostic for a file that is not one."""
    header = sample.head[0] if sample.head else None
    if header is None or header.get("type") != "session":
        return toolkit.unreadable(sample.path, "no pi session header on its first line")
    lines = sample.lines
    name = _name(sample.tail) if any(v.get("type") == "session_info" for v in sample.tail) else _name(sample.head)
    first = None
    newest = None
    for value in lines:
        if value.get("type") != "message":
            continue
        message = j.obj(value.get("message"))
        when = toolkit.history_time(message.get("timestamp")) or toolkit.history_time(value.get("timestamp"))
        if when is not None and (newest is None or when > newest):
            newest = when
        if first is None and message.get("role") == "user":
            first = _text(message)
    created = toolkit.history_time(header.get("timestamp"))
    return HistoryEntry(
        agent_id,
        str(sample.path),
        name or first,
        j.nonempty(header.get("cwd")),
        created_at=created,
        updated_at=newest or created or sample.modified,
        message_count=sum(1 for v in lines if v.get("type") == "message") if sample.complete else None,
    )


async def history(request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
    """pi's sessions (those run in ``cwd`` when given), from its session files."""
    env = dict(request.env)
    samples, diagnostics = await toolkit.sample_json_lines(lambda: _files(env, cwd))
    entries: list[HistoryEntry] = []
    for sample in samples:
        made = entry_from(sample, request.installation.id)
        if isinstance(made, DiagnosticInfo):
            diagnostics.append(made)
        elif cwd is None or made.cwd is None or made.cwd == str(cwd):
            entries.append(made)
    return seam.HistoryListing(entries, diagnostics)
