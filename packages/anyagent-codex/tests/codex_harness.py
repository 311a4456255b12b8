"""What the recorded and live tiers share: the isolated runtime, the multi-process replay shim,
recording and sanitizing, and the ``Harness`` a scenario runs in.

The live tier runs the pinned ``codex`` against the testkit's fake model; with
``ANYAGENT_CODEX_RECORD=1`` each scenario also (re)writes ``tests/recordings/<scenario>.jsonl``
(machine paths sanitized). The recorded tier replays those files through the real adapter, one
replayer process per ``codex`` launch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

import anyagent
from anyagent import AgentInstallation, Runtime, SessionOptions, seam
from anyagent_codex.adapter import CodexAdapter
from anyagent_codex.profile import PROFILE
from anyagent_testkit.replay import replayer_launches, write_replayer_sequence

RECORDINGS = Path(__file__).parent / "recordings"
RECORD_ENV = "ANYAGENT_CODEX_RECORD"
WAIT = 60.0
"""Seconds one wait may take before the test fails (a hang never passes)."""
SANITIZED_ROOT = "/tmp/anyagent-live"


class IsolatedCodex(CodexAdapter):
    """The Codex adapter launching with a fixed environment (the live tier's isolated one)."""

    def __init__(self, env: Mapping[str, str], max_retries: int | None = None) -> None:
        self._env = dict(env)
        if max_retries is not None:
            self.max_retries = max_retries

    async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
        return await super().connect(attrs.evolve(request, env={**self._env, **_config_home(request)}))

    async def probe_auth(self, request: seam.ConnectRequest) -> Any:
        return await super().probe_auth(attrs.evolve(request, env=self._env))

    async def history(self, request: seam.ConnectRequest, cwd: Path | None) -> seam.HistoryListing:
        return await super().history(attrs.evolve(request, env=self._env), cwd)


def _config_home(request: seam.ConnectRequest) -> dict[str, str]:
    home = request.options.config_home_dir
    return {"CODEX_HOME": str(home)} if home is not None else {}


class IsolatedPlugin:
    """Registers ``IsolatedCodex`` (with ``env``) and Codex's profile."""

    def __init__(self, env: Mapping[str, str], max_retries: int | None = None) -> None:
        self.env = env
        self.max_retries = max_retries

    @anyagent.hookimpl
    def anyagent_adapters(self, register: Any) -> None:
        register.adapter(lambda: IsolatedCodex(self.env, self.max_retries), wire="codex")

    @anyagent.hookimpl
    def anyagent_agents(self, register: Any) -> None:
        register.profile(PROFILE)


def runtime_with_env(env: Mapping[str, str], max_retries: int | None = None) -> Runtime:
    """A runtime whose Codex adapter launches with exactly ``env`` (and ``max_retries``, if given)."""
    return Runtime(plugins=[IsolatedPlugin(env, max_retries)])


def replay_shim(directory: Path, recording: Path) -> Path:
    """A ``codex`` that plays the next process of ``recording`` each time it is launched (strict:
    a frame the recording does not expect ends the replay)."""
    return write_replayer_sequence(directory, recording, name="codex", strict=True)


def launches(directory: Path) -> int:
    """How many times the shim in ``directory`` was launched."""
    return replayer_launches(directory, "codex")


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
    """One scenario's world: a running runtime, the agent to open, a workspace, the fake model
    (live tier only: None when replaying) and where sessions record their wire (recording only)."""

    runtime: Runtime
    agent: AgentInstallation
    workspace: Path
    fake: Any = None
    record: Path | None = None

    def options(self) -> SessionOptions:
        """Options in the workspace, recording the wire when asked."""
        options = SessionOptions.in_dir(self.workspace)
        return options.record_wire(self.record) if self.record is not None else options

    @property
    def live(self) -> bool:
        return self.fake is not None
