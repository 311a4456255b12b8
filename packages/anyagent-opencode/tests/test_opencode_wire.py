"""Wire behaviour the live server will not stage on demand, against the testkit's HTTP replayer
playing small timelines in ``record_wire``'s shape: the event stream dropping mid-turn (reconnect +
resync: nothing lost, nothing twice), unknown events, a prompt the server refuses; and the
password kept out of argv."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from opencode_harness import WAIT, proc_file, replay_installation, runtime_with_env, server_password

from anyagent import (
    AgentInstallation,
    Cancelled,
    Completed,
    CredentialPolicy,
    Diagnostic,
    DiagnosticCode,
    Failed,
    InvalidConfiguration,
    McpServer,
    McpTool,
    MessageEnded,
    RequestOpened,
    Runtime,
    SessionOptions,
    TextDelta,
    ToolKind,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
    UnsupportedFeature,
    seam,
)
from anyagent_opencode import PROFILE, OpencodeAdapter, OpencodeDriver
from anyagent_opencode import adapter as adapter_module
from anyagent_opencode.translate import STREAM_INTERVAL, STREAM_LIMIT, Translator
from anyagent_testkit.events import EventReader, kinds, text_of
from anyagent_testkit.replay import write_replayer_shim

pytestmark = pytest.mark.anyio

SID = "ses_1"
MSG = "msg_2"
CREATED = 1_700_000_000_000
"""When the handshake's session was created (epoch ms, the server's clock)."""
LATER = CREATED + 5_000
"""A creation time after that: a message of this session's turns."""
EARLIER = CREATED - 60_000
"""A creation time before that: history (a forked session's copies keep their times)."""


class Timeline:
    """A ``record_wire``-shaped HTTP timeline, written line by line."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self._id = 0

    def exchange(self, method: str, path: str, status: int, body: Any) -> None:
        self._id += 1
        self.lines.append({"_http": {"kind": "request", "id": self._id, "method": method, "url": path, "body": None}})
        self.lines.append({"_http": {"kind": "response", "id": self._id, "status": status, "body": body}})

    def request(self, method: str, path: str) -> int:
        self._id += 1
        self.lines.append({"_http": {"kind": "request", "id": self._id, "method": method, "url": path, "body": None}})
        return self._id

    def response(self, rid: int, status: int, body: Any) -> None:
        self.lines.append({"_http": {"kind": "response", "id": rid, "status": status, "body": body}})

    def stream(self) -> int:
        self._id += 1
        self.lines.append({"_http": {"kind": "sse_open", "stream": self._id, "url": "/event", "status": 200}})
        return self._id

    def event(self, stream: int, kind: str, event_id: str | None = None, **properties: Any) -> None:
        data = {"id": event_id or f"evt_{len(self.lines)}", "type": kind, "properties": properties}
        self.lines.append({"_http": {"kind": "sse", "stream": stream, "event": "message", "data": data}})

    def end(self, stream: int) -> None:
        self.lines.append({"_http": {"kind": "sse_end", "stream": stream}})

    def handshake(self) -> int:
        self.exchange("GET", "/global/health", 200, {"healthy": True, "version": "1.18.33"})
        self.exchange("POST", "/session", 200, {"id": SID, "title": "t", "time": {"created": CREATED}})
        providers = {"providers": [{"id": "fake", "models": {"m": {"name": "M", "limit": {"context": 1000}}}}]}
        self.exchange("GET", "/config/providers", 200, {**providers, "default": {"fake": "m"}})
        self.exchange("GET", "/config", 200, {"model": "fake/m"})
        self.exchange("GET", "/command", 200, [{"name": "init", "description": "make AGENTS.md"}])
        stream = self.stream()
        self.event(stream, "server.connected")
        return stream

    def resync(self, messages: list[Any], status: dict[str, Any], permissions: list[Any] | None = None) -> None:
        """The adapter's REST reads after a reconnect, in its order."""
        self.exchange("GET", "/session/status", 200, status)
        self.exchange("GET", f"/session/{SID}/message", 200, messages)
        self.exchange("GET", "/permission", 200, permissions or [])
        self.exchange("GET", "/question", 200, [])

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return path


