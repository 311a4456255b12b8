"""Events to stored lines and back.

A line is ``anyagent.serialize.dumps(event)``: the library's own JSON form, so an export is the log
as stored. Decoding the few kinds that make up most of a transcript (text, reasoning and tool-output
deltas, message ends) takes a direct path that builds the same values ``anyagent.serialize.loads``
builds (tested equal) about five times faster; every other kind goes through ``serialize``. A line
that no longer decodes is kept raw (``StoredEvent.event`` is None).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from itertools import accumulate, groupby
from operator import attrgetter
from typing import Any

import attrs
import msgspec
import msgspec.json  # a dependency of anyagent-core

from anyagent import (
    Diagnostic,
    DiagnosticInfo,
    DiagnosticLevel,
    Event,
    EventKind,
    MessageEnded,
    ReasoningDelta,
    TextDelta,
    ToolOutputDelta,
    ToolUpdated,
    TurnInfo,
    UserMessage,
    serialize,
)

from ._model import StoredEvent

__all__ = [
    "MERGED_TEXT_LIMIT",
    "RAW_EXTENSION",
    "coalesce",
    "merge_into",
    "merged_run",
    "decode",
    "decode_chunk",
    "encode",
    "encode_batch",
    "searchable_text",
    "undecodable_event",
    "unencodable_event",
]

RAW_EXTENSION = "anyagent-store/raw"  # on the Diagnostic that stands for a line that no longer decodes
"""The extension key on the `Diagnostic` that stands in for a stored line that no longer decodes."""


def searchable_text(kind: EventKind) -> str | None:
    """The words of an event a text search finds: message text, tool titles."""
    if isinstance(kind, (TextDelta, UserMessage, ReasoningDelta)):
        return kind.text
    if isinstance(kind, ToolUpdated):
        return kind.tool.title
    return None


_quote: Callable[[str], str] = json.encoder.encode_basestring_ascii
utc = timezone.utc
_DELTA_ID: dict[type, str] = {TextDelta: "message_id", ReasoningDelta: "message_id", ToolOutputDelta: "tool_id"}


def _fast_dumps(event: Event) -> str | None:
    """``serialize.dumps(event)`` for the bulk kinds, built directly (tested equal), else None."""
    kind = event.kind
    cls = type(kind)
    if event.extensions or event.occurred_at.tzinfo is not timezone.utc:
        return None
    if cls is MessageEnded:
        body = f'{{"type":"MessageEnded","message_id":{_quote(kind.message_id)}}}'  # type: ignore[union-attr]
    elif cls in _DELTA_ID:
        field = _DELTA_ID[cls]
        body = (
            f'{{"type":"{cls.__name__}","{field}":{_quote(getattr(kind, field))},'
            f'"text":{_quote(kind.text)}}}'  # type: ignore[union-attr]
        )
    else:
        return None
    info = event.turn_info
    if info is None:
        turn = "null"
    else:
        parent = "null" if info.parent_tool_id is None else _quote(info.parent_tool_id)
        turn = f'{{"id":{_quote(info.id)},"parent_tool_id":{parent}}}'
    return (
        f'{{"sequence":{event.sequence},"occurred_at":"{event.occurred_at.isoformat()}",'
        f'"session_id":{_quote(event.session_id)},"kind":{body},"turn_info":{turn},"extensions":{{}}}}'
    )


MERGED_TEXT_LIMIT = 32_768
"""The most text (characters) one stored delta gathers from a run of deltas (see `coalesce`)."""

_kind_of: Callable[[Event], EventKind] = attrgetter("kind")
_text: Callable[[EventKind], str] = attrgetter("text")
_session_of: Callable[[Event], str] = attrgetter("session_id")
_sequence_of: Callable[[Event], int] = attrgetter("sequence")
_time_of: Callable[[Event], datetime] = attrgetter("occurred_at")
_turn_of: Callable[[Event], Any] = attrgetter("turn_info")
_extensions_of: Callable[[Event], Any] = attrgetter("extensions")
_ID_OF: dict[type, Callable[[EventKind], str]] = {  # on the kind
    TextDelta: attrgetter("message_id"),
    ReasoningDelta: attrgetter("message_id"),
    ToolOutputDelta: attrgetter("tool_id"),
}
_RUN_KEY: dict[type, Callable[[Event], tuple[Any, ...]]] = {  # what a run of merged deltas shares
    TextDelta: attrgetter("kind.message_id", "session_id", "turn_info", "extensions"),
    ReasoningDelta: attrgetter("kind.message_id", "session_id", "turn_info", "extensions"),
    ToolOutputDelta: attrgetter("kind.tool_id", "session_id", "turn_info", "extensions"),
}


def coalesce(events: list[Event], kinds: list[EventKind] | None = None, *, one_session: bool = False) -> list[Event]:
    """``events`` with each run of back-to-back deltas of one message (text, reasoning) or one tool's
    output, of one session and turn and without extensions, stored as one delta: the run's text joined
    (at most `MERGED_TEXT_LIMIT` characters a delta; a longer run is cut between deltas), the time of the
    run's first delta and the sequence of its last, so "after event N" keeps its meaning. The engine's
    own buffer merges deltas the same way while a reader lags; what a transcript shows is unchanged, and a
    recording's writer encodes and writes a few events where a flood read thousands. ``kinds``: the
    events' kinds, when the caller has them; ``one_session``: the events are known to share a session.

    The common case (a run of one message) is checked with C-level passes over the run, no Python
    code an event: it runs in the writer thread, under the GIL the app's reader needs."""
    if kinds is None:
        kinds = list(map(_kind_of, events))
    classes = list(map(type, kinds))
    if TextDelta not in classes and ReasoningDelta not in classes and ToolOutputDelta not in classes:
        return events
    out: list[Event] = []
    start = 0
    for cls, run in groupby(classes):
        end = start + len(list(run))
        if cls not in _RUN_KEY or end - start == 1:
            out.extend(events[start:end])
        else:
            _merge_runs(events[start:end], kinds[start:end], cls, out, one_session)
        start = end
    return out


