"""The conformance suite itself: the mock adapter passes it, and broken adapters fail it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anyagent import Failed, PermissionChoice, Runtime, SessionOptions, ToolStatus
from anyagent.mock import Script, Step, completed, permission, text, tool
from anyagent_testkit.conformance import Launch, Scenario, pytest_suite, run_adapter_conformance

pytestmark = pytest.mark.anyio


def _turn(scenario: Scenario) -> list[Step]:
    if scenario is Scenario.TOOL:
        return [
            Step.emit(tool("t1", ToolStatus.RUNNING)),
            Step.emit(tool("t1", ToolStatus.COMPLETED)),
            Step.emit(text("m1", "ran it")),
            Step.end(completed()),
        ]
    if scenario is Scenario.PERMISSION:
        return [
            Step.emit(permission("r1", [PermissionChoice.ALLOW_ONCE, PermissionChoice.DENY_ONCE])),
            Step.await_answer(),
            Step.emit(text("m1", "allowed")),
            Step.end(completed()),
        ]
    if scenario is Scenario.CANCEL:
        return [Step.emit(text("m1", "working")), Step.sleep(30), Step.end(completed())]
    return [Step.emit(text("m1", "hello")), Step.emit(text("m1", " there")), Step.end(completed())]


class MockSubject:
    """The mock adapter, staged per scenario by a script."""

    name = "mock"

    def __init__(self, broken: str | None = None) -> None:
        self.broken = broken

    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        steps = _turn(scenario)
        if self.broken == "fails_turns" and scenario is Scenario.TEXT:
            steps = [Step.emit(text("m1", "oops")), Step.end(Failed("broken adapter"))]
        if self.broken == "untitled_tools" and scenario is Scenario.TOOL:
            steps = [
                Step.emit(tool("t1", ToolStatus.COMPLETED, title="")),
                Step.emit(text("m1", "x")),
                Step.end(completed()),
            ]
        script = Script(ignore_cancel=self.broken == "ignores_cancel").turn(steps).turn(_turn(Scenario.TEXT))
        runtime = Runtime.with_mock(script)
        agent = runtime_agent(runtime)
        return Launch(runtime, agent, SessionOptions.in_dir(workdir), "go", follow_up="again")

    def translate(self, frame: dict[str, Any]) -> object:
        if self.broken == "crashes_on_frames" and "method" in frame:
            raise KeyError("params")
        return frame.get("type")


def runtime_agent(runtime: Runtime) -> Any:
    from anyagent import AgentInstallation

    return AgentInstallation(id="mock", name="Mock agent", executable_path="<in-process>", wire="mock")


async def test_the_mock_adapter_passes_every_check(tmp_path: Path) -> None:
    report = await run_adapter_conformance(MockSubject(), tmp_path)
    report.raise_for_failures()
    assert {r.name for r in report.results if r.status == "passed"} >= {
        "handshake",
        "text_turn",
        "tool_snapshots",
        "permission_round_trip",
        "cancel",
        "unsupported_calls",
        "fuzzed_frames",
    }


@pytest.mark.parametrize(
    ("broken", "check"),
    [
        ("fails_turns", "text_turn"),
        ("untitled_tools", "tool_snapshots"),
        ("crashes_on_frames", "fuzzed_frames"),
        ("ignores_cancel", "cancel"),
    ],
)
async def test_broken_adapters_fail_the_right_check(
    tmp_path: Path, broken: str, check: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyagent._engine

    monkeypatch.setattr(anyagent._engine, "CANCEL_GRACE", 0.2)
    report = await run_adapter_conformance(MockSubject(broken), tmp_path, only=[check])
    assert [r.status for r in report.results] == ["failed"], report.summary()
    with pytest.raises(AssertionError, match=check):
        report.raise_for_failures()


async def test_unstaged_scenarios_are_skipped(tmp_path: Path) -> None:
    class Nothing:
        name = "nothing"

        def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
            return None

    report = await run_adapter_conformance(Nothing(), tmp_path)
    assert {r.status for r in report.results} == {"skipped"}


test_pytest_form = pytest_suite(MockSubject)