def _status(stream: int, timeline: Timeline, kind: str) -> None:
    timeline.event(stream, "session.status", sessionID=SID, status={"type": kind})


def _part(text: str, done: bool, part_id: str = "prt_t", message_id: str = MSG) -> dict[str, Any]:
    time = {"start": 1, "end": 2} if done else {"start": 1}
    return {"id": part_id, "messageID": message_id, "sessionID": SID, "type": "text", "text": text, "time": time}


def _message(message_id: str, created: int, *parts: dict[str, Any], done: bool = False) -> dict[str, Any]:
    """A ``GET /session/{id}/message`` entry: an assistant message and its parts."""
    time = {"created": created, "completed": created + 1} if done else {"created": created}
    info = {"id": message_id, "sessionID": SID, "role": "assistant", "time": time}
    return {"info": info, "parts": list(parts)}


async def _one_turn(tmp_path: Path, timeline: Timeline, prompt: str = "hi") -> list[Any]:
    installation = replay_installation(tmp_path / "bin", timeline.write(tmp_path / "t.jsonl"), strict=True)
    async with runtime_with_env(dict(os.environ)) as runtime:
        session, events = await runtime.open(installation, SessionOptions.in_dir(tmp_path))
        async with session:
            assert session.info().details.commands[0].name == "init"
            reader = EventReader(events, timeout=WAIT)
            await session.prompt(prompt)
            return await reader.turn()


async def test_a_dropped_stream_is_reopened_and_resynced_without_loss_or_repeat(tmp_path: Path) -> None:
    t = Timeline()
    first = t.handshake()
    t.exchange("POST", f"/session/{SID}/prompt_async", 204, None)
    _status(first, t, "busy")
    t.event(first, "message.updated", info={"id": MSG, "sessionID": SID, "role": "assistant", "time": {}})
    t.event(first, "message.part.delta", sessionID=SID, messageID=MSG, partID="prt_t", field="text", delta="Hel")
    t.end(first)  # the stream drops: "lo world" streams while nobody listens
    second = t.stream()
    t.event(second, "server.connected")
    t.resync([_message(MSG, LATER, _part("Hello wor", False))], {SID: {"type": "busy"}})
    # the new stream repeats a delta the snapshot already holds, then the part's final snapshot
    t.event(second, "message.part.delta", sessionID=SID, messageID=MSG, partID="prt_t", field="text", delta="lo wor")
    t.event(second, "message.part.updated", sessionID=SID, part=_part("Hello world", True))
    t.event(second, "future.event", sessionID=SID)
    _status(second, t, "idle")
    t.event(second, "session.idle", sessionID=SID)
    events = await _one_turn(tmp_path, t)
    assert text_of(events) == "Hello world"
    assert len(kinds(events, TurnEnded)) == 1 and isinstance(kinds(events, TurnEnded)[0].stop, Completed)
    unknown = [d.diagnostic for d in kinds(events, Diagnostic) if d.diagnostic.code == DiagnosticCode.UNKNOWN_FRAME]
    assert unknown and "future.event" in unknown[0].message


async def test_an_idle_missed_while_the_stream_was_down_still_ends_the_turn(tmp_path: Path) -> None:
    t = Timeline()
    first = t.handshake()
    t.exchange("POST", f"/session/{SID}/prompt_async", 204, None)
    _status(first, t, "busy")
    t.end(first)
    t.stream()
    t.resync([_message(MSG, LATER, _part("done", True), done=True)], {})  # idle sessions are not listed
    events = await _one_turn(tmp_path, t)
    assert text_of(events) == "done"
    assert [type(e.stop) for e in kinds(events, TurnEnded)] == [Completed]
    assert [k.message_id for k in kinds(events, MessageEnded)] == [MSG]


