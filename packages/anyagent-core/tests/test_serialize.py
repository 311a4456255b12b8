"""``anyagent.serialize``: round trips, the documented shape, typed errors, the schema, goldens.

Golden files live in ``tests/golden/``; rerun with ``ANYAGENT_UPDATE_GOLDEN=1`` to rewrite them
after an intended shape change, then review the diff.
"""

from __future__ import annotations

import difflib
import enum
import json
import os
import sys
import types
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import attrs
import jsonschema  # type: ignore[import-untyped,unused-ignore]
import pytest
import rfc3339_validator  # type: ignore[import-untyped,unused-ignore]  # noqa: F401 - jsonschema checks date-time only with it
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anyagent import (
    Account,
    AgentDetails,
    AgentInstallation,
    AgentOrigin,
    AgentProfile,
    Answer,
    Authenticated,
    AuthKind,
    AuthStatus,
    AuthUnknown,
    BooleanKind,
    Cancelled,
    Capabilities,
    Capability,
    ChoicesAnswer,
    Completed,
    CompletionSource,
    ConfigChoice,
    ConfigOption,
    ContextCompacted,
    ContextUsage,
    Delivery,
    Diagnostic,
    DiagnosticInfo,
    DiagnosticLevel,
    DiscoveryReport,
    EnvVarLogin,
    Event,
    EventKind,
    Failed,
    FileDiff,
    HistoryEntry,
    Input,
    InstallationSource,
    InvalidRequest,
    LoginMethod,
    McpServer,
    McpTool,
    MessageEnded,
    MissingAgent,
    PermissionAnswer,
    PermissionChoice,
    PermissionMode,
    PermissionRequest,
    PlanEntry,
    PlanEntryStatus,
    PlanUpdated,
    PlanUsage,
    PlanUsageEntry,
    PlanUsageUpdated,
    PlanUsageWindow,
    PromptOrigin,
    Question,
    QuestionAnswer,
    QuestionChoice,
    QuestionRequest,
    QuestionsAnswer,
    Queued,
    ReasoningDelta,
    Refused,
    Request,
    RequestClosed,
    RequestOpened,
    RollbackScope,
    SelectKind,
    SessionInfo,
    SessionOptions,
    SessionStatus,
    SessionUpdated,
    SlashCommand,
    Started,
    StatusChanged,
    Steered,
    StopReason,
    TerminalLogin,
    TextAnswer,
    TextDelta,
    ToolInput,
    ToolKind,
    ToolLocation,
    ToolOutputDelta,
    ToolStatus,
    ToolUpdate,
    ToolUpdated,
    TurnEnded,
    TurnInfo,
    TurnStarted,
    Unauthenticated,
    UserMessage,
    serialize,
)
from anyagent.serialize import DecodeError, EncodeError, SerializationError, dumps, json_schema, loads

GOLDEN = Path(__file__).parent / "golden"
UPDATE_GOLDEN = os.environ.get("ANYAGENT_UPDATE_GOLDEN") == "1"
UTC = timezone.utc
T0 = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)
PARIS = timezone(timedelta(hours=2))


# ---------------------------------------------------------------------------------------------
# Realistic examples


def claude_installation() -> AgentInstallation:
    return AgentInstallation(
        id="claude",
        name="Claude Code",
        executable_path=Path("/home/dev/.local/bin/claude"),
        wire="claude",
        args=("--output-format", "stream-json"),
        source=InstallationSource.PATH,
        upgrade=MissingAgent("claude-desktop", "Claude Desktop", "brew install --cask claude", ("/Applications",)),
        version="2.1.3",
    )


def claude_details() -> AgentDetails:
    return AgentDetails(
        version="2.1.3",
        auth=Authenticated(AuthKind.SUBSCRIPTION, Account("dev@example.com", "max")),
        capabilities=Capabilities.of(
            Capability.STEER,
            Capability.IMAGES,
            Capability.RESUME,
            Capability.PERMISSIONS,
            Capability.QUESTIONS,
            Capability.CONTEXT_USAGE,
            mcp_transports=("stdio", "sse", "http"),
        ),
        config_options=(
            ConfigOption(
                "model",
                "Model",
                SelectKind(
                    (
                        ConfigChoice("sonnet", "Sonnet", "Fast and capable"),
                        ConfigChoice("opus", "Opus"),
                    )
                ),
                current="sonnet",
                category="model",
            ),
            ConfigOption("fast_mode", "Fast mode", BooleanKind(), current=False, live=False),
            ConfigOption("effort", "Effort", SelectKind((ConfigChoice("low"), ConfigChoice("high"))), current=None),
        ),
        commands=(SlashCommand("compact", "Compact the conversation", "[instructions]"), SlashCommand("review")),
    )


def session_info() -> SessionInfo:
    return SessionInfo(
        session_id="s-42",
        agent=claude_installation(),
        details=claude_details(),
        configuration={"model": "opus", "fast_mode": True},
        resume_token="0f1e2d3c-resume",
        title="Explain the repo",
        status=SessionStatus.WORKING,
    )


