"""The pure translator: Claude frames in, seam events and reply frames out."""

from __future__ import annotations

from typing import Any

import claude_frames as f
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anyagent import (
    Answer,
    Cancelled,
    Completed,
    ContextCompacted,
    ContextUsage,
    Diagnostic,
    DiagnosticCode,
    DiagnosticLevel,
    EnvVarLogin,
    Failed,
    McpTool,
    MessageEnded,
    PermissionChoice,
    PermissionRequest,
    PlanEntryStatus,
    PlanUpdated,
    QuestionAnswer,
    QuestionRequest,
    ReasoningDelta,
    Refused,
    RequestOpened,
    TextDelta,
    ToolKind,
    ToolStatus,
    ToolUpdated,
    UserMessage,
    seam,
)
from anyagent_claude.translate import (
    ControlReply,
    ModeSeen,
    SessionSeen,
    Translation,
    Translator,
    TurnFinished,
)


def kinds(out: Translation) -> list[Any]:
    """The event kinds (Content unwrapped) of one translation."""
    return [event.kind if isinstance(event, seam.Content) else event for event in out.events]


def feed_all(translator: Translator, *frames: Any) -> list[Any]:
    collected: list[Any] = []
    for frame in frames:
        collected += kinds(translator.feed(frame))
    return collected


def only(items: list[Any], cls: type) -> list[Any]:
    return [item for item in items if isinstance(item, cls)]


def test_text_deltas_are_grouped_by_message_and_end_with_the_fork_point() -> None:
    t = Translator()
    out = feed_all(
        t,
        f.message_start("msg_1"),
        f.text_delta("hel"),
        f.text_delta("lo"),
        f.assistant("msg_1", [{"type": "text", "text": "hello"}], uuid="assistant-uuid-7"),
        f.message_stop(),
    )
    assert out == [TextDelta("msg_1", "hel"), TextDelta("msg_1", "lo"), MessageEnded("msg_1")]
    ended = t.feed(f.message_stop())
    assert ended.events == []  # a second stop for the same message is not a second end
    t2 = Translator()
    feed_all(t2, f.message_start("m"), f.text_delta("x"), f.assistant("m", [], uuid="fork-here"))
    [event] = t2.feed(f.message_stop()).events
    assert isinstance(event, seam.Content)
    assert event.extensions == {"claude/fork_point": "fork-here"}


def test_thinking_deltas_are_reasoning_and_empty_deltas_are_dropped() -> None:
    t = Translator()
    out = feed_all(
        t,
        f.message_start("m2"),
        f.text_delta("", kind="thinking_delta"),
        f.text_delta("let me see", kind="thinking_delta"),
        f.text_delta("answer"),
        f.message_stop(),
    )
    assert out == [ReasoningDelta("m2", "let me see"), TextDelta("m2", "answer"), MessageEnded("m2")]


def test_a_message_that_never_streamed_is_surfaced_whole() -> None:
    t = Translator()
    out = feed_all(t, f.assistant("synthetic-1", [{"type": "text", "text": "Not enough messages to compact."}]))
    assert out == [TextDelta("synthetic-1", "Not enough messages to compact."), MessageEnded("synthetic-1")]


def test_authentication_failed_is_auth_lost_once_with_the_login_methods() -> None:
    login = (EnvVarLogin("ANTHROPIC_API_KEY"),)
    t = Translator(login)
    frame = f.assistant(
        "s1", [{"type": "text", "text": "Not logged in · Please run /login"}], error="authentication_failed"
    )
    out = feed_all(t, frame, frame)
    assert only(out, seam.AuthLost) == [seam.AuthLost(login)]
    stop = feed_all(t, f.result(subtype="success", is_error=True, text="Not logged in · Please run /login"))
    assert stop[-1] == seam.TurnEnd(Failed("Not logged in · Please run /login"))


def test_bash_tool_runs_then_completes_or_fails() -> None:
    t = Translator()
    [started] = feed_all(t, f.assistant("m", [f.tool_use("toolu_1", "Bash", command="ls -la", description="List")]))
    assert isinstance(started, ToolUpdated)
    tool = started.tool
    assert (tool.id, tool.kind, tool.status, tool.title) == ("toolu_1", ToolKind.EXECUTE, ToolStatus.RUNNING, "ls -la")
    assert tool.input.command == "ls -la" and tool.input.description == "List"
    [done] = feed_all(t, f.tool_result("toolu_1", "a\nb"))
    assert done.tool.status is ToolStatus.COMPLETED and done.tool.output == "a\nb"
    assert done.tool.input.command == "ls -la"  # cumulative snapshot
    feed_all(t, f.assistant("m", [f.tool_use("toolu_2", "Bash", command="false")]))
    [failed] = feed_all(t, f.tool_result("toolu_2", [{"type": "text", "text": "Exit code 1"}], is_error=True))
    assert failed.tool.status is ToolStatus.FAILED and failed.tool.output == "Exit code 1"