async def test_a_resync_sends_only_this_drivers_turns_and_each_request_once(tmp_path: Path) -> None:
    """History (messages older than the session: a fork's copies) is not sent again; a turn that ran wholly
    while the stream was down (no busy seen) still ends, with its error; a permission the stream
    already surfaced, listed again, is not reopened."""
    t = Timeline()
    first = t.handshake()
    t.exchange("POST", f"/session/{SID}/prompt_async", 204, None)
    permission = {"id": "per_1", "sessionID": SID, "permission": "bash", "metadata": {"command": "ls"}}
    t.event(first, "permission.asked", **permission)
    t.end(first)
    t.stream()
    history = _message("msg_1", EARLIER, _part("an old answer", True, "prt_old", "msg_1"), done=True)
    failed = _message(MSG, LATER, _part("half", True), done=True)
    failed["info"]["error"] = {"name": "APIError", "data": {"message": "the model went away"}}
    t.resync([history, failed], {}, [permission])
    events = await _one_turn(tmp_path, t)
    assert text_of(events) == "half"
    assert len(kinds(events, RequestOpened)) == 1
    stop = kinds(events, TurnEnded)
    assert len(stop) == 1 and isinstance(stop[0].stop, Failed) and "went away" in stop[0].stop.message


async def test_a_refused_prompt_fails_the_turn(tmp_path: Path) -> None:
    t = Timeline()
    t.handshake()
    t.exchange(
        "POST", f"/session/{SID}/prompt_async", 400, {"name": "BadRequest", "data": {"message": "no such model"}}
    )
    events = await _one_turn(tmp_path, t)
    stop = kinds(events, TurnEnded)[0].stop
    assert isinstance(stop, Failed) and "no such model" in stop.message


async def test_the_password_is_in_the_environment_not_in_argv(tmp_path: Path) -> None:
    t = Timeline()
    t.handshake()
    installation = replay_installation(tmp_path / "bin", t.write(tmp_path / "t.jsonl"))
    request = seam.ConnectRequest(installation, PROFILE, SessionOptions.in_dir(tmp_path), "s1", dict(os.environ))
    driver = await OpencodeAdapter().connect(request)
    assert isinstance(driver, OpencodeDriver)
    try:
        pid = driver.process.pid
        secret = server_password(pid)
        assert len(secret) >= 32
        cmdline = proc_file(pid, "cmdline")
        assert secret not in cmdline and b"127.0.0.1" in cmdline
        assert str(driver.http._client.base_url).startswith("http://127.0.0.1:")
    finally:
        await driver.aclose()


async def test_two_sessions_get_different_passwords(tmp_path: Path) -> None:
    secrets = []
    for number in (1, 2):
        t = Timeline()
        t.handshake()
        installation = replay_installation(tmp_path / f"bin{number}", t.write(tmp_path / f"t{number}.jsonl"))
        request = seam.ConnectRequest(installation, PROFILE, SessionOptions.in_dir(tmp_path), "s", dict(os.environ))
        driver = await OpencodeAdapter().connect(request)
        assert isinstance(driver, OpencodeDriver)
        try:
            secrets.append(server_password(driver.process.pid))
        finally:
            await driver.aclose()
    assert secrets[0] != secrets[1]


async def test_mcp_servers_ride_in_the_config_content_and_sse_ones_fail_typed(tmp_path: Path) -> None:
    t = Timeline()
    t.handshake()
    installation = replay_installation(tmp_path / "bin", t.write(tmp_path / "t.jsonl"))
    options = (
        SessionOptions.in_dir(tmp_path)
        .mcp_server(McpServer.stdio("files", "mcp-files", ["--root", "."], {"LEVEL": "1"}))
        .mcp_server(McpServer.http("docs", "http://127.0.0.1:9/mcp"))
    )
    request = seam.ConnectRequest(installation, PROFILE, options, "s1", dict(os.environ))
    driver = await OpencodeAdapter().connect(request)
    assert isinstance(driver, OpencodeDriver)
    try:
        environ = proc_file(driver.process.pid, "environ").split(b"\0")
        content = next(e for e in environ if e.startswith(b"OPENCODE_CONFIG_CONTENT=")).split(b"=", 1)[1]
    finally:
        await driver.aclose()
    assert json.loads(content) == {
        "mcp": {
            "files": {
                "type": "local",
                "command": ["mcp-files", "--root", "."],
                "enabled": True,
                "environment": {"LEVEL": "1"},
            },
            "docs": {"type": "remote", "url": "http://127.0.0.1:9/mcp", "enabled": True},
        }
    }
    sse = SessionOptions.in_dir(tmp_path).mcp_server(McpServer.sse("old", "http://127.0.0.1:9/sse"))
    async with runtime_with_env(dict(os.environ)) as runtime:
        with pytest.raises((InvalidConfiguration, UnsupportedFeature)):
            await runtime.open(installation, sse)
        with pytest.raises(InvalidConfiguration):
            await runtime.open(installation, SessionOptions.in_dir(tmp_path).config_home(tmp_path / "home"))


