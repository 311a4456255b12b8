"""Replayer behaviour on small recordings written here: ids, unknown requests, strictness, EOF, modes."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from anyagent_testkit.replay import (
    EXIT_INCOMPLETE,
    EXIT_MISMATCH,
    IdMap,
    LineKind,
    RecordingError,
    frame_kind,
    load_recording,
    parse_recording,
    replay_command,
    shim_launches,
    write_process_shim,
    write_replayer_shim,
)
from anyagent_testkit.stdio import JsonlProcess, RawLine

TIMEOUT = 10.0


def _write(tmp_path: Path, lines: list[dict[str, Any]], name: str = "rec.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _sent(frame: dict[str, Any], t: float | None = None) -> dict[str, Any]:
    return {"_sent": frame, **({"_t": t} if t is not None else {})}


CODEX_LIKE = [
    {"_meta": {"cmd": ["codex", "app-server"]}, "_t": 0.0},
    _sent({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
    {"id": 1, "result": {"userAgent": "x"}, "_t": 0.1},
    _sent({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    _sent({"jsonrpc": "2.0", "id": 2, "method": "turn/start", "params": {}}),
    {"id": 2, "result": {"turn": {"id": "t1"}}},
    {"id": 0, "method": "item/commandExecution/requestApproval", "params": {"itemId": "c1"}},
    _sent({"jsonrpc": "2.0", "id": 0, "result": {"decision": "accept"}}),
    {"method": "turn/completed", "params": {"turn": {"id": "t1", "status": "completed"}}},
]


# -- in-process pieces -----------------------------------------------------------------------


def test_frame_kinds_tell_the_wires_apart() -> None:
    assert frame_kind({"jsonrpc": "2.0", "id": 1, "method": "initialize"}) == ("request", "initialize")
    assert frame_kind({"method": "turn/completed", "params": {}}) == ("notification", "turn/completed")
    assert frame_kind({"id": 3, "result": {}}) == ("response",)
    assert frame_kind({"id": 3, "error": {"code": 1}}) == ("response",)
    control = {"type": "control_request", "request_id": "a", "request": {"subtype": "interrupt"}}
    assert frame_kind(control) == ("control_request", "interrupt")
    assert frame_kind({"type": "user", "message": {}}) == ("type", "user")
    assert frame_kind({"id": "x", "type": "prompt", "message": "hi"}) == ("type", "prompt")
    failed_pi = {"id": "x", "type": "response", "success": False, "error": "no"}
    assert frame_kind(failed_pi) == ("type", "response")
    assert frame_kind({"event": "user", "message": {}}) == ("event", "user")
    assert frame_kind([1, 2]) == ("value", "list")


def test_the_id_map_only_readdresses_answers_to_the_client() -> None:
    ids = IdMap()
    ids.learn({"jsonrpc": "2.0", "id": 1, "method": "a"}, {"jsonrpc": "2.0", "id": 77, "method": "a"})
    assert ids.rewrite({"id": 1, "result": {}}) == {"id": 77, "result": {}}
    # an agent-initiated request keeps its own id, even when it collides with a client id
    assert ids.rewrite({"id": 1, "method": "approve", "params": {}}) == {"id": 1, "method": "approve", "params": {}}
    # "1" and 1 are different ids
    assert ids.rewrite({"id": "1", "result": {}}) == {"id": "1", "result": {}}


def test_recordings_split_into_processes_at_meta_lines() -> None:
    text = [
        json.dumps({"_meta": {"cmd": ["a"]}}),
        json.dumps({"_note": {"case": "one"}}),
        json.dumps({"x": 1, "_t": 0.5}),
        json.dumps({"_note": {"exit": 0}}),
        "",
        json.dumps({"_meta": {"cmd": ["a"]}}),
        json.dumps({"_raw": "plain text"}),
    ]
    recording = parse_recording(text)
    assert len(recording.segments) == 2
    assert [line.kind for line in recording.segment(1)] == [LineKind.META, LineKind.NOTE, LineKind.AGENT, LineKind.NOTE]
    assert recording.segment(1)[2].value == {"x": 1}
    assert recording.segment(1)[2].t == 0.5
    assert recording.segment(1)[3].exit_status == 0
    assert recording.segment(2)[1].value == "plain text"
    with pytest.raises(RecordingError, match="no process 3"):
        recording.segment(3)


def test_a_line_that_is_not_json_is_a_recording_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\nnot json\n', encoding="utf-8")
    with pytest.raises(RecordingError, match=":2 is not JSON"):
        load_recording(path)


# -- the replayer as a process ---------------------------------------------------------------


@pytest.mark.anyio
async def test_json_rpc_answers_carry_the_live_ids_and_agent_requests_keep_theirs(tmp_path: Path) -> None:
    path = _write(tmp_path, CODEX_LIKE)
    async with JsonlProcess.open(replay_command(path, strict=True)) as agent:
        await agent.send({"jsonrpc": "2.0", "id": "init-a", "method": "initialize", "params": {"x": 1}})
        assert await agent.receive(TIMEOUT) == {"id": "init-a", "result": {"userAgent": "x"}}
        await agent.send({"jsonrpc": "2.0", "method": "initialized"})
        await agent.send({"jsonrpc": "2.0", "id": 41, "method": "turn/start", "params": {}})
        assert await agent.receive(TIMEOUT) == {"id": 41, "result": {"turn": {"id": "t1"}}}
        approval = await agent.receive(TIMEOUT)
        assert approval["id"] == 0
        await agent.send({"jsonrpc": "2.0", "id": 0, "result": {"decision": "decline"}})
        assert (await agent.receive(TIMEOUT))["method"] == "turn/completed"
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == 0


@pytest.mark.anyio
async def test_an_unknown_json_rpc_request_gets_method_not_found_and_the_replay_goes_on(tmp_path: Path) -> None:
    path = _write(tmp_path, CODEX_LIKE)
    async with JsonlProcess.open(replay_command(path)) as agent:
        await agent.send({"jsonrpc": "2.0", "id": 9, "method": "no/such/method", "params": {}})
        reply = await agent.receive(TIMEOUT)
        assert reply == {"id": 9, "error": {"code": -32601, "message": "Method not found: no/such/method"}}
        await agent.send({"jsonrpc": "2.0", "method": "some/notification"})  # no reply to a notification
        await agent.send({"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": {}})
        assert await agent.receive(TIMEOUT) == {"id": 10, "result": {"userAgent": "x"}}
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == 0
    assert "no/such/method" in agent.stderr
    assert "some/notification" in agent.stderr


@pytest.mark.anyio
async def test_acp_style_errors_include_the_jsonrpc_key_when_the_agent_uses_it(tmp_path: Path) -> None:
    lines = [
        _sent({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
        {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}},
    ]
    path = _write(tmp_path, lines)
    async with JsonlProcess.open(replay_command(path)) as agent:
        await agent.send({"jsonrpc": "2.0", "id": 5, "method": "session/fork", "params": {}})
        reply = await agent.receive(TIMEOUT)
        assert reply["jsonrpc"] == "2.0"
        assert reply["error"]["code"] == -32601
        assert reply["id"] == 5


CLAUDE_LIKE = [
    _sent({"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize", "hooks": {}}}),
    {"type": "control_response", "response": {"subtype": "success", "request_id": "r1", "response": {"pid": 1}}},
    _sent({"type": "user", "uuid": "u-rec", "message": {"role": "user", "content": "hi"}}),
    {"type": "command_lifecycle", "command_uuid": "u-rec", "state": "started"},
    {"type": "control_request", "request_id": "agent-1", "request": {"subtype": "can_use_tool", "tool_name": "Write"}},
    _sent({"type": "control_response", "response": {"subtype": "success", "request_id": "agent-1", "response": {}}}),
    {"type": "result", "subtype": "success", "is_error": False},
]


@pytest.mark.anyio
async def test_claude_control_answers_and_prompt_uuids_follow_the_live_client(tmp_path: Path) -> None:
    path = _write(tmp_path, CLAUDE_LIKE)
    async with JsonlProcess.open(replay_command(path, strict=True)) as agent:
        init = {"type": "control_request", "request_id": "live-9", "request": {"subtype": "initialize"}}
        await agent.send(init)
        assert (await agent.receive(TIMEOUT))["response"]["request_id"] == "live-9"
        await agent.send({"type": "user", "uuid": "u-live", "message": {"role": "user", "content": "hello"}})
        assert await agent.receive(TIMEOUT) == {
            "type": "command_lifecycle",
            "command_uuid": "u-live",
            "state": "started",
        }
        permission = await agent.receive(TIMEOUT)
        assert permission["request_id"] == "agent-1"
        allow = {"subtype": "success", "request_id": "agent-1", "response": {"behavior": "allow"}}
        await agent.send({"type": "control_response", "response": allow})
        assert (await agent.receive(TIMEOUT))["type"] == "result"
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == 0


@pytest.mark.anyio
async def test_an_unknown_claude_control_subtype_gets_an_error_response(tmp_path: Path) -> None:
    path = _write(tmp_path, CLAUDE_LIKE)
    async with JsonlProcess.open(replay_command(path)) as agent:
        await agent.send({"type": "control_request", "request_id": "q", "request": {"subtype": "teleport"}})
        reply = await agent.receive(TIMEOUT)
        assert reply == {
            "type": "control_response",
            "response": {
                "subtype": "error",
                "request_id": "q",
                "error": "Unsupported control request subtype: teleport",
            },
        }


@pytest.mark.anyio
async def test_pi_commands_are_readdressed_and_unknown_ones_fail(tmp_path: Path) -> None:
    lines = [
        _sent({"id": "s", "type": "get_state"}),
        {"id": "s", "type": "response", "command": "get_state", "success": True, "data": {}},
        {"type": "extension_ui_request", "id": "ui-1", "method": "confirm"},
        _sent({"type": "extension_ui_response", "id": "ui-1", "confirmed": True}),
        {"type": "agent_end"},
    ]
    path = _write(tmp_path, lines)
    async with JsonlProcess.open(replay_command(path)) as agent:
        await agent.send({"id": "nope-1", "type": "fly"})
        assert await agent.receive(TIMEOUT) == {
            "id": "nope-1",
            "type": "response",
            "command": "fly",
            "success": False,
            "error": "Unknown command: fly",
        }
        await agent.send({"id": 123, "type": "get_state"})
        assert (await agent.receive(TIMEOUT))["id"] == 123
        assert (await agent.receive(TIMEOUT))["id"] == "ui-1"
        await agent.send({"type": "extension_ui_response", "id": "ui-1", "confirmed": False})
        assert await agent.receive(TIMEOUT) == {"type": "agent_end"}


@pytest.mark.anyio
async def test_strict_mode_exits_1_with_a_readable_diff(tmp_path: Path) -> None:
    path = _write(tmp_path, CODEX_LIKE)
    async with JsonlProcess.open(replay_command(path, strict=True)) as agent:
        await agent.send({"jsonrpc": "2.0", "id": 1, "method": "thread/start", "params": {"cwd": "/w"}})
        assert await agent.wait(TIMEOUT) == EXIT_MISMATCH
    assert "mismatch at recording line 2: expected request initialize, received request thread/start" in agent.stderr
    assert '-  "method": "initialize"' in agent.stderr
    assert '+  "method": "thread/start"' in agent.stderr


@pytest.mark.anyio
@pytest.mark.parametrize(("strict", "status"), [(False, 0), (True, EXIT_INCOMPLETE)])
async def test_stdin_eof_before_the_end_stops_promptly(tmp_path: Path, strict: bool, status: int) -> None:
    path = _write(tmp_path, CODEX_LIKE)
    async with JsonlProcess.open(replay_command(path, strict=strict)) as agent:
        await agent.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        await agent.receive(TIMEOUT)
        started = time.monotonic()
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == status
        assert time.monotonic() - started < 2.0
    assert "stdin closed while waiting for a client frame (notification initialized)" in agent.stderr


@pytest.mark.anyio
@pytest.mark.parametrize(("strict", "status"), [(False, 0), (True, EXIT_MISMATCH)])
async def test_frames_after_the_end_are_answered_as_unknown(tmp_path: Path, strict: bool, status: int) -> None:
    path = _write(tmp_path, [{"type": "system", "subtype": "init"}])
    async with JsonlProcess.open(replay_command(path, strict=strict)) as agent:
        assert await agent.receive(TIMEOUT) == {"type": "system", "subtype": "init"}
        await agent.send({"type": "control_request", "request_id": "late", "request": {"subtype": "interrupt"}})
        assert (await agent.receive(TIMEOUT))["response"]["subtype"] == "error"
        await agent.send_line("this is not json")
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == status
    assert "not JSON" in agent.stderr


@pytest.mark.anyio
async def test_raw_and_stderr_lines_are_played_as_written(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {"_raw": "Open this link: https://example.invalid"},
        {"_stderr": "warming up"},
        {"ok": True},
    ]
    path = _write(tmp_path, lines)
    async with JsonlProcess.open(replay_command(path)) as agent:
        assert await agent.receive(TIMEOUT) == RawLine("Open this link: https://example.invalid")
        assert await agent.receive(TIMEOUT) == {"ok": True}
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == 0
    assert "warming up" in agent.stderr


@pytest.mark.anyio
async def test_process_selects_one_recorded_process_and_exit_as_recorded_ends_it(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {"_meta": {"cmd": ["agy"]}},
        {"event": "result", "status": "ERROR", "n": 1},
        {"_note": {"exit": 1}},
        {"_meta": {"cmd": ["agy"]}},
        {"event": "result", "status": "ERROR", "n": 2},
        {"_note": {"exit": 7}},
    ]
    path = _write(tmp_path, lines)
    async with JsonlProcess.open(replay_command(path, process=2, exit_as_recorded=True)) as agent:
        assert await agent.receive(TIMEOUT) == {"event": "result", "status": "ERROR", "n": 2}
        assert await agent.wait(TIMEOUT) == 7  # stdin still open: the recorded process exited by itself
    async with JsonlProcess.open(replay_command(path)) as agent:
        assert (await agent.receive(TIMEOUT))["n"] == 1
        assert (await agent.receive(TIMEOUT))["n"] == 2
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == 0


@pytest.mark.anyio
async def test_a_recorded_sigint_is_waited_for(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {"event": "step", "n": 1},
        {"_note": {"signal": "SIGINT"}},
        {"event": "result", "status": "ERROR"},
    ]
    path = _write(tmp_path, lines)
    async with JsonlProcess.open(replay_command(path, strict=True)) as agent:
        assert await agent.receive(TIMEOUT) == {"event": "step", "n": 1}
        with anyio.move_on_after(0.3):
            await agent.receive(TIMEOUT)
            pytest.fail("the result came before the signal")
        agent.send_signal(signal.SIGINT)
        assert await agent.receive(TIMEOUT) == {"event": "result", "status": "ERROR"}
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == 0


@pytest.mark.anyio
async def test_realtime_honours_gaps_up_to_the_cap(tmp_path: Path) -> None:
    lines = [{"n": 1, "_t": 1.0}, {"n": 2, "_t": 1.6}, {"n": 3, "_t": 31.6}]
    path = _write(tmp_path, lines)
    command = replay_command(path, realtime=True)
    command[3:3] = ["--max-gap", "0.2"]
    async with JsonlProcess.open(command) as agent:
        await agent.receive(TIMEOUT)
        started = time.monotonic()
        await agent.receive(TIMEOUT)
        second = time.monotonic() - started
        await agent.receive(TIMEOUT)
        third = time.monotonic() - started
    assert 0.15 <= second < 1.0  # a 0.6 s gap, capped to 0.2 s
    assert third - second < 1.0  # a 30 s gap, capped too


@pytest.mark.anyio
async def test_without_realtime_frames_come_at_once(tmp_path: Path) -> None:
    lines = [{"n": index, "_t": index * 5.0} for index in range(50)]
    path = _write(tmp_path, lines)
    async with JsonlProcess.open(replay_command(path)) as agent:
        started = time.monotonic()
        for index in range(50):
            assert (await agent.receive(TIMEOUT))["n"] == index
        assert time.monotonic() - started < 2.0


@pytest.mark.anyio
async def test_the_shim_ignores_the_adapters_own_arguments(tmp_path: Path) -> None:
    path = _write(tmp_path, CLAUDE_LIKE)
    shim = write_replayer_shim(tmp_path / "bin", path, name="claude", strict=True)
    argv: list[str | Path] = [shim, "-p", "--output-format", "stream-json", "--strict-typo", "--", "x"]
    async with JsonlProcess.open(argv) as agent:
        await agent.send({"type": "control_request", "request_id": "z", "request": {"subtype": "initialize"}})
        assert (await agent.receive(TIMEOUT))["response"]["request_id"] == "z"
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == EXIT_INCOMPLETE  # strict, and the turn never came


@pytest.mark.anyio
async def test_a_missing_or_broken_recording_is_a_usage_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{nope\n", encoding="utf-8")
    for path in (broken, tmp_path / "missing.jsonl"):
        async with JsonlProcess.open(replay_command(path)) as agent:
            assert await agent.wait(TIMEOUT) == 2
        assert "[replay]" in agent.stderr


@pytest.mark.anyio
async def test_an_unknown_request_mid_stream_is_answered_before_the_rest_of_the_stream(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        _sent({"type": "user", "message": {"role": "user", "content": "hi"}}, t=0.0),
        {"type": "stream_event", "n": 1, "_t": 0.1},
        {"type": "stream_event", "n": 2, "_t": 0.6},
        {"type": "stream_event", "n": 3, "_t": 30.0},
        {"type": "result", "_t": 30.1},
    ]
    path = _write(tmp_path, lines)
    command = replay_command(path, realtime=True)
    command[3:3] = ["--max-gap", "1.5"]
    async with JsonlProcess.open(command) as agent:
        await agent.send({"type": "user", "message": {"role": "user", "content": "hello"}})
        assert (await agent.receive(TIMEOUT))["n"] == 1
        interrupt = {"type": "control_request", "request_id": "int-1", "request": {"subtype": "interrupt"}}
        await agent.send(interrupt)
        frames = await agent.receive_until(lambda frame: frame.get("n") == 3, timeout=TIMEOUT)
    replies = [frame for frame in frames if frame["type"] == "control_response"]
    assert [frame.get("n") for frame in frames if frame["type"] == "stream_event"] == [2, 3]
    assert len(replies) == 1  # answered while frame 3 was still 1.5 s away, not after the turn
    assert replies[0]["response"] == {
        "subtype": "error",
        "request_id": "int-1",
        "error": "Unsupported control request subtype: interrupt",
    }


@pytest.mark.anyio
async def test_the_process_shim_plays_the_next_process_at_each_launch(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {"_meta": {"cmd": ["agent"]}},
        _sent({"type": "hello"}),
        {"type": "first"},
        {"_meta": {"cmd": ["agent", "--again"]}},
        _sent({"type": "hello"}),
        {"type": "second"},
        {"_note": {"exit": 4}},
    ]
    shim = write_process_shim(tmp_path / "bin", _write(tmp_path, lines), name="agent", dies=[2])
    assert shim_launches(tmp_path / "bin") == 0
    async with JsonlProcess.open([shim, "--its-own-flag"]) as agent:
        await agent.send({"type": "hello"})
        assert (await agent.receive(TIMEOUT))["type"] == "first"
        await agent.close_stdin()
        assert await agent.wait(TIMEOUT) == 0
    async with JsonlProcess.open([shim]) as agent:
        await agent.send({"type": "hello"})
        assert (await agent.receive(TIMEOUT))["type"] == "second"
        assert await agent.wait(TIMEOUT) == 4  # it dies where the recording says
    assert shim_launches(tmp_path / "bin") == 2