def test_long_tool_output_is_capped() -> None:
    t = Translator()
    feed_all(t, f.assistant("m", [f.tool_use("t1", "Read", file_path="/w/big.txt")]))
    [done] = feed_all(t, f.tool_result("t1", "x" * 100_000))
    assert done.tool.output is not None
    assert len(done.tool.output) < 17 * 1024 and "more characters" in done.tool.output


@pytest.mark.parametrize(
    ("use_result", "expected"),
    [
        (
            {"type": "create", "filePath": "/w/a.txt", "content": "ALPHA", "originalFile": None},
            ("/w/a.txt", "ALPHA", None),
        ),
        (
            {"type": "update", "filePath": "/w/n.txt", "content": "CHANGED", "originalFile": "hello\n"},
            ("/w/n.txt", "CHANGED", "hello\n"),
        ),
        ({"filePath": "/w/e.py", "oldString": "a = 1", "newString": "a = 2"}, ("/w/e.py", "a = 2", "a = 1")),
    ],
)
def test_edit_results_carry_typed_diffs(use_result: dict[str, Any], expected: tuple[Any, ...]) -> None:
    t = Translator()
    [started] = feed_all(t, f.assistant("m", [f.tool_use("t1", "Write", file_path=expected[0], content="x")]))
    assert started.tool.kind is ToolKind.EDIT and started.tool.locations[0].path == expected[0]
    [done] = feed_all(t, f.tool_result("t1", "ok", use_result=use_result))
    [diff] = done.tool.diffs
    assert (diff.path, diff.new_text, diff.old_text) == expected


def test_tool_names_map_to_kinds() -> None:
    t = Translator()
    blocks = [
        f.tool_use("1", "Grep", pattern="TODO"),
        f.tool_use("2", "WebFetch", url="https://example.com"),
        f.tool_use("3", "Task", description="explore", prompt="look around"),
        f.tool_use("4", "mcp__files__read_file", path="/x"),
        f.tool_use("5", "SomethingNew"),
    ]
    tools = [k.tool for k in feed_all(t, f.assistant("m", blocks))]
    assert [tool.kind for tool in tools] == [
        ToolKind.SEARCH,
        ToolKind.FETCH,
        ToolKind.SUBAGENT,
        McpTool("files", "read_file"),
        ToolKind.OTHER,
    ]
    assert tools[0].input.pattern == "TODO" and tools[1].input.url == "https://example.com"
    assert tools[2].title == "explore" and tools[3].title == "files: read_file"


def test_todo_write_is_a_plan_and_its_result_is_not_a_tool() -> None:
    t = Translator()
    todos = [
        {"content": "read", "status": "completed", "activeForm": "Reading"},
        {"content": "write", "status": "in_progress"},
        {"content": "ship", "status": "pending"},
    ]
    [plan] = feed_all(t, f.assistant("m", [f.tool_use("todo1", "TodoWrite", todos=todos)]))
    assert isinstance(plan, PlanUpdated)
    assert [(e.content, e.status) for e in plan.entries] == [
        ("read", PlanEntryStatus.COMPLETED),
        ("write", PlanEntryStatus.IN_PROGRESS),
        ("ship", PlanEntryStatus.PENDING),
    ]
    assert feed_all(t, f.tool_result("todo1", "Todos have been modified")) == []