async def test_an_error_before_the_session_went_busy_fails_the_turn(tmp_path: Path) -> None:
    """opencode 1.18.33 answers a prompt with an undecodable image with ``session.error`` and no
    busy/idle at all: the turn must still end (not wait for an idle that never comes)."""
    t = Timeline()
    stream = t.handshake()
    t.exchange("POST", f"/session/{SID}/prompt_async", 204, None)
    error = {"name": "UnknownError", "data": {"message": "ImageDecodeError: Image could not be decoded"}}
    t.event(stream, "session.error", sessionID=SID, error=error)
    events = await _one_turn(tmp_path, t)
    stop = kinds(events, TurnEnded)[0].stop
    assert isinstance(stop, Failed) and "ImageDecodeError" in stop.message


async def test_a_listed_slash_command_goes_to_the_command_route(tmp_path: Path) -> None:
    t = Timeline()
    stream = t.handshake()  # lists the "init" command
    rid = t.request("POST", f"/session/{SID}/command")  # answered when its turn is over
    _status(stream, t, "busy")
    t.event(stream, "message.updated", info={"id": MSG, "sessionID": SID, "role": "assistant", "time": {}})
    t.event(stream, "message.part.updated", sessionID=SID, part=_part("AGENTS.md written", True))
    _status(stream, t, "idle")
    t.response(rid, 200, {"info": {"id": MSG}, "parts": []})
    events = await _one_turn(tmp_path, t, "/init now")
    assert text_of(events) == "AGENTS.md written"
    assert [type(e.stop) for e in kinds(events, TurnEnded)] == [Completed]


async def _cancelled_then_next(tmp_path: Path, timeline: Timeline) -> tuple[list[Any], list[Any], float, float]:
    """Prompt, cancel once text streams, then prompt again: both turns' events, how long the second
    turn took from its prompt to its end, and how long close took."""
    installation = replay_installation(tmp_path / "bin", timeline.write(tmp_path / "t.jsonl"))
    async with runtime_with_env(dict(os.environ)) as runtime:
        session, events = await runtime.open(installation, SessionOptions.in_dir(tmp_path))
        reader = EventReader(events, timeout=WAIT)
        await session.prompt("first")
        await reader.kind(TextDelta)
        await session.cancel()
        first = await reader.turn()
        prompted = anyio.current_time()
        await session.prompt("second")
        second = await reader.turn(timeout=15.0)  # well inside the HTTP client's 60 s timeout
        started = anyio.current_time()
        await session.close()
        return first, second, started - prompted, anyio.current_time() - started


async def test_an_abort_never_answered_blocks_neither_the_next_prompt_nor_close(tmp_path: Path) -> None:
    """opencode stops the run but never answers ``POST /abort``: the next prompt still goes at once
    (before: it waited in the command loop for the HTTP timeout, 60 s) and close is quick (before: 5 s)."""
    t = Timeline()
    stream = t.handshake()
    t.exchange("POST", f"/session/{SID}/prompt_async", 204, None)
    _status(stream, t, "busy")
    t.event(stream, "message.updated", info={"id": MSG, "sessionID": SID, "role": "assistant", "time": {}})
    t.event(stream, "message.part.delta", sessionID=SID, messageID=MSG, partID="prt_t", field="text", delta="Hel")
    t.request("POST", f"/session/{SID}/abort")  # never answered
    _status(stream, t, "idle")
    t.event(stream, "session.idle", sessionID=SID)
    t.exchange("POST", f"/session/{SID}/prompt_async", 204, None)
    _status(stream, t, "busy")
    second = "msg_3"
    t.event(stream, "message.updated", info={"id": second, "sessionID": SID, "role": "assistant", "time": {}})
    t.event(stream, "message.part.updated", sessionID=SID, part=_part("again", True, "prt_2", second))
    _status(stream, t, "idle")
    t.event(stream, "session.idle", sessionID=SID)
    first, after, answered, closing = await _cancelled_then_next(tmp_path, t)
    assert [type(e.stop) for e in kinds(first, TurnEnded)] == [Cancelled]
    assert text_of(after) == "again" and [type(e.stop) for e in kinds(after, TurnEnded)] == [Completed]
    # the abort waits beside the command loop, not in it: the next prompt is not held until the
    # abort's own bound (ABORT_TIMEOUT) either
    assert answered < adapter_module.ABORT_TIMEOUT / 2, f"the next prompt's turn took {answered:.1f} s"
    assert closing < 2.0