def edit_tool() -> ToolUpdate:
    return ToolUpdate(
        id="toolu_01",
        kind=ToolKind.EDIT,
        title="Edit src/app.py",
        status=ToolStatus.COMPLETED,
        input=ToolInput(path="src/app.py", arguments={"file_path": "src/app.py", "replace_all": False}),
        output="The file src/app.py has been updated.",
        diffs=(FileDiff("src/app.py", "print('hi')\n", "print('hello')\n"), FileDiff("NEW.md", "# new\n")),
        locations=(ToolLocation("src/app.py", 3), ToolLocation("NEW.md")),
        raw={"name": "Edit", "input": {"old_string": "hello", "new_string": "hi"}},
    )


def permission_request() -> PermissionRequest:
    tool = ToolUpdate(
        id="toolu_02",
        kind=ToolKind.EXECUTE,
        title="rm -rf build",
        input=ToolInput(command="rm -rf build", description="Clean the build dir"),
    )
    options = (
        PermissionChoice.ALLOW_ONCE,
        PermissionChoice.ALLOW_ALWAYS,
        PermissionChoice.DENY_ONCE,
        PermissionChoice.DENY_ALWAYS,
    )
    return PermissionRequest("perm-1", tool, options, detail="Deletes the build directory")


def question_request() -> QuestionRequest:
    return QuestionRequest(
        "q-1",
        (
            Question(
                "db",
                "Which database?",
                header="Storage",
                choices=(QuestionChoice("pg", "PostgreSQL", "Relational"), QuestionChoice("sqlite", "SQLite")),
                multi_select=False,
                allows_free_text=False,
            ),
            Question("name", "Name the service"),
        ),
    )


def plan_usage() -> PlanUsage:
    return PlanUsage(
        plan="max",
        windows=(
            PlanUsageWindow("5h", 42.5, T0 + timedelta(hours=3)),
            PlanUsageWindow("week", 7.0),
        ),
        fetched_at=datetime(2025, 6, 1, 14, 0, 0, 250000, tzinfo=PARIS),
    )


def transcript() -> list[Event]:
    """A session transcript with every event kind and every stop reason."""
    kinds: list[tuple[Any, TurnInfo | None]] = [
        (StatusChanged(SessionStatus.WORKING), None),
        (TurnStarted(PromptOrigin("p-1")), TurnInfo("t-1")),
        (ReasoningDelta("m-0", "The user wants an overview."), TurnInfo("t-1")),
        (TextDelta("m-1", "Let me look "), TurnInfo("t-1")),
        (TextDelta("m-1", "at the code \u2014 \u00e9t\u00e9 \U0001f680"), TurnInfo("t-1")),
        (MessageEnded("m-1"), TurnInfo("t-1")),
        (ToolUpdated(edit_tool()), TurnInfo("t-1")),
        (ToolUpdated(ToolUpdate("toolu_03", McpTool("github", "search_issues"), "search issues")), TurnInfo("t-1")),
        (ToolOutputDelta("toolu_03", "3 issues found\n"), TurnInfo("t-1", parent_tool_id="toolu_task")),
        (UserMessage("m-2", "Focus on the tests"), TurnInfo("t-1", parent_tool_id="toolu_task")),
        (PlanUpdated((PlanEntry("Read code", PlanEntryStatus.COMPLETED, "high"), PlanEntry("Write summary"))), None),
        (RequestOpened(permission_request()), TurnInfo("t-1")),
        (RequestClosed("perm-1"), TurnInfo("t-1")),
        (RequestOpened(question_request()), TurnInfo("t-1")),
        (RequestClosed("q-1"), TurnInfo("t-1")),
        (ContextUsage(51234, 200000, 0.0123), TurnInfo("t-1")),
        (TurnEnded(Completed(), ("toolu_bg",)), TurnInfo("t-1")),
        (SessionUpdated(session_info()), None),
        (TurnStarted(AgentOrigin()), TurnInfo("t-2")),
        (ContextCompacted(), TurnInfo("t-2")),
        (ContextUsage(1200), TurnInfo("t-2")),
        (TurnEnded(Completed(CompletionSource.INFERRED)), TurnInfo("t-2")),
        (TurnStarted(PromptOrigin("p-2")), TurnInfo("t-3")),
        (TurnEnded(Cancelled()), TurnInfo("t-3")),
        (TurnStarted(PromptOrigin("p-3")), TurnInfo("t-4")),
        (TurnEnded(Refused()), TurnInfo("t-4")),
        (TurnStarted(PromptOrigin("p-4")), TurnInfo("t-5")),
        (TurnEnded(Failed("API error: 529 overloaded")), TurnInfo("t-5")),
        (PlanUsageUpdated(plan_usage()), None),
        (
            Diagnostic(
                DiagnosticInfo(
                    "unknown frame type 'rate_limit_event'",
                    DiagnosticLevel.INFO,
                    "unknown_frame",
                    {"type": "rate_limit_event", "rate_limit_info": {"status": "allowed", "resetsAt": 1748779200}},
                )
            ),
            None,
        ),
        (Diagnostic(DiagnosticInfo("no output for 120 s")), TurnInfo("t-5")),
        (StatusChanged(SessionStatus.IDLE), None),
    ]
    events = []
    for number, (kind, turn) in enumerate(kinds, start=1):
        extensions: dict[str, Any] = {}
        if isinstance(kind, MessageEnded):
            extensions = {"claude/fork_point": "uuid-7", "claude/usage": {"output_tokens": 12, "input_tokens": 3}}
        when = T0 + timedelta(milliseconds=137 * number)
        if number % 5 == 0:
            when = when.astimezone(PARIS)
        events.append(Event(number, when, "s-42", kind, turn, extensions))
    return events


