"""The testkit's adapter conformance suite against anyagent-codex, in both tiers.

Recorded tier (no Node): each scenario launches the real adapter against the testkit replayer
playing one of this package's recordings; the translator is fuzzed with the real notifications of
every recording. Live tier (``--live``): the pinned ``codex`` against the fake model, prompted with
the fake model's keywords. Each check is its own test case, on asyncio and trio.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from codex_harness import RECORDINGS, runtime_with_env

from anyagent import AgentInstallation, SessionOptions, seam
from anyagent_codex import Translator
from anyagent_testkit.conformance import CHECKS, Launch, Scenario, pytest_suite, run_adapter_conformance
from anyagent_testkit.live import LiveAgent
from anyagent_testkit.replay import write_replayer_shim

_BOOKKEEPING = frozenset({"_sent", "_raw", "_meta", "_note", "_stderr", "_exit"})


@attrs.frozen
class Staging:
    prompt: str
    follow_up: str | None = None


HELLO = Staging("hello there")
RECORDED: dict[Scenario, tuple[str, Staging]] = {
    Scenario.HANDSHAKE: ("text-turn", HELLO),
    Scenario.TEXT: ("text-turn", HELLO),
    Scenario.CLOSE: ("text-turn", HELLO),
    Scenario.CAPABILITIES: ("text-turn", HELLO),
    Scenario.TOOL: ("approval-accept", Staging("RUN echo approved-run")),
    Scenario.PERMISSION: ("approval-accept", Staging("RUN echo approved-run")),
    Scenario.CANCEL: ("cancel-streaming", Staging("SLOW 40", follow_up="are you still there")),
}
"""Recorded tier: scenario → (the recording it replays, its prompts)."""


def notifications(recording: Path) -> list[dict[str, Any]]:
    """The notifications codex wrote in ``recording`` (recorder bookkeeping, responses and
    requests left out)."""
    found: list[dict[str, Any]] = []
    for line in recording.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if isinstance(entry, dict) and not _BOOKKEEPING & entry.keys() and "method" in entry and "id" not in entry:
            found.append({key: value for key, value in entry.items() if key != "_t"})
    return found


SAMPLE_FRAMES: tuple[dict[str, Any], ...] = tuple(
    frame for recording in sorted(RECORDINGS.glob("*.jsonl")) for frame in notifications(recording)
)


class CodexSubject:
    """The translator hook both tiers offer: a fresh ``Translator`` per subject, fed whole frames."""

    sample_frames = SAMPLE_FRAMES

    def __init__(self) -> None:
        self._translator = Translator()

    def translate(self, frame: dict[str, Any]) -> list[seam.DriverEvent]:
        method = frame.get("method")
        if not isinstance(method, str):
            return []  # the driver's peer reports frames without a method (Stray)
        return self._translator.feed(method, frame.get("params"), frame)


class RecordedCodex(CodexSubject):
    name = "codex (recorded)"

    def launch(self, scenario: Scenario, workdir: Path) -> Launch:
        recording, staging = RECORDED[scenario]
        shim = write_replayer_shim(workdir / "bin", RECORDINGS / f"{recording}.jsonl", name="codex")
        workspace = workdir / "workspace"
        workspace.mkdir(exist_ok=True)
        return Launch(
            runtime_with_env(dict(os.environ)),
            AgentInstallation.at("codex", shim),
            SessionOptions.in_dir(workspace),
            staging.prompt,
            staging.follow_up,
        )


test_recorded_conformance = pytest_suite(RecordedCodex)


def test_the_fuzzer_gets_real_notifications_of_every_kind() -> None:
    methods = {frame["method"] for frame in SAMPLE_FRAMES}
    assert {"item/started", "item/completed", "item/agentMessage/delta", "turn/completed"} <= methods
    assert {"thread/tokenUsage/updated", "serverRequest/resolved", "item/commandExecution/outputDelta"} & methods


# ---------------------------------------------------------------------------------------------
# live tier


def live_staging(scenario: Scenario) -> Staging:
    if scenario in (Scenario.TOOL, Scenario.PERMISSION):
        return Staging("RUN echo conformance", follow_up="are you still there")
    if scenario is Scenario.CANCEL:
        return Staging("SLOW 40", follow_up="are you still there")
    if scenario is Scenario.TEXT:
        return Staging(HELLO.prompt, follow_up="are you still there")
    return HELLO


class LiveCodex(CodexSubject):
    name = "codex (live)"

    def __init__(self, agent: LiveAgent) -> None:
        super().__init__()
        self.agent = agent

    def launch(self, scenario: Scenario, workdir: Path) -> Launch:
        staging = live_staging(scenario)
        installation = attrs.evolve(AgentInstallation.at("codex", self.agent.executable), args=self.agent.args)
        return Launch(
            runtime_with_env(dict(self.agent.env)),
            installation,
            SessionOptions.in_dir(workdir),
            staging.prompt,
            staging.follow_up,
        )


CHECK_NAMES = [check.__name__.removeprefix("check_") for check in CHECKS]


@pytest.mark.live
@pytest.mark.anyio
@pytest.mark.parametrize("check", CHECK_NAMES)
async def test_live_conformance(
    check: str, live_agent: Callable[..., LiveAgent], fake_model: Any, tmp_path: Path
) -> None:
    subject = LiveCodex(live_agent("codex"))
    report = await run_adapter_conformance(subject, tmp_path / "checks", only=[check])
    [result] = report.results
    if result.status == "skipped":
        pytest.skip(result.detail)
    report.raise_for_failures()
