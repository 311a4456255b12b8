"""The adapter and driver against a scripted fake ``claude`` process (``fake_claude.py``): launch
arguments, handshake failures, bad frames, death, cancel races, attachments, cleanup, and the turn
rules the engine keeps for claude (tools at a turn's end, background tools, fast mode between
turns, declined requests)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_harness import WAIT, runtime_with_env

from anyagent import (
    AgentInstallation,
    Answer,
    Authenticated,
    AuthKind,
    AuthRequired,
    Cancelled,
    Capability,
    Completed,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    Input,
    McpServer,
    PermissionChoice,
    PlanUsageUpdated,
    ProcessExited,
    ProtocolFailed,
    Queued,
    RequestClosed,
    RequestOpened,
    ResumeFailed,
    SessionOptions,
    SessionUpdated,
    TerminalLogin,
    TextDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    TurnEnded,
    TurnStarted,
    Unauthenticated,
    seam,
)
from anyagent_claude import translate
from anyagent_claude.adapter import ClaudeAdapter
from anyagent_claude.frames import CANCEL_MESSAGE, DECLINE_MESSAGE
from anyagent_claude.profile import PROFILE
from anyagent_testkit.events import EventReader, kinds, text_of, without_status

pytestmark = pytest.mark.anyio

FAKE = Path(__file__).parent / "fake_claude.py"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def _private_json(path: Path) -> Any:
    """A file's JSON, once it is checked readable by this user only (0600 in a 0700 directory)."""
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    return json.loads(path.read_text(encoding="utf-8"))


