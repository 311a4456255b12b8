"""What the conformance suite does not pin: echo-agent's own behaviour (deny, a real command, cancel
mid-command), the adapter under a misbehaving agent, the driver's answers to commands the engine
never sends it, and the translator's mapping."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

from anyagent import (
    AgentInstallation,
    Answer,
    Cancelled,
    Capabilities,
    Capability,
    Completed,
    Diagnostic,
    DiagnosticCode,
    Event,
    Failed,
    Input,
    PermissionChoice,
    PermissionRequest,
    ProcessExited,
    ProtocolFailed,
    QuestionAnswer,
    Queued,
    RequestClosed,
    RequestOpened,
    RollbackScope,
    Runtime,
    Session,
    SessionOptions,
    Started,
    TextDelta,
    ToolKind,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
    seam,
)
from anyagent_echo import EchoAdapter, translate
from anyagent_echo.translate import wire_decision
from anyagent_testkit.events import EventReader, kinds, text_of
from anyagent_testkit.replay import write_replayer_shim
from anyagent_testkit.stdio import JsonlProcess

pytestmark = pytest.mark.anyio

TIMEOUT = 20.0


def echo_agent() -> AgentInstallation:
    """The installed console script (the conformance test checks discovery finds the same one)."""
    found = shutil.which("echo-agent")
    assert found is not None, "echo-agent is not on PATH: install this package first"
    return AgentInstallation.at("echo", found)


async def turn(reader: EventReader, session: Session, choice: PermissionChoice | None = None) -> list[Event]:
    """Every event up to the end of the turn, answering permission requests with ``choice``."""
    start = len(reader.seen)
    while True:
        event = await reader.until(RequestOpened, TurnEnded)
        if isinstance(event.kind, RequestOpened) and choice is not None:
            await session.answer(event.kind.request.id, Answer.permission(choice))
        if isinstance(event.kind, TurnEnded):
            return reader.seen[start:]


def tools(events: list[Event]) -> list[tuple[ToolStatus, str | None]]:
    return [(tool.tool.status, tool.tool.output) for tool in kinds(events, ToolUpdated)]


def codes(events: list[Event]) -> list[str | None]:
    return [d.diagnostic.code for d in kinds(events, Diagnostic)]


def fake_agent(tmp_path: Path, body: str) -> AgentInstallation:
    """A misbehaving stand-in for echo-agent: a Python script launched as the ``echo`` agent."""
    script = tmp_path / "fake-echo-agent"
    header = f"#!{sys.executable}\nimport json, os, sys, time\n"
    script.write_text(header + textwrap.dedent(body))
    script.chmod(0o755)
    return AgentInstallation.at("echo", script)


async def wait_for_pid(path: Path) -> int:
    """The pid a command wrote to ``path``, once it is there."""
    file = anyio.Path(path)
    with anyio.fail_after(5):
        while not await file.exists() or not (await file.read_text()).strip():
            await anyio.sleep(0.02)
    return int(await file.read_text())


def assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# ---------------------------------------------------------------------------------------------
# echo-agent through the whole stack


async def test_a_denied_command_never_runs(tmp_path: Path) -> None:
    async with Runtime() as runtime:
        session, events = await runtime.open(echo_agent(), SessionOptions.in_dir(tmp_path))
        reader = EventReader(events, timeout=TIMEOUT)
        async with session:
            await session.prompt("RUN touch made.txt")
            seen = await turn(reader, session, PermissionChoice.DENY_ONCE)
    request = next(e.kind.request for e in seen if isinstance(e.kind, RequestOpened))
    assert isinstance(request, PermissionRequest)
    assert request.options == (PermissionChoice.ALLOW_ONCE, PermissionChoice.DENY_ONCE)
    assert request.tool.input.command == "touch made.txt"
    assert tools(seen) == [(ToolStatus.PENDING, None), (ToolStatus.FAILED, "denied by the user")]
    assert text_of(seen) == "I did not run `touch made.txt`: permission denied."
    assert seen[-1].kind == TurnEnded(Completed())
    assert not (tmp_path / "made.txt").exists()


async def test_an_allowed_command_runs_in_the_session_directory(tmp_path: Path) -> None:
    async with Runtime() as runtime:
        session, events = await runtime.open(echo_agent(), SessionOptions.in_dir(tmp_path))
        reader = EventReader(events, timeout=TIMEOUT)
        async with session:
            await session.prompt("RUN printf 'from the shell\\n' > made.txt && cat made.txt")
            ok = await turn(reader, session, PermissionChoice.ALLOW_ONCE)
            await session.prompt("RUN echo oops >&2; exit 3")
            failing = await turn(reader, session, PermissionChoice.ALLOW_ONCE)
    assert (tmp_path / "made.txt").read_text() == "from the shell\n"
    assert tools(ok) == [
        (ToolStatus.PENDING, None),
        (ToolStatus.RUNNING, None),
        (ToolStatus.COMPLETED, "from the shell\n"),
    ]
    last = [e.kind.tool for e in ok if isinstance(e.kind, ToolUpdated)][-1]
    assert last.kind is ToolKind.EXECUTE and last.title.startswith("Run `printf")
    assert last.raw is not None and last.raw["exit_code"] == 0
    assert tools(failing)[-1] == (ToolStatus.FAILED, "oops\n")
    assert text_of(failing) == "Ran `echo oops >&2; exit 3`: exit code 3."
    assert failing[-1].kind == TurnEnded(Completed())


async def test_cancel_kills_a_running_command_and_the_session_goes_on(tmp_path: Path) -> None:
    async with Runtime() as runtime:
        session, events = await runtime.open(echo_agent(), SessionOptions.in_dir(tmp_path))
        reader = EventReader(events, timeout=TIMEOUT)
        async with session:
            await session.prompt("RUN echo $$ > pid.txt; exec sleep 30")
            opened = await reader.kind(RequestOpened)
            await session.answer(opened.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
            await reader.match(lambda e: isinstance(e.kind, ToolUpdated) and e.kind.tool.status is ToolStatus.RUNNING)
            pid = await wait_for_pid(tmp_path / "pid.txt")  # the command really started
            await session.cancel()
            cancelled_at = anyio.current_time()
            await reader.until(TurnEnded)
            # confirmed by the agent itself, well before the engine's own cancel grace would end it
            assert anyio.current_time() - cancelled_at < 5
            seen = reader.seen
            assert seen[-1].kind == TurnEnded(Cancelled())
            assert tools(seen)[-1][0] is ToolStatus.CANCELLED
            assert DiagnosticCode.CANCEL_UNCONFIRMED not in codes(seen)
            assert_gone(pid)
            await session.prompt("hello again")
            after = await turn(reader, session)
            assert text_of(after) == "You said: hello again"


async def test_cancel_with_a_permission_request_open_answers_it_once(tmp_path: Path) -> None:
    """The engine closes the request and sends ``Decline``; echo-agent's own cancel already stopped
    waiting, so the adapter writes no answer (a stray one would come back as an ``error`` frame)."""
    log = tmp_path / "wire.jsonl"
    async with Runtime() as runtime:
        session, events = await runtime.open(echo_agent(), SessionOptions.in_dir(tmp_path).record_wire(log))
        reader = EventReader(events, timeout=TIMEOUT)
        async with session:
            await session.prompt("RUN touch never.txt")
            opened = await reader.kind(RequestOpened)
            await session.cancel()
            await turn(reader, session)
            seen = list(reader.seen)
            await session.prompt("hello again")
            after = await turn(reader, session)
    assert RequestClosed(opened.request.id) in [e.kind for e in seen]
    assert seen[-1].kind == TurnEnded(Cancelled())
    assert tools(seen) == [(ToolStatus.PENDING, None), (ToolStatus.CANCELLED, None)]
    assert text_of(after) == "You said: hello again"
    assert codes(seen + after) == []
    sent = [json.loads(line)["_sent"] for line in log.read_text().splitlines() if "_sent" in line]
    assert [frame["type"] for frame in sent] == ["prompt", "cancel", "prompt"]
    assert not (tmp_path / "never.txt").exists()


async def test_a_request_still_open_at_close_is_declined_on_the_wire(tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    async with Runtime() as runtime:
        session, events = await runtime.open(echo_agent(), SessionOptions.in_dir(tmp_path).record_wire(log))
        reader = EventReader(events, timeout=TIMEOUT)
        await session.prompt("RUN touch never.txt")
        opened = await reader.kind(RequestOpened)
        await session.close()
    sent = [json.loads(line)["_sent"] for line in log.read_text().splitlines() if "_sent" in line]
    assert sent[-1] == {"type": "permission_answer", "request": opened.request.id, "decision": "deny"}
    assert not (tmp_path / "never.txt").exists()


async def test_a_second_prompt_queues_behind_the_running_turn(tmp_path: Path) -> None:
    async with Runtime() as runtime:
        session, events = await runtime.open(echo_agent(), SessionOptions.in_dir(tmp_path))
        reader = EventReader(events, timeout=TIMEOUT)
        async with session:
            await session.prompt("SLOW 5")
            delivery = await session.prompt("next")
            assert isinstance(delivery.kind, Queued)  # no Capability.STEER: the engine queues
            first = await turn(reader, session)
            second = await turn(reader, session)
    assert text_of(first) == "word1 word2 word3 word4 word5"
    assert text_of(second) == "You said: next"


async def test_without_tools_run_is_declined_and_generate_works(tmp_path: Path) -> None:
    options = SessionOptions.in_dir(tmp_path).without_tools()
    async with Runtime() as runtime:
        session, events = await runtime.open(echo_agent(), options)
        reader = EventReader(events, timeout=TIMEOUT)
        async with session:
            await session.prompt("RUN touch made.txt")
            seen = await turn(reader, session)
        assert text_of(seen) == "Tools are off in this session, so I did not run `touch made.txt`."
        assert not tools(seen)
        assert await runtime.generate(echo_agent(), SessionOptions.in_dir(tmp_path), "hi") == "You said: hi"


async def test_record_wire_tees_both_directions(tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    async with Runtime() as runtime:
        session, events = await runtime.open(echo_agent(), SessionOptions.in_dir(tmp_path).record_wire(log))
        reader = EventReader(events, timeout=TIMEOUT)
        async with session:
            delivery = await session.prompt("hi")
            await turn(reader, session)
    assert isinstance(delivery.kind, Started)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines[0]["_meta"]["cmd"][0].endswith("echo-agent")
    assert lines[1]["type"] == "hello"
    assert next(line["_sent"] for line in lines if "_sent" in line) == {
        "type": "prompt",
        "turn": delivery.kind.turn_id,
        "text": "hi",
    }
    assert [line.get("type") for line in lines if "type" in line][-1] == "done"


async def test_a_recorded_session_replays_to_the_same_events(tmp_path: Path) -> None:
    """Record a live session with ``record_wire``; the testkit's replayer then stands in for
    echo-agent (strict: every frame the adapter sends must match the recording's kind)."""

    async def session(agent: AgentInstallation, options: SessionOptions) -> list[object]:
        seen: list[object] = []
        async with Runtime() as runtime:
            session, events = await runtime.open(agent, options)
            reader = EventReader(events, timeout=TIMEOUT)
            async with session:
                for prompt in ["hello", "RUN echo replayed"]:
                    await session.prompt(prompt)
                    seen += [e.kind for e in await turn(reader, session, PermissionChoice.ALLOW_ONCE)]
        return seen

    recording = tmp_path / "echo.jsonl"
    live = await session(echo_agent(), SessionOptions.in_dir(tmp_path).record_wire(recording))
    shim = write_replayer_shim(tmp_path, recording, name="echo-agent", strict=True)
    replayed = await session(AgentInstallation.at("echo", shim), SessionOptions.in_dir(tmp_path))
    assert replayed == live
    said = "".join(kind.text for kind in replayed if isinstance(kind, TextDelta))
    assert said == "You said: helloRan `echo replayed`: exit code 0."


# ---------------------------------------------------------------------------------------------
# a misbehaving agent


async def test_garbage_from_the_agent_becomes_diagnostics_and_the_turn_goes_on(tmp_path: Path) -> None:
    agent = fake_agent(
        tmp_path,
        """
        print(json.dumps({"type": "hello", "protocol": 1, "version": "9"}), flush=True)
        prompt = json.loads(sys.stdin.readline())
        for line in [
            json.dumps({"type": "ack", "turn": prompt["turn"]}),
            "this is not json",
            "[1, 2]",
            json.dumps({"type": "mystery", "x": 1}),
            json.dumps({"type": "text", "message": 7}),
            json.dumps({"type": "text", "turn": prompt["turn"], "message": "m", "text": "still here"}),
            json.dumps({"type": "done", "turn": prompt["turn"], "stop": "completed"}),
        ]:
            print(line, flush=True)
        sys.stdin.read()
        """,
    )
    async with Runtime() as runtime:
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        reader = EventReader(events, timeout=TIMEOUT)
        assert session.info().details.version == "9"
        async with session:
            await session.prompt("go")
            seen = await turn(reader, session)
    diagnostics = [e.kind.diagnostic for e in seen if isinstance(e.kind, Diagnostic)]
    assert [(d.code, d.raw) for d in diagnostics] == [
        ("bad_line", "this is not json"),
        ("bad_line", "[1, 2]"),
        ("unknown_frame", {"type": "mystery", "x": 1}),
        ("bad_frame", {"type": "text", "message": 7}),
    ]
    assert text_of(seen) == "still here"
    assert seen[-1].kind == TurnEnded(Completed())


async def test_an_agent_dying_mid_turn_fails_the_turn_and_raises_with_its_stderr(tmp_path: Path) -> None:
    agent = fake_agent(
        tmp_path,
        """
        print(json.dumps({"type": "hello", "protocol": 1, "version": "9"}), flush=True)
        prompt = json.loads(sys.stdin.readline())
        print(json.dumps({"type": "ack", "turn": prompt["turn"]}), flush=True)
        print("fatal: out of cheese", file=sys.stderr, flush=True)
        sys.exit(3)
        """,
    )
    async with Runtime() as runtime:
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        reader = EventReader(events, timeout=TIMEOUT)
        await session.prompt("go")
        with pytest.raises(ProcessExited) as raised:
            await reader.rest()
    assert [ended.stop for ended in kinds(reader.seen, TurnEnded)] == [Failed("the agent exited during the turn")]
    assert raised.value.status == "exit status: 3"
    assert "fatal: out of cheese" in raised.value.stderr


@pytest.mark.parametrize(
    ("first_line", "then"),
    [
        ('{"type": "hi"}', "time.sleep(60)"),  # deaf to stdin EOF: the close ladder's SIGTERM ends it
        ("not json at all", "sys.stdin.read()"),
        ('{"type": "hello", "protocol": 2, "version": "2.0"}', "sys.stdin.read()"),
    ],
)
async def test_a_wrong_hello_is_protocol_failed_and_the_agent_is_reaped(
    tmp_path: Path, first_line: str, then: str
) -> None:
    pid_file = 'open("pid.txt", "w").write(str(os.getpid()))'
    agent = fake_agent(tmp_path, f"{pid_file}\nprint({first_line!r}, flush=True)\n{then}\n")
    async with Runtime() as runtime:
        with pytest.raises(ProtocolFailed):
            await runtime.open(agent, SessionOptions.in_dir(tmp_path))
    assert_gone(int((tmp_path / "pid.txt").read_text()))


async def test_an_agent_that_exits_before_its_hello_is_process_exited(tmp_path: Path) -> None:
    agent = fake_agent(tmp_path, 'print("no config", file=sys.stderr)\nsys.exit(2)\n')
    async with Runtime() as runtime:
        with pytest.raises(ProcessExited, match="exit status: 2") as raised:
            await runtime.open(agent, SessionOptions.in_dir(tmp_path))
    assert "no config" in raised.value.stderr


# ---------------------------------------------------------------------------------------------
# the driver's answers to commands the engine does not send it (it reports no such capability)


class DriverHarness:
    """An ``EchoDriver`` run directly, without the engine: commands in, ``DriverEvent``s out."""

    def __init__(self, commands: Any, events: Any) -> None:
        self.commands = commands
        self.events = events

    async def send(self, *commands: seam.DriverCommand) -> None:
        for command in commands:
            await self.commands.send(command)

    async def until(self, done: Any) -> list[seam.DriverEvent]:
        """Every event up to and including the first that ``done`` accepts."""
        got: list[seam.DriverEvent] = []
        while not got or not done(got[-1]):
            got.append(await self.events.receive())
        return got


async def drive(tmp_path: Path, body: Any) -> None:
    request = seam.ConnectRequest(echo_agent(), None, SessionOptions.in_dir(tmp_path), "s1", dict(os.environ))
    driver = await EchoAdapter().connect(request)
    assert driver.info.details.capabilities == Capabilities.of(Capability.PERMISSIONS)
    commands_tx, commands_rx = anyio.create_memory_object_stream[seam.DriverCommand](10)
    events_tx, events_rx = anyio.create_memory_object_stream[seam.DriverEvent](100)
    with commands_tx, commands_rx, events_tx, events_rx, anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(driver.run, seam.DriverLink(commands_rx, events_tx))
            await body(DriverHarness(commands_tx, events_rx))
            await commands_tx.send(seam.Close())  # run returns: the task group can exit


def diagnostic_code(event: seam.DriverEvent) -> str | None:
    assert isinstance(event, seam.Content) and isinstance(event.kind, Diagnostic), event
    return event.kind.diagnostic.code


async def test_the_driver_refuses_what_echo_agent_cannot_do(tmp_path: Path) -> None:
    async def body(driver: DriverHarness) -> None:
        await driver.send(seam.Steer(Input.text("more")))
        assert await driver.until(lambda e: True) == [seam.SteerResult(False)]
        await driver.send(seam.Compact())
        refused, ended = await driver.until(lambda e: isinstance(e, seam.TurnEnd))
        assert diagnostic_code(refused) == DiagnosticCode.UNSUPPORTED
        assert isinstance(ended, seam.TurnEnd) and isinstance(ended.stop, Failed)
        await driver.send(seam.Configure("model", "x"))
        assert [diagnostic_code(e) for e in await driver.until(lambda e: True)] == [DiagnosticCode.CONFIGURE_REFUSED]
        await driver.send(seam.Rollback(1, RollbackScope.CONVERSATION))
        assert [diagnostic_code(e) for e in await driver.until(lambda e: True)] == [DiagnosticCode.ROLLBACK_REFUSED]
        await driver.send(seam.AnswerRequest("q1", Answer.question([QuestionAnswer.text("no")])))
        assert [diagnostic_code(e) for e in await driver.until(lambda e: True)] == [DiagnosticCode.UNEXPECTED_ANSWER]

    await drive(tmp_path, body)


async def test_the_driver_declines_a_request_once_and_drops_a_late_answer(tmp_path: Path) -> None:
    """A second ``Decline`` or an answer after it would be a stray ``permission_answer``, which
    echo-agent answers with an ``error`` frame: none comes."""

    def is_request(event: seam.DriverEvent) -> bool:
        return isinstance(event, seam.Content) and isinstance(event.kind, RequestOpened)

    async def body(driver: DriverHarness) -> None:
        await driver.send(seam.StartTurn(Input.text("RUN touch never.txt"), "t1"))
        opened = (await driver.until(is_request))[-1]
        assert isinstance(opened, seam.Content) and isinstance(opened.kind, RequestOpened)
        request_id = opened.kind.request.id
        allow = Answer.permission(PermissionChoice.ALLOW_ONCE)
        await driver.send(seam.Decline(request_id), seam.Decline(request_id), seam.AnswerRequest(request_id, allow))
        rest = await driver.until(lambda e: isinstance(e, seam.TurnEnd))
        assert rest[-1] == seam.TurnEnd(Completed())
        contents = [e.kind for e in rest if isinstance(e, seam.Content)]
        assert not [kind for kind in contents if isinstance(kind, Diagnostic)]
        finished = [kind.tool for kind in contents if isinstance(kind, ToolUpdated)]
        assert [(tool.status, tool.output) for tool in finished] == [(ToolStatus.FAILED, "denied by the user")]

    await drive(tmp_path, body)
    assert not (tmp_path / "never.txt").exists()


# ---------------------------------------------------------------------------------------------
# the agent program on its own


async def test_echo_agent_answers_what_it_cannot_take_with_error_frames(tmp_path: Path) -> None:
    async with JsonlProcess.open([str(shutil.which("echo-agent"))], cwd=tmp_path) as agent:
        hello = await agent.receive(TIMEOUT)
        assert hello == {"type": "hello", "protocol": 1, "version": "0.1.0", "tools": True}
        for line in ["garbage", "[1]", '{"type": "nope"}', '{"type": "permission_answer", "request": "x"}']:
            await agent.send_line(line)
        await agent.send({"type": "prompt", "turn": 5})
        errors = [await agent.receive(TIMEOUT) for _ in range(5)]
        assert [e["type"] for e in errors] == ["error"] * 5
        assert [e["frame"] for e in errors[1:]] == [
            "[1]",
            {"type": "nope"},
            {"type": "permission_answer", "request": "x"},
            {"type": "prompt", "turn": 5},
        ]
        await agent.send({"type": "prompt", "turn": "t1", "text": "still alive"})
        frames = await agent.receive_until(lambda f: f.get("type") == "done", TIMEOUT)
        assert frames[0] == {"type": "ack", "turn": "t1"}
        assert "".join(f["text"] for f in frames if f["type"] == "text") == "You said: still alive"
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == 0


# ---------------------------------------------------------------------------------------------
# the translator


def test_translate_maps_a_permission_frame() -> None:
    tool = {"id": "tool-1", "kind": "execute", "status": "pending", "command": "ls"}
    event = translate({"type": "permission", "request": "perm-2", "tool": tool, "options": ["deny", "allow", "x"]})
    assert isinstance(event, seam.Content) and isinstance(event.kind, RequestOpened)
    request = event.kind.request
    assert isinstance(request, PermissionRequest)
    assert request.id == "perm-2"
    assert request.options == (PermissionChoice.DENY_ONCE, PermissionChoice.ALLOW_ONCE)
    assert request.tool.title == "Run `ls`"
    assert [wire_decision(c) for c in PermissionChoice] == ["allow", "allow", "deny", "deny"]


def test_translate_cuts_tool_output_and_reports_what_it_cannot_read() -> None:
    long = {"id": "t", "title": "big", "status": "completed", "output": "x" * (seam.OUTPUT_CAP + 10)}
    event = translate({"type": "tool", "tool": long})
    assert isinstance(event, seam.Content) and isinstance(event.kind, ToolUpdated)
    assert event.kind.tool.output == "x" * seam.OUTPUT_CAP
    cases: list[tuple[dict[str, Any], str]] = [
        ({"type": "tool", "tool": {"id": "t", "status": "exploded"}}, "bad_frame"),
        ({"type": "permission", "request": "r", "tool": {"id": "t", "status": "pending"}, "options": []}, "bad_frame"),
        ({"type": "done", "stop": "maybe"}, "bad_frame"),
        ({"type": ["list"]}, "unknown_frame"),
        ({}, "unknown_frame"),
        ({"type": "error", "message": "no"}, "agent_error"),
    ]
    for frame, code in cases:
        event = translate(frame)
        assert isinstance(event, seam.Content) and isinstance(event.kind, Diagnostic), frame
        assert (event.kind.diagnostic.code, event.kind.diagnostic.raw) == (code, frame)
    assert translate({"type": "done", "stop": "failed", "error": "boom"}) == seam.TurnEnd(Failed("boom"))