async def test_a_stream_that_stalls_without_heartbeats_is_reopened_and_resynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The event stream goes silent mid-turn (no events, no heartbeats, the connection open) after the
    server has sent heartbeats: missed heartbeats count as a drop, so the stream is reopened and the
    turn the server finished meanwhile ends (before: it never ended)."""
    monkeypatch.setattr(adapter_module, "HEARTBEAT_TIMEOUT", 1.0)
    t = Timeline()
    first = t.handshake()
    t.event(first, "server.heartbeat")
    t.exchange("POST", f"/session/{SID}/prompt_async", 204, None)
    _status(first, t, "busy")
    t.event(first, "message.updated", info={"id": MSG, "sessionID": SID, "role": "assistant", "time": {}})
    t.event(first, "message.part.delta", sessionID=SID, messageID=MSG, partID="prt_t", field="text", delta="Hel")
    # silence: the first stream stays open and says nothing more
    t.stream()
    t.resync([_message(MSG, LATER, _part("Hello", True), done=True)], {})
    started = anyio.current_time()
    events = await _one_turn(tmp_path, t)
    assert text_of(events) == "Hello"
    assert [type(e.stop) for e in kinds(events, TurnEnded)] == [Completed]
    assert anyio.current_time() - started < 10.0


async def test_a_server_that_never_sent_a_heartbeat_is_not_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quiet stream from a server that sends no heartbeats at all is not counted as a drop."""
    monkeypatch.setattr(adapter_module, "HEARTBEAT_TIMEOUT", 0.3)
    t = Timeline()
    stream = t.handshake()
    t.exchange("POST", f"/session/{SID}/prompt_async", 204, None)
    _status(stream, t, "busy")
    t.event(stream, "message.updated", info={"id": MSG, "sessionID": SID, "role": "assistant", "time": {}})
    gap = len(t.lines)  # a second of silence before the rest (the replayer paces by _t)
    t.event(stream, "message.part.updated", sessionID=SID, part=_part("late", True))
    _status(stream, t, "idle")
    t.event(stream, "session.idle", sessionID=SID)
    for number, line in enumerate(t.lines):
        line["_t"] = 0.0 if number < gap else 1.0
    shim = write_replayer_shim(
        tmp_path / "bin", t.write(tmp_path / "t.jsonl"), name="opencode", http=True, strict=True, realtime=True
    )
    async with runtime_with_env(dict(os.environ)) as runtime:
        session, events_ = await runtime.open(AgentInstallation.at("opencode", shim), SessionOptions.in_dir(tmp_path))
        async with session:
            reader = EventReader(events_, timeout=WAIT)
            await session.prompt("hi")
            events = await reader.turn()
    assert text_of(events) == "late"
    assert [type(e.stop) for e in kinds(events, TurnEnded)] == [Completed]