class Fake:
    """A fake ``claude`` in ``tmp_path``: its executable, environment and stdin log."""

    def __init__(self, tmp_path: Path, mode: str = "ok", **env: str) -> None:
        self.dir = tmp_path
        self.log = tmp_path / "fake.log"
        self.exe = tmp_path / "claude"
        self.exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n', encoding="utf-8")
        self.exe.chmod(0o755)
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.env = {**os.environ, "FAKE_CLAUDE_MODE": mode, "FAKE_CLAUDE_LOG": str(self.log), **env}
        self.agent = AgentInstallation.at("claude", self.exe)

    def options(self) -> SessionOptions:
        return SessionOptions.in_dir(self.workspace)

    def read(self, path: Path) -> str:
        return path.read_text(encoding="utf-8")

    def exists(self, path: Path) -> bool:
        return path.exists()

    def records(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def argv(self) -> list[str]:
        return next(record["argv"] for record in self.records() if "argv" in record)

    def sent(self) -> list[dict[str, Any]]:
        return [record["in"] for record in self.records() if "in" in record]

    def processes(self) -> list[tuple[list[str], list[dict[str, Any]]]]:
        """Each launched process's argv and what it read, in launch order."""
        launched: dict[int, tuple[list[str], list[dict[str, Any]]]] = {}
        for record in self.records():
            if "argv" in record:
                launched[record["pid"]] = (record["argv"], [])
            elif "in" in record:
                launched[record["pid"]][1].append(record["in"])
        return list(launched.values())

    def answers(self, request_id: str) -> list[dict[str, Any]]:
        """The ``control_response`` frames anyagent wrote for the CLI's request ``request_id``."""
        return [
            frame["response"]
            for frame in self.sent()
            if frame.get("type") == "control_response" and frame["response"].get("request_id") == request_id
        ]


async def test_launch_arguments_handshake_and_a_turn(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    options = (
        fake.options()
        .configure("model", "haiku")
        .configure("mode", "acceptEdits")
        .mcp_server(McpServer.stdio("files", "/usr/bin/files-mcp", ["--stdio"], {"TOKEN": "t"}))
        .mcp_server(McpServer.http("remote", "https://example.invalid/mcp").with_header("Authorization", "Bearer x"))
        .mcp_server(McpServer.sse("events", "https://example.invalid/sse"))
        .record_wire(tmp_path / "wire.jsonl")
    )
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, options)
        async with session:
            # the MCP config (env values, header secrets) is in a file only this user reads, never in argv
            mcp_file = Path(fake.argv()[fake.argv().index("--mcp-config") + 1])
            config = _private_json(mcp_file)["mcpServers"]
            info = session.info()
            assert info.details.version == "9.9.9"
            assert info.details.auth == Authenticated(AuthKind.API_KEY, info.details.auth.account)  # type: ignore[union-attr]
            assert info.configuration == {"model": "haiku", "mode": "acceptEdits"}
            assert [c.name for c in info.details.commands] == ["review"]
            token = info.resume_token
            await session.prompt("hi")
            turn = await EventReader(events, timeout=WAIT).turn()
            assert text_of(turn).strip() == "echo: hi"
    argv = fake.argv()
    assert argv[: len(PROFILE.args)] == list(PROFILE.args)
    assert argv[argv.index("--session-id") + 1] == token
    assert argv[argv.index("--model") + 1] == "haiku"
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert not fake.exists(mcp_file.parent)  # removed with the session
    recorded = fake.read(tmp_path / "wire.jsonl")
    for secret in ('"t"', "Bearer x"):
        assert secret not in json.dumps(argv) and secret not in recorded
    assert config == {
        "files": {"type": "stdio", "command": "/usr/bin/files-mcp", "args": ["--stdio"], "env": {"TOKEN": "t"}},
        "remote": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer x"}},
        "events": {"type": "sse", "url": "https://example.invalid/sse"},
    }
    sent = fake.sent()
    assert sent[0]["request"] == {"subtype": "initialize", "hooks": {}}
    [prompt] = [frame for frame in sent if frame["type"] == "user"]
    assert prompt["message"] == {"role": "user", "content": "hi"} and prompt["uuid"]


async def test_no_tools_launches_without_tools_or_a_transcript(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with runtime_with_env(fake.env) as runtime:
        session, _events = await runtime.open(fake.agent, fake.options().without_tools())
        async with session:
            assert session.info().resume_token is None  # nothing is saved, so nothing can resume
    argv = fake.argv()
    assert argv[argv.index("--tools") + 1] == "" and "--no-session-persistence" in argv


async def test_bad_lines_unknown_frames_and_unknown_requests_never_break_the_turn(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "garbage")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            await session.prompt("go")
            turn = await EventReader(events, timeout=WAIT).turn()
            diagnostics = [e for e in turn if isinstance(e.kind, Diagnostic)]
            codes = [e.kind.diagnostic.code for e in diagnostics]
            assert codes.count(DiagnosticCode.BAD_LINE) == 2 and codes.count(DiagnosticCode.UNKNOWN_FRAME) == 2
            raws = [e.kind.diagnostic.raw for e in diagnostics]
            assert raws[:2] == ["this is not json", "[1, 2, 3]"]  # the lines as they came
            assert {"type": "brand_new_frame", "x": 1} in raws  # frames as they came
            elicitation = {
                "type": "control_request",
                "request_id": "cli-1",
                "request": {"subtype": "elicitation", "x": 1},
            }
            assert elicitation in raws
            assert not [e for e in diagnostics if e.extensions]  # never in a per-adapter extension
            assert text_of(turn).strip() == "after garbage"
            assert isinstance(turn[-1].kind, TurnEnded)
    answers = [f for f in fake.sent() if f["type"] == "control_response"]
    assert answers == [
        {
            "type": "control_response",
            "response": {
                "subtype": "error",
                "request_id": "cli-1",
                "error": "anyagent does not handle 'elicitation' control requests",
            },
        }
    ]


async def test_a_dying_agent_fails_the_turn_with_its_status_and_stderr(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "die")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        await session.prompt("go")
        reader = EventReader(events, timeout=WAIT)
        with pytest.raises(ProcessExited) as caught:
            await reader.rest()
        [end] = kinds(reader.seen, TurnEnded)
        assert end.stop.message == "the agent exited during the turn"  # type: ignore[union-attr]
        assert caught.value.status == "exit status: 3"
        assert "ran out of memory" in caught.value.stderr


async def test_logged_out_at_open_is_auth_required_and_probe_says_unauthenticated(tmp_path: Path) -> None:
    fake = Fake(tmp_path, FAKE_CLAUDE_ACCOUNT='{"tokenSource": "none", "apiProvider": "firstParty"}')
    options = fake.options().config_home(tmp_path / "work-account")
    async with runtime_with_env(fake.env) as runtime:
        with pytest.raises(AuthRequired) as caught:
            await runtime.open(fake.agent, options)
        terminal = next(m for m in caught.value.login if isinstance(m, TerminalLogin))
        assert terminal.command == (str(fake.exe), "auth", "login")
        assert terminal.env == {"CLAUDE_CONFIG_DIR": str(tmp_path / "work-account")}
        assert isinstance(await runtime.probe_auth(fake.agent), Unauthenticated)


async def test_auth_lost_mid_session_ends_with_auth_required(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "authlost")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        await session.prompt("go")
        reader = EventReader(events, timeout=WAIT)
        with pytest.raises(AuthRequired):
            await reader.rest()
        assert kinds(reader.seen, TurnEnded)[0].stop.message == "the agent needs a login"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("mode", "error"),
    [("noresume", ResumeFailed), ("init_error", ProtocolFailed)],
)
async def test_handshake_failures_are_typed(tmp_path: Path, mode: str, error: type[Exception]) -> None:
    fake = Fake(tmp_path, mode)
    async with runtime_with_env(fake.env) as runtime:
        with pytest.raises(error):
            await runtime.open(fake.agent, fake.options().resume("4f7e0a9e-0000-4000-8000-000000000000"))


async def test_a_cancelled_handshake_leaves_no_process(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "hang")
    adapter = ClaudeAdapter()
    request = seam.ConnectRequest(fake.agent, PROFILE, fake.options(), "s1", fake.env)
    with anyio.move_on_after(1.0) as scope:
        await adapter.connect(request)
    assert scope.cancelled_caught
    assert "argv" in fake.records()[0]  # it did start
    assert not _alive(fake)


def _alive(fake: Fake) -> bool:
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes() if str(FAKE).encode() in cmdline else b""
        except OSError:
            continue
        if str(fake.log).encode() in environ:
            return True
    return False


async def test_close_stops_an_agent_that_ignores_eof_and_sigterm(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "ignore_eof")
    async with runtime_with_env(fake.env) as runtime:
        session, _events = await runtime.open(fake.agent, fake.options())
        with anyio.fail_after(15):
            await session.close()
    assert not _alive(fake)


async def test_a_withdrawn_permission_closes_the_request(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "withdrawn")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            await session.prompt("go")
            reader = EventReader(events, timeout=WAIT)
            opened = (await reader.until(RequestOpened)).kind.request
            closed = await reader.until(RequestClosed)
            assert closed.kind.request_id == opened.id
            await reader.turn()
            with pytest.raises(Exception, match="not open"):
                await session.answer(opened.id, Answer.permission(PermissionChoice.ALLOW_ONCE))


@pytest.mark.parametrize("mode", ["slow", "queued_cancel"])
async def test_cancel_ends_the_turn_once_with_or_without_a_result(tmp_path: Path, mode: str) -> None:
    fake = Fake(tmp_path, mode)
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("go")
            await reader.until(TextDelta)
            await session.cancel()
            turn = await reader.turn()
            assert kinds(turn, TurnEnded) == [TurnEnded(Cancelled())]
            with anyio.move_on_after(0.5):
                late = await reader.next()
                assert not isinstance(late.kind, TurnEnded)
    interrupts = [f for f in fake.sent() if f.get("request", {}).get("subtype") == "interrupt"]
    assert len(interrupts) == 1


@pytest.mark.parametrize("wait", [0.4, 0.0], ids=["prompt-after-late-output", "prompt-at-once"])
async def test_output_past_the_cancel_deadline_never_wedges_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wait: float
) -> None:
    """Issue 28 item 3a on claude's wire: claude leaves the interrupt unread and streams on past the
    engine's cancel deadline, then ends the old turn itself. That output opens no turn of its own,
    and the next prompt (sent once the late output flows, or at once) runs and completes (before the
    engine's fix: an agent turn nothing ended, every later prompt Queued forever)."""
    import anyagent._engine as engine_module

    monkeypatch.setattr(engine_module, "CANCEL_GRACE", 0.3)
    fake = Fake(tmp_path, "ignores_interrupt", FAKE_CLAUDE_STREAM_ON="1.5")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("first")
            await reader.until(TextDelta)
            await session.cancel()
            first = await reader.turn()
            assert kinds(first, TurnEnded) == [TurnEnded(Cancelled())]  # the engine's deadline
            await anyio.sleep(wait)  # claude streams on into the idle session
            await session.prompt("second")
            second = await reader.turn()
            assert kinds(second, TurnEnded) == [TurnEnded(Completed())], kinds(second, TurnEnded)
            assert text_of(second).endswith("echo: second ")
    origins = [type(e.origin).__name__ for e in kinds(reader.seen, TurnStarted)]
    assert origins == ["PromptOrigin", "PromptOrigin"]  # no agent turn opened by the late output


