"""What the recorded and live tiers share: runtimes, the replay shim, recording, the wait bound.

The live tier runs a pinned ``pi`` against the testkit's fake model in an isolated environment:
``pi`` (0.73.1, Node 20, no ``clear_queue``, so no steer) and ``pi-node22`` (1.6.0 on its own
Node 22, with ``clear_queue`` and steer). With ``ANYAGENT_PI_RECORD=1`` it also writes each
scenario's wire recording to ``tests/recordings/<scenario>.jsonl`` (0.73.1) or
``tests/recordings/<version>/<scenario>.jsonl`` (newer pins), paths sanitized. The recorded tier
replays those files through the real adapter with the testkit replayer, one replayer process per
``pi`` launch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from anyagent import AgentInstallation, Runtime, SessionOptions
from anyagent_pi.adapter import PiAdapter
from anyagent_pi.profile import PROFILE
from anyagent_testkit.live import PINNED
from anyagent_testkit.live import runtime_with_env as live_runtime
from anyagent_testkit.replay import write_replayer_sequence

RECORDINGS = Path(__file__).parent / "recordings"
PINS = ("pi", "pi-node22")
"""The live tier's pi pins: 0.73.1 (the last on Node 20) and the current release on Node 22."""
STEERING_PINS = frozenset({"pi-node22"})
"""Pins whose pi has ``clear_queue``, so the adapter reports ``Steer``."""


def recordings_of(cli: str) -> Path:
    """Where pin ``cli``'s scenario recordings live (0.73.1's at the top, newer ones by version)."""
    return RECORDINGS if cli == "pi" else RECORDINGS / PINNED[cli].version


RECORD_ENV = "ANYAGENT_PI_RECORD"
WAIT = 60.0
"""Seconds any single wait of an ``EventReader`` may take before the test fails."""

SANITIZED_ROOT = "/tmp/anyagent-live"


def runtime_with_env(env: Mapping[str, str]) -> Runtime:
    """A runtime whose pi adapter launches with exactly ``env``."""
    return live_runtime(PiAdapter, PROFILE, env)


def replay_shim(directory: Path, recording: Path, dies: Iterable[int] = (), *, realtime: bool = False) -> Path:
    """A ``pi`` that plays the next process of ``recording`` each time it is launched."""
    return write_replayer_sequence(directory, recording, name="pi", dies=dies, realtime=realtime)


def sanitize(source: Path, target: Path, replacements: Mapping[str, str]) -> None:
    """Copy a recording, replacing machine paths (longest first) so the file is portable."""
    text = source.read_text(encoding="utf-8")
    for old in sorted(replacements, key=len, reverse=True):
        if old:
            text = text.replace(json.dumps(old)[1:-1], json.dumps(replacements[old])[1:-1])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def recording_wanted() -> bool:
    """Whether the live tier should (re)write the committed recordings."""
    return os.environ.get(RECORD_ENV, "") not in ("", "0")


@attrs.define
class Harness:
    """One scenario's world: a runtime, the agent to open, a workspace, the fake model (live
    tier only) and where this scenario's sessions record their wire (live recording only)."""

    runtime: Runtime
    agent: AgentInstallation
    workspace: Path
    fake: Any = None
    record: Path | None = None
    home: Path | None = None
    cli: str = "pi"
    """The pin that runs (live) or was recorded (replay): what version and capabilities to expect."""

    @property
    def live(self) -> bool:
        """True when a real ``pi`` runs (assert on the fake model and the disk only then)."""
        return self.fake is not None

    @property
    def version(self) -> str | None:
        """The ``AgentDetails.version`` to expect: the pin's (live), None (a replay has no npm install)."""
        return PINNED[self.cli].version if self.live else None

    @property
    def steers(self) -> bool:
        """Whether this pi has ``clear_queue``, so the session reports ``Steer``."""
        return self.cli in STEERING_PINS

    def options(self) -> SessionOptions:
        """Options for a session in the workspace (recording its wire when asked)."""
        options = SessionOptions.in_dir(self.workspace)
        return options.record_wire(self.record) if self.record is not None else options

    def queue(self, *replies: Any) -> None:
        """Script the fake model's next answers (no-op when replaying)."""
        if self.fake is not None:
            self.fake.queue(*replies)

    def history(self) -> str:
        """The user and assistant messages of the newest main model request (live tier)."""
        body = self.fake.model_calls()[-1].body
        return json.dumps([m for m in body.get("messages", []) if m.get("role") in ("user", "assistant")])