async def test_own_only_keeps_the_provider_keys_opencode_logs_in_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``CredentialPolicy.OWN_ONLY`` keeps opencode's provider variables (before: it dropped them all,
    like ``NONE``) and still drops another vendor's own key."""
    t = Timeline()
    t.handshake()
    inner = replay_installation(tmp_path / "bin", t.write(tmp_path / "t.jsonl")).executable_path
    dump = tmp_path / "environ.txt"
    shim = tmp_path / "wrap" / "opencode"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nenv > "{dump}"\nexec "{inner}" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    host = {
        "ANTHROPIC_API_KEY": "sk-ant",
        "OPENROUTER_API_KEY": "sk-or",
        "AWS_SECRET_ACCESS_KEY": "aws",
        "GOOGLE_APPLICATION_CREDENTIALS": "/creds.json",
        "CODEX_API_KEY": "codex-own",
    }
    for name, value in host.items():
        monkeypatch.setenv(name, value)
    options = SessionOptions.in_dir(tmp_path).credentials(CredentialPolicy.OWN_ONLY)
    async with Runtime() as runtime:  # the installed plugins: codex's profile names CODEX_API_KEY
        session, _ = await runtime.open(AgentInstallation.at("opencode", shim), options)
        await session.close()
    seen = dict(line.split("=", 1) for line in dump.read_text(encoding="utf-8").splitlines() if "=" in line)
    assert seen["ANTHROPIC_API_KEY"] == "sk-ant" and seen["OPENROUTER_API_KEY"] == "sk-or"
    assert seen["AWS_SECRET_ACCESS_KEY"] == "aws" and seen["GOOGLE_APPLICATION_CREDENTIALS"] == "/creds.json"
    assert "CODEX_API_KEY" not in seen


def _tool_part(call: str, tool: str, state: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"prt_{call}",
        "messageID": MSG,
        "sessionID": SID,
        "type": "tool",
        "callID": call,
        "tool": tool,
        "state": state,
    }


async def test_mcp_tools_are_mcp_tools_and_a_running_commands_output_streams(tmp_path: Path) -> None:
    """opencode names an MCP tool ``<server>_<tool>`` (sanitized): it is ``McpTool(server, tool)``
    (before: ``OTHER``); a running bash's ``metadata.output`` streams as ``ToolOutputDelta``s before
    the tool completes (before: nothing until the end)."""
    t = Timeline()
    stream = t.handshake()
    t.exchange("POST", f"/session/{SID}/prompt_async", 204, None)
    _status(stream, t, "busy")
    t.event(stream, "message.updated", info={"id": MSG, "sessionID": SID, "role": "assistant", "time": {}})
    read = {"status": "completed", "input": {"path": "a"}, "output": "A", "title": "read a", "metadata": {}}
    t.event(stream, "message.part.updated", sessionID=SID, part=_tool_part("c1", "my_files_read_file", read))
    t.event(stream, "message.part.updated", sessionID=SID, part=_tool_part("c2", "other_tool", read))
    command = {"command": "make"}
    t.event(
        stream,
        "message.part.updated",
        sessionID=SID,
        part=_tool_part("c3", "bash", {"status": "running", "input": command, "metadata": {"output": ""}}),
    )
    t.event(
        stream,
        "message.part.updated",
        sessionID=SID,
        part=_tool_part("c3", "bash", {"status": "running", "input": command, "metadata": {"output": "one\n"}}),
    )
    t.event(
        stream,
        "message.part.updated",
        sessionID=SID,
        part=_tool_part("c3", "bash", {"status": "running", "input": command, "metadata": {"output": "one\ntwo\n"}}),
    )
    done = {
        "status": "completed",
        "input": command,
        "output": "one\ntwo\nthree\n",
        "metadata": {"output": "one\ntwo\nthree\n", "exit": 0},
    }
    t.event(stream, "message.part.updated", sessionID=SID, part=_tool_part("c3", "bash", done))
    _status(stream, t, "idle")
    t.event(stream, "session.idle", sessionID=SID)
    installation = replay_installation(tmp_path / "bin", t.write(tmp_path / "t.jsonl"), strict=True)
    options = SessionOptions.in_dir(tmp_path).mcp_server(McpServer.stdio("my.files", "mcp-files"))
    async with runtime_with_env(dict(os.environ)) as runtime:
        session, events = await runtime.open(installation, options)
        async with session:
            reader = EventReader(events, timeout=WAIT)
            await session.prompt("hi")
            turn = await reader.turn()
    tools = {u.tool.id: u.tool for u in kinds(turn, ToolUpdated)}
    assert tools["c1"].kind == McpTool("my.files", "read_file")
    assert tools["c2"].kind == ToolKind.OTHER and tools["c3"].kind == ToolKind.EXECUTE
    deltas = [d for d in kinds(turn, ToolOutputDelta) if d.tool_id == "c3"]
    assert "".join(d.text for d in deltas) == "one\ntwo\nthree\n"
    first_delta = next(n for n, e in enumerate(turn) if isinstance(e.kind, ToolOutputDelta))
    completed = next(
        n
        for n, e in enumerate(turn)
        if isinstance(e.kind, ToolUpdated) and e.kind.tool.id == "c3" and e.kind.tool.status == ToolStatus.COMPLETED
    )
    assert first_delta < completed