async def test_attachments_inline_images_and_list_every_path(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    image = tmp_path / "shot.png"
    image.write_bytes(PNG)
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    missing = tmp_path / "gone.png"
    prompt = Input.text("look").attach(image).attach(notes).attach(missing)
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            await session.prompt(prompt)
            turn = await EventReader(events, timeout=WAIT).turn()
            [problem] = [e.kind.diagnostic for e in turn if isinstance(e.kind, Diagnostic)]
            assert problem.code == "attachment" and "gone.png" in problem.message
    [user] = [f for f in fake.sent() if f["type"] == "user"]
    blocks = user["message"]["content"]
    assert blocks[0]["type"] == "image" and blocks[0]["source"]["media_type"] == "image/png"
    assert blocks[-1]["type"] == "text"
    text = blocks[-1]["text"]
    assert text.startswith("look") and all(str(path) in text for path in (image, notes, missing))


async def test_plan_usage_after_each_result_and_on_demand(tmp_path: Path) -> None:
    usage = {
        "subscription_type": "max",
        "rate_limits": {"limits": [{"kind": "session", "percent": 42, "resets_at": "2026-08-23T08:59:59+00:00"}]},
    }
    fake = Fake(tmp_path, FAKE_CLAUDE_USAGE=json.dumps(usage))
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            reader = EventReader(events, timeout=WAIT)
            for _ in range(2):
                await session.prompt("go")
                await reader.turn()
                pushed = (await reader.until(PlanUsageUpdated)).kind.usage
                assert pushed.plan == "max" and pushed.windows[0].used_percent == 42.0
        direct = await runtime.plan_usage(fake.agent)
        assert direct.windows[0].label == "5-hour"


async def test_portable_mode_names_launch_and_switch_as_claudes_own_ids(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options().configure("mode", "accept-edits"))
        async with session:
            info = session.info()
            assert info.configuration["mode"] == "acceptEdits"  # the configuration reports Claude's own id
            mode = info.details.option("mode")
            assert mode is not None and mode.accepts("ask") and mode.accepts("plan") and mode.accepts("acceptEdits")
            assert not mode.accepts("bypass-permissions")  # offered only to a session launched with it
            reader = EventReader(events, timeout=WAIT)
            await session.configure("mode", "ask")
            updated = await reader.until(SessionUpdated)
            assert updated.kind.info.configuration["mode"] == "default"
    argv = fake.argv()
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    switched = [
        frame["request"]["mode"]
        for frame in fake.sent()
        if frame.get("type") == "control_request" and frame["request"].get("subtype") == "set_permission_mode"
    ]
    assert switched == ["default"]


async def test_a_refused_setting_is_a_diagnostic_and_changes_nothing(tmp_path: Path) -> None:
    fake = Fake(tmp_path, FAKE_CLAUDE_REFUSE="set_model")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.configure("model", "haiku")
            refused = await reader.until(Diagnostic, SessionUpdated)
            assert isinstance(refused.kind, Diagnostic) and refused.kind.diagnostic.code == "configure_refused"
            assert session.info().configuration["model"] == "default"
            await session.configure("mode", "plan")
            updated = await reader.until(SessionUpdated)
            assert updated.kind.info.configuration["mode"] == "plan"


async def test_a_wire_recording_that_cannot_be_written_is_a_diagnostic(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    options = fake.options().record_wire(tmp_path / "missing-dir" / "wire.jsonl")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, options)
        async with session:
            await session.prompt("go")
            turn = await EventReader(events, timeout=WAIT).turn()
            codes = [e.kind.diagnostic.code for e in turn if isinstance(e.kind, Diagnostic)]
            assert "record_wire" in codes
            assert isinstance(turn[-1].kind, TurnEnded)


async def test_the_wire_recording_holds_both_directions(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    wire = tmp_path / "wire.jsonl"
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options().record_wire(wire))
        async with session:
            await session.prompt("go")
            await EventReader(events, timeout=WAIT).turn()
    lines = [json.loads(line) for line in wire.read_text().splitlines()]
    assert "_meta" in lines[0]
    assert any(line.get("_sent", {}).get("type") == "user" for line in lines)
    assert any(line.get("type") == "result" for line in lines)


async def test_a_frame_whose_translation_raises_is_one_frame_error_and_the_session_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: translate.Translator, frame: Any, out: translate.Translation) -> None:
        raise RuntimeError("a translator bug")

    monkeypatch.setitem(translate._HANDLERS, "assistant", broken)
    fake = Fake(tmp_path)
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            await session.prompt("hi")
            turn = await EventReader(events, timeout=WAIT).turn()
    [error] = [e.kind.diagnostic for e in turn if isinstance(e.kind, Diagnostic)]
    assert error.code == DiagnosticCode.FRAME_ERROR and "a translator bug" in error.message
    assert isinstance(error.raw, dict) and error.raw["type"] == "assistant"  # the frame it choked on
    assert text_of(turn).strip() == "echo: hi"  # the other frames of the turn were read
    assert kinds(turn, TurnEnded) == [TurnEnded(Completed())]


