"""Codex's own history: ``thread/list`` over a short-lived ``codex app-server`` (codex 0.171.0).

Every interactive and app-server thread of every model provider (``sourceKinds`` and an empty
``modelProviders``: without them codex lists only interactive threads of the current provider),
not archived, filtered by ``cwd`` on codex's side, paged with ``nextCursor`` (at most
``MAX_PAGES`` pages of ``PAGE`` threads). A subagent's thread (``parentThreadId``) is left out.
The title is the thread's ``name``, else its ``preview`` (usually the first prompt); the resume
token is the thread id, which ``thread/resume`` takes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anyagent import DiagnosticInfo, DiagnosticLevel, HistoryEntry, seam, toolkit
from anyagent import jsonread as j

from ._appserver import call, side_server

__all__ = ["MAX_PAGES", "PAGE", "entry_from", "history"]

PAGE = 100
"""Threads asked for per `thread/list` request."""
MAX_PAGES = 20
"""The most `thread/list` pages read for one history (at most `MAX_PAGES * PAGE` threads)."""
SOURCES = ("cli", "vscode", "exec", "appServer")


def entry_from(thread: Any, agent_id: str = "codex") -> HistoryEntry | None:
    """The history entry of one ``Thread`` object (None for a subagent's or a malformed one)."""
    thread = j.obj(thread)
    thread_id = j.nonempty(thread.get("id"))
    if thread_id is None or j.nonempty(thread.get("parentThreadId")) is not None:
        return None
    return HistoryEntry(
        agent_id,
        thread_id,
        toolkit.title_line(j.nonempty(thread.get("name")) or thread.get("preview")),
        j.nonempty(thread.get("cwd")),
        created_at=toolkit.history_time(j.integer(thread.get("createdAt"))),
        updated_at=toolkit.history_time(j.integer(thread.get("updatedAt"))),
    )


async def history(request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
    """Codex's threads (those run in ``cwd`` when given)."""
    entries: list[HistoryEntry] = []
    diagnostics: list[DiagnosticInfo] = []
    params: dict[str, Any] = {
        "limit": PAGE,
        "sourceKinds": list(SOURCES),
        "modelProviders": [],
        "archived": False,
        # last activity first, as a thread list shows it (codex's default is created_at)
        "sortKey": "updated_at",
    }
    if cwd is not None:
        params["cwd"] = str(cwd)
    async with side_server(request) as peer:
        cursor: str | None = None
        for _page in range(MAX_PAGES):
            result = j.obj(await call(peer, "thread/list", {**params, "cursor": cursor}))
            for thread in j.arr(result.get("data")):
                made = entry_from(thread, request.installation.id)
                if made is not None:
                    entries.append(made)
            cursor = j.nonempty(result.get("nextCursor"))
            if cursor is None:
                break
        else:
            diagnostics.append(
                DiagnosticInfo(
                    f"codex has more than {MAX_PAGES * PAGE} threads; the oldest were left out",
                    DiagnosticLevel.INFO,
                    "history_truncated",
                )
            )
    return seam.HistoryListing(entries, diagnostics)
