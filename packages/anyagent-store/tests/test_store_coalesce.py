"""A recording stores a run of one message's deltas as one delta: `coalesce`, `merge_into`, and the record path."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from storesupport import read_turn

from anyagent import (
    Event,
    EventKind,
    ReasoningDelta,
    Runtime,
    SessionOptions,
    TextDelta,
    ToolOutputDelta,
    ToolStatus,
    TurnEnded,
    TurnInfo,
    UserMessage,
)
from anyagent.mock import Script, Step, completed, text, tool
from anyagent_store import Store, Thread
from anyagent_store._codec import MERGED_TEXT_LIMIT, coalesce, merge_into

T0 = datetime(2026, 12, 4, 12, 0, tzinfo=timezone.utc)
TURNS = (TurnInfo("t1", None), TurnInfo("t2", None), TurnInfo("t1", "task"))
MERGED = (TextDelta, ReasoningDelta, ToolOutputDelta)


def _events(kinds: list[tuple[EventKind, int, dict[str, Any]]]) -> list[Event]:
    return [
        Event(
            sequence=n + 1,
            occurred_at=T0 + timedelta(milliseconds=n),
            session_id="s1",
            kind=kind,
            turn_info=TURNS[turn],
            extensions=extensions,
        )
        for n, (kind, turn, extensions) in enumerate(kinds)
    ]


def _key(event: Event) -> tuple[Any, ...] | None:
    kind = event.kind
    if isinstance(kind, (TextDelta, ReasoningDelta)):
        return type(kind), kind.message_id, event.turn_info, event.session_id
    if isinstance(kind, ToolOutputDelta):
        return type(kind), kind.tool_id, event.turn_info, event.session_id
    return None


def _runs(events: list[Event]) -> list[tuple[Any, str] | Event]:
    """The events with each mergeable run (same key, no extensions) as (key, its whole text)."""
    out: list[tuple[Any, str] | Event] = []
    for event in events:
        key = _key(event)
        if key is None or event.extensions:
            out.append(event)
            continue
        last = out[-1] if out else None
        if isinstance(last, tuple) and last[0] == key:
            out[-1] = (key, last[1] + event.kind.text)  # type: ignore[union-attr]
        else:
            out.append((key, event.kind.text))  # type: ignore[union-attr]
    return out


def test_a_run_of_one_message_becomes_one_delta_with_its_first_time_and_last_sequence() -> None:
    events = _events(
        [(TextDelta("m1", "hel"), 0, {}), (TextDelta("m1", "lo "), 0, {}), (TextDelta("m1", "world"), 0, {})]
    )
    (merged,) = coalesce(events)
    assert merged.kind == TextDelta("m1", "hello world")
    assert (merged.sequence, merged.occurred_at) == (3, events[0].occurred_at)
    assert (merged.session_id, merged.turn_info, dict(merged.extensions)) == ("s1", TURNS[0], {})


def test_runs_break_at_another_message_turn_kind_or_extensions() -> None:
    events = _events(
        [
            (TextDelta("m1", "a"), 0, {}),
            (TextDelta("m2", "b"), 0, {}),  # another message
            (TextDelta("m2", "c"), 1, {}),  # another turn
            (ReasoningDelta("m2", "d"), 1, {}),  # another kind
            (ReasoningDelta("m2", "e"), 1, {"x/y": 1}),  # extensions: kept as they are
            (ReasoningDelta("m2", "f"), 1, {}),
            (ToolOutputDelta("tool1", "g"), 2, {}),
            (ToolOutputDelta("tool1", "h"), 2, {}),
        ]
    )
    out = coalesce(events)
    assert [(type(e.kind).__name__, e.kind.text, e.sequence) for e in out] == [  # type: ignore[union-attr]
        ("TextDelta", "a", 1),
        ("TextDelta", "b", 2),
        ("TextDelta", "c", 3),
        ("ReasoningDelta", "d", 4),
        ("ReasoningDelta", "e", 5),
        ("ReasoningDelta", "f", 6),
        ("ToolOutputDelta", "gh", 8),
    ]
    assert out[4] is events[4]


def test_a_run_longer_than_the_limit_is_cut_between_deltas() -> None:
    piece = "x" * (MERGED_TEXT_LIMIT // 3 + 1)  # three of them are over the limit, two are not
    events = _events([(TextDelta("m1", piece), 0, {}) for _ in range(5)])
    out = coalesce(events)
    assert [len(e.kind.text) for e in out] == [2 * len(piece), 2 * len(piece), len(piece)]  # type: ignore[union-attr]
    assert [e.sequence for e in out] == [2, 4, 5]
    huge = _events([(TextDelta("m1", "y" * (MERGED_TEXT_LIMIT + 5)), 0, {}), (TextDelta("m1", "z"), 0, {})])
    assert coalesce(huge) == huge  # a delta over the limit alone stays as it is


def test_events_with_nothing_to_merge_are_returned_as_they_are() -> None:
    events = _events([(UserMessage("u1", "hi"), 0, {}), (TextDelta("m1", "a"), 0, {}), (UserMessage("u2", "x"), 0, {})])
    assert coalesce(events) == events


_kinds = st.one_of(
    st.builds(TextDelta, st.sampled_from(["m1", "m2"]), st.text(max_size=3)),
    st.builds(ReasoningDelta, st.sampled_from(["m1", "m2"]), st.text(max_size=3)),
    st.builds(ToolOutputDelta, st.sampled_from(["tool1"]), st.text(max_size=3)),
    st.builds(UserMessage, st.just("u1"), st.text(max_size=3)),
)
_streams = st.lists(st.tuples(_kinds, st.integers(0, 2), st.sampled_from([{}, {}, {}, {"x/y": 1}])), max_size=60).map(
    _events
)


@settings(max_examples=300, deadline=None)
@given(_streams, st.lists(st.integers(0, 60), max_size=5))
def test_coalescing_keeps_every_text_in_order_however_the_events_are_taken(
    events: list[Event], cuts: list[int]
) -> None:
    whole = coalesce(events)
    assert _runs(whole) == _runs(events)  # the same text of every run, the other events unchanged, in order
    assert [e.sequence for e in whole] == sorted({e.sequence for e in whole})
    pending: list[Event] = []  # the writer takes what arrived a poll at a time
    edges = [0, *sorted(min(c, len(events)) for c in cuts), len(events)]
    for begin, end in itertools.pairwise(edges):
        merge_into(pending, coalesce(events[begin:end]))
    assert _runs(pending) == _runs(events)
    assert len(pending) <= len(events)
    one_run = {(e.kind.__class__, getattr(e.kind, "message_id", None), e.turn_info, bool(e.extensions)) for e in events}
    if one_run == {(TextDelta, "m1", TURNS[0], False)}:  # one message's plain deltas, well under the limit
        assert len(whole) == len(pending) == 1


async def _record_turn(tmp_path: Any, script: Script, **record: Any) -> tuple[list[Event], list[Event], Thread]:
    """One prompt's turn of ``script`` read through a recording: (the events read, the events stored, the thread)."""
    async with Store.sqlite(tmp_path / "t.db") as store, Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        async with session, store.record(session, events, **record) as recording:
            await recording.prompt("go")
            read = await read_turn(recording)
        thread = await store.thread(recording.thread.id)
        stored = [s.event for s in await store.history(thread) if s.event is not None]
    return read, stored, thread