def _same(values: list[Any]) -> bool:
    return values.count(values[0]) == len(values)


def _merge_runs(run: list[Event], kinds: list[EventKind], cls: type, out: list[Event], one_session: bool) -> None:
    """Append ``run`` (deltas of class ``cls``; ``kinds`` theirs) to ``out``, each stretch of one run key
    merged."""
    # one message, session, turn and extensions: the flood's case, checked a field at a time (lists of the
    # events' own values: no new object an event, so no work for the collector)
    if (
        _same(list(map(_ID_OF[cls], kinds)))
        and _same(list(map(_turn_of, run)))
        and (one_session or _same(list(map(_session_of, run))))
        and not any(map(_extensions_of, run))
    ):
        _merge_one(run, kinds, out)
        return
    keys = list(map(_RUN_KEY[cls], run))
    begin = 0  # split where the key changes (rare; a Python pass over the run)
    for index in range(1, len(run) + 1):
        if index == len(run) or keys[index] != keys[begin]:
            _merge_one(run[begin:index], kinds[begin:index], out)
            begin = index


def _merge_one(run: list[Event], kinds: list[EventKind], out: list[Event]) -> None:
    """``run``'s deltas share class, id, session, turn and extensions: append them merged (when they
    have no extensions)."""
    head = run[0]
    if len(run) == 1 or head.extensions:
        out.extend(run)
        return
    text = "".join(map(_text, kinds))
    if len(text) <= MERGED_TEXT_LIMIT:
        out.append(attrs.evolve(head, sequence=run[-1].sequence, kind=_with_text(head.kind, text)))
        return
    out.extend(_pieces(head, list(map(_text, kinds)), list(map(_sequence_of, run)), list(map(_time_of, run))))


def merged_run(head: Event, texts: list[str], sequences: list[int], times: list[datetime]) -> list[Event]:
    """The stored deltas of a run a recording's tap gathered: ``head`` (its first delta: kind, session, turn)
    and, for each delta from there on, its text, sequence and time; each piece has the time of its first
    delta and the sequence of its last (as `coalesce` makes them)."""
    text = "".join(texts)
    if len(text) <= MERGED_TEXT_LIMIT:
        return [attrs.evolve(head, sequence=sequences[-1], occurred_at=times[0], kind=_with_text(head.kind, text))]
    return _pieces(head, texts, sequences, times)


