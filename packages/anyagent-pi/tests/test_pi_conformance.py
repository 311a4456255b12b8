"""The testkit's adapter conformance suite against anyagent-pi, in both tiers.

Recorded tier (no Node): each scenario launches the real adapter against the testkit replayer
playing one of this package's own recordings (``tests/recordings``); the translator is fuzzed with
real frames from every recording. Live tier (``--live``): both pinned ``pi`` (0.73.1 and 1.6.0)
against the testkit's fake model, prompted with the fake model's keywords; permissions come from
the opt-in gate. Each check is its own test case, on asyncio and trio.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from pi_harness import PINS, RECORDINGS, runtime_with_env

from anyagent import AgentInstallation, Diagnostic, SessionOptions, seam
from anyagent_pi.translate import Translation, Translator
from anyagent_testkit.conformance import CHECKS, Launch, Scenario, pytest_suite, run_adapter_conformance
from anyagent_testkit.live import LiveAgent
from anyagent_testkit.replay import LineKind, load_recording, write_replayer_shim


@attrs.frozen
class Staging:
    """What to prompt for one scenario, a prompt for the turn after, and whether the gate is on."""

    prompt: str
    follow_up: str | None = None
    gate: bool = False


HELLO = Staging("hello there")
WRITE = "WRITE /tmp/anyagent-live/workspace/allowed.txt ALPHA"
RECORDED: dict[Scenario, tuple[str, Staging]] = {
    Scenario.HANDSHAKE: ("text-turn", HELLO),
    Scenario.TEXT: ("text-turn", HELLO),
    Scenario.CLOSE: ("text-turn", HELLO),
    Scenario.CAPABILITIES: ("text-turn", HELLO),
    Scenario.TOOL: ("tool-run", Staging("RUN echo hi-from-pi")),
    Scenario.PERMISSION: ("permission-gate", Staging(WRITE, gate=True)),
    Scenario.CANCEL: ("cancel", Staging("SLOW 40", follow_up="are you still there")),
}
"""Recorded tier: scenario → (the recording it replays, its prompts)."""


def agent_frames(recording: Path) -> list[dict[str, Any]]:
    """The frames ``pi`` wrote in ``recording`` (recorder bookkeeping and client frames left out)."""
    lines = load_recording(recording).lines
    return [line.value for line in lines if line.kind is LineKind.AGENT and isinstance(line.value, dict)]


SAMPLE_FRAMES: tuple[dict[str, Any], ...] = tuple(
    frame for recording in sorted(RECORDINGS.glob("*.jsonl")) for frame in agent_frames(recording)
)


class PiSubject:
    """The translator hook both tiers offer: a fresh ``Translator`` per subject."""

    sample_frames = SAMPLE_FRAMES

    def __init__(self) -> None:
        self._translator = Translator()

    def translate(self, frame: dict[str, Any]) -> Translation:
        """One frame through this subject's translator."""
        return self._translator.feed(frame)


def _options(workspace: Path, staging: Staging) -> SessionOptions:
    options = SessionOptions.in_dir(workspace)
    return options.configure("permission_gate", True) if staging.gate else options


class RecordedPi(PiSubject):
    """The pi adapter against the replayer, one of the package's recordings per scenario."""

    name = "pi (recorded)"

    def launch(self, scenario: Scenario, workdir: Path) -> Launch:
        recording, staging = RECORDED[scenario]
        shim = write_replayer_shim(workdir / "bin", RECORDINGS / f"{recording}.jsonl", name="pi")
        workspace = workdir / "workspace"
        workspace.mkdir(exist_ok=True)
        return Launch(
            runtime_with_env(dict(os.environ)),
            AgentInstallation.at("pi", shim),
            _options(workspace, staging),
            staging.prompt,
            staging.follow_up,
        )


test_recorded_conformance = pytest_suite(RecordedPi)


@pytest.mark.parametrize("kind", [["agent_start"], {"x": 1}, 7, None, "agent_bogus"])
def test_a_type_that_is_not_known_is_an_unknown_frame(kind: object) -> None:
    translation = Translator().feed({"type": kind, "message": {}})
    [event] = translation.events
    assert isinstance(event, seam.Content) and isinstance(event.kind, Diagnostic)
    assert event.kind.diagnostic.code == "unknown_frame"


def test_the_fuzzer_gets_real_frames_of_every_kind() -> None:
    types = {frame.get("type") for frame in SAMPLE_FRAMES}
    expected = {"response", "agent_start", "agent_end", "message_start", "message_update", "message_end"}
    assert expected | {"tool_execution_start", "tool_execution_end", "extension_ui_request", "compaction_end"} <= types


# ---------------------------------------------------------------------------------------------
# live tier


def live_staging(scenario: Scenario, workdir: Path) -> Staging:
    """The fake-model keywords that stage ``scenario`` (a gated write for a permission)."""
    if scenario is Scenario.TOOL:
        return Staging("RUN echo conformance")
    if scenario is Scenario.PERMISSION:
        return Staging(f"WRITE {workdir}/conformance.txt ALPHA", follow_up="are you still there", gate=True)
    if scenario is Scenario.CANCEL:
        return Staging("SLOW 40", follow_up="are you still there")
    if scenario is Scenario.TEXT:
        return Staging(HELLO.prompt, follow_up="are you still there")
    return HELLO


class LivePi(PiSubject):
    """The pinned ``pi`` in its isolated environment, talking to the fake model."""

    name = "pi (live)"

    def __init__(self, agent: LiveAgent) -> None:
        super().__init__()
        self.agent = agent

    def launch(self, scenario: Scenario, workdir: Path) -> Launch:
        staging = live_staging(scenario, workdir)
        installation = AgentInstallation(
            id="pi", name="pi", executable_path=self.agent.executable, args=self.agent.args
        )
        return Launch(
            runtime_with_env(dict(self.agent.env)),
            installation,
            _options(workdir, staging),
            staging.prompt,
            staging.follow_up,
        )


CHECK_NAMES = [check.__name__.removeprefix("check_") for check in CHECKS]


@pytest.mark.live
@pytest.mark.anyio
@pytest.mark.parametrize("cli", PINS)
@pytest.mark.parametrize("check", CHECK_NAMES)
async def test_live_conformance(
    check: str, cli: str, live_agent: Callable[..., LiveAgent], fake_model: Any, tmp_path: Path
) -> None:
    subject = LivePi(live_agent(cli))
    report = await run_adapter_conformance(subject, tmp_path / "checks", only=[check])
    [result] = report.results
    if result.status == "skipped":
        pytest.skip(result.detail)
    report.raise_for_failures()
    if check == "permission_round_trip":
        written = tmp_path / "checks" / check / "conformance.txt"
        assert written.read_text(encoding="utf-8").startswith("ALPHA"), "the allowed write did not happen"
