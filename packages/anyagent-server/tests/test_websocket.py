"""`anyagent serve --listen` (a real subprocess) with WebSocket clients on asyncio and trio.

The stdio scenarios over a WebSocket, plus the security checks (no token, wrong token, a foreign
Origin: refused before any frame), reconnect with the last sequence (every event once), a replay
gap past the buffer (typed error), several watchers with one controller.
A client that stops reading lags once the loopback socket's buffers (tens of MB) are full: the lag
test floods 64 KiB deltas so that happens within the flood.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import anyio
import pytest
from sidecar_client import ServerError, kind_of, serve_argv, texts, ws_connect, ws_server

pytestmark = pytest.mark.anyio


async def test_open_prompt_permission_answer_turn_end_close(tmp_path: Path) -> None:
    async with ws_server(script="turn", token_file=tmp_path / "token") as server, ws_connect(server) as conn:
        c = conn.client
        assert c.hello == {"protocol": 1, "anyagent": c.hello["anyagent"], "server": c.hello["server"]}
        _, s = await c.open()
        await c.call("prompt", session=s.id, text="hi")
        await s.until("RequestOpened")
        await c.call("answer", session=s.id, request="r1", answer={"Permission": "AllowOnce"})
        assert texts(await s.until("TurnEnded")) == ["Done."]
        await c.call("close", session=s.id)
        await s.wait_closed()
        assert s.closed_count == 1
        with pytest.raises(ServerError) as caught:
            await c.call("prompt", session=s.id, text="again")
        assert caught.value.kind == "SessionClosed"


async def test_the_token_file_is_private_and_holds_the_token(tmp_path: Path) -> None:
    async with ws_server(script="turn", token_file=tmp_path / "token") as server:
        assert server.token_file.read_text().strip() == server.token
        if sys.platform != "win32":
            assert stat.S_IMODE(os.stat(server.token_file).st_mode) == 0o600


@pytest.mark.parametrize(
    ("token", "origin"),
    [(None, None), ("wrong", None), ("", "https://evil.example")],
    ids=["no-token", "wrong-token", "foreign-origin"],
)
async def test_a_connection_without_the_token_or_from_another_origin_is_refused(
    tmp_path: Path, token: str | None, origin: str | None
) -> None:
    from httpx_ws import WebSocketUpgradeError

    async with ws_server(script="turn", token_file=tmp_path / "token") as server:
        with pytest.raises(WebSocketUpgradeError) as caught:
            async with ws_connect(server, token=token, origin=origin, check=False):
                pass
        assert caught.value.response.status_code == 403


async def test_an_allowed_origin_and_the_browser_subprotocol_token_are_accepted(tmp_path: Path) -> None:
    args = ("--allow-origin", "http://localhost:5173")
    async with ws_server(*args, script="turn", token_file=tmp_path / "token") as server:
        protocols = ["anyagent.v1", f"anyagent-token.{server.token}"]
        async with ws_connect(server, token=None, origin="http://localhost:5173", subprotocols=protocols) as conn:
            assert (await conn.client.call("discover"))["agents"][0]["id"] == "mock"


async def test_two_sessions_interleave_each_in_order(tmp_path: Path) -> None:
    async with ws_server(script="chatter", token_file=tmp_path / "token") as server, ws_connect(server) as conn:
        c = conn.client
        _, a = await c.open()
        _, b = await c.open()
        await c.call("prompt", session=a.id, text="x")
        await c.call("prompt", session=b.id, text="y")
        for s in (a, b):
            events = await s.until("TurnEnded")
            assert all(e["session_id"] == s.id for e in events)
            assert texts(events) == ["one", "two", "three"]


async def test_bad_lines_and_unknown_sessions(tmp_path: Path) -> None:
    async with ws_server(script="turn", token_file=tmp_path / "token") as server, ws_connect(server) as conn:
        c = conn.client
        await c.send_raw("{truncated")
        await c.wait_for(lambda: len(c.orphans) == 1)
        assert c.orphans[0]["error"]["kind"] == "BadFrame"
        with pytest.raises(ServerError) as caught:
            await c.call("close", session="s42")
        assert caught.value.kind == "UnknownSession"


async def test_the_agent_dying_mid_turn(tmp_path: Path) -> None:
    async with ws_server(script="die", token_file=tmp_path / "token") as server, ws_connect(server) as conn:
        c = conn.client
        _, s = await c.open()
        await c.call("prompt", session=s.id, text="go")
        assert set((await s.until("TurnEnded"))[-1]["kind"]["TurnEnded"]["stop"]) == {"Failed"}
        with pytest.raises(ServerError) as caught:
            await s.drain()
        assert caught.value.kind == "ProcessExited" and caught.value.body["status"] == "9"


async def test_configure_is_answered_by_session_updated(tmp_path: Path) -> None:
    async with ws_server(script="configure", token_file=tmp_path / "token") as server, ws_connect(server) as conn:
        c = conn.client
        _, s = await c.open()
        await c.call("configure", session=s.id, option="model", value="opus")
        updated = (await s.until("SessionUpdated"))[-1]["kind"]["SessionUpdated"]
        assert updated["configuration"]["options"]["model"] == "opus"


async def test_a_flood_arrives_whole_and_a_reconnect_mid_flood_gets_every_event_once(tmp_path: Path) -> None:
    # a buffer larger than the flood: the reconnect may take its time on a loaded machine
    async with ws_server("--replay", "30000", script="flood", token_file=tmp_path / "token") as server:
        async with ws_connect(server) as first:
            _, s = await first.client.open()
            await first.client.call("prompt", session=s.id, text="go")
            await first.client.wait_for(lambda: len(s.events) >= 3000)
        seen = list(s.events)  # the connection dropped mid-flood; the session goes on
        last = seen[-1]["sequence"]
        await anyio.sleep(0.2)
        async with ws_connect(server) as second:
            c = second.client
            info = await c.call("attach", session=s.id, after=last)
            assert info["id"] == s.id
            rest = await c.view(s.id).until("TurnEnded")
        events = seen + rest
        sequences = [e["sequence"] for e in events]
        assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))  # none lost, none twice
        assert len(texts(events)) == 20_000


async def test_attach_past_the_replay_buffer_is_a_replay_gap(tmp_path: Path) -> None:
    async with ws_server("--replay", "100", script="flood", token_file=tmp_path / "token") as server:
        async with ws_connect(server) as first:
            _, s = await first.client.open()
            await first.client.call("prompt", session=s.id, text="go")
            await s.until("TextDelta")
        await anyio.sleep(1.0)  # hundreds of events leave the 100-line buffer meanwhile
        async with ws_connect(server) as second:
            with pytest.raises(ServerError) as caught:
                await second.client.call("attach", session=s.id, after=1)
            assert caught.value.kind == "ReplayGap"
            listed = await second.client.call("sessions")
            assert [entry["id"] for entry in listed] == [s.id]


async def test_several_watchers_see_the_same_session_and_one_controls_it(tmp_path: Path) -> None:
    async with (
        ws_server(script="turn", token_file=tmp_path / "token") as server,
        ws_connect(server) as owner,
        ws_connect(server) as watcher,
    ):
        _, s = await owner.client.open()
        await watcher.client.call("attach", session=s.id, after=0)
        await owner.client.call("prompt", session=s.id, text="hi")
        await s.until("RequestOpened")
        w = watcher.client.view(s.id)
        await w.until("RequestOpened")
        with pytest.raises(ServerError) as caught:
            await watcher.client.call("answer", session=s.id, request="r1", answer={"Permission": "DenyOnce"})
        assert caught.value.kind == "NotController"
        await owner.client.call("answer", session=s.id, request="r1", answer={"Permission": "AllowOnce"})
        for view in (s, w):
            assert texts(await view.until("TurnEnded")) == ["Done."]
        upto = min(len(s.events), len(w.events))  # lines after TurnEnded may still be on their way
        assert [e["sequence"] for e in s.events[:upto]] == [e["sequence"] for e in w.events[:upto]]


async def test_control_passes_when_the_controller_leaves(tmp_path: Path) -> None:
    async with ws_server(script="turn", token_file=tmp_path / "token") as server, ws_connect(server) as watcher:
        async with ws_connect(server) as owner:
            _, s = await owner.client.open()
            await watcher.client.call("attach", session=s.id, after=0)
            await owner.client.call("prompt", session=s.id, text="hi")
            await s.until("RequestOpened")
        w = watcher.client.view(s.id)
        await w.until("RequestOpened")
        await watcher.client.call("answer", session=s.id, request="r1", answer={"Permission": "AllowOnce"})
        assert texts(await w.until("TurnEnded")) == ["Done."]


async def test_listen_refuses_a_non_loopback_address_without_the_flag(tmp_path: Path) -> None:
    argv = serve_argv("--listen", "0.0.0.0:0", "--token-file", str(tmp_path / "token"))
    result = await anyio.run_process(argv, check=False)
    assert result.returncode == 2
    assert b"not a loopback address" in result.stderr and b"--allow-remote" in result.stderr


def test_kind_of_reads_both_forms() -> None:
    assert kind_of({"kind": "ContextCompacted"}) == "ContextCompacted"
    assert kind_of({"kind": {"TextDelta": {}}}) == "TextDelta"


async def test_a_client_that_lags_gets_its_session_closed_with_the_lag_error_others_go_on(tmp_path: Path) -> None:
    # 2 000 deltas of 64 KiB (128 MiB): more than the kernel's socket buffers and the client's queue hold
    delta = {"Emit": {"TextDelta": {"message_id": "m1", "text": "x" * 65536}}}
    script = tmp_path / "big.json"
    script.write_text(
        json.dumps(
            {"turns": [[{"Repeat": {"times": 2000, "steps": [delta]}}, {"End": {"Completed": {"source": "Protocol"}}}]]}
        )
    )
    args = ("--mock", str(script), "--replay", "64")
    async with (
        ws_server(*args, script=None, token_file=tmp_path / "token") as server,
        ws_connect(server) as other,
        ws_connect(server, queue_size=4) as slow,
    ):
        _, quiet = await other.client.open()
        _, flood = await slow.client.open()
        await slow.client.call("prompt", session=flood.id, text="go")
        slow.pause()  # from the prompt's reply on, this client reads nothing
        await anyio.sleep(3.0)
        # while the slow client is stuck, the other one is served
        info = await other.client.call("info", session=quiet.id)
        assert info["id"] == quiet.id and not quiet.closed
        slow.resume()
        with pytest.raises(ServerError) as caught:
            await flood.until("TurnEnded")
        assert caught.value.kind == "SessionClosed" and "behind" in caught.value.body["message"]
        assert caught.value.body["lagged"] is True
        await flood.wait_closed()
        assert flood.closed_count == 1
        assert len(texts(flood.events)) < 2000
        # the other client's session goes on, and the slow client's connection still works
        assert (await other.client.call("info", session=quiet.id))["id"] == quiet.id and not quiet.closed
        _, again = await slow.client.open()
        assert again.id not in (quiet.id, flood.id)
