"""``anyagent.toolkit``, ``anyagent.jsonread``, ``JsonRpcPeer.send_request`` and ``Correlator``:
the pieces every adapter shares, against real subprocesses where a wire is involved."""

from __future__ import annotations

import math
import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from coresupport import Reader
from linessupport import DRIVERS, Plugin, agent

from anyagent import (
    AgentInstallation,
    AgentProfile,
    Cancelled,
    Diagnostic,
    DiagnosticCode,
    Failed,
    ProcessExited,
    ProtocolFailed,
    Runtime,
    SessionOptions,
    TextDelta,
    TurnEnded,
    jsonread,
    seam,
    toolkit,
)
from anyagent.process import spawn
from anyagent.wire import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    Correlator,
    JsonLines,
    JsonRpcCode,
    JsonRpcPeer,
    Notification,
    Response,
    Stray,
)

pytestmark = pytest.mark.anyio

FAKES = Path(__file__).parent / "fakes"


# ---------------------------------------------------------------------------------------------
# jsonread


def test_jsonread_never_raises_and_returns_the_named_type() -> None:
    values: list[Any] = [None, True, 0, 1.5, math.nan, "s", "", [1], {"a": 1}]
    for value in values:
        assert isinstance(jsonread.obj(value), dict)
        assert isinstance(jsonread.arr(value), list)
        assert jsonread.text(value) in (value, None)
        assert isinstance(jsonread.text(value, ""), str)
        assert jsonread.nonempty(value) in (value, None) and jsonread.nonempty("") is None
        assert jsonread.flag(value) is (value is True)
        assert isinstance(jsonread.integer(value, 0), int)
    assert jsonread.integer(True) is None and jsonread.integer(7.9) == 7 and jsonread.integer(math.inf) is None
    assert jsonread.number(True) is None and jsonread.number(3) == 3.0
    assert jsonread.path({"a": {"b": {"c": 1}}}, "a", "b", "c") == 1
    assert jsonread.path({"a": [1]}, "a", "b") is None


# ---------------------------------------------------------------------------------------------
# launching


def request_for(
    tmp_path: Path,
    *,
    args: tuple[str, ...] = (),
    profile_args: tuple[str, ...] = (),
    quirks: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    record: bool = False,
) -> seam.ConnectRequest:
    installation = AgentInstallation(id="t", name="T", executable_path=Path(sys.executable), args=args)
    profile = AgentProfile(id="t", name="T", wire="t", executables=("t",), args=profile_args, quirks=quirks or {})
    options = SessionOptions.in_dir(tmp_path)
    if record:
        options = options.record_wire(tmp_path / "wire.jsonl")
    return seam.ConnectRequest(installation, profile, options, "s1", env or {})


def test_argv_takes_installation_args_then_profile_args_then_defaults(tmp_path: Path) -> None:
    exe = sys.executable
    assert toolkit.launch_argv(request_for(tmp_path, args=("a",), profile_args=("p",)), ["d"]) == [exe, "a"]
    assert toolkit.launch_argv(request_for(tmp_path, profile_args=("p",)), ["d"]) == [exe, "p"]
    assert toolkit.launch_argv(request_for(tmp_path), ["d"]) == [exe, "d"]


def test_the_callers_environment_wins_over_profile_defaults(tmp_path: Path) -> None:
    quirks = {"env": {"FROM_PROFILE": "p", "BOTH": "profile"}, "root_env": {"ROOT_ONLY": "r"}}
    request = request_for(tmp_path, quirks=quirks, env={"BOTH": "caller", "PATH": "/bin"})
    env = toolkit.launch_env(request, {"ADAPTER": "a", "FROM_PROFILE": "adapter"})
    assert env["BOTH"] == "caller" and env["FROM_PROFILE"] == "p" and env["ADAPTER"] == "a"
    assert ("ROOT_ONLY" in env) is (os.geteuid() == 0)
    assert toolkit.launch_env(request_for(tmp_path))["PATH"] == os.environ["PATH"]  # empty env: ours


async def test_a_failed_launch_reaps_its_processes_and_closes_the_recorder(tmp_path: Path) -> None:
    request = request_for(tmp_path, args=("-c", "import time; time.sleep(60)"), record=True)
    with pytest.raises(ProtocolFailed):
        async with toolkit.launching(request) as launch:
            process = await launch.spawn()
            raise ProtocolFailed("the handshake went wrong")
    assert process.status is not None
    assert launch.recorder is not None and launch.recorder._fd == -1
    assert (tmp_path / "wire.jsonl").exists()