def other_values() -> dict[str, tuple[Any, Any]]:
    """Labelled ``(value, type)`` for every top-level value that is not an event."""
    gemini = AgentDetails(
        auth=Unauthenticated(
            (
                TerminalLogin(("gemini", "auth", "login"), "Log in with Google", {"GEMINI_HOME": "/tmp/g"}),
                EnvVarLogin("GEMINI_API_KEY", "An API key from AI Studio"),
            )
        )
    )
    return {
        "AgentDetails/authenticated": (claude_details(), AgentDetails),
        "AgentDetails/unauthenticated": (gemini, AgentDetails),
        "AgentDetails/unknown": (AgentDetails(auth=AuthUnknown()), AgentDetails),
        "AuthStatus/api_key": (Authenticated(AuthKind.API_KEY), AuthStatus),
        "AuthStatus/cloud": (Authenticated(AuthKind.CLOUD_PROVIDER, Account(plan="bedrock")), AuthStatus),
        "AuthStatus/other": (Authenticated(), AuthStatus),
        "LoginMethod/env": (EnvVarLogin("OPENAI_API_KEY"), LoginMethod),
        "SessionInfo": (session_info(), SessionInfo),
        "SessionInfo/minimal": (SessionInfo("s-1", AgentInstallation.at("codex", "/usr/bin/codex")), SessionInfo),
        "Request/permission": (permission_request(), Request),
        "Request/question": (question_request(), Request),
        "Answer/allow_once": (Answer.permission(PermissionChoice.ALLOW_ONCE), Answer),
        "Answer/allow_always": (Answer.permission(PermissionChoice.ALLOW_ALWAYS), Answer),
        "Answer/deny_once": (Answer.permission(PermissionChoice.DENY_ONCE), Answer),
        "Answer/deny_always": (Answer.permission(PermissionChoice.DENY_ALWAYS), Answer),
        "Answer/question": (
            Answer.question([QuestionAnswer.choices(["pg"]), QuestionAnswer.text("billing-api")]),
            Answer,
        ),
        "QuestionAnswer/choices": (QuestionAnswer.choices(["a", "b"]), QuestionAnswer),
        "DiscoveryReport": (
            DiscoveryReport(
                agents=(claude_installation(), AgentInstallation.acp("kiro", "/opt/kiro/bin/kiro-cli", ["acp"])),
                missing=(MissingAgent("pi", "pi", "npm i -g @mariozechner/pi-coding-agent", ("/usr/bin", "~/.npm")),),
                diagnostics=(DiagnosticInfo("login shell timed out", code="login_shell_timeout"),),
            ),
            DiscoveryReport,
        ),
        "DiscoveryReport/empty": (DiscoveryReport(), DiscoveryReport),
        "PlanUsage": (plan_usage(), PlanUsage),
        "PlanUsage/empty": (PlanUsage(), PlanUsage),
        "PlanUsageEntry/usage": (PlanUsageEntry(claude_installation(), plan_usage()), PlanUsageEntry),
        "PlanUsageEntry/error": (PlanUsageEntry(claude_installation(), error="not logged in"), PlanUsageEntry),
        "HistoryEntry": (
            HistoryEntry(
                "claude",
                "8f14e45f-ceea-4672-9a6c-4c3b9bd5f0a1",
                "fix the flaky test",
                "/work/repo",
                datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc),
                datetime(2026, 11, 30, 9, 42, 5, 250000, tzinfo=timezone.utc),
                14,
            ),
            HistoryEntry,
        ),
        "HistoryEntry/minimal": (HistoryEntry("codex", "thr_1"), HistoryEntry),
        "Delivery/started": (Delivery("p-1", Started("t-1")), Delivery),
        "Delivery/steered": (Delivery("p-2", Steered("t-1")), Delivery),
        "Delivery/queued": (Delivery("p-3", Queued(0)), Delivery),
        "StopReason/completed": (Completed(), StopReason),
        "StopReason/inferred": (Completed(CompletionSource.INFERRED), StopReason),
        "StopReason/cancelled": (Cancelled(), StopReason),
        "StopReason/refused": (Refused(), StopReason),
        "StopReason/failed": (Failed("boom"), StopReason),
        "Input": (Input.text("what is in this picture?").attach("/tmp/shot.png"), Input),
        "SessionOptions": (
            SessionOptions.in_dir("/work/repo")
            .configure("model", "opus")
            .configure("fast_mode", True)
            .fork_from("tok-1", at="msg-9")
            .mcp_server(McpServer.stdio("fs", "mcp-fs", ["--root", "/work"], {"DEBUG": "1"}))
            .mcp_server(McpServer.http("gh", "https://mcp.example.com/").with_header("Authorization", "Bearer x"))
            .mcp_server(McpServer.sse("old", "http://127.0.0.1:9000/sse"))
            .permission_mode(PermissionMode.AUTO_APPROVE)
            .config_home("/home/dev/.claude-work")
            .quiet_window(2.5)
            .record_wire("/tmp/wire.jsonl"),
            SessionOptions,
        ),
        "RollbackScope": (RollbackScope.CONVERSATION_AND_FILES, RollbackScope),
        "AgentProfile": (
            AgentProfile(
                id="gemini",
                name="Gemini CLI",
                wire="acp",
                executables=("gemini",),
                args=("--experimental-acp",),
                login=(TerminalLogin(("gemini",), "Run gemini and pick a login"),),
                install_hint="npm install -g @google/gemini-cli",
                config_home_env="GEMINI_CLI_HOME",
                extra_dirs={"linux": ["~/.npm-global/bin"], "windows": ["%APPDATA%\\npm"]},
                upgrade=AgentProfile(id="gemini-pro", name="Gemini Pro", wire="acp", executables=("gemini-pro",)),
                auth_error_hints=("not authenticated",),
                quirks={"session_modes": True, "models": ["a", "b"]},
            ),
            AgentProfile,
        ),
    }


