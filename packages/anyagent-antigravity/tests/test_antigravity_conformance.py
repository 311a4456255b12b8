"""The testkit's adapter conformance suite against anyagent-antigravity's headless wire.

Recorded tier: each scenario replays one of this package's agy recordings (``recordings/``); the
translator is fuzzed with the real frames of every recording. Scripted tier: the same suite against
the scripted fake agy, which can also run the turn after a cancel (the recordings hold no such
turn). PERMISSION is not staged: agy's headless wire cannot prompt (no ``Permissions``
capability). Each check is its own test case, on asyncio and trio.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agy_support import RECORDINGS, fake_agy, replay_shim, runtime

from anyagent import AgentInstallation, PermissionMode, SessionOptions, seam
from anyagent_antigravity.translate import Translator
from anyagent_testkit.conformance import Launch, Scenario, pytest_suite

_BOOKKEEPING = frozenset({"_sent", "_raw", "_meta", "_note"})

RECORDED: dict[Scenario, tuple[str, str, bool]] = {
    Scenario.HANDSHAKE: ("01-handshake", "hello", False),
    Scenario.TEXT: ("02-pong", "Reply with exactly the word pong and nothing else.", False),
    Scenario.CLOSE: ("02-pong", "Reply with exactly the word pong and nothing else.", False),
    Scenario.CAPABILITIES: ("02-pong", "hello", False),
    Scenario.TOOL: ("04-tool-skip", "Create a file named probe.txt containing the word hello. Use your tools.", True),
    Scenario.CANCEL: ("07-cancel", "Run the shell command `sleep 25` using your tool, then tell me the date.", True),
}
"""Scenario -> (recording, its prompt, launched with AutoApprove)."""


def agent_frames(recording: Path) -> list[dict[str, Any]]:
    """The frames agy wrote in ``recording`` (bookkeeping and client frames left out)."""
    found = []
    for line in recording.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if isinstance(entry, dict) and not _BOOKKEEPING & entry.keys():
            found.append({key: value for key, value in entry.items() if key != "_t"})
    return found


SAMPLE_FRAMES = tuple(frame for path in sorted(RECORDINGS.glob("[0-9]*.jsonl")) for frame in agent_frames(path))


class AgySubject:
    """The translator hook: a fresh ``Translator`` per subject, fed frames in wire order."""

    sample_frames = SAMPLE_FRAMES

    def __init__(self) -> None:
        self._translator = Translator()

    def translate(self, frame: dict[str, Any]) -> list[seam.DriverEvent]:
        """One frame through this subject's translator."""
        return self._translator.feed(frame)


class RecordedAgy(AgySubject):
    """The adapter against the replayer, one recording per scenario."""

    name = "antigravity (recorded)"

    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        if scenario not in RECORDED:
            return None  # PERMISSION: the headless wire cannot prompt
        recording, prompt, auto = RECORDED[scenario]
        shim = replay_shim(workdir / "bin", RECORDINGS / f"{recording}.jsonl")
        workspace = workdir / "workspace"
        workspace.mkdir(exist_ok=True)
        options = SessionOptions.in_dir(workspace)
        if auto:
            options = options.permission_mode(PermissionMode.AUTO_APPROVE)
        return Launch(runtime(), AgentInstallation.at("antigravity", shim), options, prompt)


class ScriptedAgy(AgySubject):
    """The adapter against the scripted fake agy (cancel is followed by a turn on the relaunch)."""

    name = "antigravity (scripted)"

    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        if scenario is Scenario.PERMISSION:
            return None
        agy = fake_agy(workdir / "agy")
        options = SessionOptions.in_dir(workdir).permission_mode(PermissionMode.AUTO_APPROVE)
        prompt = {Scenario.TOOL: "TOOL", Scenario.CANCEL: "SLOW"}.get(scenario, "hello")
        follow_up = "are you still there" if scenario is Scenario.CANCEL else None
        return Launch(runtime(), AgentInstallation.at("antigravity", agy), options, prompt, follow_up)


test_recorded_conformance = pytest_suite(RecordedAgy)
test_scripted_conformance = pytest_suite(ScriptedAgy)


def test_the_fuzzer_gets_real_frames_of_every_kind() -> None:
    events = {frame.get("event") for frame in SAMPLE_FRAMES}
    assert events == {"init", "step_update", "result"}
    steps = {frame["step_update"]["step_type"] for frame in SAMPLE_FRAMES if frame.get("event") == "step_update"}
    assert {"user_input", "agent_response", "tool", "subagent", "unknown", "system_message"} <= steps
