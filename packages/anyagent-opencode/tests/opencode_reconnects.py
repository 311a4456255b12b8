"""The event stream cut mid-turn: what the live tier (the real server behind ``opencode_cutproxy.py``)
and the recorded tier (the replayer playing what the live tier recorded) share.

``reconnects`` runs one session through the drops of the issue's scenarios and asserts what the
user sees. Live, ``Cut`` drives the proxy and the fake model's replies are queued; replayed, both
are None (the recording holds the drops: each ``sse_end`` ends a stream, the reconnect that
follows gets the recorded resync answers).
"""

from __future__ import annotations

import json
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx
from anyio.streams.buffered import BufferedByteReceiveStream
from opencode_harness import WAIT, server_password

from anyagent import (
    Answer,
    Cancelled,
    ChoicesAnswer,
    Completed,
    ContextUsage,
    MessageEnded,
    PermissionChoice,
    PermissionRequest,
    QuestionRequest,
    RequestOpened,
    Session,
    TextDelta,
    ToolKind,
    ToolStatus,
    ToolUpdated,
    TurnEnded,
)
from anyagent_opencode import OpencodeDriver
from anyagent_testkit.events import EventReader, kinds, text_of
from anyagent_testkit.fakemodel import ECHO_PREFIX, TOOL_DONE_PREFIX, FakeModel, Reply

PROXY = Path(__file__).with_name("opencode_cutproxy.py")

QUESTION = {
    "question": "Which colour?",
    "header": "Colour",
    "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
}