# ---------------------------------------------------------------------------------------------
# turn rules the engine keeps for claude


def updates_of(events: list[Any], tool_id: str) -> list[ToolUpdate]:
    return [update.tool for update in kinds(events, ToolUpdated) if update.tool.id == tool_id]


@pytest.mark.parametrize(
    ("mode", "cancel", "final"),
    [("lost_tool", False, ToolStatus.FAILED), ("tool_waits", True, ToolStatus.CANCELLED)],
)
async def test_a_tool_that_never_got_a_result_is_ended_by_the_engine_with_the_turn(
    tmp_path: Path, mode: str, cancel: bool, final: ToolStatus
) -> None:
    """Claude's ``result`` leaves a tool without a result running; the engine ends it with the
    turn (``FAILED``, ``CANCELLED`` for a cancelled turn): once, as the turn's end, after
    everything claude reported for the turn (its ``ContextUsage``)."""
    fake = Fake(tmp_path, mode)
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("go")
            if cancel:
                await reader.until(ToolUpdated)
                await session.cancel()
            await reader.turn()
    turn = without_status(reader.seen)
    assert [tool.status for tool in updates_of(turn, "t1")] == [ToolStatus.RUNNING, final]
    assert [type(event.kind) for event in turn[-3:]] == [ContextUsage, ToolUpdated, TurnEnded]
    assert turn[-1].kind == TurnEnded(Cancelled() if cancel else Completed(), background=())


