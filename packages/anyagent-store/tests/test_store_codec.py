"""The direct encode/decode paths give exactly what anyagent.serialize gives."""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import attrs
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from anyagent import (
    Answer,
    ChoicesAnswer,
    Event,
    EventKind,
    MessageEnded,
    PermissionAnswer,
    QuestionAnswer,
    QuestionsAnswer,
    ReasoningDelta,
    TextAnswer,
    TextDelta,
    ToolOutputDelta,
    TurnInfo,
    UserMessage,
    serialize,
)
from anyagent_store import StoredEvent
from anyagent_store._codec import _fast, _fast_dumps, _old_chunk, decode, decode_chunk, encode, encode_batch

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


# -- decode_chunk's msgspec path gives what the json + serialize path (``_old_chunk``) gives ---------------

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
_LEAVES: dict[Any, st.SearchStrategy[Any]] = {
    str: st.text(max_size=12),
    int: st.integers(),
    float: st.floats(allow_nan=False, allow_infinity=False),
    bool: st.booleans(),
    datetime: st.datetimes(
        min_value=datetime(1900, 1, 1),
        max_value=datetime(2200, 1, 1),
        timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=2)), timezone(timedelta(minutes=-90))]),
    ),
    Path: st.text(min_size=1, max_size=12).map(Path),
    Any: _JSON_VALUES,
}
_MADE: dict[Any, st.SearchStrategy[Any]] = {}


def _any(tp: Any) -> st.SearchStrategy[Any]:
    """Values of any type ``serialize`` handles, by walking the attrs classes (so every event kind)."""
    if tp not in _MADE:
        _MADE[tp] = st.deferred(lambda: _walk(tp))
    return _MADE[tp]


def _walk(tp: Any) -> st.SearchStrategy[Any]:
    origin, args = get_origin(tp), get_args(tp)
    if tp in _LEAVES:
        return _LEAVES[tp]
    if tp is type(None):
        return st.none()
    if origin in (Union, types.UnionType):
        return st.one_of([_any(arg) for arg in args])
    if tp in (Answer, QuestionAnswer):
        members = (PermissionAnswer, QuestionsAnswer) if tp is Answer else (TextAnswer, ChoicesAnswer)
        return st.one_of([_any(member) for member in members])
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if attrs.has(tp):
        hints = typing.get_type_hints(tp)
        return st.builds(tp, **{field.name: _any(hints[field.name]) for field in attrs.fields(tp)})
    if origin is tuple:
        return st.lists(_any(args[0]), max_size=2).map(tuple)
    if origin is frozenset:
        return st.frozensets(_any(args[0]), max_size=3)
    if origin is Mapping:
        return st.dictionaries(st.text(max_size=6), _any(args[1]), max_size=2)
    raise TypeError(f"no strategy for {tp!r}")


# an event of any kind, the kind drawn evenly from every EventKind member
_any_kind_event = st.builds(
    Event,
    sequence=st.integers(),
    occurred_at=_LEAVES[datetime],
    session_id=st.text(max_size=8),
    kind=st.sampled_from(get_args(EventKind)).flatmap(_any),
    turn_info=st.one_of(st.none(), _any(TurnInfo)),
    extensions=st.one_of(st.just({}), st.dictionaries(st.text(max_size=6), _JSON_VALUES, max_size=2)),
)


def _same_as_the_json_path(lines: list[str]) -> list[StoredEvent]:
    stored = decode_chunk(5, "\n".join(lines))
    assert stored == _old_chunk(5, lines)
    assert [s.position for s in stored] == list(range(5, 5 + len(lines)))
    return stored


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.one_of(events, events, _any_kind_event), min_size=1, max_size=10))
def test_decode_chunk_equals_the_json_path_over_every_event_kind(batch: list[Event]) -> None:
    lines = [serialize.dumps(event) for event in batch]
    stored = _same_as_the_json_path(lines)
    assert [s.event for s in stored] == [serialize.loads(line) for line in lines]


def test_every_event_kind_is_drawn() -> None:
    for kind in get_args(EventKind):  # each kind has a strategy (find: deterministic, the simplest value)
        assert type(find(_any(kind), lambda value: True, settings=settings(database=None))) is kind
    assert type(find(_any_kind_event, lambda event: True, settings=settings(database=None)).kind) in get_args(EventKind)