def write_cut_shim(directory: Path, real: Path, control_file: Path) -> Path:
    """An executable ``directory/opencode`` that runs ``real`` behind the cut proxy."""
    directory.mkdir(parents=True, exist_ok=True)
    shim = directory / "opencode"
    argv = [sys.executable, str(PROXY), "--real", str(real), "--control-file", str(control_file), "--"]
    shim.write_text(f'#!/bin/sh\nexec {shlex.join(argv)} "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return shim


@attrs.define
class Cut:
    """The test's end of ``opencode_cutproxy.py``'s control connection (see its docstring)."""

    control_file: Path

    async def __call__(self, command: str) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            while not self.control_file.exists():  # a tiny local file, polled
                await anyio.sleep(0.02)
            port = int(self.control_file.read_text())
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(command.encode() + b"\n")
                line = await BufferedByteReceiveStream(stream).receive_until(b"\n", 65536)
        reply: dict[str, Any] = json.loads(line)
        return reply

    async def streams_opened(self, count: int) -> None:
        """Wait until the adapter has opened ``count`` event streams through the proxy."""
        with anyio.fail_after(WAIT):
            while (await self("stats"))["opened"] < count:
                await anyio.sleep(0.02)

    async def idle_upstream(self, session: Session) -> None:
        """Wait until the real server (asked directly, not through the proxy) says the session is idle."""
        driver = session._engine.driver
        assert isinstance(driver, OpencodeDriver)
        port = (await self("stats"))["upstream"]
        auth = ("opencode", server_password(driver.process.pid).decode())
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", auth=auth, trust_env=False) as http:
            with anyio.fail_after(WAIT):
                while True:
                    status = (await http.get("/session/status")).json().get(driver.session_id, {})
                    if status.get("type", "idle") == "idle":
                        return
                    await anyio.sleep(0.05)


@attrs.define
class Stage:
    session: Session
    reader: EventReader
    cut: Cut | None
    model: FakeModel | None

    def queue(self, *replies: Reply) -> None:
        if self.model is not None:
            self.model.queue(*replies)

    async def proxy(self, *commands: str) -> list[dict[str, Any]]:
        """Send ``commands`` to the proxy (live only)."""
        return [await self.cut(command) for command in commands] if self.cut is not None else []


def slow_text(chunks: int) -> str:
    """What the fake model's ``Reply.slow(chunks)`` says."""
    return "".join(f"slow{index} " for index in range(chunks))


def deltas(events: list[Any]) -> list[str]:
    return [e.kind.text for e in events if isinstance(e.kind, TextDelta)]


def one_end(events: list[Any]) -> Any:
    """The stop reason of the one ``TurnEnded`` in ``events`` (fails on none or two)."""
    ends = kinds(events, TurnEnded)
    assert len(ends) == 1, ends
    return ends[0].stop


def opened(events: list[Any]) -> list[Any]:
    return [k.request for k in kinds(events, RequestOpened)]


async def _rest_of_turn(stage: Stage, start: int) -> list[Any]:
    await stage.reader.turn()
    with anyio.move_on_after(0.3):  # a second TurnEnded would come now
        while True:
            await stage.reader.next(statuses=True)
    return stage.reader.seen[start:]


async def reconnects(stage: Stage) -> None:
    """(1) a drop while the reply streams, down for about five chunks; (2) a drop just before
    ``permission.asked`` (the event lost) and one just after it (the resync lists it again), a
    question lost the same way, then a permission a cancel left listed and a later drop; (3) the
    turn's end, then a whole turn, while the stream is down; (5) a drop while a Task-tool
    subagent streams. Each: all text once and in order, each request once, one ``TurnEnded``."""
    # (1)
    stage.queue(Reply.slow(16, 0.12))
    start = len(stage.reader.seen)
    await stage.session.prompt("stream something")
    await stage.reader.kind(TextDelta)
    await stage.reader.kind(TextDelta)
    if stage.cut is not None:
        await stage.cut("hold")
        assert (await stage.cut("cut"))["cut"] == 1
        await anyio.sleep(0.6)  # about five chunks stream while nobody listens
        assert (await stage.cut("release"))["released"] == 1
    events = await _rest_of_turn(stage, start)
    assert text_of(events) == slow_text(16), deltas(events)
    assert isinstance(one_end(events), Completed)
    assert len(kinds(events, MessageEnded)) == 1 and kinds(events, ContextUsage)

    # (2)
    for cut, word in (("cut_before", "lost"), ("cut_after", "seen")):
        start = len(stage.reader.seen)
        await stage.proxy(f"{cut} permission.asked")
        await stage.session.prompt(f"RUN echo {word}")
        await stage.proxy("wait")
        request = await stage.reader.kind(RequestOpened)
        assert isinstance(request.request, PermissionRequest)
        await stage.session.answer(request.request.id, Answer.permission(PermissionChoice.ALLOW_ONCE))
        events = await _rest_of_turn(stage, start)
        assert len(opened(events)) == 1, (cut, opened(events))
        assert isinstance(one_end(events), Completed)
        assert text_of(events).endswith(TOOL_DONE_PREFIX + word), text_of(events)
        tools = [k.tool for k in kinds(events, ToolUpdated)]
        assert tools and tools[-1].status is ToolStatus.COMPLETED, tools
    # a question lost the same way: the resync reads it from GET /question
    stage.queue(Reply.tool("question", questions=[QUESTION]))
    start = len(stage.reader.seen)
    await stage.proxy("cut_before question.asked")
    await stage.session.prompt("ask me")
    await stage.proxy("wait")
    question = await stage.reader.kind(RequestOpened)
    assert isinstance(question.request, QuestionRequest)
    assert [c.label for c in question.request.questions[0].choices] == ["Red", "Blue"]
    await stage.session.answer(question.request.id, Answer.question([ChoicesAnswer(("Blue",))]))
    events = await _rest_of_turn(stage, start)
    assert len(opened(events)) == 1 and isinstance(one_end(events), Completed)
    assert "Blue" in text_of(events)
    await stage.session.prompt("RUN echo stale")
    await stage.reader.kind(RequestOpened)
    await stage.session.cancel()
    assert isinstance(kinds(await stage.reader.turn(), TurnEnded)[-1].stop, Cancelled)
    # opencode still lists that permission (GET /permission): the resync must not reopen it
    stage.queue(Reply.slow(6, 0.1))
    start = len(stage.reader.seen)
    await stage.session.prompt("more")
    await stage.reader.kind(TextDelta)
    await stage.proxy("cut")
    events = await _rest_of_turn(stage, start)
    assert opened(events) == [], opened(events)
    assert text_of(events) == slow_text(6) and isinstance(one_end(events), Completed)

    # (3)
    stage.queue(Reply.slow(5, 0.1))
    start = len(stage.reader.seen)
    await stage.session.prompt("end while away")
    await stage.reader.kind(TextDelta)
    if stage.cut is not None:
        await stage.cut("hold")
        await stage.cut("cut")
        await stage.cut.idle_upstream(stage.session)
        await stage.cut("release")
    events = await _rest_of_turn(stage, start)
    assert text_of(events) == slow_text(5), deltas(events)
    assert isinstance(one_end(events), Completed)
    assert len(kinds(events, MessageEnded)) == 1 and kinds(events, ContextUsage)
    # down before the prompt: busy, text and idle all happen while nobody listens
    start = len(stage.reader.seen)
    await stage.proxy("hold", "cut")
    await stage.session.prompt("all while away")
    if stage.cut is not None:
        await anyio.sleep(0.5)  # the prompt reaches the server, which answers and goes idle
        await stage.cut.idle_upstream(stage.session)
        await stage.cut("release")
    events = await _rest_of_turn(stage, start)
    assert text_of(events) == ECHO_PREFIX + "all while away", text_of(events)
    assert isinstance(one_end(events), Completed)
    assert len(kinds(events, MessageEnded)) == 1 and kinds(events, ContextUsage)

    # (5) a drop while a Task-tool subagent streams (its child session's text is cut mid-part)
    stage.queue(Reply.tool("task", description="sub job", prompt="SLOW 8", subagent_type="general"))
    start = len(stage.reader.seen)
    await stage.proxy("hold", 'cut_after "delta":"slow1 "')
    await stage.session.prompt("delegate it")
    if stage.cut is not None:
        await stage.cut("wait")
        await anyio.sleep(0.7)  # about three chunks of the child's stream while nobody listens
        await stage.cut("release")
    events = await _rest_of_turn(stage, start)
    task = [t.tool for t in kinds(events, ToolUpdated) if t.tool.kind is ToolKind.SUBAGENT]
    assert task and task[-1].status is ToolStatus.COMPLETED, task
    assert text_of(events, task[-1].id) == slow_text(8), [d for d in deltas(events)]
    assert isinstance(one_end(events), Completed)
    if stage.cut is not None:
        assert (await stage.cut("stats"))["opened"] == 9  # the first stream and eight reconnects
