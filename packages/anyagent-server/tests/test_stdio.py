"""`anyagent serve` over stdio, a real subprocess, against anyagent-rs's five mock scripts.

Each scenario is one a wrapper needs (anyagent-rs's S1–S10 and the issue's list); the client side
runs on asyncio and on trio. Every line seen is validated against the committed schema.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest
from sidecar_client import ServerError, kind_of, serve_argv, stdio, texts

pytestmark = pytest.mark.anyio


async def test_open_prompt_permission_answer_turn_end_close() -> None:
    async with stdio(script="turn") as sc:
        c = sc.client
        info, s = await c.open()
        assert info["id"] == "s1" and info["agent"]["id"] == "mock" and info["status"] == "Idle"
        delivery = await c.call("prompt", session=s.id, text="hi")
        assert set(delivery["kind"]) == {"Started"}
        opened = await s.until("RequestOpened")
        request = opened[-1]["kind"]["RequestOpened"]["Permission"]
        assert request["id"] == "r1" and request["options"] == ["AllowOnce", "DenyOnce"]
        assert request["tool"]["input"] == {"Command": {"command": "cargo test", "cwd": None}}
        assert await c.call("answer", session=s.id, request="r1", answer={"Permission": "AllowOnce"}) is None
        rest = await s.until("TurnEnded")
        assert texts(rest) == ["Done."]
        assert rest[-1]["kind"]["TurnEnded"]["stop"] == {"Completed": {"source": "Protocol"}}
        statuses = [e["kind"]["StatusChanged"] for e in await s.until("StatusChanged")]
        assert statuses[-1] == "Idle"
        assert await c.call("close", session=s.id) is None
        await s.wait_closed()
        # the open reply came before any line of the session; closed exactly once, nothing after it
        first_of_session = next(i for i, line in enumerate(c.lines) if "event" in line)
        open_reply = next(
            i for i, line in enumerate(c.lines) if isinstance(line.get("ok"), dict) and line["ok"].get("id") == "s1"
        )
        assert open_reply < first_of_session
        closed_at = [i for i, line in enumerate(c.lines) if line.get("closed") == "s1"]
        assert len(closed_at) == 1
        assert not any("event" in line for line in c.lines[closed_at[0] :])
        sequences = [e["sequence"] for e in s.events]
        assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)


async def test_events_buffered_before_the_client_reads_are_all_delivered() -> None:
    async with stdio(script="turn") as sc:
        _, s = await sc.client.open()
        sc.pause()
        await sc.client.request("prompt", session=s.id, text="hi")
        await anyio.sleep(0.3)
        sc.resume()
        seen = await s.until("RequestOpened")
        assert texts(seen) == ["Let me check. "]
        assert any(kind_of(e) == "TurnStarted" for e in seen)


async def test_prompt_after_close_is_session_closed() -> None:
    async with stdio(script="turn") as sc:
        _, s = await sc.client.open()
        await sc.client.call("close", session=s.id)
        await s.wait_closed()
        with pytest.raises(ServerError) as caught:
            await sc.client.call("prompt", session=s.id, text="x")
        assert caught.value.kind == "SessionClosed"
        assert s.closed_count == 1


async def test_two_sessions_interleave_each_in_order() -> None:
    async with stdio(script="chatter") as sc:
        c = sc.client
        results: dict[str, list[dict[str, object]]] = {}
        async with anyio.create_task_group() as tg:
            for _ in range(2):

                async def one() -> None:
                    _, s = await c.open()
                    await c.call("prompt", session=s.id, text="x")
                    results[s.id] = await s.until("TurnEnded")

                tg.start_soon(one)
        assert sorted(results) == ["s1", "s2"]
        for session_id, events in results.items():
            assert all(e["session_id"] == session_id for e in events)
            sequences = [e["sequence"] for e in events]  # type: ignore[misc]
            assert sequences == sorted(sequences)  # type: ignore[type-var]
            assert texts(events) == ["one", "two", "three"]  # type: ignore[arg-type]


async def test_a_bad_line_is_bad_frame_and_the_loop_goes_on() -> None:
    async with stdio(script="turn") as sc:
        c = sc.client
        await c.send_raw("not json")
        await c.send_raw('{"id": 7, "cmd": "no_such_command"}')
        await c.send_raw('["an", "array"]')
        await c.wait_for(lambda: len(c.orphans) == 2 and 7 in c.replies)
        assert [o["error"]["kind"] for o in c.orphans] == ["BadFrame", "BadFrame"]
        assert c.replies[7]["error"]["kind"] == "BadFrame"
        report = await c.call("discover")
        assert report["agents"][0]["id"] == "mock"
        with pytest.raises(ServerError) as caught:
            await c.call("info", session="s9")
        assert caught.value.kind == "UnknownSession" and caught.value.body["session"] == "s9"


async def test_serve_killed_the_client_sees_the_pipe_end() -> None:
    async with stdio(script="turn", check=False) as sc:
        _, s = await sc.client.open()
        sc.process.send_signal(signal.SIGKILL if sys.platform != "win32" else signal.SIGTERM)
        with anyio.fail_after(10):
            while not sc.client.ended:
                await anyio.sleep(0.01)
        with pytest.raises((ConnectionError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)):
            await sc.client.call("discover")
        assert not s.closed  # the stream ended with the process, not with a closed line


async def test_the_agent_dying_mid_turn_fails_the_turn_then_the_session() -> None:
    async with stdio(script="die") as sc:
        c = sc.client
        _, s = await c.open()
        await c.call("prompt", session=s.id, text="go")
        ended = (await s.until("TurnEnded"))[-1]["kind"]["TurnEnded"]
        assert set(ended["stop"]) == {"Failed"}
        with pytest.raises(ServerError) as caught:
            await s.drain()
        assert caught.value.kind == "ProcessExited"
        assert caught.value.body["status"] == "9" and "mock died" in caught.value.body["stderr"]
        await s.wait_closed()
        error_at = next(i for i, line in enumerate(c.lines) if line.get("session") == s.id)
        closed_at = next(i for i, line in enumerate(c.lines) if line.get("closed") == s.id)
        assert error_at < closed_at and s.closed_count == 1


async def test_a_20000_event_flood_arrives_whole_and_in_order() -> None:
    async with stdio(script="flood") as sc:
        _, s = await sc.client.open()
        await sc.client.call("prompt", session=s.id, text="go")
        events = await s.until("TurnEnded")
        assert len(texts(events)) == 20_000
        sequences = [e["sequence"] for e in events]
        assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)


async def test_a_client_that_stops_reading_gets_its_flooding_session_closed_others_go_on() -> None:
    async with stdio(script="flood") as sc:
        c = sc.client
        _, quiet = await c.open()
        _, flood = await c.open()
        await c.call("prompt", session=flood.id, text="go")
        await flood.until("TextDelta")
        sc.pause()
        await anyio.sleep(3.0)  # 20 000 events at the script's pace take 4 s; the bounds hold ~5 000
        sc.resume()
        with pytest.raises(ServerError) as caught:
            await flood.until("TurnEnded")
        assert caught.value.kind == "SessionClosed" and "behind" in caught.value.body["message"]
        assert caught.value.body["lagged"] is True
        await flood.wait_closed()
        assert len(texts(flood.events)) < 20_000
        # the other session still works
        info = await c.call("info", session=quiet.id)
        assert info["id"] == quiet.id and not quiet.closed


async def test_eof_with_a_session_open_writes_closed_and_exits_0() -> None:
    async with stdio(script="turn") as sc:
        _, s = await sc.client.open()
        await sc.client.call("prompt", session=s.id, text="hi")
        await s.until("RequestOpened")
        await sc.close_stdin()
        with anyio.fail_after(15):
            code = await sc.process.wait()
        assert code == 0
        await s.wait_closed()
        assert s.closed_count == 1
        with anyio.fail_after(10):
            while not sc.client.ended:  # stdout ends after the last line
                await anyio.sleep(0.01)


async def test_eof_during_an_open_in_flight_closes_it_and_exits_0(tmp_path: object) -> None:
    slow = {"acp": {"name": "slow", "path": sys.executable, "args": ["-c", "import time; time.sleep(60)"]}}
    async with stdio(script=None) as sc:
        c = sc.client
        open_id = await c.request("open", agent=slow, dir=str(tmp_path))
        await anyio.sleep(0.5)
        await sc.close_stdin()
        with anyio.fail_after(15):
            code = await sc.process.wait()
        assert code == 0
        reply = await c.reply(open_id)
        assert reply["error"]["kind"] == "SessionClosed"


async def test_configure_is_answered_by_session_updated() -> None:
    async with stdio(script="configure") as sc:
        c = sc.client
        info, s = await c.open()
        option = info["details"]["config_options"][0]
        assert option["id"] == "model" and option["current"] == "sonnet"
        assert option["kind"]["Select"]["choices"][1]["value"] == "opus"
        await c.call("configure", session=s.id, option="model", value="opus")
        updated = (await s.until("SessionUpdated"))[-1]["kind"]["SessionUpdated"]
        assert updated["configuration"]["options"]["model"] == "opus"
        with pytest.raises(ServerError) as caught:
            await c.call("configure", session=s.id, option="model", value="gpt")
        assert caught.value.kind == "InvalidConfiguration"


async def test_a_huge_line_is_bounded_and_answered_bad_frame() -> None:
    async with stdio("--replay", "64", script="turn") as sc:
        c = sc.client
        await c.send_raw(json.dumps({"id": 1, "cmd": "prompt", "session": "s1", "text": "x" * (9 * 1024 * 1024)}))
        await c.wait_for(lambda: len(c.orphans) == 1)
        assert "longer than" in c.orphans[0]["error"]["message"]
        assert (await c.call("discover"))["agents"][0]["id"] == "mock"


async def test_stdout_that_stops_accepting_writes_ends_serve_with_that_error() -> None:
    read_end, write_end = os.pipe()
    process = await anyio.open_process(serve_argv(), stdout=write_end)
    os.close(write_end)
    async with process:
        assert process.stdin is not None and process.stderr is not None
        hello = await anyio.to_thread.run_sync(os.read, read_end, 65536)
        assert b'"hello"' in hello
        os.close(read_end)  # the reader goes away
        for i in range(50):
            try:
                await process.stdin.send(b'{"id": %d, "cmd": "sessions"}\n' % i)
            except (anyio.BrokenResourceError, OSError):
                break
            await anyio.sleep(0.05)
        with anyio.fail_after(20):
            code = await process.wait()
        stderr = b""
        async for chunk in process.stderr:
            stderr += chunk
        assert code == 1
        assert b"stdout stopped accepting writes" in stderr


async def test_mock_script_errors_are_reported() -> None:
    argv = serve_argv("--mock", "/no/such/script.json")
    result = await anyio.run_process(argv, check=False)
    assert result.returncode == 2 and b"cannot read mock script" in result.stderr


async def test_ui_reports_a_mock_script_it_cannot_read(tmp_path: Path) -> None:
    argv = serve_argv("--mock", "/no/such/script.json")
    argv[argv.index("serve")] = "ui"
    argv += ["--no-browser", "--store", str(tmp_path / "threads.db")]
    with anyio.fail_after(60):
        result = await anyio.run_process(argv, check=False)
    assert result.returncode == 2 and b"cannot read mock script" in result.stderr


async def test_commands_read_before_eof_are_still_answered() -> None:
    async with stdio(script="turn") as sc:
        c = sc.client
        first = await c.request("discover")
        second = await c.request("probe", agent="mock")
        await sc.close_stdin()
        with anyio.fail_after(15):
            assert await sc.process.wait() == 0
        assert (await c.reply(first))["ok"]["agents"][0]["id"] == "mock"
        assert (await c.reply(second))["ok"]["version"] == "mock"