async def test_waiting_for_a_listening_line_while_watching_the_process(tmp_path: Path) -> None:
    script = (
        "import time,sys; print('booting'); print('listening on http://127.0.0.1:4242', flush=True); time.sleep(60)"
    )
    process = await spawn([sys.executable, "-c", script], cwd=tmp_path, drain_stdout=True)
    try:
        with anyio.fail_after(10):
            found = await toolkit.wait_for_listening(process, r"listening on (http://\S+)")
        assert found[1] == "http://127.0.0.1:4242"
    finally:
        await process.aclose(grace=0.2)
    dying = await spawn(
        [sys.executable, "-c", "import sys; sys.stderr.write('no port\\n'); sys.exit(4)"],
        cwd=tmp_path,
        drain_stdout=True,
    )
    with pytest.raises(ProcessExited) as info:
        await toolkit.wait_for_listening(dying, "listening", timeout=10)
    assert "no port" in info.value.stderr
    silent = await spawn([sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path, drain_stdout=True)
    try:
        with pytest.raises(ProtocolFailed, match=r"within 0\.2 s"):
            await toolkit.wait_for_listening(silent, "listening", timeout=0.2)
    finally:
        await silent.aclose(grace=0.2)


def test_the_listening_wait_is_woken_by_the_output_not_by_a_clock(tmp_path: Path) -> None:
    """On trio's mock clock, which jumps to the next deadline whenever every task waits, a
    polling wait moves the clock (one jump per poll while the server boots); a wait woken by the
    drained line leaves it where it was, and returns the moment the line is read."""
    trio_testing = pytest.importorskip("trio.testing")
    script = (
        "import time; print('booting', flush=True); time.sleep(0.3);"
        " print('listening on http://127.0.0.1:4242', flush=True); time.sleep(60)"
    )

    async def wait() -> tuple[str, float]:
        process = await spawn([sys.executable, "-c", script], cwd=tmp_path, drain_stdout=True)
        try:
            found = await toolkit.wait_for_listening(process, r"listening on (http://\S+)", timeout=math.inf)
            return found[1], anyio.current_time()
        finally:
            await process.aclose(grace=0.2)

    clock = trio_testing.MockClock(autojump_threshold=0)
    url, now = anyio.run(wait, backend="trio", backend_options={"clock": clock})
    assert url == "http://127.0.0.1:4242"
    assert now == 0.0


async def test_a_listening_line_cut_between_two_chunks_is_read_whole(tmp_path: Path) -> None:
    script = (
        "import sys,time; sys.stdout.write('listening on http://127.0.0.1:42'); sys.stdout.flush(); time.sleep(0.5);"
        " sys.stdout.write('42\\n'); sys.stdout.flush(); time.sleep(60)"
    )
    process = await spawn([sys.executable, "-c", script], cwd=tmp_path, drain_stdout=True)
    try:
        with anyio.fail_after(10):
            found = await toolkit.wait_for_listening(process, r"listening on (http://127\.0\.0\.1:\d+)")
        assert found[1] == "http://127.0.0.1:4242", "the port was read from half a line"
    finally:
        await process.aclose(grace=0.2)


async def test_waiting_for_a_line_reads_the_last_output_of_an_exited_agent(tmp_path: Path) -> None:
    printed = await spawn([sys.executable, "-c", "print('ready at 7', flush=True)"], cwd=tmp_path, drain_stdout=True)
    with anyio.fail_after(10):
        found = await printed.wait_for_line(re.compile(r"ready at (\d+)"))
        assert found is not None and found[1] == "7"
        assert await printed.wait_for_line(re.compile("never printed")) is None
    await printed.aclose()
    undrained = await spawn([sys.executable, "-c", "print('ready at 7')"], cwd=tmp_path)  # stdout not drained
    with anyio.fail_after(10):
        assert await undrained.wait_for_line(re.compile("ready")) is None
    await undrained.aclose()


# ---------------------------------------------------------------------------------------------
# JSON-RPC and correlation


async def test_send_request_answers_arrive_in_wire_order(tmp_path: Path) -> None:
    process = await spawn([sys.executable, str(FAKES / "rpc_agent.py")], cwd=tmp_path)
    try:
        peer = JsonRpcPeer(JsonLines(process))
        with anyio.fail_after(10):
            rid = await peer.send_request("notify_then")
            first_id = await peer.send_request("echo", {"x": 1})
            failed = await peer.send_request("fail", {"y": 2})
            messages = [await peer.receive() for _ in range(6)]
        assert messages[:3] == [Notification("progress", {"n": n}) for n in range(3)]
        assert messages[3] == Response(rid, "notify_then", "done")
        assert messages[4] == Response(first_id, "echo", {"x": 1})
        response = messages[5]
        assert isinstance(response, Response) and response.id == failed and not response.ok
        assert response.error is not None and response.error.code == -32000
        assert await peer.request("echo", 5) == 5  # the waiting kind still works beside it
        reserved = peer.new_id()
        assert await peer.send_request("echo", 6, request_id=reserved) == reserved
        with anyio.fail_after(10):
            assert await peer.receive() == Response(reserved, "echo", 6)
        gone = await peer.send_request("echo", 9)
        peer.forget(gone)
        with anyio.fail_after(10):
            stray = await peer.receive()
        assert isinstance(stray, Stray) and stray.frame["id"] == gone
    finally:
        await process.aclose(grace=0.5)
    assert JsonRpcCode.METHOD_NOT_FOUND == METHOD_NOT_FOUND == -32601 and INTERNAL_ERROR == -32603


async def test_the_correlator_matches_replies_and_fails_waiters() -> None:
    control: Correlator[str] = Correlator()
    first = control.open("ping")
    assert first.startswith("anyagent-") and control.pending(first)
    assert not await control.resolve("someone-else", "x") and not await control.resolve(7, "x")
    got: list[str] = []

    async def callback(reply: str) -> None:
        got.append(reply)

    fire = control.open("usage", on_reply=callback)
    async with anyio.create_task_group() as tg:

        async def answer() -> None:
            await anyio.sleep(0.01)
            assert await control.resolve(first, "pong")
            assert await control.resolve(fire, "quota")

        tg.start_soon(answer)
        assert await control.wait(first, timeout=5) == "pong"
    assert got == ["quota"] and len(control) == 0
    late = control.open("slow")
    assert await control.wait(late, timeout=0.01) is None and not control.pending(late)
    dead = control.open("never")
    control.fail_all(lambda request_id, label: f"{label} failed")
    assert await control.wait(dead, timeout=0.01) is None  # already forgotten by fail_all


async def test_the_request_book_declines_each_request_once() -> None:
    declined: list[str] = []

    async def decline(handle: str) -> None:
        declined.append(handle)

    book: toolkit.RequestBook[str] = toolkit.RequestBook(decline)
    a, b, c = book.add("wire-a"), book.add("wire-b"), book.add("wire-c", "custom")
    assert (a, b, c) == ("r1", "r2", "custom")
    assert book.take(a) == "wire-a" and book.take(a) is None
    assert await book.decline(b) and not await book.decline(b)
    assert book.find(lambda handle: handle == "wire-c") == ["custom"]
    assert await book.decline_all() == ["custom"] and await book.decline_all() == []
    assert declined == ["wire-b", "wire-c"] and len(book) == 0


# ---------------------------------------------------------------------------------------------
# the loop


async def test_the_loop_survives_a_failing_command_swaps_processes_and_refuses_the_rest(tmp_path: Path) -> None:
    async with Runtime(plugins=[Plugin()]) as runtime:
        session, events = await runtime.open(agent("normal"), SessionOptions.in_dir(tmp_path))
        reader = Reader(events)
        async with session:
            await session.prompt("explode")
            turn = await reader.turn()
            codes = [e.kind.diagnostic.code for e in turn if isinstance(e.kind, Diagnostic)]
            assert codes == [DiagnosticCode.COMMAND_FAILED]
            assert isinstance(turn[-1].kind, TurnEnded) and isinstance(turn[-1].kind.stop, Failed)
            await session.prompt("relaunch")
            turn = await reader.turn()
            assert [e.kind for e in turn if isinstance(e.kind, TextDelta)] == [TextDelta("m1", "echo: relaunch")]
            driver = DRIVERS[-1]
            first, second = driver.processes
            assert first.status is not None and second.status is None  # the old one's end was not a death
            await session.prompt("after")
            assert [e.kind for e in await reader.turn() if isinstance(e.kind, TextDelta)] == [
                TextDelta("m1", "echo: after")
            ]
            await session.cancel()  # idle: nothing to cancel
        assert second.status is not None


async def test_refuse_answers_what_the_engine_waits_for() -> None:
    send, receive = seam.event_channel(16)
    commands_tx, commands_rx = seam.unbounded_commands()
    link = seam.DriverLink(commands_rx, send)
    await toolkit.refuse(link, seam.Steer(input=None))  # type: ignore[arg-type]
    await toolkit.refuse(link, seam.Compact())
    await toolkit.refuse(link, seam.Cancel())
    await toolkit.refuse(link, seam.Configure("model", "x"))
    await toolkit.refuse(link, seam.Decline("r1"))
    got = [receive.receive_nowait() for _ in range(5)]
    assert got[0] == seam.SteerResult(False)
    assert isinstance(got[1], seam.Content) and got[1].kind.diagnostic.code == DiagnosticCode.UNSUPPORTED  # type: ignore[union-attr]
    assert isinstance(got[2], seam.TurnEnd) and isinstance(got[2].stop, Failed)
    assert got[3] == seam.TurnEnd(Cancelled())
    assert isinstance(got[4], seam.Content) and got[4].kind.diagnostic.code == DiagnosticCode.CONFIGURE_REFUSED  # type: ignore[union-attr]
    with pytest.raises(anyio.WouldBlock):
        receive.receive_nowait()  # Decline needs nothing
    for stream in (send, receive, commands_tx, commands_rx):
        stream.close()


def test_every_diagnostic_code_has_a_meaning() -> None:
    codes = DiagnosticCode.all()
    assert len(codes) >= 20 and all(codes.values())
    assert codes[DiagnosticCode.STALL].startswith("No frame")


def test_login_methods_run_this_installation_with_the_session_config_home(tmp_path: Path) -> None:
    from anyagent import AgentInstallation, AgentProfile, EnvVarLogin, SessionOptions, TerminalLogin

    profile = AgentProfile(
        id="tiny",
        name="Tiny",
        wire="tiny",
        executables=("tiny",),
        login=(TerminalLogin(("tiny", "login"), "log in"), TerminalLogin(("other", "x")), EnvVarLogin("TINY_KEY")),
        config_home_env="TINY_HOME",
    )
    installation = AgentInstallation.at("tiny", "/opt/tiny/bin/tiny")
    options = SessionOptions.in_dir(tmp_path).config_home(tmp_path / "home")
    first, second, third = toolkit.login_methods(installation, profile, options)
    assert isinstance(first, TerminalLogin) and first.command == ("/opt/tiny/bin/tiny", "login")
    assert first.env == {"TINY_HOME": str(tmp_path / "home")}
    assert isinstance(second, TerminalLogin) and second.command == ("other", "x")  # not this agent's binary
    assert third == EnvVarLogin("TINY_KEY")
    assert toolkit.login_methods(installation, None, options) == ()


async def test_fast_frame_sends_its_event_in_place_of_on_frame() -> None:
    """``DriverLoop(fast_frame=...)``: the event it returns for a frame is sent as is and
    ``on_frame`` does not see that frame; None hands the frame to ``on_frame``; an exception in
    either is one frame the adapter could not handle (a diagnostic), never the end of the
    reading; the order holds."""
    frames: list[Any] = [{"fast": "a"}, {"slow": 1}, {"fastboom": 2}, {"fast": "b"}, {"boom": 3}, {"fast": "c"}]
    handled: list[Any] = []

    def fast(frame: dict[str, Any]) -> seam.DriverEvent | None:
        if "fastboom" in frame:
            raise ValueError("a bug in the fast path")
        return seam.Content(TextDelta("m1", frame["fast"])) if "fast" in frame else None

    async def on_frame(frame: dict[str, Any]) -> None:
        if "boom" in frame:
            raise KeyError("a bug in the translator")
        handled.append(frame)

    async def on_command(command: seam.DriverCommand) -> None:
        pass

    class Source:
        def receive_nowait(self) -> Any:
            if not frames:
                raise anyio.WouldBlock
            return frames.pop(0)

        async def receive(self) -> Any:
            raise anyio.EndOfStream

    loop: toolkit.DriverLoop[dict[str, Any]] = toolkit.DriverLoop(on_frame, on_command, fast_frame=fast)
    commands_tx, commands_rx = anyio.create_memory_object_stream[seam.DriverCommand](math.inf)
    events_tx, events_rx = anyio.create_memory_object_stream[seam.DriverEvent](math.inf)
    link = seam.DriverLink(commands_rx, events_tx)
    loop._link, loop.send = link, link.send  # type: ignore[method-assign]  # what ``run`` does
    await loop._read_frames(Source(), loop._generation, toolkit._Exit())
    assert handled == [{"slow": 1}]
    sent = []
    while True:
        try:
            kind = events_rx.receive_nowait().kind  # type: ignore[union-attr]
        except anyio.WouldBlock:
            break
        sent.append(kind.text if isinstance(kind, TextDelta) else kind.diagnostic.code)
    assert sent == ["a", DiagnosticCode.FRAME_ERROR, "b", DiagnosticCode.FRAME_ERROR, "c"]
    for stream in (commands_tx, commands_rx, events_tx, events_rx):
        stream.close()