async def test_a_background_command_is_listed_at_the_turn_end_and_completes_later(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "background")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("go")
            turn = await reader.turn()
            assert kinds(turn, TurnEnded) == [TurnEnded(Completed(), background=("bg1",))]
            assert [tool.status for tool in updates_of(turn, "bg1")] == [ToolStatus.RUNNING, ToolStatus.RUNNING]
            done = await reader.match(lambda e: isinstance(e.kind, ToolUpdated) and e.kind.tool.id == "bg1")
            assert isinstance(done.kind, ToolUpdated) and done.kind.tool.status is ToolStatus.COMPLETED
            assert done.kind.tool.output is not None and "exit code 0" in done.kind.tool.output
            assert done.turn_info is None  # it finished between turns


async def test_fast_mode_asked_for_mid_turn_relaunches_after_the_turn_before_the_next_prompt(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "paced")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("first")
            await reader.until(TextDelta)
            await session.configure("fast", True)  # held by the engine while the turn runs
            second = await session.prompt("second")
            assert second.kind == Queued(0)
            one = await reader.turn()
            assert kinds(one, TurnEnded) == [TurnEnded(Completed())]
            two = await reader.turn()
            fast_on = next(
                i for i, e in enumerate(two) if isinstance(e.kind, SessionUpdated) and e.kind.info.configuration["fast"]
            )
            started = next(i for i, e in enumerate(two) if isinstance(e.kind, TurnStarted))
            assert fast_on < started  # relaunched before the queued prompt ran
            assert text_of(two).strip() == "echo: second"
            assert kinds(two, TurnEnded) == [TurnEnded(Completed())]
            assert not [e for e in reader.seen if isinstance(e.kind, Diagnostic)]  # nothing was refused
    (first_argv, first_read), (fast_argv, fast_read) = fake.processes()
    assert "--settings" not in first_argv
    assert json.loads(fast_argv[fast_argv.index("--settings") + 1]) == {"fastMode": True}
    assert fast_argv[fast_argv.index("--resume") + 1] == "fake-session"  # the same conversation
    assert [f["message"]["content"] for f in first_read if f["type"] == "user"] == ["first"]
    assert [f["message"]["content"] for f in fast_read if f["type"] == "user"] == ["second"]