@pytest.mark.anyio
async def test_a_flood_is_stored_as_a_few_deltas_holding_all_its_text(tmp_path: Any) -> None:
    script = Script(buffer=1024).turn(
        [
            Step.repeat(5000, Step.emit(text("m1", "w "))),
            Step.emit(tool("tool1", ToolStatus.COMPLETED, title="read")),
            Step.repeat(700, Step.emit(text("m1", "v "))),
            Step.end(completed()),
        ]
    )
    read, stored, thread = await _record_turn(tmp_path, script)
    deltas = [e for e in read if isinstance(e.kind, TextDelta)]
    kept = [e for e in stored if isinstance(e.kind, TextDelta)]
    assert "".join(e.kind.text for e in kept) == "".join(e.kind.text for e in deltas) == "w " * 5000 + "v " * 700  # type: ignore[union-attr]
    assert len(deltas) == 5700 and 2 <= len(kept) <= 50  # a few writes' worth, split by the tool
    assert kept[-1].sequence == deltas[-1].sequence  # "after event N" still means after the last delta read
    others = [e for e in read if not isinstance(e.kind, TextDelta)]
    assert [e for e in stored if not isinstance(e.kind, (TextDelta, UserMessage))] == others
    assert thread.event_count == len(stored) and isinstance(stored[-1].kind, TurnEnded)
    assert thread.updated_at == read[-1].occurred_at.replace(microsecond=read[-1].occurred_at.microsecond)