def test_permission_request_offers_what_claude_accepts_and_answers_translate() -> None:
    t = Translator()
    args = {"file_path": "/w/hello.txt", "content": "hi"}
    suggestion = {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
    feed_all(t, f.assistant("m", [f.tool_use("toolu_9", "Write", **args)]))
    [opened] = feed_all(t, f.can_use_tool("req-1", "toolu_9", "Write", args, [suggestion]))
    assert isinstance(opened, RequestOpened)
    request = opened.request
    assert isinstance(request, PermissionRequest)
    assert request.id == "req-1" and request.tool.id == "toolu_9" and request.tool.status is ToolStatus.PENDING
    assert request.options == (PermissionChoice.ALLOW_ONCE, PermissionChoice.ALLOW_ALWAYS, PermissionChoice.DENY_ONCE)
    assert t.open_requests == ["req-1"]
    frame = t.answer("req-1", Answer.permission(PermissionChoice.ALLOW_ALWAYS))
    assert frame == {
        "type": "control_response",
        "response": {
            "subtype": "success",
            "request_id": "req-1",
            "response": {"behavior": "allow", "updatedInput": args, "updatedPermissions": [suggestion]},
        },
    }
    assert t.answer("req-1", Answer.permission(PermissionChoice.ALLOW_ONCE)) is None  # answered once

    [opened2] = feed_all(t, f.can_use_tool("req-2", "toolu_x", "Bash", {"command": "rm -rf /"}))
    assert opened2.request.options == (PermissionChoice.ALLOW_ONCE, PermissionChoice.DENY_ONCE)
    assert opened2.request.tool.input.command == "rm -rf /"
    deny = t.answer("req-2", Answer.permission(PermissionChoice.DENY_ONCE))
    assert deny is not None
    assert deny["response"]["response"]["behavior"] == "deny"
    assert isinstance(deny["response"]["response"]["message"], str)
    feed_all(t, f.can_use_tool("req-3", "toolu_y", "Write", args))
    once = t.answer("req-3", Answer.permission(PermissionChoice.ALLOW_ONCE))
    assert once is not None
    assert once["response"]["response"] == {"behavior": "allow", "updatedInput": args}


def test_ask_user_question_becomes_a_question_and_answers_by_label() -> None:
    t = Translator()
    args = {
        "questions": [
            {
                "question": "Which color?",
                "header": "Color",
                "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}],
                "multiSelect": False,
            },
            {
                "question": "Which sizes?",
                "options": [{"label": "S"}, {"label": "M"}, {"label": "L"}],
                "multiSelect": True,
            },
        ]
    }
    assert feed_all(t, f.assistant("m", [f.tool_use("toolu_q", "AskUserQuestion", **args)])) == []
    [opened] = feed_all(t, f.can_use_tool("req-q", "toolu_q", "AskUserQuestion", args))
    request = opened.request
    assert isinstance(request, QuestionRequest)
    first, second = request.questions
    assert (first.text, first.header, [c.label for c in first.choices]) == ("Which color?", "Color", ["Red", "Blue"])
    assert first.choices[0].description == "warm" and not first.multi_select and first.allows_free_text
    assert second.multi_select
    frame = t.answer(
        "req-q",
        Answer.question(
            [QuestionAnswer.choices([first.choices[1].id]), QuestionAnswer.choices([c.id for c in second.choices[:2]])]
        ),
    )
    assert frame is not None
    body = frame["response"]["response"]
    assert body["behavior"] == "allow"
    assert body["updatedInput"]["answers"] == {"Which color?": "Blue", "Which sizes?": "S, M"}
    assert body["updatedInput"]["questions"] == args["questions"]
    feed_all(t, f.can_use_tool("req-q2", "toolu_q2", "AskUserQuestion", args))
    text = t.answer("req-q2", Answer.question([QuestionAnswer.text("green"), QuestionAnswer.text("XL")]))
    assert text is not None
    assert text["response"]["response"]["updatedInput"]["answers"] == {"Which color?": "green", "Which sizes?": "XL"}
    assert feed_all(t, f.tool_result("toolu_q", "answered")) == []  # the question's tool result is not a tool


def test_duplicate_labels_get_distinct_choice_ids() -> None:
    t = Translator()
    args = {"questions": [{"question": "Pick", "options": [{"label": "Same"}, {"label": "Same"}]}]}
    [opened] = feed_all(t, f.can_use_tool("r", "q", "AskUserQuestion", args))
    ids = [c.id for c in opened.request.questions[0].choices]
    assert len(set(ids)) == 2


def test_a_question_without_questions_is_declined_not_hung() -> None:
    t = Translator()
    out = t.feed(f.can_use_tool("r-empty", "q", "AskUserQuestion", {"questions": []}))
    assert out.writes and out.writes[0]["response"]["response"]["behavior"] == "deny"
    assert only(kinds(out), Diagnostic)


def test_subagent_events_carry_the_parent_tool() -> None:
    t = Translator()
    feed_all(t, f.assistant("m", [f.tool_use("task_1", "Task", description="explore", prompt="find x")]))
    prompt = {
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": "find x"}]},
        "parent_tool_use_id": "task_1",
        "uuid": "sub-prompt",
    }
    out = t.feed(prompt)
    assert kinds(out) == [UserMessage("sub-prompt", "find x"), MessageEnded("sub-prompt")]
    assert all(isinstance(e, seam.Content) and e.parent_tool_id == "task_1" for e in out.events)
    child = t.feed(f.assistant("sub_m", [f.tool_use("child_tool", "Read", file_path="/w/x")], parent="task_1"))
    [event] = child.events
    assert isinstance(event, seam.Content) and event.parent_tool_id == "task_1"
    done = t.feed(f.tool_result("child_tool", "content", parent="task_1"))
    assert done.events[0].parent_tool_id == "task_1"  # type: ignore[union-attr]
    text = t.feed(f.assistant("sub_m2", [{"type": "text", "text": "found"}], parent="task_1"))
    assert [e.parent_tool_id for e in text.events] == ["task_1", "task_1"]  # type: ignore[union-attr]
    # the main thread's own replayed prompt never surfaces
    assert t.feed({"type": "user", "message": {"role": "user", "content": "hi"}, "isReplay": True}).events == []
    assert (
        t.feed({"type": "user", "message": {"role": "user", "content": "[Request interrupted by user]"}}).events == []
    )


def test_result_reports_context_usage_then_exactly_one_turn_end() -> None:
    t = Translator()
    t.begin_turn("user-uuid-1")
    out = feed_all(
        t,
        f.message_start("m", input_tokens=10),
        f.text_delta("ok"),
        f.message_delta(42),
        f.assistant("m", [{"type": "text", "text": "ok"}], uuid="asst-1"),
        f.message_stop(),
    )
    translation = t.feed(f.result(window=1_000_000, cost=0.5))
    events = kinds(translation)
    usage, end = events[-2], events[-1]
    assert usage == ContextUsage(10 + 100 + 1000 + 42, 1_000_000, 0.5)
    assert end == seam.TurnEnd(Completed())
    assert translation.notes == [TurnFinished(t.history[-1], Completed())]
    assert t.history[-1].user_uuid == "user-uuid-1" and t.history[-1].fork_point == "asst-1"
    assert out[-1] == MessageEnded("m")


@pytest.mark.parametrize(
    ("frame", "stop"),
    [
        (f.result(subtype="success", is_error=True, text="API Error: 500"), Failed("API Error: 500")),
        (f.result(subtype="error_max_turns", is_error=False, text=None), Failed("error_max_turns")),
        (
            f.result(subtype="error_during_execution", is_error=True, text=None, terminal_reason="aborted_streaming"),
            Cancelled(),
        ),
        (f.result(stop_reason="refusal"), Refused()),
    ],
)
def test_result_stop_reasons(frame: dict[str, Any], stop: Any) -> None:
    assert kinds(Translator().feed(frame))[-1] == seam.TurnEnd(stop)


def test_cancel_denies_open_requests_and_turns_the_result_into_cancelled() -> None:
    t = Translator()
    t.begin_turn("u")
    feed_all(t, f.assistant("m", [f.tool_use("toolu_c", "Bash", command="sleep 100")]))
    feed_all(t, f.can_use_tool("req-c", "toolu_c", "Bash", {"command": "sleep 100"}))
    writes = t.cancel()
    assert [w["response"]["request_id"] for w in writes] == ["req-c"]
    assert writes[0]["response"]["response"]["behavior"] == "deny"
    assert t.open_requests == []
    assert t.decline("req-c") is None  # the engine's Decline after the cancel answers nothing more
    feed_all(t, f.assistant("m", [f.tool_use("toolu_ok", "Read", file_path="/w/x")]))
    [ok] = feed_all(t, f.tool_result("toolu_ok", "x"))
    assert ok.tool.status is ToolStatus.COMPLETED  # a tool that finished still finished
    [denied] = feed_all(t, f.tool_result("toolu_c", "The user cancelled the turn.", is_error=True))
    assert denied.tool.status is ToolStatus.CANCELLED  # its error is the cancel's doing
    out = kinds(t.feed(f.result(subtype="success", text="finished anyway")))
    assert only(out, ToolUpdated) == []  # the engine ends the tool (CANCELLED) at TurnEnded
    assert out[-1] == seam.TurnEnd(Cancelled())
    # the next turn is not cancelled, and the forgotten tool stays forgotten
    assert kinds(t.feed(f.result())) == [seam.TurnEnd(Completed())]


def test_decline_denies_an_open_request_once_and_nothing_else() -> None:
    t = Translator()
    feed_all(t, f.can_use_tool("req-d", "toolu_d", "Bash", {"command": "ls"}))
    feed_all(t, f.can_use_tool("req-e", "toolu_e", "Bash", {"command": "pwd"}))
    frame = t.decline("req-d")
    assert frame is not None
    assert frame["response"]["request_id"] == "req-d" and frame["response"]["response"]["behavior"] == "deny"
    assert t.decline("req-d") is None  # once
    assert t.answer("req-d", Answer.permission(PermissionChoice.ALLOW_ONCE)) is None  # and not answered later
    assert t.decline("never-opened") is None
    assert t.open_requests == ["req-e"]  # the other request still waits for its answer
    assert t.answer("req-e", Answer.permission(PermissionChoice.ALLOW_ONCE)) is not None
    assert t.decline("req-e") is None  # an answered request is not declined


def test_a_tool_without_a_result_is_forgotten_at_the_result_not_ended() -> None:
    t = Translator()
    t.begin_turn("u")
    feed_all(t, f.assistant("m", [f.tool_use("toolu_lost", "Bash", command="sleep 100")]))
    out = kinds(t.feed(f.result()))
    assert only(out, ToolUpdated) == [] and out[-1] == seam.TurnEnd(Completed())
    # a late result for it starts no snapshot from the forgotten one: it reads as a fresh tool
    [late] = feed_all(t, f.tool_result("toolu_lost", "done"))
    assert late.tool.status is ToolStatus.COMPLETED and late.tool.input.command is None


def test_an_interrupted_message_without_message_stop_is_ended_at_the_result() -> None:
    t = Translator()
    out = feed_all(t, f.message_start("cut"), f.text_delta("word0 word1"))
    out += kinds(
        t.feed(
            f.result(subtype="error_during_execution", is_error=True, text=None, terminal_reason="aborted_streaming")
        )
    )
    assert MessageEnded("cut") in out
    assert out.index(MessageEnded("cut")) < len(out) - 1


def test_background_tasks_keep_running_past_the_turn_and_complete_on_notification() -> None:
    t = Translator()
    feed_all(t, f.assistant("m", [f.tool_use("toolu_bg", "Bash", command="sleep 12", run_in_background=True)]))
    [still, backgrounded] = feed_all(
        t,
        f.tool_result(
            "toolu_bg",
            "Command running in background with ID: bj5.",
            use_result={"stdout": "", "stderr": "", "backgroundTaskId": "bj5"},
        ),
    )
    assert still.tool.status is ToolStatus.RUNNING
    assert backgrounded == seam.ToolBackgrounded("toolu_bg")  # the engine lists it in TurnEnded.background
    end = kinds(t.feed(f.result()))
    assert only(end, ToolUpdated) == []  # not closed by the turn end
    note = {
        "type": "system",
        "subtype": "task_notification",
        "task_id": "bj5",
        "tool_use_id": "toolu_bg",
        "status": "completed",
        "summary": 'Background command "sleep" completed (exit code 0)',
    }
    [done] = kinds(t.feed(note))
    assert done.tool.status is ToolStatus.COMPLETED
    assert done.tool.output is not None and "completed (exit code 0)" in done.tool.output
    assert kinds(t.feed(note)) == []  # a repeated notification changes nothing
    assert t.history[-1].user_uuid is None  # a turn anyagent did not prompt


def test_system_frames() -> None:
    t = Translator()
    init = t.feed(f.init("sess-9", mode="plan"))
    assert init.notes == [SessionSeen("sess-9", "claude-sonnet-5", "plan")] and t.session_id == "sess-9"
    assert init.events == []
    mode = t.feed({"type": "system", "subtype": "status", "status": None, "permissionMode": "acceptEdits"})
    assert mode.notes == [ModeSeen("acceptEdits")]
    compacting = feed_all(
        t,
        {"type": "system", "subtype": "status", "status": "compacting"},
        {
            "type": "system",
            "subtype": "compact_boundary",
            "compact_metadata": {"trigger": "manual", "pre_tokens": 9000},
        },
        {"type": "system", "subtype": "status", "status": None, "compact_result": "success"},
    )
    assert compacting == [ContextCompacted()]
    failed = feed_all(
        t,
        {"type": "system", "subtype": "status", "status": "compacting"},
        {
            "type": "system",
            "subtype": "status",
            "status": None,
            "compact_result": "failed",
            "compact_error": "Not enough messages to compact.",
        },
    )
    [diag] = failed
    assert isinstance(diag, Diagnostic) and "Not enough messages" in diag.diagnostic.message
    quiet = feed_all(
        t,
        {"type": "system", "subtype": "hook_started", "hook_id": "h"},
        {"type": "system", "subtype": "thinking_tokens", "estimated_tokens": 5},
        {"type": "rate_limit_event", "rate_limit_info": {"status": "allowed"}},
        {"type": "command_lifecycle", "state": "queued"},
    )
    assert quiet == []


def test_unknown_frames_become_diagnostics_with_the_raw_frame() -> None:
    t = Translator()
    frame = {"type": "brand_new_thing", "payload": [1, 2]}
    out = t.feed(frame)
    [event] = out.events
    assert isinstance(event, seam.Content) and isinstance(event.kind, Diagnostic)
    assert event.kind.diagnostic.level is DiagnosticLevel.INFO
    assert event.kind.diagnostic.code == DiagnosticCode.UNKNOWN_FRAME
    assert event.kind.diagnostic.raw == frame and not event.extensions
    system = t.feed({"type": "system", "subtype": "brand_new_subtype"})
    assert system.events[0].kind.diagnostic.raw["subtype"] == "brand_new_subtype"  # type: ignore[union-attr]
    for junk in ([1, 2], "text", None, 3.5, {"no": "type"}):
        assert len(t.feed(junk).events) == 1


def test_unknown_control_requests_are_answered_with_an_error() -> None:
    t = Translator()
    out = t.feed(
        {"type": "control_request", "request_id": "cli-7", "request": {"subtype": "hook_callback", "callback_id": "x"}}
    )
    assert out.writes == [
        {
            "type": "control_response",
            "response": {
                "subtype": "error",
                "request_id": "cli-7",
                "error": "anyagent does not handle 'hook_callback' control requests",
            },
        }
    ]
    assert only(kinds(out), Diagnostic)


def test_control_responses_and_cancel_requests() -> None:
    t = Translator()
    ok = t.feed(
        {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": "a1", "response": {"mode": "plan"}},
        }
    )
    assert ok.replies == [ControlReply("a1", True, {"mode": "plan"}, "")]
    bad = t.feed({"type": "control_response", "response": {"subtype": "error", "request_id": "a2", "error": "nope"}})
    assert bad.replies == [ControlReply("a2", False, {}, "nope")]
    feed_all(t, f.can_use_tool("req-w", "toolu_w", "Bash", {"command": "ls"}))
    withdrawn = t.feed({"type": "control_cancel_request", "request_id": "req-w"})
    assert withdrawn.events == [seam.RequestWithdrawn("req-w")]
    assert t.open_requests == []
    assert t.feed({"type": "control_cancel_request", "request_id": "req-w"}).events == []


def test_api_retries_are_info_diagnostics() -> None:
    out = kinds(
        Translator().feed(
            {"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10, "error": "overloaded"}
        )
    )
    [diag] = out
    assert diag.diagnostic.code == "api_retry" and "2 of 10" in diag.diagnostic.message


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
frame_types = st.sampled_from(
    [
        "stream_event",
        "assistant",
        "user",
        "control_request",
        "control_response",
        "control_cancel_request",
        "system",
        "result",
        "x",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    frame_types,
    st.dictionaries(
        st.sampled_from(
            [
                "event",
                "message",
                "request",
                "response",
                "subtype",
                "uuid",
                "parent_tool_use_id",
                "tool_use_result",
                "is_error",
                "modelUsage",
                "session_id",
                "request_id",
                "result",
                "status",
            ]
        ),
        json_values,
        max_size=6,
    ),
)
def test_no_frame_shape_raises(kind: str, body: dict[str, Any]) -> None:
    t = Translator()
    out = t.feed({"type": kind, **body})
    assert isinstance(out, Translation)
    assert t.feed(f.result()).events[-1] == seam.TurnEnd(Completed())  # the translator is still usable


def test_an_async_subagent_runs_past_its_tool_result_until_its_notification() -> None:
    t = Translator()
    feed_all(t, f.assistant("m", [f.tool_use("agent_1", "Agent", description="explore", prompt="look")]))
    started = {
        "type": "system",
        "subtype": "task_started",
        "task_id": "a66",
        "tool_use_id": "agent_1",
        "is_backgrounded": True,
        "task_type": "local_agent",
    }
    assert t.feed(started).events == [seam.ToolBackgrounded("agent_1")]
    [launched] = feed_all(  # already reported as backgrounded: once is enough
        t, f.tool_result("agent_1", "Async agent launched successfully.", use_result={"isAsync": True})
    )
    assert launched.tool.status is ToolStatus.RUNNING and launched.tool.kind is ToolKind.SUBAGENT
    child = t.feed(f.assistant("sub", [{"type": "text", "text": "found it"}], parent="agent_1"))
    assert [e.parent_tool_id for e in child.events] == ["agent_1", "agent_1"]  # type: ignore[union-attr]
    assert only(kinds(t.feed(f.result())), ToolUpdated) == []
    note = {
        "type": "system",
        "subtype": "task_notification",
        "task_id": "a66",
        "status": "completed",
        "summary": "found it",
    }
    [done] = kinds(t.feed(note))
    assert done.tool.id == "agent_1" and done.tool.status is ToolStatus.COMPLETED
    assert done.tool.output is not None and done.tool.output.endswith("found it")


def test_compaction_reports_the_post_compaction_usage() -> None:
    t = Translator()
    out = feed_all(
        t,
        {"type": "system", "subtype": "status", "status": "compacting"},
        {"type": "system", "subtype": "status", "status": None, "compact_result": "success"},
        {"type": "system", "subtype": "compact_boundary", "compact_metadata": {"pre_tokens": 120, "post_tokens": 2642}},
        f.result(text=None, window=500_000, cost=0.5),
    )
    assert out == [ContextCompacted(), ContextUsage(2642, 500_000, 0.5), seam.TurnEnd(Completed())]


def test_an_edit_carries_its_proposed_diff_until_its_result_and_a_failed_edit_drops_it() -> None:
    from anyagent_claude.tools import tool_finished, tool_started

    started = tool_started("t1", "Edit", {"file_path": "/w/calc.py", "old_string": "a - b", "new_string": "a + b"})
    assert [(d.path, d.old_text, d.new_text) for d in started.diffs] == [("/w/calc.py", "a - b", "a + b")]
    multi = tool_started(
        "t2", "MultiEdit", {"file_path": "/w/x.py", "edits": [{"old_string": "1", "new_string": "2"}, {"bad": 1}]}
    )
    assert [(d.old_text, d.new_text) for d in multi.diffs] == [("1", "2")]
    denied = tool_finished(started, {"is_error": True, "content": "The user denied this tool use."}, None)
    assert denied.diffs == ()
    done = tool_finished(started, {"content": "ok"}, {"filePath": "/w/calc.py", "oldString": "x", "newString": "y"})
    assert [(d.old_text, d.new_text) for d in done.diffs] == [("x", "y")]


def test_a_late_result_of_a_cancelled_turn_is_stamped_with_that_turn_and_leaves_the_next_alone() -> None:
    t = Translator()
    t.begin_turn("u1", "t1")
    feed_all(t, f.message_start("m1"), f.text_delta("working"))
    t.cancel()  # the engine gives up waiting and starts the next prompt before claude's result comes
    t.begin_turn("u2", "t2")
    feed_all(t, f.message_start("m2"), f.text_delta("second"))
    late = kinds(t.feed(f.result(subtype="error_during_execution", is_error=True, terminal_reason="aborted_tools")))
    assert late == [seam.TurnEnd(Cancelled(), turn_id="t1")]  # nothing of t2 is closed by it
    own = kinds(t.feed(f.result()))
    assert own[-1] == seam.TurnEnd(Completed(), turn_id="t2")
    assert MessageEnded("m2") in own and MessageEnded("m1") not in own  # t1's message ended with t1
    assert [mark.user_uuid for mark in t.history] == ["u1", "u2"]
    t.begin_turn("u3", "t3")
    t.forget_prompt("u3")  # never written: no result will come for it
    t.begin_turn(None)  # a compaction: the engine's own turn
    assert kinds(t.feed(f.result()))[-1] == seam.TurnEnd(Completed(), turn_id=None)


def _foreground_note(tool_id: str) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "task_notification",
        "task_id": "a77",
        "tool_use_id": tool_id,
        "status": "completed",
        "summary": "found it",
        "summary_is_report": True,
    }


@pytest.mark.parametrize("notification_first", [True, False], ids=["notification-first", "result-first"])
def test_a_foreground_subagent_ends_once_with_its_kind_title_and_result(notification_first: bool) -> None:
    """Issue 15 item 1: the pinned CLI notifies a foreground ``Agent`` call's task before its
    ``tool_result``; either order ends the tool once, as the subagent it is."""
    t = Translator()
    [started] = feed_all(t, f.assistant("m", [f.tool_use("agent_1", "Agent", description="explore", prompt="look")]))
    assert started.tool.kind is ToolKind.SUBAGENT and started.tool.title
    task = {
        "type": "system",
        "subtype": "task_started",
        "task_id": "a77",
        "tool_use_id": "agent_1",
        "is_backgrounded": False,
        "task_type": "local_agent",
    }
    assert t.feed(task).events == []
    feed_all(t, f.assistant("sub", [{"type": "text", "text": "found it"}], parent="agent_1"))
    done = f.tool_result("agent_1", [{"type": "text", "text": "found it"}], use_result={"status": "completed"})
    order = [_foreground_note("agent_1"), done] if notification_first else [done, _foreground_note("agent_1")]
    updates = only(feed_all(t, *order), ToolUpdated)
    assert [u.tool.id for u in updates] == ["agent_1"]  # one final snapshot
    [final] = updates
    assert final.tool.status is ToolStatus.COMPLETED
    assert final.tool.kind is ToolKind.SUBAGENT and final.tool.title == started.tool.title
    assert final.tool.output is not None and "found it" in final.tool.output
    end = kinds(t.feed(f.result()))
    assert only(end, ToolUpdated) == [] and end[-1] == seam.TurnEnd(Completed())
    assert only(end, seam.ToolBackgrounded) == []


def test_system_init_reports_the_tools_it_lists() -> None:
    t = Translator()
    [seen] = t.feed({**f.init(), "tools": ["Task", "TodoWrite", 3]}).notes
    assert seen == SessionSeen(f.SESSION, "claude-sonnet-5", "default", ("Task", "TodoWrite"))
    [seen] = t.feed(f.init()).notes
    assert isinstance(seen, SessionSeen) and seen.tools is None


_DELTA_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "parent_tool_use_id": st.sampled_from([None, "", "toolu_1", 7]),
        "api_message_id": st.sampled_from([None, "", "msg_1", 3]),
    },
)