# ---------------------------------------------------------------------------------------------
# Schema validation helpers


_VALIDATORS: dict[Any, jsonschema.protocols.Validator] = {}


def validator(tp: Any) -> jsonschema.protocols.Validator:
    if tp not in _VALIDATORS:
        schema = json_schema(tp)
        cls = jsonschema.Draft202012Validator
        _VALIDATORS[tp] = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return _VALIDATORS[tp]


def assert_valid(document: Any, tp: Any) -> None:
    errors = sorted(validator(tp).iter_errors(document), key=lambda error: list(error.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def assert_round_trip(value: Any, tp: Any) -> str:
    """dumps → loads gives an equal value, dumps is stable, and the JSON fits the schema."""
    text = dumps(value)
    back = loads(text, tp)
    assert back == value
    assert type(back) is type(value)
    assert dumps(back) == text
    assert_valid(json.loads(text), tp)
    return text


# ---------------------------------------------------------------------------------------------
# Round trips


def test_the_transcript_covers_every_event_kind_and_stop_reason() -> None:
    events = transcript()
    assert {type(event.kind) for event in events} == set(get_args(EventKind))
    stops = {type(event.kind.stop) for event in events if isinstance(event.kind, TurnEnded)}
    assert stops == set(get_args(StopReason))


@pytest.mark.parametrize("event", transcript(), ids=lambda event: f"{event.sequence}-{type(event.kind).__name__}")
def test_every_event_round_trips_and_fits_the_schema(event: Event) -> None:
    text = assert_round_trip(event, Event)
    assert loads(text) == event  # Event is the default type


@pytest.mark.parametrize(("label", "value", "tp"), [(k, *v) for k, v in other_values().items()])
def test_every_top_level_value_round_trips_and_fits_the_schema(label: str, value: Any, tp: Any) -> None:
    assert_round_trip(value, tp)
    assert_round_trip(value, type(value))  # a concrete class reads its own document too


def test_a_transcript_round_trips_as_a_list() -> None:
    events = transcript()
    text = dumps(events)
    assert loads(text, list[Event]) == events
    assert loads(text, tuple[Event, ...]) == tuple(events)


def test_unstructure_and_structure_embed_values_in_other_documents() -> None:
    event = transcript()[3]
    frame = {"event": serialize.unstructure(event)}
    text = json.dumps(frame)
    assert serialize.structure(json.loads(text)["event"]) == event
    assert serialize.structure(json.loads(text)["event"], Event) == event


# ---------------------------------------------------------------------------------------------
# The documented shape


def test_a_text_delta_has_the_documented_shape() -> None:
    event = Event(7, T0, "s1", TextDelta("m1", "hi"), TurnInfo("t1"))
    assert dumps(event) == (
        '{"sequence":7,"occurred_at":"2025-06-01T12:00:00+00:00","session_id":"s1",'
        '"kind":{"type":"TextDelta","message_id":"m1","text":"hi"},'
        '"turn_info":{"id":"t1","parent_tool_id":null},"extensions":{}}'
    )
    assert dumps(TextDelta("m1", "hi")) == '{"type":"TextDelta","message_id":"m1","text":"hi"}'


def test_tagged_classes_carry_their_class_name_first_even_when_empty() -> None:
    assert dumps(Cancelled()) == '{"type":"Cancelled"}'
    assert dumps(Completed()) == '{"type":"Completed","source":"protocol"}'
    assert json.loads(dumps(AuthUnknown())) == {"type": "AuthUnknown"}
    assert json.loads(dumps(Answer.permission(PermissionChoice.DENY_ALWAYS))) == {
        "type": "PermissionAnswer",
        "choice": "deny_always",
    }
    # Classes that are never one of several alternatives carry no tag.
    assert "type" not in json.loads(dumps(TurnInfo("t")))
    assert "type" not in json.loads(dumps(claude_installation()))


def test_tool_kind_is_a_string_or_a_tagged_mcp_tool() -> None:
    builtin = json.loads(dumps(ToolUpdate("x", ToolKind.SUBAGENT)))
    mcp = json.loads(dumps(ToolUpdate("x", McpTool("github", "search"))))
    assert builtin["kind"] == "subagent"
    assert mcp["kind"] == {"type": "McpTool", "server": "github", "tool": "search"}


def test_nulls_enums_paths_and_config_values_are_written_as_documented() -> None:
    document = json.loads(dumps(session_info()))
    assert document["agent"]["executable_path"] == "/home/dev/.local/bin/claude"
    assert document["agent"]["source"] == "path"
    assert document["status"] == "working"
    assert document["configuration"] == {"fast_mode": True, "model": "opus"}
    options = document["details"]["config_options"]
    assert options[0]["kind"]["type"] == "SelectKind"
    assert options[1]["kind"] == {"type": "BooleanKind"}
    assert options[1]["current"] is False
    assert options[2]["current"] is None  # None fields are present, as null
    assert document["details"]["auth"] == {
        "type": "Authenticated",
        "kind": "subscription",
        "account": {"email": "dev@example.com", "plan": "max"},
    }


def test_capabilities_are_sorted_arrays_whatever_the_insertion_order() -> None:
    forward = Capabilities.of(Capability.STEER, Capability.IMAGES, mcp_transports=["stdio", "http"])
    backward = Capabilities.of(Capability.IMAGES, Capability.STEER, mcp_transports=["http", "stdio"])
    assert dumps(forward) == dumps(backward) == '{"items":["images","steer"],"mcp_transports":["http","stdio"]}'


def test_mapping_keys_are_sorted_at_every_level_so_equal_values_give_equal_text() -> None:
    one = Event(1, T0, "s", ContextCompacted(), extensions={"b/x": {"z": 1, "a": [{"d": 1, "c": 2}]}, "a/y": 1})
    two = Event(1, T0, "s", ContextCompacted(), extensions={"a/y": 1, "b/x": {"a": [{"c": 2, "d": 1}], "z": 1}})
    assert one == two
    assert dumps(one) == dumps(two)
    assert dumps(one).endswith('"extensions":{"a/y":1,"b/x":{"a":[{"c":2,"d":1}],"z":1}}}')


def test_the_text_is_one_ascii_line_and_odd_strings_survive() -> None:
    odd = 'caf\u00e9 \U0001f680 \x00 \ud800 line\nbreak \u2028 "quoted" \\'
    event = Event(1, T0, "s", TextDelta("m", odd))
    text = dumps(event)
    assert text.isascii()
    assert "\n" not in text
    assert loads(text) == event
    assert "\n" in dumps(event, indent=2)
    assert loads(dumps(event, indent=2)) == event


def test_free_form_json_comes_back_as_json_loads_gives_it() -> None:
    event = Event(1, T0, "s", ContextCompacted(), extensions={"x/y": ("tuple", 1.5, None, True)})
    assert loads(dumps(event)).extensions == {"x/y": ["tuple", 1.5, None, True]}


def test_an_int_in_a_float_field_is_written_as_a_float() -> None:
    assert dumps(ContextUsage(10, 100, 3)) == dumps(ContextUsage(10, 100, 3.0))
    assert dumps(PlanUsageWindow("5h", 50)) == '{"label":"5h","used_percent":50.0,"resets_at":null}'


# ---------------------------------------------------------------------------------------------
# Datetimes


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(2025, 6, 1, 12, 0, tzinfo=UTC), "2025-06-01T12:00:00+00:00"),
        (datetime(2025, 6, 1, 12, 0, 0, 5, tzinfo=UTC), "2025-06-01T12:00:00.000005+00:00"),
        (datetime(2025, 6, 1, 14, 0, tzinfo=PARIS), "2025-06-01T14:00:00+02:00"),
        (datetime(2025, 6, 1, 6, 30, tzinfo=timezone(timedelta(hours=-5, minutes=-30))), "2025-06-01T06:30:00-05:30"),
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00+00:00"),
    ],
)
def test_datetimes_are_rfc3339_with_their_offset(value: datetime, text: str) -> None:
    assert dumps(value) == json.dumps(text)
    back = loads(dumps(value), datetime)
    assert back == value
    assert back.utcoffset() == value.utcoffset()