@pytest.mark.anyio
async def test_a_prompt_steered_into_a_run_of_deltas_ends_the_run(tmp_path: Any) -> None:
    # the tap gathers a run of m1's deltas; the prompt (stored by the loop, not the tap) comes between
    # "ab" and "c": the stored transcript keeps that order, the run is not merged across the prompt
    script = Script(steer=True).turn(
        [
            Step.emit(text("m1", "a")),
            Step.emit(text("m1", "b")),
            Step.sleep(0.3),
            Step.emit(text("m1", "c")),
            Step.end(completed()),
        ]
    )
    async with Store.sqlite(tmp_path / "t.db") as store, Runtime.with_mock(script) as runtime:
        agent = (await runtime.discover()).require("mock")
        session, events = await runtime.open(agent, SessionOptions.in_dir(tmp_path))
        async with session, store.record(session, events) as recording:
            await recording.prompt("go")
            said = ""
            async for event in recording:
                if isinstance(event.kind, TextDelta):
                    said += event.kind.text
                    if said == "ab":
                        await recording.prompt("more")
                if isinstance(event.kind, TurnEnded):
                    break
        stored = [s.event for s in await store.history(recording.thread.id) if s.event is not None]
    shown = [(type(e.kind).__name__, e.kind.text) for e in stored if isinstance(e.kind, (TextDelta, UserMessage))]
    assert shown == [("UserMessage", "go"), ("TextDelta", "ab"), ("UserMessage", "more"), ("TextDelta", "c")]


@pytest.mark.anyio
async def test_a_run_written_across_many_writes_keeps_each_pieces_first_time_and_last_sequence(tmp_path: Any) -> None:
    steps = [Step.emit(text("m1", f"w{i} ")) if i % 10 else Step.sleep(0.02) for i in range(1, 200)]
    script = Script().turn([*steps, Step.end(completed())])
    read, stored, _ = await _record_turn(tmp_path, script, batch_size=1, flush_interval=0.01)
    deltas = [e for e in read if isinstance(e.kind, TextDelta)]
    pieces = [e for e in stored if isinstance(e.kind, TextDelta)]
    assert 3 <= len(pieces) < len(deltas)  # written in several pieces, each of several deltas
    assert "".join(p.kind.text for p in pieces) == "".join(d.kind.text for d in deltas)  # type: ignore[union-attr]
    at = 0
    for piece in pieces:  # each piece: the time of its first delta, the sequence of its last
        length, first = 0, deltas[at]
        while length < len(piece.kind.text):  # type: ignore[union-attr]
            length += len(deltas[at].kind.text)  # type: ignore[union-attr]
            at += 1
        assert length == len(piece.kind.text)  # type: ignore[union-attr]  # cut between deltas
        assert (piece.occurred_at, piece.sequence) == (first.occurred_at, deltas[at - 1].sequence)
    assert at == len(deltas)