_BULK = serialize.dumps(
    Event(3, datetime(2026, 1, 2, 3, 4, 5, 6, timezone.utc), "s", TextDelta("m", "x"), TurnInfo("t"))
)
ODD_LINES = [
    _BULK.replace('"sequence":3', '"sequence":true'),
    _BULK.replace('"sequence":3', '"sequence":3.0'),
    _BULK.replace('"sequence":3', f'"sequence":{2**70}'),
    _BULK.replace('"sequence":3', '"sequence":NaN'),
    _BULK.replace("+00:00", "Z"),
    _BULK.replace("+00:00", "+02:00"),
    _BULK.replace("04:05.000006+00:00", "04:05.0000061+00:00"),
    _BULK.replace('"text":"x"', '"text":"\\ud800"'),
    _BULK.replace('"text":"x"', '"text":"x","extra":1'),
    _BULK.replace('"text":"x"', '"text":"x","type":"MessageEnded"'),
    _BULK.replace('"type":"TextDelta"', '"type":"UserMessage"'),
    _BULK.replace(',"parent_tool_id":null', ""),
    _BULK.replace('"extensions":{}', '"extensions":{"a/b":1}'),
    _BULK.replace('"session_id":"s"', '"session_id":"s","session_id":"t"'),
    _BULK.replace('"turn_info":{"id":"t","parent_tool_id":null}', '"turn_info":null'),
    _BULK + "," + _BULK,
    _BULK[:40],
    "",
    "[]",
]


@pytest.mark.parametrize("odd", ODD_LINES)
def test_decode_chunk_odd_lines_give_what_the_json_path_gives(odd: str) -> None:
    _same_as_the_json_path([_BULK, odd, _BULK])
    _same_as_the_json_path([odd])


def test_decode_chunk_lines_that_only_parse_joined_give_what_the_json_path_gives() -> None:
    # "1,2" | bulk | "[3" | "4]": four lines, four values when joined, but not one value a line
    _same_as_the_json_path(["1,2", _BULK, "[3", "4]"])
    _same_as_the_json_path([_BULK[:50], _BULK[50:]])


def test_the_slot_builders_are_used_and_build_what_init_builds() -> None:
    from anyagent_store import _codec

    assert _codec._event is not Event and _codec._STORED_SETTERS is not None
    when = datetime(2026, 1, 2, tzinfo=timezone.utc)
    kinds = [
        (_codec._text_delta("m", "x"), TextDelta("m", "x")),
        (_codec._reasoning_delta("m", "x"), ReasoningDelta("m", "x")),
        (_codec._tool_output_delta("t", "x"), ToolOutputDelta("t", "x")),
        (_codec._message_ended("m"), MessageEnded("m")),
    ]
    for fast, plain in kinds:
        assert type(fast) is type(plain) and fast == plain and hash(fast) == hash(plain) and repr(fast) == repr(plain)
        event = _codec._event(4, when, "s", fast, TurnInfo("t"))
        reference = Event(4, when, "s", plain, TurnInfo("t"))
        assert (
            event == reference
            and event.extensions is reference.extensions
            and serialize.dumps(event) == serialize.dumps(reference)
        )
        stored = _codec._stored(9, "raw", event)
        assert stored == StoredEvent(9, "raw", reference) and repr(stored) == repr(StoredEvent(9, "raw", reference))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        _codec._text_delta("m", "x").text = "y"  # type: ignore[misc]


def test_a_page_is_decoded_with_the_collector_paused_and_its_state_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from anyagent_store import _store

    seen: list[bool] = []
    real = _store.decode_chunk

    def spying(first: int, body: str) -> list[StoredEvent]:
        seen.append(gc.isenabled())
        return real(first, body)

    monkeypatch.setattr(_store, "decode_chunk", spying)
    rows = [(1, _BULK), (2, _BULK)]
    assert gc.isenabled()
    try:
        assert [s.position for s in _store._decode_all(rows, 0, None)] == [1, 2]
        assert seen == [False, False] and gc.isenabled()
        with _store._collector_paused():  # nested pauses: the collector comes back after the outer one
            _store._decode_all(rows, 0, None)
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()  # an app that turned the collector off keeps it off
        _store._decode_all(rows, 0, None)
        assert not gc.isenabled()
    finally:
        gc.enable()