def _pieces(head: Event, texts: list[str], sequences: list[int], times: list[datetime]) -> list[Event]:
    """A run longer than `MERGED_TEXT_LIMIT` cut between deltas: each piece at most the limit (a delta longer
    than that alone is a piece of its own), with its first delta's time and its last delta's sequence."""
    ends = list(accumulate(map(len, texts)))
    pieces: list[Event] = []
    begin = 0
    while begin < len(texts):
        limit = (ends[begin - 1] if begin else 0) + MERGED_TEXT_LIMIT
        end = max(begin + 1, bisect_right(ends, limit, begin))
        kind = _with_text(head.kind, "".join(texts[begin:end]))
        pieces.append(attrs.evolve(head, sequence=sequences[end - 1], occurred_at=times[begin], kind=kind))
        begin = end
    return pieces


def _with_text(kind: Any, text: str) -> EventKind:
    """A delta kind (text, reasoning, tool output) with another text."""
    merged: EventKind = attrs.evolve(kind, text=text)
    return merged


def merge_into(pending: list[Event], more: list[Event]) -> None:
    """Append the coalesced ``more`` to the coalesced ``pending``, merging ``more``'s first delta into
    ``pending``'s last when they continue one run (same class, key and no extensions, within the limit)."""
    if pending and more:
        last, first = pending[-1], more[0]
        cls = first.kind.__class__
        key = _RUN_KEY.get(cls)
        if (
            key is not None
            and last.kind.__class__ is cls
            and not first.extensions
            and key(last) == key(first)
            and len(last.kind.text) + len(first.kind.text) <= MERGED_TEXT_LIMIT  # type: ignore[union-attr]
        ):
            text = last.kind.text + first.kind.text  # type: ignore[union-attr]
            pending[-1] = attrs.evolve(last, sequence=first.sequence, kind=_with_text(last.kind, text))
            pending.extend(more[1:])
            return
    pending.extend(more)


def encode(event: Event) -> tuple[str, str, str | None]:
    """``(kind name, JSON line, searchable text)`` of one event; the line is ``serialize.dumps(event)``."""
    line = _fast_dumps(event) if type(event.sequence) is int else None
    return type(event.kind).__name__, line or serialize.dumps(event), searchable_text(event.kind)


def _two(cls: Callable[[str, str], EventKind], first: str) -> Callable[[dict[str, Any]], EventKind | None]:
    def build(kind: dict[str, Any]) -> EventKind | None:
        a, b = kind.get(first), kind.get("text")
        if len(kind) != 3 or not isinstance(a, str) or not isinstance(b, str):
            return None
        return cls(a, b)

    return build


def _ended(kind: dict[str, Any]) -> EventKind | None:
    message_id = kind.get("message_id")
    return MessageEnded(message_id) if len(kind) == 2 and isinstance(message_id, str) else None


_FAST: dict[str, Callable[[dict[str, Any]], EventKind | None]] = {
    "TextDelta": _two(TextDelta, "message_id"),
    "ReasoningDelta": _two(ReasoningDelta, "message_id"),
    "ToolOutputDelta": _two(ToolOutputDelta, "tool_id"),
    "MessageEnded": _ended,
}
_EVENT_KEYS = frozenset(("sequence", "occurred_at", "session_id", "kind", "turn_info", "extensions"))


class _KindLine(msgspec.Struct, tag_field="type", forbid_unknown_fields=True, gc=False):
    """A bulk kind as stored: exactly its fields (an unknown or missing one refuses the line)."""


class _TextLine(_KindLine, tag="TextDelta"):
    message_id: str
    text: str


class _ReasoningLine(_KindLine, tag="ReasoningDelta"):
    message_id: str
    text: str


class _ToolOutputLine(_KindLine, tag="ToolOutputDelta"):
    tool_id: str
    text: str


class _EndedLine(_KindLine, tag="MessageEnded"):
    message_id: str


