"""The direct encode/decode paths give exactly what anyagent.serialize gives."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from anyagent import Event, MessageEnded, ReasoningDelta, TextDelta, ToolOutputDelta, TurnInfo, serialize
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
