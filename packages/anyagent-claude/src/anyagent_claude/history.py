"""Claude Code's own history: its project transcripts, read the way its session list reads them.

Claude Code writes each session to ``<config home>/projects/<project>/<session id>.jsonl``: the
config home is ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``; ``<project>`` is the working directory
with every UTF-16 code unit outside ``[a-zA-Z0-9]`` replaced by ``-``, and when that is longer than
200 characters, its first 200 plus ``-`` and a base-36 hash of the path. Its session list (the
SDK's ``listSessions``, checked against claude 2.1.332) reads the first and last 64 KiB of each
file, and so does this module:

- the title is the ``/rename`` title (``custom-title``), else the generated one (``ai-title``),
  else the ``last-prompt`` entry, else a ``summary`` entry, else the first meaningful prompt
  (not a tool result, a meta message or a compact summary; newlines as spaces, 200 characters);
- ``created_at`` is the first entry's timestamp, ``updated_at`` the file's modification time,
  ``cwd`` the ``relocated`` entry's directory, else the first entry's ``cwd``;
- a file whose first line is a subagent's (``isSidechain``), or which holds no prompt nor title,
  is no conversation and is left out; a file whose name is no session id, or which holds no
  Claude Code entry, is skipped with a diagnostic.

``message_count`` is given when the whole file was read (head and tail cover it): the prompts
plus the distinct assistant messages.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from anyagent import DiagnosticInfo, HistoryEntry, seam, toolkit
from anyagent import jsonread as j

__all__ = ["config_home", "history", "project_dir_name"]

_LIMIT = 200
_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_SKIPPED_PROMPT = re.compile(r"^<(local-command-stdout|local-command-stderr|command-message|system-reminder)")
_KNOWN_TYPES = frozenset(
    {"user", "assistant", "attachment", "system", "summary", "custom-title", "ai-title", "last-prompt"}
    | {"queue-operation", "file-history-snapshot", "progress"}
)


def _js_hash(text: str) -> int:
    """JavaScript's ``(h << 5) - h + charCode | 0`` over UTF-16 code units (Claude Code's ``Nle``)."""
    value = 0
    units = text.encode("utf-16-le")
    for index in range(0, len(units), 2):
        value = (value * 31 + int.from_bytes(units[index : index + 2], "little")) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if number == 0:
            return out


def project_dir_name(cwd: str) -> str:
    """The folder under ``projects/`` Claude Code keeps ``cwd``'s sessions in."""
    units = cwd.encode("utf-16-le")
    escaped = "".join(
        chr(units[i]) if units[i + 1] == 0 and _NOT_ALNUM.match(chr(units[i])) is None else "-"
        for i in range(0, len(units), 2)
    )
    if len(escaped) <= _LIMIT:
        return escaped
    return f"{escaped[:_LIMIT]}-{_base36(abs(_js_hash(cwd)))}"


def config_home(env: Mapping[str, str]) -> Path:
    """``$CLAUDE_CONFIG_DIR``, else ``~/.claude`` (``HOME`` from ``env`` when it has one)."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    home = env.get("HOME") or env.get("USERPROFILE")
    return (Path(home) if home else Path.home()) / ".claude"


def _project_dirs(projects: Path, cwd: Path | None) -> Iterator[Path]:
    if cwd is None:
        yield from (folder for folder in projects.iterdir() if folder.is_dir())
        return
    name = project_dir_name(str(cwd))
    if len(name) <= _LIMIT:
        yield projects / name
        return
    prefix = name[:_LIMIT]  # another runtime's hash of a long path: the recorded cwd decides
    yield from (folder for folder in projects.glob(f"{glob_escape(prefix)}-*") if folder.is_dir())


def glob_escape(text: str) -> str:
    """``text`` with glob metacharacters taken literally."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def _transcripts(projects: Path, cwd: Path | None) -> list[Path]:
    if not projects.is_dir():
        return []
    found: list[Path] = []
    for folder in _project_dirs(projects, cwd):
        if folder.is_dir():
            found.extend(path for path in folder.glob("*.jsonl") if path.is_file())
    return found


