"""What the antigravity tests share: the replay shim, the scripted fake agy, runtimes.

``replay_shim`` makes an ``agy`` that plays the next process of a recording on each launch (the
testkit replayer) and logs its argv; ``fake_agy`` makes an ``agy`` running ``fake_agy.py``, a
scripted agy written from what the recordings show.
"""

from __future__ import annotations

import json
import shlex
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

import anyagent_antigravity.plugin
from anyagent import Runtime

HERE = Path(__file__).parent
RECORDINGS = HERE / "recordings"
FAKE_AGY = HERE / "fake_agy.py"
WAIT = 20.0
"""Seconds any single wait may take before a test fails (a hang never passes)."""


def runtime(*extra: object) -> Runtime:
    """A runtime with this package's plugin (and ``extra`` plugins)."""
    return Runtime(plugins=[anyagent_antigravity.plugin, *extra])


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def replay_shim(
    directory: Path,
    recording: Path,
    dies: Iterable[int] = (),
    *,
    name: str = "agy",
    realtime: bool = False,
    strict: bool = False,
) -> Path:
    """An executable ``name`` in ``directory`` playing process N of ``recording`` on its N-th launch.

    Each launch's argv is appended to ``directory/argv.jsonl``. Processes in ``dies`` exit where
    the recording says they exited; the others wait for stdin to close. ``realtime`` keeps the
    recorded pauses, each cut to 1 s; ``strict`` makes
    any frame the recording does not expect fatal.
    """
    counter, argv_log = directory / "launches", directory / "argv.jsonl"
    base = [
        sys.executable,
        "-m",
        "anyagent_testkit.replay",
        *(["--realtime", "--max-gap", "1"] if realtime else []),
        *(["--strict"] if strict else []),
    ]
    dying = " ".join(str(number) for number in dies) or "none"
    log = f'{shlex.quote(sys.executable)} -c {shlex.quote(_LOG_ARGV)} {shlex.quote(str(argv_log))} "$@"'
    return _executable(
        directory / name,
        "#!/bin/sh\n"
        # `agy models` (a side command at open, not in the recordings) is no launch of the recording
        f'if [ "$1" = models ]; then printf {shlex.quote(_MODELS)}; exit 0; fi\n'
        f"n=$(cat {shlex.quote(str(counter))} 2>/dev/null || echo 0)\n"
        "n=$((n + 1))\n"
        f"echo $n > {shlex.quote(str(counter))}\n"
        f"{log}\n"
        "extra=''\n"
        f'for d in {dying}; do [ "$d" = "$n" ] && extra=--exit-as-recorded; done\n'
        f'exec {shlex.join(base)} --process "$n" $extra {shlex.quote(str(recording))} -- "$@"\n',
    )


_MODELS = "Available models:\\n  Gemini 3.8 Flash (Low)\\n  Gemini 3.1 Pro (High)\\n"
"""What the replay shim prints for ``agy models`` (names from 09-config's "Available models:")."""

_LOG_ARGV = "import json, sys; open(sys.argv[1], 'a').write(json.dumps(sys.argv[2:]) + chr(10))"


def launched(directory: Path) -> list[list[str]]:
    """The argv (without the executable) of every launch of the shim in ``directory``."""
    log = directory / "argv.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def processes(recording: Path) -> int:
    """How many processes ``recording`` holds."""
    return recording.read_text(encoding="utf-8").count('{"_meta":')


def fake_agy(directory: Path, script: dict[str, object] | None = None, *, name: str = "agy") -> Path:
    """An executable ``name`` running the scripted fake agy with ``script`` (see ``fake_agy.py``).

    Every launch appends its argv to ``directory/argv.jsonl``; the fake keeps its conversations in
    ``directory/conversations``.
    """
    state = directory / "state.json"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"script": script or {}, "dir": str(directory)}), encoding="utf-8")
    return _executable(
        directory / name,
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE_AGY))} {shlex.quote(str(state))} "$@"\n',
    )
