"""The testkit's adapter conformance suite against anyagent-claude, in both tiers.

Recorded tier (no Node): each scenario launches the real adapter against the testkit replayer
playing one of this package's own recordings (``tests/recordings``); the translator is fuzzed with
real frames from every recording, and ``feed`` must never raise (it has no last-resort handler:
the driver loop reports a frame whose translation raised as ``frame_error``). Live tier
(``--live``): the pinned ``claude`` against the testkit's fake model, prompted with the fake
model's keywords. Each check is its own test case, on asyncio and trio.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from claude_harness import RECORDINGS, runtime_with_env

from anyagent import AgentInstallation, Diagnostic, SessionOptions, seam
from anyagent_claude.translate import Translation, Translator
from anyagent_testkit.conformance import CHECKS, Launch, Scenario, pytest_suite, run_adapter_conformance
from anyagent_testkit.live import LiveAgent
from anyagent_testkit.replay import write_replayer_shim

_BOOKKEEPING = frozenset({"_sent", "_raw", "_meta", "_note", "_stderr", "_exit"})
"""Recording entries that are not a frame the agent wrote (the recorder's ``_t`` rides on those too)."""


@attrs.frozen
class Staging:
    """What to prompt for one scenario, and a prompt for the turn after a cancel (None: no such turn)."""

    prompt: str
    follow_up: str | None = None


HELLO = Staging("hello there")
# the recordings' own prompts (the replayer answers whatever is sent, but they read true)
RECORDED: dict[Scenario, tuple[str, Staging]] = {
    Scenario.HANDSHAKE: ("text-turn", HELLO),
    Scenario.TEXT: ("text-turn", HELLO),
    Scenario.CLOSE: ("text-turn", HELLO),
    Scenario.CAPABILITIES: ("text-turn", HELLO),
    Scenario.TOOL: ("permission-allow", Staging("WRITE /tmp/anyagent-live/workspace/allowed.txt ALPHA")),
    Scenario.PERMISSION: ("permission-allow", Staging("WRITE /tmp/anyagent-live/workspace/allowed.txt ALPHA")),
    # cancel.jsonl plays a second turn after the interrupted one
    Scenario.CANCEL: ("cancel", Staging("SLOW 40", follow_up="are you still there")),
}
"""Recorded tier: scenario → (the recording in ``tests/recordings`` it replays, its prompts)."""


def agent_frames(recording: Path) -> list[dict[str, Any]]:
    """The frames ``claude`` wrote in ``recording`` (recorder bookkeeping and client frames left out)."""
    found: list[dict[str, Any]] = []
    for line in recording.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if isinstance(entry, dict) and not _BOOKKEEPING & entry.keys():
            found.append({key: value for key, value in entry.items() if key != "_t"})
    return found


SAMPLE_FRAMES: tuple[dict[str, Any], ...] = tuple(
    frame for recording in sorted(RECORDINGS.glob("*.jsonl")) for frame in agent_frames(recording)
)


class ClaudeSubject:
    """The translator hook both tiers offer: a fresh ``Translator`` per subject (so per check),
    fed the fuzzer's frames one after another as on a real wire, starting from real frames."""

    sample_frames = SAMPLE_FRAMES

    def __init__(self) -> None:
        self._translator = Translator()

    def translate(self, frame: dict[str, Any]) -> Translation:
        """One frame through this subject's translator."""
        return self._translator.feed(frame)


class RecordedClaude(ClaudeSubject):
    """The Claude adapter against the replayer, one of the package's recordings per scenario."""

    name = "claude (recorded)"

    def launch(self, scenario: Scenario, workdir: Path) -> Launch:
        recording, staging = RECORDED[scenario]
        shim = write_replayer_shim(workdir / "bin", RECORDINGS / f"{recording}.jsonl", name="claude")
        workspace = workdir / "workspace"
        workspace.mkdir(exist_ok=True)
        return Launch(
            runtime_with_env(dict(os.environ)),
            AgentInstallation.at("claude", shim),
            SessionOptions.in_dir(workspace),
            staging.prompt,
            staging.follow_up,
        )


test_recorded_conformance = pytest_suite(RecordedClaude)


@pytest.mark.parametrize("kind", [["assistant"], {"x": 1}, 7, None])
def test_a_type_that_is_not_a_string_is_an_unknown_frame(kind: object) -> None:
    translation = Translator().feed({"type": kind, "message": {}})
    [event] = translation.events
    assert isinstance(event, seam.Content) and isinstance(event.kind, Diagnostic)
    assert event.kind.diagnostic.code == "unknown_frame"


def test_the_fuzzer_gets_real_frames_of_every_kind() -> None:
    """The fuzz samples cover what claude writes, so near-miss frames start from real shapes."""
    types = {frame.get("type") for frame in SAMPLE_FRAMES}
    assert {"system", "stream_event", "assistant", "user", "result", "control_request", "control_response"} <= types
    assert not [frame for frame in SAMPLE_FRAMES if {"_t", *_BOOKKEEPING} & frame.keys()]


# ---------------------------------------------------------------------------------------------
# live tier


def live_staging(scenario: Scenario, workdir: Path) -> Staging:
    """The fake-model keywords that stage ``scenario``: a gated ``Write`` into ``workdir`` for a
    tool and a permission (and a turn after a cancel while it waits), a long slow stream (and a
    turn after it) for a cancel, plain text (and a turn after a held setting) for text."""
    if scenario is Scenario.TOOL:
        return Staging(f"WRITE {workdir}/conformance.txt ALPHA")
    if scenario is Scenario.PERMISSION:
        return Staging(f"WRITE {workdir}/conformance.txt ALPHA", follow_up="are you still there")
    if scenario is Scenario.CANCEL:
        return Staging("SLOW 40", follow_up="are you still there")
    if scenario is Scenario.TEXT:
        return Staging(HELLO.prompt, follow_up="are you still there")
    return HELLO


class LiveClaude(ClaudeSubject):
    """The pinned ``claude`` in its isolated environment, talking to the fake model."""

    name = "claude (live)"

    def __init__(self, agent: LiveAgent) -> None:
        super().__init__()
        self.agent = agent

    def launch(self, scenario: Scenario, workdir: Path) -> Launch:
        staging = live_staging(scenario, workdir)
        return Launch(
            runtime_with_env(dict(self.agent.env)),
            AgentInstallation.at("claude", self.agent.executable),
            SessionOptions.in_dir(workdir),
            staging.prompt,
            staging.follow_up,
        )


CHECK_NAMES = [check.__name__.removeprefix("check_") for check in CHECKS]
PROMPTING = frozenset(
    {
        "text_turn",
        "tool_snapshots",
        "permission_round_trip",
        "cancel",
        "cancel_mid_request",
        "between_turns",
        "close_reaps",
    }
)
"""The checks that run a turn, so the CLI must have asked the fake model."""


@pytest.mark.live
@pytest.mark.anyio
@pytest.mark.parametrize("check", CHECK_NAMES)
async def test_live_conformance(
    check: str, live_agent: Callable[..., LiveAgent], fake_model: Any, tmp_path: Path
) -> None:
    subject = LiveClaude(live_agent("claude"))
    report = await run_adapter_conformance(subject, tmp_path / "checks", only=[check])
    [result] = report.results
    if result.status == "skipped":
        pytest.skip(result.detail)
    report.raise_for_failures()
    if check in ("tool_snapshots", "permission_round_trip"):
        written = tmp_path / "checks" / check / "conformance.txt"
        assert written.read_text(encoding="utf-8") == "ALPHA\n", "the allowed Write did not happen"
    if check in PROMPTING:
        assert fake_model.model_calls(), "the CLI never asked the fake model"
