"""``wire.event_line`` writes the streaming deltas directly: the same text as the generic path
(``dumps({"event": encode_event(event)})``) for every shape a delta event takes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from anyagent import Event, ReasoningDelta, TextDelta, ToolOutputDelta, TurnEnded, TurnInfo
from anyagent.mock import completed
from anyagent_server import wire
from anyagent_server.hub import dumps

UTC = timezone.utc
TIMES = [
    datetime(2026, 12, 3, 8, 0, 0, 123456, tzinfo=UTC),
    datetime(2026, 12, 3, 8, 0, 0),  # naive: read as UTC
    datetime(2026, 12, 3, 9, 0, 0, tzinfo=timezone(timedelta(hours=1))),
    datetime(1960, 1, 1, tzinfo=UTC),  # before the epoch: the epoch
]
KINDS = [
    TextDelta("m1", "x"),
    TextDelta("m\u00e9", 'quote " backslash \\ newline \n tab \t nul \x00 emoji \U0001f600 \u2028'),
    TextDelta("m1", "lone \ud800 surrogate"),
    ReasoningDelta("r1", "thinking"),
    ToolOutputDelta("tool-1", "out\r\n"),
]
TURNS = [None, TurnInfo("t1"), TurnInfo("t\u00e9", parent_tool_id='tool-"0')]


@pytest.mark.parametrize("when", TIMES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("turn", TURNS)
def test_a_delta_line_is_the_generic_line(when: datetime, kind: object, turn: TurnInfo | None) -> None:
    event = Event(sequence=7, occurred_at=when, session_id="s\u00e91", kind=kind, turn_info=turn)  # type: ignore[arg-type]
    assert wire.event_line(event, dumps) == dumps({"event": wire.encode_event(event)})


def test_other_events_and_extensions_take_the_generic_path() -> None:
    when = TIMES[0]
    with_ext = Event(sequence=1, occurred_at=when, session_id="s1", kind=TextDelta("m1", "x"), extensions={"k": [1]})
    ended = Event(sequence=2, occurred_at=when, session_id="s1", kind=TurnEnded(completed()))
    for event in (with_ext, ended):
        assert wire.event_line(event, dumps) == dumps({"event": wire.encode_event(event)})