def test_a_sub_minute_offset_is_written_in_utc_at_the_same_instant() -> None:
    odd = datetime(2025, 6, 1, 12, 0, 30, tzinfo=timezone(timedelta(minutes=30, seconds=30)))
    assert dumps(odd) == '"2025-06-01T11:30:00+00:00"'
    assert loads(dumps(odd), datetime) == odd


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2025-06-01T12:00:00Z", datetime(2025, 6, 1, 12, tzinfo=UTC)),
        ("2025-06-01t12:00:00z", datetime(2025, 6, 1, 12, tzinfo=UTC)),
        ("2025-06-01 12:00:00-00:00", datetime(2025, 6, 1, 12, tzinfo=UTC)),
        ("2025-06-01T12:00:00.123456789+02:00", datetime(2025, 6, 1, 12, 0, 0, 123456, tzinfo=PARIS)),
        ("2025-06-01T12:00:00.5Z", datetime(2025, 6, 1, 12, 0, 0, 500000, tzinfo=UTC)),
    ],
)
def test_loads_accepts_every_rfc3339_spelling(text: str, expected: datetime) -> None:
    assert loads(json.dumps(text), datetime) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2025-06-01T12:00:00",  # no offset
        "2025-06-01",
        "2025-13-01T12:00:00Z",
        "2025-06-01T24:00:00Z",
        "2025-06-01T12:00:60Z",  # leap seconds are not representable
        "2025-06-01T12:00:00+24:00",
        "2025-06-01T12:00:00+05:75",
        "٢٠٢٥-06-01T12:00:00Z",  # non-ASCII digits
        "2025-06-01T12:00:00Z trailing",
    ],
)
def test_loads_refuses_datetimes_that_are_not_rfc3339_with_offset(text: str) -> None:
    with pytest.raises(DecodeError, match="date-time"):
        loads(json.dumps(text), datetime)


