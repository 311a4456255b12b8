"""Reading /proc in the process tests: which processes still run (zombies do not count: a killed
member whose parent has gone waits for its new parent, init, to reap it)."""

from __future__ import annotations

import os
from pathlib import Path


def _stat_fields(pid: str | int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def live_members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that are not zombies."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields is not None and int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry))
    return found


def group_alive(pgid: int) -> bool:
    """True while a member of group ``pgid`` runs."""
    return bool(live_members(pgid))