async def test_a_fast_mode_relaunch_that_fails_ends_the_session(tmp_path: Path) -> None:
    fake = Fake(tmp_path, FAKE_CLAUDE_FAST_FAILS="1")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        reader = EventReader(events, timeout=WAIT)
        await session.prompt("hi")
        await reader.turn()
        await session.configure("fast", True)
        with pytest.raises(ProcessExited) as caught:
            await reader.rest()
        assert caught.value.status == "relaunch failed"
        assert "fast mode is not available" in caught.value.stderr
    assert len(fake.processes()) == 2 and not _alive(fake)


async def test_a_request_the_engine_closes_at_close_is_denied_once(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "ask")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        reader = EventReader(events, timeout=WAIT)
        await session.prompt("go")
        opened = (await reader.until(RequestOpened)).kind.request
        assert opened.id == "perm-1"
        await session.close()  # closes the request unanswered: the engine sends Decline
        rest = await reader.rest()
        assert kinds(rest, RequestClosed) == [RequestClosed("perm-1")]
    [answer] = fake.answers("perm-1")
    assert answer["response"] == {"behavior": "deny", "message": DECLINE_MESSAGE}


async def test_a_cancel_denies_an_open_request_once_before_the_interrupt(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "ask")
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("go")
            await reader.until(RequestOpened)
            await session.cancel()  # the engine sends Cancel, then Decline("perm-1")
            await reader.turn()
            assert kinds(reader.seen, TurnEnded) == [TurnEnded(Cancelled())]
            # claude reports the denied tool failed; under the cancel that is CANCELLED, once
            assert [tool.status for tool in updates_of(reader.seen, "t1")] == [ToolStatus.RUNNING, ToolStatus.CANCELLED]
    [answer] = fake.answers("perm-1")
    assert answer["response"] == {"behavior": "deny", "message": CANCEL_MESSAGE}
    after_prompt = [f for f in fake.sent() if f["type"] != "user"][1:]  # after initialize
    kinds_sent = [f.get("request", {}).get("subtype") or f["response"]["request_id"] for f in after_prompt]
    assert kinds_sent[:2] == ["perm-1", "interrupt"]


async def test_decline_answers_a_pending_permission_once(tmp_path: Path) -> None:
    """The driver alone: two ``Decline``s of the same open ``can_use_tool`` write one denial."""
    fake = Fake(tmp_path, "ask")
    driver = await ClaudeAdapter().connect(seam.ConnectRequest(fake.agent, PROFILE, fake.options(), "s1", fake.env))
    commands, commands_out = seam.unbounded_commands()
    events_in, events = seam.event_channel(64)
    async with anyio.create_task_group() as tg:
        tg.start_soon(driver.run, seam.DriverLink(commands_out, events_in))
        await commands.send(seam.StartTurn(Input.text("go"), "turn-1"))
        with anyio.fail_after(WAIT):
            async for event in events:
                if isinstance(event, seam.Content) and isinstance(event.kind, RequestOpened):
                    request_id = event.kind.request.id
                    break
        await commands.send(seam.Decline(request_id))
        await commands.send(seam.Decline(request_id))
        await commands.send(seam.Decline("never-opened"))
        await commands.send(seam.Close())
    [answer] = fake.answers(request_id)
    assert answer["response"]["behavior"] == "deny"
    assert not fake.answers("never-opened")


