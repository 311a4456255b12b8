"""The translator on its own: odd frames become diagnostics (never exceptions), and the README's
example runs against the scripted fake agy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from agy_support import fake_agy

from anyagent import (
    Completed,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    Failed,
    MessageEnded,
    TextDelta,
    ToolKind,
    ToolStatus,
    ToolUpdated,
    seam,
)
from anyagent_antigravity.translate import Translator, tool_update


def _kinds(events: list[seam.DriverEvent]) -> list[object]:
    return [event.kind if isinstance(event, seam.Content) else event for event in events]


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        ({"event": "mystery"}, DiagnosticCode.UNKNOWN_FRAME),
        ({"nothing": 1}, DiagnosticCode.UNKNOWN_FRAME),
        ({"event": "step_update", "step_update": {"step_type": "tool"}}, DiagnosticCode.BAD_FRAME),
        ({"event": "step_update", "step_update": "oops"}, DiagnosticCode.BAD_FRAME),
        (
            {"event": "step_update", "step_update": {"step_index": 3, "step_type": "hologram"}},
            DiagnosticCode.UNKNOWN_FRAME,
        ),
    ],
)
def test_odd_frames_are_diagnostics(frame: dict[str, object], code: str) -> None:
    [event] = _kinds(Translator().feed(frame))
    assert isinstance(event, Diagnostic) and event.diagnostic.code == code


def test_a_result_ends_open_messages_reports_usage_and_ends_the_turn() -> None:
    translator = Translator()
    step = {"step_index": 3, "state": "ACTIVE", "step_type": "agent_response", "text_delta": "hi"}
    assert _kinds(translator.feed({"event": "step_update", "step_update": step})) == [TextDelta("step-3", "hi")]
    done = {"step_index": 4, "state": "DONE", "step_type": "agent_response", "usage": {"total_tokens": 99}}
    assert _kinds(translator.feed({"event": "step_update", "step_update": done})) == []  # no text: no message
    result = {"event": "result", "result": {"status": "SUCCESS"}}
    assert _kinds(translator.feed(result)) == [MessageEnded("step-3"), ContextUsage(99), seam.TurnEnd(Completed())]
    failed = {"event": "result", "result": {"status": "ERROR", "error": "boom"}}
    assert _kinds(translator.feed(failed)) == [ContextUsage(99), seam.TurnEnd(Failed("boom"))]


def test_tool_snapshots_carry_kind_status_input_and_output() -> None:
    step = {
        "step_index": 7,
        "state": "ERROR",
        "step_type": "tool",
        "tool_name": "grep_search",
        "tool_info": {"parameters": {"Query": "TODO"}, "error": {"message": "denied"}},
    }
    tool = tool_update(step)
    assert tool is not None
    assert (tool.id, tool.kind, tool.status, tool.input.pattern, tool.output) == (
        "step-7",
        ToolKind.SEARCH,
        ToolStatus.FAILED,
        "TODO",
        "denied",
    )
    assert tool.title == "grep_search: TODO"
    [event] = Translator().feed({"event": "step_update", "step_update": {**step, "tool_name": "mystery_tool"}})
    assert isinstance(event, seam.Content) and isinstance(event.kind, ToolUpdated)
    assert event.kind.tool.kind is ToolKind.OTHER


def test_the_readme_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    [block] = re.findall(r"```python\n(.*?)```", readme, re.S)
    fake_agy(tmp_path / "path")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    monkeypatch.setenv("ANYAGENT_NO_LOGIN_SHELL", "1")
    monkeypatch.delenv("ANYAGENT_ANTIGRAVITY_BIN", raising=False)
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "Install Antigravity (ACP server)" in out  # only agy: the upgrade is offered
    assert "echo: Reply with exactly the word pong" in out
