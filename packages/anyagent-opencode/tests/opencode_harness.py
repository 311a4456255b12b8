"""What the recorded and live tiers share: runtimes with a fixed environment, recording, replay.

The live tier runs the pinned ``opencode`` against the testkit's fake model in an isolated
environment (``anyagent_testkit.live``); with ``ANYAGENT_OPENCODE_RECORD=1`` its recording
scenarios also write their HTTP + SSE wire (``SessionOptions.record_wire``) to
``tests/recordings/<name>.jsonl``, paths sanitized. The recorded tier replays those files through
the real adapter with the testkit's HTTP replayer standing in for ``opencode serve``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from anyagent import AgentInstallation, Runtime
from anyagent_opencode.adapter import OpencodeAdapter
from anyagent_opencode.profile import PROFILE
from anyagent_testkit.live import runtime_with_env as live_runtime
from anyagent_testkit.replay import write_replayer_shim

RECORDINGS = Path(__file__).parent / "recordings"
RECORD_ENV = "ANYAGENT_OPENCODE_RECORD"
WAIT = 60.0
"""Seconds one wait may take (the real server needs a few seconds for its first prompt)."""

SANITIZED_ROOT = "/tmp/anyagent-live"


def runtime_with_env(env: Mapping[str, str]) -> Runtime:
    """A runtime whose opencode adapter launches with exactly ``env``."""
    return live_runtime(OpencodeAdapter, PROFILE, env)


def recording_wanted() -> bool:
    return os.environ.get(RECORD_ENV) == "1"


def sanitize(source: Path, target: Path, replacements: Mapping[str, str]) -> None:
    """Copy a recording with every ``replacements`` key replaced (longest first)."""
    text = source.read_text(encoding="utf-8")
    for old in sorted(replacements, key=len, reverse=True):
        text = text.replace(json.dumps(old)[1:-1], replacements[old])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def replay_installation(directory: Path, recording: Path, *, strict: bool = False) -> AgentInstallation:
    """An ``opencode`` that is the testkit's HTTP replayer serving ``recording``."""
    shim = write_replayer_shim(directory, recording, name="opencode", http=True, strict=strict)
    return AgentInstallation.at("opencode", shim)


def proc_file(pid: int, name: str) -> bytes:
    """``/proc/<pid>/<name>`` (Linux)."""
    return Path(f"/proc/{pid}/{name}").read_bytes()


def server_password(pid: int) -> bytes:
    """The ``OPENCODE_SERVER_PASSWORD`` in the environment of process ``pid``."""
    environ = proc_file(pid, "environ").split(b"\0")
    return next(e for e in environ if e.startswith(b"OPENCODE_SERVER_PASSWORD=")).split(b"=", 1)[1]


def listening_on(port: int) -> list[str]:
    """The local addresses (hex, as in ``/proc/net/tcp``/``tcp6``) listening on ``port``."""
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(port_hex, 16) == port:
                found.append(address)
    return found
