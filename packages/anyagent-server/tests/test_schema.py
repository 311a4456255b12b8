"""The committed schema is the generated one; every kind the codec writes validates against it."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
from schema_check import SCHEMA, check_lines
from sidecar_client import SCRIPTS, serve_argv

import anyagent
from anyagent import mock
from anyagent_server import mockscript, wire
from anyagent_server.schema import schema_text


def test_the_committed_schema_is_current() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == schema_text(), (
        "run: anyagent serve --schema > packages/anyagent-server/schema.json"
    )


def test_serve_schema_prints_it() -> None:
    result = subprocess.run(serve_argv("--schema"), capture_output=True, check=True)
    assert result.stdout.decode() == schema_text()


def _kinds() -> list[anyagent.EventKind]:
    info = anyagent.SessionInfo("s1", anyagent.AgentInstallation.at("claude", "/bin/claude"))
    tool = mock.tool("t1", anyagent.ToolStatus.COMPLETED, output="ok")
    return [
        anyagent.TurnStarted(anyagent.PromptOrigin("p1")),
        anyagent.TurnStarted(anyagent.AgentOrigin()),
        mock.text("m1", "hi"),
        mock.reasoning("m1", "hm"),
        anyagent.UserMessage("m2", "steer"),
        anyagent.MessageEnded("m1"),
        tool,
        anyagent.ToolUpdated(anyagent.ToolUpdate("t2", anyagent.McpTool("gh", "search"))),
        anyagent.ToolOutputDelta("t1", "out"),
        mock.plan("one", "two"),
        mock.permission("r1"),
        mock.question("q1"),
        anyagent.RequestClosed("r1"),
        anyagent.SessionUpdated(info),
        anyagent.StatusChanged(anyagent.SessionStatus.NEEDS_INPUT),
        mock.context_usage(10, 100, 0.5),
        anyagent.ContextCompacted(),
        anyagent.PlanUsageUpdated(anyagent.PlanUsage("max", (anyagent.PlanUsageWindow("Week", 12.5),))),
        anyagent.Diagnostic(anyagent.DiagnosticInfo("careful", code="stall")),
        anyagent.TurnEnded(mock.completed()),
        anyagent.TurnEnded(mock.failed("boom")),
        anyagent.TurnEnded(mock.cancelled()),
    ]


def test_every_event_kind_encodes_to_the_schema_and_decodes_back() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 250000, tzinfo=timezone.utc)
    lines = []
    for i, kind in enumerate(_kinds(), 1):
        event = anyagent.Event(i, when, "s1", kind, anyagent.TurnInfo("t1"))
        encoded = wire.encode_event(event)
        assert encoded["occurred_at"] == {"secs_since_epoch": 1767323045, "nanos_since_epoch": 250000000}
        lines.append({"event": encoded})
        if not isinstance(kind, (anyagent.SessionUpdated, anyagent.PlanUsageUpdated)):
            again = wire.encode_event_kind(wire.decode_event_kind(encoded["kind"]))
            assert again == encoded["kind"]
    check_lines(lines)


def test_error_bodies_carry_their_fields() -> None:
    assert wire.encode_error(anyagent.NotInstalled("codex"))["agent"] == "codex"
    login = wire.encode_error(anyagent.AuthRequired([anyagent.EnvVarLogin("ANTHROPIC_API_KEY")]))["login"]
    assert login == [{"EnvVar": {"name": "ANTHROPIC_API_KEY", "description": ""}}]
    exited = wire.encode_error(anyagent.ProcessExited("9", "mock died"))
    assert (exited["kind"], exited["status"], exited["stderr"]) == ("ProcessExited", "9", "mock died")
    check_lines([{"id": 1, "error": exited}, {"session": "s1", "error": wire.encode_error(anyagent.SessionBusy("x"))}])


@pytest.mark.parametrize("name", ["turn", "chatter", "die", "flood", "configure"])
def test_the_five_mock_scripts_load(name: str) -> None:
    script = mockscript.load(SCRIPTS / f"{name}.json")
    assert script.entries


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"turns": [[{"Emit": {"Bogus": {}}}]]}, "unknown variant 'Bogus'"),
        ({"turnz": []}, "unknown field(s) turnz"),
        ({"turns": [[{"Sleep": "10"}]]}, "expected an integer"),
        ({"turns": [["Dance"]]}, "unknown variant 'Dance'"),
    ],
)
def test_a_malformed_mock_script_is_invalid_configuration(data: object, message: str) -> None:
    with pytest.raises(anyagent.InvalidConfiguration, match=message.replace("(", r"\(").replace(")", r"\)")):
        mockscript.parse(data)


def test_the_answer_shapes_decode() -> None:
    assert wire.decode_answer({"Permission": "AllowOnce"}) == anyagent.Answer.permission(
        anyagent.PermissionChoice.ALLOW_ONCE
    )
    answer = wire.decode_answer({"Question": [{"Text": "yes"}, {"Choices": ["a", "b"]}]})
    assert answer == anyagent.Answer.question(
        [anyagent.QuestionAnswer.text("yes"), anyagent.QuestionAnswer.choices(["a", "b"])]
    )
    with pytest.raises(wire.WireError, match=r"\$\.Permission"):
        wire.decode_answer({"Permission": "Maybe"})


def test_scripts_dir_exists() -> None:
    assert Path(SCRIPTS).is_dir()