def test_a_naive_datetime_cannot_be_encoded() -> None:
    with pytest.raises(EncodeError, match="naive datetime"):
        dumps(Event(1, datetime(2025, 6, 1), "s", ContextCompacted()))


# ---------------------------------------------------------------------------------------------
# Decoding errors are typed and name the place


def event_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(dumps(Event(1, T0, "s", TextDelta("m", "x"), TurnInfo("t"))))
    return document


def decode_error(document: Any, tp: Any = Event) -> DecodeError:
    with pytest.raises(DecodeError) as caught:
        loads(json.dumps(document), tp)
    return caught.value


def test_decode_errors_are_invalid_requests_and_value_errors() -> None:
    error = decode_error({**event_document(), "kind": {"type": "Bogus"}})
    assert isinstance(error, InvalidRequest)
    assert isinstance(error, ValueError)
    assert isinstance(error, SerializationError)
    assert error.errors == (error.errors[0],)
    assert "unknown type tag 'Bogus' for EventKind" in error.message
    assert error.errors[0].endswith("@ $.kind")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"kind": {"text": "x"}}, 'EventKind needs a "type" tag'),
        ({"kind": {"type": 5}}, 'EventKind needs a "type" tag'),
        ({"kind": "TextDelta"}, "expected EventKind, got the string 'TextDelta' @ $.kind"),
        (
            {"kind": {"type": "TextDelta", "message_id": 5, "text": "x"}},
            "expected a string, got number @ $.kind.message_id",
        ),
        ({"kind": {"type": "TextDelta", "message_id": "m"}}, "required field missing @ $.kind.text"),
        ({"sequence": "5"}, "expected an integer, got string @ $.sequence"),
        ({"sequence": True}, "expected an integer, got boolean @ $.sequence"),
        ({"sequence": 1.5}, "expected an integer, got number @ $.sequence"),
        ({"session_id": None}, "expected a string, got null @ $.session_id"),
        ({"occurred_at": 1748779200}, "expected an RFC 3339 date-time string, got number @ $.occurred_at"),
        ({"turn_info": "t"}, "expected TurnInfo or null, got the string 't' @ $.turn_info"),
        ({"turn_info": {"parent_tool_id": None}}, "required field missing @ $.turn_info.id"),
        ({"extensions": []}, "expected an object, got array @ $.extensions"),
        (
            {"kind": {"type": "PlanUpdated", "entries": [{"content": "a", "status": "done"}, {"content": 3}]}},
            "'done' is not a PlanEntryStatus (one of 'pending', 'in_progress', 'completed') @ $.kind.entries[0].status",
        ),
        ({"kind": {"type": "PlanUpdated", "entries": "abc"}}, "expected an array, got string @ $.kind.entries"),
        (
            {"kind": {"type": "ToolUpdated", "tool": {"id": "x", "kind": "bogus"}}},
            "'bogus' is not a ToolKind",
        ),
        ({"kind": {"type": "ToolUpdated", "tool": {"id": "x", "kind": 5}}}, "expected ToolKindValue, got number"),
        (
            {"kind": {"type": "ToolUpdated", "tool": {"id": "x", "kind": {"type": "McpTool", "server": "s"}}}},
            "required field missing @ $.kind.tool.kind.tool",
        ),
        (
            {"kind": {"type": "TurnEnded", "stop": {"type": "Exploded"}}},
            "unknown type tag 'Exploded' for StopReason",
        ),
    ],
)
def test_a_bad_document_raises_a_decode_error_naming_the_place(change: dict[str, Any], expected: str) -> None:
    error = decode_error({**event_document(), **change})
    assert expected in error.message


def test_every_problem_is_listed() -> None:
    error = decode_error({**event_document(), "sequence": "1", "session_id": 2, "kind": {"type": "Nope"}})
    assert len(error.errors) == 3
    assert {problem.rsplit("@ ", 1)[1] for problem in error.errors} == {"$.sequence", "$.session_id", "$.kind"}


def test_a_missing_required_top_level_field_is_named() -> None:
    document = event_document()
    del document["session_id"]
    assert "required field missing @ $.session_id" in decode_error(document).message


def test_a_wrong_tag_for_a_concrete_class_is_refused() -> None:
    assert "type tag 'Cancelled' where a Failed belongs" in decode_error({"type": "Cancelled"}, Failed).message


def test_config_values_must_be_strings_or_booleans() -> None:
    document = json.loads(dumps(session_info()))
    document["configuration"]["effort"] = 3
    error = decode_error(document, SessionInfo)
    assert "expected ConfigValue, got number @ $.configuration['effort']" in error.message


def test_a_class_validator_message_is_kept() -> None:
    document = json.loads(dumps(other_values()["AgentProfile"][0]))
    document["id"] = "Not An Id"
    assert "must be lowercase" in decode_error(document, AgentProfile).message


@pytest.mark.parametrize(
    "text",
    ["", "{", '{"sequence": 1,}', "NaN", '{"x": Infinity}', "-Infinity", b"\xff\xfe{", "[" * 100_000],
)
def test_malformed_json_is_a_decode_error(text: str | bytes) -> None:
    with pytest.raises(DecodeError):
        loads(text)


