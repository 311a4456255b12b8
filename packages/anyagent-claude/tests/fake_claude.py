"""A tiny stand-in for ``claude -p --input-format stream-json`` (stdlib only), for failure modes.

Behaviour comes from the environment:

* ``FAKE_CLAUDE_LOG`` — JSONL file: ``{"argv": [...]}`` first, then every stdin frame as
  ``{"in": frame}``; every record carries the ``pid`` of the process that wrote it.
* ``FAKE_CLAUDE_MODE`` — what happens (see ``HANDSHAKE`` and ``TURNS``); default ``ok``.
* ``FAKE_CLAUDE_ACCOUNT`` — the ``initialize`` account (JSON); ``FAKE_CLAUDE_USAGE`` — the
  ``get_usage`` answer (JSON; absent: an error answer); ``FAKE_CLAUDE_REFUSE`` — comma-separated
  control subtypes answered with an error; ``FAKE_CLAUDE_FAST_FAILS`` — a launch with fast mode
  on exits before its handshake; ``FAKE_CLAUDE_TOOLS`` — the tools ``system/init`` lists (JSON;
  default: without ``TodoWrite``, as claude 2.1.332 lists them for SDK sessions).

``FAKE_CLAUDE_MODE=ignores_interrupt`` plays a cancel confirmed late (issue 28 item 3a): the first
turn streams a delta every 20 ms for ``FAKE_CLAUDE_STREAM_ON`` seconds (default 1.5) without reading
stdin, so an ``interrupt`` waits unread, then ends the turn itself; the interrupt is then answered
with no result of its own, and later turns echo.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

MODE = os.environ.get("FAKE_CLAUDE_MODE", "ok")
LOG = os.environ.get("FAKE_CLAUDE_LOG")
ACCOUNT = json.loads(os.environ.get("FAKE_CLAUDE_ACCOUNT", '{"apiKeySource": "ANTHROPIC_API_KEY"}'))
USAGE = os.environ.get("FAKE_CLAUDE_USAGE")
REFUSE = set(filter(None, os.environ.get("FAKE_CLAUDE_REFUSE", "").split(",")))
FAST_FAILS = bool(os.environ.get("FAKE_CLAUDE_FAST_FAILS"))
TOOLS = json.loads(os.environ.get("FAKE_CLAUDE_TOOLS", '["Task", "Bash", "Edit", "Read"]'))
SESSION = "fake-session"
STREAM_ON = float(os.environ.get("FAKE_CLAUDE_STREAM_ON", "1.5"))
TURNS = [0]

INIT = {
    "commands": [{"name": "review", "description": "Review", "argumentHint": ""}],
    "models": [
        {
            "value": "default",
            "displayName": "Default",
            "supportedEffortLevels": ["low", "high"],
            "supportsFastMode": True,
        },
        {"value": "haiku", "displayName": "Haiku"},
    ],
    "account": ACCOUNT,
    "current_permission_mode": "default",
    "claude_code_version": "9.9.9",
}


def log(record: dict[str, Any]) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as file:
            file.write(json.dumps({**record, "pid": os.getpid()}) + "\n")


def out(frame: Any) -> None:
    sys.stdout.write((frame if isinstance(frame, str) else json.dumps(frame)) + "\n")
    sys.stdout.flush()


def respond(request_id: str, body: Any = None, error: str | None = None) -> None:
    if error is not None:
        out({"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": error}})
    else:
        response: dict[str, Any] = {"subtype": "success", "request_id": request_id}
        if body is not None:
            response["response"] = body
        out({"type": "control_response", "response": response})


def stream(text: str, message_id: str = "msg_1") -> None:
    init = {"type": "system", "subtype": "init", "session_id": SESSION, "model": "fake", "permissionMode": "default"}
    out({**init, "tools": TOOLS})
    usage = {"input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    out({"type": "stream_event", "event": {"type": "message_start", "message": {"id": message_id, "usage": usage}}})
    for word in text.split(" "):
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": word + " "}}
        out({"type": "stream_event", "event": delta})
    out({"type": "assistant", "message": {"id": message_id, "content": [{"type": "text", "text": text}]}, "uuid": "a1"})
    out({"type": "stream_event", "event": {"type": "message_stop"}})


def tool_started(tool_id: str, name: str, args: dict[str, Any]) -> None:
    usage = {"input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    out({"type": "stream_event", "event": {"type": "message_start", "message": {"id": "tm", "usage": usage}}})
    block = {"type": "tool_use", "id": tool_id, "name": name, "input": args}
    out({"type": "assistant", "message": {"id": "tm", "content": [block]}, "uuid": "a0"})


def result(**fields: Any) -> None:
    frame = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "done",
        "session_id": SESSION,
        "total_cost_usd": 0.01,
        "modelUsage": {"fake": {"contextWindow": 1000}},
    }
    frame.update(fields)
    out(frame)


def read() -> Any:
    line = sys.stdin.readline()
    if not line:
        return None
    frame = json.loads(line)
    log({"in": frame})
    return frame


def handshake() -> bool:
    """Answer initialize the way MODE says; False when the process should stop."""
    first = read()
    if first is None:
        return False
    request_id = first["request_id"]
    if MODE == "hang":
        time.sleep(3600)
    if FAST_FAILS and any("fastMode" in arg for arg in sys.argv):
        sys.stderr.write("fast mode is not available\n")
        sys.stderr.flush()
        sys.exit(2)
    if MODE == "noresume":
        sys.stderr.write("No conversation found with session ID: 1234\n")
        sys.stderr.flush()
        sys.exit(1)
    if MODE == "init_error":
        respond(request_id, error="initialize exploded")
        return True
    out({"type": "system", "subtype": "hook_started", "hook_id": "h1"})
    respond(request_id, INIT)
    return True


def control(frame: dict[str, Any], turn_user: str | None) -> None:
    request = frame["request"]
    subtype = request["subtype"]
    request_id = frame["request_id"]
    if subtype in REFUSE:
        respond(request_id, error=f"{subtype} refused")
    elif subtype == "get_usage":
        respond(request_id, json.loads(USAGE)) if USAGE else respond(request_id, error="no usage")
    elif subtype == "interrupt":
        if MODE == "ignores_interrupt":
            respond(request_id, {"still_queued": []})  # too late: the turn already ended itself
        elif MODE == "queued_cancel":
            respond(request_id, {"cancelled": [turn_user]})
        else:
            respond(request_id, {"still_queued": []})
            result(subtype="error_during_execution", is_error=True, result=None, terminal_reason="aborted_streaming")
    elif subtype == "set_permission_mode":
        respond(request_id, {"mode": request["mode"]})
    else:
        respond(request_id, {})


def turn(frame: dict[str, Any]) -> None:
    content = frame["message"]["content"]
    text = (
        content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if b.get("type") == "text")
    )
    TURNS[0] += 1
    if MODE == "ignores_interrupt" and TURNS[0] == 1:
        usage = {"input_tokens": 10, "output_tokens": 2, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        out({"type": "stream_event", "event": {"type": "message_start", "message": {"id": "long", "usage": usage}}})
        until = time.monotonic() + STREAM_ON
        while time.monotonic() < until:
            delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}
            out({"type": "stream_event", "event": delta})
            time.sleep(0.02)
        out({"type": "stream_event", "event": {"type": "message_stop"}})
        result()
    elif MODE == "garbage":
        out("this is not json")
        out("[1, 2, 3]")
        out({"type": "brand_new_frame", "x": 1})
        out({"type": "control_request", "request_id": "cli-1", "request": {"subtype": "elicitation", "x": 1}})
        stream("after garbage")
        result()
    elif MODE == "die":
        stream("about to die")
        sys.stderr.write("boom: the fake ran out of memory\n")
        sys.stderr.flush()
        os._exit(3)
    elif MODE == "authlost":
        out(
            {
                "type": "assistant",
                "message": {
                    "id": "syn",
                    "model": "<synthetic>",
                    "content": [{"type": "text", "text": "Not logged in"}],
                },
                "error": "authentication_failed",
            }
        )
        result(is_error=True, result="Not logged in")
    elif MODE == "withdrawn":
        out(
            {
                "type": "assistant",
                "message": {
                    "id": "m",
                    "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
                },
            }
        )
        out(
            {
                "type": "control_request",
                "request_id": "perm-1",
                "request": {
                    "subtype": "can_use_tool",
                    "tool_name": "Bash",
                    "input": {"command": "ls"},
                    "tool_use_id": "t1",
                },
            }
        )
        time.sleep(0.3)
        out({"type": "control_cancel_request", "request_id": "perm-1"})
        out(
            {
                "type": "user",
                "message": {
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "cancelled", "is_error": True}]
                },
            }
        )
        result()
    elif MODE == "lost_tool":  # a tool that never gets its result, then the turn ends
        tool_started("t1", "Bash", {"command": "sleep 100"})
        stream("gave up")
        result()
    elif MODE == "tool_waits":  # a tool starts, then nothing until an interrupt
        tool_started("t1", "Bash", {"command": "sleep 100"})
    elif MODE == "background":  # a background command outlives its turn, then completes
        tool_started("bg1", "Bash", {"command": "sleep 1", "run_in_background": True})
        task = {"type": "system", "subtype": "task_started", "task_id": "task-1", "tool_use_id": "bg1"}
        out({**task, "is_backgrounded": True, "task_type": "local_bash"})
        block = {
            "type": "tool_result",
            "tool_use_id": "bg1",
            "content": "Command running in background with ID: task-1",
        }
        out({"type": "user", "message": {"content": [block]}, "tool_use_result": {"backgroundTaskId": "task-1"}})
        stream("started it")
        result()
        time.sleep(0.3)
        note = {"type": "system", "subtype": "task_notification", "task_id": "task-1", "tool_use_id": "bg1"}
        out({**note, "status": "completed", "summary": "sleep completed (exit code 0)"})
    elif MODE == "ask":  # a permission request that stays open until answered or denied
        tool_started("t1", "Bash", {"command": "ls"})
        request = {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "t1"}
        out({"type": "control_request", "request_id": "perm-1", "request": request})
    elif MODE == "paced":  # a turn that takes a while
        stream(f"echo: {text}")
        time.sleep(0.8)
        result()
    elif MODE in ("slow", "queued_cancel"):
        out({"type": "stream_event", "event": {"type": "message_start", "message": {"id": "slow"}}})
        out(
            {
                "type": "stream_event",
                "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "wait"}},
            }
        )
    else:
        stream(f"echo: {text}")
        result()


def main() -> int:
    log({"argv": sys.argv[1:]})
    if MODE == "ignore_eof":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if not handshake():
        return 0
    turn_user = None
    while True:
        frame = read()
        if frame is None:
            if MODE == "ignore_eof":
                time.sleep(3600)
            return 0
        kind = frame.get("type")
        if kind == "control_request":
            control(frame, turn_user)
        elif kind == "control_response" and MODE == "ask":  # the tool's result tells the model the answer
            answer = frame["response"].get("response", {})
            if answer.get("behavior") == "deny":
                block = {"type": "tool_result", "tool_use_id": "t1", "content": answer["message"], "is_error": True}
                out({"type": "user", "message": {"content": [block]}})
        elif kind == "user":
            turn_user = frame.get("uuid")
            turn(frame)


if __name__ == "__main__":
    sys.exit(main())
