"""The direct encode/decode paths give exactly what anyagent.serialize gives."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from anyagent import Event, MessageEnded, ReasoningDelta, TextDelta, ToolOutputDelta, TurnInfo, UserMessage, serialize
from anyagent_store._codec import _fast, _fast_dumps, decode, decode_chunk, encode, encode_batch

texts = st.text(max_size=40)
kinds = st.one_of(
    st.builds(TextDelta, texts, texts),
    st.builds(ReasoningDelta, texts, texts),
    st.builds(ToolOutputDelta, texts, texts),
    st.builds(MessageEnded, texts),
)
zones = st.sampled_from([timezone.utc, timezone(timedelta(hours=2)), timezone(timedelta(hours=-5, minutes=-30))])
events = st.builds(
    Event,
    sequence=st.integers(0, 2**40),
    occurred_at=st.builds(
        lambda micros, zone: (datetime(2020, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=micros)).astimezone(
            zone
        ),
        st.integers(0, 10**16),
        zones,
    ),
    session_id=texts,
    kind=kinds,
    turn_info=st.one_of(st.none(), st.builds(TurnInfo, texts, st.one_of(st.none(), texts))),
    extensions=st.one_of(st.just({}), st.just({"x/y": 1})),
)


@given(events)
def test_encode_is_serialize_dumps(event: Event) -> None:
    assert encode(event)[1] == serialize.dumps(event)


@given(events)
def test_decode_is_serialize_loads(event: Event) -> None:
    line = serialize.dumps(event)
    stored = decode(7, line)
    assert stored.event == serialize.loads(line)
    assert stored.position == 7 and stored.raw == line


def test_the_direct_paths_are_taken_for_the_bulk_kinds() -> None:
    event = Event(1, datetime.now(timezone.utc), "s1", TextDelta("m1", 'hé\n"x"'), TurnInfo("t1", None))
    assert _fast_dumps(event) is not None
    import json

    assert _fast(json.loads(serialize.dumps(event)), {}) == event


def test_a_line_that_is_not_json_is_kept_raw() -> None:
    stored = decode(3, '{"sequence": 1, "kind"')
    assert stored.event is None and stored.raw == '{"sequence": 1, "kind"' and stored.error


@given(st.lists(events, max_size=12))
def test_a_chunk_decodes_to_what_serialize_gives_event_by_event(batch: list[Event]) -> None:
    # one chunk shares TurnInfo values between its events: turns of one id and different parents stay apart
    if not batch:
        return
    lines, _ = encode_batch(batch)
    stored = decode_chunk(7, "\n".join(lines))
    assert [s.position for s in stored] == list(range(7, 7 + len(batch)))
    assert [s.event for s in stored] == [serialize.loads(line) for line in lines]


# -- the batch encoder: runs of one message, session and turn share a template -------------------------
def _words_by_event(batch: list[Event]) -> str | None:
    """The searchable text the way the store first built it, event by event (the reference)."""
    from anyagent_store._codec import searchable_text

    words: list[str] = []
    previous: str | None = None
    for event in batch:
        found = searchable_text(event.kind)
        if found is not None:
            message = getattr(event.kind, "message_id", None)
            if words and (message is None or message != previous):
                words.append("\n")
            words.append(found)
            previous = message
    return "".join(words) if words else None


# odd texts: quotes, backslashes, controls, DEL, non-ASCII, astral, lone surrogates, U+2028
odd_texts = st.one_of(
    st.sampled_from(
        ["", "w ", '"', "\\", "\x00\x1f\x7f", "é", "€😀", "\ud800", "x\udfffy", "\u2028\u2029", "\n\t\r\b\f"]
    ),
    st.text(max_size=12),
)
few = st.sampled_from(["m1", "m2", "ü"])
few_turns = st.sampled_from([None, TurnInfo("t1"), TurnInfo("t1"), TurnInfo("t1", "tool-1"), TurnInfo("t2")])
bulk_kinds = st.one_of(
    st.builds(TextDelta, few, odd_texts),
    st.builds(ReasoningDelta, few, odd_texts),
    st.builds(ToolOutputDelta, few, odd_texts),
    st.builds(MessageEnded, few),
)
BASE = datetime(2026, 12, 31, 23, 59, 59, 999_000, tzinfo=timezone.utc)


@st.composite
def runs(draw: st.DrawFn) -> list[Event]:
    """Events as a flood has them: few sessions, messages and turns, times rising by a few µs to seconds
    (across second, day and year boundaries; whole seconds too), now and then an odd one."""
    count = draw(st.integers(1, 40))
    when = BASE - timedelta(microseconds=draw(st.integers(0, 2_000_000)))
    batch: list[Event] = []
    for _ in range(count):
        when += timedelta(microseconds=draw(st.sampled_from([0, 1, 7, 1000, 999_999, 1_000_000, 3_600_000_000])))
        if draw(st.integers(0, 9)) == 0:
            when = when.replace(microsecond=0)
        occurred = when
        odd = draw(st.integers(0, 14))
        if odd == 0:
            occurred = when.astimezone(timezone(timedelta(hours=2)))
        kind = draw(st.one_of(bulk_kinds, st.builds(UserMessage, few, odd_texts))) if odd == 1 else draw(bulk_kinds)
        sequence: int = draw(st.sampled_from([2**70, 0, -1])) if odd == 2 else len(batch) + 1
        batch.append(
            Event(
                sequence=sequence,
                occurred_at=occurred,
                session_id=draw(st.sampled_from(["s1", "s1", "s2", "\u00e9\ud800"])),
                kind=kind,
                turn_info=draw(few_turns),
                extensions={"x/y": [1, 2.5]} if odd == 3 else {},
            )
        )
    return batch


@given(runs())
def test_encode_batch_writes_serialize_dumps_line_for_line(batch: list[Event]) -> None:
    lines, words = encode_batch(batch)
    assert lines == [serialize.dumps(event) for event in batch]
    assert words == _words_by_event(batch)
    assert [serialize.loads(line) for line in lines] == batch  # and they decode back to the same events


def test_encode_batch_odd_values() -> None:
    # big ints, whole seconds, a lone surrogate, a time across a year boundary, an offset, a bool sequence
    now = datetime(2026, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
    batch = [
        Event(2**80, now, "s1", TextDelta("m1", "a\ud800b"), TurnInfo("t1")),
        Event(2, now + timedelta(microseconds=999_999), "s1", TextDelta("m1", "é"), TurnInfo("t1")),
        Event(3, now + timedelta(seconds=1), "s1", TextDelta("m1", "next year"), TurnInfo("t1")),
        Event(4, now.astimezone(timezone(timedelta(hours=-3))), "s1", TextDelta("m1", "z"), TurnInfo("t1")),
        Event(True, now, "s1", MessageEnded("m1"), None),
    ]
    lines, words = encode_batch(batch)
    assert lines == [serialize.dumps(event) for event in batch]
    assert '"occurred_at":"2027-01-01T00:00:00+00:00"' in lines[2] and '"sequence":' + str(2**80) in lines[0]
    assert words == "a\ud800bénext yearz"
    assert all(line.isascii() for line in lines)