def _release_fifo(fifo: Path) -> None:
    """Open the FIFO's other end, so an ``open`` blocked on it (the bug) returns."""
    for flags in (os.O_WRONLY | os.O_NONBLOCK, os.O_RDONLY | os.O_NONBLOCK):
        try:
            os.close(os.open(fifo, flags))
        except OSError:
            pass


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_a_fifo_attachment_is_refused_and_the_prompt_goes_at_once(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    rescue = threading.Timer(12, _release_fifo, (fifo,))  # before: only this unblocked the read
    rescue.start()
    started = time.monotonic()
    try:
        async with runtime_with_env(fake.env) as runtime:
            session, events = await runtime.open(fake.agent, fake.options())
            async with session:
                await session.prompt(Input.text("look").attach(fifo).attach(notes))
                turn = await EventReader(events, timeout=WAIT).turn()
    finally:
        rescue.cancel()
    assert time.monotonic() - started < 10
    [problem] = [e.kind.diagnostic for e in turn if isinstance(e.kind, Diagnostic)]
    assert problem.code == "attachment" and "not a regular file" in problem.message and str(fifo) in problem.message
    assert isinstance(turn[-1].kind, TurnEnded) and isinstance(turn[-1].kind.stop, Completed)
    [user] = [f for f in fake.sent() if f["type"] == "user"]
    text = user["message"]["content"]
    assert str(notes) in text and str(fifo) not in text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_recording_to_a_fifo_without_a_reader_never_freezes_the_session(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    fifo = tmp_path / "wire.fifo"
    os.mkfifo(fifo)
    rescue = threading.Timer(12, _release_fifo, (fifo,))  # before: only this let the frozen loop go on
    rescue.start()
    started = time.monotonic()
    try:
        async with runtime_with_env(fake.env) as runtime:
            session, events = await runtime.open(fake.agent, fake.options().record_wire(fifo))
            async with session:
                await session.prompt("go")
                turn = await EventReader(events, timeout=WAIT).turn()
    finally:
        rescue.cancel()
    assert time.monotonic() - started < 10
    codes = [e.kind.diagnostic.code for e in turn if isinstance(e.kind, Diagnostic)]
    assert "record_wire" in codes
    assert isinstance(turn[-1].kind, TurnEnded) and isinstance(turn[-1].kind.stop, Completed)


async def test_recording_through_a_symlink_is_refused_and_the_target_untouched(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    target = tmp_path / "precious.txt"
    target.write_text("keep\n")
    target.chmod(0o644)
    link = tmp_path / "wire.jsonl"
    link.symlink_to(target)
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options().record_wire(link))
        async with session:
            await session.prompt("go")
            turn = await EventReader(events, timeout=WAIT).turn()
    problems = [e.kind.diagnostic for e in turn if isinstance(e.kind, Diagnostic)]
    assert any(p.code == "record_wire" and "symbolic link" in p.message for p in problems)
    assert target.read_text() == "keep\n" and (target.stat().st_mode & 0o777) == 0o644


@pytest.mark.parametrize("tools", [["Task", "Bash", "Edit"], ["Task", "Bash", "TodoWrite", "Edit"]])
async def test_plan_is_reported_only_when_system_init_lists_todo_write(tmp_path: Path, tools: list[str]) -> None:
    """Issue 15 item 10: claude 2.1.332 leaves TodoWrite out of SDK sessions, so no plan can come."""
    fake = Fake(tmp_path, FAKE_CLAUDE_TOOLS=json.dumps(tools))
    async with runtime_with_env(fake.env) as runtime:
        session, events = await runtime.open(fake.agent, fake.options())
        async with session:
            assert not session.info().details.capabilities.supports(Capability.PLAN)  # unknown before system/init
            await session.prompt("hi")
            await EventReader(events, timeout=WAIT).turn()
            assert session.info().details.capabilities.supports(Capability.PLAN) == ("TodoWrite" in tools)


@pytest.mark.parametrize(
    ("account", "plan_usage"),
    [
        ('{"apiKeySource": "ANTHROPIC_API_KEY"}', False),
        ('{"email": "me@example.com", "subscriptionType": "max", "tokenSource": "claude.ai"}', True),
    ],
)
async def test_plan_usage_is_reported_only_for_a_login_with_a_plan(
    tmp_path: Path, account: str, plan_usage: bool
) -> None:
    """An API-key login has no plan quota (``plan_usage`` raises ``UnsupportedFeature`` there), so
    ``PLAN_USAGE`` is reported only for a subscription login (before: always)."""
    fake = Fake(tmp_path, FAKE_CLAUDE_ACCOUNT=account)
    async with runtime_with_env(fake.env) as runtime:
        session, _events = await runtime.open(fake.agent, fake.options())
        async with session:
            assert (Capability.PLAN_USAGE in session.info().details.capabilities) is plan_usage