def _last(values: Iterable[Mapping[str, Any]], kind: str, key: str) -> str | None:
    found: str | None = None
    for value in values:
        if value.get("type") == kind:
            text = j.nonempty(value.get(key))
            if text is not None:
                found = text
    return found


def _first(values: Iterable[Mapping[str, Any]], key: str) -> Any:
    return next((value[key] for value in values if value.get(key) is not None), None)


def _prompt_text(entry: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The prompt an entry shows in the list (or None), and a command name to fall back on."""
    if entry.get("type") != "user" or entry.get("isMeta") is True or entry.get("isCompactSummary") is True:
        return None, None
    content = j.obj(entry.get("message")).get("content")
    texts: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    else:
        for block in j.arr(content):
            block = j.obj(block)
            if block.get("type") == "tool_result":
                return None, None
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
    command = None
    for raw in texts:
        text = " ".join(raw.split())
        if not text:
            continue
        named = _COMMAND.search(text)
        if named is not None:
            command = command or named.group(1).strip()
            continue
        if _SKIPPED_PROMPT.match(text):
            continue
        return toolkit.title_line(text), command
    return None, command


def _first_prompt(values: Iterable[Mapping[str, Any]]) -> str | None:
    fallback = None
    for value in values:
        prompt, command = _prompt_text(value)
        if prompt is not None:
            return prompt
        fallback = fallback or command
    return fallback


def _message_count(values: Iterable[Mapping[str, Any]]) -> int:
    prompts = 0
    replies: set[str] = set()
    for value in values:
        if value.get("isSidechain") is True:
            continue
        kind = value.get("type")
        if kind == "user" and value.get("isMeta") is not True:
            prompts += 1
        elif kind == "assistant":
            replies.add(j.text(j.obj(value.get("message")).get("id")) or j.text(value.get("uuid"), ""))
    return prompts + len(replies)


def entry_from(sample: toolkit.JsonLinesSample, agent_id: str = "claude") -> HistoryEntry | DiagnosticInfo | None:
    """The history entry one transcript file makes; a diagnostic for a foreign file; None for a
    file that is no conversation (a subagent's, or one without a prompt)."""
    path = sample.path
    try:
        session_id = str(uuid.UUID(path.stem))
    except ValueError:
        return toolkit.unreadable(path, "its name is not a Claude Code session id")
    head = sample.head
    tail = sample.lines if sample.complete else sample.tail  # a file read whole is its own tail, as in claude
    ours = [value for value in sample.lines if value.get("type") in _KNOWN_TYPES or "sessionId" in value]
    if not ours:
        why = "no JSON lines" if not sample.lines else "no Claude Code transcript entries"
        return toolkit.unreadable(path, why if sample.size else "empty file")
    if head and head[0].get("isSidechain") is True:
        return None
    lines = sample.lines
    custom = (
        _last(tail, "custom-title", "customTitle")
        or _last(head, "custom-title", "customTitle")
        or _last(tail, "ai-title", "aiTitle")
        or _last(head, "ai-title", "aiTitle")
    )
    first_prompt = _first_prompt(head)
    title = custom or _last(tail, "last-prompt", "lastPrompt") or _last(tail, "summary", "summary") or first_prompt
    if title is None:
        return None
    relocated = _last(tail, "relocated", "relocatedCwd")
    cwd = relocated or j.text(_first(head, "cwd"))
    return HistoryEntry(
        agent_id,
        session_id,
        toolkit.title_line(title),
        cwd,
        created_at=toolkit.history_time(_first(head, "timestamp")),
        updated_at=sample.modified,
        message_count=_message_count(lines) if sample.complete else None,
    )


async def history(request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
    """Claude Code's sessions (those run in ``cwd`` when given), from its project transcripts."""
    projects = config_home(request.env) / "projects"
    samples, diagnostics = await toolkit.sample_json_lines(lambda: _transcripts(projects, cwd))
    entries: list[HistoryEntry] = []
    for sample in samples:
        made = entry_from(sample, request.installation.id)
        if isinstance(made, DiagnosticInfo):
            diagnostics.append(made)
        elif made is not None and (cwd is None or made.cwd is None or made.cwd == str(cwd)):
            entries.append(made)
    return seam.HistoryListing(entries, diagnostics)