@pytest.mark.parametrize("text", [None, 5, ["{}"], {"sequence": 1}])
def test_loads_refuses_what_is_not_text(text: Any) -> None:
    with pytest.raises(DecodeError, match="JSON text"):
        loads(text)


def test_loads_takes_bytes() -> None:
    event = transcript()[0]
    assert loads(dumps(event).encode()) == event


def test_unknown_keys_are_ignored_and_missing_defaults_are_filled() -> None:
    """Forward and backward compatible: a newer writer's extra key, an older writer's missing one."""
    document = {"sequence": 3, "occurred_at": "2025-06-01T12:00:00Z", "session_id": "s", "future": [1]}
    document["kind"] = {"type": "ContextUsage", "used_tokens": 5, "new_field": True}
    event = loads(json.dumps(document))
    assert event == Event(3, T0, "s", ContextUsage(5))


# ---------------------------------------------------------------------------------------------
# Encoding errors are typed


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (ContextUsage(1, 2, float("nan")), "not JSON compliant"),
        (PlanUsageWindow("5h", float("inf")), "not JSON compliant"),
        (Event(1, T0, "s", ContextCompacted(), extensions={"x/y": object()}), "cannot encode object as JSON data"),
        (Event(1, T0, "s", ContextCompacted(), extensions={"x/y": {1: "a"}}), "keys must be str"),
        (Event(1, T0, "s", ContextCompacted(), extensions={"x/y": {"a", "b"}}), "cannot encode set"),
        (SessionInfo("s", claude_installation(), configuration={"m": 1.5}), "cannot encode a float as ConfigValue"),
        (Event(1, T0, "s", Completed()), "cannot encode a Completed as EventKind"),  # type: ignore[arg-type]
        (QuestionsAnswer((QuestionAnswer(),)), "cannot encode a QuestionAnswer as QuestionAnswer"),
        (object(), "cannot encode object"),
    ],
)
def test_a_value_that_cannot_be_written_raises_an_encode_error(value: Any, expected: str) -> None:
    with pytest.raises(EncodeError, match=expected) as caught:
        dumps(value)
    assert isinstance(caught.value, InvalidRequest)


def test_deeply_nested_free_form_json_is_an_encode_error_not_a_crash() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(EncodeError):
        dumps(DiagnosticInfo("deep", raw=deep))


# ---------------------------------------------------------------------------------------------
# The schema


def test_the_schema_is_valid_draft_2020_12() -> None:
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$ref"] == "#/$defs/Event"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_schema_has_a_definition_for_every_public_value_class_and_enum() -> None:
    import anyagent

    defs = json_schema()["$defs"]
    public = [getattr(anyagent, name) for name in anyagent.__all__]
    classes = {value.__name__ for value in public if attrs.has(value) if isinstance(value, type)}
    enums = {value.__name__ for value in public if isinstance(value, type) and issubclass(value, enum.Enum)}
    expected = (classes | enums) - {
        "PluginInfo",
        "Register",
        "PluginWarning",
        "DemoAgent",
        "CliCommand",
        "CommandContext",
    }  # plugin-side, not data
    assert expected - set(defs) == set()
    for union in ("EventKind", "StopReason", "Request", "AuthStatus", "LoginMethod", "ConfigKind", "DeliveryKind"):
        assert "oneOf" in defs[union], union


def test_the_schema_is_generated_from_the_classes() -> None:
    defs = json_schema()["$defs"]
    for cls in (ToolUpdate, SessionInfo, AgentDetails, PermissionRequest, Event):
        names = [field.name for field in attrs.fields(cls)]
        assert [name for name in defs[cls.__name__]["properties"] if name != "type"] == names
        assert defs[cls.__name__]["additionalProperties"] is False
    assert defs["TextDelta"]["properties"]["type"] == {"const": "TextDelta"}
    assert defs["ToolStatus"]["enum"] == [status.value for status in ToolStatus]
    assert defs["Capabilities"]["properties"]["items"]["uniqueItems"] is True


def test_json_schema_can_root_at_any_top_level_value() -> None:
    schema = json_schema(SessionInfo)
    assert schema["$ref"] == "#/$defs/SessionInfo"
    assert schema["$defs"] == json_schema()["$defs"]
    assert json_schema(list[Event])["items"] == {"$ref": "#/$defs/Event"}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"kind": {"type": "Bogus"}}, ["kind"]),
        ({"occurred_at": "2025-06-01T12:00:00"}, ["occurred_at"]),
        ({"sequence": "1"}, ["sequence"]),
        ({"extra": 1}, []),
        ({"turn_info": {"id": "t"}}, ["turn_info"]),
    ],
)
def test_the_schema_rejects_documents_dumps_never_writes(change: dict[str, Any], path: list[str]) -> None:
    document = {**event_document(), **change}
    errors = list(validator(Event).iter_errors(document))
    assert errors
    assert any(list(error.absolute_path) == path for error in errors)


# ---------------------------------------------------------------------------------------------
# Golden files: a shape change shows up in review


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE_GOLDEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return
    assert path.exists(), f"{path} is missing; create it with ANYAGENT_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = difflib.unified_diff(
            expected.splitlines(), text.splitlines(), f"golden/{name}", "generated", lineterm="", n=2
        )
        shown = "\n".join(list(diff)[:80])
        pytest.fail(
            f"The JSON shape changed ({name}). If intended, rerun with ANYAGENT_UPDATE_GOLDEN=1 and commit:\n{shown}"
        )


