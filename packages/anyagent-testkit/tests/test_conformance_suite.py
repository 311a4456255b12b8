"""The conformance suite itself: the mock adapter passes it, and broken adapters fail it.

Broken adapters are the mock's scripts with a flaw, or the mock's driver behind a ``Tamper`` hook
that sees each command first (to misbehave the way a real adapter could: report the wrong final
status for a tool, answer a declined request, never confirm a setting).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from anyagent import (
    AgentDetails,
    AgentInstallation,
    AgentProfile,
    Completed,
    Diagnostic,
    DiagnosticCode,
    DiagnosticInfo,
    DiagnosticLevel,
    Event,
    Failed,
    PermissionChoice,
    PromptOrigin,
    Runtime,
    SessionOptions,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
    TurnInfo,
    TurnStarted,
    hookimpl,
    seam,
)
from anyagent.mock import MockAdapter, Script, Step, completed, permission, select_option, text, tool
from anyagent_testkit import conformance
from anyagent_testkit.conformance import CHECKS, Launch, Scenario, pytest_suite, run_adapter_conformance

pytestmark = pytest.mark.anyio

MODEL = select_option("model", ["a", "b"], between_turns=True)
"""A setting the mock can only change between turns (the suite picks "b")."""

Tamper = Callable[[seam.DriverCommand, seam.DriverLink], Awaitable[bool]]
"""Sees each command before the mock does; True swallows it."""


def _turn(scenario: Scenario, broken: str | None = None) -> list[Step]:
    if scenario is Scenario.TOOL:
        return [
            Step.emit(tool("t1", ToolStatus.RUNNING)),
            Step.emit(tool("t1", ToolStatus.COMPLETED)),
            Step.emit(tool("t2", ToolStatus.RUNNING, command="npm run dev")),
            Step.background("t2"),  # a dev server left running: listed in TurnEnded.background
            Step.emit(text("m1", "ran it")),
            Step.end(completed()),
        ]
    if scenario is Scenario.PERMISSION:
        gated = tool("t1", ToolStatus.PENDING)
        return [
            Step.emit(gated),
            Step.emit(
                permission("r1", [PermissionChoice.ALLOW_ONCE, PermissionChoice.DENY_ONCE], tool_update=gated.tool)
            ),
            Step.await_answer(),
            Step.emit(tool("t1", ToolStatus.RUNNING)),
            Step.emit(tool("t1", ToolStatus.COMPLETED)),
            Step.emit(text("m1", "allowed")),
            Step.end(completed()),
        ]
    if scenario is Scenario.CANCEL:
        return [
            Step.emit(tool("t1", ToolStatus.RUNNING)),
            Step.emit(text("m1", "working")),
            Step.sleep(30),
            Step.end(completed()),
        ]
    steps = [Step.emit(text("m1", "hello")), Step.emit(text("m1", " there"))]
    if broken == "custom_code":
        steps.append(Step.emit(Diagnostic(DiagnosticInfo("my own thing", DiagnosticLevel.WARNING, "my_own_code"))))
    if broken == "applies_settings_mid_turn":
        changed = (attrs.evolve(MODEL, current="b"),)
        info = seam.DriverInfo(details=AgentDetails(config_options=changed), configuration={"model": "b"})
        steps += [Step.sleep(0.05), Step.send(seam.InfoChanged(info))]
    return [*steps, Step.end(completed())]


async def _fails_tools_on_cancel(command: seam.DriverCommand, link: seam.DriverLink) -> bool:
    if isinstance(command, seam.Cancel):
        await link.content(tool("t1", ToolStatus.FAILED))  # should be CANCELLED
    return False


async def _ends_tools_twice(command: seam.DriverCommand, link: seam.DriverLink) -> bool:
    if isinstance(command, seam.Cancel):
        await link.content(tool("t1", ToolStatus.CANCELLED))
        await link.content(tool("t1", ToolStatus.CANCELLED))
    return False


async def _answers_declined_requests(command: seam.DriverCommand, link: seam.DriverLink) -> bool:
    """What an agent says when the adapter answers a request its cancel already settled."""
    if isinstance(command, seam.Decline):
        await link.diagnostic("permission_answer for a request nobody waits for", code=DiagnosticCode.AGENT_ERROR)
        return True
    return False


async def _never_confirms_settings(command: seam.DriverCommand, link: seam.DriverLink) -> bool:
    return isinstance(command, seam.Configure)


async def _streams_before_ack(command: seam.DriverCommand, link: seam.DriverLink) -> bool:
    if isinstance(command, seam.StartTurn):
        await link.content(text("m0", "too early"))  # the engine drops it: the turn is not acknowledged
    return False


async def _ends_before_ack(command: seam.DriverCommand, link: seam.DriverLink) -> bool:
    if isinstance(command, seam.StartTurn):
        await link.send(seam.TurnEnd(completed()))  # ignored by the engine: the turn would never end
        return True
    return False


TAMPERS: dict[str, Tamper] = {
    "streams_before_ack": _streams_before_ack,
    "ends_before_ack": _ends_before_ack,
    "fails_tools_on_cancel": _fails_tools_on_cancel,
    "ends_tools_twice": _ends_tools_twice,
    "answers_declined_requests": _answers_declined_requests,
    "never_confirms_settings": _never_confirms_settings,
}


class TamperedDriver(seam.Driver):
    """The mock's driver with ``tamper`` between the engine's commands and it."""

    def __init__(self, inner: seam.Driver, tamper: Tamper) -> None:
        self.inner = inner
        self.info = inner.info
        self.tamper = tamper

    async def run(self, link: seam.DriverLink) -> None:
        commands_tx, commands_rx = seam.unbounded_commands()
        events_tx, events_rx = seam.event_channel(64)

        async def pump() -> None:
            async with events_rx:
                async for event in events_rx:
                    await link.send(event)

        async def inner() -> None:
            async with events_tx, commands_rx:
                await self.inner.run(seam.DriverLink(commands_rx, events_tx))

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            tg.start_soon(inner)
            with commands_tx:
                async for command in link.commands:
                    if not await self.tamper(command, link):
                        commands_tx.send_nowait(command)


class TamperedPlugin:
    """Registers the ``tampered`` wire and agent: the mock playing ``script`` behind ``tamper``."""

    def __init__(self, script: Script, tamper: Tamper) -> None:
        self.script = script
        self.tamper = tamper

    @hookimpl
    def anyagent_adapters(self, register: Any) -> None:
        plugin = self

        class TamperedMock(seam.Adapter):
            wire = "tampered"

            async def connect(self, request: seam.ConnectRequest) -> seam.Driver:
                return TamperedDriver(await MockAdapter(plugin.script).connect(request), plugin.tamper)

        register.adapter(TamperedMock)

    @hookimpl
    def anyagent_agents(self, register: Any) -> None:
        register.profile(AgentProfile(id="tampered", name="Tampered mock", wire="tampered", executables=()))


class MockSubject:
    """The mock adapter, staged per scenario by a script; ``broken`` names a flaw to build in."""

    name = "mock"

    def __init__(self, broken: str | None = None, *, bare: bool = False) -> None:
        self.broken = broken
        self.bare = bare  # no settings, no permissions, no follow-up, no translator
        if not bare:
            self.translate = self._translate

    def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
        steps = _turn(scenario, self.broken)
        if self.broken == "fails_turns" and scenario is Scenario.TEXT:
            steps = [Step.emit(text("m1", "oops")), Step.end(Failed("broken adapter"))]
        if self.broken == "untitled_tools" and scenario is Scenario.TOOL:
            steps = [
                Step.emit(tool("t1", ToolStatus.COMPLETED, title="")),
                Step.emit(text("m1", "x")),
                Step.end(completed()),
            ]
        script = Script(
            ignore_cancel=self.broken == "ignores_cancel",
            options=() if self.bare else (MODEL,),
            permissions=not self.bare,
        ).turn(steps)
        if self.broken != "loses_the_next_turn":
            script = script.turn(_turn(Scenario.TEXT))
        follow_up = None if self.bare else "again"
        tamper = TAMPERS.get(self.broken or "")
        if tamper is not None:
            runtime = Runtime(plugins=[TamperedPlugin(script, tamper)])
            agent = AgentInstallation(id="tampered", name="Tampered", executable_path="<in-process>", wire="tampered")
            return Launch(runtime, agent, SessionOptions.in_dir(workdir), "go", follow_up)
        runtime = Runtime.with_mock(script)
        agent = AgentInstallation(id="mock", name="Mock agent", executable_path="<in-process>", wire="mock")
        return Launch(runtime, agent, SessionOptions.in_dir(workdir), "go", follow_up)

    def _translate(self, frame: dict[str, Any]) -> object:
        if self.broken == "crashes_on_frames" and "method" in frame:
            raise KeyError("params")
        if self.broken == "custom_code_translator" and "type" in frame:
            return [seam.Content(Diagnostic(DiagnosticInfo("odd", DiagnosticLevel.INFO, "odd_frame", frame)))]
        return seam.Content(Diagnostic(DiagnosticInfo("seen", DiagnosticLevel.INFO, DiagnosticCode.UNKNOWN_FRAME)))


CHECK_NAMES = [check.__name__.removeprefix("check_") for check in CHECKS]


async def test_the_mock_adapter_passes_every_check(tmp_path: Path) -> None:
    report = await run_adapter_conformance(MockSubject(), tmp_path)
    report.raise_for_failures()
    passed = {r.name for r in report.results if r.status == "passed"}
    linux_only = {"close_reaps", "dropped_handles_reap", "dropped_handles_reap_after_a_turn"}
    assert passed == set(CHECK_NAMES) - (linux_only if not _linux() else set()), report.summary()


def _linux() -> bool:
    return sys.platform.startswith("linux")


@pytest.mark.parametrize(
    ("broken", "check", "says"),
    [
        ("fails_turns", "text_turn", "turn ended"),
        ("untitled_tools", "tool_snapshots", "no title"),
        ("crashes_on_frames", "fuzzed_frames", "translate raised KeyError"),
        ("ignores_cancel", "cancel", "never ended the cancelled turn"),
        ("fails_tools_on_cancel", "cancel", "ended failed, not cancelled"),
        ("ends_tools_twice", "cancel", "got 2 final updates"),
        ("answers_declined_requests", "cancel_mid_request", "agent_error"),
        ("loses_the_next_turn", "cancel_mid_request", "after the cancel"),
        ("applies_settings_mid_turn", "between_turns", "before the turn's TurnEnded"),
        ("never_confirms_settings", "between_turns", "neither confirmed"),
        ("custom_code", "text_turn", "'my_own_code' is not in anyagent.DiagnosticCode"),
        ("custom_code_translator", "diagnostic_codes", "'odd_frame' is not in anyagent.DiagnosticCode"),
    ],
)
async def test_broken_adapters_fail_the_right_check(
    tmp_path: Path, broken: str, check: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyagent._engine

    monkeypatch.setattr(anyagent._engine, "CANCEL_GRACE", 0.2)
    monkeypatch.setattr(anyagent._engine, "CONFIGURE_GRACE", 0.2)
    report = await run_adapter_conformance(MockSubject(broken), tmp_path, only=[check])
    assert [r.status for r in report.results] == ["failed"], report.summary()
    assert says in report.results[0].detail, report.summary()
    with pytest.raises(AssertionError, match=check):
        report.raise_for_failures()


@pytest.mark.parametrize(
    ("broken", "says"),
    [
        ("streams_before_ack", "sent TextDelta for turn"),
        ("ends_before_ack", "sent TurnEnd(Completed) for turn"),
    ],
)
async def test_a_contract_break_fails_fast_naming_the_cause(tmp_path: Path, broken: str, says: str) -> None:
    """Without the watch these wait out TURN_TIMEOUT (120 s) per check with no cause given."""
    started = anyio.current_time()
    report = await run_adapter_conformance(MockSubject(broken), tmp_path, only=["text_turn", "handshake"])
    assert anyio.current_time() - started < 20
    statuses = {r.name: r for r in report.results}
    assert statuses["handshake"].status == "passed", report.summary()  # no turn, no break
    failed = statuses["text_turn"]
    assert failed.status == "failed", report.summary()
    assert failed.detail.startswith("AssertionError: contract break: the adapter " + says), failed.detail
    assert "before its TurnAck" in failed.detail and "Send seam.TurnAck()" in failed.detail


async def test_checks_skip_what_the_subject_cannot_stage(tmp_path: Path) -> None:
    """No setting, no permissions, no follow-up turn, no translator: those checks skip, the rest pass."""
    report = await run_adapter_conformance(MockSubject(bare=True), tmp_path)
    statuses = {r.name: r.status for r in report.results}
    skipped = {"permission_round_trip", "cancel_mid_request", "between_turns", "fuzzed_frames", "diagnostic_codes"}
    assert {name for name, status in statuses.items() if status == "skipped"} == skipped, report.summary()
    report.raise_for_failures()


async def test_unstaged_scenarios_are_skipped(tmp_path: Path) -> None:
    class Nothing:
        name = "nothing"

        def launch(self, scenario: Scenario, workdir: Path) -> Launch | None:
            return None

    report = await run_adapter_conformance(Nothing(), tmp_path)
    assert {r.status for r in report.results} == {"skipped"}
    assert [r.name for r in report.results] == CHECK_NAMES


def _event(sequence: int, kind: Any, turn: str | None = "t1") -> Event:
    info = TurnInfo(turn) if turn is not None else None
    return Event(sequence, datetime.now(timezone.utc), "s1", kind, info)


def test_a_tool_left_active_after_its_turn_fails_unless_listed_as_background() -> None:
    """The rule every check applies to every turn (the engine keeps it; the suite makes sure)."""
    running = ToolUpdated(tool("t1", ToolStatus.RUNNING).tool)
    turn = [_event(1, TurnStarted(PromptOrigin("p1"))), _event(2, running)]
    with pytest.raises(AssertionError, match=r"t1 \(running\)"):
        conformance._check_turn_shape([*turn, _event(3, TurnEnded(Completed()))], "p1")
    conformance._check_turn_shape([*turn, _event(3, TurnEnded(Completed(), background=("t1",)))], "p1")


test_pytest_form = pytest_suite(MockSubject)


def _watched(*steps: object) -> str | None:
    watch = conformance._ContractWatch()
    for step in steps:
        if isinstance(step, (seam.StartTurn, seam.Cancel)):
            watch.command(step)
        else:
            watch.event(step)
    return watch.broken


def test_the_contract_watch_tells_a_break_from_a_cancelled_turn_s_late_tail() -> None:
    from anyagent import Cancelled, Input

    def start(turn: str) -> seam.StartTurn:
        return seam.StartTurn(Input.text("go"), turn)

    hello = seam.Content(text("m1", "hello"))
    end = seam.TurnEnd(completed())
    assert _watched(start("t1"), seam.TurnAck(), hello, end, start("t2"), seam.TurnAck(), hello, end) is None
    assert "TextDelta for turn t1 before its TurnAck" in (_watched(start("t1"), hello) or "")
    assert "TurnEnd(Completed) for turn t2" in (_watched(start("t1"), seam.TurnAck(), end, start("t2"), end) or "")
    # cancelled before its ack: the end needs no ack
    assert _watched(start("t1"), seam.Cancel(), seam.TurnEnd(Cancelled())) is None
    # t1 cancelled after its ack and still ending when t2 starts: its late content and end are t1's
    late = [hello, seam.TurnEnd(Cancelled())]
    assert _watched(start("t1"), seam.TurnAck(), seam.Cancel(), start("t2"), *late, seam.TurnAck(), hello, end) is None
    # but an end stamped with the new turn's id before its ack is a break even then
    stamped = seam.TurnEnd(completed(), turn_id="t2")
    assert _watched(start("t1"), seam.TurnAck(), seam.Cancel(), start("t2"), stamped) is not None
