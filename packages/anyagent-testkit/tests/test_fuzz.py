"""The fuzz harness itself: mutations are deterministic and change what they say, and the checks
count what they claim to count (so an all-zero report means something)."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from pathlib import Path

import pytest

from anyagent import (
    Cancelled,
    Completed,
    Event,
    PermissionRequest,
    PromptOrigin,
    RequestClosed,
    RequestOpened,
    TextDelta,
    ToolUpdate,
    TurnEnded,
    TurnInfo,
    TurnStarted,
)
from anyagent_testkit.fuzz import (
    ACP_RULES,
    CLAUDE_RULES,
    MUTATIONS,
    FuzzCase,
    FuzzReport,
    FuzzTarget,
    cases,
    check_events,
    mutate,
)
from anyagent_testkit.replay import parse_recording

CLAUDE = [
    {"_meta": {"cmd": ["claude"]}},
    {"_sent": {"type": "control_request", "request_id": "a-1", "request": {"subtype": "initialize"}}},
    {"type": "control_response", "response": {"subtype": "success", "request_id": "a-1", "response": {}}},
    {"_sent": {"type": "user", "message": {"role": "user", "content": "hello"}}},
    {"type": "system", "subtype": "init", "session_id": "s"},
    {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "hi"}]}},
    {"type": "assistant", "message": {"id": "m1", "content": [{"type": "text", "text": "there"}]}},
    {"type": "result", "subtype": "success", "is_error": False, "result": "hi there"},
    {"_sent": {"type": "user", "message": {"role": "user", "content": "again"}}},
    {"type": "result", "subtype": "success", "is_error": False, "result": "again"},
]
ACP = [
    {"_sent": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}},
    {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}},
    {
        "_sent": {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"prompt": [{"type": "text", "text": "q"}]},
        }
    },
    {"jsonrpc": "2.0", "method": "session/update", "params": {"update": {"sessionUpdate": "agent_message_chunk"}}},
    {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}},
]
CASE = FuzzCase(Path("x.jsonl"), 1, "none", 0)


def _lines(objects: list[dict[str, object]]) -> tuple[object, ...]:
    return parse_recording([json.dumps(o) for o in objects]).lines


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_each_mutation_is_deterministic_and_changes_only_agent_frames_after_the_first_prompt(mutation: str) -> None:
    lines = _lines(CLAUDE)
    first = mutate(lines, CLAUDE_RULES, mutation, random.Random(5))  # type: ignore[arg-type]
    again = mutate(lines, CLAUDE_RULES, mutation, random.Random(5))  # type: ignore[arg-type]
    assert first is not None and first == again
    assert first != CLAUDE
    assert first[:4] == CLAUDE[:4], "the handshake and the prompt are left alone"
    results = sum(o.get("type") == "result" for o in first)
    if mutation == "drop_end":
        assert results == 1
    if mutation == "double_end":
        assert results == 3
    if mutation == "late_end":
        assert first[7:9] == [CLAUDE[8], CLAUDE[7]], "the first turn's end comes after the next prompt"


def test_acp_ends_are_the_replies_to_prompts() -> None:
    lines = _lines(ACP)
    dropped = mutate(lines, ACP_RULES, "drop_end", random.Random(1))  # type: ignore[arg-type]
    assert dropped is not None and {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}} not in dropped
    assert {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}} in dropped, "the initialize reply stays"


def test_invalid_utf8_survives_the_recording_as_a_lone_surrogate() -> None:
    mutated = mutate(_lines(CLAUDE), CLAUDE_RULES, "invalid_utf8", random.Random(2))  # type: ignore[arg-type]
    assert mutated is not None
    raw = [o["_raw"] for o in mutated if "_raw" in o]
    assert raw and any("\udc80" <= ch <= "\udcff" for ch in raw[0])
    assert json.loads(json.dumps(raw[0])) == raw[0]


def test_cases_visit_every_mutation_and_recording_early() -> None:
    target = FuzzTarget("t", CLAUDE_RULES, lambda exe, rec: None, [(Path("a"), 1), (Path("b"), 1)])  # type: ignore[arg-type,return-value]
    first = next(iter(cases(target)))
    gen = iter(cases(target, seed=3))
    batch = [next(gen) for _ in range(len(MUTATIONS))]
    assert {c.mutation for c in batch} == set(MUTATIONS) and {c.recording for c in batch} == {Path("a"), Path("b")}
    assert {c.seed for c in batch} == {3} and first.seed == 0


def _event(sequence: int, kind: object, turn: str | None = None) -> Event:
    info = TurnInfo(turn) if turn else None
    return Event(sequence, datetime(2026, 1, 1, tzinfo=timezone.utc), "s", kind, info)  # type: ignore[arg-type]


def test_a_sound_stream_counts_nothing() -> None:
    report = FuzzReport()
    request = PermissionRequest("r1", ToolUpdate("t1"))
    events = [
        _event(1, TurnStarted(PromptOrigin("p1")), "T1"),
        _event(2, TextDelta("m", "hi"), "T1"),
        _event(3, RequestOpened(request), "T1"),
        _event(4, RequestClosed("r1"), "T1"),
        _event(5, TurnEnded(Completed()), "T1"),
    ]
    check_events(events, report, CASE, started=["T1"])
    assert report.clean, report.describe()


def test_every_check_counts_its_failure() -> None:
    report = FuzzReport()
    request = PermissionRequest("r1", ToolUpdate("t1"))
    events = [
        _event(1, TurnStarted(PromptOrigin("p1")), "T1"),
        _event(3, RequestOpened(request), "T1"),  # a gap
        _event(4, TurnEnded(Cancelled()), "T1"),  # r1 still open
        _event(5, TurnEnded(Cancelled()), "T1"),  # a second end
        _event(6, TurnStarted(PromptOrigin("p2")), "T2"),  # never ends
        _event(7, TurnEnded(Completed()), "T9"),  # never started
        _event(8, TextDelta("m", "x"), "T2"),
        _event(9, ToolUpdatedWithNaN(), "T2"),
    ]
    check_events(events, report, CASE, started=["T2"])
    assert report.sequence_gaps == 1
    assert report.requests_open == 1
    assert report.turn_ends == 3  # T1 twice, T2 never, T9 without a start
    assert report.lost_prompts == 1
    assert report.unserializable == 1
    assert not report.clean and "seed=0" in report.describe()


def ToolUpdatedWithNaN() -> object:
    from anyagent import ContextUsage

    return ContextUsage(used_tokens=1, cost_usd=float("nan"))