def test_streamed_output_is_bounded_in_rate_and_size() -> None:
    """At most one delta per ``STREAM_INTERVAL`` (what comes meanwhile joins the next one), at most
    ``STREAM_LIMIT`` characters in all; nothing held back is lost when the tool finishes."""
    now = [0.0]
    translator = Translator(SID, clock=lambda: now[0])
    sent: list[str] = []

    def feed(status: str, output: str) -> None:
        state: dict[str, Any] = {"status": status, "input": {"command": "yes"}, "metadata": {"output": output}}
        if status == "completed":
            state["output"] = output
        part = _tool_part("c1", "bash", state)
        out = translator.feed({"type": "message.part.updated", "properties": {"sessionID": SID, "part": part}})
        sent.extend(
            e.kind.text for e in out.events if isinstance(e, seam.Content) and isinstance(e.kind, ToolOutputDelta)
        )

    text = ""
    for _ in range(100):  # 100 snapshots within 0.01 s: one delta, the rest held back
        text += "y\n"
        now[0] += 0.0001
        feed("running", text)
    assert len(sent) == 1
    now[0] += STREAM_INTERVAL
    feed("running", text + "z\n")
    assert len(sent) == 2 and "".join(sent) == text + "z\n"
    huge = text + "z\n" + "x" * (2 * STREAM_LIMIT)
    now[0] += STREAM_INTERVAL
    feed("running", huge)
    feed("completed", huge)
    assert "".join(sent) == huge[:STREAM_LIMIT]


@pytest.mark.parametrize(
    ("recording", "command", "output"),
    [("basics.jsonl", "echo always-ran", "always-ran\n"), ("reconnects.jsonl", "echo lost", "lost\n")],
)
def test_a_real_running_commands_output_streams_before_it_completes(recording: str, command: str, output: str) -> None:
    """Issue 28 item 8 on real frames: opencode 1.18.33's recordings carry a running bash's output in
    ``metadata.output`` before the tool completes; it is a ``ToolOutputDelta`` there, ahead of the
    ``COMPLETED`` update, and the deltas add up to the output once (before: nothing until completion)."""
    path = Path(__file__).parent / "recordings" / recording
    frames = []
    for line in path.read_text(encoding="utf-8").splitlines():
        http = json.loads(line).get("_http")
        if isinstance(http, dict) and http.get("kind") == "sse" and isinstance(http.get("data"), dict):
            frames.append(http["data"])
    session_id = next(f["properties"]["sessionID"] for f in frames if "sessionID" in f.get("properties", {}))
    now = [0.0]
    translator = Translator(session_id, clock=lambda: now[0])
    seen: list[Any] = []
    for frame in frames:
        now[0] += STREAM_INTERVAL  # the recording's pace is not replayed: let every snapshot through
        seen.extend(e.kind for e in translator.feed(frame).events if isinstance(e, seam.Content))
    tools = [k.tool for k in seen if isinstance(k, ToolUpdated) and k.tool.input.command == command]
    assert tools, f"no {command!r} tool in {recording}"
    tool_id = tools[0].id
    deltas = [n for n, k in enumerate(seen) if isinstance(k, ToolOutputDelta) and k.tool_id == tool_id]
    completed = next(
        n
        for n, k in enumerate(seen)
        if isinstance(k, ToolUpdated) and k.tool.id == tool_id and k.tool.status == ToolStatus.COMPLETED
    )
    assert deltas and deltas[0] < completed, "the running command's output waited for its completion"
    assert "".join(seen[n].text for n in deltas) == output