def test_the_schema_matches_the_golden_file() -> None:
    check_golden("schema.json", json.dumps(json_schema(), indent=2) + "\n")


posix_only = pytest.mark.skipif(sys.platform == "win32", reason="the golden documents hold POSIX paths")


@posix_only
def test_the_transcript_matches_the_golden_file() -> None:
    events = transcript()
    text = dumps(events, indent=2) + "\n"
    check_golden("transcript.json", text)
    assert loads((GOLDEN / "transcript.json").read_text(encoding="utf-8"), list[Event]) == events


@posix_only
def test_the_other_values_match_the_golden_file() -> None:
    values = other_values()
    documents = {label: json.loads(dumps(value)) for label, (value, _tp) in values.items()}
    check_golden("values.json", json.dumps(documents, indent=2, ensure_ascii=True) + "\n")
    stored = json.loads((GOLDEN / "values.json").read_text(encoding="utf-8"))
    for label, (value, tp) in values.items():
        assert serialize.structure(stored[label], tp) == value, label


# ---------------------------------------------------------------------------------------------
# Extending the converter


@attrs.frozen
class Weather:
    city: str
    at: datetime


def test_an_app_can_extend_its_own_converter() -> None:
    converter = serialize.make_converter()
    converter.register_unstructure_hook(Weather, lambda w: {"city": w.city.upper(), "at": dumps(w.at)[1:-1]})
    value = Weather("paris", T0)
    text = dumps(value, converter=converter)
    assert text == '{"city":"PARIS","at":"2025-06-01T12:00:00+00:00"}'
    assert loads(text, Weather, converter=converter) == Weather("PARIS", T0)
    # The module's own converter is untouched.
    assert dumps(value) == '{"city":"paris","at":"2025-06-01T12:00:00+00:00"}'


# ---------------------------------------------------------------------------------------------
# Property: random values of every type round-trip and fit the schema


OFFSETS = st.one_of(
    st.just(UTC),
    st.integers(-1439, 1439).map(lambda minutes: timezone(timedelta(minutes=minutes))),
    st.integers(-86399, 86399).map(lambda seconds: timezone(timedelta(seconds=seconds))),
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
LEAVES: dict[Any, st.SearchStrategy[Any]] = {
    str: st.text(max_size=12),
    int: st.integers(),
    float: st.floats(allow_nan=False, allow_infinity=False),
    bool: st.booleans(),
    datetime: st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=OFFSETS),
    Path: st.text(min_size=1, max_size=12).map(Path),
    Any: JSON_VALUES,
}
FIELD_OVERRIDES: dict[tuple[type, str], st.SearchStrategy[Any]] = {
    (AgentProfile, "id"): st.from_regex(r"[a-z0-9][a-z0-9._-]{0,8}", fullmatch=True),
}
_STRATEGIES: dict[Any, st.SearchStrategy[Any]] = {}
UNION_NAMES = {EventKind: "EventKind", StopReason: "StopReason", Request: "Request"}


def strategy(tp: Any) -> st.SearchStrategy[Any]:
    """A strategy for any type the serializer handles, built by walking the attrs classes."""
    if tp not in _STRATEGIES:
        _STRATEGIES[tp] = st.deferred(lambda: build_strategy(tp))
    return _STRATEGIES[tp]


def build_strategy(tp: Any) -> st.SearchStrategy[Any]:
    origin, args = get_origin(tp), get_args(tp)
    if tp in LEAVES:
        return LEAVES[tp]
    if tp is type(None):
        return st.none()
    if origin in (Union, types.UnionType):
        return st.one_of([strategy(arg) for arg in args])
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(list(tp))
    if tp in (Answer, QuestionAnswer):
        members = (PermissionAnswer, QuestionsAnswer) if tp is Answer else (TextAnswer, ChoicesAnswer)
        return st.one_of([strategy(member) for member in members])
    if attrs.has(tp):
        fields = {field.name: field_strategy(tp, field) for field in attrs.fields(tp)}
        return st.builds(tp, **fields)
    if origin is tuple:
        return st.lists(strategy(args[0]), max_size=3).map(tuple)
    if origin is frozenset:
        return st.frozensets(strategy(args[0]), max_size=4)
    if origin is Mapping:
        return st.dictionaries(st.text(max_size=8), strategy(args[1]), max_size=3)
    raise TypeError(f"no strategy for {tp!r}")


def field_strategy(cls: type, field: attrs.Attribute[Any]) -> st.SearchStrategy[Any]:
    assert not isinstance(field.type, str), f"{cls.__name__}.{field.name} is unresolved"
    override = FIELD_OVERRIDES.get((cls, field.name))
    return strategy(field.type) if override is None else override


PROPERTY = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY
@given(strategy(Event))
def test_random_events_round_trip_and_fit_the_schema(event: Event) -> None:
    assert_round_trip(event, Event)


@settings(PROPERTY, max_examples=25)
@given(st.data())
@pytest.mark.parametrize("tp", serialize.ROOTS, ids=lambda tp: UNION_NAMES.get(tp) or tp.__name__)
def test_random_top_level_values_round_trip_and_fit_the_schema(tp: Any, data: st.DataObject) -> None:
    assert_round_trip(data.draw(strategy(tp)), tp)
