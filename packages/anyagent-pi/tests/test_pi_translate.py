"""The translator and the dialog mapping on single frames (what the recordings do not reach)."""

from __future__ import annotations

import json
from pathlib import Path

from anyagent import (
    Answer,
    Cancelled,
    Completed,
    Failed,
    PermissionChoice,
    PermissionRequest,
    QuestionAnswer,
    QuestionRequest,
    ToolStatus,
    ToolUpdated,
    UserMessage,
    seam,
)
from anyagent_pi.adapter import installed_version
from anyagent_pi.gate import MARKER
from anyagent_pi.translate import Translator
from anyagent_pi.ui import dialog_of


def ends(translator: Translator, *frames: dict[str, object]) -> list[seam.TurnEnd]:
    found: list[seam.TurnEnd] = []
    for frame in frames:
        found += [e for e in translator.feed(frame).events if isinstance(e, seam.TurnEnd)]
    return found


def test_one_end_per_run_whether_pi_says_agent_end_agent_settled_or_both() -> None:
    run = {"type": "agent_start"}
    translator = Translator()
    translator.begin_turn("t1")
    assert [e.turn_id for e in ends(translator, run, {"type": "agent_end"}, {"type": "agent_settled"})] == ["t1"]
    translator.begin_turn("t2")
    assert [e.turn_id for e in ends(translator, run, {"type": "agent_settled"})] == ["t2"]
    assert ends(translator, {"type": "agent_end"}, {"type": "agent_settled"}) == []  # strays: nothing runs


def test_the_stop_comes_from_the_last_assistant_message_unless_we_cancelled() -> None:
    failed = {"role": "assistant", "stopReason": "error", "errorMessage": "429 rate limited"}
    translator = Translator()
    translator.begin_turn("t1")
    [end] = ends(translator, {"type": "agent_start"}, {"type": "agent_end", "messages": [failed]})
    assert end.stop == Failed("429 rate limited")
    translator.begin_turn("t2")
    translator.cancelling = True
    aborted = {"role": "assistant", "stopReason": "aborted"}
    [end] = ends(translator, {"type": "agent_start"}, {"type": "agent_end", "messages": [aborted]})
    assert end.stop == Cancelled()
    translator.begin_turn(None)  # pi's own run (nobody prompted)
    [end] = ends(translator, {"type": "agent_start"}, {"type": "agent_end", "messages": []})
    assert end.stop == Completed() and end.turn_id is None


def test_a_tool_that_fails_while_we_cancel_is_cancelled() -> None:
    start = {"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash", "args": {"command": "sleep 9"}}
    end = {"type": "tool_execution_end", "toolCallId": "c1", "isError": True, "result": {"content": []}}
    for cancelling, status in ((False, ToolStatus.FAILED), (True, ToolStatus.CANCELLED)):
        translator = Translator()
        translator.feed(start)
        translator.cancelling = cancelling
        [event] = translator.feed(end).events
        assert isinstance(event, seam.Content) and isinstance(event.kind, ToolUpdated)
        assert event.kind.tool.status is status


def test_dialog_answers_have_pis_shapes_and_a_wrong_kind_has_none() -> None:
    select = dialog_of({"id": "d1", "method": "select", "title": "Pick", "options": ["A", "B"]}, "r1", gate=False)
    assert select is not None and isinstance(select.request, QuestionRequest)
    assert select.answer(Answer.question([QuestionAnswer.choices(["1"])])) == {
        "type": "extension_ui_response",
        "id": "d1",
        "value": "B",
    }
    assert select.answer(Answer.question([QuestionAnswer.choices(["7"])])) is None
    confirm = dialog_of({"id": "d2", "method": "confirm", "title": "Sure?"}, "r2", gate=False)
    assert confirm is not None
    assert confirm.answer(Answer.question([QuestionAnswer.choices(["no"])]))["confirmed"] is False  # type: ignore[index]
    assert confirm.answer(Answer.question([QuestionAnswer.text("yes")])) is None
    assert dialog_of({"id": "d3", "method": "pickFile"}, "r3", gate=False) is None
    assert dialog_of({"method": "select", "options": []}, "r4", gate=False) is None  # no id: nothing to answer


def test_only_the_gates_own_confirm_is_a_permission_and_only_when_the_gate_is_on() -> None:
    call = {"toolCallId": "c9", "toolName": "write", "input": {"path": "/w/a.txt", "content": "x"}}
    frame = {"id": "d9", "method": "confirm", "title": f"{MARKER} write", "message": json.dumps(call)}
    gated = dialog_of(frame, "r9", gate=True)
    assert gated is not None and isinstance(gated.request, PermissionRequest)
    assert gated.request.tool.id == "c9" and gated.request.tool.input.path == "/w/a.txt"
    assert gated.answer(Answer.permission(PermissionChoice.DENY_ONCE))["confirmed"] is False  # type: ignore[index]
    ungated = dialog_of(frame, "r9", gate=False)
    assert ungated is not None and isinstance(ungated.request, QuestionRequest)


def test_the_version_is_read_beside_an_npm_install_without_running_pi(tmp_path: Path) -> None:
    package = tmp_path / "node_modules" / "@earendil-works" / "pi-coding-agent"
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text('{"name": "@earendil-works/pi-coding-agent", "version": "1.6.0"}')
    (package / "dist" / "cli.js").write_text("#!/usr/bin/env node\n")
    bin_dir = tmp_path / "node_modules" / ".bin"
    bin_dir.mkdir()
    (bin_dir / "pi").symlink_to(package / "dist" / "cli.js")
    assert installed_version(bin_dir / "pi") == "1.6.0"
    assert installed_version(tmp_path / "nowhere" / "pi") is None


def test_a_delivered_steer_is_not_a_user_message_but_other_user_content_is() -> None:
    translator = Translator()
    translator.begin_turn("t1")
    translator.steers.append("STEERED TEXT")

    def user(text: str) -> list[object]:
        frame = {"type": "message_start", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
        return [e.kind for e in translator.feed(frame).events if isinstance(e, seam.Content)]

    translator.feed({"type": "agent_start"})
    assert user("the prompt") == []  # the run's own prompt
    assert user("STEERED TEXT") == []  # our steer's echo
    assert translator.steers == []
    [other] = user("STEERED TEXT")  # the same text again: not ours any more
    assert isinstance(other, UserMessage) and other.text == "STEERED TEXT"
