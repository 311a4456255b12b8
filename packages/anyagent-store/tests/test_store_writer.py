"""When the recording's writer thread writes: during a flood that never lets the event loop sleep, and when
the app holds the stream in the middle of a message."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from storesupport import read_turn

from anyagent import Runtime, SessionOptions, TextDelta, TurnEnded
from anyagent.mock import Script, Step, completed, text
from anyagent_store import Store, StoreError
from anyagent_store._store import Recording

pytestmark = pytest.mark.anyio


async def test_the_writer_writes_while_a_flood_keeps_the_loop_busy(
    store: Store, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an in-process flood never lets the loop sleep: a writer thread that waited for the GIL on its own
    # got it only when the flood ended (and cost the reader a wake-up each time the loop let go of it);
    # the stream's checkpoints let it in, so writes come while the flood runs
    n = 100_000
    script = Script(buffer=1024).turn([Step.repeat(n, Step.emit(text("m1", "w "))), Step.end(completed())])
    read = [0]
    written_at: list[int] = []  # how many deltas the reader had read when each write began
    write = Recording._write

    def counting(self: Recording, batch: Any, fields: Any) -> None:
        written_at.append(read[0])
        write(self, batch, fields)

    monkeypatch.setattr(Recording, "_write", counting)
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        async with session, store.record(session, events, flush_interval=0.02) as recording:
            await recording.prompt("go")
            with anyio.fail_after(60):
                async for event in recording:
                    if isinstance(event.kind, TextDelta):
                        read[0] += 1
                    if isinstance(event.kind, TurnEnded):
                        break
        history = await store.history(recording.thread)
    during = [at for at in written_at if n // 10 <= at <= n * 9 // 10]
    assert len(during) >= 2, written_at
    stored = "".join(s.event.kind.text for s in history if s.event and isinstance(s.event.kind, TextDelta))  # type: ignore[union-attr]
    assert stored == "w " * n


async def test_deltas_read_before_the_app_holds_the_stream_are_written(store: Store, tmp_path: Any) -> None:
    # the app reads five deltas of one message and then holds the stream (no checkpoint comes): what the
    # tap gathered of the run is still published and written within a few flush intervals
    script = Script().turn(
        [
            *(Step.emit(text("m1", f"w{i} ")) for i in range(5)),
            Step.sleep(1),  # the agent goes on later; what the app holds is stored meanwhile
            Step.emit(text("m1", "later")),
            Step.end(completed()),
        ]
    )
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        async with session, store.record(session, events, flush_interval=0.05) as recording:
            await recording.prompt("go")
            said = ""
            with anyio.fail_after(30):
                while said != "w0 w1 w2 w3 w4 ":
                    event = await recording.__anext__()
                    if isinstance(event.kind, TextDelta):
                        said += event.kind.text
                stored = ""
                while stored != said:  # the app holds the stream: it reads no further
                    await anyio.sleep(0.05)
                    history = await store.history(recording.thread)
                    stored = "".join(
                        s.event.kind.text  # type: ignore[union-attr]
                        for s in history
                        if s.event is not None and isinstance(s.event.kind, TextDelta)
                    )
                rest = await read_turn(recording)
    assert [e.kind.text for e in rest if isinstance(e.kind, TextDelta)] == ["later"]


async def test_a_writer_that_breaks_fails_the_recording_and_never_the_session(
    store: Store, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a bug in the writer thread (not the database): flush and the block end raise it typed, nobody waits
    # for a round that will not come, and the app keeps reading the session
    def broken(self: Recording, *args: Any) -> None:
        raise RuntimeError("writer bug")

    monkeypatch.setattr(Recording, "_absorb", broken)
    script = Script().turn([Step.repeat(500, Step.emit(text("m1", "w "))), Step.end(completed())])
    script = script.turn([Step.emit(text("m2", "again")), Step.end(completed())])
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        async with session:
            recording = store.record(session, events, flush_interval=0.02)
            with pytest.raises(StoreError, match="writer bug"), anyio.fail_after(30):
                async with recording:
                    await recording.prompt("go")
                    first = await read_turn(recording)
                    with pytest.raises(StoreError, match="writer bug"):
                        await recording.flush()
                    await recording.prompt("more")
                    second = await read_turn(recording)
            assert sum(isinstance(e.kind, TextDelta) for e in first) >= 1
            assert [e.kind.text for e in second if isinstance(e.kind, TextDelta)] == ["again"]
            assert session.status().value == "idle"
