"""The recording replayer: a fake agent process that plays a wire recording.

Command line (it *is* the agent process; point an adapter at it)::

    python -m anyagent_testkit.replay RECORDING.jsonl [--strict] [--realtime] [--max-gap S]
                                      [--process N] [--exit-as-recorded] [-- IGNORED AGENT ARGS...]
    python -m anyagent_testkit.replay --http RECORDING.jsonl [--port P] [--port-file F] [--banner TEXT] [-- ...]

Stdio mode writes the recorded agent frames to stdout in order (compact JSON; ``_raw`` lines as
their text), waits at every ``{"_sent": ...}`` line for the client's next stdin line, checks it is
the same kind of frame, and rewrites later answers to carry the ids the live client used. A frame
the recording does not expect gets the error the real agent would give and the replay goes on;
``--strict`` makes any mismatch fatal (exit 1, diff on stderr). Stdin EOF ends it (exit 0 when fully
played; 3 under ``--strict`` when not). ``--process N`` plays only the N-th process of a recording
with several ``_meta`` lines. ``--exit-as-recorded`` exits where the recording notes an exit status.
Everything after ``--`` is ignored, so an adapter's usual CLI flags do no harm (HTTP mode reads
``--port``/``--hostname`` from them, like ``opencode serve``).

From Python::

    argv = replay_command("claude/02-permission-and-steer.jsonl")     # [sys.executable, "-m", ...]
    exe = write_replayer_shim(tmp_path, "claude/02-permission-and-steer.jsonl")
    installation = AgentInstallation.at("claude", exe)                  # the adapter launches the shim
"""

from __future__ import annotations

import shlex
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from ._http import HttpReplayServer, HttpTimeline, load_http_timeline, parse_http_timeline
from ._recording import Line, LineKind, Recording, RecordingError, load_recording, parse_recording
from ._stdio import EXIT_INCOMPLETE, EXIT_MISMATCH, PlayOptions
from ._wire import IdMap, error_reply, frame_kind

__all__ = [
    "EXIT_INCOMPLETE",
    "EXIT_MISMATCH",
    "HttpReplayServer",
    "HttpTimeline",
    "IdMap",
    "Line",
    "LineKind",
    "PlayOptions",
    "Recording",
    "RecordingError",
    "error_reply",
    "frame_kind",
    "load_http_timeline",
    "load_recording",
    "parse_http_timeline",
    "parse_recording",
    "replay_command",
    "shim_launches",
    "write_process_shim",
    "write_replayer_shim",
]


def replay_command(
    recording: str | Path,
    strict: bool = False,
    *,
    realtime: bool = False,
    process: int | None = None,
    exit_as_recorded: bool = False,
    http: bool = False,
    python: str | None = None,
) -> list[str]:
    """The argv that runs the replayer on ``recording`` with this interpreter (or ``python``)."""
    argv = [python or sys.executable, "-m", "anyagent_testkit.replay"]
    if http:
        argv.append("--http")
    if strict:
        argv.append("--strict")
    if realtime:
        argv.append("--realtime")
    if process is not None:
        argv += ["--process", str(process)]
    if exit_as_recorded:
        argv.append("--exit-as-recorded")
    argv.append(str(Path(recording).absolute()))
    return argv


def write_replayer_shim(
    directory: str | Path,
    recording: str | Path,
    *,
    name: str = "agent",
    strict: bool = False,
    realtime: bool = False,
    process: int | None = None,
    exit_as_recorded: bool = False,
    http: bool = False,
    extra: Sequence[str] = (),
) -> Path:
    """Write an executable ``directory/name`` that execs the replayer and returns its path.

    The shim passes its own argv after ``--`` (ignored by the replayer, except ``--port`` and
    ``--hostname`` in HTTP mode), so an adapter can launch ``[shim, *its usual args]``. POSIX only.
    ``extra`` adds replayer options (e.g. ``["--max-gap", "0.5"]``).
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    argv = replay_command(
        recording, strict, realtime=realtime, process=process, exit_as_recorded=exit_as_recorded, http=http
    )
    argv[3:3] = list(extra)
    script = folder / name
    script.write_text(f'#!/bin/sh\nexec {shlex.join(argv)} -- "$@"\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def write_process_shim(
    directory: str | Path,
    recording: str | Path,
    *,
    name: str = "agent",
    dies: Iterable[int] = (),
    realtime: bool = False,
) -> Path:
    """Write an executable ``directory/name`` that plays the *next* process of a recording with
    several ``_meta`` lines each time it is launched (``--process 1``, then 2, …), for adapters that
    relaunch (resume in a new process). Processes numbered in ``dies`` exit where the recording says
    they exited (``--exit-as-recorded``); the others wait for stdin to close. ``shim_launches``
    tells how many times it ran. POSIX only.
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    counter = shlex.quote(str(folder / "launches"))
    base = replay_command(recording, realtime=realtime)
    played = shlex.quote(base.pop())
    dying = " ".join(str(number) for number in dies) or "none"
    script = folder / name
    script.write_text(
        "#!/bin/sh\n"
        f"n=$(cat {counter} 2>/dev/null || echo 0)\n"
        "n=$((n + 1))\n"
        f"echo $n > {counter}\n"
        "extra=''\n"
        f'for d in {dying}; do [ "$d" = "$n" ] && extra=--exit-as-recorded; done\n'
        f'exec {shlex.join(base)} --process "$n" $extra {played} -- "$@"\n',
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def shim_launches(directory: str | Path) -> int:
    """How many times the ``write_process_shim`` shim in ``directory`` was launched."""
    counter = Path(directory) / "launches"
    return int(counter.read_text()) if counter.exists() else 0
