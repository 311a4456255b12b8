"""The testkit's adapter conformance suite against anyagent-opencode, in both tiers.

Recorded tier: each check launches the real adapter against the HTTP replayer playing the
recording that same check made live (``tests/recordings/conformance-<check>.jsonl``); the
translator is fuzzed with real events from every recording. Live tier (``--live``): the pinned
``opencode`` against the fake model; with ``ANYAGENT_OPENCODE_RECORD=1`` each check rewrites its
recording. Each check is its own test case (recorded: asyncio and trio; live: asyncio).
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from opencode_harness import (
    RECORDINGS,
    SANITIZED_ROOT,
    recording_wanted,
    replay_installation,
    runtime_with_env,
    sanitize,
)

from anyagent import AgentInstallation, SessionOptions
from anyagent_opencode.translate import Translation, Translator
from anyagent_testkit.conformance import CHECKS, Launch, Scenario, Skip, Subject
from anyagent_testkit.fakemodel import FakeModel, Reply
from anyagent_testkit.live import LiveAgent

PROMPTS: dict[Scenario, tuple[str, str | None]] = {
    Scenario.HANDSHAKE: ("hello there", None),
    Scenario.TEXT: ("hello there", "hello again"),
    Scenario.CLOSE: ("hello there", None),
    Scenario.CAPABILITIES: ("hello there", None),
    Scenario.TOOL: ("look around", None),  # the fake model is told to call glob (no permission needed)
    Scenario.PERMISSION: ("RUN touch conformance.txt", "hello after the permission"),
    Scenario.CANCEL: ("SLOW 40", "hello after the cancel"),
}


def sse_frames(recording: Path) -> list[dict[str, Any]]:
    """The events opencode sent in ``recording``."""
    found = []
    for line in recording.read_text(encoding="utf-8").splitlines():
        http = json.loads(line).get("_http")
        if isinstance(http, dict) and http.get("kind") == "sse" and isinstance(http.get("data"), dict):
            found.append(http["data"])
    return found


SAMPLE_FRAMES = tuple(frame for path in sorted(RECORDINGS.glob("*.jsonl")) for frame in sse_frames(path))


def _name(check: Callable[..., Any]) -> str:
    return check.__name__.removeprefix("check_")


class _Subject:
    name = "opencode"
    sample_frames = SAMPLE_FRAMES

    def __init__(self, check: str) -> None:
        self.check = check
        self._translator = Translator("ses_sample")

    def translate(self, frame: dict[str, Any]) -> Translation:
        return self._translator.feed(frame)


class RecordedSubject(_Subject):
    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        recording = RECORDINGS / f"conformance-{self.check}.jsonl"
        if not recording.exists():
            raise Skip(f"{recording.name} not recorded (the live check staged no session: it skipped too)")
        prompt, follow_up = PROMPTS[scenario]
        installation = replay_installation(workdir / "bin", recording, strict=True)
        (workdir / "workspace").mkdir(exist_ok=True)
        options = SessionOptions.in_dir(workdir / "workspace")
        return Launch(runtime_with_env(dict(os.environ)), installation, options, prompt, follow_up)


class LiveSubject(_Subject):
    def __init__(self, check: str, agent: LiveAgent, model: FakeModel, record: Path) -> None:
        super().__init__(check)
        self.agent, self.model, self.record = agent, model, record

    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        prompt, follow_up = PROMPTS[scenario]
        if scenario is Scenario.TOOL:
            self.model.queue(Reply.tool("glob", pattern="*"))
        installation = AgentInstallation.at("opencode", self.agent.executable)
        options = SessionOptions.in_dir(self.agent.workspace).record_wire(self.record)
        return Launch(runtime_with_env(self.agent.env), installation, options, prompt, follow_up)


async def _run(check: Callable[[Subject, Path], Awaitable[None]], subject: Subject, tmp_path: Path) -> None:
    try:
        await check(subject, tmp_path)
    except Skip as skip:
        pytest.skip(str(skip))


@pytest.mark.anyio
@pytest.mark.parametrize("check", CHECKS, ids=[_name(c) for c in CHECKS])
async def test_conformance_recorded(check: Callable[[Subject, Path], Awaitable[None]], tmp_path: Path) -> None:
    await _run(check, RecordedSubject(_name(check)), tmp_path)


@pytest.mark.live
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("check", CHECKS, ids=[_name(c) for c in CHECKS])
async def test_conformance_live(
    check: Callable[[Subject, Path], Awaitable[None]],
    live_agent: Callable[..., LiveAgent],
    fake_model: FakeModel,
    tmp_path: Path,
) -> None:
    agent = live_agent("opencode")
    record = tmp_path / "wire.jsonl"
    await _run(check, LiveSubject(_name(check), agent, fake_model, record), tmp_path)
    if recording_wanted() and record.exists():
        target = RECORDINGS / f"conformance-{_name(check)}.jsonl"
        sanitize(record, target, {str(agent.root): SANITIZED_ROOT, str(agent.executable): "opencode"})
