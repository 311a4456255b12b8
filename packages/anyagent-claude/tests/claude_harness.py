"""What the recorded and live tiers share: runtimes, the replay shim, recording, the wait bound.

Events are read with the testkit's ``EventReader`` (``EventReader(events, timeout=WAIT)``).

The live tier runs the pinned ``claude`` against the testkit's fake model in an isolated
environment; with ``ANYAGENT_CLAUDE_RECORD=1`` it also writes each scenario's wire recording to
``tests/recordings/<scenario>.jsonl`` (paths sanitized). The recorded tier replays those files
through the real adapter with the testkit replayer, one replayer process per ``claude`` launch.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

import anyagent
from anyagent import AgentInstallation, Runtime, SessionOptions, seam
from anyagent_claude.adapter import ClaudeAdapter
from anyagent_claude.profile import PROFILE
from anyagent_testkit.replay import replayer_launches, write_replayer_sequence

RECORDINGS = Path(__file__).parent / "recordings"
RECORD_ENV = "ANYAGENT_CLAUDE_RECORD"
WAIT = 60.0
"""Seconds any single wait of an ``EventReader`` may take before the test fails (a hang never
passes; the live tier's real CLI needs the generous bound)."""

SANITIZED_ROOT = "/tmp/anyagent-live"


# ---------------------------------------------------------------------------------------------
# runtimes


class IsolatedClaude(ClaudeAdapter):
    """The Claude adapter launching with a fixed environment (the live tier's isolated one)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        return await super().connect(attrs.evolve(request, env=self._env))

    async def probe_auth(self, request: seam.ConnectRequest) -> Any:
        return await super().probe_auth(attrs.evolve(request, env=self._env))

    async def history(self, request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
        return await super().history(attrs.evolve(request, env=self._env), cwd)

    def environment(self) -> Mapping[str, str]:
        return self._env


class IsolatedPlugin:
    """A plugin registering ``IsolatedClaude`` (with ``env``) and Claude Code's profile."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env

    @anyagent.hookimpl
    def anyagent_adapters(self, register: Any) -> None:
        register.adapter(lambda: IsolatedClaude(self.env), wire="claude")

    @anyagent.hookimpl
    def anyagent_agents(self, register: Any) -> None:
        register.profile(PROFILE)


def runtime_with_env(env: Mapping[str, str]) -> Runtime:
    """A runtime whose Claude adapter launches with exactly ``env``."""
    return Runtime(plugins=[IsolatedPlugin(env)])


# ---------------------------------------------------------------------------------------------
# replay


def replay_shim(directory: Path, recording: Path, dies: Iterable[int] = (), *, realtime: bool = False) -> Path:
    """An executable that plays the next process of ``recording`` each time it is launched.

    Processes listed in ``dies`` exit where the recording says they exited (they died by
    themselves, e.g. a dead resume token); the others wait for stdin to close.
    """
    return write_replayer_sequence(directory, recording, name="claude", dies=dies, realtime=realtime)


def launches(directory: Path) -> int:
    """How many times the shim in ``directory`` was launched."""
    return replayer_launches(directory, "claude")


# ---------------------------------------------------------------------------------------------
# recording


def sanitize(source: Path, target: Path, replacements: Mapping[str, str]) -> None:
    """Copy a recording, replacing machine paths (longest first) so the file is portable."""
    text = source.read_text(encoding="utf-8")
    slugs = {_slug(old): _slug(new) for old, new in replacements.items()}  # Claude's project dir names
    replacements = {**slugs, **replacements}
    for old in sorted(replacements, key=len, reverse=True):
        if old:
            text = text.replace(json.dumps(old)[1:-1], json.dumps(replacements[old])[1:-1])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def _slug(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def recording_wanted() -> bool:
    """Whether the live tier should (re)write the committed recordings."""
    return os.environ.get(RECORD_ENV, "") not in ("", "0")


@attrs.define
class Harness:
    """One scenario's world: a running runtime, the agent to open, a workspace, the fake model
    (live tier only) and where this scenario's sessions record their wire (live recording only)."""

    runtime: Runtime
    agent: AgentInstallation
    workspace: Path
    fake: Any = None
    record: Path | None = None
    home: Path | None = None

    @property
    def live(self) -> bool:
        """True when a real ``claude`` runs (assert on the fake model and the disk only then)."""
        return self.fake is not None

    def options(self) -> SessionOptions:
        """Options for a session in the workspace (recording its wire when asked)."""
        options = SessionOptions.in_dir(self.workspace)
        return options.record_wire(self.record) if self.record is not None else options

    def queue(self, *replies: Any) -> None:
        """Script the fake model's next answers (no-op when replaying)."""
        if self.fake is not None:
            self.fake.queue(*replies)

    def last_model_call(self) -> Any:
        """The body of the newest main model request (live tier)."""
        return self.fake.model_calls()[-1].body

    def history(self) -> str:
        """The user and assistant text of the newest model request (live tier), for recall checks."""
        messages = self.last_model_call().get("messages", [])
        return json.dumps([m for m in messages if m.get("role") in ("user", "assistant")])