@given(
    fields=_DELTA_FIELDS,
    event_type=st.sampled_from(["content_block_delta", "content_block_start", "message_stop"]),
    delta=st.one_of(
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(["text_delta", "thinking_delta", "input_json_delta"]),
                "text": st.sampled_from(["", "hi", None, 5]),
            }
        ),
        st.sampled_from([None, "x", []]),
    ),
    frame_type=st.sampled_from(["stream_event", "assistant"]),
)
@settings(max_examples=300, deadline=None)
def test_text_delta_fast_path_is_exactly_what_feed_does(
    fields: dict[str, Any], event_type: str, delta: Any, frame_type: str
) -> None:
    """The driver's fast path for text deltas takes a frame only when ``feed`` would make one
    ``TextDelta`` of it, makes the same event, and leaves the translator in the same state."""
    frame = {"type": frame_type, "event": {"type": event_type, "index": 0, "delta": delta}, **fields}
    fast, slow = Translator(), Translator()
    for translator in (fast, slow):
        translator.feed(f.message_start("msg_0"))
    taken = fast.text_delta(frame)
    out = slow.feed(frame)
    if taken is None:  # declined without a trace: the driver feeds the frame as before
        assert fast.feed(frame) == out
    else:
        # a bare TextDelta: the engine takes it as the Content ``feed`` makes
        assert out.events == [seam.Content(taken)] and not out.writes and not out.replies and not out.notes
        assert type(taken) is TextDelta
    for translator in (fast, slow):  # the end of the message closes it the same way
        translator.feed({"type": "stream_event", "event": {"type": "message_stop"}, **fields})
    assert fast._open == slow._open and fast._streamed == slow._streamed and fast._current == slow._current
