"""anyagent.wire.JsonRpcPeer against a real JSON-RPC agent process (tests/fakes/rpc_agent.py),
on asyncio and trio."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import anyio
import pytest

from anyagent import InvalidRequest, ProcessExited, ProtocolFailed
from anyagent.process import AgentProcess, spawn
from anyagent.wire import (
    METHOD_NOT_FOUND,
    BadLine,
    IncomingRequest,
    JsonLines,
    JsonRpcError,
    JsonRpcPeer,
    Notification,
    Stray,
    WireRecorder,
)

pytestmark = pytest.mark.anyio

RPC_AGENT = Path(__file__).parent / "fakes" / "rpc_agent.py"


@asynccontextmanager
async def peer_for(
    tmp_path: Path, *, accepts: tuple[str, ...] = (), recorder: WireRecorder | None = None, jsonrpc_field: bool = True
) -> AsyncIterator[JsonRpcPeer]:
    fds = len(os.listdir("/proc/self/fd"))
    with anyio.fail_after(15):
        proc = await spawn([sys.executable, str(RPC_AGENT)], cwd=tmp_path, recorder=recorder)
        try:
            yield JsonRpcPeer(JsonLines(proc), accepts=accepts, jsonrpc_field=jsonrpc_field)
        finally:
            await proc.aclose(grace=0.5)
    with anyio.fail_after(5):
        while len(os.listdir("/proc/self/fd")) != fds:
            await anyio.sleep(0.01)


async def test_request_and_response(tmp_path: Path) -> None:
    async with peer_for(tmp_path) as peer:
        assert await peer.request("echo", {"a": [1, "two"]}) == {"a": [1, "two"]}
        assert await peer.request("echo") is None
        assert await peer.request("echo", [1, 2]) == [1, 2]


async def test_error_response_maps_to_a_typed_error(tmp_path: Path) -> None:
    async with peer_for(tmp_path) as peer:
        with pytest.raises(JsonRpcError) as caught:
            await peer.request("fail", {"x": 1})
        error = caught.value
        assert (error.code, error.message, error.data, error.method) == (-32000, "it failed", {"why": {"x": 1}}, "fail")
        assert isinstance(error, ProtocolFailed)
        assert str(error) == "fail failed: it failed (-32000)"
        assert await peer.request("echo", 1) == 1  # the peer is fine afterwards


async def test_notifications_queue_in_order_while_a_request_waits(tmp_path: Path) -> None:
    async with peer_for(tmp_path) as peer:
        assert await peer.request("notify_then") == "done"
        assert [await peer.receive() for _ in range(3)] == [Notification("progress", {"n": n}) for n in range(3)]


async def test_incoming_request_with_a_string_id_is_answered_by_the_consumer(tmp_path: Path) -> None:
    async with peer_for(tmp_path, accepts=("client/pick",)) as peer:
        result: list[object] = []

        async def ask() -> None:
            result.append(await peer.request("ask"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            incoming = await peer.receive()
            assert isinstance(incoming, IncomingRequest)
            assert (incoming.id, incoming.method, incoming.params) == ("srv-1", "client/pick", {"options": ["a", "b"]})
            await incoming.reply({"pick": "b"})
        assert result == [{"pick": "b"}]
        assert isinstance(incoming, IncomingRequest)
        with pytest.raises(InvalidRequest, match="already answered"):
            await incoming.reply({"pick": "a"})


async def test_incoming_request_error_reply(tmp_path: Path) -> None:
    async with peer_for(tmp_path, accepts=("client/pick",)) as peer:
        result: list[object] = []

        async def ask() -> None:
            result.append(await peer.request("ask"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            incoming = await peer.receive()
            assert isinstance(incoming, IncomingRequest)
            await incoming.reply_error(-32002, "user declined", {"reason": "no"})
        assert result == [{"code": -32002, "message": "user declined", "data": {"reason": "no"}}]


async def test_unknown_incoming_request_is_answered_method_not_found(tmp_path: Path) -> None:
    async with peer_for(tmp_path) as peer:
        error = await peer.request("ask_unknown")  # the agent reports what it got back
        assert isinstance(error, dict)
        assert error["code"] == METHOD_NOT_FOUND
        assert "nobody/handles" in error["message"]
        stray = await peer.receive()
        assert isinstance(stray, Stray)
        assert stray.frame["method"] == "nobody/handles"
        assert "answered -32601" in stray.reason


async def test_strays_are_reported_not_fatal(tmp_path: Path) -> None:
    async with peer_for(tmp_path) as peer:
        assert await peer.request("stray") == "ok"
        first, second = await peer.receive(), await peer.receive()
        assert first == Stray({"id": 999, "result": "nobody asked"}, "response to unknown request id 999")
        assert isinstance(second, Stray) and second.frame == {"something": "else"}


async def test_bad_lines_pass_through(tmp_path: Path) -> None:
    async with peer_for(tmp_path) as peer:
        assert await peer.request("garbage") == "after"
        bad = await peer.receive()
        assert isinstance(bad, BadLine) and bad.text == "oops, not json"


async def test_response_id_echoed_as_a_string_still_matches(tmp_path: Path) -> None:
    async with peer_for(tmp_path) as peer:
        assert await peer.request("str_echo") == "same"


async def test_disconnect_fails_every_pending_request(tmp_path: Path) -> None:
    async with peer_for(tmp_path) as peer:
        failures: list[BaseException] = []

        async def hang() -> None:
            try:
                await peer.request("hang")
            except ProcessExited as exc:
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(hang)
            tg.start_soon(hang)
            await anyio.sleep(0.1)
            with pytest.raises(ProcessExited) as caught:
                await peer.request("die")
        assert caught.value.status == "exit status: 3"
        assert caught.value.stderr == "fatal: died on purpose"
        assert [type(exc) for exc in failures] == [ProcessExited, ProcessExited]
        assert failures[0] is not failures[1]  # each waiter gets its own exception
        assert isinstance(peer.ended, ProcessExited)
        with pytest.raises(ProcessExited):
            await peer.request("echo")
        with pytest.raises(ProcessExited):
            await peer.notify("late")
        with pytest.raises(anyio.EndOfStream):
            await peer.receive()
        assert [message async for message in peer] == []


async def test_concurrent_requests_resolve_to_their_own_results(tmp_path: Path) -> None:
    async with peer_for(tmp_path) as peer:
        results: dict[int, object] = {}

        async def one(n: int) -> None:
            results[n] = await peer.request("echo", {"n": n})

        async with anyio.create_task_group() as tg:
            for n in range(25):
                tg.start_soon(one, n)
        assert results == {n: {"n": n} for n in range(25)}


async def test_a_cancelled_request_leaves_the_peer_usable(tmp_path: Path) -> None:
    async with peer_for(tmp_path) as peer:
        with anyio.move_on_after(0.2) as scope:
            await peer.request("hang")
        assert scope.cancelled_caught
        assert await peer.request("echo", "next") == "next"


async def test_reader_loop_and_requests_in_separate_tasks(tmp_path: Path) -> None:
    """The Driver.run shape: one task iterates messages, another sends requests."""
    async with peer_for(tmp_path) as peer:
        seen: list[object] = []

        async def reader() -> None:
            async for message in peer:
                seen.append(message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            assert await peer.request("notify_then") == "done"
            await peer.notify("client/hello", {"x": 1})
            assert await peer.request("echo", 2) == 2
            with anyio.fail_after(5):
                while len(seen) < 4:
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
        assert seen == [
            *[Notification("progress", {"n": n}) for n in range(3)],
            Notification("seen_notification", {"method": "client/hello", "params": {"x": 1}}),
        ]


async def test_sent_frames_carry_jsonrpc_unless_disabled(tmp_path: Path) -> None:
    for field in (True, False):
        path = tmp_path / f"rec-{field}.jsonl"
        recorder = WireRecorder.open(path)
        async with peer_for(tmp_path, recorder=recorder, jsonrpc_field=field) as peer:
            await peer.request("echo", {"k": 1})
            await peer.notify("note")
        recorder.close()
        sent = [json.loads(line)["_sent"] for line in path.read_text().splitlines() if line.startswith('{"_sent"')]
        base = {"jsonrpc": "2.0"} if field else {}
        assert sent == [{**base, "id": 1, "method": "echo", "params": {"k": 1}}, {**base, "method": "note"}]


async def test_receive_nowait_never_holds_back_an_automatic_answer() -> None:
    """A reader that takes buffered messages with ``receive_nowait`` and waits with ``receive``
    only when told to still answers an unhandled request at once (the agent waits for that
    answer before it writes again)."""
    answered = anyio.Event()
    sent: list[bytes] = []

    class Stdin:
        async def send(self, data: bytes) -> None:
            sent.append(data)
            answered.set()

    class Stdout:
        def __init__(self) -> None:
            self.chunks = [
                b'{"method":"a"}\n{"id":7,"method":"nobody/handles"}\n{"method":"b"}\n',
                b'{"method":"after the answer"}\n',
            ]

        async def receive(self, max_bytes: int = 65536) -> bytes:
            await anyio.lowlevel.checkpoint()
            if len(self.chunks) == 1:
                await answered.wait()  # the agent waits for its answer
            if not self.chunks:
                raise anyio.EndOfStream
            return self.chunks.pop(0)

    fake = SimpleNamespace(stdout=Stdout(), stdin=Stdin(), max_line=4096, recorder=None)
    peer = JsonRpcPeer(JsonLines(cast(AgentProcess, fake)))
    got: list[object] = []
    with anyio.fail_after(5):
        while len(got) < 4:
            try:
                got.append(peer.receive_nowait())
            except anyio.WouldBlock:
                got.append(await peer.receive())
    assert got[0] == Notification("a") and isinstance(got[1], Stray) and got[2] == Notification("b")
    assert got[3] == Notification("after the answer")
    assert json.loads(sent[0])["id"] == 7 and json.loads(sent[0])["error"]["code"] == METHOD_NOT_FOUND
