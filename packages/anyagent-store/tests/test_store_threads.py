"""Record → list → reopen with history → fork → export, on SQLite and PostgreSQL, asyncio and trio."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import attrs
import pytest
from storesupport import chatty_script, read_turn, record_turns

from anyagent import (
    Capability,
    ContextUsage,
    Diagnostic,
    Event,
    Runtime,
    SessionOptions,
    TextDelta,
    ToolUpdated,
    TurnEnded,
    UnsupportedFeature,
    UserMessage,
    serialize,
)
from anyagent.mock import Script, Step, completed, text
from anyagent_store import (
    PROMPT_EXTENSION,
    OriginKind,
    Store,
    StoreError,
    Thread,
    ThreadNotFound,
    ThreadStatus,
)

pytestmark = pytest.mark.anyio


async def test_record_stores_every_event_read_with_the_threads_facts(store: Store) -> None:
    async with Runtime.with_mock(chatty_script()) as runtime:
        recording = await record_turns(store, runtime, ["fix the bug\nin parser.py", "and the tests"])
    thread = await store.thread(recording.thread.id)
    assert thread.agent_id == "mock"
    assert thread.title == "fix the bug"
    assert thread.cwd == "/tmp"
    assert thread.status is ThreadStatus.IDLE
    assert thread.resume_token and thread.resume_token.startswith("mock-")
    assert (thread.used_tokens, thread.window_tokens, thread.cost_usd) == (200, 200_000, 0.02)
    stored = await store.history(thread)
    assert [s.position for s in stored] == list(range(1, thread.event_count + 1))
    events = [s.event for s in stored]
    assert all(e is not None for e in events)
    prompts = [e.kind.text for e in events if e is not None and isinstance(e.kind, UserMessage)]
    assert prompts == ["fix the bug\nin parser.py", "and the tests"]
    assert all(PROMPT_EXTENSION in e.extensions for e in events if e is not None and isinstance(e.kind, UserMessage))
    said = "".join(e.kind.text for e in events if e is not None and isinstance(e.kind, TextDelta))
    assert said == "answer 1 done.answer 2 done."
    assert sum(1 for e in events if e is not None and isinstance(e.kind, TurnEnded)) == 2


async def test_list_filter_search_and_page(store: Store) -> None:
    async with Runtime.with_mock(chatty_script(turns=1)) as runtime:
        ids = []
        for n in range(7):
            recording = await record_turns(store, runtime, [f"task number {n}"], cwd=f"/work/{n % 2}")
            ids.append(recording.thread.id)
    newest = await store.threads(limit=3)
    assert [t.id for t in newest.threads] == ids[::-1][:3]
    assert newest.next_cursor is not None
    rest = await store.threads(limit=10, cursor=newest.next_cursor)
    assert [t.id for t in rest.threads] == ids[::-1][3:]
    assert rest.next_cursor is None
    assert {t.id for t in (await store.threads(cwd="/work/1")).threads} == {ids[1], ids[3], ids[5]}
    assert [t.id for t in (await store.threads(title="NUMBER 4")).threads] == [ids[4]]
    assert len((await store.threads(text="answer 1")).threads) == 7  # said in every thread
    assert (await store.threads(text="100%_")).threads == ()  # wildcards are literal
    assert (await store.threads(agent="claude")).threads == ()
    assert len((await store.threads(status=ThreadStatus.IDLE)).threads) == 7
    assert (await store.threads(status=[ThreadStatus.FAILED, ThreadStatus.WORKING])).threads == ()
    later = datetime.now(timezone.utc) + timedelta(seconds=5)
    assert (await store.threads(since=later)).threads == ()
    assert len((await store.threads(until=later, limit=50)).threads) == 7
    await store.archive(ids[0])
    assert ids[0] not in {t.id for t in (await store.threads()).threads}
    assert [t.id for t in (await store.threads(archived=True)).threads] == [ids[0]]
    await store.delete(ids[1])
    with pytest.raises(ThreadNotFound):
        await store.thread(ids[1])
    assert await store.history(ids[2])  # the others keep their events
    assert (await store.thread(ids[2][:8])).id == ids[2]  # a unique prefix names a thread
    with pytest.raises(ThreadNotFound, match="no such thread"):
        await store.thread("zzzzzzzz")


async def test_reopen_replays_history_then_goes_live_without_repeats(store: Store) -> None:
    async with Runtime.with_mock(chatty_script(turns=1)) as runtime:
        first = await record_turns(store, runtime, ["first question"])
    stored_before = await store.history(first.thread)
    # on resume this agent replays the earlier message m1 (as ACP's session/load does) before going live
    replaying = (
        Script(capabilities=(Capability.RESUME,))
        .agent_turn([Step.emit(text("m1", "answer 1 done.")), Step.end(completed())])
        .turn([Step.emit(text("m9", "second answer")), Step.end(completed())])
    )
    async with Runtime.with_mock(replaying) as runtime:
        recording = await store.reopen(runtime, first.thread.id)
        async with recording:
            history = []
            for _ in range(len(stored_before)):
                history.append(await recording.__anext__())
            assert [serialize.dumps(e) for e in history] == [s.raw for s in stored_before]
            await recording.prompt("second question")
            live = await read_turn(recording)
            # the replayed agent turn's TurnEnded may come before the prompt's turn: read on to m9's end
            while not any(isinstance(e.kind, TextDelta) and e.kind.message_id == "m9" for e in live):
                live += await read_turn(recording)
    texts = [e.kind.text for e in live if isinstance(e.kind, TextDelta)]
    assert texts == ["second answer"]  # m1 was not shown twice
    thread = await store.thread(first.thread.id)
    after = await store.history(thread)
    assert [s.raw for s in after[: len(stored_before)]] == [s.raw for s in stored_before]
    said = [s.event.kind.text for s in after if s.event and isinstance(s.event.kind, (TextDelta, UserMessage))]
    assert said == ["first question", "answer 1 ", "done.", "second question", "second answer"]


async def test_reopen_without_history_yields_only_new_events_and_still_drops_replays(store: Store) -> None:
    async with Runtime.with_mock(chatty_script(turns=1)) as runtime:
        first = await record_turns(store, runtime, ["first question"])
    stored_before = await store.history(first.thread)
    replaying = (
        Script(capabilities=(Capability.RESUME,))
        .agent_turn([Step.emit(text("m1", "answer 1 done.")), Step.end(completed())])
        .turn([Step.emit(text("m9", "second answer")), Step.end(completed())])
    )
    async with Runtime.with_mock(replaying) as runtime:
        recording = await store.reopen(runtime, first.thread.id, history=False)
        async with recording:
            await recording.prompt("second question")
            live = await read_turn(recording)
            while not any(isinstance(e.kind, TextDelta) and e.kind.message_id == "m9" for e in live):
                live += await read_turn(recording)
    # the first event read is live (no stored one), and the replayed m1 is dropped though never shown
    assert serialize.dumps(live[0]) not in {s.raw for s in stored_before}
    assert [e.kind.text for e in live if isinstance(e.kind, TextDelta)] == ["second answer"]
    thread = await store.thread(first.thread.id)
    after = await store.history(thread)
    assert [s.raw for s in after[: len(stored_before)]] == [s.raw for s in stored_before]
    said = [s.event.kind.text for s in after if s.event and isinstance(s.event.kind, (TextDelta, UserMessage))]
    assert said == ["first question", "answer 1 ", "done.", "second question", "second answer"]
    assert [t.id for t in (await store.threads()).threads] == [first.thread.id]  # no second thread


async def test_fork_copies_history_up_to_the_event_and_links_origin(store: Store) -> None:
    async with Runtime.with_mock(chatty_script(Capability.FORK, turns=2)) as runtime:
        first = await record_turns(store, runtime, ["one", "two"])
        stored = await store.history(first.thread)
        at = next(s for s in stored if s.event and isinstance(s.event.kind, TurnEnded))
        branch = await store.fork(runtime, first.thread, at=at)
        async with branch:
            copied = [await branch.__anext__() for _ in range(at.position)]
            await branch.prompt("another way")
            await read_turn(branch)
    assert [serialize.dumps(e) for e in copied] == [s.raw for s in stored[: at.position]]
    forked = await store.thread(branch.thread.id)
    assert (forked.origin_id, forked.origin_kind, forked.origin_position) == (
        first.thread.id,
        OriginKind.FORK,
        at.position,
    )
    assert forked.event_count > at.position
    assert [t.id for t in (await store.threads(origin=first.thread)).threads] == [forked.id]
    assert (await store.thread(first.thread)).event_count == len(stored)  # the origin is untouched


async def test_fork_without_the_capability_is_refused_typed_and_stores_nothing(store: Store) -> None:
    async with Runtime.with_mock(chatty_script(turns=1)) as runtime:
        first = await record_turns(store, runtime, ["one"])
        with pytest.raises(UnsupportedFeature):
            await store.fork(runtime, first.thread)
    assert [t.id for t in (await store.threads()).threads] == [first.thread.id]


async def test_export_jsonl_is_the_serialize_format_and_markdown_reads(store: Store) -> None:
    async with Runtime.with_mock(chatty_script(turns=1)) as runtime:
        first = await record_turns(store, runtime, ["explain the parser"])
    lines = (await store.export(first.thread, "jsonl")).splitlines()
    events = [serialize.loads(line) for line in lines]
    assert len(events) == first.thread.event_count
    assert isinstance(events[0].kind, UserMessage)
    md = await store.export(first.thread, "md")
    assert md.startswith("# explain the parser\n")
    assert "## You\n\nexplain the parser\n" in md
    assert "answer 1 done." in md
    assert "- tool: read file 1" in md
    with pytest.raises(StoreError, match="unknown export format"):
        await store.export(first.thread, "pdf")


async def test_a_line_that_no_longer_decodes_is_kept_raw(store: Store) -> None:
    async with Runtime.with_mock(chatty_script(turns=1)) as runtime:
        first = await record_turns(store, runtime, ["one"])
        position = first.thread.event_count + 1
        future = json.loads(serialize.dumps((await store.history(first.thread))[-1].event))
        future["kind"] = {"type": "HologramOpened", "room": 7}  # an event kind of a later anyagent
        raw = json.dumps(future)
        await store._call(store._backend.append, first.thread.id, position, [raw], None, {"event_count": position})
        stored = await store.history(first.thread)
        assert stored[-1].event is None and stored[-1].raw == raw and stored[-1].error
        assert stored[-2].event is not None
        assert (await store.export(first.thread, "jsonl")).splitlines()[-1] == raw
        assert raw in await store.export(first.thread, "md")
        recording = await store.reopen(runtime, first.thread)
        async with recording:
            replayed = [await recording.__anext__() for _ in range(position)]
    shown = replayed[-1].kind
    assert isinstance(shown, Diagnostic) and shown.diagnostic.raw == raw
    assert shown.diagnostic.code == "store.undecodable"


async def test_handoff_starts_a_linked_thread_whose_first_prompt_carries_the_conversation(store: Store) -> None:
    async with Runtime.with_mock(chatty_script(turns=2)) as runtime:
        first = await record_turns(store, runtime, ["design the cache", "now the eviction"])
        successor = await store.handoff(runtime, first.thread, "mock", budget=4000)
        async with successor:
            await read_turn(successor)
    thread = await store.thread(successor.thread.id)
    assert (thread.origin_id, thread.origin_kind) == (first.thread.id, OriginKind.HANDOFF)
    stored = await store.history(thread)
    prompt = stored[0].event
    assert prompt is not None and isinstance(prompt.kind, UserMessage)
    assert "User: design the cache" in prompt.kind.text
    assert "Assistant: answer 2 done." in prompt.kind.text
    assert thread.title == first.thread.title


async def test_recording_a_failed_session_marks_the_thread_failed(store: Store) -> None:
    script = Script().turn([Step.emit(text("m1", "partial")), Step.die("exit status: 9")])
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        from anyagent import AgentError, SessionOptions

        session, events = await runtime.open(agent, SessionOptions.in_dir("/tmp"))
        async with session, store.record(session, events) as recording:
            await recording.prompt("go")
            with pytest.raises(AgentError):
                async for _ in recording:
                    pass
    thread = await store.thread(recording.thread.id)
    assert thread.status is ThreadStatus.FAILED
    assert any(s.event and isinstance(s.event.kind, TextDelta) for s in await store.history(thread))


async def test_a_typed_error_of_a_call_in_the_block_is_no_failure_of_the_thread(store: Store) -> None:
    from anyagent import InvalidRequest, SessionOptions

    async with Runtime.with_mock(chatty_script(turns=1)) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("/tmp"))
        with pytest.raises(InvalidRequest):
            async with session, store.record(session, events) as recording:
                await recording.prompt("go")
                await read_turn(recording)
                await recording.prompt(42)  # type: ignore[arg-type]  # refused typed; the session is fine
    assert (await store.thread(recording.thread.id)).status is ThreadStatus.IDLE


async def test_tools_are_searchable_and_counted_once_in_transcripts(store: Store) -> None:
    async with Runtime.with_mock(chatty_script(turns=1)) as runtime:
        first = await record_turns(store, runtime, ["x"])
    assert [t.id for t in (await store.threads(text="read file 1")).threads] == [first.thread.id]
    events = [s.event for s in await store.history(first.thread) if s.event]
    assert sum(isinstance(e.kind, ToolUpdated) for e in events) == 1


async def test_a_closed_store_refuses_calls(db: object) -> None:
    store = db()  # type: ignore[operator]
    with pytest.raises(StoreError, match="not open"):
        await store.threads()
    assert isinstance(Thread, type)


async def test_import_history_lists_the_agents_own_conversations_once_and_reopens_them(store: Store) -> None:
    from anyagent import HistoryEntry

    when = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
    entries = [
        HistoryEntry("mock", "tok-a", title="refactor the lexer", cwd="/src/a", created_at=when, updated_at=when),
        HistoryEntry("mock", "tok-b", title=None, cwd="/src/b", created_at=when - timedelta(days=1)),
    ]
    script = Script(history=entries).turn([Step.emit(text("m1", "carrying on")), Step.end(completed())])
    async with Runtime.with_mock(script) as runtime:
        added = await store.import_history(runtime, "mock")
        assert {(t.resume_token, t.title, t.cwd) for t in added} == {
            ("tok-a", "refactor the lexer", "/src/a"),
            ("tok-b", None, "/src/b"),
        }
        assert all(t.origin_kind is OriginKind.IMPORT and t.event_count == 0 for t in added)
        assert await store.import_history(runtime, "mock") == []  # known conversations are not added twice
        lexer = next(t for t in added if t.resume_token == "tok-a")
        assert (await store.thread(lexer)).updated_at == when
        recording = await store.reopen(runtime, lexer)
        async with recording:
            await recording.prompt("go on")
            seen = await read_turn(recording)
    assert [e.kind.text for e in seen if isinstance(e.kind, TextDelta)] == ["carrying on"]
    assert (await store.thread(lexer)).event_count == len(seen) + 1  # the prompt too


async def test_import_history_of_an_agent_without_one_is_unsupported(store: Store) -> None:
    async with Runtime.with_mock(Script()) as runtime:
        with pytest.raises(UnsupportedFeature):
            await store.import_history(runtime, "mock")


async def test_generated_title_asks_the_agent_and_titles_the_thread(store: Store) -> None:
    # every mock session plays the script from its first turn: the recorded one and generate's throwaway one
    script = Script().turn([Step.emit(text("t1", '"Parser bug hunt"')), Step.end(completed())])
    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        recording = await record_turns(
            store, runtime, ["fix the bug\nin parser.py"], title=Store.generated_title(runtime, agent)
        )
    thread = await store.thread(recording.thread.id)
    assert thread.title == "Parser bug hunt"  # the agent's words, quotes stripped; not the prompt's first line
    assert recording.thread.title == "Parser bug hunt"


async def test_a_failed_title_generation_keeps_the_first_prompts_line(store: Store) -> None:
    async def refuse(prompt: str) -> str:
        raise UnsupportedFeature("no titles here")

    async with Runtime.with_mock(chatty_script(turns=1)) as runtime:
        recording = await record_turns(store, runtime, ["fix the bug\nin parser.py"], title=refuse)
    assert (await store.thread(recording.thread.id)).title == "fix the bug"


async def test_an_event_serialize_cannot_write_is_stored_as_a_warning_and_recording_goes_on(store: Store) -> None:
    # the engine writes no NaN, but an app may record its own iterator: NaN has no JSON form in the library's
    # format, so the stored line is a warning Diagnostic naming the kind and the problem, in the event's place
    script = Script().turn(
        [
            Step.emit(text("m1", "before ")),
            Step.emit(ContextUsage(5, 100, 0.5)),
            Step.emit(text("m1", "after")),
            Step.end(completed()),
        ]
    )

    async def with_nan(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
        async for event in events:
            if isinstance(event.kind, ContextUsage):
                event = attrs.evolve(event, kind=ContextUsage(5, 100, float("nan")))
            yield event

    async with Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir("/tmp"))
        async with session, store.record(session, with_nan(events)) as recording:
            await recording.prompt("go")
            seen = await read_turn(recording)
    assert recording.failure is None
    assert any(isinstance(e.kind, ContextUsage) for e in seen)  # the app read it as it came
    history = await store.history(recording.thread.id)
    kinds = [type(s.event.kind).__name__ for s in history if s.event is not None]
    assert "ContextUsage" not in kinds and kinds[-1] == "TurnEnded" and len(history) == len(seen) + 1  # + the prompt
    warned = [s.event for s in history if s.event is not None and isinstance(s.event.kind, Diagnostic)]
    assert len(warned) == 1 and warned[0].kind.diagnostic.code == "store.unencodable"
    assert "ContextUsage" in warned[0].kind.diagnostic.message and "float" in warned[0].kind.diagnostic.message
    texts = [s.event.kind.text for s in history if s.event is not None and isinstance(s.event.kind, TextDelta)]
    assert texts == ["before ", "after"]
    assert [s.position for s in history] == list(range(1, len(history) + 1))


@pytest.mark.parametrize(("batch_size", "flush_interval"), [(1, 60.0), (1000, 0.05)], ids=["batch", "interval"])
async def test_what_was_read_is_written_without_a_turn_of_the_event_loop(
    tmp_path: Path, batch_size: int, flush_interval: float
) -> None:
    # the writer thread takes a full batch (here: every event) or, when flush_interval passed, what waits,
    # itself: a reader that keeps the loop busy still gets it stored (a batch counts events and runs of
    # deltas: deltas of one message would merge, so each delta has its own message)
    import sqlite3
    import time

    script = Script().turn([*(Step.emit(text(f"m{i}", f"w{i} ")) for i in range(20)), Step.end(completed())])
    async with Store.sqlite(tmp_path / "t.db") as store, Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        record = store.record(session, events, batch_size=batch_size, flush_interval=flush_interval)
        async with session, record as recording:
            await recording.prompt("go")
            said: list[str] = []
            for _ in range(8):
                event = await recording.__anext__()
                if isinstance(event.kind, TextDelta):
                    said.append(event.kind.text)
            assert said[0] == "w0 "
            stored = ""
            deadline = time.monotonic() + 10
            with sqlite3.connect(tmp_path / "t.db") as conn:  # the loop blocks here: no task of it runs
                while said[-1] not in stored and time.monotonic() < deadline:
                    rows = conn.execute("SELECT text FROM chunks WHERE thread_id = ?", (recording.thread.id,))
                    stored = "\n".join(row[0] for row in rows if row[0])  # each write: its texts, one a line
                    time.sleep(0.01)  # noqa: ASYNC251 - blocking the loop is the point
            assert stored.split("\n") == ["go", *said]  # the prompt and every delta read
            await read_turn(recording)
        assert (await store.thread(recording.thread.id)).event_count == len(await store.history(recording.thread.id))