class _TurnLine(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    id: str
    parent_tool_id: str | None


class _NoExtensions(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """``{}`` and nothing else."""


class _Line(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A stored line of a bulk kind: the six fields ``serialize`` writes, each of the type it writes."""

    sequence: int
    occurred_at: str
    session_id: str
    kind: _TextLine | _ReasoningLine | _ToolOutputLine | _EndedLine
    turn_info: _TurnLine | None
    extensions: _NoExtensions


_MsgspecError = msgspec.MsgspecError
_chunk_lines: Callable[[str], list[_Line]] = msgspec.json.Decoder(list[_Line]).decode
_one_line: Callable[[str], _Line] = msgspec.json.Decoder(_Line).decode


def _fast(data: Any, turns: dict[tuple[str, str | None], TurnInfo]) -> Event | None:
    """The direct path, or None when anything is unusual (then ``serialize`` decides). ``turns`` shares one
    ``TurnInfo`` value between the events of a turn (frozen values: the same as equal ones)."""
    if type(data) is not dict or len(data) != 6:
        return None
    try:
        kind_data, sequence, session_id = data["kind"], data["sequence"], data["session_id"]
        occurred, turn, extensions = data["occurred_at"], data["turn_info"], data["extensions"]
    except KeyError:
        return None
    if extensions != {} or type(kind_data) is not dict or type(sequence) is not int or type(session_id) is not str:
        return None
    build = _FAST.get(kind_data.get("type"))  # type: ignore[arg-type]
    if build is None or type(occurred) is not str or not occurred.endswith("+00:00"):
        return None
    kind = build(kind_data)
    if kind is None:
        return None
    turn_info: TurnInfo | None = None
    if turn is not None:
        if type(turn) is not dict or len(turn) != 2:
            return None
        key = (turn.get("id"), turn.get("parent_tool_id"))
        turn_info = turns.get(key)  # type: ignore[arg-type]
        if turn_info is None:
            turn_id, parent = key
            if (
                type(turn_id) is not str
                or "parent_tool_id" not in turn
                or (parent is not None and type(parent) is not str)
            ):
                return None
            turn_info = turns[key] = TurnInfo(turn_id, parent)  # type: ignore[index]
    try:
        when = datetime.fromisoformat(occurred)
    except ValueError:
        return None
    return Event(sequence, when, session_id, kind, turn_info)


def _decoded(
    position: int, raw: str, data: Any, turns: dict[tuple[str, str | None], TurnInfo] | None = None
) -> StoredEvent:
    event = _fast(data, {} if turns is None else turns)
    if event is not None:
        return StoredEvent(position, raw, event)
    try:
        return StoredEvent(position, raw, serialize.structure(data))
    except serialize.SerializationError as exc:
        return StoredEvent(position, raw, None, exc.message)


def decode(position: int, raw: str) -> StoredEvent:
    """One stored line as a ``StoredEvent`` (``event`` None, ``error`` set, when it does not decode)."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return StoredEvent(position, raw, None, f"not JSON: {exc}")
    return _decoded(position, raw, data)


def _old_chunk(first: int, lines: list[str]) -> list[StoredEvent]:
    """The chunk through ``json`` (the reference path): one parser call when every line is JSON, else line
    by line."""
    try:
        values = json.loads("[" + ",".join(lines) + "]")
    except ValueError:
        return [decode(first + i, line) for i, line in enumerate(lines)]
    if len(values) != len(lines):  # a line that held several values (never written so): line by line
        return [decode(first + i, line) for i, line in enumerate(lines)]
    turns: dict[tuple[str, str | None], TurnInfo] = {}
    return [_decoded(first + i, line, data, turns) for i, (line, data) in enumerate(zip(lines, values, strict=True))]


def decode_chunk(first: int, body: str) -> list[StoredEvent]:
    """The events of one stored chunk (lines joined by newlines), positions from ``first``.

    A chunk of the bulk kinds alone (what a transcript mostly is) is parsed by msgspec into typed lines in
    one call and built straight into events; a mixed chunk takes that path line by line for its bulk lines
    and ``json`` + ``serialize`` for the rest. Whatever msgspec refuses (it is stricter than ``json``:
    lone surrogates, floats or bools for integers, unknown or duplicate tags) goes the ``json`` way, and a
    chunk with a line that is not one JSON value goes wholly the old way, so the result is always what
    ``json.loads`` + ``serialize`` give (tested equal)."""
    lines = body.split("\n")
    turns: dict[tuple[str, str | None], TurnInfo] = {}
    try:
        typed = _chunk_lines("[" + ",".join(lines) + "]")
    except _MsgspecError:
        typed = None
    if typed is not None and len(typed) == len(lines):
        found: list[StoredEvent] = []
        append = found.append
        for i, (line, value) in enumerate(zip(lines, typed, strict=True)):
            event = _built(value, turns)
            if event is None:  # a time that is not the library's UTC form: the reference path decides
                return _old_chunk(first, lines)
            append(_stored(first + i, line, event))
        return found
    mixed: list[StoredEvent] = []
    for i, line in enumerate(lines):
        try:
            event = _built(_one_line(line), turns)
        except _MsgspecError:
            event = None
        if event is not None:
            mixed.append(_stored(first + i, line, event))
            continue
        try:
            data = json.loads(line)
        except ValueError:  # not one JSON value: the whole chunk the old way (it may parse as an array)
            return _old_chunk(first, lines)
        mixed.append(_decoded(first + i, line, data, turns))
    return mixed


def _setters(cls: type, *names: str) -> tuple[Callable[[Any, Any], None], ...] | None:
    """The slot setters of an attrs frozen, slotted class whose ``__init__`` stores each of ``names`` as
    given (no converter, validator or post-init hook on them), in field order; None when it is not so
    (then the events are built through ``__init__``)."""
    if not attrs.has(cls) or hasattr(cls, "__attrs_post_init__") or hasattr(cls, "__attrs_pre_init__"):
        return None
    fields = attrs.fields(cls)
    if tuple(f.name for f in fields) != names or any(f.converter or f.validator for f in fields):
        return None
    found = [cls.__dict__.get(name) for name in names]
    if not all(type(d).__name__ == "member_descriptor" for d in found):
        return None
    return tuple(d.__set__ for d in found)  # type: ignore[union-attr]


def _kind_builder(cls: type, *names: str) -> Callable[..., Any]:
    """``cls(*values)`` for a bulk kind: its slots set directly when ``_setters`` allows (a third of
    ``__init__``'s time), else ``cls`` itself. Tested equal to ``__init__``'s value."""
    setters = _setters(cls, *names)
    if setters is None:
        return cls
    new = object.__new__
    if len(setters) == 1:
        (one,) = setters

        def build_one(value: Any) -> Any:
            made: Any = new(cls)
            one(made, value)
            return made

        return build_one
    first, second = setters

    def build_two(a: Any, b: Any) -> Any:
        made: Any = new(cls)
        first(made, a)
        second(made, b)
        return made

    return build_two


_text_delta = _kind_builder(TextDelta, "message_id", "text")
_reasoning_delta = _kind_builder(ReasoningDelta, "message_id", "text")
_tool_output_delta = _kind_builder(ToolOutputDelta, "tool_id", "text")
_message_ended = _kind_builder(MessageEnded, "message_id")
_STORED_SETTERS = _setters(StoredEvent, "position", "raw", "event", "error")
_EVENT_SLOTS = [Event.__dict__.get(name) for name in ("sequence", "occurred_at", "session_id", "kind", "turn_info")]
_NO_EXTENSIONS = attrs.fields(Event).extensions.default  # what ``Event(...)`` stores for ``extensions={}``


def _stored(position: int, raw: str, event: Event) -> StoredEvent:
    """``StoredEvent(position, raw, event)``, its slots set directly when ``_setters`` allows."""
    if _STORED_SETTERS is None:
        return StoredEvent(position, raw, event)
    made = object.__new__(StoredEvent)
    set_position, set_raw, set_event, set_error = _STORED_SETTERS
    set_position(made, position)
    set_raw(made, raw)
    set_event(made, event)
    set_error(made, None)
    return made


def _event_maker() -> Callable[[int, datetime, str, EventKind, TurnInfo | None], Event]:
    """``Event(sequence, when, session_id, kind, turn_info)`` with no extensions: the slots set directly
    when the class stores those five as given and ``{}`` as the shared empty mapping, else ``Event``."""
    fields = attrs.fields(Event)
    plain = all(f.converter is None and f.validator is None for f in fields[:5])
    if (
        not plain
        or hasattr(Event, "__attrs_post_init__")
        or not all(type(d).__name__ == "member_descriptor" for d in _EVENT_SLOTS)
        or type(Event.__dict__.get("extensions")).__name__ != "member_descriptor"
        or Event(0, _LONG_AGO, "", MessageEnded(""), None).extensions is not _NO_EXTENSIONS
    ):
        return Event
    new = object.__new__
    s0, s1, s2, s3, s4 = (d.__set__ for d in _EVENT_SLOTS)  # type: ignore[union-attr]
    s5 = Event.__dict__["extensions"].__set__
    empty = _NO_EXTENSIONS

    def build(sequence: int, when: datetime, session_id: str, kind: EventKind, turn: TurnInfo | None) -> Event:
        made = new(Event)
        s0(made, sequence)
        s1(made, when)
        s2(made, session_id)
        s3(made, kind)
        s4(made, turn)
        s5(made, empty)
        return made

    return build


def _built(line: Any, turns: dict[tuple[str, str | None], TurnInfo]) -> Event | None:
    """The event of a line msgspec parsed as ``_Line`` (the same value ``_fast`` builds), None when its time
    is not ``+00:00`` ISO text."""
    occurred = line.occurred_at
    if not occurred.endswith("+00:00"):
        return None
    try:
        when = datetime.fromisoformat(occurred)
    except ValueError:
        return None
    kind = line.kind
    cls = kind.__class__
    if cls is _TextLine:
        built: EventKind = _text_delta(kind.message_id, kind.text)
    elif cls is _ReasoningLine:
        built = _reasoning_delta(kind.message_id, kind.text)
    elif cls is _ToolOutputLine:
        built = _tool_output_delta(kind.tool_id, kind.text)
    else:
        built = _message_ended(kind.message_id)
    turn = line.turn_info
    turn_info: TurnInfo | None = None
    if turn is not None:
        key = (turn.id, turn.parent_tool_id)
        turn_info = turns.get(key)
        if turn_info is None:
            turn_info = turns[key] = TurnInfo(turn.id, turn.parent_tool_id)
    return _event(line.sequence, when, line.session_id, built, turn_info)


_ZERO = timedelta(0)
_SECOND = timedelta(seconds=1)
# the bulk kinds the batch encoder writes from a template, and whether each has a text field
_TEXT_OF: dict[type, bool] = {TextDelta: True, ReasoningDelta: True, ToolOutputDelta: True, MessageEnded: False}
_SEARCHED = (TextDelta, ReasoningDelta)
_LONG_AGO = datetime(1, 1, 1, tzinfo=timezone.utc)
_event = _event_maker()


def _template(event: Event, cls: type, ident: Any) -> tuple[str, str] | None:
    """The fixed text around a bulk event's changing parts (sequence, time, text): what follows the time
    up to the text, and what follows the text; None when a field is not what the direct path writes."""
    session_id, info = event.session_id, event.turn_info
    if type(session_id) is not str or type(ident) is not str:
        return None
    if info is None:
        turn = "null"
    elif type(info) is TurnInfo and type(info.id) is str:
        parent = info.parent_tool_id
        if parent is None:
            turn = f'{{"id":{_quote(info.id)},"parent_tool_id":null}}'
        elif type(parent) is str:
            turn = f'{{"id":{_quote(info.id)},"parent_tool_id":{_quote(parent)}}}'
        else:
            return None
    else:
        return None
    field = _DELTA_ID.get(cls, "message_id")
    middle = f'+00:00","session_id":{_quote(session_id)},"kind":{{"type":"{cls.__name__}","{field}":{_quote(ident)}'
    tail = f'}},"turn_info":{turn},"extensions":{{}}}}'
    return (middle + ',"text":', tail) if _TEXT_OF[cls] else (middle, tail)


def encode_batch(events: Sequence[Event]) -> tuple[list[str], str | None]:
    """The lines of a chunk and its searchable text (deltas of one message run together, so a phrase
    split between deltas is found). Each line is ``serialize.dumps(event)`` (tested equal); the bulk
    kinds (text, reasoning and tool-output deltas, message ends, in UTC, no extensions) are written
    from a template per run of one message, session and turn, with the time's date part formatted
    once a second: about 5 times less work than ``serialize`` and 2 times less than an f-string an
    event (the recording's writer thread runs this while the app reads: its time is GIL time)."""
    lines: list[str] = []
    append = lines.append
    words: list[str] = []
    previous: str | None = None
    run_cls: type | None = None  # the run the template is for: kind class, message or tool id, session, turn
    run_ident: Any = None
    run_session: Any = None
    run_turn: Any = None
    middle = tail = ""
    searched = False
    base = _LONG_AGO  # the time's whole second, formatted once as ``prefix``
    prefix = ""
    for event in events:
        kind = event.kind
        cls = kind.__class__
        when = event.occurred_at
        has_text = _TEXT_OF.get(cls)
        if has_text is not None and when.tzinfo is utc and type(event.sequence) is int and not event.extensions:
            ident = kind.message_id if cls is not ToolOutputDelta else kind.tool_id  # type: ignore[union-attr]
            if (
                cls is not run_cls
                or ident != run_ident
                or event.session_id != run_session
                or (event.turn_info is not run_turn and event.turn_info != run_turn)
            ):
                made = _template(event, cls, ident)
                if made is None:
                    run_cls = None
                else:
                    run_cls, run_ident, run_session, run_turn = cls, ident, event.session_id, event.turn_info
                    middle, tail = made
                    searched = cls in _SEARCHED
            if run_cls is not None:
                offset = when - base
                if _ZERO <= offset < _SECOND:
                    micros = offset.microseconds
                else:
                    micros = when.microsecond
                    base = when.replace(microsecond=0)
                    prefix = base.isoformat()[:19]
                sequence = event.sequence
                if not has_text:
                    if micros:
                        append(f'{{"sequence":{sequence},"occurred_at":"{prefix}.{micros:06d}{middle}{tail}')
                    else:
                        append(f'{{"sequence":{sequence},"occurred_at":"{prefix}{middle}{tail}')
                    continue
                text = kind.text  # type: ignore[union-attr]
                if type(text) is str:
                    if micros:
                        append(
                            f'{{"sequence":{sequence},"occurred_at":"{prefix}.{micros:06d}{middle}{_quote(text)}{tail}'
                        )
                    else:
                        append(f'{{"sequence":{sequence},"occurred_at":"{prefix}{middle}{_quote(text)}{tail}')
                    if searched:
                        if words and ident != previous:
                            words.append("\n")
                        words.append(text)
                        previous = ident
                    continue
        try:
            append(serialize.dumps(event))
        except serialize.SerializationError as exc:  # NaN, a naive time, a non-JSON extension: kept as a warning
            append(serialize.dumps(unencodable_event(event, exc.message)))
            continue
        found = searchable_text(kind)
        if found is not None:
            message = getattr(kind, "message_id", None)
            if words and (message is None or message != previous):
                words.append("\n")
            words.append(found)
            previous = message
    return lines, "".join(words) if words else None


def unencodable_event(event: Event, problem: str) -> Event:
    """What a recording stores for an event ``serialize`` cannot write (a NaN cost, a naive time, a
    non-JSON extension): a warning ``Diagnostic`` in its place, same sequence and session, naming the kind
    and the problem, so positions stay whole and the recording goes on."""
    when = event.occurred_at
    if not isinstance(when, datetime) or when.utcoffset() is None:
        when = datetime.now(timezone.utc)
    info = DiagnosticInfo(
        f"a {type(event.kind).__name__} event could not be stored ({problem}); a warning in its place",
        DiagnosticLevel.WARNING,
        "store.unencodable",
    )
    sequence = event.sequence if type(event.sequence) is int else 0
    session_id = event.session_id if isinstance(event.session_id, str) else ""
    turn_info = event.turn_info if isinstance(event.turn_info, TurnInfo) else None
    try:
        serialize.dumps(turn_info)
    except serialize.SerializationError:
        turn_info = None
    return Event(sequence, when, session_id, Diagnostic(info), turn_info)


def undecodable_event(stored: StoredEvent, session_id: str) -> Event:
    """What a replay shows for a line that no longer decodes: a warning ``Diagnostic`` that carries the
    stored text (``raw``, and the extension ``anyagent-store/raw``)."""
    info = DiagnosticInfo(
        f"stored event {stored.position} no longer decodes ({stored.error}); kept as stored",
        DiagnosticLevel.WARNING,
        "store.undecodable",
        stored.raw,
    )
    return Event(
        sequence=0,
        occurred_at=datetime.now(timezone.utc),
        session_id=session_id,
        kind=Diagnostic(info),
        extensions={RAW_EXTENSION: stored.raw},
    )
